//! Where the pool's memory comes from.

use core::ops::DerefMut;

/// A supplier of chunks: the memory the pool carves objects from.
///
/// The pool asks for chunks of one fixed size (its chunk size, a power of two between 4 KiB
/// and 64 KiB) and gives each chunk back as soon as no object lives in it. Implement it over
/// a kernel page allocator, `mmap`, or a fixed arena; [`HeapSource`] (feature `alloc`) takes
/// chunks from the global allocator.
///
/// A chunk is any owned buffer that dereferences to a byte slice (`Box<[u8]>`,
/// `&'static mut [u8]` from an arena, ...), so a source needs no `unsafe` code.
///
/// ```
/// use xvmalloc::PageSource;
///
/// /// Hands out at most `left` chunks from the heap.
/// struct Limited { left: usize }
///
/// impl PageSource for Limited {
///     type Chunk = Box<[u8]>;
///     fn acquire(&mut self, size: usize) -> Option<Box<[u8]>> {
///         self.left = self.left.checked_sub(1)?;
///         Some(vec![0; size].into_boxed_slice())
///     }
///     fn release(&mut self, _chunk: Box<[u8]>) {
///         self.left += 1;
///     }
/// }
///
/// let mut pool = xvmalloc::Pool::new(Limited { left: 1 });
/// let handles: Vec<_> = (0..5).map(|_| pool.alloc(3000)).collect::<Result<_, _>>()?;
/// // The single chunk (16 KiB by default) is nearly full and acquiring another fails.
/// assert_eq!(pool.alloc(4000), Err(xvmalloc::AllocError::OutOfMemory));
/// assert_eq!(pool.stats().objects, 5);
/// # let _ = handles;
/// # Ok::<(), xvmalloc::AllocError>(())
/// ```
pub trait PageSource {
    /// An owned chunk of memory.
    type Chunk: DerefMut<Target = [u8]>;

    /// Returns a chunk of exactly `size` bytes (its contents need not be zeroed), or `None`
    /// when no memory is available. A chunk of any other length counts as a failure and is
    /// handed straight back through [`release`](Self::release). A chunk must show the same
    /// bytes through `Deref` and `DerefMut` for as long as the pool holds it; one that does
    /// not gets garbage back and may make the pool panic, but never loop forever or reach
    /// outside the chunk.
    fn acquire(&mut self, size: usize) -> Option<Self::Chunk>;

    /// Takes back a chunk obtained from [`acquire`](Self::acquire).
    fn release(&mut self, chunk: Self::Chunk);
}

impl<S: PageSource + ?Sized> PageSource for &mut S {
    type Chunk = S::Chunk;
    fn acquire(&mut self, size: usize) -> Option<Self::Chunk> {
        (**self).acquire(size)
    }
    fn release(&mut self, chunk: Self::Chunk) {
        (**self).release(chunk)
    }
}

/// A [`PageSource`] that takes chunks from the global allocator, optionally up to a limit.
///
/// Allocation failure is reported (through `try_reserve`) rather than aborting.
///
/// ```
/// use xvmalloc::{HeapSource, PageSource};
///
/// let mut source = HeapSource::with_limit(16384);
/// let chunk = source.acquire(16384).unwrap();
/// assert_eq!(chunk.len(), 16384);
/// assert!(source.acquire(16384).is_none(), "over the limit");
/// source.release(chunk);
/// assert_eq!(source.held_bytes(), 0);
/// ```
#[cfg(feature = "alloc")]
#[derive(Clone, Debug, Default)]
pub struct HeapSource {
    limit: Option<usize>,
    held: usize,
}

#[cfg(feature = "alloc")]
impl HeapSource {
    /// A source limited only by the global allocator.
    pub const fn new() -> Self {
        HeapSource { limit: None, held: 0 }
    }

    /// A source that refuses to hold more than `limit` bytes at once.
    pub const fn with_limit(limit: usize) -> Self {
        HeapSource { limit: Some(limit), held: 0 }
    }

    /// Bytes currently handed out.
    pub const fn held_bytes(&self) -> usize {
        self.held
    }
}

#[cfg(feature = "alloc")]
impl PageSource for HeapSource {
    type Chunk = alloc::boxed::Box<[u8]>;

    fn acquire(&mut self, size: usize) -> Option<Self::Chunk> {
        let held = self.held.checked_add(size)?;
        if self.limit.is_some_and(|limit| held > limit) {
            return None;
        }
        let mut buf = alloc::vec::Vec::new();
        buf.try_reserve_exact(size).ok()?;
        buf.resize(size, 0u8);
        self.held = held;
        Some(buf.into_boxed_slice())
    }

    fn release(&mut self, chunk: Self::Chunk) {
        self.held -= chunk.len();
    }
}
