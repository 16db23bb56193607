//! What the export tests share: a recording in which a BPF program runs
//! (bpftrace on getppid, hit by a loop on this thread), and perf script's
//! stacks of a file, collapsed as stackcollapse-perf.pl does.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub mod chromium;
pub mod firefox;

use crate::support;

pub use crate::support::Bpftrace;

pub fn has_bpftrace() -> bool {
    support::require(
        Command::new("bpftrace").arg("--version").output().is_ok(),
        "needs bpftrace (apt-get install bpftrace)",
    )
}

/// A bpftrace program counting getppid calls, attached when this returns.
pub fn bpftrace() -> Bpftrace {
    Bpftrace::start("tracepoint:syscalls:sys_enter_getppid { @c[comm, pid] = count(); }")
}

/// Record the whole system with bpfprof (`extra` args, e.g. `-g`) for
/// `secs` while this thread calls getppid, so the program runs throughout.
pub fn record(dir: &tempfile::TempDir, name: &str, extra: &[&str], secs: u32) -> PathBuf {
    let data = support::path(dir, name);
    let mut rec = support::bpfprof()
        .args(["record", "-a", "--duration"])
        .arg(secs.to_string())
        .args(extra)
        .arg("-o")
        .arg(&data)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60 + secs as u64);
    while rec.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the recorder did not finish");
        for _ in 0..10_000 {
            // parent_id is getppid(2): one syscall a call (glibc caches nothing).
            std::hint::black_box(std::os::unix::process::parent_id());
        }
    }
    assert!(rec.wait().unwrap().success(), "bpfprof record failed");
    data
}

/// A recording with call chains and a BPF program, or `None` (skipped)
/// when the machine cannot make one.
pub fn bpf_recording(dir: &tempfile::TempDir) -> Option<PathBuf> {
    if !support::live(true) || !has_bpftrace() {
        return None;
    }
    let _bt = bpftrace();
    Some(record(dir, "bpf.data", &["-g"], 2))
}

/// perf script's stacks collapsed: `comm;outermost;…;leaf` → samples. The
/// names are stackcollapse-perf.pl's: the symbol without its offset, or
/// for an unknown symbol `[object]` (the object's file name) where the
/// object is known.
pub fn perf_folded(file: &Path) -> BTreeMap<String, u64> {
    let text = support::stdout(
        Command::new("perf")
            .args(["script", "-F", "comm,ip,sym,dso", "-i"])
            .arg(file),
    );
    let mut out = BTreeMap::new();
    for block in text.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let mut lines = block.lines();
        let comm = lines.next().unwrap().trim().replace(';', ":");
        let mut frames: Vec<String> = lines.map(perf_frame).collect();
        frames.reverse();
        frames.insert(0, comm);
        *out.entry(frames.join(";")).or_insert(0) += 1;
    }
    out
}

/// `\t addr sym (dso)` → the name stackcollapse-perf.pl gives it.
fn perf_frame(line: &str) -> String {
    let t = line.trim();
    let rest = t.split_once(' ').map_or("", |(_, r)| r);
    let (sym, dso) = match rest.rfind(" (") {
        Some(i) => (&rest[..i], rest[i + 2..].trim_end_matches(')')),
        None => (rest, "[unknown]"),
    };
    let name = match (sym, dso) {
        ("[unknown]", "[unknown]") => "[unknown]".to_string(),
        ("[unknown]", d) => format!("[{}]", d.rsplit('/').next().unwrap_or(d)),
        (s, _) => s.to_string(),
    };
    name.replace(';', ":")
}

/// The samples of stacks that two collapsed profiles both have.
pub fn common(a: &BTreeMap<String, u64>, b: &BTreeMap<String, u64>) -> u64 {
    a.iter()
        .map(|(k, n)| (*n).min(b.get(k).copied().unwrap_or(0)))
        .sum()
}

/// Parse `stack count` lines.
pub fn parse_folded(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .map(|l| {
            let (s, n) = l.rsplit_once(' ').expect("stack count");
            (s.to_string(), n.parse().expect("a count"))
        })
        .collect()
}

/// `bpfprof report --bpf --json`'s sub-programs: name → own samples,
/// summed over programs with the same name.
pub fn bpf_subprog_samples(file: &Path) -> BTreeMap<String, u64> {
    let json = support::stdout(
        support::bpfprof()
            .args(["report", "--bpf", "--json", "-i"])
            .arg(file),
    );
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let mut out = BTreeMap::new();
    for p in v["programs"].as_array().expect("programs") {
        for s in p["subprogs"].as_array().expect("subprogs") {
            *out.entry(s["name"].as_str().unwrap().to_string())
                .or_insert(0) += s["samples"].as_u64().unwrap();
        }
    }
    out
}

/// `record --demo -g` for two seconds, exported as `format` to `out` in
/// `dir`: (the recording, the export).
pub fn demo_export(dir: &tempfile::TempDir, format: &str, out: &str) -> (PathBuf, PathBuf) {
    let data = support::path(dir, "demo.data");
    support::run(
        support::bpfprof()
            .args(["record", "--demo", "-g", "--duration", "2", "-o"])
            .arg(&data),
    );
    let exported = support::path(dir, out);
    support::run(
        support::bpfprof()
            .args(["export", "--format", format, "-i"])
            .arg(&data)
            .arg("-o")
            .arg(&exported),
    );
    (data, exported)
}
