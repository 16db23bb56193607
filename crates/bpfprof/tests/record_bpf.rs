//! BPF programs loaded before, during and unloaded within a recording are
//! all named in `perf report` and have their info in the file; callchains
//! run from the BPF sub-program through the kernel to the user code.

mod record_util;
mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use bpfinfo::testprog::{LoadedProg, TestProg};
use record_util::*;

/// The kernel's names for a program's functions, from /proc/kallsyms
/// (before/after diff): address → name.
fn load(name: &str, seed: u32) -> (LoadedProg, BTreeMap<u64, String>) {
    let before = kallsyms_bpf();
    let p = TestProg::builder()
        .name(name)
        .seed(seed)
        .loop_iters(3000)
        .build()
        .unwrap()
        .load()
        .unwrap();
    let names = kallsyms_bpf()
        .into_iter()
        .filter(|(a, n)| before.get(a) != Some(n) && n.starts_with("bpf_prog_"))
        .collect::<BTreeMap<_, _>>();
    assert!(
        names.len() >= 2,
        "{name}: main and sub-program in kallsyms: {names:?}"
    );
    (p, names)
}

#[test]
fn programs_before_during_and_unloaded_are_named_with_info_and_callchains() {
    if !can_record_bpf() {
        return;
    }
    let dir = tmpdir("bpf");
    let out = dir.join("perf.data");

    let (before, before_names) = load("tst_before", 11);
    let a1 = before
        .attach_tracepoint("syscalls", "sys_enter_getpid")
        .unwrap();
    let rec = start(&["-a", "-g", "-F", "4000", "--bpf-stats"], &out);

    getpid_for(Duration::from_millis(700));
    let (during, during_names) = load("tst_during", 22);
    let a2 = during
        .attach_tracepoint("syscalls", "sys_enter_getpid")
        .unwrap();
    // Each getpid of ours runs every attached program once.
    let mut during_calls = getpid_for(Duration::from_millis(700));
    let (gone, gone_names) = load("tst_gone", 33);
    let a3 = gone
        .attach_tracepoint("syscalls", "sys_enter_getpid")
        .unwrap();
    during_calls += getpid_for(Duration::from_millis(700));
    let gone_id = gone.id();
    drop(a3);
    drop(gone);
    // Still recording after the unload.
    during_calls += getpid_for(Duration::from_millis(300));
    let (st, stderr) = rec.stop("INT");
    assert!(st.success(), "{stderr}");
    drop((a1, a2));

    let f = out.to_str().unwrap();
    let (report, err) = perf(&[
        "report",
        "-i",
        f,
        "--stdio",
        "--no-children",
        "--sort",
        "dso,sym",
    ]);
    assert_perf_happy(&err);
    for (what, names) in [
        ("before", &before_names),
        ("during", &during_names),
        ("gone", &gone_names),
    ] {
        let work = names.values().find(|n| n.ends_with("_work")).unwrap();
        assert!(
            report.contains(&format!("[k] {work}")),
            "sub-program of the program loaded {what} ({work}) not in the report:\n{report}"
        );
    }
    let ids = header_prog_ids(&out);
    for id in [before.id(), during.id(), gone_id] {
        assert!(
            ids.contains(&id),
            "no bpf_prog_info {id} in the header ({ids:?})"
        );
    }

    // With -g: a work frame, then its caller (the main function), then the
    // kernel's trace_call_bpf, then user space (libc's getpid) in this process.
    let (script, err) = perf(&["script", "-i", f, "-F", "pid,ip,sym,dso"]);
    assert_perf_happy(&err);
    let me = std::process::id().to_string();
    let work = during_names
        .values()
        .find(|n| n.ends_with("_work"))
        .unwrap();
    let main = during_names
        .values()
        .find(|n| n.ends_with("_tst_during"))
        .unwrap();
    let found = script.split("\n\n").any(|s| {
        let mut lines = s.lines();
        let Some(head) = lines.next() else {
            return false;
        };
        if head.trim() != me {
            return false;
        }
        let frames: Vec<&str> = lines.collect();
        let pos = |pat: &str| frames.iter().position(|l| l.contains(pat));
        match (pos(work), pos(main), pos("trace_call_bpf"), pos("getpid")) {
            (Some(w), Some(m), Some(k), Some(u)) => w < m && m < k && k < u,
            _ => false,
        }
    });
    assert!(
        found,
        "no callchain {work} -> {main} -> trace_call_bpf -> getpid in pid {me}"
    );

    // Stats: the delta over the recording counts at least our own calls
    // made while the program was attached (other processes add to it).
    let file = perfdata::PerfFile::open(&out).unwrap();
    let infos = file.features().bpf_prog_info.clone().unwrap();
    let during_info = infos.iter().find(|i| i.id == during.id()).unwrap();
    assert!(
        during_info.run_cnt >= during_calls,
        "run_cnt {} for {during_calls} getpid calls while attached",
        during_info.run_cnt
    );
    assert!(during_info.run_time_ns > 0);
    let _ = std::fs::remove_dir_all(dir);
}
