//! The kernel side: bpf(2), perf_event_open(2) and friends.
//!
//! This is the only module with `unsafe` code. Every system call goes through
//! a byte buffer built from zeroes (see `attr.rs`), and every file descriptor the
//! kernel hands out is wrapped in an [`OwnedFd`] at once, so it is closed on
//! every path.

mod attr;
pub(crate) mod fetch;
mod links;
pub(crate) mod load;
mod map_list;
mod maps;
mod names;
mod objinfo;
mod owners;
pub(crate) mod perf;
mod pinned;
mod prog_meta;

use std::os::fd::{FromRawFd, OwnedFd};

pub use fetch::{fetch_prog, fetch_prog_fd, Capture, LiveProg};
pub use links::{link_type_name, links, LinkInfo};
pub use load::TestRunResult;
pub use map_list::{map_info, maps, MapInfo};
pub use maps::{map_meta, prog_map_ids};
pub use owners::{scan_proc, PerfAttach, ProcScan};
pub use pinned::{fdinfo, memlock, pinned, prog_memlock, Pinned};
pub use prog_meta::prog_meta_snapshot;

use crate::Error;
use attr::Attr;

/// bpf(2) commands we use (include/uapi/linux/bpf.h, `enum bpf_cmd`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Cmd {
    ProgLoad = 5,
    ObjGet = 7,
    ProgTestRun = 10,
    ProgGetNextId = 11,
    MapGetNextId = 12,
    ProgGetFdById = 13,
    MapGetFdById = 14,
    ObjGetInfoByFd = 15,
    BtfLoad = 18,
    BtfGetFdById = 19,
    TaskFdQuery = 20,
    BtfGetNextId = 23,
    LinkGetFdById = 30,
    LinkGetNextId = 31,
    EnableStats = 32,
}

impl Cmd {
    /// How errors name the command.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Cmd::ProgLoad => "bpf(BPF_PROG_LOAD)",
            Cmd::ObjGet => "bpf(BPF_OBJ_GET)",
            Cmd::MapGetNextId => "bpf(BPF_MAP_GET_NEXT_ID)",
            Cmd::ProgTestRun => "bpf(BPF_PROG_TEST_RUN)",
            Cmd::ProgGetNextId => "bpf(BPF_PROG_GET_NEXT_ID)",
            Cmd::ProgGetFdById => "bpf(BPF_PROG_GET_FD_BY_ID)",
            Cmd::MapGetFdById => "bpf(BPF_MAP_GET_FD_BY_ID)",
            Cmd::TaskFdQuery => "bpf(BPF_TASK_FD_QUERY)",
            Cmd::BtfGetNextId => "bpf(BPF_BTF_GET_NEXT_ID)",
            Cmd::LinkGetFdById => "bpf(BPF_LINK_GET_FD_BY_ID)",
            Cmd::LinkGetNextId => "bpf(BPF_LINK_GET_NEXT_ID)",
            Cmd::ObjGetInfoByFd => "bpf(BPF_OBJ_GET_INFO_BY_FD)",
            Cmd::BtfLoad => "bpf(BPF_BTF_LOAD)",
            Cmd::BtfGetFdById => "bpf(BPF_BTF_GET_FD_BY_ID)",
            Cmd::EnableStats => "bpf(BPF_ENABLE_STATS)",
        }
    }
}

/// Raw bpf(2). Returns the non-negative result or the errno.
///
/// # Safety
/// Every address stored in `attr` must point to memory valid for the reads
/// and writes `cmd` performs through it, for the duration of the call.
unsafe fn bpf(cmd: Cmd, attr: &mut Attr) -> Result<i64, i32> {
    // SAFETY: `attr` is a live buffer of ATTR_SIZE bytes, which is the size we
    // pass; the kernel reads at most that many bytes and writes back only
    // within them. Pointers inside are the caller's responsibility (see the
    // function contract).
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd as libc::c_long,
            attr.as_mut_ptr(),
            attr::ATTR_SIZE as libc::c_uint,
        )
    };
    if r < 0 {
        Err(last_errno())
    } else {
        Ok(r as i64)
    }
}

