//! `bpfprof report --sort srcline`: user code's lines from DWARF against
//! `perf report --sort srcline` on the same perf recording (and against the
//! source: the hot loop's lines are marked in it), and a clang-built BPF
//! program's lines from its BTF against bpftool's line dump of the loaded
//! program and `bpfprof annotate`'s per-line counts.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A program whose time is in `spin`, on the lines marked `HOT`.
const HOT_C: &str = r#"#include <stdlib.h>
volatile unsigned long sink;

__attribute__((noinline)) static unsigned long spin(unsigned long n)
{
	unsigned long a = 0, b = 1;
	for (unsigned long i = 0; i < n; i++) { /* HOT */
		a += i * b; /* HOT */
		b ^= a >> 3; /* HOT */
	}
	return a + b;
}

int main(int argc, char **argv)
{
	sink = spin(strtoul(argv[1], NULL, 0));
	return 0;
}
"#;

/// One row of a flat table: percent, then each key's text.
#[derive(Debug, Clone)]
struct Row {
    percent: f64,
    keys: Vec<String>,
}

/// Rows of a flat text table whose keys are `nkeys` columns of one word
/// each, after `skip` count columns (perf: the percent; ours: percent and
/// samples).
fn parse_rows(text: &str, skip: usize, nkeys: usize) -> Vec<Row> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            if t.len() != skip + nkeys {
                return None;
            }
            Some(Row {
                percent: t[0].strip_suffix('%')?.parse().ok()?,
                keys: t[skip..].iter().map(|s| s.to_string()).collect(),
            })
        })
        .collect()
}

fn perf_rows(data: &Path, sort: &str) -> Vec<Row> {
    let text = support::stdout(
        Command::new("perf")
            .args(["report", "--stdio", "--no-children", "-g", "none", "--sort"])
            .arg(sort)
            .arg("-i")
            .arg(data),
    );
    parse_rows(&text, 1, sort.split(',').count())
}

fn our_rows(data: &Path, sort: &str) -> Vec<Row> {
    let text = support::stdout(
        support::bpfprof()
            .args(["report", "--sort", sort, "-i"])
            .arg(data),
    );
    parse_rows(&text, 2, sort.split(',').count())
}

/// Rows of at least 0.5% in either are in both, within 0.1 point.
fn assert_agree(ours: &[Row], perf: &[Row]) {
    for (a, b, who) in [(perf, ours, "ours"), (ours, perf, "perf's")] {
        for r in a.iter().filter(|r| r.percent >= 0.5) {
            let other = b
                .iter()
                .find(|x| x.keys == r.keys)
                .unwrap_or_else(|| panic!("{r:?} is missing from {who} report"));
            assert!(
                (other.percent - r.percent).abs() <= 0.1 + 1e-9,
                "{r:?} vs {other:?}: more than 0.1 point apart"
            );
        }
    }
}

