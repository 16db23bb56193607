//! The flat pass (samples counted in file order, only the side band
//! replayed in time order) against the pass that replays every record in
//! time order, on a recording made to be hard for it: processes that exec
//! and exit all the time (their maps change under their samples), BPF
//! programs loaded and unloaded one after another at addresses the kernel
//! reuses, and a second event. Every figure of the two profiles must be
//! the same, and so must the report's table and JSON. Then the same
//! recording with call chains fed to the engine record by record, as a
//! live session feeds it from the rings: the same figures, call-graph
//! report and BPF view as the file replay. The ordered pass itself is held
//! against `perf report` in report_vs_perf.rs and report_live.rs.

mod perf_start;
mod record_util;
mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use bpfinfo::testprog::TestProg;
use bpfprof::analyze::bpf_view;
use bpfprof::analyze::callgraph::CallOrder;
use bpfprof::analyze::profile::{Counts, ProgRecord};
use bpfprof::analyze::render::{self, ReportOptions};
use bpfprof::analyze::table::{Filters, SortKey};
use bpfprof::analyze::{Engine, Profile, ProfileOptions};
use record_util::*;

/// One recorder at a time: with two listening for BPF events, the kernel
/// writes KSYMBOL records whose trailer (and so time) is another
/// listener's (see README), which puts the file out of round order: the
/// flat pass places such records, but this test wants the plain case.
static RECORDING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Programs loaded, run and unloaded while recording.
const PROGRAMS: u32 = 30;

/// `perf record -a` with a second event, over BPF and exec churn
/// (`extra`: more perf options, such as `-g`).
fn record_churn(out: &Path, extra: &[&str]) {
    let _one = RECORDING.lock().unwrap_or_else(|e| e.into_inner());
    let mut args = vec![
        "record",
        "-a",
        "-F",
        "4999",
        "-e",
        "cpu-clock",
        "-e",
        "task-clock",
    ];
    args.extend_from_slice(extra);
    // Churn only once perf records (polled, not a guessed sleep).
    let mut perf = perf_start::spawn_ready(&args, out, "6");
    // Short processes, each a fresh exec with its own maps, busy enough to
    // be sampled in user and kernel mode.
    let mut shells = Command::new("sh")
        .arg("-c")
        .arg(
            "for i in $(seq 60); do \
               sh -c 'i=0; while [ $i -lt 4000 ]; do i=$((i+1)); done; ls /proc >/dev/null'; \
             done",
        )
        .spawn()
        .expect("start the shell loop");
    for i in 0..PROGRAMS {
        let p = TestProg::builder()
            .name(&format!("flat_{i}"))
            .seed(500 + i)
            .loop_iters(2000)
            .build()
            .unwrap()
            .load()
            .unwrap();
        let att = p.attach_tracepoint("syscalls", "sys_enter_getpid").unwrap();
        std::thread::spawn(|| getpid_for(Duration::from_millis(40)))
            .join()
            .unwrap();
        drop(att);
        drop(p);
    }
    shells.wait().expect("the shell loop");
    assert!(perf.wait().expect("perf record").success());
}

/// A row's key by name: command, pid, tid, shared object, symbol.
type RowName = (String, u32, u32, String, String);

/// A profile's figures with every id replaced by what it names.
#[derive(Debug, PartialEq)]
struct Figures {
    rows: BTreeMap<RowName, (u64, u64)>,
    total: Counts,
    other: BTreeMap<String, u64>,
    lost: (u64, u64),
    times: (u64, u64),
    bpf: BTreeMap<(String, u64), (u64, u64)>,
    bpf_hits: BTreeMap<(String, u64, u32), (u64, u64)>,
    ip_hits: BTreeMap<(String, String, u64), (u64, u64)>,
}

fn add(to: &mut (u64, u64), c: &Counts) {
    to.0 += c.samples;
    to.1 += c.period;
}

