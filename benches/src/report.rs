//! Summaries of a run: the statistics table in the 2001 paper's style, JSON, and an SVG plot.

use std::fmt::Write as _;

use pagecodec::PAGE_SIZE;
use serde::Serialize;

use crate::measure::{CodecRun, INCOMPRESSIBLE_ABOVE};
use crate::timing::{TickStats, Timer};

/// Compressed stream sizes over the pages a codec compressed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct SizeStats {
    /// Smallest stream, bytes.
    pub min: u32,
    /// Largest stream, bytes.
    pub max: u32,
    /// Mean stream, bytes.
    pub mean: f64,
}

/// One direction (compress or decompress) of one codec on one corpus.
#[derive(Clone, Debug, Serialize)]
pub struct Speed {
    /// TSC ticks per page (overhead subtracted), over the pages timed.
    pub ticks: TickStats,
    /// The median in nanoseconds.
    pub ns_median: f64,
    /// The mean in nanoseconds.
    pub ns_mean: f64,
    /// Throughput at the median time, in MB/s (10^6 bytes of page per second).
    pub mb_per_s_median: f64,
    /// Median ticks relative to C LZ4's on the same pages (when LZ4 ran).
    pub vs_lz4: Option<f64>,
    /// Median ticks relative to C liblzo2's on the same pages (when liblzo2 ran): the
    /// baseline of the LZO targets.
    pub vs_liblzo2: Option<f64>,
}

/// Every figure of one codec on one corpus.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// Which measurement of the same corpora this is, from 1 (`run --runs N` repeats it).
    pub run: usize,
    /// Corpus name.
    pub corpus: String,
    /// Codec name.
    pub codec: String,
    /// Pages offered.
    pub pages: usize,
    /// Pages the codec compressed (not refused).
    pub compressed_pages: usize,
    /// Pages refused by the codec (its budget or early abort).
    pub refused_pages: usize,
    /// Stream sizes over compressed pages.
    pub size: SizeStats,
    /// Pages refused or larger than 3/4 of a page (zram would store them raw).
    pub incompressible_pages: usize,
    /// `incompressible_pages / pages`.
    pub incompressible_share: f64,
    /// Bytes stored: each page costs its stream, capped at 4096 (raw), refused pages 4096.
    pub stored_bytes: u64,
    /// Original bytes / stored bytes (higher is better; the 2001 paper's "ratio" is its inverse).
    pub ratio: f64,
    /// Stored bytes / original bytes, in percent (the 2001 paper's figure).
    pub stored_percent: f64,
    /// Compression speed.
    pub compress: Speed,
    /// Decompression speed (over compressed pages).
    pub decompress: Speed,
}

/// The speed figures of `stats`, with its median over the C peers' medians in the same run
/// (when the peer ran).
fn speed(timer: &Timer, stats: TickStats, lz4: Option<&TickStats>, liblzo2: Option<&TickStats>) -> Speed {
    let over = |peer: Option<&TickStats>| {
        peer.filter(|p| p.median > 0 && stats.count > 0).map(|p| stats.median as f64 / p.median as f64)
    };
    Speed {
        ns_median: timer.ns(stats.median as f64),
        ns_mean: timer.ns(stats.mean),
        mb_per_s_median: timer.mb_per_sec(PAGE_SIZE as f64, stats.median as f64),
        vs_lz4: over(lz4),
        vs_liblzo2: over(liblzo2),
        ticks: stats,
    }
}

