//! What this process may do, in the words a refusal needs: which
//! capability is missing (read from /proc/self/status, so a user with
//! CAP_BPF and CAP_PERFMON is not told to grant those), and what the
//! kernel's restricting sysctls will cost the recording.

pub const CAP_SYS_ADMIN: u32 = 21;
pub const CAP_SYSLOG: u32 = 34;
pub const CAP_PERFMON: u32 = 38;
pub const CAP_BPF: u32 = 39;

/// The effective capability set; None if /proc does not say.
pub fn effective() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_cap_eff(&s)
}

fn parse_cap_eff(status: &str) -> Option<u64> {
    let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(hex.trim(), 16).ok()
}

pub fn name(cap: u32) -> &'static str {
    match cap {
        CAP_SYS_ADMIN => "CAP_SYS_ADMIN",
        CAP_SYSLOG => "CAP_SYSLOG",
        CAP_PERFMON => "CAP_PERFMON",
        CAP_BPF => "CAP_BPF",
        _ => "a capability",
    }
}

/// "lacks CAP_SYS_ADMIN (has CAP_BPF, CAP_PERFMON)" for the caps in
/// `needed` that the set `eff` does not hold; None when it holds all.
pub fn lacking(eff: u64, needed: &[u32]) -> Option<String> {
    let (has, lacks): (Vec<u32>, Vec<u32>) = needed.iter().partition(|&&c| eff & (1 << c) != 0);
    if lacks.is_empty() {
        return None;
    }
    let list = |v: &[u32]| v.iter().map(|&c| name(c)).collect::<Vec<_>>().join(", ");
    let mut s = format!("this process lacks {}", list(&lacks));
    let others: Vec<u32> = [CAP_SYS_ADMIN, CAP_PERFMON, CAP_BPF]
        .into_iter()
        .filter(|c| eff & (1 << c) != 0)
        .chain(has)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if !others.is_empty() {
        s += &format!(" (it has {})", list(&others));
    }
    Some(s)
}

/// Why listing other programs failed, when the cause is a capability:
/// BPF_PROG_GET_NEXT_ID and BPF_*_GET_FD_BY_ID need CAP_SYS_ADMIN even
/// with CAP_BPF (kernel/bpf/syscall.c), which bpfinfo's generic message
/// does not say.
pub fn bpf_listing_refused(e: &bpfinfo::Error) -> Option<String> {
    let bpfinfo::Error::Permission { op, hint } = e else {
        return None;
    };
    let why = lacking(effective()?, &[CAP_SYS_ADMIN])?;
    Some(format!(
        "{op}: permission denied: listing and opening other BPF programs needs CAP_SYS_ADMIN, and {why}{hint}; run as root or `sudo setcap cap_sys_admin,cap_perfmon,cap_bpf+ep` on bpfprof"
    ))
}

fn sysctl(name: &str) -> Option<i64> {
    std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// One sentence per restriction of this machine that will cost the
/// recording something, said before it starts.
pub fn restrictions() -> Vec<String> {
    let mut v = Vec::new();
    let eff = effective().unwrap_or(0);
    match sysctl("kptr_restrict") {
        Some(2) => v.push(
            "kernel.kptr_restrict is 2: kernel addresses are hidden even from root, so kernel and BPF samples will be [unknown] and BPF programs cannot be annotated; for the recording, `sysctl kernel.kptr_restrict=1` (0 for non-root)".into(),
        ),
        Some(1) if eff & (1 << CAP_SYSLOG) == 0 => v.push(format!(
            "kernel.kptr_restrict is 1 and {}: kernel addresses are hidden, so kernel and BPF samples will be [unknown]; run as root or `sysctl kernel.kptr_restrict=0`",
            lacking(eff, &[CAP_SYSLOG]).unwrap_or_default()
        )),
        _ => {}
    }
    let tracefs = [
        "/sys/kernel/tracing/events",
        "/sys/kernel/debug/tracing/events",
    ];
    if !tracefs.iter().any(|p| std::path::Path::new(p).exists()) {
        // Mounted but mode 0700 (a non-root user) is another fix.
        let mounted = std::fs::read_to_string("/proc/self/mounts").is_ok_and(|m| {
            m.lines()
                .any(|l| l.split_whitespace().nth(2) == Some("tracefs"))
        });
        v.push(if mounted {
            "tracefs is mounted but this user cannot read it: tracepoint attachments of BPF programs will be shown by id, not name; run as root".into()
        } else {
            "tracefs is not mounted (no /sys/kernel/tracing/events): tracepoint attachments of BPF programs will be shown by id, not name; `mount -t tracefs nodev /sys/kernel/tracing`".into()
        });
    }
    v
}

/// The kernel's ceiling on sampling frequencies,
/// `kernel.perf_event_max_sample_rate`; it lowers it by itself when
/// sampling interrupts take too long (a busy machine), so it is read just
/// before opening, never assumed.
pub fn max_sample_rate() -> Option<u64> {
    sysctl("perf_event_max_sample_rate").and_then(|r| u64::try_from(r).ok())
}

/// perf record's rule for a frequency over the ceiling: lower it to the
/// ceiling and say so (the kernel refuses more with EINVAL). `asked`: given
/// with -F, not the default.
pub fn fit_freq(freq: u64, asked: bool) -> (u64, Option<String>) {
    fit_freq_to(freq, asked, max_sample_rate())
}

fn fit_freq_to(freq: u64, asked: bool, max: Option<u64>) -> (u64, Option<String>) {
    match max {
        Some(max) if max > 0 && freq > max => {
            let why = if asked {
                format!("-F {freq} is over the kernel's maximum sampling rate ({max} Hz): sampling at {max} Hz")
            } else {
                format!("lowering the default frequency from {freq} to {max} Hz, the kernel's maximum sampling rate")
            };
            (
                max,
                Some(format!(
                    "{why}; the kernel lowers kernel.perf_event_max_sample_rate when sampling interrupts take too long, and `sysctl kernel.perf_event_max_sample_rate=N` raises it"
                )),
            )
        }
        _ => (freq, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frequency_over_the_ceiling_is_lowered_and_said() {
        assert_eq!(fit_freq_to(4000, false, Some(100_000)), (4000, None));
        assert_eq!(fit_freq_to(4000, true, None), (4000, None));
        let (f, why) = fit_freq_to(50_000, true, Some(12_500));
        assert_eq!(f, 12_500);
        let why = why.unwrap();
        assert!(
            why.contains("-F 50000") && why.contains("perf_event_max_sample_rate"),
            "{why}"
        );
        let (f, why) = fit_freq_to(4000, false, Some(1000));
        assert_eq!(f, 1000);
        assert!(why.unwrap().contains("default frequency from 4000 to 1000"));
    }

    #[test]
    fn cap_eff_and_what_is_lacking() {
        let status = "Name:\tx\nCapEff:\t000000c000000000\n";
        let eff = parse_cap_eff(status).unwrap();
        assert_eq!(eff, (1 << CAP_PERFMON) | (1 << CAP_BPF));
        assert_eq!(
            lacking(eff, &[CAP_SYS_ADMIN]).unwrap(),
            "this process lacks CAP_SYS_ADMIN (it has CAP_PERFMON, CAP_BPF)"
        );
        assert_eq!(lacking(eff, &[CAP_PERFMON]), None);
        assert_eq!(
            lacking(0, &[CAP_PERFMON]).unwrap(),
            "this process lacks CAP_PERFMON"
        );
    }
}
