//! A program run by BPF_PROG_TEST_RUN: everything under the test-run
//! syscall is the program's cost (the packet set-up, the run loop, the
//! program and what it calls), so its total is exactly the samples whose
//! perf stack has `bpf_prog_test_run*` or the program in it (samples in
//! its prologue, or in a thunk it calls, have no frames past it).

mod support;

use bpfinfo::testprog::{TestProg, TestProgKind};

/// The kernel's names of a program's functions: /proc/kallsyms at the
/// addresses its info gives.
fn kallsyms_names(addrs: &[u64]) -> Vec<String> {
    let text = std::fs::read_to_string("/proc/kallsyms").unwrap();
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let addr = u64::from_str_radix(it.next()?, 16).ok()?;
            let name = it.nth(1)?;
            addrs.contains(&addr).then(|| name.to_string())
        })
        .collect()
}

/// perf script's view of one process: (samples, with the program as leaf,
/// under the test run).
fn perf_view(data: &std::path::Path, pid: u32, names: &[String]) -> (u64, u64, u64) {
    let stacks = support::perf_stacks(data, pid);
    let ours = |f: &String| names.contains(f);
    let own = stacks
        .iter()
        .filter(|s| s.first().is_some_and(ours))
        .count();
    // The program on the stack (a chain can stop at it: a call through a
    // retpoline thunk leaves no frame past it), or the test run.
    let under = stacks
        .iter()
        .filter(|s| {
            s.iter()
                .any(|f| ours(f) || f.starts_with("bpf_prog_test_run"))
        })
        .count();
    (stacks.len() as u64, own as u64, under as u64)
}

#[test]
fn a_test_run_programs_total_is_everything_under_the_test_run() {
    if !support::live(true) {
        return;
    }
    // A short loop, so that the test run's own loop is a visible part.
    let prog = TestProg::builder()
        .name("cost_test_run")
        .kind(TestProgKind::SocketFilter)
        .loop_iters(20)
        .build()
        .unwrap();
    let loaded = prog.load().unwrap();
    let dir = support::tempdir();
    let data = support::path(&dir, "test_run.data");
    support::record_while(&data, &["-a", "-g", "--duration", "2"], || {
        loaded.test_run(20_000).unwrap();
    });
    let pid = std::process::id();
    let v = support::bpf_view_of(&data, pid);
    let p = v["programs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"].as_u64() == Some(loaded.id() as u64))
        .unwrap_or_else(|| panic!("program {} not in the view: {v}", loaded.id()));
    let names = kallsyms_names(&loaded.info().unwrap().info.jited_ksyms);
    assert_eq!(
        names.len(),
        2,
        "a main function and a sub-program: {names:?}"
    );
    let (samples, own, under) = perf_view(&data, pid, &names);
    assert_eq!(v["total"]["samples"].as_u64(), Some(samples));
    assert!(
        under > samples / 2,
        "the thread ran test runs: {under} of {samples}"
    );
    let part = |k: &str| p["samples"][k].as_u64().unwrap();
    assert_eq!(part("self"), own, "{p}");
    assert_eq!(part("total"), under, "{p}");
    assert!(part("hook") > 0, "{p}");
    let sites: Vec<&str> = p["hook_sites"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["site"].as_str())
        .collect();
    assert!(sites.iter().any(|s| s.starts_with("test run")), "{sites:?}");
}
