//! Two BPF-aware recorders at once over BPF program churn: `perf record -a`
//! started first, then `bpfprof record -a`, while bpftrace one-liners load
//! and unload programs. The kernel then gives perf's ring KSYMBOL and
//! BPF_EVENT records sized for both listeners' trailers (see
//! perfdata::natural_len). Each tool reads the other's file: perf reads
//! ours without an error, and our report on perf's file names the
//! bpftrace processes we started as the loaders, at times inside the run.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::*;

fn has(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Poll until `f` has more than its 104-byte header (events are open and
/// the recorder is writing), or panic at the deadline.
fn wait_for_data(f: &Path, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::metadata(f).map_or(0, |m| m.len()) <= 104 {
        assert!(Instant::now() < deadline, "{what} never wrote {f:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn perf_and_bpfprof_at_once_read_each_others_files() {
    if !live(true) || !require(has("bpftrace"), "needs bpftrace (apt-get install bpftrace)") {
        return;
    }
    let dir = tempdir();
    let (p, b) = (path(&dir, "p.data"), path(&dir, "b.data"));
    let mut perf = Command::new("perf")
        .args(["record", "-a", "-o"])
        .arg(&p)
        .args(["--", "sleep", "6"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("perf record");
    wait_for_data(&p, "perf record");
    let ours = bpfprof()
        .args(["record", "-q", "-a", "--duration", "3", "-o"])
        .arg(&b)
        .stderr(Stdio::piped())
        .spawn()
        .expect("bpfprof record");
    wait_for_data(&b, "bpfprof record");
    // Each one-liner loads its program, runs it 300 ms and exits, which
    // unloads it: no sleeps, the churn times itself.
    let mut loaders = Vec::new();
    for _ in 0..3 {
        let mut c = Command::new("bpftrace")
            .args([
                "-e",
                "tracepoint:syscalls:sys_enter_getpid { @n = count(); } interval:ms:300 { exit(); }",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("bpftrace");
        loaders.push(c.id());
        c.wait().unwrap();
    }
    let ours = ours.wait_with_output().unwrap();
    assert!(
        ours.status.success(),
        "bpfprof record beside perf: {}",
        String::from_utf8_lossy(&ours.stderr)
    );
    let perf = {
        let _ = perf.wait();
        perf
    };
    drop(perf);

    // perf reads ours cleanly.
    let o = Command::new("perf")
        .args(["script", "--show-bpf-events", "-i"])
        .arg(&b)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "perf script on our file: {err}");
    for bad in ["invalid", "incompatible", "Bad", "unexpected"] {
        assert!(!err.contains(bad), "perf script on our file: {err}");
    }
    let script = String::from_utf8_lossy(&o.stdout);
    assert!(
        script.contains("PERF_RECORD_BPF_EVENT type 1"),
        "our file has the loads"
    );

    // Ours reads perf's (perf 6.1 itself may have died of the over-long
    // records, leaving the header's data size 0: the reader then reads to
    // the end of the file, as it does for any unfinished recording).
    let out = bpfprof()
        .args(["report", "--bpf", "--json", "-i"])
        .arg(&p)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "report --bpf on perf's file: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let progs = v["bpf"]["programs"]
        .as_array()
        .or(v["programs"].as_array())
        .expect("programs");
    let mut ours_found = 0;
    for pr in progs {
        let Some(pid) = pr["loader_pid"].as_u64() else {
            continue;
        };
        if !loaders.contains(&(pid as u32)) {
            continue;
        }
        ours_found += 1;
        // The oracle is the pids we spawned; times are seconds from the
        // first sample, and the run lasted under 10 s.
        for key in ["loaded_at", "unloaded_at"] {
            if let Some(t) = pr[key].as_f64() {
                assert!((-1.0..10.0).contains(&t), "{key} {t} s: {pr}");
            }
        }
    }
    let wrong: Vec<String> = progs
        .iter()
        .filter_map(|pr| pr["loader_pid"].as_u64())
        .filter(|&pid| pid == 0 || pid > 4_194_304)
        .map(|pid| pid.to_string())
        .collect();
    assert!(
        wrong.is_empty(),
        "loader pids read from stale bytes: {wrong:?}"
    );
    assert!(
        ours_found >= loaders.len(),
        "programs loaded by the bpftrace pids {loaders:?}: {ours_found} in perf's file"
    );
}
