//! `bpfprof report` against `perf report` beyond the flat table
//! (report_vs_perf.rs): `--children` and `-g` on a `perf record -g` file,
//! `--sort comm|pid|bpf_prog`, the `--comm/--pid/--dso` filters,
//! `--percent-limit`, `--json`, an empty profile, and files that are not
//! (whole) perf.data.

mod support;

mod annotate_util;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use annotate_util::Recording;
use serde_json::Value;

static REC: OnceLock<Recording> = OnceLock::new();

/// `perf record -a -g -F 2999` of a generated program called through
/// getpid from a thread of this test; the program is unloaded afterwards.
fn rec() -> Option<&'static Recording> {
    annotate_util::shared(&REC, || {
        annotate_util::record_with_perf("rep_live", 5, &["-g"])
    })
}

/// A report row: key columns joined by " | ", with percentages.
#[derive(Debug, Clone)]
struct Row {
    key: String,
    pct: f64,
    children: Option<f64>,
    samples: u64,
}

/// `perf report --stdio -n -g none --sort KEYS ARGS` rows. Only keys whose
/// cells have no spaces except the last are supported (dso,sym; comm;
/// pid).
fn perf_rows(file: &Path, sort: &str, children: bool, args: &[&str]) -> Vec<Row> {
    let mut cmd = Command::new("perf");
    cmd.args(["report", "--stdio", "-n", "-g", "none", "--sort", sort])
        .arg(if children {
            "--children"
        } else {
            "--no-children"
        })
        .args(args)
        .arg("-i")
        .arg(file);
    let text = support::stdout(&mut cmd);
    let nkeys = sort.split(',').count();
    // With one dso kept, perf leaves the dso column out.
    let only_dso = args
        .iter()
        .position(|a| *a == "--dsos")
        .map(|i| args[i + 1])
        .filter(|d| !d.contains(','));
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            let pct = |s: &str| s.strip_suffix('%')?.parse::<f64>().ok();
            let (children, pct0, rest) = if children {
                (Some(pct(t.first()?)?), pct(t.get(1)?)?, &t[2..])
            } else {
                (None, pct(t.first()?)?, &t[1..])
            };
            let samples = rest.first()?.parse().ok()?;
            let cells = &rest[1..];
            let key = if sort == "pid" {
                // "  1234:comm with spaces": the id (ours gives the comm
                // only with --sort comm in JSON).
                let joined = cells.join(" ");
                joined.split_once(':')?.0.trim().to_string()
            } else if nkeys == 1 {
                cells.join(" ")
            } else if let (Some(dso), Some(&"[k]" | &"[.]")) = (only_dso, cells.first()) {
                format!("{dso} | {}", cells.join(" "))
            } else {
                // dso, then "[k] sym with spaces"
                format!("{} | {}", cells.first()?, cells[1..].join(" "))
            };
            Some(Row {
                key,
                pct: pct0,
                children,
                samples,
            })
        })
        .collect()
}

/// `bpfprof report --json --sort KEYS ARGS` as (total samples, rows),
/// with `--no-children` unless ARGS say `--children`, as [`perf_rows`]
/// passes one or the other.
fn our_rows(file: &Path, sort: &str, args: &[&str]) -> (u64, Vec<Row>, Value) {
    let children = match args.contains(&"--children") {
        true => None,
        false => Some("--no-children"),
    };
    our_rows_as_given(file, sort, &[children.as_slice(), args].concat())
}

/// `bpfprof report --json --sort KEYS ARGS` as (total samples, rows).
fn our_rows_as_given(file: &Path, sort: &str, args: &[&str]) -> (u64, Vec<Row>, Value) {
    let text = support::stdout(
        support::bpfprof()
            .args(["report", "--json", "--sort", sort])
            .args(args)
            .arg("-i")
            .arg(file),
    );
    let v: Value = serde_json::from_str(&text).expect("report --json is JSON");
    let rows = v["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            let key = match sort {
                "comm" => r["comm"].as_str().unwrap().to_string(),
                "pid" => r["pid"].to_string(),
                "tid" => r["tid"].to_string(),
                "bpf_prog" => r["bpf_prog_id"].to_string(),
                _ => format!(
                    "{} | [{}] {}",
                    r["dso"].as_str().unwrap(),
                    if r["kernel"].as_bool().unwrap() {
                        'k'
                    } else {
                        '.'
                    },
                    r["symbol"].as_str().unwrap()
                ),
            };
            Row {
                key,
                pct: r["overhead"].as_f64().unwrap(),
                children: r["children"].as_f64(),
                samples: r["samples"].as_u64().unwrap(),
            }
        })
        .collect();
    (v["samples"].as_u64().unwrap(), rows, v)
}

/// Rows with the same printed key summed: perf merges entries by the
/// dso's short name (two binaries named alike, e.g. one rebuilt while
/// another copy ran, are one row), bpfprof keeps them apart.
///
/// Keys are compared without whitespace: C++ names demangle with `> >` in
/// perf and `>>` in bpfprof (seen in libLLVM's template names).
fn merged(rows: &[Row]) -> BTreeMap<String, Row> {
    let mut out: BTreeMap<String, Row> = BTreeMap::new();
    for r in rows {
        out.entry(squeeze(&r.key))
            .and_modify(|m| {
                m.pct += r.pct;
                m.samples += r.samples;
                m.children = match (m.children, r.children) {
                    (Some(a), Some(b)) => Some(a + b),
                    (a, b) => a.or(b),
                };
            })
            .or_insert_with(|| r.clone());
    }
    out
}

