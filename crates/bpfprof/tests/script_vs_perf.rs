//! `bpfprof script` against `perf script` on the same files, line for
//! line: a bpfprof recording and a perf recording with a BPF program
//! running (bpftrace on getppid), and one without call chains; and with
//! perf script's `--comm`, `--pid` and `--tid` filters.
//!
//! Every line must be perf's, except that a user frame's symbol may be
//! another name for the same address (identical code folded into one
//! function: which alias is shown differs for 1-2% of such names, README
//! → Known differences) or one perf leaves `[unknown]` (seen for a few
//! addresses in librustc_driver); its address and object must still be
//! perf's.

mod export_util;
mod support;

use std::path::Path;
use std::process::{Command, Stdio};

fn script(file: &Path) -> String {
    script_with(file, &[])
}

fn perf_script(file: &Path) -> String {
    perf_script_with(file, &[])
}

fn script_with(file: &Path, args: &[&str]) -> String {
    support::stdout(
        support::bpfprof()
            .arg("script")
            .args(args)
            .arg("-i")
            .arg(file),
    )
}

fn perf_script_with(file: &Path, args: &[&str]) -> String {
    support::stdout(
        Command::new("perf")
            .arg("script")
            .args(args)
            .arg("-i")
            .arg(file),
    )
}

/// Sample header lines' (command, thread id), from perf's output.
fn threads(perf: &str) -> Vec<(String, String)> {
    perf.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('\t'))
        .filter_map(|l| {
            let head = &l[..l.find(" [")?];
            let (comm, tid) = head.trim_end().rsplit_once(' ')?;
            Some((comm.trim().to_string(), tid.to_string()))
        })
        .collect()
}

/// The value seen most often.
fn most<'a>(values: impl Iterator<Item = &'a String>, but: &[&str]) -> String {
    let mut n: std::collections::BTreeMap<&String, usize> = Default::default();
    for v in values.filter(|v| !but.contains(&v.as_str()) && !v.contains(',')) {
        *n.entry(v).or_default() += 1;
    }
    n.into_iter()
        .max_by_key(|(_, c)| *c)
        .expect("samples")
        .0
        .clone()
}

/// `--comm` (two commands), `--pid` (this process, which called getppid
/// throughout), `--tid` and two together, each against perf's lines.
fn assert_filters_agree(file: &Path, perf_full: &str, what: &str) {
    let t = threads(perf_full);
    let first = most(t.iter().map(|x| &x.0), &[]);
    let second = most(t.iter().map(|x| &x.0), &[&first]);
    let tid = most(t.iter().map(|x| &x.1), &[]);
    let comms = format!("{first},{second}");
    let pid = std::process::id().to_string();
    // Both must hold: the thread's own command among others.
    let tid_comm = &t.iter().find(|x| x.1 == tid).expect("the thread").0;
    // (Not the same one twice: perf 6.1 then keeps nothing.)
    let other = if *tid_comm == first { &second } else { &first };
    let with_tid = format!("{tid_comm},{other}");
    for args in [
        vec!["--comm", &comms],
        vec!["--pid", &pid],
        vec!["--tid", &tid],
        vec!["--comm", &with_tid, "--tid", &tid],
    ] {
        let perf = perf_script_with(file, &args);
        assert!(
            perf.lines().count() > 10,
            "{what} {args:?}: perf keeps samples"
        );
        assert!(
            perf.len() < perf_full.len(),
            "{what} {args:?}: perf drops some"
        );
        let (n, _) = assert_same(
            &script_with(file, &args),
            &perf,
            &format!("{what} {args:?}"),
        );
        eprintln!("{what} {args:?}: {n} lines");
    }
}

/// A frame line's (header, address, object), for lines that may differ
/// in the symbol only: a call chain line (no header), or a sample line
/// without call chains (`comm tid [cpu] time: period event:  addr sym
/// (dso)`, whose header must then be equal too).
fn addr_and_object(line: &str) -> Option<(&str, &str, &str)> {
    let (head, frame) = match line.starts_with('\t') {
        true => ("", line),
        false => {
            let cpu = line.find("] ")?;
            let time = cpu + line[cpu..].find(": ")? + 2;
            let event = time + line[time..].find(": ")? + 2;
            line.split_at(event)
        }
    };
    let t = frame.trim_start();
    let (addr, rest) = t.split_once(' ')?;
    let dso = &rest[rest.rfind(" (")?..];
    Some((head, addr, dso))
}

/// Compare; returns how many lines were compared and how many were
/// user-frame aliases.
fn assert_same(ours: &str, perf: &str, what: &str) -> (usize, usize) {
    let (a, b): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), perf.lines().collect());
    assert_eq!(a.len(), b.len(), "{what}: line counts");
    let mut aliases = 0;
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        if x == y {
            continue;
        }
        let user = addr_and_object(x)
            .filter(|(_, addr, _)| u64::from_str_radix(addr, 16).is_ok_and(|v| v < 0xffff << 48));
        assert!(
            user.is_some() && user == addr_and_object(y),
            "{what}: line {}:\n ours: {x}\n perf: {y}",
            i + 1
        );
        aliases += 1;
    }
    assert!(
        aliases * 200 <= a.len(),
        "{what}: {aliases} alias lines of {}",
        a.len()
    );
    (a.len(), aliases)
}