/// Summarises the codecs' runs over one corpus, measurement `run` (from 1) of `run --runs N`
/// (runs over other corpora are ignored for the C LZ4 and C liblzo2 baselines).
pub fn summarize(timer: &Timer, runs: &[CodecRun], run: usize) -> Vec<Summary> {
    // Each codec's compress and decompress statistics, computed once: its own speed and, for
    // the C peers, every other codec's baseline are read from them.
    let stats: Vec<[TickStats; 2]> = runs
        .iter()
        .map(|r| [&r.compress_ticks, &r.decompress_ticks].map(|t| TickStats::from_ticks(&mut t.clone())))
        .collect();
    let peer = |name: &str, corpus: &str| {
        runs.iter().zip(&stats).find(|(r, _)| r.codec == name && r.corpus == corpus).map(|(_, s)| s)
    };
    runs.iter()
        .zip(&stats)
        .map(|(codec_run, &[compress, decompress])| {
            let (lz4, liblzo2) = (peer("lz4", &codec_run.corpus), peer("liblzo2", &codec_run.corpus));
            let ok: Vec<u32> = codec_run.sizes.iter().flatten().copied().collect();
            let pages = codec_run.sizes.len();
            let incompressible = codec_run
                .sizes
                .iter()
                .filter(|s| s.is_none_or(|n| n as usize > INCOMPRESSIBLE_ABOVE))
                .count();
            let stored: u64 = codec_run
                .sizes
                .iter()
                .map(|s| s.map_or(PAGE_SIZE as u64, |n| u64::from(n).min(PAGE_SIZE as u64)))
                .sum();
            let original = (pages * PAGE_SIZE) as u64;
            Summary {
                run,
                corpus: codec_run.corpus.clone(),
                codec: codec_run.codec.clone(),
                pages,
                compressed_pages: ok.len(),
                refused_pages: pages - ok.len(),
                size: SizeStats {
                    min: ok.iter().copied().min().unwrap_or(0),
                    max: ok.iter().copied().max().unwrap_or(0),
                    mean: if ok.is_empty() {
                        0.0
                    } else {
                        ok.iter().map(|&n| f64::from(n)).sum::<f64>() / ok.len() as f64
                    },
                },
                incompressible_pages: incompressible,
                incompressible_share: if pages == 0 { 0.0 } else { incompressible as f64 / pages as f64 },
                stored_bytes: stored,
                ratio: if stored == 0 { 0.0 } else { original as f64 / stored as f64 },
                stored_percent: if original == 0 { 0.0 } else { stored as f64 * 100.0 / original as f64 },
                compress: speed(timer, compress, lz4.map(|s| &s[0]), liblzo2.map(|s| &s[0])),
                decompress: speed(timer, decompress, lz4.map(|s| &s[1]), liblzo2.map(|s| &s[1])),
            }
        })
        .collect()
}

fn vs(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), |v| format!("{v:.2}x"))
}

/// Whether the codec refused every page of the corpus (so its ratio and speed mean nothing).
fn all_refused(r: &Summary) -> bool {
    r.pages > 0 && r.refused_pages == r.pages
}

/// The statistics table in the 2001 paper's style for the summaries of one corpus.
pub fn table(summaries: &[Summary]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<12} {:>6} | {:>5} {:>5} {:>7} | {:>6} {:>7} | {:>7} {:>6}",
        "codec", "pages", "min", "max", "mean", "ratio", "stored", "incompr", "share"
    );
    let _ = writeln!(
        s,
        "{:<12} {:>6} | {:^19} | {:>6} {:>7} | {:>7} {:>6}",
        "", "", "compressed bytes", "", "", "", ""
    );
    for r in summaries {
        // A codec that refused every page has no ratio of its own: say so rather than 1.00x.
        let ratio = if all_refused(r) { "refused".to_string() } else { format!("{:.2}x", r.ratio) };
        let _ = writeln!(
            s,
            "{:<12} {:>6} | {:>5} {:>5} {:>7.1} | {:>6} {:>6.1}% | {:>7} {:>5.1}%",
            r.codec,
            r.pages,
            r.size.min,
            r.size.max,
            r.size.mean,
            ratio,
            r.stored_percent,
            r.incompressible_pages,
            r.incompressible_share * 100.0
        );
    }
    let _ = writeln!(
        s,
        "ratio = original / stored bytes; stored = stored / original bytes; incompr = pages kept raw \
         (the codec refused them or its stream would not be smaller), share = their fraction; a codec \
         that refused every page shows \"refused\" and is left out of the plot"
    );
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "{:<12} {:<4} | {:>6} {:>7} {:>8} {:>7} {:>8} | {:>8} {:>7} | {:>6} {:>10}",
        "codec", "", "min", "median", "mean", "p99", "max", "ns/page", "MB/s", "vs lz4", "vs liblzo2"
    );
    let _ = writeln!(
        s,
        "{:<12} {:<4} | {:^42} | {:^16} | {:^17}",
        "", "", "TSC ticks per page", "at median", "median"
    );
    for r in summaries {
        for (dir, sp) in [("comp", &r.compress), ("dec", &r.decompress)] {
            let t = &sp.ticks;
            if t.count == 0 {
                let name = if dir == "comp" { r.codec.as_str() } else { "" };
                let _ = writeln!(
                    s,
                    "{name:<12} {dir:<4} | {:^42} | {:^16} | {:>6} {:>10}",
                    "(no page compressed)", "-", "-", "-"
                );
                continue;
            }
            let _ = writeln!(
                s,
                "{:<12} {:<4} | {:>6} {:>7} {:>8.0} {:>7} {:>8} | {:>8.0} {:>7.0} | {:>6} {:>10}",
                if dir == "comp" { r.codec.as_str() } else { "" },
                dir,
                t.min,
                t.median,
                t.mean,
                t.p99,
                t.max,
                sp.ns_median,
                sp.mb_per_s_median,
                vs(sp.vs_lz4),
                vs(sp.vs_liblzo2)
            );
        }
    }
    s
}