fn squeeze(s: &str) -> String {
    s.split_whitespace().collect()
}

/// A symbol perf could not resolve, printed as an address. In children
/// rows perf prints a callchain entry's absolute address but a sampled
/// ip's map-relative one (so one instruction can be two rows); bpfprof
/// prints the map-relative one for both, so these rows are not compared.
fn unresolved(key: &str) -> bool {
    let sym = key.rsplit(" | ").next().unwrap_or(key);
    let addr = sym
        .trim_start_matches("[k] ")
        .trim_start_matches("[.] ")
        .trim_start_matches("0x");
    !addr.is_empty() && addr.chars().all(|c| c.is_ascii_hexdigit())
}

/// The agreement rule: every row at or above 0.5% (self, and children
/// when shown) in either report is in the other within 0.1 point.
fn assert_agree(what: &str, ours: &[Row], perf: &[Row]) {
    let by_key = |rows: &[Row]| merged(rows);
    let (o, p) = (by_key(ours), by_key(perf));
    for (a, b, who) in [(&p, &o, "ours"), (&o, &p, "perf's")] {
        for (k, r) in a.iter() {
            let big = r.pct >= 0.5 || r.children.is_some_and(|c| c >= 0.5);
            if !big || (r.children.is_some() && unresolved(&r.key)) {
                continue;
            }
            let other = b
                .get(k)
                .unwrap_or_else(|| panic!("{what}: {r:?} is missing from {who} report"));
            assert!(
                (other.pct - r.pct).abs() <= 0.1 + 1e-9,
                "{what}: {r:?} vs {other:?}: self more than 0.1 point apart"
            );
            if let (Some(x), Some(y)) = (r.children, other.children) {
                assert!(
                    (x - y).abs() <= 0.1 + 1e-9,
                    "{what}: {r:?} vs {other:?}: children more than 0.1 point apart"
                );
            }
        }
    }
}

/// The sub-program names the recording gives our program.
fn our_names(r: &Recording) -> Vec<String> {
    let ks = annotate_util::perf_ksymbols(&r.data);
    r.live
        .info
        .jited_ksyms
        .iter()
        .map(|a| {
            ks.iter()
                .find(|k| k.0 == *a)
                .expect("perf has a KSYMBOL for each sub-program")
                .1
                .clone()
        })
        .collect()
}

#[test]
fn children_agree_with_perf_and_run_through_the_bpf_frame() {
    let Some(r) = rec() else { return };
    let perf = perf_rows(&r.data, "dso,sym", true, &[]);
    let (_, ours, _) = our_rows(&r.data, "dso,sym", &["--children"]);
    assert!(ours.iter().all(|x| x.children.is_some()));
    assert_agree("--children", &ours, &perf);

    // The stacks of the program's samples: its main function calls `work`;
    // the tracepoint runs it from the getpid system call, made by libc's
    // getpid from this test's thread. (Frame-pointer chains skip the
    // test's own Rust frames, built without frame pointers: perf and we
    // go from __getpid straight to libc's start_thread.)
    let names = our_names(r);
    let find = |key: &str| {
        ours.iter()
            .find(|x| x.key == key)
            .unwrap_or_else(|| panic!("no row {key}"))
            .clone()
    };
    let work = find(&format!("{0} | [k] {0}", names[1]));
    let main = find(&format!("{0} | [k] {0}", names[0]));
    assert!(work.pct >= 1.0, "the loop is hot: {work:?}");
    // A sample in `work`'s prologue, before it sets its frame pointer,
    // unwinds straight past its caller (perf shows the same stacks: seen
    // at work+0x2b, one sample in ~6500), so the caller may miss a few.
    for caller in [
        main.clone(),
        find("[kernel.kallsyms] | [k] trace_call_bpf"),
        find("[kernel.kallsyms] | [k] do_syscall_64"),
    ] {
        assert!(
            caller.children.unwrap() + 0.1 >= work.pct,
            "{caller:?} includes the samples of {work:?}"
        );
    }
    let getpid = ours
        .iter()
        .find(|x| x.key.ends_with("[.] __getpid") || x.key.ends_with("[.] getpid"))
        .unwrap_or_else(|| panic!("no libc getpid row"));
    assert!(
        getpid.children.unwrap() >= work.pct * 0.9,
        "{getpid:?} vs {work:?}"
    );
    // Whether a chain reaches libc's start_thread depends on what the
    // test's code (built without frame pointers) left in the frame pointer
    // register, which changes from build to build: checked when perf's own
    // report reaches it, and then ours must too.
    let thread = "libc.so.6 | [.] start_thread";
    match perf.iter().find(|x| x.key == thread) {
        Some(theirs) if theirs.children.unwrap_or(0.0) >= work.pct * 0.9 => {
            let ours = find(thread);
            assert!(
                ours.children.unwrap() >= work.pct * 0.9,
                "{ours:?} vs {work:?}"
            );
        }
        _ => eprintln!("perf's chains do not reach {thread} in this build: not checked"),
    }
}

