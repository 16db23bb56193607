//! The parts of a BPF program's cost against Linux perf's view of the same
//! recording: a bpftrace program (which no one here wrote) on the getppid
//! tracepoint, counting into a map, hit by a loop on this thread.
//! - self: samples whose leaf perf names `bpf_prog_*`;
//! - called: samples whose leaf is not a program but a `bpf_prog_*` frame
//!   is further up the kernel stack (helpers and map code);
//! - hook: there, and at the syscall tracepoint's site;
//! - a second program that never runs is listed with no samples.

mod support;

use std::process::Command;

use serde_json::Value;

/// The programs a process attached through perf events, as `bpftool perf
/// show` lists them: (program id, tag, tracepoint).
fn attached_by(pid: u32) -> Vec<(u64, String, String)> {
    let perf: Value = serde_json::from_str(&support::stdout(
        Command::new("bpftool").args(["perf", "show", "-j"]),
    ))
    .unwrap();
    let ids: Vec<(u64, String)> = perf
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["pid"].as_u64() == Some(pid as u64))
        .filter_map(|a| {
            Some((
                a["prog_id"].as_u64()?,
                a["tracepoint"].as_str()?.to_string(),
            ))
        })
        .collect();
    ids.into_iter()
        .map(|(id, tp)| {
            let p: Value = serde_json::from_str(&support::stdout(Command::new("bpftool").args([
                "prog",
                "show",
                "id",
                &id.to_string(),
                "-j",
            ])))
            .unwrap();
            (id, p["tag"].as_str().unwrap().to_string(), tp)
        })
        .collect()
}

/// perf script's stacks of one process: (samples, leaf in the program,
/// the program further up the kernel stack). The kernel names a
/// single-function program `bpf_prog_<tag>_<name>`, with bpftool's tag.
fn perf_parts(data: &std::path::Path, pid: u32, tag: &str) -> (u64, u64, u64) {
    let ours = format!("bpf_prog_{tag}_");
    let stacks = support::perf_stacks(data, pid);
    let at = |s: &Vec<String>| s.iter().position(|f| f.starts_with(&ours));
    let own = stacks.iter().filter(|s| at(s) == Some(0)).count();
    let called = stacks
        .iter()
        .filter(|s| at(s).is_some_and(|i| i > 0))
        .count();
    (stacks.len() as u64, own as u64, called as u64)
}

#[test]
fn parts_of_a_bpftrace_programs_cost_agree_with_perf() {
    if !support::live(true)
        || !support::require(
            Command::new("bpftrace").arg("--version").output().is_ok(),
            "needs bpftrace (apt-get install bpftrace)",
        )
    {
        return;
    }
    let bt = support::Bpftrace::start(
        "tracepoint:syscalls:sys_enter_getppid { @c[comm, pid] = count(); } \
         tracepoint:syscalls:sys_enter_acct { @a = count(); }",
    );
    let dir = support::tempdir();
    let data = support::path(&dir, "cost.data");
    support::record_while(&data, &["-a", "-g", "--duration", "2"], || {
        for _ in 0..10_000 {
            // parent_id is getppid(2): one syscall a call (glibc caches nothing).
            std::hint::black_box(std::os::unix::process::parent_id());
        }
    });
    let pid = std::process::id();
    let v = support::bpf_view_of(&data, pid);
    assert_eq!(v["callchains"], Value::Bool(true), "{v}");
    let progs = v["programs"].as_array().expect("programs");
    // Which of the programs are this bpftrace's, and on which tracepoint,
    // as bpftool says (other tests may run bpftrace too).
    let ours = attached_by(bt.pid());
    let on = |tp: &str| {
        let (id, tag, _) = ours
            .iter()
            .find(|o| o.2 == tp)
            .unwrap_or_else(|| panic!("bpftool: no bpftrace program on {tp}: {ours:?}"));
        let p = progs
            .iter()
            .find(|p| p["id"].as_u64() == Some(*id))
            .unwrap_or_else(|| panic!("no program {id} in the view: {v}"));
        (p, tag.clone())
    };
    let (hot, tag) = on("sys_enter_getppid");
    let (idle, _) = on("sys_enter_acct");
    let parts = |p: &Value, k: &str| p["samples"][k].as_u64().unwrap();

    let (samples, own, called) = perf_parts(&data, pid, &tag);
    assert_eq!(
        v["total"]["samples"].as_u64(),
        Some(samples),
        "samples in view"
    );
    assert!(own > 0 && called > 0, "perf sees the program and its calls");
    assert_eq!(parts(hot, "self"), own, "self vs perf: {hot}");
    assert_eq!(parts(hot, "called"), called, "called vs perf: {hot}");
    let hook = parts(hot, "hook");
    assert!(hook > 0, "the tracepoint's hook costs something: {hot}");
    assert_eq!(parts(hot, "total"), own + called + hook);
    // perf's own view: the rest of the loop's time is its syscalls and the
    // hook, so the hook cannot exceed what is not in the program.
    assert!(hook <= samples - own - called, "{hot}");
    let sites: Vec<&str> = hot["hook_sites"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["site"].as_str())
        .collect();
    assert!(sites.contains(&"syscall tracepoint sys_enter"), "{sites:?}");
    assert_eq!(parts(idle, "total"), 0, "acct never runs: {idle}");
    // Costliest first.
    let totals: Vec<u64> = progs.iter().map(|p| parts(p, "total")).collect();
    assert!(totals.windows(2).all(|w| w[0] >= w[1]), "{totals:?}");

    // A flat report cannot know more than self, and says so.
    let flat = support::stdout(
        support::bpfprof()
            .args([
                "report",
                "--bpf",
                "--no-children",
                "-g",
                "none",
                "--json",
                "-i",
            ])
            .arg(&data),
    );
    let f: Value = serde_json::from_str(&flat).unwrap();
    assert_eq!(f["callchains"], Value::Bool(false));
    let p0 = &f["programs"][0];
    assert!(p0["samples"]["total"].is_null(), "{p0}");
    let text = support::stdout(
        support::bpfprof()
            .args(["report", "--bpf", "--no-children", "-g", "none", "-i"])
            .arg(&data),
    );
    assert!(text.contains("need call chains"), "{text}");
}
