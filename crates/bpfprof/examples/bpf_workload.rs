//! A BPF workload for trying bpfprof and for the benchmarks: loads a
//! generated program with a sub-program and a bounded loop, attaches it to
//! the getpid tracepoint, and calls getpid(2) for SECONDS (default 5).
//!
//! `cargo run --release -p bpfprof --example bpf_workload -- 5`
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let secs: f64 = std::env::args().nth(1).map_or(Ok(5.0), |s| s.parse())?;
    let iters: u32 = std::env::args().nth(2).map_or(Ok(2000), |s| s.parse())?;
    let prog = bpfinfo::testprog::TestProg::builder()
        .name("bpfprof_demo")
        .loop_iters(iters)
        .build()?;
    let loaded = prog.load()?;
    let _attached = loaded.attach_tracepoint("syscalls", "sys_enter_getpid")?;
    eprintln!(
        "bpf_workload: program {} attached to sys_enter_getpid",
        loaded.id()
    );
    let end = std::time::Instant::now() + std::time::Duration::from_secs_f64(secs);
    let mut calls = 0u64;
    while std::time::Instant::now() < end {
        for _ in 0..1000 {
            std::hint::black_box(std::process::id());
        }
        calls += 1000;
    }
    eprintln!("bpf_workload: {calls} getpid calls");
    Ok(())
}
