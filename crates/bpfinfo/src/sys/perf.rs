//! Attaching a program to a tracepoint: perf_event_open(2) with
//! PERF_TYPE_TRACEPOINT, then PERF_EVENT_IOC_SET_BPF and _ENABLE.

use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use super::attr::Attr;
use super::last_errno;
use crate::Error;

const PERF_TYPE_TRACEPOINT: u32 = 2;
const PERF_ATTR_SIZE_VER5: u32 = 112;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
/// _IO('$', 0)
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
/// _IOW('$', 8, __u32)
const PERF_EVENT_IOC_SET_BPF: libc::c_ulong = 0x4004_2408;

/// Open a counting tracepoint event `tp_id` for all tasks on `cpu`, attach
/// `prog` to it and enable it. Closing the returned descriptor detaches.
pub(crate) fn attach_tracepoint(
    tp_id: u64,
    cpu: i32,
    prog: BorrowedFd<'_>,
) -> Result<OwnedFd, Error> {
    let mut attr = Attr::new();
    attr.put_u32(0, PERF_TYPE_TRACEPOINT)
        .put_u32(4, PERF_ATTR_SIZE_VER5)
        .put_u64(8, tp_id)
        .put_u64(16, 1) // sample_period
        .put_u32(48, 1); // wakeup_events
                         // SAFETY: `attr` is a zeroed perf_event_attr of at least `size` bytes that
                         // the kernel only reads; pid -1 with a cpu, no group.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr.as_mut_ptr(),
            -1 as libc::pid_t,
            cpu as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        let errno = last_errno();
        return Err(match errno {
            libc::EPERM | libc::EACCES => {
                super::permission("perf_event_open(PERF_TYPE_TRACEPOINT)")
            }
            _ => Error::Sys {
                op: "perf_event_open(PERF_TYPE_TRACEPOINT)",
                errno,
            },
        });
    }
    // SAFETY: perf_event_open returned a new descriptor that nobody else owns.
    let event = unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) };
    // SAFETY: SET_BPF takes the program descriptor by value; `event` is open.
    let r = unsafe {
        libc::ioctl(
            event.as_raw_fd(),
            PERF_EVENT_IOC_SET_BPF as _,
            prog.as_raw_fd(),
        )
    };
    if r < 0 {
        return Err(Error::Sys {
            op: "ioctl(PERF_EVENT_IOC_SET_BPF)",
            errno: last_errno(),
        });
    }
    // SAFETY: ENABLE takes no argument; `event` is open.
    let r = unsafe { libc::ioctl(event.as_raw_fd(), PERF_EVENT_IOC_ENABLE as _, 0) };
    if r < 0 {
        return Err(Error::Sys {
            op: "ioctl(PERF_EVENT_IOC_ENABLE)",
            errno: last_errno(),
        });
    }
    Ok(event)
}

/// Mount tracefs at `/sys/kernel/tracing` (it is not mounted on some
/// minimal systems).
pub(crate) fn mount_tracefs() -> Result<(), Error> {
    let src = c"nodev";
    let target = c"/sys/kernel/tracing";
    let fstype = c"tracefs";
    // SAFETY: all three are NUL-terminated C strings alive for the call; no
    // data argument.
    let r = unsafe {
        libc::mount(
            src.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if r < 0 {
        let errno = last_errno();
        return Err(match errno {
            libc::EPERM | libc::EACCES => {
                super::permission("mount -t tracefs nodev /sys/kernel/tracing")
            }
            _ => Error::Sys {
                op: "mount(tracefs, /sys/kernel/tracing)",
                errno,
            },
        });
    }
    Ok(())
}
