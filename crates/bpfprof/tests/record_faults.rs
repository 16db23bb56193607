//! Recording on machines that break it: SIGKILL mid-run, rings that
//! overflow, users without root, and the sysctls and mounts that restrict
//! profiling. Oracles: Linux perf reading the same file, and the kernel's
//! own settings; sysctls are restored by a Drop guard even when a test
//! fails.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::*;

use testkit::Sysctl;

struct Spinners(Vec<Child>);

impl Spinners {
    fn start(n: usize) -> Spinners {
        Spinners(
            (0..n)
                .map(|_| {
                    Command::new("sh")
                        .args(["-c", "while :; do :; done"])
                        .spawn()
                        .unwrap()
                })
                .collect(),
        )
    }
}

impl Drop for Spinners {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn data_size_field(f: &Path) -> u64 {
    std::fs::read(f)
        .ok()
        .filter(|b| b.len() >= 56)
        .map_or(0, |b| u64::from_le_bytes(b[48..56].try_into().unwrap()))
}

#[test]
fn sigkill_leaves_a_file_readable_up_to_the_last_checkpoint() {
    let _serial = support::one_at_a_time();
    if !live(true) {
        return;
    }
    let dir = tempdir();
    let f = path(&dir, "k.data");
    let _load = Spinners::start(1);
    let mut rec = bpfprof()
        .args(["record", "-q", "-a", "-g", "-o"])
        .arg(&f)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The first checkpoint is after start-up; wait for a later one, which
    // holds samples, by watching the header's data size grow.
    let deadline = Instant::now() + Duration::from_secs(30);
    let first = loop {
        let n = data_size_field(&f);
        if n > 0 {
            break n;
        }
        assert!(Instant::now() < deadline, "no checkpoint in 30 s");
        std::thread::sleep(Duration::from_millis(20));
    };
    while data_size_field(&f) <= first {
        assert!(Instant::now() < deadline, "no second checkpoint in 30 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    rec.kill().unwrap();
    rec.wait().unwrap();
    let (ours_total, ours) = ours_flat(&f);
    assert!(ours_total > 0, "no samples before the kill");
    assert_flat_agree(ours_total, &ours, &perf_flat(&f));
}

#[test]
fn ring_overflow_is_written_as_lost_records_and_reported() {
    let _serial = support::one_at_a_time();
    if !live(true) {
        return;
    }
    let dir = tempdir();
    let f = path(&dir, "l.data");
    let _load = Spinners::start(2);
    // One data page per CPU at 50 kHz with call chains: the kernel drops
    // records between two of our reads.
    run(bpfprof()
        .args([
            "record",
            "-q",
            "-a",
            "-g",
            "-F",
            "50000",
            "-m",
            "1",
            "--duration",
            "2",
            "-o",
        ])
        .arg(&f));
    let dump = stdout(Command::new("perf").args(["script", "-D", "-i"]).arg(&f));
    let perf_lost: u64 = dump
        .lines()
        .filter(|l| l.contains("PERF_RECORD_LOST:"))
        .filter_map(|l| l.rsplit("lost:").next()?.trim().parse::<u64>().ok())
        .sum();
    // perf -D prints no count for LOST_SAMPLES; its report sums them.
    let perf_report = stdout(
        Command::new("perf")
            .args(["report", "--stdio", "-i"])
            .arg(&f),
    );
    let perf_lost_samples: u64 = perf_report
        .lines()
        .find_map(|l| l.strip_prefix("# Total Lost Samples:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("perf report's Total Lost Samples");
    if !require(
        perf_lost + perf_lost_samples > 0,
        "the ring did not overflow at 50 kHz with one page (a fast machine?)",
    ) {
        return;
    }
    let report = stdout(bpfprof().args(["report", "--stdio", "-i"]).arg(&f));
    let line = report
        .lines()
        .find(|l| l.starts_with("# Lost:"))
        .unwrap_or_else(|| panic!("no Lost line:\n{report}"));
    let plural = |n: u64, one: &str| {
        if n == 1 {
            format!("{n} {one}")
        } else {
            format!("{n} {one}s")
        }
    };
    assert_eq!(
        line,
        format!(
            "# Lost: {}, {}",
            plural(perf_lost, "record"),
            plural(perf_lost_samples, "sample")
        ),
        "perf script -D counts"
    );
}

/// A copy of bpfprof that the nobody user can run (made once: a copy
/// being written while another test thread forks is "Text file busy"),
/// and a directory it can write to.
fn nobody_setup(dir: &tempfile::TempDir) -> (PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    static BIN: std::sync::OnceLock<(tempfile::TempDir, PathBuf)> = std::sync::OnceLock::new();
    let (_, bin) = BIN.get_or_init(|| {
        let d = tempdir();
        let bin = d.path().join("bpfprof");
        std::fs::copy(env!("CARGO_BIN_EXE_bpfprof"), &bin).unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        (d, bin)
    });
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    (bin.clone(), dir.path().join("n.data"))
}

/// Run `bpfprof record -a` as uid/gid 65534 with `caps` (setpriv syntax,
/// e.g. "+perfmon,+bpf"; empty for none).
fn record_as_nobody(bin: &Path, out: &Path, caps: &str) -> Output {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
        if !caps.is_empty() {
            c.arg(format!("--inh-caps={caps}"))
                .arg(format!("--ambient-caps={caps}"));
        }
        c.arg(bin)
            .args(["record", "-a", "--duration", "0.3", "-o"])
            .arg(out);
        let o = c.output().unwrap();
        // The copy may still be open for writing in a child another test
        // thread forked while it was made; that child execs soon.
        let busy = String::from_utf8_lossy(&o.stderr).contains("Text file busy");
        if !busy || Instant::now() > deadline {
            return o;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn has_setpriv() -> bool {
    Command::new("setpriv")
        .arg("--help")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn a_user_with_perfmon_and_bpf_records_and_is_told_sys_admin_is_missing() {
    let _serial = support::one_at_a_time();
    if !live(true) || !require(has_setpriv(), "needs setpriv (util-linux)") {
        return;
    }
    let dir = tempdir();
    let (bin, out) = nobody_setup(&dir);
    let o = record_as_nobody(&bin, &out, "+perfmon,+bpf");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    // What the capabilities allow: a system-wide profile perf reads.
    let (total, _) = ours_flat(&out);
    assert!(total > 0, "{err}");
    // perf refuses files of other users unless forced.
    run(Command::new("perf").args(["script", "-f", "-i"]).arg(&out));
    // What they do not: listing other programs needs CAP_SYS_ADMIN.
    assert!(
        err.contains("lacks CAP_SYS_ADMIN (it has CAP_PERFMON, CAP_BPF)"),
        "{err}"
    );
    assert!(!err.contains("grant CAP_BPF and CAP_PERFMON"), "{err}");
}

#[test]
fn a_user_without_capabilities_is_told_perfmon_is_missing() {
    let _serial = support::one_at_a_time();
    if !live(true) || !require(has_setpriv(), "needs setpriv (util-linux)") {
        return;
    }
    let dir = tempdir();
    let (bin, out) = nobody_setup(&dir);
    let paranoid = Sysctl::set("kernel.perf_event_paranoid", "2");
    let o = record_as_nobody(&bin, &out, "");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("perf_event_paranoid is 2") && err.contains("lacks CAP_PERFMON"),
        "{err}"
    );
    // paranoid 3 (Debian's "no perf for the unprivileged"): said as such.
    drop(paranoid);
    let _p = Sysctl::set("kernel.perf_event_paranoid", "3");
    let o = record_as_nobody(&bin, &out, "");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("perf_event_paranoid is 3")
            && err.contains("refuses perf_event_open to anyone without CAP_PERFMON")
            && err.contains("lacks CAP_PERFMON"),
        "{err}"
    );
}

#[test]
fn unprivileged_bpf_disabled_is_named_for_a_user_without_cap_bpf() {
    let _serial = support::one_at_a_time();
    if !live(true) || !require(has_setpriv(), "needs setpriv (util-linux)") {
        return;
    }
    let dir = tempdir();
    let (bin, out) = nobody_setup(&dir);
    // 2 can be set and undone (1 cannot be undone without a reboot).
    let now = std::fs::read_to_string("/proc/sys/kernel/unprivileged_bpf_disabled").unwrap();
    let _guard = (now.trim() != "1").then(|| Sysctl::set("kernel.unprivileged_bpf_disabled", "2"));
    let o = record_as_nobody(&bin, &out, "+perfmon");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("unprivileged_bpf_disabled") && err.contains("lacks CAP_SYS_ADMIN"),
        "{err}"
    );
}

#[test]
fn kptr_restrict_2_is_said_in_a_sentence() {
    let _serial = support::one_at_a_time();
    if !live(false) {
        return;
    }
    let dir = tempdir();
    let f = path(&dir, "k.data");
    let o = {
        let _k = Sysctl::set("kernel.kptr_restrict", "2");
        bpfprof()
            .args(["record", "-a", "--duration", "0.2", "-o"])
            .arg(&f)
            .output()
            .unwrap()
    };
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("kernel.kptr_restrict is 2") && err.contains("kptr_restrict=1"),
        "{err}"
    );
}

#[test]
fn missing_tracefs_is_said_in_a_sentence() {
    let _serial = support::one_at_a_time();
    if !live(false) {
        return;
    }
    let dir = tempdir();
    let f = path(&dir, "t.data");
    // A private mount namespace: the rest of the machine keeps tracefs.
    let script = format!(
        "umount /sys/kernel/debug/tracing 2>/dev/null; umount /sys/kernel/tracing 2>/dev/null; \
         test -e /sys/kernel/tracing/events && exit 99; \
         exec {} record -a --duration 0.2 -o {}",
        env!("CARGO_BIN_EXE_bpfprof"),
        f.display()
    );
    let o = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &script])
        .output()
        .unwrap();
    if !require(
        o.status.code() != Some(99),
        "cannot unmount tracefs in a mount namespace",
    ) {
        return;
    }
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("tracefs is not mounted"), "{err}");
}

/// The kernel lowers `perf_event_max_sample_rate` by itself on a busy
/// machine, and refuses a higher -F with EINVAL. perf lowers the frequency
/// and says so; so must record. Oracle: perf's own reading of the file's
/// event attributes.
#[test]
fn a_frequency_over_the_kernels_maximum_is_lowered_and_said() {
    let _serial = support::one_at_a_time();
    if !live(true) {
        return;
    }
    let dir = tempdir();
    let max: u64 = std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let low = (max / 4).clamp(100, 1000);
    let _rate = Sysctl::set("kernel.perf_event_max_sample_rate", &low.to_string());
    for (args, said) in [
        (&["-F", "5000"][..], "-F 5000 is over the kernel's maximum"),
        (&[][..], "lowering the default frequency from 4000"),
    ] {
        let f = path(&dir, "low.data");
        let o = bpfprof()
            .args(["record", "-a", "--duration", "0.3", "-o"])
            .arg(&f)
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "record {args:?}: {err}");
        assert!(
            err.contains(said) && err.contains("perf_event_max_sample_rate"),
            "record {args:?} did not say why it lowered the rate: {err}"
        );
        let evlist = support::stdout(Command::new("perf").args(["evlist", "-v", "-i"]).arg(&f));
        let first = evlist.lines().next().unwrap_or_default();
        assert!(
            first.contains(&format!("sample_freq }}: {low}"))
                || first.contains(&format!("sample_freq: {low}")),
            "record {args:?} under a maximum of {low} Hz: perf evlist -v says {first}"
        );
    }
}
