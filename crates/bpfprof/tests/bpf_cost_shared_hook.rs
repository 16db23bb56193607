//! Programs on different syscalls' tracepoints share the kernel's sys_enter
//! hook code (`perf_syscall_enter`, `trace_call_bpf`, the syscall slow
//! path), but each runs only on its own syscall. A program's cost must not
//! depend on which other programs happen to be loaded, and no view of some
//! of the samples may exceed the whole.
//!
//! Two bpftrace programs, one on sys_enter_getppid and one on
//! sys_enter_getpid, and two loops, each making only one of those calls.
//! The getppid program never runs in the getpid loop and the other way
//! round (the kernel runs a syscall's tracepoint programs only for that
//! syscall), so the truth is known without a model: each program's total
//! in the whole recording is its total in its own loop, plus whatever
//! others calling its syscall now and then add, and its total in the other
//! loop is nothing. `--by` rows must add up to the whole, exactly.

mod support;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A process killed and reaped when dropped, also on a failing test.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// CPU ticks (utime+stime) of a process, from /proc/PID/stat.
fn cpu_ticks(pid: u32) -> u64 {
    let s = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = s.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = after
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // Fields 14 and 15 of stat(5); `after` starts at field 3.
    f.get(11).unwrap_or(&0) + f.get(12).unwrap_or(&0)
}

fn report(data: &Path, args: &[&str]) -> Value {
    let out = support::stdout(
        support::bpfprof()
            .args(["report", "--bpf", "--json", "-i"])
            .arg(data)
            .args(args),
    );
    serde_json::from_str(&out).expect("report --bpf --json is JSON")
}

/// (self, called, hook, total) of program `id` in a report.
fn parts(v: &Value, id: u32) -> [u64; 4] {
    let p = v["programs"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["id"].as_u64() == Some(id.into()))
        .unwrap_or_else(|| panic!("program {id} is not listed"));
    let s = &p["samples"];
    ["self", "called", "hook", "total"].map(|k| s[k].as_u64().expect("a part"))
}

/// The sum of program `id`'s `--by` rows, part by part.
fn by_sum(v: &Value, id: u32) -> ([u64; 4], usize) {
    let p = v["programs"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["id"].as_u64() == Some(id.into()))
        .unwrap_or_else(|| panic!("program {id} is not listed"));
    let rows = p["by"].as_array().cloned().unwrap_or_default();
    let mut sum = [0; 4];
    for r in &rows {
        for (i, k) in ["self", "called", "hook", "total"].iter().enumerate() {
            sum[i] += r["samples"][k].as_u64().expect("a part of a by row");
        }
    }
    (sum, rows.len())
}

#[test]
fn programs_on_different_syscalls_are_charged_only_their_own_loops() {
    if !support::live(false)
        || !support::require(
            testkit::tool("bpftrace").is_some(),
            "needs bpftrace (apt-get install bpftrace)",
        )
        || !support::require(
            Path::new("/sys/kernel/tracing/events/syscalls").exists(),
            "needs tracefs with syscall tracepoints (mount -t tracefs nodev /sys/kernel/tracing)",
        )
    {
        return;
    }
    let dir = support::tempdir();
    let exe: PathBuf = support::path(&dir, "syscall_loop");
    support::run(
        Command::new("cc")
            .args(["-O2", "-o"])
            .arg(&exe)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/syscall_loop.c")),
    );
    let ppid_bt =
        support::Bpftrace::start("tracepoint:syscalls:sys_enter_getppid { @a[pid] = count(); }");
    let pid_bt =
        support::Bpftrace::start("tracepoint:syscalls:sys_enter_getpid { @b[comm] = count(); }");
    let one = |bt: &support::Bpftrace| {
        let ids = bt.programs();
        assert_eq!(
            ids.len(),
            1,
            "bpftrace {} attached programs {ids:?}",
            bt.pid()
        );
        *ids.first().unwrap()
    };
    let (p_ppid, p_pid) = (one(&ppid_bt), one(&pid_bt));
    let start = |call: &str| Reaped(Command::new(&exe).arg(call).spawn().expect("the loop"));
    let (ppid_loop, pid_loop) = (start("getppid"), start("getpid"));
    let (a, b) = (ppid_loop.0.id(), pid_loop.0.id());
    let deadline = Instant::now() + Duration::from_secs(10);
    while cpu_ticks(a) == 0 || cpu_ticks(b) == 0 {
        assert!(Instant::now() < deadline, "the loops did not run");
        std::thread::sleep(Duration::from_millis(10));
    }
    let data = support::path(&dir, "two.data");
    let rec = support::bpfprof()
        .args(["record", "-a", "-g", "-F", "2000", "--duration", "2", "-o"])
        .arg(&data)
        .output()
        .expect("bpfprof record");
    assert!(
        rec.status.success(),
        "bpfprof record failed: {}",
        String::from_utf8_lossy(&rec.stderr)
    );
    drop((ppid_loop, pid_loop, ppid_bt, pid_bt));

    let whole = report(&data, &[]);
    let of = |pid: u32| report(&data, &["--pid", &pid.to_string()]);
    let (in_a, in_b) = (of(a), of(b));
    let samples = |v: &Value| v["total"]["samples"].as_u64().expect("total.samples");
    for (prog, own, other) in [(p_ppid, &in_a, &in_b), (p_pid, &in_b, &in_a)] {
        let (w, o, x) = (parts(&whole, prog), parts(own, prog), parts(other, prog));
        eprintln!("program {prog}: whole {w:?}, own loop {o:?}, other loop {x:?}");
        assert!(o[2] > 0, "program {prog}: no hook samples in its own loop");
        for i in 0..4 {
            assert!(
                o[i] + x[i] <= w[i],
                "program {prog}: its parts in the two loops {o:?} + {x:?} exceed the whole {w:?}"
            );
        }
        // The other loop never runs it: at most a stray sample or two.
        assert!(
            x[3] * 100 <= samples(other),
            "program {prog} charged {} of the other loop's {} samples",
            x[3],
            samples(other)
        );
        // Others calling its syscall now and then add a little.
        assert!(
            (w[3] - o[3]) * 50 <= w[3],
            "program {prog}: whole total {} but {} in its own loop",
            w[3],
            o[3]
        );
    }
    // Breakdowns partition the whole.
    for by in ["pid", "comm", "tid", "cpu", "context"] {
        let v = report(&data, &["--by", by]);
        for prog in [p_ppid, p_pid] {
            let (sum, rows) = by_sum(&v, prog);
            assert!(rows > 0, "--by {by}: program {prog} has no rows");
            assert_eq!(
                sum,
                parts(&v, prog),
                "--by {by}: program {prog}'s rows do not add up to its parts"
            );
        }
    }
    // A tid filter cuts a process's samples; the parts stay within the whole.
    let t = report(&data, &["--tid", &a.to_string()]);
    let (w, x) = (parts(&whole, p_ppid), parts(&t, p_ppid));
    assert!(
        (0..4).all(|i| x[i] <= w[i]),
        "--tid {a}: {x:?} over the whole {w:?}"
    );
}
