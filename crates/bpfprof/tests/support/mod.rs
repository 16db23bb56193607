//! Shared by the live report/annotate tests: the skip-or-fail gate, perf
//! helpers, and a workload that makes BPF programs run.
#![allow(dead_code)]

pub mod tmux;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace's skip gate (testkit's): `require(ok, why)` is `ok`, or
/// prints why and is false, or fails when `CI` is set: a green CI run never
/// hides a skipped core test.
pub use testkit::{has_perf, is_root, require, run};

/// Whether a live test can run: root (to load BPF programs and sample the
/// system), and Linux perf when it is the oracle.
#[track_caller]
pub fn live(needs_perf: bool) -> bool {
    require(
        is_root(),
        "needs root (to load BPF programs and sample the system)",
    ) && (!needs_perf || require(has_perf(), "needs Linux perf (apt-get install linux-perf)"))
}

pub fn bpfprof() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bpfprof"))
}

pub fn stdout(cmd: &mut Command) -> String {
    String::from_utf8_lossy(&run(cmd).stdout).into_owned()
}

/// A row of a flat `--sort dso,sym` report.
#[derive(Debug, Clone, PartialEq)]
pub struct FlatRow {
    pub percent: f64,
    pub samples: u64,
    pub dso: String,
    /// `[k] name` or `[.] name`.
    pub sym: String,
}

/// `perf report --stdio --no-children --sort dso,sym -g none -n` as rows.
pub fn perf_flat(file: &Path) -> Vec<FlatRow> {
    let text = stdout(
        Command::new("perf")
            .args([
                "report",
                "--stdio",
                "--no-children",
                "--sort",
                "dso,sym",
                "-g",
                "none",
                "-n",
                "-i",
            ])
            .arg(file),
    );
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            if t.len() < 5 {
                return None;
            }
            Some(FlatRow {
                percent: t[0].trim_end_matches('%').parse().ok()?,
                samples: t[1].parse().ok()?,
                dso: t[2].to_string(),
                sym: t[3..].join(" "),
            })
        })
        .collect()
}

/// `bpfprof report --no-children --sort dso,sym --json` as rows (the flags
/// of [`perf_flat`]).
pub fn ours_flat(file: &Path) -> (u64, Vec<FlatRow>) {
    let text = stdout(
        bpfprof()
            .args([
                "report",
                "--no-children",
                "--sort",
                "dso,sym",
                "--json",
                "-i",
            ])
            .arg(file),
    );
    let v: serde_json::Value = serde_json::from_str(&text).expect("report --json is JSON");
    let rows = v["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| FlatRow {
            percent: r["overhead"].as_f64().unwrap(),
            samples: r["samples"].as_u64().unwrap(),
            dso: r["dso"].as_str().unwrap().to_string(),
            sym: format!(
                "[{}] {}",
                if r["kernel"].as_bool().unwrap() {
                    'k'
                } else {
                    '.'
                },
                r["symbol"].as_str().unwrap()
            ),
        })
        .collect();
    (v["samples"].as_u64().unwrap(), rows)
}

/// The agreement rule: every row at or above 0.5% in either report
/// is in the other within 0.1 point, and the sample totals are equal.
pub fn assert_flat_agree(ours_total: u64, ours: &[FlatRow], perf: &[FlatRow]) {
    let perf_total: u64 = perf.iter().map(|r| r.samples).sum();
    assert_eq!(ours_total, perf_total, "total samples differ");
    let find = |rows: &[FlatRow], r: &FlatRow| {
        rows.iter()
            .find(|x| x.dso == r.dso && x.sym == r.sym)
            .cloned()
    };
    for (a, b, who) in [(perf, ours, "ours"), (ours, perf, "perf's")] {
        for r in a.iter().filter(|r| r.percent >= 0.5) {
            let other = find(b, r).unwrap_or_else(|| panic!("{r:?} is missing from {who} report"));
            assert!(
                (other.percent - r.percent).abs() <= 0.1 + 1e-9,
                "{r:?} vs {other:?}: more than 0.1 point apart"
            );
        }
    }
}

/// Call getpid(2) in a loop on this thread until `until` (std's
/// `process::id()` is a real getpid call: glibc no longer caches it). Each
/// call runs whatever BPF program is attached to sys_enter_getpid.
pub fn getpid_until(until: std::time::Instant) -> u64 {
    let mut n = 0;
    while std::time::Instant::now() < until {
        for _ in 0..1000 {
            std::hint::black_box(std::process::id());
        }
        n += 1000;
    }
    n
}

