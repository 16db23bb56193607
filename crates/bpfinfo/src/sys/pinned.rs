//! Objects pinned in bpffs (BPF_OBJ_GET), and what /proc/self/fdinfo says
//! about an object descriptor: its kind and id, and the `memlock` and
//! `frozen` values bpftool prints, which no info struct carries.

use std::collections::HashMap;
use std::ffi::CString;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::attr::Attr;
use super::{bpf_fd, error, Cmd};
use crate::Error;

/// What a pinned path holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pinned {
    /// A program, by id.
    Prog(u32),
    /// A map, by id.
    Map(u32),
    /// A link, by id.
    Link(u32),
    /// Something else (a BTF object, an iterator).
    Other,
}

/// The object pinned at `path` and its kind. A path where nothing is
/// pinned is an error with errno ENOENT.
pub fn pinned(path: &Path) -> Result<Pinned, Error> {
    let fd = obj_get(path)?;
    let info = fdinfo(fd_ref(&fd));
    let id = |k: &str| info.get(k).and_then(|v| v.parse().ok());
    // A link's fdinfo also names its program, so links are told first.
    Ok(if let Some(l) = id("link_id") {
        Pinned::Link(l)
    } else if let Some(m) = id("map_id") {
        Pinned::Map(m)
    } else if let Some(p) = id("prog_id") {
        Pinned::Prog(p)
    } else {
        Pinned::Other
    })
}

fn fd_ref(fd: &OwnedFd) -> BorrowedFd<'_> {
    use std::os::fd::AsFd;
    fd.as_fd()
}

/// BPF_OBJ_GET: a descriptor for the object pinned at `path`.
fn obj_get(path: &Path) -> Result<OwnedFd, Error> {
    let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| Error::Sys {
        op: Cmd::ObjGet.name(),
        errno: libc::EINVAL,
    })?;
    let mut attr = Attr::new();
    // union bpf_attr for BPF_OBJ_GET: pathname@0, bpf_fd@8, file_flags@12.
    attr.put_ptr(0, c.as_ptr());
    // SAFETY: the one pointer is `c`, a NUL-terminated string alive for the
    // call; the kernel only reads it.
    unsafe { bpf_fd(Cmd::ObjGet, &mut attr) }.map_err(|e| match e {
        // "Nothing pinned there" is the caller's to word, not a permission
        // hint.
        libc::ENOENT => Error::Sys {
            op: Cmd::ObjGet.name(),
            errno: e,
        },
        e => error(Cmd::ObjGet, e),
    })
}

/// The `key:\tvalue` lines of /proc/self/fdinfo/FD (empty when unreadable).
pub fn fdinfo(fd: BorrowedFd<'_>) -> HashMap<String, String> {
    let text = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", fd.as_raw_fd()))
        .unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            Some((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

/// The bytes charged to the object's memory cgroup, as bpftool's
/// `memlock` (fdinfo `memlock:`).
pub fn memlock(fd: BorrowedFd<'_>) -> Option<u64> {
    fdinfo(fd).get("memlock").and_then(|v| v.parse().ok())
}

/// Program `id`'s memlock, or None when it is gone or fdinfo lacks it.
pub fn prog_memlock(id: u32) -> Option<u64> {
    let fd = super::prog_fd_by_id(id).ok()?;
    memlock(fd_ref(&fd))
}