fn figures(p: &Profile) -> Figures {
    let sym = |s: u32| &p.sym.syms[s as usize];
    let dso = |d: u32| p.sym.dsos[d as usize].name.clone();
    let mut f = Figures {
        rows: BTreeMap::new(),
        total: p.total,
        other: p.other_events.clone(),
        lost: (p.lost, p.lost_samples),
        times: (p.first_time, p.last_time),
        bpf: BTreeMap::new(),
        bpf_hits: BTreeMap::new(),
        ip_hits: BTreeMap::new(),
    };
    for (k, c) in &p.rows {
        let comm = p.sym.threads.comms[k.comm as usize].clone();
        let s = sym(k.frame.sym);
        let key = (comm, k.pid, k.tid, dso(k.frame.dso), s.name.clone());
        add(f.rows.entry(key).or_default(), c);
    }
    let bpf = |b: u32| {
        let s = &p.sym.bpf.syms[b as usize];
        (s.name.clone(), s.addr)
    };
    for (&b, c) in &p.bpf_samples {
        add(f.bpf.entry(bpf(b)).or_default(), c);
    }
    for (&(b, off), c) in &p.bpf_hits {
        let (name, addr) = bpf(b);
        add(f.bpf_hits.entry((name, addr, off)).or_default(), c);
    }
    for (&(s, addr), c) in &p.ip_hits {
        let key = (dso(sym(s).dso), sym(s).name.clone(), addr);
        add(f.ip_hits.entry(key).or_default(), c);
    }
    f
}

fn build(file: &Path, ordered: bool, merge_threads: bool, ip_hits: bool) -> (Profile, Figures) {
    let f = perfdata::PerfFile::open(file).unwrap();
    let p = bpfprof::analyze::build(
        &f,
        &ProfileOptions {
            ordered,
            merge_threads,
            ip_hits,
            ..ProfileOptions::default()
        },
    )
    .unwrap();
    let figs = figures(&p);
    (p, figs)
}

#[test]
fn the_flat_pass_counts_what_the_ordered_pass_counts() {
    if !can_record_bpf() {
        return;
    }
    let dir = tmpdir("flat-pass");
    let data = dir.join("perf.data");
    record_churn(&data, &[]);

    for (merge, hits) in [(false, false), (true, false), (false, true), (true, true)] {
        let (flat, figs) = build(&data, false, merge, hits);
        let (ordered, want) = build(&data, true, merge, hits);
        assert!(!flat.ordered_pass, "the flat pass did not take the file");
        assert!(ordered.ordered_pass);
        let what = format!("merge_threads {merge}, ip_hits {hits}");
        // The recording is what it was made to be.
        let pids: std::collections::BTreeSet<u32> = want.rows.keys().map(|k| k.1).collect();
        if !merge {
            assert!(pids.len() > 30, "{what}: only {} processes", pids.len());
        }
        assert!(
            want.bpf.len() >= PROGRAMS as usize / 2,
            "{what}: samples in {} programs of {PROGRAMS}",
            want.bpf.len()
        );
        assert!(!want.other.is_empty(), "{what}: no second event");
        assert_eq!(figs.total, want.total, "{what}");
        assert_eq!(figs.rows, want.rows, "{what}");
        assert_eq!(figs, want, "{what}");
        for keys in [&["comm", "dso", "sym"][..], &["pid", "sym"], &["dso"]] {
            let o = report_options(keys, None);
            assert_eq!(
                rendered(&flat, &o),
                rendered(&ordered, &o),
                "{what}, {keys:?}"
            );
        }
        if hits {
            assert!(!want.ip_hits.is_empty() && !want.bpf_hits.is_empty());
        }
    }
}

