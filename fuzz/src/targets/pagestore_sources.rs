//! The page store over page sources that misbehave within their contract (no memory, a
//! chunk of half or twice the size asked, a panic), on `PageStore` and on a `ShardedStore`
//! driven by two threads: every page last stored loads back, a failed or panicked store
//! leaves the previous page loadable, and the memory limit is never exceeded.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};

use crate::PageRecipe;
use arbitrary::Arbitrary;
use pagecodec::Page;
use pagestore::{HeapSource, LoadError, PageSource, PageStore, ShardedStore, StoreConfig, StoreError};

/// The message of the source's own panics, which the panic hook lets through.
const SCRIPTED: &str = "scripted panic in acquire";

/// Keeps the fuzzer's panic hook (which reports and aborts) for every panic but the
/// source's scripted ones, which the store must survive.
fn quiet_scripted_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let report = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let scripted = info.payload().downcast_ref::<String>().is_some_and(|m| m == SCRIPTED);
            if !scripted {
                report(info);
            }
        }));
    });
}

/// How the source answers each `acquire`, in turn (then honestly).
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Answer {
    Honest,
    Nothing,
    Half,
    Double,
    Panic,
}

/// A heap source following a script of answers, shared between shards.
struct Scripted {
    inner: HeapSource,
    script: Arc<Mutex<Vec<Answer>>>,
    /// The size last asked for: honest chunks have it, odd ones never.
    size: usize,
}

impl PageSource for Scripted {
    type Chunk = Box<[u8]>;
    fn acquire(&mut self, size: usize) -> Option<Box<[u8]>> {
        self.size = size;
        let answer = self.script.lock().unwrap_or_else(|p| p.into_inner()).pop().unwrap_or(Answer::Honest);
        match answer {
            Answer::Honest => self.inner.acquire(size),
            Answer::Nothing => None,
            Answer::Half => Some(vec![0; size / 2].into_boxed_slice()),
            Answer::Double => Some(vec![0; size * 2].into_boxed_slice()),
            Answer::Panic => panic!("{SCRIPTED}"),
        }
    }
    fn release(&mut self, chunk: Box<[u8]>) {
        // Odd-sized chunks never came from the heap source (the pool asks one size).
        if chunk.len() == self.size {
            self.inner.release(chunk);
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Op {
    Store { key: u8, page: PageRecipe },
    Load { key: u8 },
    Remove { key: u8 },
    Compact,
}

#[derive(Arbitrary, Debug)]
struct Input {
    script: Vec<Answer>,
    /// Memory limit in 16 KiB chunks (0 = none).
    limit_chunks: u8,
    sharded: bool,
    ops: Vec<Op>,
    more_ops: Vec<Op>,
}

/// Runs `ops` through `store`/`load`/`remove`/`compact` closures against a model of the
/// keys `key % 16 * 2 + lane` (each thread its own lane).
fn run_ops(
    ops: &[Op],
    lane: u64,
    store: &dyn Fn(u64, &Page) -> Result<(), StoreError>,
    load: &dyn Fn(u64, &mut Page) -> Result<(), LoadError>,
    remove: &dyn Fn(u64) -> bool,
    compact: &dyn Fn(),
) {
    let mut model: BTreeMap<u64, Page> = BTreeMap::new();
    for op in ops {
        match op {
            Op::Store { key, page } => {
                let key = u64::from(*key % 16) * 2 + lane;
                let page = page.page();
                match catch_unwind(AssertUnwindSafe(|| store(key, &page))) {
                    Ok(Ok(())) => {
                        model.insert(key, page);
                    }
                    Ok(Err(StoreError::Full | StoreError::OutOfMemory)) | Err(_) => {}
                    Ok(Err(e)) => panic!("unexpected store error {e}"),
                }
            }
            Op::Load { key } => {
                let key = u64::from(*key % 16) * 2 + lane;
                let mut page = Page::filled(0xEE);
                match model.get(&key) {
                    Some(want) => {
                        assert_eq!(load(key, &mut page), Ok(()), "key {key}");
                        assert!(page == *want, "key {key}: another page came back");
                    }
                    None => assert_eq!(load(key, &mut page), Err(LoadError::NotFound), "key {key}"),
                }
            }
            Op::Remove { key } => {
                let key = u64::from(*key % 16) * 2 + lane;
                assert_eq!(remove(key), model.remove(&key).is_some(), "key {key}");
            }
            Op::Compact => {
                let _ = catch_unwind(AssertUnwindSafe(compact));
            }
        }
    }
    for (&key, want) in &model {
        let mut page = Page::zeroed();
        assert_eq!(load(key, &mut page), Ok(()), "key {key} at the end");
        assert!(page == *want, "key {key}: another page came back at the end");
    }
}

/// One input, as the fuzz target runs it (bytes that do not decode are skipped).
pub fn run(data: &[u8]) {
    let Some(input) = crate::decode::<Input>(data) else { return };
    quiet_scripted_panics();
    let limit = (input.limit_chunks > 0).then(|| u64::from(input.limit_chunks % 16 + 1) * 16384);
    let mut config = StoreConfig::default();
    if let Some(limit) = limit {
        config = config.with_mem_limit(limit);
    }
    let script = Arc::new(Mutex::new(input.script.iter().rev().copied().collect::<Vec<_>>()));
    let source = || Scripted { inner: HeapSource::new(), script: Arc::clone(&script), size: 0 };
    if input.sharded {
        let factory: pagestore::CodecFactory = Box::new(|| Box::new(lzokit::LzoRle::default()));
        let store = ShardedStore::with_sources(2, factory, source, config);
        std::thread::scope(|s| {
            for (lane, ops) in [(0, &input.ops), (1, &input.more_ops)] {
                let store = &store;
                s.spawn(move || {
                    run_ops(
                        ops,
                        lane,
                        &|k, p| store.store(k, p),
                        &|k, p| store.load(k, p),
                        &|k| store.remove(k),
                        &|| {
                            store.compact();
                        },
                    )
                });
            }
        });
        if let Some(limit) = limit {
            assert!(store.stats().mm.mem_used_total <= limit, "limit exceeded");
        }
    } else {
        let store =
            std::cell::RefCell::new(PageStore::with_source(lzokit::LzoRle::default(), source(), config));
        run_ops(
            &input.ops,
            0,
            &|k, p| store.borrow_mut().store(k, p),
            &|k, p| store.borrow_mut().load(k, p),
            &|k| store.borrow_mut().remove(k),
            &|| {
                store.borrow_mut().compact();
            },
        );
        let store = store.into_inner();
        store.validate().expect("consistent store");
        if let Some(limit) = limit {
            assert!(store.stats().mm.mem_used_total <= limit, "limit exceeded");
        }
    }
}
