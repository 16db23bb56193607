//! The file mapping behind a [`crate::PerfFile`]: records are parsed in
//! place, and pages behind the read position are handed back to the kernel
//! so a large file does not stay resident. The one `unsafe` of this crate.

use std::fs::File;

pub(crate) struct Map {
    map: memmap2::Mmap,
    /// Everything below this offset has been released.
    released: std::sync::atomic::AtomicUsize,
}

/// Release in steps of this many bytes, to keep madvise calls rare.
const RELEASE_STEP: usize = 32 << 20;

impl Map {
    pub fn new(file: &File) -> std::io::Result<Map> {
        // SAFETY: a read-only private mapping. If another process truncates
        // the file while we read it, touching the lost pages raises SIGBUS
        // (as for perf, which maps perf.data the same way); every offset we
        // read is checked against the length the file had when mapped.
        let map = unsafe { memmap2::Mmap::map(file) }?;
        let _ = map.advise(memmap2::Advice::Sequential);
        Ok(Map {
            map,
            released: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Whether [`Map::release_before`] with `offset` would release anything:
    /// callers can skip finding the offset when it would not.
    pub fn would_release(&self, offset: usize) -> bool {
        let released = self.released.load(std::sync::atomic::Ordering::Relaxed);
        offset.min(self.map.len()) / 4096 * 4096 >= released + RELEASE_STEP
    }

    /// Drop the pages before `offset` from memory: nothing before it will
    /// be read again except through a new iterator, which faults them back
    /// in from the page cache.
    pub fn release_before(&self, offset: usize) {
        let page = 4096;
        let end = offset.min(self.map.len()) / page * page;
        let released = self.released.load(std::sync::atomic::Ordering::Relaxed);
        if end < released + RELEASE_STEP {
            return;
        }
        // SAFETY: DONTNEED on a private, never-written file mapping only
        // discards clean pages; later reads fault the same bytes back in
        // from the file, so no slice handed out can observe a change.
        let _ = unsafe {
            self.map.unchecked_advise_range(
                memmap2::UncheckedAdvice::DontNeed,
                released,
                end - released,
            )
        };
        self.released
            .store(end, std::sync::atomic::Ordering::Relaxed);
    }

    /// Drop the whole pages between `start` and `end` from memory, for a
    /// reader of one part of the file; returns where the next call should
    /// start (`end` rounded down to a page).
    pub fn release_range(&self, start: usize, end: usize) -> usize {
        let page = 4096;
        let from = start.div_ceil(page) * page;
        let to = end.min(self.map.len()) / page * page;
        if to > from {
            // SAFETY: as in `release_before`: clean pages of a private,
            // never-written file mapping, faulted back in unchanged if read
            // again (by this reader or any other).
            let _ = unsafe {
                self.map
                    .unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, from, to - from)
            };
        }
        to.max(start)
    }
}
