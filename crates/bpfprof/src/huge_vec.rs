//! A fixed-capacity array of plain values in an anonymous mapping of its
//! own that starts on a huge-page boundary.
//!
//! The flat report copies what counting needs of each sample, 25 MB for
//! 800k samples, into memory the kernel hands out fresh and zeroes page by
//! page. In 4 KB pages that is 6k page faults; in 2 MB pages it is a dozen,
//! and zeroing a huge page is cheaper per byte. A `Vec` asked for huge
//! pages (`MADV_HUGEPAGE`) gets them only from the first 2 MB boundary
//! inside its allocation, and a piece's copies (1.6 MB on the benchmark
//! file) mostly lie before it: reading the 84 MB benchmark file took 44 ms
//! that way and 36 ms from here (means of 10 alternating runs).
//!
//! One of the modules with `unsafe` (an mmap module): a mapping's memory
//! is handed out as a slice.

use std::ffi::c_void;
use std::ops::Deref;
use std::ptr::NonNull;

const HUGE: usize = 2 << 20;

/// Up to a fixed number of `T`, pushed one by one, read as a slice.
pub struct HugeVec<T: Copy> {
    map: NonNull<c_void>,
    map_len: usize,
    data: NonNull<T>,
    len: usize,
    cap: usize,
}

// SAFETY: a HugeVec owns its mapping as a Vec owns its allocation: nothing
// else refers to it, so it moves between threads, and is shared by `&`,
// as its values may.
unsafe impl<T: Copy + Send> Send for HugeVec<T> {}
// SAFETY: as for Send; `&HugeVec` only reads.
unsafe impl<T: Copy + Sync> Sync for HugeVec<T> {}

impl<T: Copy> HugeVec<T> {
    /// Room for `cap` values; `None` if the mapping cannot be made. Only
    /// the pages written take memory.
    pub fn with_capacity(cap: usize) -> Option<HugeVec<T>> {
        assert!(std::mem::size_of::<T>() > 0 && std::mem::align_of::<T>() <= HUGE);
        let bytes = cap.checked_mul(std::mem::size_of::<T>())?;
        let map_len = bytes.checked_add(HUGE)?;
        // SAFETY: a new private anonymous mapping at an address the kernel
        // chooses overlaps no memory in use; failure is checked below.
        // MAP_NORESERVE: the capacity is a bound, mostly never touched.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return None;
        }
        // SAFETY: advice on the mapping just made; it changes how its
        // pages are faulted in, never what they hold, and a refusal (no
        // huge pages here) changes nothing.
        unsafe {
            libc::madvise(map, map_len, libc::MADV_HUGEPAGE);
        }
        let skip = (map as usize).next_multiple_of(HUGE) - map as usize;
        // The boundary lies within the first HUGE bytes, and `bytes` more
        // follow it inside the mapping; a huge page is aligned for any T.
        let data = NonNull::new(map.cast::<u8>().wrapping_add(skip).cast::<T>())?;
        Some(HugeVec {
            map: NonNull::new(map)?,
            map_len,
            data,
            len: 0,
            cap,
        })
    }

    /// Append `v`; `Err(v)` when the capacity is used up.
    pub fn push(&mut self, v: T) -> Result<(), T> {
        if self.len == self.cap {
            return Err(v);
        }
        // SAFETY: len < cap, so the slot lies inside the mapping, which is
        // writable, aligned for T (see with_capacity) and ours alone.
        unsafe { self.data.as_ptr().add(self.len).write(v) };
        self.len += 1;
        Ok(())
    }
}

impl<T: Copy> Deref for HugeVec<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        // SAFETY: the first `len` slots were written by `push`, and the
        // mapping lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.data.as_ptr(), self.len) }
    }
}

impl<T: Copy> Drop for HugeVec<T> {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in with_capacity, which
        // nothing refers to once `self` is gone (slices borrow `self`).
        unsafe {
            libc::munmap(self.map.as_ptr(), self.map_len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{HugeVec, HUGE};

    #[test]
    fn holds_what_was_pushed_up_to_its_capacity() {
        let mut v: HugeVec<(u64, u32)> = HugeVec::with_capacity(100_000).unwrap();
        assert_eq!(
            v.as_ptr() as usize % HUGE,
            0,
            "starts on a huge-page boundary"
        );
        for i in 0..100_000u64 {
            v.push((i * 3, i as u32)).unwrap();
        }
        assert_eq!(v.push((7, 7)), Err((7, 7)), "full");
        assert_eq!(v.len(), 100_000);
        assert!(v
            .iter()
            .enumerate()
            .all(|(i, &(a, b))| a == i as u64 * 3 && b == i as u32));
        let empty: HugeVec<u64> = HugeVec::with_capacity(0).unwrap();
        assert!(empty.is_empty());
    }
}
