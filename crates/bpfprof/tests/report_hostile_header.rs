//! Hostile copies of real files (one perf wrote, one we wrote): a header
//! whose data section or a feature section lies outside the file is an
//! error naming the section and its offset, never an empty report with
//! exit 0 (which four changed bytes used to give).

mod support;

use std::path::Path;
use std::process::Command;

use support::*;

fn le64(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}

fn put64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// `bpfprof report` on `bytes`: (exit code, stdout, stderr).
fn report(dir: &Path, name: &str, bytes: &[u8]) -> (i32, String, String) {
    let f = dir.join(name);
    std::fs::write(&f, bytes).unwrap();
    let o = bpfprof()
        .args(["report", "--stdio", "-i"])
        .arg(&f)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn check(dir: &Path, tag: &str, good: &[u8]) {
    let (code, out, err) = report(dir, &format!("{tag}-good.data"), good);
    assert_eq!(code, 0, "{tag}: the unchanged copy: {err}");
    assert!(out.contains("Samples"), "{tag}: {out}");

    let len = good.len() as u64;
    let (data_off, data_size) = (le64(good, 40), le64(good, 48));
    let index = (data_off + data_size) as usize;
    let mut cases: Vec<(String, Vec<u8>, String)> = Vec::new();
    // The case: the low four bytes of the data offset changed.
    let mut m = good.to_vec();
    m[40..44].copy_from_slice(&((len as u32) + 64).to_le_bytes());
    cases.push(("data offset".into(), m, "data section".into()));
    let mut m = good.to_vec();
    put64(&mut m, 48, len * 2);
    cases.push(("data size".into(), m, "data section".into()));
    let mut m = good.to_vec();
    put64(&mut m, 48, u64::MAX - 7);
    cases.push(("data size overflow".into(), m, "data section".into()));
    // The first feature section (HOSTNAME or BUILD_ID...) moved past the end.
    let mut m = good.to_vec();
    put64(&mut m, index, len + 4096);
    cases.push(("feature offset".into(), m, "feature".into()));
    let mut m = good.to_vec();
    put64(&mut m, index + 8, len);
    cases.push(("feature size".into(), m, "feature".into()));
    // The feature index itself cut off: data said to end 8 bytes short of
    // the file's end.
    let mut m = good.to_vec();
    put64(&mut m, 48, len - data_off - 8);
    cases.push(("feature index".into(), m, "feature index".into()));

    for (what, bytes, names) in cases {
        let (code, out, err) = report(
            dir,
            &format!("{tag}-{}.data", what.replace(' ', "-")),
            &bytes,
        );
        assert_ne!(code, 0, "{tag}, {what}: exit 0 with\n{out}\n{err}");
        assert!(
            err.contains(names.as_str()) && err.contains("outside") && err.contains("0x"),
            "{tag}, {what}: the message names neither section nor offset: {err}"
        );
        assert!(!out.contains("no samples"), "{tag}, {what}: {out}");
    }
}

#[test]
fn sections_outside_a_perf_file_are_errors() {
    if !live(true) {
        return;
    }
    let dir = tempdir();
    let f = path(&dir, "perf.data");
    run(Command::new("perf")
        .args(["record", "-q", "-a", "-o"])
        .arg(&f)
        .args(["--", "sleep", "0.3"]));
    check(dir.path(), "perf", &std::fs::read(&f).unwrap());
}

#[test]
fn sections_outside_a_bpfprof_file_are_errors() {
    if !live(false) {
        return;
    }
    let dir = tempdir();
    let f = path(&dir, "ours.data");
    run(bpfprof()
        .args(["record", "-q", "-a", "--duration", "0.3", "-o"])
        .arg(&f));
    check(dir.path(), "bpfprof", &std::fs::read(&f).unwrap());
}
