//! The generated test program, loaded into the running kernel and checked
//! against what was put in and against independent tools: /proc/kallsyms,
//! `bpftool prog dump xlated`, GNU objdump.

mod common;

use std::collections::HashSet;
use std::process::Command;

use bpfinfo::sys::{self, Capture};
use bpfinfo::testprog::{call_getpid, LoadedProg, TestProg, TestProgKind};
use bpfinfo::{listing, Arch, Kallsyms, Program};
use perfdata::BpfProgInfo;

fn load(name: &str, kind: TestProgKind) -> (TestProg, LoadedProg) {
    let prog = TestProg::builder()
        .name(name)
        .loop_iters(500)
        .kind(kind)
        .build()
        .expect("build");
    let loaded = prog.load().expect("load test program");
    (prog, loaded)
}

fn program(loaded: &LoadedProg) -> Program {
    let live = loaded.info().expect("fetch info");
    assert!(live.warnings.is_empty(), "{:?}", live.warnings);
    let p = Program::new(live.info, live.btf.as_deref());
    assert!(p.warnings().is_empty(), "{:?}", p.warnings());
    p
}

#[test]
fn subprograms_match_kallsyms() {
    require!(common::is_root(), "needs root for bpf(2)");
    let (prog, loaded) = load("bpfinfo_t_ksyms", TestProgKind::Tracepoint);
    let p = program(&loaded);
    let kallsyms = Kallsyms::load().expect("read /proc/kallsyms");
    require!(
        !kallsyms.is_empty(),
        "kallsyms addresses are hidden (kptr_restrict)"
    );

    let names: Vec<&str> = p.subprogs().iter().map(|s| s.func_name.as_str()).collect();
    assert_eq!(names, prog.expected_func_names());
    let mut total = 0;
    for s in p.subprogs() {
        let kname = p.kernel_ksym_name(s.index).unwrap();
        // Identical sub-programs of other programs share a name, so look up
        // by address.
        assert_eq!(
            kallsyms.name_at(s.addr),
            Some(kname.as_str()),
            "kallsyms at {:#x}",
            s.addr
        );
        // kallsyms has no sizes: the next symbol must not start inside.
        if let Some(next) = kallsyms.next_address_after(s.addr) {
            assert!(
                next >= s.addr + u64::from(s.len),
                "{kname} overlaps {next:#x}"
            );
        }
        assert!(s.len > 0);
        assert_eq!(s.image_offset, total);
        total += s.len;
    }
    assert_eq!(total, p.info().jited_prog_len);
    // Sub-programs other than main carry their own tag in both namings.
    assert_eq!(p.subprogs()[1].ksym_name, p.kernel_ksym_name(1).unwrap());
    assert!(p.subprogs()[0]
        .ksym_name
        .ends_with(&format!("_{}", prog.name())));
}

#[test]
fn source_lines_are_what_was_put_in() {
    require!(common::is_root(), "needs root for bpf(2)");
    let (prog, loaded) = load("bpfinfo_t_lines", TestProgKind::Tracepoint);
    let p = program(&loaded);
    let want = prog.expected_source_lines();
    let got = p.source_lines();
    assert_eq!(got.len(), want.len());
    for ((g, w), li) in got.iter().zip(want).zip(&p.info().line_info) {
        assert_eq!(g, &w.line);
        assert_eq!(li.insn_off, w.insn_off);
        assert_eq!(p.line_at_xlated(w.insn_off), Some(&w.line));
        assert!(prog.source_text().lines().any(|l| l == g.text));
    }
    // Each sub-program's JIT line table starts at its first byte, and
    // only holds lines of that sub-program's instructions.
    for s in p.subprogs() {
        let table = p.jit_lines(s.index);
        assert!(
            !table.is_empty(),
            "sub-program {} has no JIT lines",
            s.index
        );
        assert_eq!(table[0].offset, 0);
        assert!(table.windows(2).all(|w| w[0].offset <= w[1].offset));
        for l in table {
            assert!(l.offset < s.len);
            let insn = p.info().line_info[l.line].insn_off;
            assert_eq!(p.subprog_of_xlated(insn), Some(s.index));
            assert_eq!(
                p.line_at_jit(s.index, l.offset),
                Some(&p.source_lines()[l.line])
            );
        }
        assert_eq!(p.lookup(s.addr + 1), Some((s.index, 1)));
        assert_ne!(
            p.lookup(s.addr + u64::from(s.len)).map(|l| l.0),
            Some(s.index)
        );
    }
    // The loop body's line is attributed to the sub-program.
    let body = prog
        .expected_source_lines()
        .iter()
        .find(|l| l.line.text.contains("acc +="))
        .unwrap();
    let work = &p.subprogs()[1];
    assert!(p
        .jit_lines(1)
        .iter()
        .any(|l| p.source_lines()[l.line] == body.line));
    assert_eq!(work.func_name, "work");
}

