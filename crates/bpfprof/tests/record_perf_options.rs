//! `bpfprof record` takes perf record's options with perf's meaning; each
//! is checked against Linux perf's own view of the file we wrote
//! (`perf report --header-only`, `perf script -F cpu,tid`).

mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::*;

fn perf_out(args: &[&str], file: &Path) -> String {
    let o = run(Command::new("perf").args(args).arg("-i").arg(file));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn header(file: &Path) -> String {
    perf_out(&["report", "--header-only"], file)
}

/// The `# event :` line of the sampling event (the first one).
fn sampling_event_line(h: &str) -> String {
    h.lines()
        .find(|l| l.starts_with("# event :") && !l.contains("dummy"))
        .unwrap_or_else(|| panic!("no sampling event in the header:\n{h}"))
        .to_string()
}

/// A CPU-bound child that runs until dropped.
struct Spinner(Child);

impl Spinner {
    fn start() -> Spinner {
        Spinner(
            Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .expect("sh"),
        )
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn count_is_a_fixed_period_in_perfs_header() {
    if !live(true) {
        return;
    }
    let dir = tempdir();
    let f = path(&dir, "c.data");
    run(bpfprof()
        .args(["record", "-q", "-c", "10000", "-o"])
        .arg(&f)
        .args(["--", "sleep", "0.2"]));
    let h = header(&f);
    let ev = sampling_event_line(&h);
    // perf prints "freq = 1" only for frequency events.
    assert!(
        ev.contains("sample_freq } = 10000") && !ev.contains("freq = 1"),
        "{ev}"
    );
    let cmdline = h.lines().find(|l| l.starts_with("# cmdline")).unwrap();
    assert!(cmdline.contains("-c 10000"), "{cmdline}");

    let f2 = path(&dir, "f.data");
    run(bpfprof()
        .args(["record", "-q", "-F", "999", "-o"])
        .arg(&f2)
        .args(["--", "sleep", "0.2"]));
    let ev = sampling_event_line(&header(&f2));
    assert!(
        ev.contains("sample_freq } = 999") && ev.contains("freq = 1"),
        "{ev}"
    );
}

#[test]
fn all_cpus_with_a_command_records_everything_and_passes_the_exit_code() {
    if !live(true) {
        return;
    }
    let dir = tempdir();
    let f = path(&dir, "a.data");
    let spin = Spinner::start();
    let o = bpfprof()
        .args(["record", "-q", "-a", "-g", "-o"])
        .arg(&f)
        .args(["--", "sh", "-c", "sleep 0.5; exit 7"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(7), "{o:?}");
    let s = perf_out(&["script", "-F", "pid"], &f);
    // The spinner is not the command: only a system-wide recording has it.
    let pid = spin.0.id().to_string();
    assert!(
        s.lines().any(|l| l.trim() == pid),
        "no samples of the spinner {pid}"
    );
    let h = header(&f);
    let ev = sampling_event_line(&h);
    assert!(!ev.contains("enable_on_exec"), "{ev}");
}

#[test]
fn cpu_list_samples_only_those_cpus() {
    if !live(true) {
        return;
    }
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    if !require(
        online.trim() != "0",
        "needs two CPUs to tell -C from all CPUs",
    ) {
        return;
    }
    let dir = tempdir();
    let f = path(&dir, "C.data");
    let _a = Spinner::start();
    let _b = Spinner::start();
    run(bpfprof()
        .args(["record", "-q", "-C", "1", "--duration", "0.5", "-o"])
        .arg(&f));
    let s = perf_out(&["script", "-F", "cpu"], &f);
    let cpus: std::collections::BTreeSet<&str> = s.lines().map(str::trim).collect();
    assert_eq!(
        cpus.into_iter().collect::<Vec<_>>(),
        ["[001]"],
        "perf script -F cpu"
    );
}

#[test]
fn tid_samples_only_that_thread() {
    if !live(true) {
        return;
    }
    let dir = tempdir();
    let f = path(&dir, "t.data");
    let spin = Spinner::start();
    let _other = Spinner::start();
    let tid = spin.0.id().to_string();
    run(bpfprof()
        .args(["record", "-q", "-t", &tid, "--duration", "0.5", "-o"])
        .arg(&f));
    let s = perf_out(&["script", "-F", "tid"], &f);
    let tids: std::collections::BTreeSet<&str> = s.lines().map(str::trim).collect();
    assert_eq!(tids.into_iter().collect::<Vec<_>>(), [tid.as_str()]);
}

#[test]
fn compressed_files_are_read_by_perf_like_plain_ones() {
    if !live(true) {
        return;
    }
    let dir = tempdir();
    let f = path(&dir, "z.data");
    let _spin = Spinner::start();
    run(bpfprof()
        .args(["record", "-q", "-z", "-a", "-g", "--duration", "1", "-o"])
        .arg(&f));
    let h = header(&f);
    assert!(h.contains("# compressed : Zstd, level = 1"), "{h}");
    let o = Command::new("perf")
        .args(["script", "-F", "comm,tid,ip", "-i"])
        .arg(&f)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && !err.contains("decompress"), "{err}");
    let perf_samples = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.contains(" sh ") || l.trim_start().starts_with("sh "))
        .count();
    assert!(perf_samples > 0, "perf sees no samples of the spinner");
    // And our reader agrees with perf on the compressed file.
    let (ours_total, ours) = ours_flat(&f);
    assert_flat_agree(ours_total, &ours, &perf_flat(&f));
}

#[test]
fn options_perf_would_refuse_are_refused_by_name() {
    let o = bpfprof()
        .args(["record", "--frq", "99", "--", "true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("'--frq'") && err.contains("'--freq'"), "{err}");
    // Not a command named "-c": before, this exited 127.
    let o = bpfprof()
        .args(["record", "--call-graph", "dwarf", "--", "true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0));
    assert!(err.contains("--call-graph dwarf is not built"), "{err}");
}

/// An unknown option is an error that names it and, where one is close,
/// the option meant (clap's `suggestions`), exit 2; nothing is recorded
/// and no command is run. Run in an empty directory, so that a perf.data
/// written by mistake shows.
#[test]
fn unknown_options_are_named_with_the_nearest_and_exit_2() {
    let dir = tempdir();
    let run = |args: &[&str]| {
        let o = bpfprof()
            .current_dir(dir.path())
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?} printed {:?}", o.stdout);
        err
    };
    for (args, unknown, nearest) in [
        (
            &["record", "--cont", "5", "--", "true"][..],
            "'--cont'",
            Some("'--count'"),
        ),
        (&["record", "-Q", "--", "true"], "'-Q'", None),
        (&["report", "--sortt", "dso"], "'--sortt'", Some("'--sort'")),
        (&["annotate", "--sourc"], "'--sourc'", Some("'--source'")),
    ] {
        let err = run(args);
        assert!(
            err.contains(&format!("unexpected argument {unknown}")),
            "{args:?}: {err}"
        );
        if let Some(n) = nearest {
            assert!(
                err.contains(&format!("similar argument exists: {n}")),
                "{args:?}: {err}"
            );
        }
    }
    for sub in [
        "record", "report", "script", "annotate", "export", "top", "bpf",
    ] {
        let err = run(&[sub, "--no-such-option"]);
        assert!(err.contains("'--no-such-option'"), "{sub}: {err}");
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "files written: {left:?}");
}

#[test]
fn quiet_prints_nothing_on_success() {
    if !live(false) {
        return;
    }
    let dir = tempdir();
    let f = path(&dir, "q.data");
    let t = Instant::now();
    let o = bpfprof()
        .args(["record", "-q", "-o"])
        .arg(&f)
        .args(["--", "true"])
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stderr), "");
    assert!(t.elapsed() < Duration::from_secs(30));
}
