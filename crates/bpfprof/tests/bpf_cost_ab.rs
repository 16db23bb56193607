//! The A/B oracle for what a BPF program costs: `bpfprof report --bpf
//! --json` must charge each program the share of a process's CPU time that
//! the program really takes, measured by running the process without and
//! with the program attached.
//!
//! The workload is a loop of getppid(2) calls in a child process (a tiny C
//! program). Its CPU time (user+sys, its own rusage) is measured without and
//! with a program attached, interleaved, several rounds; the truth is the
//! median over rounds of 1 − T_without / T_with, each round's two runs a
//! second apart (the machine is shared: its noise drifts). Then the same loop, program attached,
//! is recorded system-wide with call chains, and the report of the loop's
//! samples (`--pid`) must give the case's programs a total share within 25%
//! of the truth. The truth is itself a measurement on a shared machine: a
//! round's share can swing by half. So a case runs more rounds while the
//! median's 93% confidence interval (order statistics, no model of the
//! noise) is wide, and the report passes when it is within 25% of some
//! value in that interval. Cases: a C tracepoint program and a C raw
//! tracepoint program (loaded by libbpf), a bpftrace one-liner,
//! libbpf-tools' syscount, and bpftrace's uprobe and uretprobe on a user
//! function the loop calls between rounds of counting (the probe's trap,
//! not the program, is most of a uprobe's cost, and cpu-clock samples it
//! only where interrupts come back on). All cases run one after the other in one test, so no other
//! test of this binary loads programs meanwhile.

mod support;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Rounds of (without, with) per case, at least.
const ROUNDS: usize = 5;
/// Rounds per case at most, while the median's interval stays wide.
const MAX_ROUNDS: usize = 11;
/// The interval's width, relative to the median, that asks for more rounds.
const WIDE: f64 = 0.4;
/// Rounds redone at most per case, when programs of others on syscall
/// tracepoints came or went during one.
const REDOS: usize = 2;
/// |measured / truth − 1| allowed.
const TOLERANCE: f64 = 0.25;
/// How long a recording samples the loop.
const RECORD_SECS: f64 = 1.25;
/// Sampling frequency of the recording.
const FREQ: u64 = 4000;
/// What one loop run should take without a program: long enough to measure,
/// short enough for ~20 runs with programs that multiply it.
const TARGET_SECS: f64 = 0.25;
/// What the uprobe loop's work between two calls should take.
const TICK_SECS: f64 = 4e-6;
const SYSCOUNT: &str = "/usr/sbin/syscount";
const BPFTRACE_PROG: &str = "tracepoint:syscalls:sys_enter_getppid { @c[comm, pid] = count(); }";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn runs(cmd: &str, arg: &str) -> bool {
    Command::new(cmd)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Poll `cond` every 20 ms until it returns something or `secs` pass.
fn poll<T>(what: &str, secs: u64, mut cond: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = cond() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn kill(pid: u32, sig: i32) {
    // SAFETY: kill(2) on a child of ours that has not been reaped yet.
    unsafe {
        libc::kill(pid as i32, sig);
    }
}

/// The binaries the cases need, built in a temporary directory.
struct Tools {
    dir: tempfile::TempDir,
    /// cost_loop.c: `cost_loop N` makes N getppid calls (0 = until killed)
    /// and prints its own "user_us sys_us".
    cost_loop: PathBuf,
    /// cost_load.c: loads a BPF object, attaches its programs, holds them.
    cost_load: PathBuf,
    tp_obj: PathBuf,
    rawtp_obj: PathBuf,
}

fn build() -> Tools {
    let dir = support::tempdir();
    let arch = std::env::consts::ARCH;
    let getppid_nr = match arch {
        "x86_64" => 110,
        "aarch64" | "riscv64" => 173,
        a => panic!("getppid's syscall number on {a} is not known here"),
    };
    let cost_loop = support::path(&dir, "cost_loop");
    let cost_load = support::path(&dir, "cost_load");
    support::run(
        Command::new("cc")
            .args(["-O2", "-o"])
            .arg(&cost_loop)
            .arg(fixture("cost_loop.c")),
    );
    support::run(
        Command::new("cc")
            .args(["-O2", "-o"])
            .arg(&cost_load)
            .arg(fixture("cost_load.c"))
            .arg("-lbpf"),
    );
    let obj = |def: &str, name: &str| {
        let o = support::path(&dir, name);
        support::run(
            testkit::clang_bpf(Path::new("clang"), &fixture("cost_hash.bpf.c"), &o)
                .arg(format!("-D{def}"))
                .arg(format!("-DGETPPID_NR={getppid_nr}")),
        );
        o
    };
    let tp_obj = obj("COST_TP", "cost_tp.bpf.o");
    let rawtp_obj = obj("COST_RAWTP", "cost_rawtp.bpf.o");
    Tools {
        dir,
        cost_loop,
        cost_load,
        tp_obj,
        rawtp_obj,
    }
}

/// What the loop does: getppid calls, or calls of a user function after
/// `tick` rounds of counting each.
#[derive(Clone, Copy, Debug)]
struct Work {
    /// Calls per measured run.
    n: u64,
    tick: Option<u64>,
}

impl Work {
    /// cost_loop's arguments for `n` calls (0: until killed).
    fn args(&self, n: u64) -> Vec<String> {
        let mut a = vec![n.to_string()];
        if let Some(w) = self.tick {
            a.extend(["tick".to_string(), w.to_string()]);
        }
        a
    }
}

/// CPU seconds (user+sys) of one loop run of `n` calls.
fn loop_secs(t: &Tools, w: &Work, n: u64) -> f64 {
    let out = support::stdout(Command::new(&t.cost_loop).args(w.args(n)));
    let us: Vec<f64> = out
        .split_whitespace()
        .map(|x| x.parse().expect("cost_loop prints microseconds"))
        .collect();
    assert_eq!(us.len(), 2, "cost_loop printed {out:?}");
    (us[0] + us[1]) / 1e6
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Tracepoint,
    RawTracepoint,
    Bpftrace,
    Syscount,
    Uprobe,
    Uretprobe,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Tracepoint => "C tracepoint (hash)",
            Kind::RawTracepoint => "C raw_tracepoint (hash)",
            Kind::Bpftrace => "bpftrace count()",
            Kind::Syscount => "libbpf-tools syscount",
            Kind::Uprobe => "bpftrace uprobe",
            Kind::Uretprobe => "bpftrace uretprobe",
        }
    }

    fn is_uprobe(self) -> bool {
        matches!(self, Kind::Uprobe | Kind::Uretprobe)
    }

    /// What the holder prints on stdout once its programs are attached (or,
    /// for bpftrace, just before). syscount's line stays in its stdio
    /// buffer when stdout is a file: its one attachment is the sign.
    fn ready_line(self) -> &'static str {
        match self {
            Kind::Tracepoint | Kind::RawTracepoint => "ready",
            Kind::Bpftrace | Kind::Uprobe | Kind::Uretprobe => "Attaching",
            Kind::Syscount => "",
        }
    }
}