/// The frames of the call graph printed under the row `key` (callee or
/// caller order), in print order.
fn graph_under(out: &str, row_suffix: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut inside = false;
    for l in out.lines() {
        if l.starts_with('#') {
            continue;
        }
        let graph = l.starts_with("            ");
        if !graph && !l.trim().is_empty() {
            inside = l.trim_end().ends_with(row_suffix);
            continue;
        }
        if inside && graph {
            let name = l.trim();
            let name = match name.rsplit_once("%--") {
                Some((_, n)) => n,
                None => name,
            };
            names.push(name.to_string());
        }
    }
    names
}

#[test]
fn call_graphs_callee_and_caller_order() {
    let Some(r) = rec() else { return };
    let names = our_names(r);
    let row = format!("[k] {}", names[1]);
    let mut pos = BTreeMap::new();
    for order in ["callee", "caller"] {
        let out = support::stdout(
            support::bpfprof()
                .args(["report", "--stdio", "--sort", "dso,sym", "-g", order])
                .arg("-i")
                .arg(&r.data),
        );
        let g = graph_under(&out, &row);
        assert!(!g.is_empty(), "no graph under {row} ({order}):\n{out}");
        let at = |n: &str| {
            g.iter()
                .position(|x| x == n)
                .unwrap_or_else(|| panic!("{n} not in the {order} graph of {row}: {g:?}"))
        };
        let chain = [
            at(&names[0]),
            at("trace_call_bpf"),
            at("do_syscall_64"),
            g.iter()
                .position(|x| x == "__getpid" || x == "getpid")
                .unwrap_or_else(|| panic!("getpid not in {g:?}")),
        ];
        pos.insert(order, chain);
    }
    let callee = pos["callee"];
    let caller = pos["caller"];
    assert!(
        callee.windows(2).all(|w| w[0] < w[1]),
        "callee order goes up the stack: {callee:?}"
    );
    assert!(
        caller.windows(2).all(|w| w[0] > w[1]),
        "caller order goes down the stack: {caller:?}"
    );
}

/// perf's `-g none`, typed from habit, is the table without graphs: with
/// and without `--children`, as perf shows it; perf's `-G` is
/// `-g caller`, and its `-n` is our default.
#[test]
fn perf_habits_g_none_inverted_and_n() {
    let Some(r) = rec() else { return };
    // The BPF summary differs on purpose: without call chains (`-g none`)
    // it can show only samples in programs' own code.
    let stdio = |args: &[&str]| {
        support::stdout(
            support::bpfprof()
                .args(["report", "--stdio", "--no-bpf-summary", "--sort", "dso,sym"])
                .args(args)
                .arg("-i")
                .arg(&r.data),
        )
    };
    let plain = stdio(&[]);
    assert!(plain.lines().any(|l| l.contains("[k]")), "{plain}");
    // perf's -n adds the samples column, which is always there.
    assert!(plain.lines().any(|l| l.contains("Samples")), "{plain}");
    assert_eq!(stdio(&["-n"]), plain);
    assert_eq!(stdio(&["-g", "none"]), plain);
    assert_eq!(stdio(&["--call-graph=none"]), plain);
    assert_ne!(stdio(&["-g"]), plain, "a bare -g prints graphs");
    // perf's -G is its alias for caller-order graphs.
    assert_eq!(stdio(&["-G"]), stdio(&["-g", "caller"]));
    assert_ne!(stdio(&["-G"]), stdio(&["-g"]));
    // Children are the default on a file with call chains, as in perf,
    // `-g none` or not.
    let cases: [(bool, &[&str]); 3] = [
        (false, &["--no-children", "-g", "none"]),
        (true, &["--children", "-g", "none"]),
        (true, &["-g", "none"]),
    ];
    for (children, args) in cases {
        let perf = perf_rows(&r.data, "dso,sym", children, &[]);
        let (total, ours, _) = our_rows_as_given(&r.data, "dso,sym", args);
        assert_eq!(total, perf.iter().map(|x| x.samples).sum::<u64>());
        assert_eq!(ours.iter().all(|x| x.children.is_some()), children);
        assert_agree(&format!("{args:?}"), &ours, &perf);
    }
}

/// A report runs in the process it was started in: no second start to
/// change how malloc behaves (glibc reads its tunables only at start).
/// perf's task events are the oracle: one exec, under bpfprof's name.
#[test]
fn a_report_starts_once() {
    let Some(r) = rec() else { return };
    let dir = support::tempdir();
    let data = support::path(&dir, "self.data");
    support::run(
        Command::new("perf")
            .args(["record", "-q", "-F", "99", "-o"])
            .arg(&data)
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_bpfprof"))
            .args(["report", "--stdio", "-g", "none", "-i"])
            .arg(&r.data),
    );
    let events = support::stdout(
        Command::new("perf")
            .args(["script", "--show-task-events", "-i"])
            .arg(&data),
    );
    let comms: Vec<&str> = events
        .lines()
        .filter_map(|l| l.split("PERF_RECORD_COMM").nth(1))
        .filter(|c| !c.contains("perf-exec"))
        .collect();
    let execs = comms.iter().filter(|c| c.starts_with(" exec:")).count();
    assert_eq!(execs, 1, "started once: {comms:?}");
    let last = comms.last().expect("COMM events");
    assert!(last.contains(" bpfprof:"), "{comms:?}");
}

