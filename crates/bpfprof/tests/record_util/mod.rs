//! Shared helpers of the record_* tests: skipping without privileges (or
//! failing under CI), running the built binary, and Linux perf as oracle.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::support::{has_perf, is_root, require};

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_bpfprof")
}

/// Root, Linux perf, and a loadable BPF test program.
pub fn can_record_bpf() -> bool {
    require(is_root(), "needs root (perf_event_open system-wide, bpf)")
        && require(has_perf(), "needs Linux perf as the oracle")
        && require(
            bpfinfo::testprog::TestProg::builder()
                .build()
                .and_then(|p| p.load())
                .is_ok(),
            "cannot load a BPF program",
        )
}

pub fn can_record() -> bool {
    require(is_root(), "needs root (perf_event_open system-wide)")
        && require(has_perf(), "needs Linux perf as the oracle")
}

/// A fresh directory for one test.
pub fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("bpfprof-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A recorder running in the background.
pub struct Recorder {
    pub child: Child,
    pub out: PathBuf,
}

/// The data size in a perf.data header (offset 48): non-zero once the
/// recorder has written its start-up records and checkpointed.
fn data_size(p: &Path) -> u64 {
    std::fs::read(p)
        .ok()
        .filter(|b| b.len() >= 56)
        .map(|b| u64::from_le_bytes(b[48..56].try_into().unwrap()))
        .unwrap_or(0)
}

pub fn start(args: &[&str], out: &Path) -> Recorder {
    let child = Command::new(bin())
        .arg("record")
        .args(args)
        .arg("-o")
        .arg(out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning bpfprof");
    let mut r = Recorder {
        child,
        out: out.to_path_buf(),
    };
    let t = Instant::now();
    while data_size(out) == 0 {
        if let Ok(Some(st)) = r.child.try_wait() {
            let o = r.child.wait_with_output().unwrap();
            panic!(
                "recorder exited ({st}) before starting: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "recorder did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    r
}

impl Recorder {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Send `sig` (e.g. "INT") and wait: (status, stderr).
    pub fn stop(self, sig: &str) -> (ExitStatus, String) {
        let st = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(st.success());
        let o = self.child.wait_with_output().unwrap();
        (o.status, String::from_utf8_lossy(&o.stderr).into_owned())
    }
}

/// Run Linux perf: (stdout, stderr).
pub fn perf(args: &[&str]) -> (String, String) {
    let o = Command::new("perf")
        .args(args)
        .output()
        .expect("running perf");
    assert!(
        o.status.success(),
        "perf {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// What perf must not say about a file we wrote.
pub fn assert_perf_happy(stderr: &str) {
    for bad in [
        "invalid",
        "incompatible",
        "WARNING",
        "failed",
        "Bad address",
        "not properly terminated",
    ] {
        assert!(!stderr.contains(bad), "perf said {bad:?}:\n{stderr}");
    }
}

/// `[bpf]` symbols in /proc/kallsyms: address → name. The kernel's own
/// names, independent of bpfprof.
pub fn kallsyms_bpf() -> BTreeMap<u64, String> {
    let s = std::fs::read_to_string("/proc/kallsyms").unwrap();
    s.lines()
        .filter(|l| l.ends_with("[bpf]"))
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let a = u64::from_str_radix(it.next()?, 16).ok()?;
            it.next()?;
            Some((a, it.next()?.to_string()))
        })
        .collect()
}

/// Call getpid() for `d` (each call runs the BPF programs on its tracepoint).
pub fn getpid_for(d: Duration) -> u64 {
    let t = Instant::now();
    let mut n = 0u64;
    while t.elapsed() < d {
        for _ in 0..200 {
            std::hint::black_box(std::process::id());
        }
        n += 200;
    }
    n
}

/// The `bpf_prog_info <id>` ids perf lists in the header.
pub fn header_prog_ids(file: &Path) -> Vec<u32> {
    let (out, err) = perf(&["report", "--header-only", "-i", file.to_str().unwrap()]);
    assert_perf_happy(&err);
    out.lines()
        .filter_map(|l| l.strip_prefix("# bpf_prog_info "))
        .filter_map(|r| r.trim_end_matches(':').trim().parse().ok())
        .collect()
}