/// getppid(2) on a thread of its own until dropped: runs whatever BPF
/// program is attached to sys_enter_getppid, for as long as a test needs.
pub struct GetppidLoop(
    std::sync::Arc<std::sync::atomic::AtomicBool>,
    Option<std::thread::JoinHandle<()>>,
);

impl GetppidLoop {
    pub fn start() -> GetppidLoop {
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let h = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                for _ in 0..1000 {
                    std::hint::black_box(std::os::unix::process::parent_id());
                }
            }
        });
        GetppidLoop(stop, Some(h))
    }
}

impl Drop for GetppidLoop {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(h) = self.1.take() {
            let _ = h.join();
        }
    }
}

pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

pub fn path(dir: &tempfile::TempDir, name: &str) -> PathBuf {
    dir.path().join(name)
}

/// perf script's stacks of one process's samples, each as its frames'
/// symbol names, leaf first.
pub fn perf_stacks(data: &Path, pid: u32) -> Vec<Vec<String>> {
    let text = stdout(
        Command::new("perf")
            .args(["script", "-F", "pid,ip,sym", "--pid"])
            .arg(pid.to_string())
            .arg("-i")
            .arg(data),
    );
    text.split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .map(|block| {
            block
                .lines()
                .skip(1)
                .filter_map(|l| l.split_whitespace().nth(1).map(str::to_string))
                .collect()
        })
        .collect()
}

/// `bpfprof record ARGS -o DATA` while `work` runs again and again on this
/// thread, until the recorder is done: the whole recording sees the work,
/// with no need to know when recording starts.
pub fn record_while(data: &Path, args: &[&str], mut work: impl FnMut()) {
    let mut rec = bpfprof()
        .arg("record")
        .args(args)
        .arg("-o")
        .arg(data)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("bpfprof record starts");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while rec.try_wait().expect("waiting for the recorder").is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "the recorder did not finish"
        );
        work();
    }
}

/// Held by tests that must not run at once, in this binary or any other:
/// a machine-wide sysctl a test flips, or `perf record` beside `bpfprof
/// record` while BPF programs load (see `testkit::machine_lock`).
pub fn one_at_a_time() -> testkit::MachineLock {
    testkit::machine_lock()
}

/// bpftrace running a script, killed and reaped when dropped, so that a
/// failing test unloads its programs too.
pub struct Bpftrace(std::process::Child);

impl Drop for Bpftrace {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Bpftrace {
    /// `bpftrace -e script`, once it says it has attached its probes
    /// ("Attaching N probes..."): polled on its output, not slept for.
    pub fn start(script: &str) -> Bpftrace {
        use std::io::BufRead;
        let mut child = Command::new("bpftrace")
            .args(["-e", script])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("bpftrace starts");
        let out = child.stdout.take().expect("bpftrace's stdout");
        let guard = Bpftrace(child);
        let mut lines = std::io::BufReader::new(out).lines();
        let ready = lines.any(|l| l.is_ok_and(|l| l.starts_with("Attaching")));
        assert!(ready, "bpftrace did not attach its probes");
        std::thread::spawn(move || lines.for_each(drop));
        guard
    }

    pub fn pid(&self) -> u32 {
        self.0.id()
    }

    /// The ids of the programs it attached, polled until `bpftool perf
    /// show` lists some: bpftrace may close its program fds once attached
    /// (the perf event holds them), so /proc/PID/fdinfo is not enough.
    pub fn programs(&self) -> std::collections::BTreeSet<u32> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let ids = attached_by(self.pid());
            if !ids.is_empty() || std::time::Instant::now() > deadline {
                return ids;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// Program ids `bpftool perf show` finds attached by `pid`.
pub fn attached_by(pid: u32) -> std::collections::BTreeSet<u32> {
    let out = stdout(Command::new("bpftool").args(["perf", "show", "-j"]));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or(serde_json::Value::Null);
    v.as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["pid"].as_u64() == Some(pid.into()))
        .filter_map(|e| e["prog_id"].as_u64().map(|i| i as u32))
        .collect()
}

/// `bpfprof report --bpf --json --pid PID` of a recording: the BPF view of
/// one process's samples.
pub fn bpf_view_of(data: &Path, pid: u32) -> serde_json::Value {
    let json = stdout(
        bpfprof()
            .args(["report", "--bpf", "--json", "--pid"])
            .arg(pid.to_string())
            .arg("-i")
            .arg(data),
    );
    serde_json::from_str(&json).expect("report --bpf --json is JSON")
}