fn assert_sort_agrees(r: &Recording, sort: &str) {
    let perf = perf_rows(&r.data, sort, false, &[]);
    let (total, ours, _) = our_rows(&r.data, sort, &[]);
    assert_eq!(
        total,
        perf.iter().map(|x| x.samples).sum::<u64>(),
        "--sort {sort}: total samples"
    );
    assert_agree(&format!("--sort {sort}"), &ours, &perf);
    let ours = merged(&ours);
    for (k, p) in merged(&perf).iter().filter(|x| x.1.pct >= 0.5) {
        assert_eq!(ours[k].samples, p.samples, "--sort {sort}: {p:?}");
    }
}

#[test]
fn sort_comm_agrees_with_perf() {
    let Some(r) = rec() else { return };
    assert_sort_agrees(r, "comm");
}

/// `--sort cpu` against perf's, line for line (overhead, samples, CPU);
/// `--sort tid`, which perf 6.1 lacks, against perf's `pid` key, which is
/// the thread: the same threads with the same samples.
#[test]
fn sort_cpu_and_tid_agree_with_perf() {
    let Some(r) = rec() else { return };
    let lines = |text: String| -> Vec<String> {
        let mut v: Vec<String> = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        v.sort();
        v
    };
    let perf = lines(support::stdout(
        Command::new("perf")
            .args(["report", "--stdio", "--no-children", "-g", "none", "-n"])
            .args(["--sort", "cpu", "-i"])
            .arg(&r.data),
    ));
    let ours = lines(support::stdout(
        support::bpfprof()
            .args(["report", "--no-children", "--no-bpf-summary"])
            .args(["--sort", "cpu", "-i"])
            .arg(&r.data),
    ));
    assert!(perf.len() >= 2, "a recording of every CPU: {perf:?}");
    assert_eq!(ours, perf);

    let threads = |sort: &str, field: &str| -> Vec<(u64, u64)> {
        let (_, _, v) = our_rows(&r.data, sort, &[]);
        let mut t: Vec<(u64, u64)> = v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| (x[field].as_u64().unwrap(), x["samples"].as_u64().unwrap()))
            .collect();
        t.sort();
        t
    };
    let by_tid = threads("tid", "tid");
    assert!(by_tid.len() > 1, "{by_tid:?}");
    assert_eq!(by_tid, threads("pid", "pid"));
}

/// `-F/--fields` against perf's: the same column headers and the same
/// lines, in the same order, for lists that put counts and keys in
/// several orders (with and without `--sort`, and `+` to add to perf's
/// default columns).
#[test]
fn fields_print_as_perfs() {
    let Some(r) = rec() else { return };
    // The header line and the rows, without trailing blanks.
    let table = |text: String| -> Vec<String> {
        text.lines()
            .filter(|l| {
                !l.trim().is_empty()
                    && (!l.starts_with('#') || l.contains("Overhead") || l.contains("Command"))
            })
            .filter(|l| !l.starts_with("# Samples") && !l.starts_with("# Event count"))
            .map(|l| l.trim_end().to_string())
            .collect()
    };
    let cases: [&[&str]; 6] = [
        &["-F", "comm,overhead"],
        // Shared objects are one row per name perf prints.
        &["-F", "dso,sample"],
        &["-F", "sample,overhead,comm"],
        &["-F", "overhead,period", "--sort", "comm"],
        &["-F", "+period", "--sort", "comm"],
        &["-F", "comm,sample", "--sort", "pid"],
    ];
    for args in cases {
        let perf = table(support::stdout(
            Command::new("perf")
                .args(["report", "--stdio", "--no-children", "-g", "none"])
                .args(args)
                .arg("-i")
                .arg(&r.data),
        ));
        let ours = table(support::stdout(
            support::bpfprof()
                .args(["report", "--no-children", "--no-bpf-summary"])
                .args(args)
                .arg("-i")
                .arg(&r.data),
        ));
        assert!(perf.len() > 2, "{args:?}: {perf:?}");
        if let Some(i) = (0..ours.len().max(perf.len())).find(|&i| ours.get(i) != perf.get(i)) {
            panic!(
                "{args:?}: line {i} differs:\nours: {:?}\nperf: {:?}",
                ours.get(i.saturating_sub(1)..(i + 2).min(ours.len())),
                perf.get(i.saturating_sub(1)..(i + 2).min(perf.len()))
            );
        }
    }
}