/// The summary of several measurements of the same corpora (`run --runs N`): for each codec
/// on each corpus and each direction, the median over runs of its median ticks and of its
/// ratios to C liblzo2 and C LZ4 in the same run, each with its range. The targets are such
/// ratios, and on a shared machine they move from run to run, so one run cannot tell
/// whether a target holds.
pub fn runs_table(runs: &[Vec<Summary>]) -> String {
    runs_table_over(runs, |_| true, &format!("median over {} runs (min-max)", runs.len()))
}

/// [`runs_table`] over the summaries `keep` accepts (as those measured at the core's full
/// throughput, `app::full_rate_runs`), with `over` as the line under the header: each row is
/// taken over the runs whose summary of it was kept, and a row with none is left out.
pub fn runs_table_over(runs: &[Vec<Summary>], keep: impl Fn(&Summary) -> bool, over: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<10} {:<12} {:<4} | {:>20} | {:>22} | {:>22}",
        "corpus", "codec", "", "median ticks", "vs liblzo2", "vs lz4"
    );
    let line = format!("{:<10} {:<12} {:<4} | {over:^68}", "", "", "");
    let _ = writeln!(s, "{}", line.trim_end());
    let mut rows: Vec<&Summary> = Vec::new();
    for r in runs.iter().flatten() {
        if !rows.iter().any(|x| x.corpus == r.corpus && x.codec == r.codec) {
            rows.push(r);
        }
    }
    for r in rows {
        let same: Vec<&Summary> = runs
            .iter()
            .filter_map(|run| run.iter().find(|x| x.corpus == r.corpus && x.codec == r.codec))
            .filter(|x| keep(x))
            .collect();
        for (dir, speeds) in [
            ("comp", same.iter().map(|x| &x.compress).collect::<Vec<_>>()),
            ("dec", same.iter().map(|x| &x.decompress).collect()),
        ] {
            let speeds: Vec<&Speed> = speeds.into_iter().filter(|sp| sp.ticks.count > 0).collect();
            if speeds.is_empty() {
                continue;
            }
            let ticks =
                spread(speeds.iter().map(|sp| sp.ticks.median as f64).collect(), |v| format!("{v:.0}"));
            let liblzo2 =
                spread(speeds.iter().filter_map(|sp| sp.vs_liblzo2).collect(), |v| format!("{v:.3}x"));
            let lz4 = spread(speeds.iter().filter_map(|sp| sp.vs_lz4).collect(), |v| format!("{v:.3}x"));
            let _ = writeln!(
                s,
                "{:<10} {:<12} {dir:<4} | {ticks:>20} | {liblzo2:>22} | {lz4:>22}",
                r.corpus, r.codec
            );
        }
    }
    s
}

/// `median (min-max)` of `values` (the mean of the middle two for an even count), or "-".
fn spread(mut values: Vec<f64>, show: impl Fn(f64) -> String) -> String {
    let n = values.len();
    if n == 0 {
        return "-".into();
    }
    values.sort_by(f64::total_cmp);
    let median = if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 };
    format!("{} ({}-{})", show(median), show(values[0]), show(values[n - 1]))
}

/// Escapes text for SVG/XML.
fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

const COLOURS: [&str; 12] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f",
    "#bcbd22", "#000000", "#aec7e8",
];

