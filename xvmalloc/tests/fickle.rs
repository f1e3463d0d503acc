//! A page source's chunk may be any safe `DerefMut`, even one that shows different bytes
//! from its `DerefMut`, against the `PageSource` contract. The pool then reads
//! garbage and may panic (an index outside its tables), but every operation returns: no
//! endless loop, and no access outside the chunk (safe code only on that side).

use std::ops::{Deref, DerefMut};
use std::sync::mpsc;
use std::time::Duration;

use xvmalloc::{PageSource, Pool};

/// Two buffers behind one chunk: reads see one, writes go to the other (so every header
/// the pool reads back says 0 units).
struct Fickle {
    buffers: [Box<[u8]>; 2],
}

impl Deref for Fickle {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.buffers[0]
    }
}

impl DerefMut for Fickle {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.buffers[1]
    }
}

struct FickleSource;

impl PageSource for FickleSource {
    type Chunk = Fickle;
    fn acquire(&mut self, size: usize) -> Option<Fickle> {
        Some(Fickle { buffers: [vec![0; size].into(), vec![0; size].into()] })
    }
    fn release(&mut self, _chunk: Fickle) {}
}

#[test]
fn a_fickle_chunk_never_hangs_the_pool() {
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let outcome = std::panic::catch_unwind(|| {
            let mut pool = Pool::new(FickleSource);
            let mut handles = Vec::new();
            for i in 0..200u32 {
                if let Ok(h) = pool.alloc_copy(&vec![i as u8; 100 + (i as usize * 37) % 3000]) {
                    handles.push(h);
                }
            }
            for h in handles.iter().step_by(2) {
                let _ = pool.free(*h);
            }
            pool.compact();
            for h in &handles {
                let _ = pool.get(*h);
            }
            let _ = pool.validate();
        });
        let _ = done.send(outcome.is_ok());
        // The sender may be gone if the test already failed.
    });
    match finished.recv_timeout(Duration::from_secs(60)) {
        // A panic is allowed here: the source broke the contract.
        Ok(_) => {}
        Err(_) => panic!("the pool did not return within 60 s"),
    }
}
