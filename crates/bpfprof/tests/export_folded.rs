//! `export --format folded` against perf: the same file's `perf script`
//! collapsed by `export_util::perf_folded` (stackcollapse-perf.pl's rules;
//! Debian packages neither it nor inferno-collapse-perf), the sample
//! total, and each BPF program's own samples as the BPF view counts them.

mod export_util;
mod support;

use std::collections::BTreeMap;

fn folded(file: &std::path::Path, extra: &[&str]) -> (BTreeMap<String, u64>, String) {
    let out = support::run(
        support::bpfprof()
            .args(["export", "--format", "folded", "-i"])
            .arg(file)
            .args(extra),
    );
    (
        export_util::parse_folded(&String::from_utf8_lossy(&out.stdout)),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn report_total(file: &std::path::Path) -> u64 {
    let (total, _) = support::ours_flat(file);
    total
}

#[test]
fn folded_stacks_agree_with_perf_script_and_the_bpf_view() {
    let dir = support::tempdir();
    let Some(data) = export_util::bpf_recording(&dir) else {
        return;
    };
    let (ours, _) = folded(&data, &[]);
    let total: u64 = ours.values().sum();
    assert_eq!(total, report_total(&data), "every sample once");

    let perf = export_util::perf_folded(&data);
    assert_eq!(perf.values().sum::<u64>(), total, "perf's sample count");
    // Symbol tables may differ on a few user frames (README: known
    // differences); nearly every stack must be perf's exactly.
    let same = export_util::common(&ours, &perf);
    assert!(
        same * 100 >= total * 95,
        "only {same} of {total} samples have perf's stack"
    );
    // Stacks through BPF code are all kernel frames: exactly perf's.
    let bpf = |m: &BTreeMap<String, u64>| -> BTreeMap<String, u64> {
        m.iter()
            .filter(|(s, _)| s.contains(";bpf_prog_"))
            .map(|(s, n)| {
                (
                    s.split_once(";entry_SYSCALL")
                        .map_or(s.as_str(), |x| x.1)
                        .to_string(),
                    *n,
                )
            })
            .fold(BTreeMap::new(), |mut a, (s, n)| {
                *a.entry(s).or_insert(0) += n;
                a
            })
    };
    assert!(!bpf(&ours).is_empty(), "the program was sampled");
    assert_eq!(bpf(&ours), bpf(&perf), "kernel stacks through BPF code");

    // Each sub-program's leaf samples are its own samples in the BPF
    // view (summed by name: programs loaded twice share their names).
    let mut leaves: BTreeMap<&str, u64> = BTreeMap::new();
    for (s, n) in &ours {
        let leaf = s.rsplit(';').next().unwrap();
        if is_bpf_function(leaf) {
            *leaves.entry(leaf).or_insert(0) += n;
        }
    }
    let subs = export_util::bpf_subprog_samples(&data);
    let hot = subs
        .iter()
        .find(|(n, _)| n.ends_with("_sys_enter_getpp"))
        .expect("the bpftrace program in the BPF view");
    assert!(*hot.1 > 0);
    for (name, own) in &subs {
        assert_eq!(
            leaves.get(name.as_str()).copied().unwrap_or(0),
            *own,
            "{name}"
        );
    }
    assert!(
        leaves.keys().all(|l| subs.contains_key(*l)),
        "every BPF leaf is a sub-program of the view: {leaves:?}"
    );

    // Filters as the report's: one process's stacks only.
    let pid = std::process::id().to_string();
    let (mine, _) = folded(&data, &["--pid", &pid]);
    assert!(!mine.is_empty());
    assert!(mine.len() < ours.len());
    assert!(mine.keys().all(|k| ours.contains_key(k)));
}

#[test]
fn a_recording_without_call_chains_exports_flat_with_a_note() {
    if !support::live(false) {
        return;
    }
    let dir = support::tempdir();
    let data = export_util::record(&dir, "flat.data", &[], 1);
    let (ours, note) = folded(&data, &[]);
    assert!(note.contains("no call chains"), "{note}");
    assert!(!ours.is_empty());
    assert!(
        ours.keys().all(|k| k.matches(';').count() == 1),
        "comm;frame lines only"
    );
    assert_eq!(ours.values().sum::<u64>(), report_total(&data));
    let out = support::tempdir();
    let file = support::path(&out, "out.folded");
    support::run(
        support::bpfprof()
            .args(["export", "--format", "folded", "-i"])
            .arg(&data)
            .arg("-o")
            .arg(&file),
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "profiles reveal addresses");
}

/// A BPF function's kernel name, `bpf_prog_<16 hex digits>_<name>`, and
/// not a kernel function that starts alike (`bpf_prog_get_stats`).
fn is_bpf_function(name: &str) -> bool {
    name.strip_prefix("bpf_prog_")
        .and_then(|r| r.get(..17))
        .is_some_and(|t| t.ends_with('_') && t[..16].bytes().all(|b| b.is_ascii_hexdigit()))
}
