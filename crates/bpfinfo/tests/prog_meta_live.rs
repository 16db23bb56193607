//! `sys::prog_meta_snapshot` against bpftool and /proc, on real programs:
//! a clang-built object attached by libbpf (a perf_event link on
//! syscalls:sys_enter_getppid with a hash map, a raw_tracepoint link on
//! sys_enter) held by a loader process, and a generated program attached
//! with PERF_EVENT_IOC_SET_BPF (no link) held by this test process.

mod common;
mod json_mini;
mod meta_fixture;

use std::collections::BTreeSet;
use std::process::Command;

use bpfinfo::sys;
use bpfinfo::testprog::TestProg;
use json_mini::Json;
use meta_fixture::{Fixture, MAP, RAW_PROG, TP_PROG};

fn bpftool(args: &[&str]) -> Json {
    json_mini::parse(&common::run(Command::new("bpftool").args(args).arg("-j")))
}

/// The pids /proc says hold `prog` directly, through one of `links`, or
/// through a perf event `bpftool perf show` lists for it.
fn proc_holders(prog: u32, links: &[u32], perf: &Json) -> BTreeSet<u32> {
    let mut pids = BTreeSet::new();
    for p in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = p.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else {
            continue;
        };
        for f in fds.flatten() {
            let text = std::fs::read_to_string(f.path()).unwrap_or_default();
            let field = |k: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix(k))
                    .and_then(|v| v.trim().parse::<u32>().ok())
            };
            let is_link = field("link_id:");
            if is_link.is_some_and(|l| links.contains(&l))
                || (is_link.is_none() && field("prog_id:") == Some(prog))
            {
                pids.insert(pid);
            }
        }
    }
    for e in perf.arr() {
        if e.u64("prog_id") == Some(prog as u64) {
            pids.insert(e.u64("pid").unwrap() as u32);
        }
    }
    pids
}