/// Files the flat pass must leave to the ordered one: compressed data,
/// whose records it cannot see without decompressing them in order.
#[test]
fn compressed_files_take_the_ordered_pass() {
    if !can_record() {
        return;
    }
    let dir = tmpdir("flat-pass-z");
    let data = dir.join("perf.data");
    let one = RECORDING.lock().unwrap_or_else(|e| e.into_inner());
    let ok = Command::new("perf")
        .args(["record", "-a", "-z", "-F", "999", "-o"])
        .arg(&data)
        .args(["--", "sleep", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success();
    drop(one);
    assert!(ok, "perf record -z");
    let (p, figs) = build(&data, false, true, false);
    assert!(p.ordered_pass);
    assert!(figs.total.samples > 0);
}

fn report_options(keys: &[&str], callgraph: Option<CallOrder>) -> ReportOptions {
    use clap::ValueEnum;
    ReportOptions {
        keys: keys
            .iter()
            .map(|k| SortKey::from_str(k, false).unwrap())
            .collect(),
        filters: Filters::default(),
        children: false,
        callgraph,
        percent_limit: 0.0,
        bpf_only: false,
        bpf_summary: true,
        bpf_by: None,
        columns: None,
        row_order: None,
    }
}

/// The report's text and JSON.
fn rendered(p: &Profile, o: &ReportOptions) -> (String, String) {
    let (mut text, mut json) = (Vec::new(), Vec::new());
    render::stdio(p, o, &mut text).unwrap();
    render::json(p, o, &mut json).unwrap();
    let s = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (s(text), s(json))
}

/// A file's records fed one by one to a live engine, in time order, after
/// its programs: what a live session does with the rings' records.
fn fed_live(file: &perfdata::PerfFile, opts: &ProfileOptions) -> Profile {
    let mut e = Engine::live(file.attrs().to_vec(), opts);
    let f = file.features();
    for info in f.bpf_prog_info.iter().flatten() {
        let btf = f
            .bpf_btf
            .iter()
            .flatten()
            .find(|b| b.id == info.btf_id && info.btf_id != 0);
        e.add_program(ProgRecord {
            info: Some(info.clone()),
            btf: btf.map(|b| b.data.clone()),
            meta: None,
        });
    }
    let mut records = file.records().unwrap();
    let mut fed = 0;
    while let Some(r) = records.next().unwrap() {
        e.feed(r.raw).unwrap();
        fed += 1;
        // A live view asks for the profile as it goes: that must not
        // change what it ends with.
        if fed % 20_000 == 0 {
            e.profile();
        }
    }
    e.finish()
}

#[test]
fn the_engine_fed_record_by_record_counts_what_the_file_replay_counts() {
    if !can_record_bpf() {
        return;
    }
    let dir = tmpdir("engine-live");
    let data = dir.join("perf.data");
    record_churn(&data, &["-g"]);
    let file = perfdata::PerfFile::open(&data).unwrap();
    for merge in [false, true] {
        let opts = ProfileOptions {
            callchains: true,
            merge_threads: merge,
            ..ProfileOptions::default()
        };
        let replayed = bpfprof::analyze::build(&file, &opts).unwrap();
        let live = fed_live(&file, &opts);
        let what = format!("merge_threads {merge}");
        let want = figures(&replayed);
        assert!(want.total.samples > 1000, "{what}: {:?}", want.total);
        assert!(want.bpf.len() >= PROGRAMS as usize / 2, "{what}");
        assert_eq!(figures(&live), want, "{what}");
        assert!(!replayed.chains.is_empty());
        let keys: &[&str] = match merge {
            true => &["dso", "sym"],
            false => &["comm", "dso", "sym"],
        };
        for order in [CallOrder::Callee, CallOrder::Caller] {
            let o = report_options(keys, Some(order));
            assert_eq!(
                rendered(&live, &o),
                rendered(&replayed, &o),
                "{what}, {order:?}"
            );
        }
        let bpf = |p: &Profile| {
            serde_json::to_string(&bpf_view::summarize(p, &Filters::default())).unwrap()
        };
        assert_eq!(bpf(&live), bpf(&replayed), "{what}: the BPF view");
    }
}
