//! BPF_OBJ_GET_INFO_BY_FD for links and maps, and the GET_FD_BY_ID /
//! GET_NEXT_ID pair for any object kind.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use super::attr::Attr;
use super::{bpf, bpf_fd, error, Cmd};
use crate::Error;

/// An 8-byte aligned, zeroed buffer for an info struct (`bpf_link_info`,
/// `bpf_map_info`). Zeroed because the kernel refuses non-zero bytes past
/// the struct it knows (E2BIG), and bytes, not a `#[repr(C)]` struct, so
/// there is no padding whose contents are up to the compiler.
#[repr(C, align(8))]
pub(crate) struct ObjBuf<const N: usize> {
    pub(crate) bytes: [u8; N],
}

impl<const N: usize> ObjBuf<N> {
    pub(crate) fn new() -> Self {
        ObjBuf { bytes: [0; N] }
    }
    pub(crate) fn u32(&self, off: usize) -> u32 {
        u32::from_ne_bytes(self.bytes[off..off + 4].try_into().expect("4 bytes"))
    }
    pub(crate) fn u64(&self, off: usize) -> u64 {
        u64::from_ne_bytes(self.bytes[off..off + 8].try_into().expect("8 bytes"))
    }
    pub(crate) fn put_u32(&mut self, off: usize, v: u32) {
        self.bytes[off..off + 4].copy_from_slice(&v.to_ne_bytes());
    }
    pub(crate) fn put_u64(&mut self, off: usize, v: u64) {
        self.bytes[off..off + 8].copy_from_slice(&v.to_ne_bytes());
    }
}

/// BPF_OBJ_GET_INFO_BY_FD into `info`.
///
/// # Safety
/// Every pointer stored in `info` must point to a live, writable buffer at
/// least as large as the length stored next to it.
pub(crate) unsafe fn get_info(fd: BorrowedFd<'_>, info: &mut [u8]) -> Result<(), Error> {
    let mut attr = Attr::new();
    attr.put_u32(0, fd.as_raw_fd() as u32)
        .put_u32(4, info.len() as u32)
        .put_ptr(8, info.as_mut_ptr());
    // SAFETY: the kernel writes at most info_len = info.len() bytes into
    // `info`, borrowed mutably for the call; pointers inside it are the
    // caller's contract.
    unsafe { bpf(Cmd::ObjGetInfoByFd, &mut attr) }.map_err(|e| error(Cmd::ObjGetInfoByFd, e))?;
    Ok(())
}

/// A descriptor for object `id` with `cmd` (BPF_LINK_GET_FD_BY_ID,
/// BPF_MAP_GET_FD_BY_ID), or None when it is gone.
pub(crate) fn fd_by_id(cmd: Cmd, id: u32) -> Result<Option<OwnedFd>, Error> {
    let mut attr = Attr::new();
    attr.put_u32(0, id);
    // SAFETY: the GET_FD_BY_ID commands read an id and open_flags (0) from
    // `attr`; no pointers.
    match unsafe { bpf_fd(cmd, &mut attr) } {
        Ok(fd) => Ok(Some(fd)),
        Err(libc::ENOENT) => Ok(None),
        Err(e) => Err(error(cmd, e)),
    }
}

/// All ids of one object kind (`cmd` is a GET_NEXT_ID), ascending.
pub(crate) fn all_ids(cmd: Cmd) -> Result<Vec<u32>, Error> {
    let mut ids = Vec::new();
    let mut next = 0;
    loop {
        let mut attr = Attr::new();
        attr.put_u32(0, next);
        // SAFETY: GET_NEXT_ID reads start_id and writes next_id, both in
        // `attr`; no pointers.
        match unsafe { bpf(cmd, &mut attr) } {
            Ok(_) => {
                next = attr.get_u32(4);
                ids.push(next);
            }
            Err(libc::ENOENT) => return Ok(ids),
            Err(e) => return Err(error(cmd, e)),
        }
    }
}

/// The text of a NUL-terminated name the kernel wrote into `buf`.
pub(crate) fn c_text(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// The id of the kernel's own BTF object (`vmlinux`), if it is loaded.
pub(crate) fn vmlinux_btf_id() -> Option<u32> {
    for id in all_ids(Cmd::BtfGetNextId).ok()? {
        let Ok(Some(fd)) = fd_by_id(Cmd::BtfGetFdById, id) else {
            continue;
        };
        // struct bpf_btf_info { u64 btf; u32 btf_size; u32 id; u64 name;
        // u32 name_len; u32 kernel_btf; }
        let mut name = [0u8; 64];
        let mut info = ObjBuf::<32>::new();
        info.put_u64(16, name.as_mut_ptr() as usize as u64);
        info.put_u32(24, name.len() as u32);
        // SAFETY: the one pointer set is `name`, of the length written next
        // to it, alive for the call; `btf` stays 0 so no blob is copied.
        if unsafe { get_info(fd.as_fd(), &mut info.bytes) }.is_ok()
            && info.u32(28) != 0
            && c_text(&name) == "vmlinux"
        {
            return Some(id);
        }
    }
    None
}
