//! `bpfprof report --header-only` and `--header` against `perf report
//! --header-only` (perf 6.1) on the same files: a `perf record -g` of a
//! command, a `perf record -a -g` while a bpftrace program runs, and a
//! `bpfprof record -a -g` of the same.

mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// perf lines of sections bpfprof leaves out (see analyze/view/header.rs);
/// any other perf line must be in ours.
const NOT_PRINTED: &[&str] = &[
    "# directory data version",
    "# cpu pmu capabilities",
    "# hybrid cpu system",
];

fn not_printed(line: &str) -> bool {
    NOT_PRINTED.iter().any(|p| line.starts_with(p))
        || line.contains(" pmu capabilities: ")
        || (line.starts_with("# ") && line.contains(" cpu list : ") && !line.starts_with("# node"))
}

fn perf_header(data: &Path) -> String {
    support::stdout(
        Command::new("perf")
            .args(["report", "--header-only", "-i"])
            .arg(data),
    )
}

fn ours(args: &[&str], data: &Path) -> String {
    support::stdout(
        support::bpfprof()
            .arg("report")
            .args(args)
            .arg("-i")
            .arg(data),
    )
}

/// The brief's rule: every line of ours is perf's line (in perf's order),
/// and every perf line of a section we print is in ours.
fn assert_agree(data: &Path) -> Vec<String> {
    let perf = perf_header(data);
    let ours = ours(&["--header-only"], data);
    let perf: Vec<&str> = perf.lines().collect();
    let ours: Vec<&str> = ours.lines().collect();
    let mut at = 0;
    for l in &ours {
        let found = perf[at..].iter().position(|p| p == l);
        let Some(i) = found else {
            // The key: the text before " : ", else before ":".
            let key = l
                .split_once(" : ")
                .or_else(|| l.split_once(':'))
                .map_or(*l, |(k, _)| k);
            let theirs: Vec<&&str> = perf.iter().filter(|p| p.starts_with(key)).collect();
            panic!(
                "{}: our line\n  {l}\nis not perf's (perf has {theirs:?})",
                data.display()
            );
        };
        at += i + 1;
    }
    for p in perf.iter().filter(|p| !not_printed(p)) {
        assert!(
            ours.contains(p),
            "{}: perf's line\n  {p}\nis missing from ours:\n{}",
            data.display(),
            ours.join("\n")
        );
    }
    // Not an empty agreement: the sections every recording has.
    for key in [
        "# captured on",
        "# cmdline : ",
        "# event : name = ",
        "# missing features: ",
    ] {
        assert!(ours.iter().any(|l| l.starts_with(key)), "no {key} line");
    }
    ours.iter().map(|s| s.to_string()).collect()
}

/// `perf record ARGS -o DATA -- CMD...`. perf 6.1 sometimes aborts in its
/// end-of-run build-id pass ("assertion failed at util/build-id.c") while
/// other BPF programs come and go on the machine; then the recording is
/// made again without that pass (`-B`), which changes only the BUILD_ID
/// and sample time sections.
fn perf_record(data: &Path, args: &[&str], cmd: &[&str]) {
    let rec = |extra: &[&str]| {
        Command::new("perf")
            .arg("record")
            .args(args)
            .args(extra)
            .arg("-o")
            .arg(data)
            .arg("--")
            .args(cmd)
            .stdout(Stdio::null())
            .output()
            .expect("perf record runs")
    };
    let out = rec(&[]);
    if out.status.success() {
        return;
    }
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("build-id"), "perf record failed: {err}");
    eprintln!("perf record aborted in its build-id pass; recording again with -B");
    let out = rec(&["-B"]);
    assert!(
        out.status.success(),
        "perf record -B failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn prog_ids() -> BTreeSet<u32> {
    bpfinfo::sys::prog_ids().filter_map(Result::ok).collect()
}