/// An SVG with two panels, compression ratio against compress and against decompress
/// throughput (log scale), one point per codec per corpus: colour = codec, shape = corpus.
pub fn plot_svg(summaries: &[Summary], title: &str) -> String {
    let mut codecs: Vec<&str> = Vec::new();
    let mut corpora: Vec<&str> = Vec::new();
    for r in summaries {
        if !codecs.contains(&r.codec.as_str()) {
            codecs.push(&r.codec);
        }
        if !corpora.contains(&r.corpus.as_str()) {
            corpora.push(&r.corpus);
        }
    }
    let finite = |v: f64| v.is_finite() && v > 0.0;
    let speeds: Vec<f64> = summaries
        .iter()
        .flat_map(|r| [r.compress.mb_per_s_median, r.decompress.mb_per_s_median])
        .filter(|&v| finite(v))
        .collect();
    let lo = speeds.iter().copied().fold(f64::INFINITY, f64::min).max(1.0);
    let hi = speeds.iter().copied().fold(0.0, f64::max).max(lo * 10.0);
    let (x_lo, x_hi) = (lo.log10().floor(), hi.log10().ceil());
    // Ratios span 1x (raw) to hundreds (fillmem): log scale, ticks 1-2-5 per decade.
    let ratio_hi = summaries.iter().map(|r| r.ratio).filter(|&r| finite(r)).fold(2.0, f64::max);
    let (y_lo, y_hi) = (0.8f64.log10(), (ratio_hi * 1.3).log10());
    let (panel_w, panel_h, left, top) = (460.0, 360.0, 70.0, 50.0);
    let width = left + 2.0 * (panel_w + 60.0) + 170.0;
    let height = top + panel_h + 70.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">
<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>
<text x="{}" y="22" font-size="15" text-anchor="middle">{}</text>"#,
        width / 2.0,
        xml_escape(title)
    );
    for (p, (label, pick)) in [
        ("compress MB/s (log)", (|r: &Summary| r.compress.mb_per_s_median) as fn(&Summary) -> f64),
        ("decompress MB/s (log)", |r: &Summary| r.decompress.mb_per_s_median),
    ]
    .into_iter()
    .enumerate()
    {
        let x0 = left + p as f64 * (panel_w + 60.0);
        let px = |v: f64| x0 + (v.log10() - x_lo) / (x_hi - x_lo) * panel_w;
        let py = |r: f64| top + panel_h - (r.max(0.8).log10() - y_lo) / (y_hi - y_lo) * panel_h;
        let _ = writeln!(
            s,
            r##"<rect x="{x0}" y="{top}" width="{panel_w}" height="{panel_h}" fill="none" stroke="#333"/>"##
        );
        for e in (x_lo as i32)..=(x_hi as i32) {
            let x = px(10f64.powi(e));
            let _ = writeln!(
                s,
                r##"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{}" stroke="#ddd"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
                top + panel_h,
                top + panel_h + 16.0,
                10f64.powi(e)
            );
        }
        for decade in 0..=(y_hi.ceil() as i32) {
            for m in [1.0, 2.0, 5.0] {
                let r = m * 10f64.powi(decade);
                if r.log10() > y_hi {
                    continue;
                }
                let y = py(r);
                let _ = writeln!(
                    s,
                    r##"<line x1="{x0}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{r}</text>"##,
                    x0 + panel_w,
                    x0 - 5.0,
                    y + 4.0
                );
            }
        }
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle">{label}</text>
<text x="{}" y="{}" text-anchor="middle" transform="rotate(-90 {} {})">compression ratio (original / stored, log)</text>"#,
            x0 + panel_w / 2.0,
            top + panel_h + 36.0,
            x0 - 40.0,
            top + panel_h / 2.0,
            x0 - 40.0,
            top + panel_h / 2.0
        );
        for r in summaries {
            let v = pick(r);
            // Refusing a page is fast and says nothing of the codec's speed on it.
            if !finite(v) || all_refused(r) {
                continue;
            }
            let colour = COLOURS[codecs.iter().position(|c| *c == r.codec).unwrap_or(0) % COLOURS.len()];
            let shape = corpora.iter().position(|c| *c == r.corpus).unwrap_or(0);
            s.push_str(&marker(px(v), py(r.ratio), shape, colour, &format!("{} on {}", r.codec, r.corpus)));
        }
    }
    let lx = left + 2.0 * (panel_w + 60.0);
    let mut y = top + 10.0;
    for (i, c) in codecs.iter().enumerate() {
        let _ = writeln!(
            s,
            r#"<rect x="{lx}" y="{:.1}" width="10" height="10" fill="{}"/><text x="{}" y="{:.1}">{}</text>"#,
            y - 9.0,
            COLOURS[i % COLOURS.len()],
            lx + 16.0,
            y,
            xml_escape(c)
        );
        y += 16.0;
    }
    y += 10.0;
    for (i, c) in corpora.iter().enumerate() {
        s.push_str(&marker(lx + 5.0, y - 4.0, i, "#555", c));
        let _ = writeln!(s, r#"<text x="{}" y="{y:.1}">{}</text>"#, lx + 16.0, xml_escape(c));
        y += 16.0;
    }
    s.push_str("</svg>\n");
    s
}

