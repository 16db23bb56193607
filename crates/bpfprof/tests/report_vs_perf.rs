//! `bpfprof report` against `perf report` on files recorded by Linux perf
//! while generated BPF programs run: programs loaded before the recording,
//! loaded during it, and unloaded before it ends.

mod perf_start;
mod support;

use std::time::{Duration, Instant};

use bpfinfo::testprog::TestProg;

#[test]
fn flat_report_agrees_with_perf_on_a_perf_recording_with_bpf() {
    if !support::live(true) {
        return;
    }
    let dir = support::tempdir();
    let data = support::path(&dir, "perf.data");
    let before = TestProg::builder()
        .name("rep_before")
        .loop_iters(3000)
        .build()
        .unwrap();
    let before = before.load().expect("load the first test program");
    let _attach = before
        .attach_tracepoint("syscalls", "sys_enter_getpid")
        .expect("attach");

    // Once perf records (polled, not guessed), run programs.
    let perf = perf_start::spawn_ready(&["record", "-a", "-F", "1999"], &data, "3");
    support::getpid_until(Instant::now() + Duration::from_millis(800));
    let during = TestProg::builder()
        .name("rep_during")
        .loop_iters(5000)
        .build()
        .unwrap();
    let during = during.load().expect("load the second test program");
    let second = during
        .attach_tracepoint("syscalls", "sys_enter_getpid")
        .expect("attach");
    let during_id = during.id();
    support::getpid_until(Instant::now() + Duration::from_millis(800));
    drop(second);
    drop(during);
    let out = perf.wait_with_output().expect("perf record");
    assert!(
        out.status.success(),
        "perf record: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let theirs = support::perf_flat(&data);
    let (total, ours) = support::ours_flat(&data);
    support::assert_flat_agree(total, &ours, &theirs);

    // The BPF rows are there, under the sub-programs' names, in both.
    let bpf: Vec<_> = ours
        .iter()
        .filter(|r| r.dso.starts_with("bpf_prog_"))
        .collect();
    assert!(
        bpf.iter().any(|r| r.percent >= 1.0),
        "no BPF row of 1% or more: {ours:?}"
    );
    let json = support::stdout(
        support::bpfprof()
            .args(["report", "--bpf", "--json", "-i"])
            .arg(&data),
    );
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let progs = v["programs"].as_array().expect("BPF view lists programs");
    let unloaded = progs
        .iter()
        .find(|p| p["id"].as_u64() == Some(during_id as u64))
        .unwrap_or_else(|| {
            panic!(
                "program {during_id}, unloaded during the recording, is not in the BPF view: {}",
                v
            )
        });
    assert!(unloaded["unloaded_at"].as_f64().is_some(), "{unloaded}");
    assert!(unloaded["loaded_at"].as_f64().is_some(), "{unloaded}");
    let subs = unloaded["subprogs"].as_array().unwrap();
    assert!(
        subs.iter().any(|s| s["index"].as_u64() == Some(1)),
        "sub-program 1 got samples: {unloaded}"
    );

    // Both programs' `work` has the same code, hence the same name, so
    // perf (and our dso,sym table) shows one row for the two. Per program,
    // the samples must still split by program: the bpf_prog rows of the two
    // programs add up to perf's rows of their functions, and each matches
    // the BPF view's count for that program.
    let by_prog = support::stdout(
        support::bpfprof()
            .args(["report", "--sort", "bpf_prog", "--json", "-i"])
            .arg(&data),
    );
    let by_prog: serde_json::Value = serde_json::from_str(&by_prog).unwrap();
    let prog_samples = |id: u32| -> u64 {
        by_prog["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["bpf_prog_id"].as_u64() == Some(id as u64))
            .map(|r| r["samples"].as_u64().unwrap())
            .sum()
    };
    let view_samples = |id: u32| -> u64 {
        progs
            .iter()
            .find(|p| p["id"].as_u64() == Some(id as u64))
            .map_or(0, |p| p["samples"]["self"].as_u64().unwrap())
    };
    let before_id = before.id();
    for id in [before_id, during_id] {
        assert_eq!(
            prog_samples(id),
            view_samples(id),
            "program {id}: --sort bpf_prog vs --bpf"
        );
    }
    let perf_bpf: u64 = theirs
        .iter()
        .filter(|r| {
            r.dso.starts_with("bpf_prog_")
                && (r.dso.ends_with("_work")
                    || r.dso.ends_with("_rep_before")
                    || r.dso.ends_with("_rep_during"))
        })
        .map(|r| r.samples)
        .sum();
    assert_eq!(
        prog_samples(before_id) + prog_samples(during_id),
        perf_bpf,
        "the two programs' samples vs perf's rows of their functions"
    );
}
