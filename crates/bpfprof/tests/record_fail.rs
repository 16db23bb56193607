//! Failure paths and file handling: clear messages, no garbage files,
//! exit codes like a shell, and valid files after a signal.

mod record_util;
mod support;

use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::Duration;

use record_util::*;

fn record(args: &[&str]) -> (i32, String) {
    let o = Command::new(bin())
        .arg("record")
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn bad_pid_is_refused_without_a_file() {
    let dir = tmpdir("badpid");
    let out = dir.join("x.data");
    // A pid that does not exist: above the kernel's pid_max.
    let max: u64 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let pid = (max + 1).to_string();
    let (code, err) = record(&["-p", &pid, "-o", out.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(
        err.contains("no such process") && err.contains(&pid),
        "{err}"
    );
    assert!(!out.exists());
}

#[test]
fn command_that_cannot_start_exits_127() {
    let dir = tmpdir("nocmd");
    let out = dir.join("x.data");
    let (code, err) = record(&["-o", out.to_str().unwrap(), "--", "bpfprof-no-such-command"]);
    assert_eq!(code, 127, "{err}");
    assert!(
        err.contains("bpfprof-no-such-command: command not found"),
        "{err}"
    );
    let (code, err) = record(&["-o", out.to_str().unwrap(), "--", "/no/such/dir/cmd"]);
    assert_eq!(code, 127, "{err}");
    assert!(err.contains("/no/such/dir/cmd"), "{err}");
    assert!(!out.exists());
}

#[test]
fn unwritable_output_is_refused_before_recording() {
    for bad in ["/nonexistent-bpfprof-dir/x.data", "/proc/bpfprof.data"] {
        let (code, err) = record(&["-a", "--duration", "5", "-o", bad]);
        assert_eq!(code, 1, "{err}");
        assert!(err.contains(bad) && err.contains("cannot write"), "{err}");
        // Refused before sampling: nothing was captured.
        assert!(!err.contains("Captured"), "{err}");
    }
}

#[test]
fn command_exit_code_is_passed_on() {
    if !can_record() {
        return;
    }
    let dir = tmpdir("exitcode");
    let out = dir.join("x.data");
    let (code, err) = record(&["-o", out.to_str().unwrap(), "--", "sh", "-c", "exit 7"]);
    assert_eq!(code, 7, "{err}");
    let (_, perr) = perf(&["report", "-i", out.to_str().unwrap(), "--stdio"]);
    assert_perf_happy(&perr);
}

#[test]
fn sigint_mid_run_leaves_a_valid_file() {
    if !can_record() {
        return;
    }
    let dir = tmpdir("sigint");
    let out = dir.join("perf.data");
    let rec = start(&["-a", "-g"], &out);
    // Give the samplers something to see.
    let t = std::time::Instant::now();
    while t.elapsed() < Duration::from_millis(500) {
        std::hint::black_box((0..1000u64).sum::<u64>());
    }
    let (st, stderr) = rec.stop("INT");
    assert!(st.success(), "{stderr}");
    assert!(stderr.contains("Captured and wrote"), "{stderr}");
    let (report, err) = perf(&[
        "report",
        "-i",
        out.to_str().unwrap(),
        "--stdio",
        "--sort",
        "comm",
    ]);
    assert_perf_happy(&err);
    // perf counts the samples itself.
    let n: u64 = report
        .lines()
        .find_map(|l| l.strip_prefix("# Samples: "))
        .and_then(|s| s.split_whitespace().next())
        .map(|s| s.trim_end_matches('K').parse::<f64>().unwrap() as u64)
        .unwrap();
    assert!(n > 0, "{report}");
}

#[test]
fn existing_output_is_kept_as_old_and_new_one_is_private() {
    if !can_record() {
        return;
    }
    let dir = tmpdir("old");
    let out = dir.join("perf.data");
    std::fs::write(&out, b"previous recording").unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (code, err) = record(&["-a", "--duration", "0.2", "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let old = dir.join("perf.data.old");
    assert_eq!(std::fs::read(&old).unwrap(), b"previous recording");
    let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let (_, perr) = perf(&["report", "-i", out.to_str().unwrap(), "--stdio"]);
    assert_perf_happy(&perr);
}
