//! Not a test: a helper for bench/record.sh that keeps N generated BPF
//! programs (with a sub-program, BTF and line info) loaded until a file is
//! removed. Ignored unless asked for by name:
//!
//! `BPFPROF_BENCH_PROGRAMS=500 BPFPROF_BENCH_HOLD=/tmp/hold cargo test
//!  --release -p bpfprof --test record_bench_load -- --ignored`

use std::path::PathBuf;
use std::time::Duration;

#[test]
#[ignore = "benchmark helper, run by bench/record.sh"]
fn hold_programs_loaded() {
    let n: u32 = std::env::var("BPFPROF_BENCH_PROGRAMS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(500);
    let hold = PathBuf::from(std::env::var("BPFPROF_BENCH_HOLD").expect("BPFPROF_BENCH_HOLD"));
    let progs: Vec<_> = (0..n)
        .map(|i| {
            bpfinfo::testprog::TestProg::builder()
                .name(&format!("bench_{i}"))
                .seed(i)
                .loop_iters(20)
                .build()
                .unwrap()
                .load()
                .unwrap()
        })
        .collect();
    std::fs::write(&hold, format!("{}\n", progs.len())).unwrap();
    while hold.exists() {
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(progs);
}