#[test]
fn live_info_survives_the_perf_data_encoding() {
    require!(common::is_root(), "needs root for bpf(2)");
    let (_prog, loaded) = load("bpfinfo_t_bpil", TestProgKind::Tracepoint);
    let live = loaded.info().unwrap();
    let mut bytes = Vec::new();
    live.info.write_bpil(&mut bytes);
    let back = BpfProgInfo::from_bpil(&bytes).unwrap();
    assert_eq!(back, live.info);
}

/// `bpftool prog dump xlated id N [linum]`, line for line.
#[test]
fn xlated_listing_matches_bpftool() {
    require!(common::is_root(), "needs root for bpf(2)");
    let bpftool = common::tool("bpftool");
    require!(
        bpftool.is_some(),
        "bpftool not installed (apt-get install bpftool)"
    );
    let bpftool = bpftool.unwrap();
    let (_prog, loaded) = load("bpfinfo_t_xlated", TestProgKind::Tracepoint);
    let p = program(&loaded);
    let kallsyms = Kallsyms::load().unwrap();
    for linum in [false, true] {
        let mut cmd = Command::new(&bpftool);
        cmd.args(["prog", "dump", "xlated", "id", &loaded.id().to_string()]);
        if linum {
            cmd.arg("linum");
        }
        let theirs = common::run(&mut cmd);
        let ours = listing(&p, Some(&kallsyms), linum);
        let theirs: Vec<&str> = theirs.lines().collect();
        let ours: Vec<&str> = ours.lines().collect();
        for (i, (t, o)) in theirs.iter().zip(&ours).enumerate() {
            assert_eq!(o, t, "line {i} (linum {linum})");
        }
        assert_eq!(ours.len(), theirs.len());
    }
}

#[test]
fn jit_disassembly_matches_objdump() {
    require!(common::is_root(), "needs root for bpf(2)");
    require!(
        Arch::host() == Some(Arch::X86_64),
        "the objdump cross-check is written for x86-64"
    );
    let objdump = common::tool("objdump");
    require!(objdump.is_some(), "GNU objdump not installed (binutils)");
    let (_prog, loaded) = load("bpfinfo_t_jit", TestProgKind::Tracepoint);
    let p = program(&loaded);
    let compared = common::compare_with_objdump(&objdump.unwrap(), &p);
    assert!(compared >= 20, "only {compared} instructions");
}

#[test]
fn tracepoint_attachment_runs_and_detaches() {
    require!(
        common::is_root(),
        "needs root for bpf(2) and perf_event_open"
    );
    let _stats = sys::enable_stats().expect("BPF_ENABLE_STATS");
    let (_prog, loaded) = load("bpfinfo_t_attach", TestProgKind::Tracepoint);
    let run_cnt = || {
        sys::fetch_prog(loaded.id(), Capture::Summary)
            .unwrap()
            .info
            .run_cnt
    };
    assert_eq!(run_cnt(), 0);
    let attached = loaded
        .attach_tracepoint("syscalls", "sys_enter_getpid")
        .expect("attach");
    call_getpid(200);
    // Other processes may call getpid too, so at least ours.
    let during = run_cnt();
    assert!(during >= 200, "run_cnt {during}");
    drop(attached);
    let after_detach = run_cnt();
    call_getpid(200);
    assert_eq!(run_cnt(), after_detach);
}

/// What the generated program computes, from its source text.
fn model(seed: u32, n: u32) -> u32 {
    let mut acc = u64::from(seed);
    for i in 0..u64::from(n) {
        acc = acc.wrapping_add(i ^ (acc << 1));
    }
    (acc & 1) as u32
}