#[test]
fn sort_pid_agrees_with_perf() {
    let Some(r) = rec() else { return };
    assert_sort_agrees(r, "pid");
    // The text names each thread as perf does: by its last command (a
    // child forked by this test runs under the test's name, then execs),
    // and -1 for samples without a thread.
    let cells = |text: &str, skip: usize| -> Vec<String> {
        let mut v: Vec<String> = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|l| {
                l.split_whitespace()
                    .skip(skip)
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        v.sort();
        v
    };
    let mut perf = Command::new("perf");
    perf.args(["report", "--stdio", "--no-children", "-g", "none"])
        .args(["--sort", "pid", "-i"])
        .arg(&r.data);
    let ours = support::stdout(
        support::bpfprof()
            .args([
                "report",
                "--no-children",
                "--sort",
                "pid",
                "--no-bpf-summary",
                "-i",
            ])
            .arg(&r.data),
    );
    assert_eq!(cells(&ours, 2), cells(&support::stdout(&mut perf), 1));
}

#[test]
fn sort_bpf_prog_sums_the_programs_functions() {
    let Some(r) = rec() else { return };
    let (total, ours, _) = our_rows(&r.data, "bpf_prog", &[]);
    let perf = perf_rows(&r.data, "dso,sym", false, &[]);
    let names = our_names(r);
    let (n, pct) = perf
        .iter()
        .filter(|x| names.iter().any(|s| x.key == format!("{s} | [k] {s}")))
        .fold((0, 0.0), |(n, p), x| (n + x.samples, p + x.pct));
    let mine = ours
        .iter()
        .find(|x| x.key == r.id.to_string())
        .unwrap_or_else(|| panic!("no row for program {}: {ours:?}", r.id));
    assert_eq!(mine.samples, n, "program {}'s samples vs perf's rows", r.id);
    assert!((mine.pct - pct).abs() <= 0.1, "{mine:?} vs perf's {pct}%");
    assert_eq!(ours.iter().map(|x| x.samples).sum::<u64>(), total);
    // The text table names it by id and name.
    let out = support::stdout(
        support::bpfprof()
            .args(["report", "--sort", "bpf_prog", "-i"])
            .arg(&r.data),
    );
    assert!(
        out.lines()
            .any(|l| l.contains(&format!("{} {}", r.id, r.prog.name()))),
        "{out}"
    );
}

/// `--sort bpf_prog --json`: each row says what all its samples are. The
/// program's row names every sub-program perf has samples of (by the
/// KSYMBOL at each sub-program's address), and the `-` row, which holds
/// all code outside BPF, says it is not all kernel code when perf's table
/// has user samples, with perf's count of kernel samples.
#[test]
fn sort_bpf_prog_json_rows_say_what_they_hold() {
    let Some(r) = rec() else { return };
    let (_, _, v) = our_rows(&r.data, "bpf_prog", &[]);
    let rows = v["rows"].as_array().unwrap();
    let perf = perf_rows(&r.data, "dso,sym", false, &[]);
    let names = our_names(r);
    let subs: Vec<u64> = (0..names.len() as u64)
        .filter(|&i| {
            let s = &names[i as usize];
            perf.iter()
                .any(|x| x.key == format!("{s} | [k] {s}") && x.samples > 0)
        })
        .collect();
    assert!(!subs.is_empty(), "perf has no samples in program {}", r.id);
    let prog = rows
        .iter()
        .find(|x| x["bpf_prog_id"].as_u64() == Some(r.id as u64))
        .unwrap_or_else(|| panic!("no row for program {}: {v}", r.id));
    let got: Vec<u64> = prog["bpf_subprogs"]
        .as_array()
        .unwrap_or_else(|| panic!("bpf_subprogs in {prog}"))
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    assert_eq!(got, subs, "the sub-programs the row sums: {prog}");
    match subs.as_slice() {
        [one] => assert_eq!(prog["bpf_subprog"].as_u64(), Some(*one), "{prog}"),
        _ => assert!(
            prog["bpf_subprog"].is_null(),
            "one sub-program claimed: {prog}"
        ),
    }
    assert_eq!(prog["kernel"], Value::Bool(true), "{prog}");
    assert_eq!(prog["kernel_samples"], prog["samples"], "{prog}");

    // perf's user rows are never BPF: all of them are in the `-` row. (A
    // dso with a space, `memfd:x (deleted)`, puts its tail before `[.]`.)
    let user: u64 = perf
        .iter()
        .filter(|x| x.key.contains(" [.] "))
        .map(|x| x.samples)
        .sum();
    let rest = rows
        .iter()
        .find(|x| x["bpf_prog_id"].is_null())
        .unwrap_or_else(|| panic!("no row outside BPF: {v}"));
    let (n, k) = (
        rest["samples"].as_u64().unwrap(),
        rest["kernel_samples"].as_u64().unwrap(),
    );
    assert_eq!(n - k, user, "user samples of the row outside BPF: {rest}");
    let want = match (k > 0, user > 0) {
        (true, true) => Value::Null,
        (kernel, _) => Value::Bool(kernel),
    };
    assert_eq!(rest["kernel"], want, "{rest}");
    assert!(
        rest["bpf_subprog"].is_null() && rest["bpf_subprogs"].is_null(),
        "{rest}"
    );
}

/// perf's `--sort comm,dso,sym` rows taken under `comm` (which must have
/// no spaces), as dso,sym rows.
fn perf_comm_rows(file: &Path, comm: &str) -> Vec<Row> {
    let text = support::stdout(
        Command::new("perf")
            .args(["report", "--stdio", "-n", "-g", "none", "--no-children"])
            .args(["--sort", "comm,dso,sym", "-i"])
            .arg(file),
    );
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            if t.len() < 5 || t[2] != comm {
                return None;
            }
            Some(Row {
                key: format!("{} | {}", t[3], t[4..].join(" ")),
                pct: t[0].strip_suffix('%')?.parse().ok()?,
                children: None,
                samples: t[1].parse().ok()?,
            })
        })
        .collect()
}

