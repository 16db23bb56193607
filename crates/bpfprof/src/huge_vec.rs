//! A growable array of plain values in chunks of one huge page each,
//! taken from the heap.
//!
//! The flat report copies what counting needs of each sample, 25 MB for
//! 800k samples, into memory the kernel hands out fresh and zeroes. In
//! 4 KB pages that is 6k page faults; in 2 MB pages it is a dozen, and
//! zeroing a huge page is cheaper per byte. A `Vec` asked for huge pages
//! (`MADV_HUGEPAGE`) gets them only from the first 2 MB boundary inside
//! its allocation, and a piece's copies (1.6 MB on the benchmark file)
//! mostly lay before it: reading the 84 MB benchmark file took 44 ms that
//! way and 36 ms in 2 MB-aligned memory (means of 10 alternating runs).
//!
//! The chunks come from malloc rather than a mapping of their own: with
//! one mapping per reader, unmapped after counting (on another thread),
//! the flat report on that file took 5-8 ms longer (92.7 against 87.7 ms,
//! means of 25 alternating runs).
//!
//! The big tables of the call-graph pass come from here too ([`table`]):
//! written out before use, in huge pages where the kernel allows.
//!
//! One of the modules with `unsafe` (memory, like the mmap modules): raw
//! memory is handed out as slices, and huge pages are asked for.

use std::alloc::Layout;
use std::ops::Range;
use std::ptr::NonNull;

const HUGE: usize = 2 << 20;

/// `n` copies of `v` for a big table probed at random: written out, in
/// memory asked for huge pages. Taken zeroed from calloc instead, a
/// probe's read of an untouched page maps the shared zero page, which the
/// first write then replaces: a second fault, which flushes the TLB of
/// every core the process runs on: 6% of a `-g` report's CPU samples,
/// when the call-graph index took its tables from calloc.
pub fn table<T: Clone>(n: usize, v: T) -> Vec<T> {
    let mut t = Vec::with_capacity(n);
    let spare = t.spare_capacity_mut();
    advise_huge(spare.as_ptr().cast(), std::mem::size_of_val(spare));
    t.resize(n, v);
    t
}

/// Ask for huge pages in the whole 2 MB pages of the `len` bytes at
/// `start`, memory of the caller's own not yet touched (else it changes
/// nothing that can be seen).
fn advise_huge(start: *const u8, len: usize) {
    let (from, to) = (
        (start as usize).next_multiple_of(HUGE),
        (start as usize + len) / HUGE * HUGE,
    );
    if from < to {
        // SAFETY: [from, to) lies inside the caller's memory; MADV_HUGEPAGE
        // changes how its pages are faulted in, never what they hold, and
        // a refusal (no huge pages here) changes nothing.
        unsafe {
            libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_HUGEPAGE);
        }
    }
}

/// Values pushed one by one, read back as slices of a range.
pub struct HugeVec<T: Copy> {
    chunks: Vec<NonNull<T>>,
    len: usize,
}

// SAFETY: a HugeVec owns its chunks as a Vec owns its allocation: nothing
// else refers to them, so it moves between threads, and is shared by `&`,
// as its values may.
unsafe impl<T: Copy + Send> Send for HugeVec<T> {}
// SAFETY: as for Send; `&HugeVec` only reads.
unsafe impl<T: Copy + Sync> Sync for HugeVec<T> {}

impl<T: Copy> Default for HugeVec<T> {
    fn default() -> Self {
        HugeVec::new()
    }
}

impl<T: Copy> HugeVec<T> {
    /// Values per chunk.
    const PER_CHUNK: usize = HUGE / std::mem::size_of::<T>();

    pub fn new() -> HugeVec<T> {
        assert!(std::mem::size_of::<T>() > 0 && std::mem::size_of::<T>() <= HUGE);
        assert!(std::mem::align_of::<T>() <= HUGE);
        HugeVec {
            chunks: Vec::new(),
            len: 0,
        }
    }

