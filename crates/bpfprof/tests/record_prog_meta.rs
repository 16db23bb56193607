//! Owners, attachments and maps captured by `bpfprof record` and read back
//! from the file after the programs and their owners are gone; and Linux
//! perf reads the file exactly as it reads the same recording without
//! them.

#[path = "../../bpfinfo/tests/meta_fixture/mod.rs"]
mod meta_fixture;
mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use meta_fixture::{Fixture, MAP, RAW_PROG, TP_PROG};
use perfdata::{BpfProgMeta, Features, PerfFile, PerfFileWriter};
use serde_json::Value;

fn bpftool(args: &[&str]) -> Value {
    serde_json::from_str(&support::stdout(
        Command::new("bpftool").args(args).arg("-j"),
    ))
    .expect("bpftool JSON")
}

fn num(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"))
}

/// The header's data size, which the recorder sets at its first checkpoint
/// (after the start-up synthesis and the first snapshot).
fn data_size(path: &Path) -> u64 {
    std::fs::read(path)
        .ok()
        .and_then(|b| Some(u64::from_le_bytes(b.get(48..56)?.try_into().ok()?)))
        .unwrap_or(0)
}

/// The same recording written again by perfdata, with `meta` as the BPF
/// programs' owners/attachments/maps (empty: no tails at all).
fn rewrite(src: &Path, meta: Vec<BpfProgMeta>, out: &Path) {
    let f = PerfFile::open(src).unwrap();
    let bytes = std::fs::read(src).unwrap();
    let d = f.header().data;
    let mut w = PerfFileWriter::new(std::io::Cursor::new(Vec::new()), f.attrs()).unwrap();
    w.write_raw(&bytes[d.offset as usize..(d.offset + d.size) as usize])
        .unwrap();
    let feats = Features {
        bpf_prog_meta: meta,
        ..f.features().clone()
    };
    std::fs::write(out, w.finish(&feats).unwrap().into_inner()).unwrap();
}

