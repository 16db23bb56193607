//! `bpfprof report` and `annotate` on files recorded by `bpfprof record`,
//! with Linux perf reading the same file as the oracle.

mod support;

mod annotate_util;

use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bpfinfo::testprog::TestProg;

#[test]
fn perf_and_bpfprof_agree_on_a_bpfprof_recording_and_it_annotates() {
    if !support::live(true) {
        return;
    }
    let dir = support::tempdir();
    let data = support::path(&dir, "bpfprof.data");
    let prog = TestProg::builder()
        .name("rep_ours")
        .loop_iters(2000)
        .seed(13)
        .build()
        .unwrap();
    let loaded = prog.load().expect("load the test program");
    let attached = loaded
        .attach_tracepoint("syscalls", "sys_enter_getpid")
        .expect("attach");
    let id = loaded.id();
    let live = loaded.info().expect("prog info");
    let ksyms = annotate_util::kallsyms_at(&live.info.jited_ksyms);

    // Two seconds of the whole system (`-a -- sleep 2` works too).
    let child = support::bpfprof()
        .args(["record", "-a", "-g", "-F", "2999", "--duration", "2", "-o"])
        .arg(&data)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start bpfprof record");
    let stop = AtomicBool::new(false);
    let out = std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                support::getpid_until(Instant::now() + Duration::from_millis(20));
            }
        });
        let out = child.wait_with_output();
        stop.store(true, Ordering::Relaxed);
        out
    })
    .expect("bpfprof record");
    assert!(
        out.status.success(),
        "bpfprof record: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(attached);
    drop(loaded);
    annotate_util::assert_unloaded(id);

    // The flat report, BPF rows included, by the agreement rule.
    let theirs = support::perf_flat(&data);
    let (total, ours) = support::ours_flat(&data);
    support::assert_flat_agree(total, &ours, &theirs);
    // The kernel's name for `work` is in both, at 1% or more.
    for rows in [&ours, &theirs] {
        let work = rows
            .iter()
            .find(|r| r.dso == ksyms[1])
            .unwrap_or_else(|| panic!("{} not in {rows:?}", ksyms[1]));
        assert!(work.percent >= 1.0, "{work:?}");
    }

    // Annotate: every sub-program, hottest line on the loop, counts summing
    // to the report's.
    let targets = annotate_util::annotate_json(&data, &["--prog", &id.to_string()]);
    let loops = annotate_util::loop_lines(&prog);
    let work = targets
        .iter()
        .find(|t| t["bpf"]["sub"].as_u64() == Some(1))
        .expect("sub 1 annotated");
    assert_eq!(work["bpf"]["func_name"].as_str(), Some("work"));
    let lines = work["lines"].as_array().expect("source lines");
    let top = lines
        .iter()
        .max_by_key(|l| l["samples"].as_u64().unwrap())
        .expect("a line");
    assert!(
        loops
            .iter()
            .any(|(n, t)| top["line"].as_u64() == Some(*n as u64) && top["text"] == *t),
        "hottest line {top} is not on the loop {loops:?}"
    );
    for t in &targets {
        let sym = t["symbol"].as_str().unwrap();
        let sum: u64 = annotate_util::insn_samples(t);
        assert_eq!(Some(sum), t["samples"].as_u64(), "{sym}");
        let row = ours.iter().find(|r| r.dso == t["dso"].as_str().unwrap());
        assert_eq!(row.map(|r| r.samples), Some(sum), "{sym} vs report");
        // Its own bytes, as objdump reads them.
        let i = t["bpf"]["sub"].as_u64().unwrap() as usize;
        let want: Vec<String> =
            annotate_util::objdump(annotate_util::sub_bytes(&live, i), live.info.jited_ksyms[i])
                .into_iter()
                .map(|x| testkit::normalize_att(&x.1))
                .collect();
        let got: Vec<String> = t["insns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| testkit::normalize_att(x["text"].as_str().unwrap()))
            .collect();
        assert_eq!(got, want, "{sym}");
    }
    // bpfprof record captures the bytecode: --xlated shows it.
    let x = annotate_util::annotate_json(&data, &["--xlated", "--prog", &id.to_string()]);
    let work = x
        .iter()
        .find(|t| t["bpf"]["sub"].as_u64() == Some(1))
        .unwrap();
    assert!(
        work["xlated"].as_array().is_some_and(|v| !v.is_empty()),
        "no bytecode rows: {work}"
    );
}
