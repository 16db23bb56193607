//! `annotate --xlated` on a program loaded without line info (bpftrace's):
//! its samples cannot be placed on bytecode, and the view says so instead
//! of showing every share as 0.00. Oracle for "no line info": `bpftool
//! prog dump xlated` prints no source line for the program.

mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bpfinfo::sys::{self, Capture};
use serde_json::Value;
use testkit::tool;

/// Call getppid(2) until `until`: what runs the bpftrace program (getppid,
/// not getpid, so other tests' getpid programs are not in the way).
fn getppid_until(until: Instant) {
    while Instant::now() < until {
        for _ in 0..1000 {
            // parent_id is getppid(2): one syscall a call (glibc caches nothing).
            std::hint::black_box(std::os::unix::process::parent_id());
        }
    }
}

#[test]
fn xlated_view_without_line_info_says_why_it_has_no_shares() {
    if !support::live(false) {
        return;
    }
    let (Some(_), Some(bpftool)) = (tool("bpftrace"), tool("bpftool")) else {
        support::require(
            false,
            "needs bpftrace and bpftool (apt-get install bpftrace bpftool)",
        );
        return;
    };
    let dir = support::tempdir();
    let before: BTreeSet<u32> = sys::prog_ids().filter_map(Result::ok).collect();
    // Arithmetic on a run-time value: code of its own to take samples in.
    let guard = support::Bpftrace::start(
        "tracepoint:syscalls:sys_enter_getppid { $i = nsecs; unroll(100) { $i = $i * 3 + (($i >> 7) ^ 5); } @x = $i; }",
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let id = loop {
        let new = sys::prog_ids()
            .filter_map(Result::ok)
            .filter(|id| !before.contains(id))
            .find(|&id| {
                sys::fetch_prog(id, Capture::Summary)
                    .is_ok_and(|p| p.info.name.starts_with("sys_enter_getp"))
            });
        if let Some(id) = new {
            break id;
        }
        assert!(
            Instant::now() < deadline,
            "bpftrace's program did not appear"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let dump = support::stdout(Command::new(&bpftool).args([
        "prog",
        "dump",
        "xlated",
        "id",
        &id.to_string(),
    ]));
    assert!(
        !dump.lines().any(|l| l.starts_with("; ")),
        "bpftool shows source lines, so this program has line info:\n{dump}"
    );

    let data = dir.path().join("nobtf.data");
    record_while_calling_getppid(&data);
    drop(guard);

    let text = support::stdout(
        support::bpfprof()
            .args(["annotate", "--xlated", "--prog", &id.to_string(), "-i"])
            .arg(&data),
    );
    assert!(
        text.contains("# no source line table for this program"),
        "no note on why the bytecode has no shares:\n{text}"
    );
    let json = support::stdout(
        support::bpfprof()
            .args([
                "annotate",
                "--json",
                "--xlated",
                "--prog",
                &id.to_string(),
                "-i",
            ])
            .arg(&data),
    );
    let v: Value = serde_json::from_str(&json).unwrap();
    let t = &v.as_array().unwrap()[0];
    assert!(
        t["samples"].as_u64().unwrap() > 0,
        "no samples in the program: {t}"
    );
    let rows = t["xlated"].as_array().expect("xlated rows");
    assert!(!rows.is_empty(), "no bytecode in the recording: {t}");
    assert!(
        rows.iter().all(|x| x["line_samples"].is_null()),
        "a share placed without line info: {t}"
    );
}

/// `bpfprof record -a --duration 2` into `data`, calling getppid until it
/// ends.
fn record_while_calling_getppid(data: &Path) {
    let mut rec = support::bpfprof()
        .args(["record", "-a", "--duration", "2", "-o"])
        .arg(data)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start bpfprof record");
    let status = loop {
        getppid_until(Instant::now() + Duration::from_millis(20));
        if let Some(s) = rec.try_wait().unwrap() {
            break s;
        }
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut rec.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "bpfprof record failed: {err}");
}