    fn layout() -> Layout {
        // A power of two, aligned to itself: always a valid layout.
        Layout::from_size_align(HUGE, HUGE).expect("2 MB, aligned to 2 MB")
    }

    pub fn len(&self) -> usize {
        self.len
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Append `v`; `Err(v)` when no memory is left for another chunk.
    pub fn push(&mut self, v: T) -> Result<(), T> {
        let (chunk, at) = (self.len / Self::PER_CHUNK, self.len % Self::PER_CHUNK);
        if chunk == self.chunks.len() {
            // SAFETY: the layout has a non-zero size; a null answer (no
            // memory) is checked below.
            let p = unsafe { std::alloc::alloc(Self::layout()) };
            let Some(p) = NonNull::new(p) else {
                return Err(v);
            };
            advise_huge(p.as_ptr(), HUGE);
            self.chunks.push(p.cast());
        }
        // SAFETY: at < PER_CHUNK, so the slot lies inside the chunk, which
        // is writable, aligned for T (2 MB) and ours alone.
        unsafe { self.chunks[chunk].as_ptr().add(at).write(v) };
        self.len += 1;
        Ok(())
    }

    /// The values in `range`, chunk by chunk.
    pub fn slices(&self, range: Range<usize>) -> impl Iterator<Item = &[T]> + '_ {
        let end = range.end.min(self.len);
        let mut at = range.start.min(end);
        std::iter::from_fn(move || {
            if at >= end {
                return None;
            }
            let (chunk, from) = (at / Self::PER_CHUNK, at % Self::PER_CHUNK);
            let n = (Self::PER_CHUNK - from).min(end - at);
            at += n;
            // SAFETY: the `n` slots from `from` lie in one chunk, below
            // `len`, so `push` wrote them; the chunk lives as long as
            // `self`, which the slice borrows.
            Some(unsafe { std::slice::from_raw_parts(self.chunks[chunk].as_ptr().add(from), n) })
        })
    }

    #[cfg(test)]
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.slices(0..self.len).flatten()
    }
}

impl<T: Copy> Drop for HugeVec<T> {
    fn drop(&mut self) {
        for c in &self.chunks {
            // SAFETY: each chunk was allocated in `push` with this layout,
            // and nothing refers to it once `self` is gone (slices borrow
            // `self`).
            unsafe { std::alloc::dealloc(c.as_ptr().cast(), Self::layout()) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{HugeVec, HUGE};

    #[test]
    fn holds_what_was_pushed_in_chunks_that_start_on_huge_pages() {
        let mut v: HugeVec<(u64, u32)> = HugeVec::new();
        assert!(v.is_empty());
        // Three chunks and a part.
        let n = 3 * HugeVec::<(u64, u32)>::PER_CHUNK as u64 + 1000;
        for i in 0..n {
            v.push((i * 3, i as u32)).unwrap();
        }
        assert_eq!(v.len() as u64, n);
        assert_eq!(v.chunks.len(), 4);
        for s in v.slices(0..v.len()) {
            assert_eq!(
                s.as_ptr() as usize % HUGE,
                0,
                "a chunk starts on a huge page"
            );
        }
        assert!(v
            .iter()
            .enumerate()
            .all(|(i, &(a, b))| a == i as u64 * 3 && b == i as u32));
        // Ranges across chunk boundaries, empty ones, and past the end.
        let per = HugeVec::<(u64, u32)>::PER_CHUNK;
        for (from, to) in [
            (0, 0),
            (5, 9),
            (per - 2, per + 3),
            (per - 1, 3 * per + 5),
            (10, n as usize + 50),
        ] {
            let got: Vec<u64> = v.slices(from..to).flatten().map(|x| x.0 / 3).collect();
            let want: Vec<u64> = (from as u64..(to as u64).min(n)).collect();
            assert_eq!(got, want, "{from}..{to}");
        }
    }
}