fn perf(args: &[&str], file: &Path) -> (String, String) {
    let out = Command::new("perf")
        .args(args)
        .arg("-i")
        .arg(file)
        .output()
        .unwrap();
    assert!(out.status.success(), "perf {args:?} failed");
    // perf report ends with a tip picked at random.
    let stdout = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with("# (Tip:"))
        .collect::<Vec<_>>()
        .join("\n");
    (stdout, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Equal texts, or the first line where they part.
fn same(a: &str, b: &str, what: &str) {
    if a == b {
        return;
    }
    let (n, (x, y)) = a
        .lines()
        .zip(b.lines())
        .enumerate()
        .find(|(_, (x, y))| x != y)
        .unwrap_or((0, ("(length)", "(length)")));
    panic!("{what} differs at line {n}:\n with tails: {x}\n without:    {y}");
}

#[test]
fn owners_attachments_and_maps_survive_their_programs() {
    if !support::live(true) {
        return;
    }
    if !support::require(
        testkit::tool("bpftool").is_some(),
        "needs bpftool (apt-get install bpftool)",
    ) {
        return;
    }
    let mut fixture = match Fixture::start("bpfprof") {
        Ok(f) => f,
        Err(why) => {
            support::require(false, &why);
            return;
        }
    };
    let tp = fixture.prog_id(TP_PROG);
    let raw = fixture.prog_id(RAW_PROG);
    let links = bpftool(&["link", "show"]);
    let maps = bpftool(&["map", "show"]);
    let live_links = |prog: u32| -> BTreeSet<u32> {
        links
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| num(l, "prog_id") == prog as u64)
            .map(|l| num(l, "id") as u32)
            .collect()
    };
    let live_map = maps
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == MAP)
        .expect("the fixture's map")
        .clone();

    let dir = tempfile::tempdir().unwrap();
    let file: PathBuf = dir.path().join("meta.data");
    let rec = support::bpfprof()
        .args(["record", "-a", "--duration", "3", "-o"])
        .arg(&file)
        .env("BPFPROF_DEBUG", "1")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Ready when the first checkpoint has written a data size.
    let t0 = Instant::now();
    while data_size(&file) == 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "bpfprof record did not start"
        );
        std::thread::yield_now();
    }
    // A program loaded and unloaded mid-run: only its BPF_EVENT names its
    // loader (this process).
    let mid = bpfinfo::testprog::TestProg::builder()
        .name("meta_midrun")
        .build()
        .unwrap()
        .load()
        .unwrap();
    let mid_id = mid.id();
    let attached = mid
        .attach_tracepoint("syscalls", "sys_enter_getpid")
        .unwrap();
    bpfinfo::testprog::call_getpid(100_000);
    drop(attached);
    drop(mid);

    let out = rec.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    eprintln!("{stderr}");
    let loader = fixture.loader_pid;
    // The programs and their owner are gone before the file is read.
    fixture.end_owner();
    fixture.unload();
    assert!(std::fs::metadata(format!("/proc/{loader}")).is_err());

    let f = PerfFile::open(&file).unwrap();
    let feats = f.features();
    assert!(feats.warnings.is_empty(), "{:?}", feats.warnings);
    let meta = |id: u32| {
        feats
            .bpf_prog_meta
            .iter()
            .find(|m| m.prog_id == id)
            .unwrap_or_else(|| panic!("no meta for prog {id}: {:?}", feats.bpf_prog_meta))
    };
    for (id, kind, target) in [
        (tp, "tracepoint", "syscalls:sys_enter_getppid"),
        (raw, "raw_tracepoint", "sys_enter"),
    ] {
        let m = meta(id);
        // bpftool run by a test in parallel holds every program for a
        // moment, and may be caught by a snapshot.
        let owners: Vec<_> = m.owners.iter().filter(|o| o.comm != "bpftool").collect();
        assert_eq!(owners.len(), 1, "{m:?}");
        assert_eq!(owners[0].pid, loader);
        assert_eq!(owners[0].comm, "attach_pin");
        let ids: BTreeSet<u32> = m.attach.iter().filter_map(|a| a.link_id).collect();
        assert_eq!(ids, live_links(id), "links of {id}");
        assert_eq!(m.attach.len(), 1, "{m:?}");
        assert_eq!(
            (m.attach[0].kind.as_str(), m.attach[0].target.as_str()),
            (kind, target)
        );
    }
    let m = meta(tp);
    assert_eq!(m.maps.len(), 1);
    let mm = &m.maps[0];
    assert_eq!(mm.id as u64, num(&live_map, "id"));
    assert_eq!(mm.name, MAP);
    assert_eq!(
        bpfinfo::map_type_name(mm.map_type),
        live_map["type"].as_str()
    );
    assert_eq!(mm.key_size as u64, num(&live_map, "bytes_key"));
    assert_eq!(mm.value_size as u64, num(&live_map, "bytes_value"));
    assert_eq!(mm.max_entries as u64, num(&live_map, "max_entries"));
    assert!(meta(raw).maps.is_empty());

    let m = meta(mid_id);
    let me = std::process::id();
    let comm = std::fs::read_to_string("/proc/self/comm").unwrap();
    assert!(
        m.owners
            .iter()
            .any(|o| o.pid == me && o.comm == comm.trim_end()),
        "{m:?}"
    );

    // perf: no new warning, and the same output as without the tails.
    let with = dir.path().join("with.data");
    let without = dir.path().join("without.data");
    rewrite(&file, feats.bpf_prog_meta.clone(), &with);
    rewrite(&file, Vec::new(), &without);
    assert_eq!(
        PerfFile::open(&with).unwrap().features().bpf_prog_meta,
        feats.bpf_prog_meta
    );
    for args in [
        &["report", "--stdio"][..],
        &["script"][..],
        &["report", "--header-only"][..],
    ] {
        let (out_a, err_a) = perf(args, &with);
        let (out_b, err_b) = perf(args, &without);
        same(&err_a, &err_b, &format!("stderr of perf {args:?}"));
        same(&out_a, &out_b, &format!("output of perf {args:?}"));
        let (_, err) = perf(args, &file);
        for l in err.lines() {
            assert!(
                !l.to_lowercase().contains("warn") && !l.contains("invalid"),
                "perf {args:?} on bpfprof's file: {l}"
            );
        }
    }
}