fn bpf_lines(text: &str) -> usize {
    text.lines().filter(|l| l.contains(" bpf_prog_")).count()
}

#[test]
fn script_prints_perf_scripts_lines_for_bpfprof_and_perf_recordings() {
    let _serial = support::one_at_a_time();
    let dir = support::tempdir();
    let Some(ours_rec) = export_util::bpf_recording(&dir) else {
        return;
    };
    let ours = script(&ours_rec);
    assert!(bpf_lines(&ours) > 0, "BPF frames in the bpfprof recording");
    let perf = perf_script(&ours_rec);
    let (n, aliases) = assert_same(&ours, &perf, "bpfprof recording");
    eprintln!("bpfprof recording: {n} lines, {aliases} user aliases");
    assert_filters_agree(&ours_rec, &perf, "bpfprof recording");

    // perf's own recording of the same kind of workload.
    let perf_rec = support::path(&dir, "perf.data");
    {
        let _bt = export_util::bpftrace();
        let mut rec = Command::new("perf")
            .args(["record", "-a", "-g", "-o"])
            .arg(&perf_rec)
            .args(["--", "sleep", "2"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        while rec.try_wait().unwrap().is_none() {
            for _ in 0..10_000 {
                // parent_id is getppid(2): one syscall a call (glibc caches nothing).
                std::hint::black_box(std::os::unix::process::parent_id());
            }
        }
    }
    let ours = script(&perf_rec);
    assert!(bpf_lines(&ours) > 0, "BPF frames in the perf recording");
    let perf = perf_script(&perf_rec);
    let (n, aliases) = assert_same(&ours, &perf, "perf recording");
    eprintln!("perf recording: {n} lines, {aliases} user aliases");
    assert_filters_agree(&perf_rec, &perf, "perf recording");
}

#[test]
fn script_without_call_chains_prints_one_line_per_sample() {
    let _serial = support::one_at_a_time();
    if !support::live(true) {
        return;
    }
    let dir = support::tempdir();
    let flat = export_util::record(&dir, "flat.data", &[], 1);
    let ours = script(&flat);
    assert!(ours.lines().all(|l| !l.starts_with('\t')));
    let (n, aliases) = assert_same(&ours, &perf_script(&flat), "flat recording");
    eprintln!("flat recording: {n} lines, {aliases} user aliases");
}

/// `perf record -q ARGS -o OUT -- sh -c SCRIPT`, which must succeed.
fn perf_record(out: &Path, args: &[&str], script: &str) {
    let status = Command::new("perf")
        .args(["record", "-q"])
        .args(args)
        .arg("-o")
        .arg(out)
        .args(["--", "sh", "-c", script])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("perf runs");
    assert!(status.success(), "perf record {args:?} -- sh -c {script:?}");
}

/// perf script prints every event's samples, in time order, each event's
/// name right-aligned to the longest in the file: a recording of two
/// software events with call chains must give perf's lines for both.
#[test]
fn script_prints_every_events_samples() {
    let _serial = support::one_at_a_time();
    if !support::live(true) {
        return;
    }
    let dir = support::tempdir();
    let two = support::path(&dir, "two.data");
    perf_record(
        &two,
        &["-g", "-e", "cpu-clock", "-e", "page-faults"],
        "for i in 1 2 3; do ls -R /usr/lib >/dev/null; done",
    );
    let perf = perf_script(&two);
    let events = |text: &str, name: &str| {
        text.lines()
            .filter(|l| !l.starts_with('\t') && l.contains(&format!(" {name}: ")))
            .count()
    };
    assert!(events(&perf, "page-faults") > 0, "perf shows page faults");
    assert!(events(&perf, "cpu-clock") > 0, "perf shows cpu-clock");
    let ours = script(&two);
    assert_eq!(events(&ours, "page-faults"), events(&perf, "page-faults"));
    let (n, aliases) = assert_same(&ours, &perf, "two-event recording");
    eprintln!("two-event recording: {n} lines, {aliases} user aliases");
}

/// A tracepoint event's samples are perf's decoded fields, which bpfprof
/// does not decode: they are left out, and standard error says how many;
/// every other line is still perf's.
#[test]
fn script_leaves_out_tracepoint_samples_and_says_how_many() {
    let _serial = support::one_at_a_time();
    if !support::live(true) {
        return;
    }
    let dir = support::tempdir();
    let tp = support::path(&dir, "tp.data");
    perf_record(
        &tp,
        &["-e", "cpu-clock", "-e", "sched:sched_switch"],
        "for i in 1 2 3; do ls -R /usr/lib >/dev/null; sleep 0.01; done",
    );
    let perf = perf_script(&tp);
    let is_tp = |l: &&str| l.contains(" sched:sched_switch: ");
    let switches = perf.lines().filter(is_tp).count();
    assert!(switches > 0, "perf shows context switches");
    let rest: String = perf
        .lines()
        .filter(|l| !is_tp(l))
        .map(|l| format!("{l}\n"))
        .collect();
    let out = support::run(support::bpfprof().arg("script").arg("-i").arg(&tp));
    let ours = String::from_utf8_lossy(&out.stdout);
    assert_same(&ours, &rest, "cpu-clock beside a tracepoint");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "{switches} samples of the tracepoint event sched:sched_switch not printed"
        )),
        "standard error: {err}"
    );
}