#[test]
fn snapshot_matches_bpftool_and_proc() {
    require!(common::is_root(), "needs root for bpf(2) and bpffs");
    require!(
        common::tool("bpftool").is_some(),
        "needs bpftool (apt-get install bpftool)"
    );
    let fixture = match Fixture::start("bpfinfo") {
        Ok(f) => f,
        Err(why) => {
            require!(false, "{why}");
            unreachable!()
        }
    };
    let tp = fixture.prog_id(TP_PROG);
    let raw = fixture.prog_id(RAW_PROG);
    let gen = TestProg::builder()
        .name("meta_setbpf")
        .build()
        .expect("build");
    let loaded = gen.load().expect("load the generated program");
    let _held = loaded
        .attach_tracepoint("syscalls", "sys_enter_getpid")
        .expect("attach with PERF_EVENT_IOC_SET_BPF");
    let me = std::process::id();

    let t = std::time::Instant::now();
    let snap = sys::prog_meta_snapshot().expect("snapshot");
    eprintln!(
        "prog_meta_snapshot: {:.1} ms for {} programs",
        t.elapsed().as_secs_f64() * 1e3,
        snap.len()
    );
    let links = bpftool(&["link", "show"]);
    let perf = bpftool(&["perf", "show"]);
    let progs = bpftool(&["prog", "show"]);
    let maps = bpftool(&["map", "show"]);

    for id in [tp, raw, loaded.id()] {
        let m = &snap[&id];
        let my_links: Vec<u32> = links
            .arr()
            .iter()
            .filter(|l| l.u64("prog_id") == Some(id as u64))
            .map(|l| l.u64("id").unwrap() as u32)
            .collect();
        // Owners: the same pids as /proc and bpftool perf show, with comm.
        // bpftool run by a test in parallel holds every program for a
        // moment; it is no owner of interest on either side.
        let transient = |pid: &u32| comm_of(*pid) == "bpftool";
        let ours: BTreeSet<u32> = m
            .owners
            .iter()
            .filter(|o| o.comm != "bpftool")
            .map(|o| o.pid)
            .collect();
        let mut theirs = proc_holders(id, &my_links, &perf);
        theirs.retain(|p| !transient(p));
        assert_eq!(ours, theirs, "owners of {id}");
        for o in m.owners.iter().filter(|o| o.comm != "bpftool") {
            assert_eq!(o.comm, comm_of(o.pid), "comm of {}", o.pid);
        }
        // Links: every link bpftool lists is ours, with its fields.
        let ours: BTreeSet<u32> = m.attach.iter().filter_map(|a| a.link_id).collect();
        assert_eq!(ours, my_links.iter().copied().collect(), "links of {id}");
        for l in links
            .arr()
            .iter()
            .filter(|l| l.u64("prog_id") == Some(id as u64))
        {
            let a = m
                .attach
                .iter()
                .find(|a| a.link_id == Some(l.u64("id").unwrap() as u32))
                .unwrap();
            if let Some(tp_name) = l.str("tp_name") {
                assert_eq!(a.target, tp_name);
            }
            if l.str("type") == Some("raw_tracepoint") {
                assert_eq!(a.kind, "raw_tracepoint");
            }
        }
        // Perf attachments: kind and tracepoint name as bpftool perf show.
        for e in perf
            .arr()
            .iter()
            .filter(|e| e.u64("prog_id") == Some(id as u64))
        {
            let kind = e.str("fd_type").unwrap();
            let name = e.str("tracepoint").unwrap_or("");
            assert!(
                m.attach.iter().any(|a| a.kind == kind
                    && (a.target == name || a.target.ends_with(&format!(":{name}")))),
                "prog {id}: bpftool perf show has {kind} {name}, we have {:?}",
                m.attach
            );
        }
        // Maps: the ids bpftool prog show lists, each as bpftool map show.
        let p = progs
            .arr()
            .iter()
            .find(|p| p.u64("id") == Some(id as u64))
            .unwrap();
        // bpftool built with its pid iterator lists holders of program fds
        // (7.1 on Debian is built without it); each must be ours.
        for holder in p.get("pids").map(|v| v.arr()).unwrap_or_default() {
            let pid = holder.u64("pid").unwrap() as u32;
            assert!(ours_pids(m).contains(&pid), "bpftool pid {pid} of {id}");
        }
        let want: Vec<u32> = p
            .get("map_ids")
            .map(|v| v.arr().iter().map(|x| x.to_owned()).collect::<Vec<_>>())
            .unwrap_or_default()
            .iter()
            .map(|x| match x {
                Json::Num(n) => *n as u32,
                _ => panic!(),
            })
            .collect();
        assert_eq!(
            m.maps.iter().map(|x| x.id).collect::<Vec<_>>(),
            want,
            "maps of {id}"
        );
        for mm in &m.maps {
            let b = maps
                .arr()
                .iter()
                .find(|x| x.u64("id") == Some(mm.id as u64))
                .unwrap();
            assert_eq!(Some(mm.name.as_str()), b.str("name"));
            assert_eq!(bpfinfo::map_type_name(mm.map_type), b.str("type"));
            assert_eq!(Some(mm.key_size as u64), b.u64("bytes_key"));
            assert_eq!(Some(mm.value_size as u64), b.u64("bytes_value"));
            assert_eq!(Some(mm.max_entries as u64), b.u64("max_entries"));
            assert_eq!(Some(mm.map_flags as u64), b.u64("flags"));
        }
    }

    // What the fixture itself promises.
    let m = &snap[&tp];
    let owners: Vec<_> = m.owners.iter().filter(|o| o.comm != "bpftool").collect();
    assert_eq!(owners.len(), 1, "{:?}", m.owners);
    assert_eq!(owners[0].pid, fixture.loader_pid);
    assert_eq!(owners[0].comm, "attach_pin");
    assert_eq!(m.attach.len(), 1, "{:?}", m.attach);
    assert_eq!(m.attach[0].kind, "tracepoint");
    assert_eq!(m.attach[0].target, "syscalls:sys_enter_getppid");
    assert!(m.attach[0].link_id.is_some());
    assert_eq!(m.maps.len(), 1);
    assert_eq!(m.maps[0].name, MAP);
    assert_eq!(bpfinfo::map_type_name(m.maps[0].map_type), Some("hash"));
    assert_eq!((m.maps[0].key_size, m.maps[0].value_size), (4, 8));
    assert_eq!(m.maps[0].max_entries, 128);
    // The loader's map fd agrees with bpf_map_info.
    let fdinfo = loader_map_fdinfo(fixture.loader_pid, m.maps[0].id);
    assert_eq!(
        fdinfo.get("map_type"),
        Some(&m.maps[0].map_type.to_string())
    );
    assert_eq!(fdinfo.get("key_size"), Some(&"4".to_string()));
    assert_eq!(fdinfo.get("value_size"), Some(&"8".to_string()));
    assert_eq!(fdinfo.get("max_entries"), Some(&"128".to_string()));

    let r = &snap[&raw];
    assert_eq!(r.attach.len(), 1);
    assert_eq!(
        (r.attach[0].kind.as_str(), r.attach[0].target.as_str()),
        ("raw_tracepoint", "sys_enter")
    );
    assert!(r.maps.is_empty());

    let g = &snap[&loaded.id()];
    assert!(g.owners.iter().any(|o| o.pid == me));
    assert_eq!(g.attach.len(), 1, "{:?}", g.attach);
    assert_eq!(g.attach[0].kind, "tracepoint");
    assert_eq!(g.attach[0].target, "syscalls:sys_enter_getpid");
    assert_eq!(g.attach[0].link_id, None);
}

fn comm_of(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|c| c.trim_end().to_string())
        .unwrap_or_default()
}

fn ours_pids(m: &perfdata::BpfProgMeta) -> BTreeSet<u32> {
    m.owners.iter().map(|o| o.pid).collect()
}

/// The fdinfo fields of the loader's fd on map `id`.
fn loader_map_fdinfo(pid: u32, id: u32) -> std::collections::BTreeMap<String, String> {
    for f in std::fs::read_dir(format!("/proc/{pid}/fdinfo"))
        .unwrap()
        .flatten()
    {
        let text = std::fs::read_to_string(f.path()).unwrap_or_default();
        let m: std::collections::BTreeMap<String, String> = text
            .lines()
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        if m.get("map_id") == Some(&id.to_string()) {
            return m;
        }
    }
    panic!("the loader holds no fd on map {id}");
}

#[test]
fn links_and_scan_are_listed_without_root_errors_hidden() {
    require!(common::is_root(), "needs root for bpf(2)");
    // Everything the walk returns is self-consistent: each link's attach
    // carries its own id.
    for l in sys::links().expect("link walk") {
        assert_eq!(l.attach.link_id, Some(l.id));
        assert!(!l.attach.kind.is_empty());
    }
    let s = sys::scan_proc();
    for pid in s.prog_holders.values().flatten() {
        assert!(s.comms.contains_key(pid));
    }
}
