//! Who holds BPF programs, found as bpftool finds them: every process's fds
//! under /proc. A program fd's fdinfo has `prog_id:`, a link fd's has
//! `link_id:` and `prog_id:`, and a perf event fd is asked with
//! BPF_TASK_FD_QUERY, which also says where the program is attached (what
//! `bpftool perf show` prints).
//!
//! Processes and fds come and go during the scan; whatever vanishes is
//! skipped, never an error.

use std::collections::{BTreeMap, BTreeSet};

use perfdata::BpfAttach;

use super::attr::Attr;
use super::bpf;
use super::names::Names;
use super::Cmd;

/// A perf event fd with a program attached, as `bpftool perf show` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerfAttach {
    /// The process holding the fd.
    pub pid: u32,
    /// The fd number in that process.
    pub fd: u32,
    /// The attached program.
    pub prog_id: u32,
    /// Kind (`tracepoint`, `raw_tracepoint`, `kprobe`, `kretprobe`,
    /// `uprobe`, `uretprobe`) and target.
    pub attach: BpfAttach,
}

/// What one pass over /proc found.
#[derive(Debug, Default, Clone)]
pub struct ProcScan {
    /// Program id → pids holding an fd on it.
    pub prog_holders: BTreeMap<u32, BTreeSet<u32>>,
    /// Link id → pids holding an fd on it.
    pub link_holders: BTreeMap<u32, BTreeSet<u32>>,
    /// Perf event fds with a program.
    pub perf: Vec<PerfAttach>,
    /// `comm` of every pid above.
    pub comms: BTreeMap<u32, String>,
}

/// Scan every process's fds (one pass over /proc).
pub fn scan_proc() -> ProcScan {
    scan_proc_with(&mut Names::default())
}

pub(crate) fn scan_proc_with(names: &mut Names) -> ProcScan {
    let mut s = ProcScan::default();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return s;
    };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        let mut holds = false;
        for f in fds.flatten() {
            let Some(fd) = f.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(target) = std::fs::read_link(f.path()) else {
                continue;
            };
            match target.as_os_str().as_encoded_bytes() {
                b"anon_inode:bpf-prog" => {
                    if let Some(id) = fdinfo(pid, fd, "prog_id") {
                        s.prog_holders.entry(id).or_default().insert(pid);
                        holds = true;
                    }
                }
                b"anon_inode:bpf_link" => {
                    if let Some(id) = fdinfo(pid, fd, "link_id") {
                        s.link_holders.entry(id).or_default().insert(pid);
                        holds = true;
                    }
                }
                b"anon_inode:[perf_event]" => {
                    if let Some(a) = task_fd_query(pid, fd, names) {
                        s.perf.push(a);
                        holds = true;
                    }
                }
                _ => {}
            }
        }
        if holds {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            s.comms.insert(pid, comm.trim_end_matches('\n').to_string());
        }
    }
    s
}

/// The value of `key:` in /proc/PID/fdinfo/FD.
fn fdinfo(pid: u32, fd: u32, key: &str) -> Option<u32> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")).ok()?;
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k == key).then(|| v.trim().parse().ok())?
    })
}

/// BPF_TASK_FD_QUERY on fd `fd` of `pid`: the attached program and where,
/// or None when the event has no program (or the fd is gone).
fn task_fd_query(pid: u32, fd: u32, names: &mut Names) -> Option<PerfAttach> {
    // Tracepoint and function names are short; uprobe paths are at most
    // PATH_MAX. ENOSPC (a longer name) still returns the truncated name.
    let mut buf = vec![0u8; 4096];
    let mut attr = Attr::new();
    attr.put_u32(0, pid)
        .put_u32(4, fd)
        .put_u32(8, 0)
        .put_u32(12, buf.len() as u32)
        .put_ptr(16, buf.as_mut_ptr());
    // SAFETY: `buf` is buf_len bytes, writable and alive for the call; the
    // kernel writes the name there and the results into `attr`.
    match unsafe { bpf(Cmd::TaskFdQuery, &mut attr) } {
        Ok(_) | Err(libc::ENOSPC) => {}
        Err(_) => return None,
    }
    let prog_id = attr.get_u32(24);
    let fd_type = attr.get_u32(28);
    let wide = |off: usize| attr.get_u32(off) as u64 | (attr.get_u32(off + 4) as u64) << 32;
    let (probe_offset, probe_addr) = (wide(32), wide(40));
    let name = super::objinfo::c_text(&buf);
    let mut a = BpfAttach::default();
    match fd_type {
        0 => {
            a.kind = "raw_tracepoint".into();
            a.target = name;
        }
        1 => {
            a.kind = "tracepoint".into();
            a.target = names.tracepoint(&name);
        }
        2 | 3 => {
            a.kind = if fd_type == 2 { "kprobe" } else { "kretprobe" }.into();
            a.target = if name.is_empty() {
                format!("{probe_addr:#x}")
            } else {
                format!("{name}+{probe_offset:#x}")
            };
            a.offset = Some(probe_offset);
        }
        4 | 5 => {
            a.kind = if fd_type == 4 { "uprobe" } else { "uretprobe" }.into();
            a.target = format!("{name}:{probe_offset:#x}");
            a.offset = Some(probe_offset);
        }
        other => {
            a.kind = "perf_event".into();
            a.target = format!("fd_type {other}");
        }
    }
    Some(PerfAttach {
        pid,
        fd,
        prog_id,
        attach: a,
    })
}
