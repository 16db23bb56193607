//! The feature sections written at the end: the machine, the command line,
//! build ids, and the BPF programs' info and BTF.

use perfdata::{BpfProgInfo, BpfProgMeta, BtfBlob, BuildIdEntry, Features, NrCpus};

use super::events::parse_cpu_list;
use super::session::Options;
use super::synthesize::Dsos;
use super::sys;

fn cpuinfo() -> (Option<String>, Option<String>) {
    let Ok(s) = std::fs::read_to_string("/proc/cpuinfo") else {
        return (None, None);
    };
    let field = |key: &str| {
        s.lines()
            .find(|l| l.split(':').next().map(str::trim) == Some(key))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    let desc = field("model name");
    // perf's x86 cpuid string: vendor,family,model,stepping.
    let cpuid = match (
        field("vendor_id"),
        field("cpu family"),
        field("model"),
        field("stepping"),
    ) {
        (Some(v), Some(f), Some(m), Some(s)) => Some(format!("{v},{f},{m},{s}")),
        _ => None,
    };
    (desc, cpuid)
}

fn count_cpus(file: &str) -> Option<u32> {
    let s = std::fs::read_to_string(format!("/sys/devices/system/cpu/{file}")).ok()?;
    Some(parse_cpu_list(&s).len() as u32)
}

fn total_mem_kb() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

pub fn collect(
    opts: &Options,
    dsos: &Dsos,
    sample_time: Option<(u64, u64)>,
    progs: Vec<BpfProgInfo>,
    btf: Vec<BtfBlob>,
    meta: Vec<BpfProgMeta>,
) -> Features {
    let (hostname, release, machine) = sys::uname();
    let (cpudesc, cpuid) = cpuinfo();
    let nrcpus = match (count_cpus("possible"), count_cpus("online")) {
        (Some(available), Some(online)) => Some(NrCpus { available, online }),
        _ => None,
    };
    let build_ids = dsos
        .by_name
        .iter()
        .map(|(name, (cpumode, id))| BuildIdEntry {
            misc: *cpumode,
            pid: -1,
            build_id: id.clone(),
            filename: name.clone(),
        })
        .collect();
    Features {
        hostname: Some(hostname),
        osrelease: Some(release),
        version: Some(format!("bpfprof {}", env!("CARGO_PKG_VERSION"))),
        arch: Some(machine),
        nrcpus,
        cpudesc,
        cpuid,
        total_mem: total_mem_kb(),
        cmdline: Some(opts.cmdline.clone()),
        build_ids,
        sample_time,
        bpf_prog_info: Some(progs),
        bpf_btf: Some(btf),
        // Stored inside each program's BPF_PROG_INFO entry, which perf
        // reads without looking at it (perfdata::bpf_meta_tail).
        bpf_prog_meta: meta,
        ..Default::default()
    }
}