#[test]
fn test_run_returns_what_the_source_computes() {
    require!(common::is_root(), "needs root for bpf(2)");
    for (seed, iters) in [(0, 0), (1, 1), (7, 500), (12345, 3000)] {
        let loaded = TestProg::builder()
            .name("bpfinfo_t_run")
            .seed(seed)
            .loop_iters(iters)
            .kind(TestProgKind::SocketFilter)
            .build()
            .unwrap()
            .load()
            .unwrap();
        let r = loaded.test_run(5).expect("BPF_PROG_TEST_RUN");
        assert_eq!(r.retval, model(seed, iters), "seed {seed} iters {iters}");
    }
    let (_p, tp) = load("bpfinfo_t_notrun", TestProgKind::Tracepoint);
    assert!(matches!(
        tp.test_run(1),
        Err(bpfinfo::Error::Unsupported(_))
    ));
}

#[test]
fn dropped_program_is_gone() {
    require!(common::is_root(), "needs root for bpf(2)");
    let (_prog, loaded) = load("bpfinfo_t_gone", TestProgKind::Tracepoint);
    let id = loaded.id();
    assert!(sys::fetch_prog(id, Capture::Symbols).is_ok());
    drop(loaded);
    // The id goes when the last reference does: at once, unless another
    // thread holds the program for a moment (this binary's churn test walks
    // every program by id, in parallel). So wait for it, boundedly.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        match sys::fetch_prog(id, Capture::Symbols) {
            Err(bpfinfo::Error::Gone { id: gone }) => {
                assert_eq!(gone, id);
                break;
            }
            Ok(_) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            other => panic!("expected Gone within 20 s, got {other:?}"),
        }
    }
}

/// Programs load and unload while we walk: every walk finishes, every
/// failure is a `Gone`, and every program that stays loaded is seen.
#[test]
fn walk_survives_churn() {
    require!(common::is_root(), "needs root for bpf(2)");
    let stay: Vec<LoadedProg> = (0..100)
        .map(|i| {
            TestProg::builder()
                .name("bpfinfo_t_churn")
                .seed(i)
                .loop_iters(4)
                .build()
                .unwrap()
                .load()
                .unwrap()
        })
        .collect();
    let want: HashSet<u32> = stay.iter().map(LoadedProg::id).collect();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let churn = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut n = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let p = TestProg::builder()
                    .name("bpfinfo_t_flicker")
                    .seed(n)
                    .loop_iters(4)
                    .build()
                    .unwrap()
                    .load()
                    .unwrap();
                drop(p);
                n += 1;
            }
            n
        })
    };
    for _ in 0..5 {
        let mut seen = HashSet::new();
        for (id, r) in sys::walk_progs(Capture::Symbols) {
            match r {
                Ok(p) => {
                    assert_eq!(p.info.id, id);
                    seen.insert(id);
                }
                Err(bpfinfo::Error::Gone { .. }) => {}
                Err(e) => panic!("program {id}: {e}"),
            }
        }
        assert!(
            want.is_subset(&seen),
            "missing {:?}",
            want.difference(&seen)
        );
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let churned = churn.join().unwrap();
    assert!(churned > 0);
}

/// Without privileges, listing fails with the typed error that says what to
/// do. The test runs itself again as user `nobody`.
#[test]
fn permission_error_says_what_to_do() {
    const CHILD: &str = "BPFINFO_PERMISSION_CHILD";
    if std::env::var_os(CHILD).is_some() {
        let e = sys::prog_ids().next().expect("an error, not the end");
        let e = e.expect_err("listing must fail without privileges");
        assert!(matches!(e, bpfinfo::Error::Permission { .. }), "{e:?}");
        let msg = e.to_string();
        assert!(
            msg.contains("run as root or grant CAP_BPF and CAP_PERFMON"),
            "{msg}"
        );
        let e = sys::fetch_prog(1, Capture::Symbols).unwrap_err();
        assert!(matches!(e, bpfinfo::Error::Permission { .. }), "{e:?}");
        return;
    }
    require!(common::is_root(), "needs root to switch to user nobody");
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    // Our test binary may sit in a directory nobody cannot read.
    let dir = common::TempDir::new("perm");
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o755)).unwrap();
    let exe = dir.0.join("self");
    std::fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new(&exe)
        .args(["--exact", "permission_error_says_what_to_do", "--nocapture"])
        .env(CHILD, "1")
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "child failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 passed"));
}
