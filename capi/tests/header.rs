//! `include/pagecodec.h` declares exactly what the Rust source exports: every `pc_`
//! function with the same parameter and return types, every status code and constant with
//! the same value, every `#[repr(C)]` struct with the same fields in the same order, and
//! the crate's version.

use std::collections::BTreeMap;
use std::fs;

/// The package folder: cargo's run-time variable first (a test binary built from a copy of
/// the sources elsewhere may be reused), else the compile-time one.
fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), Into::into)
}

fn read(rel: &str) -> String {
    fs::read_to_string(manifest_dir().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn source() -> String {
    ["src/lib.rs", "src/error.rs", "src/codec.rs", "src/store.rs"].iter().map(|f| read(f)).collect()
}

/// Removes `//` and `/* */` comments.
fn strip_comments(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("/*") {
            rest = r.split_once("*/").map_or("", |(_, after)| after);
        } else if let Some(r) = rest.strip_prefix("//") {
            rest = r.split_once('\n').map_or("", |(_, after)| after);
            out.push('\n');
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// `PcStoreConfig` -> `pc_store_config`.
fn c_type_name(rust: &str) -> String {
    match rust {
        "c_char" => "char".into(),
        "u8" => "uint8_t".into(),
        "u32" => "uint32_t".into(),
        "u64" => "uint64_t".into(),
        "usize" => "size_t".into(),
        "i32" => "int".into(),
        "f64" => "double".into(),
        _ if rust.starts_with("Pc") => {
            let mut s = String::new();
            for (i, c) in rust.chars().enumerate() {
                if c.is_ascii_uppercase() {
                    if i > 0 {
                        s.push('_');
                    }
                    s.push(c.to_ascii_lowercase());
                } else {
                    s.push(c);
                }
            }
            s
        }
        _ => panic!("no C spelling for Rust type {rust}"),
    }
}

/// A Rust FFI type in the header's normal form: `*mut *mut PcCodec` -> `pc_codec**`.
fn c_type(rust: &str) -> String {
    let rust = rust.trim();
    for (prefix, constness) in [("*const ", true), ("*mut ", false)] {
        if let Some(inner) = rust.strip_prefix(prefix) {
            let inner_c = c_type(inner);
            return if constness && !inner_c.ends_with('*') {
                format!("const {inner_c}*")
            } else {
                format!("{inner_c}*")
            };
        }
    }
    c_type_name(rust)
}

/// A C declaration's type in normal form: drops the declared name, no space around `*`.
fn c_decl_type(decl: &str) -> (String, String) {
    let decl = decl.trim();
    let split = decl.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
    let (ty, name) = decl.split_at(split);
    (normal(ty), name.to_string())
}

fn normal(ty: &str) -> String {
    let ty = ty.split_whitespace().collect::<Vec<_>>().join(" ");
    ty.replace(" *", "*").replace("* ", "*").trim().to_string()
}

type Signature = (String, Vec<String>);

fn rust_functions(src: &str) -> BTreeMap<String, Signature> {
    let mut map = BTreeMap::new();
    let mut rest = src;
    while let Some(at) = rest.find("extern \"C\" fn pc_") {
        let before = &rest[..at];
        let attr = before.rfind("#[unsafe(no_mangle)]").map(|i| &before[i..]);
        let after = &rest[at + "extern \"C\" fn ".len()..];
        let name: String = after.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        assert!(
            attr.is_some_and(|a| a.lines().count() <= 2),
            "{name} is not marked #[unsafe(no_mangle)] right before its definition"
        );
        let open = after.find('(').unwrap();
        let close = after.find(')').unwrap();
        let params = after[open + 1..close]
            .split(',')
            .filter(|p| !p.trim().is_empty())
            .map(|p| c_type(p.split_once(':').unwrap().1))
            .collect();
        let tail = &after[close + 1..after.find('{').unwrap()];
        let ret = tail.trim().strip_prefix("->").map_or("void".to_string(), c_type);
        assert!(map.insert(name.clone(), (ret, params)).is_none(), "{name} defined twice");
        rest = &after[close..];
    }
    map
}

fn header_functions(header: &str) -> BTreeMap<String, Signature> {
    // Without preprocessor lines, the C++ guard's braces and struct bodies, what holds a
    // parenthesis is a prototype.
    let lines: Vec<&str> = header
        .lines()
        .filter(|l| {
            let t = l.trim();
            !t.starts_with('#') && t != "extern \"C\" {" && t != "}"
        })
        .collect();
    let mut flat = String::new();
    let mut depth = 0;
    for c in lines.join("\n").chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            _ if depth == 0 => flat.push(c),
            _ => {}
        }
    }
    let mut map = BTreeMap::new();
    for decl in flat.split(';').filter(|d| d.contains('(')) {
        return_decl(decl, &mut map);
    }
    map
}

fn return_decl(decl: &str, map: &mut BTreeMap<String, Signature>) {
    let decl = decl.split_whitespace().collect::<Vec<_>>().join(" ");
    let open = decl.find('(').unwrap();
    let close = decl.rfind(')').unwrap();
    let (ret, name) = c_decl_type(&decl[..open]);
    if !name.starts_with("pc_") {
        return;
    }
    let params_text = decl[open + 1..close].trim();
    let params = if params_text == "void" {
        Vec::new()
    } else {
        params_text.split(',').map(|p| c_decl_type(p).0).collect()
    };
    assert!(map.insert(name.clone(), (ret, params)).is_none(), "{name} declared twice");
}

#[test]
fn every_function_is_declared_with_its_types() {
    let src = strip_comments(&source());
    let header = strip_comments(&read("include/pagecodec.h"));
    let rust = rust_functions(&src);
    let c = header_functions(&header);
    assert!(rust.len() >= 20, "found only {} functions in the source", rust.len());
    let rust_names: Vec<_> = rust.keys().collect();
    let c_names: Vec<_> = c.keys().collect();
    assert_eq!(rust_names, c_names, "functions in the source vs the header");
    for (name, sig) in &rust {
        assert_eq!(sig, &c[name], "signature of {name}: source (left) vs header (right)");
    }
}

#[test]
fn every_status_code_and_constant_has_its_value() {
    let src = strip_comments(&source());
    let header = strip_comments(&read("include/pagecodec.h"));
    let body = |text: &str, start: &str| -> String {
        let at = text.find(start).unwrap_or_else(|| panic!("{start} not found"));
        text[at..at + text[at..].find('}').unwrap()].to_string()
    };
    let codes = |text: String| -> Vec<(String, i64)> {
        text.lines()
            .filter_map(|l| {
                let (name, value) = l.trim().trim_end_matches(',').split_once(" = ")?;
                Some((name.trim().to_string(), value.trim().parse().ok()?))
            })
            .collect()
    };
    let rust = codes(body(&src, "pub enum PcStatus"));
    let c = codes(body(&header, "typedef enum pc_status"));
    assert_eq!(rust.len(), 14);
    assert_eq!(rust, c, "status codes: source vs header");

    let rust_consts: BTreeMap<String, String> = src
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub const PC_"))
        .map(|l| {
            let (name, value) = l.split_once(':').unwrap();
            (format!("PC_{name}"), value.split_once('=').unwrap().1.trim().trim_end_matches(';').to_string())
        })
        .collect();
    let c_defines: BTreeMap<String, String> = header
        .lines()
        .filter_map(|l| l.trim().strip_prefix("#define PC_TIME_"))
        .map(|l| {
            let (name, value) = l.split_once(' ').unwrap();
            (format!("PC_TIME_{name}"), value.trim().to_string())
        })
        .collect();
    assert_eq!(rust_consts, c_defines);
    let version = format!("#define PC_VERSION \"{}\"", env!("CARGO_PKG_VERSION"));
    assert!(header.contains(&version), "the header's PC_VERSION is not {}", env!("CARGO_PKG_VERSION"));
}

#[test]
fn every_struct_has_its_fields_in_order() {
    let src = strip_comments(&source());
    let header = strip_comments(&read("include/pagecodec.h"));
    let mut checked = 0;
    let mut rest = src.as_str();
    while let Some(at) = rest.find("#[repr(C)]") {
        rest = &rest[at + "#[repr(C)]".len()..];
        // The item the attribute is on: only structs are compared here.
        let struct_at = rest.find("pub ").unwrap();
        if !rest[struct_at..].starts_with("pub struct ") {
            continue;
        }
        let head = &rest[struct_at + "pub struct ".len()..];
        let name: String = head.chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
        let body = &head[head.find('{').unwrap() + 1..head.find('}').unwrap()];
        let fields: Vec<(String, String)> = body
            .lines()
            .filter_map(|l| l.trim().strip_prefix("pub "))
            .map(|l| {
                let (field, ty) = l.split_once(':').unwrap();
                (c_type(ty.trim().trim_end_matches(',')), field.trim().to_string())
            })
            .collect();
        let c_name = c_type_name(&name);
        let c_at = header
            .find(&format!("typedef struct {c_name} {{"))
            .unwrap_or_else(|| panic!("struct {c_name} is not in the header"));
        let c_body = &header[c_at..];
        let c_body = &c_body[c_body.find('{').unwrap() + 1..c_body.find('}').unwrap()];
        let c_fields: Vec<(String, String)> =
            c_body.split(';').filter(|d| !d.trim().is_empty()).map(c_decl_type).collect();
        assert_eq!(fields, c_fields, "fields of {c_name}: source vs header");
        checked += 1;
        rest = &head[head.find('}').unwrap()..];
    }
    assert_eq!(checked, 4, "pc_store_config, pc_summary, pc_store_stats, pc_compact_report");
}

#[test]
fn the_normal_forms_agree() {
    assert_eq!(c_type("*mut *mut PcCodec"), "pc_codec**");
    assert_eq!(c_type("*const c_char"), "const char*");
    assert_eq!(c_decl_type("const uint8_t *page").0, "const uint8_t*");
    assert_eq!(c_decl_type("pc_codec **codec"), ("pc_codec**".to_string(), "codec".to_string()));
}