#[test]
fn filters_agree_with_perf() {
    let Some(r) = rec() else { return };
    let comm = r.comm.clone();
    let pid = std::process::id().to_string();
    let names = our_names(r);
    // perf's --comms keeps the samples of threads whose *last* comm
    // matches (thread__comm_str), not those taken under that comm (what
    // perf's own --sort comm groups by, and what ours keeps): compared
    // below with perf's comm,dso,sym rows instead.
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec!["--dso", "[kernel.kallsyms]"],
            vec!["--dsos", "[kernel.kallsyms]"],
        ),
        (vec!["--dso", &names[1]], vec!["--dsos", &names[1]]),
    ];
    for (ours_args, perf_args) in cases {
        let perf = perf_rows(&r.data, "dso,sym", false, &perf_args);
        let (_, ours, _) = our_rows(&r.data, "dso,sym", &ours_args);
        assert!(!perf.is_empty(), "{perf_args:?} keeps something");
        assert_agree(&format!("{ours_args:?}"), &ours, &perf);
        // Same rows, same samples (perf's percentages stay shares of the
        // whole profile, as ours do). perf's --comms matches a thread's
        // last comm, not its comm at the sample (which --sort comm uses);
        // ours keeps the samples --sort comm puts under that comm.
        let n = |rows: &[Row]| rows.iter().map(|x| x.samples).sum::<u64>();
        // A sample or two can land apart (seen: clock_gettime attributed
        // to libc instead of the vDSO). --pid is compared exactly in
        // `pid_filter_agrees_with_perf`.
        if ours_args[0] == "--dso" {
            let (a, b) = (n(&ours), n(&perf));
            assert!(
                a.abs_diff(b) <= 2.max(b / 1000),
                "{ours_args:?}: samples kept: ours {a}, perf's {b}"
            );
        }
    }
    let perf = perf_comm_rows(&r.data, &comm);
    assert!(!perf.is_empty(), "perf has samples under {comm}");
    let (_, ours, _) = our_rows(&r.data, "dso,sym", &["--comm", &comm]);
    assert_agree(&format!("--comm {comm}"), &ours, &perf);
    let n = |rows: &[Row]| rows.iter().map(|x| x.samples).sum::<u64>();
    assert_eq!(n(&ours), n(&perf), "--comm {comm}: samples kept");
    let (_, by_comm, _) = our_rows(&r.data, "comm", &[]);
    let row = merged(&by_comm)[&squeeze(&comm)].samples;
    assert_eq!(n(&ours), row, "--comm {comm} vs our --sort comm");
    let _ = pid;
    // The workload's thread is in the --pid view with the BPF rows.
    let (_, ours, _) = our_rows(&r.data, "dso,sym", &["--pid", &pid]);
    assert!(
        ours.iter().any(|x| x.key.starts_with(&names[1])),
        "{ours:?}"
    );
}

/// `--pid` of this test process against perf's `--pid`.
///
/// perf filters hist entries, not samples: with `--sort dso,sym` an entry
/// made by another process's sample stays hidden even after this
/// process's samples fold into it (they still count in the total). Which
/// rows vanish then depends on who hit a function first (seen: all 398
/// `do_syscall_64` samples, because one sample of another process came
/// first). With the thread in perf's sort key every entry belongs to one
/// thread, so perf's rows are exact there; summed over the threads they
/// are what bpfprof shows. This is the whole of the 1-32 samples by which
/// perf's `--pid --sort dso,sym` total differed from ours, in either
/// direction (in one run: 5200 samples of this process in `perf script`,
/// 5200 in ours and in perf's per-thread rows, 5208 under perf's
/// dso,sym): bpfprof's filter keeps samples, so no code changed.
#[test]
fn pid_filter_agrees_with_perf() {
    let Some(r) = rec() else { return };
    let pid = std::process::id().to_string();
    let perf = perf_rows_by_thread(&r.data, &["--pid", &pid]);
    let (_, ours, _) = our_rows(&r.data, "dso,sym", &["--pid", &pid]);
    assert!(!perf.is_empty());
    // The samples kept are exactly this process's, as perf script lists
    // them, and as many as perf's rows of this process's threads hold.
    let n = |rows: &[Row]| rows.iter().map(|x| x.samples).sum::<u64>();
    let script = support::stdout(
        Command::new("perf")
            .args(["script", "-F", "pid", "-i"])
            .arg(&r.data),
    );
    let own = script.lines().filter(|l| l.trim() == pid).count() as u64;
    assert!(own > 0, "perf script lists no sample of pid {pid}");
    assert_eq!(
        n(&ours),
        own,
        "--pid {pid}: ours vs perf script's samples of {pid}"
    );
    assert_eq!(
        n(&perf),
        own,
        "--pid {pid}: perf's per-thread rows vs perf script"
    );
    assert_agree(&format!("--pid {pid}"), &ours, &perf);
}

