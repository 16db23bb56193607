//! Starting `perf record` and knowing when it records, instead of sleeping
//! a guess: perf starts its workload only once its events are enabled, so
//! the workload's first act (touching a file) says "recording"; and perf
//! writes FINISHED_INIT once its start-up synthesis is done (perf 6.1 may
//! still be synthesizing when the workload starts: a program loaded then
//! comes out as a time-0 KSYMBOL). Both are polled with a deadline.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `perf record <perf_args> -o <data> -- sh -c 'touch READY; exec sleep
/// <secs>'`, returned once it records. stdout is discarded, stderr piped
/// (for `wait_with_output`).
pub fn spawn_ready(perf_args: &[&str], data: &Path, secs: &str) -> Child {
    let ready = data.with_extension("ready");
    let _ = std::fs::remove_file(&ready);
    let script = format!("touch '{}'; exec sleep {secs}", ready.display());
    let mut child = Command::new("perf")
        .args(perf_args)
        .arg("-o")
        .arg(data)
        .args(["--", "sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start perf record");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ready.exists() || !testkit::perf_has_finished_init(data) {
        if let Some(st) = child.try_wait().unwrap() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut err);
            }
            panic!("perf record exited before recording ({st}): {err}");
        }
        assert!(
            Instant::now() < deadline,
            "perf record did not start in 60 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}
