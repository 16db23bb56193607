//! `bpfprof record --demo`: a generated BPF program with a sub-program,
//! attached to the getpid tracepoint and driven by a getpid loop, so a
//! machine that runs no BPF programs still shows the BPF part of a profile.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::Context;
use bpfinfo::testprog::TestProg;

/// Load and attach the program, then call getpid until `stop`.
pub fn start(stop: Arc<AtomicBool>) -> anyhow::Result<JoinHandle<()>> {
    let prog = TestProg::builder()
        .name("bpfprof_demo")
        .loop_iters(2000)
        .build()?;
    let loaded = prog.load().context("loading the demo BPF program")?;
    let attached = loaded
        .attach_tracepoint("syscalls", "sys_enter_getpid")
        .context("attaching the demo BPF program to syscalls:sys_enter_getpid")?;
    eprintln!(
        "bpfprof: demo: BPF program {} (id {}, sub-program {}) runs on every getpid(); calling getpid in a loop",
        prog.name(),
        loaded.id(),
        prog.expected_func_names().get(1).map_or("work", |s| s.as_str()),
    );
    Ok(std::thread::Builder::new()
        .name("bpfprof-demo".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                for _ in 0..256 {
                    // glibc does not cache getpid: each call is a syscall.
                    std::hint::black_box(std::process::id());
                }
            }
            drop(attached);
            drop(loaded);
        })?)
}