/// A process holding the case's programs attached; dropping it (also on a
/// failing test) ends the process, which unloads them.
struct Holder {
    kind: Kind,
    child: Child,
    out: PathBuf,
    err: PathBuf,
    /// The programs it holds, from bpftool and its fds.
    progs: BTreeSet<u32>,
}

impl Drop for Holder {
    fn drop(&mut self) {
        let pid = self.child.id();
        if self.child.try_wait().ok().flatten().is_none() {
            kill(pid, libc::SIGINT);
            let deadline = Instant::now() + Duration::from_secs(10);
            while self.child.try_wait().ok().flatten().is_none() {
                if Instant::now() > deadline {
                    let _ = self.child.kill();
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        let _ = self.child.wait();
    }
}

/// Programs on syscall tracepoints (`sys_enter*`, `sys_exit*`, raw or
/// not), whoever holds them. Any of them also puts every syscall on the slow
/// path, so the loop's cost changes when one comes or goes.
fn syscall_hooks() -> BTreeSet<u32> {
    let json = |args: &[&str]| -> Value {
        serde_json::from_str(&support::stdout(Command::new("bpftool").args(args)))
            .unwrap_or(Value::Null)
    };
    let sys = |e: &Value, k: &str| e[k].as_str().is_some_and(|n| n.starts_with("sys_"));
    let perf = json(&["perf", "show", "-j"]);
    let links = json(&["link", "show", "-j"]);
    perf.as_array()
        .into_iter()
        .flatten()
        .filter(|e| sys(e, "tracepoint"))
        .chain(
            links
                .as_array()
                .into_iter()
                .flatten()
                .filter(|e| sys(e, "tp_name")),
        )
        .filter_map(|e| e["prog_id"].as_u64().map(|i| i as u32))
        .collect()
}

/// Program ids `pid` holds fds of (prog_id in /proc/PID/fdinfo; the
/// `pids` of `bpftool prog show` needs a bpftool built with skeletons).
fn owned_by(pid: u32) -> BTreeSet<u32> {
    let Ok(dir) = fs::read_dir(format!("/proc/{pid}/fdinfo")) else {
        return BTreeSet::new();
    };
    dir.flatten()
        .filter_map(|e| fs::read_to_string(e.path()).ok())
        .flat_map(|s| {
            s.lines()
                .filter_map(|l| l.strip_prefix("prog_id:")?.trim().parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

fn attach(t: &Tools, kind: Kind, round: usize) -> Holder {
    let mut cmd = match kind {
        Kind::Tracepoint | Kind::RawTracepoint => {
            let mut c = Command::new(&t.cost_load);
            c.arg(if kind == Kind::Tracepoint {
                &t.tp_obj
            } else {
                &t.rawtp_obj
            });
            c
        }
        Kind::Bpftrace => {
            let mut c = Command::new("bpftrace");
            c.args(["-e", BPFTRACE_PROG]);
            c
        }
        Kind::Syscount => Command::new(SYSCOUNT),
        Kind::Uprobe | Kind::Uretprobe => {
            let probe = if kind == Kind::Uprobe {
                "uprobe"
            } else {
                "uretprobe"
            };
            let mut c = Command::new("bpftrace");
            c.arg("-e").arg(format!(
                "{probe}:{}:cost_tick {{ @c = count(); }}",
                t.cost_loop.display()
            ));
            c
        }
    };
    let tag = format!("{kind:?}.{round}");
    let out = support::path(&t.dir, &format!("{tag}.out"));
    let err = support::path(&t.dir, &format!("{tag}.err"));
    let child = cmd
        .stdin(Stdio::piped())
        .stdout(fs::File::create(&out).unwrap())
        .stderr(fs::File::create(&err).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let mut h = Holder {
        kind,
        child,
        out,
        err,
        progs: BTreeSet::new(),
    };
    let pid = h.child.id();
    let attached = poll(&format!("{} to attach", kind.name()), 30, || {
        if let Ok(Some(st)) = h.child.try_wait() {
            panic!(
                "{} exited ({st}) before attaching: {}",
                kind.name(),
                fs::read_to_string(&h.err).unwrap_or_default()
            );
        }
        let said = fs::read_to_string(&h.out).unwrap_or_default();
        let a = support::attached_by(pid);
        (said.contains(kind.ready_line()) && !a.is_empty()).then_some(a)
    });
    h.progs = &attached | &owned_by(pid);
    h
}

/// name, type and tag of each live program, from `bpftool prog show`.
fn describe(ids: &BTreeSet<u32>) -> Vec<String> {
    let out = support::stdout(Command::new("bpftool").args(["prog", "show", "-j"]));
    let v: Value = serde_json::from_str(&out).expect("bpftool prog show -j");
    ids.iter()
        .map(|&id| {
            let p = v
                .as_array()
                .into_iter()
                .flatten()
                .find(|p| p["id"].as_u64() == Some(id.into()))
                .unwrap_or_else(|| panic!("program {id} is not in bpftool prog show"));
            format!(
                "{id} {} {} {}",
                p["name"].as_str().unwrap_or("?"),
                p["type"].as_str().unwrap_or("?"),
                p["tag"].as_str().unwrap_or("?")
            )
        })
        .collect()
}

/// CPU ticks (utime+stime) of a process, from /proc/PID/stat.
fn cpu_ticks(pid: u32) -> u64 {
    let s = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = s.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 of stat(5); `after` starts at field 3.
    let n = |i: usize| {
        f.get(i - 3)
            .and_then(|x| x.parse::<u64>().ok())
            .unwrap_or(0)
    };
    n(14) + n(15)
}

/// The loop's samples by part, as the report gives them.
#[derive(Debug, Default, Clone, Copy)]
struct Parts {
    total_samples: u64,
    self_: u64,
    called: u64,
    hook: u64,
    total: u64,
}

/// Record the loop (programs attached) and report its samples.
fn record_and_report(t: &Tools, w: &Work, h: &Holder) -> (u32, PathBuf, Result<Parts, String>) {
    let file = support::path(&t.dir, &format!("{:?}.data", h.kind));
    let mut lp = Command::new(&t.cost_loop)
        .args(w.args(0))
        .stdout(Stdio::null())
        .spawn()
        .expect("cost_loop");
    let loop_pid = lp.id();
    poll("the loop to run", 10, || {
        (cpu_ticks(loop_pid) > 0).then_some(())
    });
    let rec = support::bpfprof()
        .args(["record", "-a", "-g", "-F", &FREQ.to_string()])
        .args(["--duration", &RECORD_SECS.to_string()])
        .arg("-o")
        .arg(&file)
        .output();
    let _ = lp.kill();
    let _ = lp.wait();
    let rec = rec.expect("bpfprof record");
    assert!(
        rec.status.success(),
        "bpfprof record failed: {}",
        String::from_utf8_lossy(&rec.stderr)
    );
    let out = support::stdout(
        support::bpfprof()
            .args(["report", "--bpf", "--json", "-i"])
            .arg(&file)
            .args(["--pid", &loop_pid.to_string()]),
    );
    let v: Value = serde_json::from_str(&out).expect("report --bpf --json is JSON");
    (loop_pid, file, parts(&v, &h.progs))
}

/// The contract: `total.samples`, and per program `samples.{self,called,
/// hook,total}`, every program listed, matched by id.
fn parts(v: &Value, ids: &BTreeSet<u32>) -> Result<Parts, String> {
    let keys = || {
        v.as_object()
            .map(|o| o.keys().cloned().collect::<Vec<_>>().join(","))
            .unwrap_or_default()
    };
    let total_samples = v["total"]["samples"]
        .as_u64()
        .ok_or_else(|| format!("no total.samples (top-level keys: {})", keys()))?;
    let programs = v["programs"]
        .as_array()
        .ok_or_else(|| format!("no programs array (top-level keys: {})", keys()))?;
    let mut p = Parts {
        total_samples,
        ..Parts::default()
    };
    for &id in ids {
        let prog = programs
            .iter()
            .find(|x| x["id"].as_u64() == Some(id.into()))
            .ok_or_else(|| format!("program {id} is not listed"))?;
        let s = &prog["samples"];
        let get = |k: &str| {
            s[k].as_u64()
                .ok_or_else(|| format!("program {id}: no samples.{k} in {s}"))
        };
        p.self_ += get("self")?;
        p.called += get("called")?;
        p.hook += get("hook")?;
        p.total += get("total")?;
    }
    Ok(p)
}

/// A distribution-free confidence interval for the median of `v`: the
/// k-th lowest and k-th highest values, k the largest with a coverage of
/// at least 93% (for 5 rounds the extremes, 93.75%; for 11 the third,
/// 93.5%). Coverage is 1 − 2·P(Binomial(n, ½) < k).
fn median_interval(v: &[f64]) -> (f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let below = |k: usize| -> f64 {
        // P(Binomial(n, 1/2) < k)
        let mut c = 1.0;
        let mut sum = 0.0;
        for i in 0..k {
            sum += c;
            c = c * (n - i) as f64 / (i + 1) as f64;
        }
        sum / 2f64.powi(n as i32)
    };
    let mut k = 1;
    while k < n / 2 && 1.0 - 2.0 * below(k + 1) >= 0.93 {
        k += 1;
    }
    (s[k - 1], s[n - k])
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

struct Outcome {
    kind: Kind,
    progs: Vec<String>,
    /// Median CPU seconds of a run without and with the programs.
    without: f64,
    with: f64,
    /// Median of the rounds' 1 − without / with.
    truth: f64,
    /// Lowest and highest truth of single rounds (a without run and the
    /// with run after it).
    spread: (f64, f64),
    /// The median's confidence interval (`median_interval`).
    interval: (f64, f64),
    /// Each round's CPU seconds, without and with.
    runs: Vec<(f64, f64)>,
    loop_pid: u32,
    file: PathBuf,
    parts: Result<Parts, String>,
}

fn run_case(t: &Tools, kind: Kind, w: &Work) -> Outcome {
    let n = w.n;
    let (mut without, mut with) = (Vec::new(), Vec::new());
    let mut last = None;
    let mut redos = 0;
    let mut round = 0;
    let share =
        |a: &[f64], b: &[f64]| -> Vec<f64> { a.iter().zip(b).map(|(a, b)| 1.0 - a / b).collect() };
    let unsure = |r: &[f64]| {
        let (lo, hi) = median_interval(r);
        hi - lo > WIDE * median(r).abs()
    };
    while without.len() < ROUNDS || (without.len() < MAX_ROUNDS && unsure(&share(&without, &with)))
    {
        round += 1;
        // Others' programs on syscall tracepoints that stay for the whole
        // round slow both runs and are in the recording's total alike; one
        // that comes or goes makes the round worthless.
        let others = syscall_hooks();
        let a = loop_secs(t, w, n);
        let h = attach(t, kind, round);
        // Warm up: the first calls after attaching are not like the rest
        // (bpftrace's first run is often faster).
        loop_secs(t, w, n / 10);
        let b = loop_secs(t, w, n);
        let recorded = (without.len() + 1 == ROUNDS).then(|| {
            let progs = describe(&h.progs);
            let (loop_pid, file, parts) = record_and_report(t, w, &h);
            (progs, loop_pid, file, parts)
        });
        let changed: BTreeSet<u32> = syscall_hooks()
            .symmetric_difference(&others)
            .filter(|id| !h.progs.contains(id))
            .copied()
            .collect();
        drop(h);
        if !changed.is_empty() && redos < REDOS {
            redos += 1;
            eprintln!(
                "{}: programs {changed:?} of others came or went on syscall tracepoints \
                 during round {round}: again",
                kind.name()
            );
            continue;
        }
        without.push(a);
        with.push(b);
        last = recorded.or(last);
    }
    let (progs, loop_pid, file, parts) = last.unwrap();
    let rounds = share(&without, &with);
    let (tw, tb) = (median(&without), median(&with));
    Outcome {
        kind,
        progs,
        without: tw,
        with: tb,
        truth: median(&rounds),
        spread: (
            rounds.iter().copied().fold(f64::INFINITY, f64::min),
            rounds.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        ),
        interval: median_interval(&rounds),
        runs: without.iter().copied().zip(with.iter().copied()).collect(),
        loop_pid,
        file,
        parts,
    }
}

#[test]
fn program_cost_matches_the_ab_truth() {
    if !support::live(false) {
        return;
    }
    for (ok, why) in [
        (
            runs("cc", "--version"),
            "needs a C compiler (apt-get install gcc)",
        ),
        (
            runs("clang", "--version"),
            "needs clang (apt-get install clang)",
        ),
        (
            Path::new("/usr/include/bpf/libbpf.h").exists(),
            "needs libbpf-dev",
        ),
        (runs("bpftool", "version"), "needs bpftool"),
        (runs("bpftrace", "--version"), "needs bpftrace"),
        (
            Path::new(SYSCOUNT).exists(),
            "needs libbpf-tools (/usr/sbin/syscount)",
        ),
    ] {
        if !support::require(ok, why) {
            return;
        }
    }
    let started = Instant::now();
    let t = build();
    // Calls per run for ~TARGET_SECS without a program.
    let probe = 500_000;
    let sys = Work {
        n: probe,
        tick: None,
    };
    let per_call = loop_secs(&t, &sys, probe) / probe as f64;
    let sys = Work {
        n: ((TARGET_SECS / per_call) as u64).clamp(200_000, 5_000_000),
        ..sys
    };
    eprintln!(
        "loop: {} getppid calls per run ({:.0} ns each without a program)",
        sys.n,
        per_call * 1e9
    );
    // Counting rounds for TICK_SECS between calls: a uprobe's trap takes
    // microseconds, so the probe is a fair share of the loop, not all of it.
    // The least of three runs: the machine is shared.
    let (calls, rounds) = (20_000, 10_000);
    let counting = Work {
        n: calls,
        tick: Some(rounds),
    };
    let per_round = (0..3)
        .map(|_| loop_secs(&t, &counting, calls))
        .fold(f64::INFINITY, f64::min)
        / (calls * rounds) as f64;
    let w = ((TICK_SECS / per_round) as u64).clamp(100, 1_000_000);
    let tick = Work {
        n: (TARGET_SECS / TICK_SECS) as u64,
        tick: Some(w),
    };
    eprintln!(
        "loop: {} user calls per run, each after {w} counting rounds ({:.1} µs)",
        tick.n,
        w as f64 * per_round * 1e6
    );

    let outcomes: Vec<Outcome> = [
        Kind::Tracepoint,
        Kind::RawTracepoint,
        Kind::Bpftrace,
        Kind::Syscount,
        Kind::Uprobe,
        Kind::Uretprobe,
    ]
    .into_iter()
    .map(|k| {
        let t0 = Instant::now();
        let o = run_case(&t, k, if k.is_uprobe() { &tick } else { &sys });
        eprintln!(
            "{} ({:.0}s): {:.2}s -> {:.2}s, truth {:.1}% (interval {:.1}..{:.1}%, \
             rounds {:.1}..{:.1}%), programs {:?}, loop pid {} in {}\n  runs (s, without/with):{}",
            k.name(),
            t0.elapsed().as_secs_f64(),
            o.without,
            o.with,
            o.truth * 100.0,
            o.interval.0 * 100.0,
            o.interval.1 * 100.0,
            o.spread.0 * 100.0,
            o.spread.1 * 100.0,
            o.progs,
            o.loop_pid,
            o.file.display(),
            o.runs
                .iter()
                .map(|(a, b)| format!(" {a:.2}/{b:.2}"))
                .collect::<String>()
        );
        o
    })
    .collect();

    eprintln!(
        "\n{:<26} {:>17} {:>7} {:>7} {:>7} {:>7} {:>9} {:>7}",
        "case", "truth (rounds)", "self", "called", "hook", "total", "samples", "m/t"
    );
    let pct = |x: u64, of: u64| format!("{:.1}%", 100.0 * x as f64 / of.max(1) as f64);
    for o in &outcomes {
        let truth = format!(
            "{:.1}% ({:.0}-{:.0})",
            o.truth * 100.0,
            o.spread.0 * 100.0,
            o.spread.1 * 100.0
        );
        match &o.parts {
            Ok(p) => eprintln!(
                "{:<26} {:>17} {:>7} {:>7} {:>7} {:>7} {:>9} {:>7.2}",
                o.kind.name(),
                truth,
                pct(p.self_, p.total_samples),
                pct(p.called, p.total_samples),
                pct(p.hook, p.total_samples),
                pct(p.total, p.total_samples),
                p.total_samples,
                p.total as f64 / p.total_samples.max(1) as f64 / o.truth
            ),
            Err(e) => eprintln!("{:<26} {:>17}  report: {e}", o.kind.name(), truth),
        }
    }
    eprintln!("runtime {:.0}s", started.elapsed().as_secs_f64());
    if std::env::var_os("BPF_COST_AB_KEEP").is_some() {
        // The recordings, for perf script / perf report by hand.
        eprintln!("kept {}", t.dir.keep().display());
    }

    for o in &outcomes {
        let name = o.kind.name();
        assert!(
            o.truth > 0.05,
            "{name}: the A/B truth is {:.1}%: the program did not measurably slow the loop",
            o.truth * 100.0
        );
        let p = o
            .parts
            .as_ref()
            .unwrap_or_else(|e| panic!("{name}: report --bpf --json --pid {}: {e}", o.loop_pid));
        // One thread is on one CPU at a time: more samples than the clock
        // gives one CPU are someone else's.
        let most = (FREQ as f64 * RECORD_SECS * 1.25) as u64;
        assert!(
            p.total_samples <= most,
            "{name}: {} samples of the loop (pid {}), one CPU at {FREQ} Hz for {RECORD_SECS} s \
             gives at most {most}: --pid counts other processes too",
            p.total_samples,
            o.loop_pid
        );
        assert!(
            p.total_samples > 1000,
            "{name}: only {} samples of the loop",
            p.total_samples
        );
        let measured = p.total as f64 / p.total_samples as f64;
        let (lo, hi) = o.interval;
        assert!(
            measured >= lo * (1.0 - TOLERANCE) && measured <= hi * (1.0 + TOLERANCE),
            "{name}: report says the programs take {:.1}% of the loop \
             (self {}, called {}, hook {} of {} samples), the A/B truth is {:.1}% \
             (interval {:.1}..{:.1}% over {} rounds): not within {:.0}% of it",
            measured * 100.0,
            p.self_,
            p.called,
            p.hook,
            p.total_samples,
            o.truth * 100.0,
            lo * 100.0,
            hi * 100.0,
            o.runs.len(),
            TOLERANCE * 100.0
        );
    }
}

/// The interval's ranks against the binomial tables: 5 rounds give the
/// extremes (coverage 93.75%), 9 the second (96.1%), 11 the third (93.5%).
#[test]
fn median_interval_takes_the_tabled_ranks() {
    let v = |n: usize| (1..=n).map(|i| i as f64).collect::<Vec<_>>();
    assert_eq!(median_interval(&v(5)), (1.0, 5.0));
    assert_eq!(median_interval(&v(7)), (1.0, 7.0));
    assert_eq!(median_interval(&v(9)), (2.0, 8.0));
    assert_eq!(median_interval(&v(11)), (3.0, 9.0));
}