/// bpf(2) for a command that returns a new file descriptor.
///
/// # Safety
/// As for [`bpf`].
unsafe fn bpf_fd(cmd: Cmd, attr: &mut Attr) -> Result<OwnedFd, i32> {
    // SAFETY: forwarded contract.
    let fd = unsafe { bpf(cmd, attr) }?;
    // SAFETY: on success these commands return a new descriptor that nobody
    // else owns; wrapping it at once guarantees it is closed exactly once.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

pub(crate) fn last_errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// Turn an errno from `cmd` into the typed error.
pub(crate) fn error(cmd: Cmd, errno: i32) -> Error {
    match errno {
        libc::EPERM | libc::EACCES => permission(cmd.name()),
        _ => Error::Sys {
            op: cmd.name(),
            errno,
        },
    }
}

/// A permission error with the hint that applies on this machine.
pub(crate) fn permission(op: &'static str) -> Error {
    let mut hint = String::new();
    if !is_root() {
        if let Ok(v) = std::fs::read_to_string("/proc/sys/kernel/unprivileged_bpf_disabled") {
            let v = v.trim();
            if v != "0" {
                hint = format!(
                    " (kernel.unprivileged_bpf_disabled={v}: bpf(2) without capabilities is off)"
                );
            }
        }
    }
    Error::Permission { op, hint }
}

/// Whether the effective user is root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Nanoseconds on CLOCK_BOOTTIME, the clock of `bpf_prog_info.load_time`.
pub fn boottime_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_BOOTTIME exists on
    // every kernel that has bpf(2).
    let r = unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    if r != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The ids of all loaded BPF programs, in ascending order.
///
/// Ends at the last id. A permission error is yielded once, then the
/// iterator ends.
pub fn prog_ids() -> ProgIds {
    ProgIds {
        next: 0,
        done: false,
    }
}

/// Iterator returned by [`prog_ids`].
#[derive(Debug)]
pub struct ProgIds {
    next: u32,
    done: bool,
}

impl Iterator for ProgIds {
    type Item = Result<u32, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let mut attr = Attr::new();
        attr.put_u32(0, self.next);
        // SAFETY: BPF_PROG_GET_NEXT_ID reads start_id and writes next_id,
        // both inside `attr`; there are no pointers.
        match unsafe { bpf(Cmd::ProgGetNextId, &mut attr) } {
            Ok(_) => {
                self.next = attr.get_u32(4);
                Some(Ok(self.next))
            }
            Err(libc::ENOENT) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(error(Cmd::ProgGetNextId, e)))
            }
        }
    }
}

/// Fetch every loaded program. One program failing (unloaded meanwhile,
/// not JITed, ...) yields its error and the walk goes on; only a failure to
/// list ids (e.g. permission) ends it, as an item with id 0.
pub fn walk_progs(capture: Capture) -> impl Iterator<Item = (u32, Result<LiveProg, Error>)> {
    prog_ids().map(move |r| match r {
        Ok(id) => (id, fetch_prog(id, capture)),
        Err(e) => (0, Err(e)),
    })
}

/// Turn on run-time statistics (`run_cnt`, `run_time_ns`) for all programs.
/// They stay on while the returned descriptor is open.
pub fn enable_stats() -> Result<OwnedFd, Error> {
    let mut attr = Attr::new();
    attr.put_u32(0, 0); // BPF_STATS_RUN_TIME
                        // SAFETY: BPF_ENABLE_STATS reads one u32 from `attr`; no pointers.
    unsafe { bpf_fd(Cmd::EnableStats, &mut attr) }.map_err(|e| error(Cmd::EnableStats, e))
}

/// A descriptor for program `id` (BPF_PROG_GET_FD_BY_ID). It keeps the
/// program loaded while open.
pub fn prog_fd_by_id(id: u32) -> Result<OwnedFd, Error> {
    let mut attr = Attr::new();
    attr.put_u32(0, id);
    // SAFETY: BPF_PROG_GET_FD_BY_ID reads prog_id/open_flags from `attr`; no
    // pointers.
    unsafe { bpf_fd(Cmd::ProgGetFdById, &mut attr) }.map_err(|e| match e {
        libc::ENOENT => Error::Gone { id },
        e => error(Cmd::ProgGetFdById, e),
    })
}

/// Call getpid(2) `times` times, bypassing any libc caching, so that
/// programs attached to `syscalls:sys_enter_getpid` run.
pub fn getpid_syscall(times: u64) {
    for _ in 0..times {
        // SAFETY: getpid takes no arguments and cannot fail.
        unsafe { libc::syscall(libc::SYS_getpid) };
    }
}

/// Run program `fd` `repeat` times on a copy of `data` with
/// BPF_PROG_TEST_RUN (packet program types: socket filters, tc, XDP, ...).
pub fn test_run(
    fd: std::os::fd::BorrowedFd<'_>,
    data: &[u8],
    repeat: u32,
) -> Result<TestRunResult, Error> {
    load::test_run(fd, data, repeat)
}