#[test]
fn user_lines_agree_with_perf_and_land_on_the_hot_loop() {
    if !support::live(true) {
        return;
    }
    let Some(cc) = testkit::tool("cc") else {
        support::require(false, "needs cc (apt-get install gcc)");
        return;
    };
    // perf 6.1 aborts when BPF programs load while it records (the other
    // test loads one).
    let _one = support::one_at_a_time();
    let dir = support::tempdir();
    let src = support::path(&dir, "hot.c");
    std::fs::write(&src, HOT_C).unwrap();
    let bin = support::path(&dir, "hot");
    support::run(
        Command::new(cc)
            .args(["-g", "-O0", "-o"])
            .arg(&bin)
            .arg(&src),
    );
    let data = support::path(&dir, "perf.data");
    support::run(
        Command::new("perf")
            .args(["record", "-q", "-F", "1999", "-o"])
            .arg(&data)
            .arg("--")
            .arg(&bin)
            .arg("300000000")
            .stdout(Stdio::null()),
    );

    let ours = our_rows(&data, "srcline");
    assert_agree(&ours, &perf_rows(&data, "srcline"));
    assert_agree(
        &our_rows(&data, "dso,srcline"),
        &perf_rows(&data, "dso,srcline"),
    );

    // The source says where the time is: most of it on the HOT lines.
    let hot: BTreeSet<String> = HOT_C
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains("/* HOT */"))
        .map(|(i, _)| format!("hot.c:{}", i + 1))
        .collect();
    let hot_rows: Vec<f64> = ours
        .iter()
        .filter(|r| hot.contains(&r.keys[0]))
        .map(|r| r.percent)
        .collect();
    let on_hot: f64 = hot_rows.iter().sum();
    assert!(on_hot > 80.0, "{on_hot}% on {hot:?}: {ours:?}");

    // Keys that need a thread or CPU are refused, saying why.
    let out = support::bpfprof()
        .args(["report", "--sort", "comm,srcline", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("srcline") && err.contains("per address"),
        "{err}"
    );

    // JSON: the same rows.
    let v: Value = serde_json::from_str(&support::stdout(
        support::bpfprof()
            .args(["report", "--json", "--sort", "sym,srcline", "-i"])
            .arg(&data),
    ))
    .unwrap();
    let rows = v["rows"].as_array().unwrap();
    let spin_hot: f64 = rows
        .iter()
        .filter(|r| r["symbol"] == "spin" && hot.contains(r["srcline"].as_str().unwrap()))
        .map(|r| r["overhead"].as_f64().unwrap())
        .sum();
    // The text's percentages are rounded to 0.01: each row's by up to 0.005.
    let rounding = 0.005 * hot_rows.len() as f64 + 1e-9;
    assert!(
        (spin_hot - on_hot).abs() <= rounding,
        "{spin_hot} vs {on_hot} over {} rows",
        hot_rows.len()
    );
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The loader holding the program; killed and reaped when dropped, so
/// that a failing test unloads its program too.
struct Holder(Child);

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Poll `f` until it answers, for up to 30 s.
fn poll<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// bpftool's source lines of the loaded program (`file:line` by base name).
fn bpftool_lines(id: u32) -> BTreeSet<String> {
    let text = support::stdout(Command::new("bpftool").args([
        "prog",
        "dump",
        "xlated",
        "id",
        &id.to_string(),
        "linum",
    ]));
    text.lines()
        .filter_map(|l| {
            let (_, rest) = l.split_once("[file:")?;
            let (file, rest) = rest.split_once(" line_num:")?;
            let line = rest.split_whitespace().next()?;
            let base = Path::new(file).file_name()?.to_string_lossy().into_owned();
            Some(format!("{base}:{line}"))
        })
        .collect()
}

#[test]
fn bpf_lines_come_from_btf_as_annotate_and_bpftool_see_them() {
    if !support::live(false) {
        return;
    }
    let (Some(clang), Some(cc), Some(_)) = (
        testkit::tool("clang"),
        testkit::tool("cc"),
        testkit::tool("bpftool"),
    ) else {
        support::require(
            false,
            "needs clang, cc, libbpf and bpftool (apt-get install clang gcc libbpf-dev bpftool)",
        );
        return;
    };
    let _one = support::one_at_a_time();
    let dir = support::tempdir();
    let obj = support::path(&dir, "rawtp.bpf.o");
    // getpid rather than the fixture's getppid: other code than the A/B
    // test's (which loads the same fixture), so another tag and name.
    let getpid_nr = libc::SYS_getpid.to_string();
    support::run(
        Command::new(clang)
            .args(["-target", "bpf", "-O2", "-g", "-DCOST_RAWTP"])
            .arg(format!(
                "-I/usr/include/{}-linux-gnu",
                std::env::consts::ARCH
            ))
            .arg(format!("-DGETPPID_NR={getpid_nr}"))
            .arg("-c")
            .arg(fixture("cost_hash.bpf.c"))
            .arg("-o")
            .arg(&obj),
    );
    let loader = support::path(&dir, "cost_load");
    support::run(
        Command::new(cc)
            .args(["-O2", "-o"])
            .arg(&loader)
            .arg(fixture("cost_load.c"))
            .arg("-lbpf"),
    );
    let before: BTreeSet<u32> = bpfinfo::sys::prog_ids().filter_map(Result::ok).collect();
    let out = support::path(&dir, "load.out");
    let holder = Holder(
        Command::new(&loader)
            .arg(&obj)
            .stdin(Stdio::piped())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the loader"),
    );
    poll("the loader to attach", || {
        std::fs::read_to_string(&out)
            .ok()
            .filter(|s| s.contains("ready"))
    });
    let id = poll("the program's id", || {
        bpfinfo::sys::prog_ids()
            .filter_map(Result::ok)
            .filter(|id| !before.contains(id))
            .find(|&id| {
                bpfinfo::sys::fetch_prog(id, bpfinfo::sys::Capture::Summary)
                    .is_ok_and(|p| p.info.name == "cost_rawtp")
            })
    });
    let truth = bpftool_lines(id);
    assert!(!truth.is_empty(), "bpftool shows no lines for program {id}");
    let data = support::path(&dir, "bpf.data");
    support::record_while(&data, &["-a", "--duration", "2"], || {
        for _ in 0..1000 {
            // A getpid(2) call: the program counts them.
            std::hint::black_box(std::process::id());
        }
    });
    drop(holder);

    // annotate: the program's symbol in the recording; below, the same
    // samples per line, and its hottest instruction on a line of ours.
    let targets: Vec<Value> = serde_json::from_str(&support::stdout(
        support::bpfprof()
            .args(["annotate", "--json", "--prog", &id.to_string(), "-i"])
            .arg(&data),
    ))
    .unwrap();
    let t = &targets[0];
    // Our rows for the program, by the symbol annotate names.
    let v: Value = serde_json::from_str(&support::stdout(
        support::bpfprof()
            .args(["report", "--json", "--sort", "sym,srcline", "-i"])
            .arg(&data),
    ))
    .unwrap();
    let ours: BTreeMap<String, u64> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["symbol"] == t["symbol"])
        .map(|r| {
            (
                r["srcline"].as_str().unwrap().to_string(),
                r["samples"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(!ours.is_empty(), "no rows for {}: {v}", t["symbol"]);
    for line in ours.keys() {
        assert!(
            truth.contains(line),
            "{line} is not one of bpftool's {truth:?}"
        );
    }

    let lines = t["lines"].as_array().expect("annotate shows lines");
    let name = |l: &Value| {
        let f = Path::new(l["file"].as_str().unwrap()).file_name().unwrap();
        format!("{}:{}", f.to_string_lossy(), l["line"])
    };
    let theirs: BTreeMap<String, u64> = lines
        .iter()
        .filter(|l| l["samples"].as_u64() > Some(0))
        .map(|l| (name(l), l["samples"].as_u64().unwrap()))
        .collect();
    assert_eq!(ours, theirs, "per-line samples: ours vs annotate's");
    let hottest = t["insns"]
        .as_array()
        .unwrap()
        .iter()
        .max_by_key(|i| i["samples"].as_u64())
        .unwrap();
    let hot_line = name(&lines[hottest["line"].as_u64().unwrap() as usize]);
    assert!(
        ours[&hot_line] >= hottest["samples"].as_u64().unwrap(),
        "{hot_line} holds the hottest instruction: {ours:?}"
    );
}