/// `--tid` of this test process's busiest thread against perf's `--tid`
/// (by thread, for the reason `pid_filter_agrees_with_perf` gives) and
/// the thread's samples in perf script.
#[test]
fn tid_filter_agrees_with_perf() {
    let Some(r) = rec() else { return };
    let pid = std::process::id().to_string();
    let script = support::stdout(
        Command::new("perf")
            .args(["script", "-F", "pid,tid", "-i"])
            .arg(&r.data),
    );
    let mut by_tid: std::collections::BTreeMap<String, u64> = Default::default();
    for l in script.lines() {
        if let Some((p, t)) = l.trim().split_once('/') {
            if p == pid {
                *by_tid.entry(t.to_string()).or_default() += 1;
            }
        }
    }
    let (tid, own) = by_tid
        .iter()
        .max_by_key(|(_, &n)| n)
        .map(|(t, &n)| (t.clone(), n))
        .expect("perf script lists samples of this process's threads");
    let perf = perf_rows_by_thread(&r.data, &["--tid", &tid]);
    let (_, ours, _) = our_rows(&r.data, "dso,sym", &["--tid", &tid]);
    let n = |rows: &[Row]| rows.iter().map(|x| x.samples).sum::<u64>();
    assert_eq!(n(&ours), own, "--tid {tid}: ours vs perf script");
    assert_eq!(n(&perf), own, "--tid {tid}: perf's rows vs perf script");
    assert_agree(&format!("--tid {tid}"), &ours, &perf);
}

/// `perf report --sort pid,dso,sym ARGS` rows keyed "dso | sym" (one per
/// thread; `assert_agree` sums them).
fn perf_rows_by_thread(file: &Path, args: &[&str]) -> Vec<Row> {
    let mut cmd = Command::new("perf");
    cmd.args(["report", "--stdio", "-n", "-g", "none", "--no-children"])
        .args(["--sort", "pid,dso,sym"])
        .args(args)
        .arg("-i")
        .arg(file);
    let text = support::stdout(&mut cmd);
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            let pct = t.first()?.strip_suffix('%')?.parse::<f64>().ok()?;
            let samples = t.get(1)?.parse().ok()?;
            // "TID:comm" (no spaces in this test's thread names), dso, sym.
            let (dso, sym) = (t.get(3)?, t.get(4..)?.join(" "));
            Some(Row {
                key: format!("{dso} | {sym}"),
                pct,
                children: None,
                samples,
            })
        })
        .collect()
}

#[test]
fn percent_limit_hides_small_rows_as_perf_does() {
    let Some(r) = rec() else { return };
    let perf = perf_rows(&r.data, "dso,sym", false, &["--percent-limit", "1"]);
    let (_, all, _) = our_rows(&r.data, "dso,sym", &[]);
    let (_, ours, _) = our_rows(&r.data, "dso,sym", &["--percent-limit", "1"]);
    assert!(!ours.is_empty());
    assert!(ours.iter().all(|x| x.pct >= 1.0), "{ours:?}");
    let kept: Vec<&String> = all
        .iter()
        .filter(|x| x.pct >= 1.0)
        .map(|x| &x.key)
        .collect();
    assert_eq!(ours.iter().map(|x| &x.key).collect::<Vec<_>>(), kept);
    // Away from the boundary, perf keeps and hides the same rows.
    for x in merged(&all).values() {
        let in_perf = perf.iter().any(|p| squeeze(&p.key) == squeeze(&x.key));
        if all.iter().filter(|a| a.key == x.key).count() > 1 {
            continue; // split in ours, merged in perf's (see `merged`)
        }
        if x.pct >= 1.1 {
            assert!(in_perf, "perf hides {x:?}");
        } else if x.pct <= 0.9 {
            assert!(!in_perf, "perf shows {x:?}");
        }
    }
    // The text table too.
    let out = support::stdout(
        support::bpfprof()
            .args([
                "report",
                "--no-children",
                "--sort",
                "dso,sym",
                "--percent-limit",
                "1",
                "-i",
            ])
            .arg(&r.data),
    );
    for l in out
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let pct: f64 = l
            .split_whitespace()
            .next()
            .unwrap()
            .trim_end_matches('%')
            .parse()
            .unwrap();
        assert!(pct >= 1.0, "{l}");
    }
}

#[test]
fn json_has_the_shape_it_documents() {
    let Some(r) = rec() else { return };
    let (total, rows, v) = our_rows(&r.data, "dso,sym", &[]);
    assert!(total > 0);
    assert_eq!(
        v["event"].as_str().map(|e| e.starts_with("cpu-clock")),
        Some(true)
    );
    assert_eq!(rows.iter().map(|x| x.samples).sum::<u64>(), total);
    let sum: f64 = rows.iter().map(|x| x.pct).sum();
    assert!((sum - 100.0).abs() < 0.01, "shares sum to {sum}");
    let sorted = rows.windows(2).all(|w| w[0].pct + 1e-9 >= w[1].pct);
    assert!(sorted, "hottest first");
    let progs = v["bpf"]["programs"].as_array().expect("BPF view");
    assert!(progs.iter().any(|p| p["id"].as_u64() == Some(r.id as u64)));
    // Default sort too.
    let text = support::stdout(
        support::bpfprof()
            .args(["report", "--json", "-i"])
            .arg(&r.data),
    );
    let d: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(d["sort"], serde_json::json!(["comm", "dso", "sym"]));
}

