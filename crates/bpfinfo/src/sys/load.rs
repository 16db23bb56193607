//! Loading and running programs: BPF_BTF_LOAD, BPF_PROG_LOAD,
//! BPF_PROG_TEST_RUN. Used by [`crate::testprog`].

use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

use super::attr::Attr;
use super::{bpf, bpf_fd, error, Cmd};
use crate::Error;

/// A verbose verifier log can be large; since 6.4 the kernel keeps its tail
/// when it does not fit, older kernels fail with ENOSPC (and we keep what
/// there is).
const LOG_SIZE: usize = 1 << 20;
/// How much of the log's end goes into the error.
const LOG_KEEP: usize = 16 << 10;

/// Load a raw BTF blob. On failure, load again with a log and return it.
pub(crate) fn btf_load(blob: &[u8], what: &str) -> Result<OwnedFd, Error> {
    let attempt = |log: Option<&mut Vec<u8>>| {
        let mut attr = Attr::new();
        attr.put_ptr(0, blob.as_ptr())
            .put_u32(16, blob.len() as u32);
        if let Some(log) = log {
            attr.put_ptr(8, log.as_mut_ptr())
                .put_u32(20, log.len() as u32)
                .put_u32(24, 1);
            // SAFETY: `blob` is readable for btf_size bytes and `log` writable
            // for btf_log_size bytes, both alive for the call.
            unsafe { bpf_fd(Cmd::BtfLoad, &mut attr) }
        } else {
            // SAFETY: `blob` is readable for btf_size bytes for the call.
            unsafe { bpf_fd(Cmd::BtfLoad, &mut attr) }
        }
    };
    match attempt(None) {
        Ok(fd) => Ok(fd),
        Err(e) if e == libc::EPERM || e == libc::EACCES => Err(error(Cmd::BtfLoad, e)),
        Err(_) => {
            let mut log = vec![0u8; LOG_SIZE];
            let r = attempt(Some(&mut log));
            match r {
                Ok(fd) => Ok(fd),
                Err(errno) => Err(Error::Rejected {
                    what: format!("BTF of {what}"),
                    errno,
                    log: log_tail(&log),
                }),
            }
        }
    }
}

/// What BPF_PROG_LOAD needs for a program with BTF, func_info and line_info.
pub(crate) struct ProgLoad<'a> {
    pub prog_type: u32,
    /// 8-byte instructions.
    pub insns: &'a [u8],
    /// Up to 15 bytes; the kernel stores it in `bpf_prog_info.name`.
    pub name: &'a str,
    pub btf_fd: BorrowedFd<'a>,
    /// `struct bpf_func_info` records (8 bytes each).
    pub func_info: &'a [u8],
    /// `struct bpf_line_info` records (16 bytes each).
    pub line_info: &'a [u8],
}

/// Load a program, first without a log (a large log can overflow and turn a
/// valid load into ENOSPC), then, if that fails, with one.
pub(crate) fn prog_load(p: &ProgLoad<'_>) -> Result<OwnedFd, Error> {
    const LICENSE: &[u8] = b"GPL\0";
    let mut name = [0u8; 16];
    let n = p.name.len().min(15);
    name[..n].copy_from_slice(&p.name.as_bytes()[..n]);
    let base = || {
        let mut attr = Attr::new();
        attr.put_u32(0, p.prog_type)
            .put_u32(4, (p.insns.len() / 8) as u32)
            .put_ptr(8, p.insns.as_ptr())
            .put_ptr(16, LICENSE.as_ptr())
            .put_bytes(48, &name)
            .put_u32(72, p.btf_fd.as_raw_fd() as u32)
            .put_u32(76, 8)
            .put_ptr(80, p.func_info.as_ptr())
            .put_u32(88, (p.func_info.len() / 8) as u32)
            .put_u32(92, 16)
            .put_ptr(96, p.line_info.as_ptr())
            .put_u32(104, (p.line_info.len() / 16) as u32);
        attr
    };
    let mut attr = base();
    // SAFETY: insns, license, func_info and line_info are borrowed slices
    // alive for the call, and the counts written match their lengths.
    match unsafe { bpf_fd(Cmd::ProgLoad, &mut attr) } {
        Ok(fd) => return Ok(fd),
        Err(e) if e == libc::EPERM || e == libc::EACCES => return Err(error(Cmd::ProgLoad, e)),
        Err(_) => {}
    }
    let mut log = vec![0u8; LOG_SIZE];
    let mut attr = base();
    attr.put_u32(24, 1)
        .put_u32(28, log.len() as u32)
        .put_ptr(32, log.as_mut_ptr());
    // SAFETY: as above, plus `log` is writable for log_size bytes.
    match unsafe { bpf_fd(Cmd::ProgLoad, &mut attr) } {
        Ok(fd) => Ok(fd),
        Err(errno) => Err(Error::Rejected {
            what: format!("program {}", p.name),
            errno,
            log: log_tail(&log),
        }),
    }
}

fn log_tail(log: &[u8]) -> String {
    let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
    let start = end.saturating_sub(LOG_KEEP);
    String::from_utf8_lossy(&log[start..end]).into_owned()
}

/// What one BPF_PROG_TEST_RUN returned.
#[derive(Debug, Clone, Copy)]
pub struct TestRunResult {
    /// The program's return value (of the last run).
    pub retval: u32,
    /// Average run time per repetition in nanoseconds, as the kernel measured it.
    pub duration_ns: u32,
}

/// Run `fd` `repeat` times on a copy of `data`.
pub(crate) fn test_run(
    fd: BorrowedFd<'_>,
    data: &[u8],
    repeat: u32,
) -> Result<TestRunResult, Error> {
    let mut out = vec![0u8; data.len() + 256];
    let mut attr = Attr::new();
    attr.put_u32(0, fd.as_raw_fd() as u32)
        .put_u32(8, data.len() as u32)
        .put_u32(12, out.len() as u32)
        .put_ptr(16, data.as_ptr())
        .put_ptr(24, out.as_mut_ptr())
        .put_u32(32, repeat);
    // SAFETY: data_in is readable for data_size_in bytes and data_out writable
    // for data_size_out bytes, both alive for the call.
    unsafe { bpf(Cmd::ProgTestRun, &mut attr) }.map_err(|e| error(Cmd::ProgTestRun, e))?;
    Ok(TestRunResult {
        retval: attr.get_u32(4),
        duration_ns: attr.get_u32(36),
    })
}