/// bpftrace on getpid and getppid, and the ids of the programs it loaded
/// (found by their names, polled until both are there).
fn bpftrace_progs() -> (support::Bpftrace, Vec<u32>) {
    let before = prog_ids();
    let bt = support::Bpftrace::start(
        "tracepoint:syscalls:sys_enter_getpid { @a = count(); } \
         tracepoint:syscalls:sys_enter_getppid { @b = count(); }",
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ids: Vec<u32> = prog_ids()
            .difference(&before)
            .copied()
            .filter(|&id| {
                bpfinfo::sys::fetch_prog(id, bpfinfo::sys::Capture::Summary)
                    .is_ok_and(|p| p.info.name.starts_with("sys_enter_getp"))
            })
            .collect();
        if ids.len() >= 2 {
            return (bt, ids);
        }
        assert!(
            Instant::now() < deadline,
            "bpftrace's programs did not appear"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn perf_record_g_header_is_perfs() {
    if !support::live(true) {
        return;
    }
    let _one = support::one_at_a_time();
    let dir = support::tempdir();
    let data = support::path(&dir, "g.data");
    // A quote in an argument: perf prints it as \'.
    perf_record(
        &data,
        &["-g"],
        &[
            "sh",
            "-c",
            "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done; echo 'done' >/dev/null",
        ],
    );
    let lines = assert_agree(&data);
    assert!(
        lines.iter().any(|l| l.contains("\\'done\\'")),
        "the quoted argument is not in the cmdline line"
    );
}

#[test]
fn perf_and_bpfprof_record_a_with_bpftrace_header_is_perfs() {
    if !support::live(true)
        || !support::require(
            testkit::tool("bpftrace").is_some(),
            "needs bpftrace (apt-get install bpftrace)",
        )
    {
        return;
    }
    let _one = support::one_at_a_time();
    let (_bt, ids) = bpftrace_progs();
    let dir = support::tempdir();
    let perf_data = support::path(&dir, "perf-a.data");
    perf_record(&perf_data, &["-a", "-g"], &["sleep", "0.5"]);
    let ours_data = support::path(&dir, "bpfprof-a.data");
    support::run(
        support::bpfprof()
            .args(["record", "-a", "-g", "-o"])
            .arg(&ours_data)
            .args(["--", "sleep", "0.5"])
            .stderr(Stdio::null()),
    );
    for data in [&perf_data, &ours_data] {
        let lines = assert_agree(data);
        // The kernel's ids of bpftrace's programs, each in perf's
        // one-function form.
        for id in &ids {
            let head = format!("# bpf_prog_info {id}: bpf_prog_");
            assert!(
                lines.iter().any(|l| l.starts_with(&head)),
                "{}: no line for bpftrace's program {id}",
                data.display()
            );
        }
    }
}

#[test]
fn header_then_the_report() {
    if !support::live(true) {
        return;
    }
    let _one = support::one_at_a_time();
    let dir = support::tempdir();
    let data = support::path(&dir, "r.data");
    support::run(
        support::bpfprof()
            .args(["record", "-g", "-o"])
            .arg(&data)
            .args([
                "--",
                "sh",
                "-c",
                "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done",
            ])
            .stderr(Stdio::null()),
    );
    let header = ours(&["--header-only"], &data);
    let report = ours(&[], &data);
    assert!(header.starts_with("# ========\n") && header.ends_with("# ========\n#\n"));
    assert!(
        report
            .lines()
            .any(|l| !l.starts_with('#') && l.contains('%')),
        "the report has rows"
    );
    assert_eq!(ours(&["--header"], &data), format!("{header}{report}"));
}

/// Other attrs than cpu-clock's: a tracepoint with a config, a session
/// clock (`-k mono`: use_clockid, clockid, and the CLOCKID and CLOCK_DATA
/// sections), DWARF unwinding's user registers and stack, user-only
/// sampling at a fixed period, an event group. `-B` (no build-id pass) keeps perf from the
/// abort described at [`perf_record`]; these files need no build ids.
#[test]
fn other_event_attrs_and_clock_sections_are_perfs() {
    if !support::live(true) {
        return;
    }
    let _one = support::one_at_a_time();
    let dir = support::tempdir();
    let cases: [(&str, &[&str], &[&str]); 3] = [
        (
            "sched:sched_switch",
            &[
                "-k",
                "mono",
                "-e",
                "sched:sched_switch",
                "--call-graph",
                "dwarf,4096",
            ],
            &[
                "# clockid frequency: ",
                "# clockid: monotonic (1)",
                "# reference time: ",
            ],
        ),
        (
            "cpu-clock:u",
            &["-e", "cpu-clock:u", "-c", "10007", "--user-regs=AX,BX"],
            &[],
        ),
        (
            "cpu-clock",
            &["-e", "{cpu-clock,task-clock}"],
            &["# group: {cpu-clock,task-clock}"],
        ),
    ];
    for (i, (event, args, keys)) in cases.into_iter().enumerate() {
        let data = support::path(&dir, &format!("case{i}.data"));
        let mut args = args.to_vec();
        args.push("-B");
        perf_record(&data, &args, &["sh", "-c", "sleep 0.05; echo x >/dev/null"]);
        let lines = assert_agree(&data);
        let head = format!("# event : name = {event}, ");
        assert!(
            lines.iter().any(|l| l.starts_with(&head)),
            "no event line for {event}"
        );
        for key in keys {
            assert!(lines.iter().any(|l| l.starts_with(key)), "no {key} line");
        }
    }
}

/// zstd-compressed recordings (`-z`) by perf and by bpfprof: the
/// COMPRESSED section's line is perf's.
#[test]
fn compressed_recordings_header_is_perfs() {
    if !support::live(true) {
        return;
    }
    let _one = support::one_at_a_time();
    let dir = support::tempdir();
    let perf_data = support::path(&dir, "perf-z.data");
    perf_record(&perf_data, &["-z", "-B"], &["sleep", "0.1"]);
    let ours_data = support::path(&dir, "bpfprof-z.data");
    support::run(
        support::bpfprof()
            .args(["record", "-z", "-o"])
            .arg(&ours_data)
            .args(["--", "sleep", "0.1"])
            .stderr(Stdio::null()),
    );
    for data in [&perf_data, &ours_data] {
        let lines = assert_agree(data);
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("# compressed : Zstd, level = ")),
            "{}: no compressed line",
            data.display()
        );
    }
}
