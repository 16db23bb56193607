//! A zeroed, fixed-size argument buffer for bpf(2) and perf_event_open(2).
//!
//! Arguments are written at their UAPI byte offsets into a zeroed buffer
//! instead of through `#[repr(C)]` structs: the kernel rejects non-zero bytes
//! in fields (or tail padding) it does not expect with E2BIG or EINVAL, and a
//! byte buffer has no padding whose contents are up to the compiler.

/// Large enough for every `union bpf_attr` member we use (the largest,
/// BPF_PROG_LOAD, ends at 144) and for `struct perf_event_attr` VER8 (136).
pub(crate) const ATTR_SIZE: usize = 160;

/// An 8-byte aligned, zero-initialised argument buffer.
#[repr(C, align(8))]
pub(crate) struct Attr {
    bytes: [u8; ATTR_SIZE],
}

impl Attr {
    pub(crate) fn new() -> Attr {
        Attr {
            bytes: [0; ATTR_SIZE],
        }
    }

    pub(crate) fn put_u32(&mut self, off: usize, v: u32) -> &mut Self {
        self.bytes[off..off + 4].copy_from_slice(&v.to_ne_bytes());
        self
    }

    pub(crate) fn put_u64(&mut self, off: usize, v: u64) -> &mut Self {
        self.bytes[off..off + 8].copy_from_slice(&v.to_ne_bytes());
        self
    }

    /// Store a user-space address; the caller keeps the memory alive across
    /// the system call (every caller does so within one function).
    pub(crate) fn put_ptr<T>(&mut self, off: usize, p: *const T) -> &mut Self {
        self.put_u64(off, p as usize as u64)
    }

    pub(crate) fn put_bytes(&mut self, off: usize, b: &[u8]) -> &mut Self {
        self.bytes[off..off + b.len()].copy_from_slice(b);
        self
    }

    pub(crate) fn get_u32(&self, off: usize) -> u32 {
        u32::from_ne_bytes(self.bytes[off..off + 4].try_into().expect("4 bytes"))
    }

    pub(crate) fn as_mut_ptr(&mut self) -> *mut u8 {
        self.bytes.as_mut_ptr()
    }
}

/// `struct bpf_prog_info`, as a zeroed byte buffer (see the module doc for
/// why it is not a struct).
#[repr(C, align(8))]
pub(crate) struct InfoBuf {
    pub(crate) bytes: [u8; perfdata::BPF_PROG_INFO_SIZE],
}

impl InfoBuf {
    pub(crate) fn new() -> InfoBuf {
        InfoBuf {
            bytes: [0; perfdata::BPF_PROG_INFO_SIZE],
        }
    }

    pub(crate) fn put_u32(&mut self, off: usize, v: u32) {
        self.bytes[off..off + 4].copy_from_slice(&v.to_ne_bytes());
    }

    pub(crate) fn put_u64(&mut self, off: usize, v: u64) {
        self.bytes[off..off + 8].copy_from_slice(&v.to_ne_bytes());
    }

    pub(crate) fn get_u32(&self, off: usize) -> u32 {
        u32::from_ne_bytes(self.bytes[off..off + 4].try_into().expect("4 bytes"))
    }

    pub(crate) fn get_u64(&self, off: usize) -> u64 {
        u64::from_ne_bytes(self.bytes[off..off + 8].try_into().expect("8 bytes"))
    }
}