#[test]
fn an_empty_profile_says_so() {
    if !support::live(true) {
        return;
    }
    let dir = support::tempdir();
    let data = support::path(&dir, "empty.data");
    support::run(
        Command::new("perf")
            .args(["record", "-F", "1", "-o"])
            .arg(&data)
            .args(["--", "true"]),
    );
    // perf's view: no samples.
    let perf = perf_rows(&data, "dso,sym", false, &[]);
    assert!(perf.is_empty(), "perf found samples: {perf:?}");
    let out = support::bpfprof()
        .args(["report", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("no samples"), "{text}");
    let (total, rows, _) = our_rows(&data, "dso,sym", &[]);
    assert_eq!(total, 0);
    assert!(rows.is_empty());
}

/// `bpfprof report -i FILE` must fail, naming the file, without a panic.
fn assert_clear_error(file: &Path, what: &str) {
    for args in [vec!["report"], vec!["report", "--json"], vec!["annotate"]] {
        let out = support::bpfprof()
            .args(&args)
            .arg("-i")
            .arg(file)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.code().is_some_and(|c| c != 0 && c != 101),
            "{what} {args:?}: exit {}\n{err}",
            out.status
        );
        assert!(!err.contains("panicked"), "{what} {args:?}: {err}");
        assert!(
            err.contains(&file.display().to_string()),
            "{what} {args:?}: the error names the file: {err}"
        );
    }
}

#[test]
fn missing_truncated_and_foreign_files_give_a_clear_error() {
    let Some(r) = rec() else { return };
    let dir = support::tempdir();
    assert_clear_error(&support::path(&dir, "no-such.data"), "missing");
    let bytes = std::fs::read(&r.data).unwrap();
    for (name, len) in [("empty", 0), ("magic only", 8), ("half a header", 50)] {
        let f = support::path(&dir, &format!("{}.data", name.replace(' ', "_")));
        std::fs::write(&f, &bytes[..len]).unwrap();
        assert_clear_error(&f, name);
    }
    let f = support::path(&dir, "text.data");
    std::fs::write(&f, "this is not a perf.data file\n".repeat(20)).unwrap();
    assert_clear_error(&f, "text");
    let f = support::path(&dir, "elf.data");
    std::fs::copy("/bin/true", &f).unwrap();
    assert_clear_error(&f, "an ELF binary");
    let f = support::path(&dir, "dir.data");
    std::fs::create_dir(&f).unwrap();
    assert_clear_error(&f, "a directory");
}

/// A file cut inside its data section (header intact): perf reports what
/// is there; we either do the same with a warning, or fail naming the file
/// — never panic, never make up samples.
#[test]
fn a_file_cut_in_its_data_is_reported_or_refused_cleanly() {
    let Some(r) = rec() else { return };
    let dir = support::tempdir();
    let bytes = std::fs::read(&r.data).unwrap();
    let f = perfdata::PerfFile::open(&r.data).unwrap();
    let data = f.header().data;
    let (_, full, _) = our_rows(&r.data, "dso,sym", &[]);
    let full_total: u64 = full.iter().map(|x| x.samples).sum();
    for frac in [2u64, 3, 10] {
        let cut = (data.offset + data.size / frac) as usize + 3;
        let file = support::path(&dir, &format!("cut{frac}.data"));
        std::fs::write(&file, &bytes[..cut]).unwrap();
        let out = support::bpfprof()
            .args(["report", "--json", "--sort", "dso,sym", "-i"])
            .arg(&file)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{err}");
        match out.status.code() {
            Some(0) => {
                let v: Value = serde_json::from_slice(&out.stdout).unwrap();
                let n = v["samples"].as_u64().unwrap();
                assert!(n < full_total, "cut file has {n} of {full_total} samples");
                let warned = v["warnings"].as_array().is_some_and(|w| !w.is_empty());
                assert!(
                    warned || !err.is_empty(),
                    "a cut file is reported without a warning"
                );
            }
            Some(c) if c != 101 => {
                assert!(err.contains(&file.display().to_string()), "{err}")
            }
            c => panic!("exit {c:?}: {err}"),
        }
    }
}

/// Symbols are resolved partly while the records are read, in an order
/// that depends on thread timing; nothing printed may depend on it. Runs
/// with cold and warm caches (kallsyms, parsed ELF symbol tables) differ
/// most in timing, and the warm ones use the tables the cold one parsed.
#[test]
fn reports_are_the_same_on_every_run() {
    let Some(r) = rec() else { return };
    let cache = tempfile::tempdir().unwrap();
    for args in [
        &["--sort", "sym", "-g", "caller"][..],
        &["--sort", "pid,dso,sym", "--children"][..],
    ] {
        let run = || {
            support::stdout(
                support::bpfprof()
                    .env("XDG_CACHE_HOME", cache.path())
                    .args(["report", "--stdio"])
                    .args(args)
                    .arg("-i")
                    .arg(&r.data),
            )
        };
        let first = run();
        assert!(first.lines().count() > 10, "{args:?}:\n{first}");
        for _ in 0..3 {
            assert!(
                run() == first,
                "{args:?} printed something else on another run"
            );
        }
    }
    // Binaries of 1 MB and more are cached: a recording of the whole
    // system has samples in libc and in perf itself.
    let elf = cache.path().join("bpfprof/elf");
    let cached = std::fs::read_dir(&elf).map_or(0, |d| d.count());
    assert!(cached > 0, "no parsed symbol table in {}", elf.display());
}
