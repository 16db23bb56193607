//! Kernel BPF run-time statistics (run_cnt, run_time_ns) over the
//! recording: on already (kernel.bpf_stats_enabled), or turned on for it
//! with BPF_ENABLE_STATS. The delta over the run is stored in each program's
//! BPF_PROG_INFO entry, whose fields Linux perf reads and ignores.

use std::os::fd::OwnedFd;

use super::bpf::{self, SharedBook};

/// Kernel BPF run-time statistics over the recording.
pub struct BpfStats {
    active: bool,
    /// Held open to keep BPF_ENABLE_STATS on; closed at the end.
    fd: Option<OwnedFd>,
}

impl BpfStats {
    pub fn start(asked: bool) -> BpfStats {
        let sysctl_on = std::fs::read_to_string("/proc/sys/kernel/bpf_stats_enabled")
            .map(|s| s.trim() == "1")
            .unwrap_or(false);
        let mut fd = None;
        if asked && !sysctl_on {
            match bpfinfo::sys::enable_stats() {
                Ok(f) => {
                    eprintln!(
                        "bpfprof: BPF run-time stats on for this recording (BPF_ENABLE_STATS): each program run reads the clock twice more while they are on"
                    );
                    fd = Some(f);
                }
                Err(e) => eprintln!("bpfprof: cannot enable BPF run-time stats: {e}"),
            }
        }
        BpfStats {
            active: sysctl_on || fd.is_some(),
            fd,
        }
    }

    /// Put each program's run_cnt/run_time_ns delta over the recording into
    /// its info (zero when stats were off), and say what they cost.
    pub fn finish(self, book: &SharedBook) -> Option<String> {
        let mut b = book.lock().unwrap();
        let ids: Vec<u32> = b.progs.keys().copied().collect();
        let mut runs = 0u64;
        let mut ns = 0u64;
        for id in ids {
            let end = if self.active && !b.unloaded.contains(&id) {
                bpf::current_stats(id)
            } else {
                None
            };
            let start = b.start_stats.get(&id).copied().unwrap_or((0, 0));
            let p = b.progs.get_mut(&id).unwrap();
            if !self.active {
                p.run_cnt = 0;
                p.run_time_ns = 0;
                continue;
            }
            let (c, t) = end.unwrap_or((p.run_cnt, p.run_time_ns));
            p.run_cnt = c.saturating_sub(start.0);
            p.run_time_ns = t.saturating_sub(start.1);
            runs += p.run_cnt;
            ns += p.run_time_ns;
        }
        drop(self.fd);
        self.active.then(|| {
            // What the stats cost is in the samples, not a constant: it
            // depends on the machine's clock source (a VM's kvm-clock read
            // costs several times a TSC read).
            format!(
                "bpfprof: BPF stats over the recording: {runs} program runs, {:.3} ms in BPF programs (what the stats cost is measured from the samples: bpfprof report --bpf, with -g)",
                ns as f64 / 1e6,
            )
        })
    }
}
