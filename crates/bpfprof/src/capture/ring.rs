//! Reading whole records out of a perf ring buffer.
//!
//! Records are handed out in place; only a record that wraps around the end
//! of the data area is copied, into a scratch buffer reused across calls, so
//! the hot loop does not allocate.

use std::io;
use std::os::fd::BorrowedFd;

use super::sys::RingMap;

pub struct Ring {
    map: RingMap,
    scratch: Vec<u8>,
}

/// What one drain saw.
#[derive(Debug, Default, Clone, Copy)]
pub struct Drained {
    pub records: usize,
    pub bytes: usize,
    /// The ring held bytes that do not form a record (a corrupt header): they
    /// were skipped so the ring keeps flowing.
    pub garbage: bool,
}

impl Ring {
    pub fn new(fd: BorrowedFd<'_>, data_pages: usize) -> io::Result<Ring> {
        Ok(Ring {
            map: RingMap::new(fd, data_pages)?,
            scratch: Vec::with_capacity(64 * 1024),
        })
    }

    /// Pass every complete record to `f`, then hand the space back to the
    /// kernel. `f` returns false to stop early (e.g. on a write error); the
    /// records not yet seen stay in the ring.
    pub fn drain(&mut self, f: impl FnMut(&[u8]) -> bool) -> Drained {
        let (a, b) = self.map.pending();
        let d = decode(a, b, &mut self.scratch, f);
        if d.bytes > 0 {
            self.map.advance(d.bytes);
        }
        d
    }

    pub fn data_size(&self) -> usize {
        self.map.data_size()
    }
}

/// Split the pending bytes of a ring, `a` then `b` (the part that wrapped
/// around to the start of the data area), into records for `f`. A record
/// that straddles the two is copied into `scratch`. Kept apart from the
/// mapping so that it can be fuzzed.
pub fn decode(
    a: &[u8],
    b: &[u8],
    scratch: &mut Vec<u8>,
    mut f: impl FnMut(&[u8]) -> bool,
) -> Drained {
    let mut d = Drained::default();
    let total = a.len() + b.len();
    let mut off = 0usize;
    while off + 8 <= total {
        let size = header_size(a, b, off) as usize;
        if size < 8 || off + size > total {
            // A size that cannot be right: drop the rest rather than spin.
            d.garbage = size < 8;
            if d.garbage {
                off = total;
            }
            break;
        }
        let ok = if off + size <= a.len() {
            f(&a[off..off + size])
        } else if off >= a.len() {
            f(&b[off - a.len()..off - a.len() + size])
        } else {
            scratch.clear();
            scratch.extend_from_slice(&a[off..]);
            scratch.extend_from_slice(&b[..size - (a.len() - off)]);
            f(scratch)
        };
        if !ok {
            break;
        }
        off += size;
        d.records += 1;
    }
    d.bytes = off;
    d
}

/// The `size` field of the header at `off` in the two-part region.
fn header_size(a: &[u8], b: &[u8], off: usize) -> u16 {
    let byte = |i: usize| {
        if i < a.len() {
            a[i]
        } else {
            b[i - a.len()]
        }
    };
    u16::from_le_bytes([byte(off + 6), byte(off + 7)])
}
