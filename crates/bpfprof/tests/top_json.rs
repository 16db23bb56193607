//! `bpfprof top --json` against independent oracles: the kernel's run
//! counts as bpftool reads them over the same intervals, and the shares a
//! recording (`bpfprof record`) of the same period gives.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::Value;
use support::{bpfprof, live, require, Bpftrace, GetppidLoop};

const SCRIPT: &str = "tracepoint:syscalls:sys_enter_getppid { @c[comm, pid] = count(); }";

fn ready() -> bool {
    live(false)
        && require(
            Command::new("bpftrace").arg("--version").output().is_ok(),
            "needs bpftrace (apt-get install bpftrace)",
        )
        && require(
            Command::new("bpftool").arg("version").output().is_ok(),
            "needs bpftool (apt-get install bpftool)",
        )
}

/// The id of the program bpftrace `pid` holds, from its fds' fdinfo (as
/// bpftool finds a program's pids; Debian's bpftool is built without that).
/// bpftrace says it attaches before it loads: polled until it holds it.
fn prog_of(pid: u32) -> u64 {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        if let Some(id) = tracepoint_prog_of(pid) {
            return id;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "bpftrace {pid} holds no tracepoint program"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn tracepoint_prog_of(pid: u32) -> Option<u64> {
    let dir = format!("/proc/{pid}/fdinfo");
    let ids: Vec<u64> = std::fs::read_dir(&dir)
        .expect("bpftrace's fdinfo")
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .filter_map(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("prog_id:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .collect();
    let tracepoints: Vec<u64> = ids
        .into_iter()
        .filter(|&id| {
            let out = support::stdout(
                Command::new("bpftool")
                    .args(["prog", "show", "id"])
                    .arg(id.to_string())
                    .arg("--json"),
            );
            serde_json::from_str::<Value>(&out).is_ok_and(|v| v["type"] == "tracepoint")
        })
        .collect();
    assert!(
        tracepoints.len() <= 1,
        "bpftrace holds one tracepoint program: {tracepoints:?}"
    );
    tracepoints.first().copied()
}

/// The kernel's run count of program `id` (bpftool leaves it out while
/// it is 0).
fn run_cnt(id: u64) -> u64 {
    let out = support::stdout(
        Command::new("bpftool")
            .args(["prog", "show", "id"])
            .arg(id.to_string())
            .arg("--json"),
    );
    let v: Value = serde_json::from_str(&out).expect("bpftool prints JSON");
    v["run_cnt"].as_u64().unwrap_or(0)
}

fn prog_in(line: &Value, id: u64) -> Option<&Value> {
    line["programs"].as_array()?.iter().find(|p| p["id"] == id)
}

#[test]
fn run_counts_match_bpftool_over_the_same_intervals() {
    if !ready() {
        return;
    }
    let _one = support::one_at_a_time();
    let bt = Bpftrace::start(SCRIPT);
    let id = prog_of(bt.pid());
    let _work = GetppidLoop::start();
    let before = run_cnt(id);
    let mut top = bpfprof()
        .args([
            "top",
            "--json",
            "--bpf-stats",
            "-F",
            "199",
            "-d",
            "1",
            "-n",
            "5",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("bpfprof top starts");
    let out = BufReader::new(top.stdout.take().unwrap());
    // (top's counter at the end of each interval, bpftool's read right
    // after the line arrived), and top's runs per interval.
    let mut reads: Vec<(u64, u64)> = Vec::new();
    let mut deltas = Vec::new();
    for line in out.lines() {
        let v: Value = serde_json::from_str(&line.expect("a line")).expect("each line is JSON");
        assert_eq!(v["bpf_stats"], true, "--bpf-stats turns stats on");
        let p = prog_in(&v, id).unwrap_or_else(|| panic!("program {id} in {v}"));
        let total = p["run_cnt_total"]
            .as_u64()
            .expect("run_cnt_total with stats on");
        let runs = p["run_cnt"].as_u64().expect("run_cnt with stats on");
        let secs = v["interval_s"].as_f64().unwrap();
        let rate = p["runs_per_s"].as_f64().unwrap();
        assert!((rate * secs - runs as f64).abs() <= 1.0 + runs as f64 * 1e-9);
        reads.push((total, run_cnt(id)));
        deltas.push(runs);
    }
    assert!(top.wait().unwrap().success());
    let after = run_cnt(id);
    assert_eq!(reads.len(), 5);
    for (i, w) in reads.windows(2).enumerate() {
        let ((t0, b0), (t1, _)) = (w[0], w[1]);
        // bpftool read after top's read and (with a second to spare)
        // before its next one.
        assert!(
            t0 <= b0 && b0 <= t1,
            "interval {i}: top {t0}, bpftool {b0}, top next {t1}"
        );
        assert_eq!(
            deltas[i + 1],
            t1 - t0,
            "a line's runs are its counter's step"
        );
    }
    let summed: u64 = deltas.iter().sum();
    assert!(before + summed <= after, "{before} + {summed} > {after}");
    assert!(
        deltas[1..].iter().all(|&d| d > 1000),
        "the loop ran the program: {deltas:?}"
    );
}

#[test]
fn shares_agree_with_a_recording_of_the_same_period() {
    if !ready() {
        return;
    }
    let _one = support::one_at_a_time();
    let bt = Bpftrace::start(SCRIPT);
    let id = prog_of(bt.pid());
    let _work = GetppidLoop::start();
    let dir = support::tempdir();
    let data = support::path(&dir, "same.data");
    // Both sample idle CPUs: the shares are of the same time.
    let mut top = bpfprof()
        .args(["top", "--json", "--idle", "-F", "499", "-d", "1", "-n", "6"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("bpfprof top starts");
    let mut rec = bpfprof()
        .args([
            "record",
            "-a",
            "-g",
            "-F",
            "499",
            "--duration",
            "6",
            "-q",
            "-o",
        ])
        .arg(&data)
        .stderr(Stdio::null())
        .spawn()
        .expect("bpfprof record starts");
    let out = BufReader::new(top.stdout.take().unwrap());
    let (mut mine, mut all) = (0u64, 0u64);
    for line in out.lines() {
        let v: Value = serde_json::from_str(&line.expect("a line")).expect("each line is JSON");
        all += v["samples"].as_u64().unwrap();
        if let Some(p) = prog_in(&v, id) {
            mine += p["samples"]["total"]
                .as_u64()
                .expect("total with call chains");
        }
    }
    assert!(top.wait().unwrap().success());
    assert!(rec.wait().unwrap().success());
    let ours = 100.0 * mine as f64 / all.max(1) as f64;
    let report = support::stdout(
        bpfprof()
            .args(["report", "--bpf", "--json", "-i"])
            .arg(&data),
    );
    let r: Value = serde_json::from_str(&report).expect("report --bpf --json is JSON");
    let theirs = r["programs"]
        .as_array()
        .and_then(|v| v.iter().find(|p| p["id"] == id))
        .and_then(|p| p["percent"]["total"].as_f64())
        .unwrap_or_else(|| panic!("the recording charges program {id}: {}", r["programs"]));
    eprintln!("program {id}: top {ours:.2}% of samples, record {theirs:.2}%");
    // On a busy machine the loop gets less of the CPU, and the program less
    // of the samples; it still gets some.
    assert!(theirs > 0.5, "the loop makes the program cost: {theirs}%");
    // Two samplers over nearly the same seconds of one steady loop.
    assert!(
        (ours - theirs).abs() <= 1.0_f64.max(0.25 * theirs),
        "top {ours:.2}% vs record {theirs:.2}%"
    );
}

/// Fields of one CSV line, quotes honoured.
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                out.last_mut().unwrap().push('"');
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(String::new()),
            c => out.last_mut().unwrap().push(c),
        }
    }
    out
}

#[test]
fn csv_has_a_row_per_program_per_interval() {
    if !ready() {
        return;
    }
    let _one = support::one_at_a_time();
    let bt = Bpftrace::start(SCRIPT);
    let id = prog_of(bt.pid());
    let _work = GetppidLoop::start();
    let out =
        support::stdout(bpfprof().args(["top", "--csv", "-F", "199", "-d", "0.5", "-n", "3"]));
    let mut lines = out.lines();
    let header = csv_fields(lines.next().expect("a header"));
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let mut intervals = std::collections::BTreeSet::new();
    let mut ours = 0;
    for l in lines {
        let f = csv_fields(l);
        assert_eq!(f.len(), header.len(), "{l}");
        intervals.insert(f[col("elapsed_s")].clone());
        if f[col("id")] == id.to_string() {
            ours += 1;
            assert_eq!(f[col("type")], "tracepoint");
            assert_eq!(f[col("attach")], "syscalls:sys_enter_getppid");
            let parts: u64 = ["self", "called", "hook"]
                .iter()
                .map(|k| f[col(k)].parse::<u64>().unwrap())
                .sum();
            assert_eq!(f[col("total")].parse::<u64>().unwrap(), parts, "{l}");
        }
    }
    assert_eq!(intervals.len(), 3, "three intervals");
    assert_eq!(ours, 3, "the program on each interval");
}

/// Busy and idle time of all CPUs so far, in USER_HZ ticks, from
/// /proc/stat (idle: idle + iowait).
fn cpu_ticks() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").expect("/proc/stat");
    let v: Vec<u64> = stat
        .lines()
        .next()
        .expect("the cpu line")
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|n| n.parse().expect("a tick count"))
        .collect();
    let idle = v[3] + v[4];
    (v.iter().sum::<u64>() - idle, idle)
}

/// Samples and (busy, all) CPU-seconds over the intervals after the first
/// of `top --json -F 499 -d 1 -n 4 ARGS`, the ticks read as each line came.
fn samples_and_cpu_seconds(args: &[&str]) -> (f64, f64, f64) {
    let mut top = bpfprof()
        .args(["top", "--json", "-F", "499", "-d", "1", "-n", "4"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("bpfprof top starts");
    let out = BufReader::new(top.stdout.take().unwrap());
    let (mut samples, mut first) = (0u64, None);
    let mut last = (0, 0);
    for line in out.lines() {
        let v: Value = serde_json::from_str(&line.expect("a line")).expect("each line is JSON");
        last = cpu_ticks();
        match first {
            None => first = Some(last),
            Some(_) => samples += v["samples"].as_u64().unwrap(),
        }
    }
    assert!(top.wait().unwrap().success());
    let first = first.expect("top printed a line");
    let busy = (last.0 - first.0) as f64 / 100.0;
    let idle = (last.1 - first.1) as f64 / 100.0;
    (samples as f64, busy, busy + idle)
}

/// By default top samples busy CPUs only (cpu-clock honours exclude_idle),
/// so that watching an idle machine costs next to nothing; `--idle`
/// samples idle CPUs too, as perf top does. Checked against the kernel's
/// own busy and idle time (/proc/stat) over the same intervals: by
/// default a run's samples are the frequency times the busy CPU-seconds;
/// with `--idle` they add idle CPU-seconds, which this VM's kernel samples
/// at about half the rate (perf record -a -F 499 over 6 idle CPU-seconds
/// gets ~1500 samples too), so those are counted at a quarter at least.
#[test]
fn top_samples_busy_time_unless_idle_is_asked_for() {
    if !live(false) {
        return;
    }
    let _one = support::one_at_a_time();
    let slack = |secs: f64| 0.3 * 499.0 * secs + 150.0;
    let (samples, busy, all) = samples_and_cpu_seconds(&[]);
    eprintln!("default: {samples} samples, {busy:.2} busy of {all:.2} CPU-seconds");
    assert!(
        (samples - 499.0 * busy).abs() <= slack(busy),
        "{samples} samples for {busy:.2} busy CPU-seconds"
    );
    let (samples, busy, all) = samples_and_cpu_seconds(&["--idle"]);
    eprintln!("--idle: {samples} samples, {busy:.2} busy of {all:.2} CPU-seconds");
    let idle = all - busy;
    assert!(
        samples >= 499.0 * (busy + idle / 4.0) - slack(busy),
        "{samples} samples for {busy:.2} busy and {idle:.2} idle CPU-seconds: idle CPUs not sampled"
    );
    assert!(
        samples <= 499.0 * all + slack(all),
        "{samples} samples for {all:.2} CPU-seconds"
    );
}