/// One point: circle, square, triangle or diamond by corpus index.
fn marker(x: f64, y: f64, shape: usize, colour: &str, title: &str) -> String {
    let t = format!("<title>{}</title>", xml_escape(title));
    match shape % 4 {
        0 => format!(r#"<circle cx="{x:.1}" cy="{y:.1}" r="5" fill="{colour}">{t}</circle>"#) + "\n",
        1 => {
            format!(
                r#"<rect x="{:.1}" y="{:.1}" width="9" height="9" fill="{colour}">{t}</rect>"#,
                x - 4.5,
                y - 4.5
            ) + "\n"
        }
        2 => {
            format!(
                r#"<polygon points="{x:.1},{:.1} {:.1},{:.1} {:.1},{:.1}" fill="{colour}">{t}</polygon>"#,
                y - 6.0,
                x - 5.5,
                y + 4.0,
                x + 5.5,
                y + 4.0
            ) + "\n"
        }
        _ => {
            format!(
                r#"<polygon points="{x:.1},{:.1} {:.1},{y:.1} {x:.1},{:.1} {:.1},{y:.1}" fill="{colour}">{t}</polygon>"#,
                y - 6.0,
                x + 6.0,
                y + 6.0,
                x - 6.0
            ) + "\n"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timing::Clock;

    fn runs() -> Vec<CodecRun> {
        let mk = |codec: &str, corpus: &str, sizes: Vec<Option<u32>>, c: Vec<u64>, d: Vec<u64>| CodecRun {
            codec: codec.into(),
            corpus: corpus.into(),
            sizes,
            compress_ticks: c,
            decompress_ticks: d,
        };
        vec![
            mk("lz4", "a", vec![Some(1000), Some(3500), Some(24)], vec![100, 200, 300], vec![50, 60, 70]),
            mk("x<&>", "a", vec![Some(2048), None, Some(5000)], vec![400, 200, 100], vec![100, 120]),
            mk("lz4", "b", vec![Some(10)], vec![10], vec![10]),
        ]
    }

    #[test]
    fn summaries_count_sizes_ratios_and_incompressible_pages() {
        let timer = Timer::with_clock(Clock::Instant);
        let s = summarize(&timer, &runs(), 1);
        assert_eq!(s[0].size, SizeStats { min: 24, max: 3500, mean: 1508.0 });
        assert_eq!(s[0].incompressible_pages, 1);
        assert_eq!(s[0].stored_bytes, 4524);
        assert!((s[0].ratio - 3.0 * 4096.0 / 4524.0).abs() < 1e-9);
        assert_eq!(s[0].compress.ticks.median, 200);
        assert_eq!(s[0].compress.vs_lz4, Some(1.0));
        // Refused and over-4096 pages cost a raw page each.
        assert_eq!((s[1].refused_pages, s[1].incompressible_pages, s[1].stored_bytes), (1, 2, 2048 + 8192));
        assert_eq!(s[1].compress.vs_lz4, Some(1.0));
        assert_eq!(s[1].decompress.vs_lz4, Some(100.0 / 60.0));
        // ns from ticks: the Instant clock counts ns, so a 200-tick median is 200 ns: 4096 B / 200 ns = 20480 MB/s.
        assert!((s[0].compress.mb_per_s_median - 20480.0).abs() < 1e-6);
        let t = table(&s);
        assert!(t.contains("x<&>") && t.contains("vs lz4") && t.contains("1.67x"), "{t}");
    }

    #[test]
    fn ratios_to_liblzo2_come_from_the_same_corpus() {
        let timer = Timer::with_clock(Clock::Instant);
        let mut r = runs();
        r.push(CodecRun {
            codec: "liblzo2".into(),
            corpus: "a".into(),
            sizes: vec![Some(10); 3],
            compress_ticks: vec![400, 400, 400],
            decompress_ticks: vec![40, 40, 40],
        });
        let s = summarize(&timer, &r, 1);
        assert_eq!(s[0].compress.vs_liblzo2, Some(0.5));
        assert_eq!(s[0].decompress.vs_liblzo2, Some(1.5));
        assert_eq!(s[1].decompress.vs_liblzo2, Some(2.5));
        // Corpus b has no liblzo2 run: no ratio, rather than one to corpus a's.
        assert_eq!(s[2].compress.vs_liblzo2, None);
        assert_eq!(s[3].compress.vs_liblzo2, Some(1.0));
        let t = table(&s);
        assert!(t.contains("vs liblzo2") && t.contains("0.50x"), "{t}");
    }

    #[test]
    fn spread_gives_the_median_and_range() {
        let show = |v: f64| format!("{v}");
        assert_eq!(spread(vec![3.0, 1.0, 2.0], show), "2 (1-3)");
        assert_eq!(spread(vec![4.0, 1.0, 2.0, 3.0], show), "2.5 (1-4)", "even count: the middle two's mean");
        assert_eq!(spread(vec![], show), "-");
    }

    #[test]
    fn runs_table_takes_each_codec_over_the_runs() {
        let timer = Timer::with_clock(Clock::Instant);
        let mut per_run = Vec::new();
        for (k, lz4_compress) in [(1, 100), (2, 400), (3, 200)] {
            let mut r = runs();
            r[0].compress_ticks = vec![lz4_compress; 3];
            per_run.push(summarize(&timer, &r, k));
        }
        let t = runs_table(&per_run);
        assert!(t.contains("median over 3 runs"), "{t}");
        // x<&> compresses in 200 ticks every run: 2x, 0.5x and 1x of C LZ4's.
        let row = t.lines().find(|l| l.starts_with("a") && l.contains("x<&>") && l.contains("comp")).unwrap();
        assert!(row.contains("200 (200-200)") && row.contains("1.000x (0.500x-2.000x)"), "{row}");
        // No liblzo2 in these runs, and codec b/lz4 keeps its own corpus.
        assert!(row.contains(" - "), "{row}");
        assert!(t.lines().any(|l| l.starts_with("b") && l.contains("lz4")), "{t}");
        assert_eq!(runs_table(&[]).lines().count(), 2, "a header, nothing to summarise");
    }

    #[test]
    fn json_has_every_figure_and_parses() {
        let timer = Timer::with_clock(Clock::Instant);
        let s = summarize(&timer, &runs(), 1);
        let text = serde_json::to_string(&s).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let first = &v[0];
        for key in
            ["pages", "size", "ratio", "incompressible_share", "compress", "decompress", "stored_percent"]
        {
            assert!(first.get(key).is_some(), "missing {key}");
        }
        for key in ["min", "median", "mean", "p99", "max"] {
            assert!(first["compress"]["ticks"].get(key).is_some(), "missing {key}");
        }
        assert!(first["decompress"]["mb_per_s_median"].as_f64().unwrap() > 0.0);
        assert_eq!(first["run"], 1);
        assert!(first["compress"].get("vs_liblzo2").is_some(), "null when liblzo2 did not run");
    }

    #[test]
    fn svg_is_well_formed_and_has_a_point_per_codec_per_corpus() {
        let timer = Timer::with_clock(Clock::Instant);
        let s = summarize(&timer, &runs(), 1);
        let svg = plot_svg(&s, "test <plot>");
        assert!(svg.starts_with("<?xml") && svg.trim_end().ends_with("</svg>"));
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
        assert!(svg.contains("x&lt;&amp;&gt;") && !svg.contains("x<&>"));
        // Two panels x three summaries = six points, plus two legend markers for corpora.
        assert_eq!(svg.matches("<title>").count(), 6 + 2);
        check_xml_nesting(&svg);
    }

    /// A small XML checker: tags nest and close, attributes are quoted.
    fn check_xml_nesting(xml: &str) {
        let mut stack: Vec<String> = Vec::new();
        let mut rest = xml;
        while let Some(open) = rest.find('<') {
            let close = rest[open..].find('>').expect("unclosed tag") + open;
            let tag = &rest[open + 1..close];
            rest = &rest[close + 1..];
            if tag.starts_with('?') || tag.starts_with('!') {
                continue;
            }
            assert_eq!(tag.matches('"').count() % 2, 0, "unbalanced quotes in <{tag}>");
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(stack.pop().as_deref(), Some(name), "mismatched </{name}>");
            } else if !tag.ends_with('/') {
                stack.push(tag.split_whitespace().next().unwrap().to_string());
            }
        }
        assert!(stack.is_empty(), "unclosed: {stack:?}");
    }
}
