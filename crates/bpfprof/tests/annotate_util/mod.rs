//! Shared by the live annotate/report tests: a Linux perf recording of a
//! generated BPF program (with what the kernel said about the program
//! while it was loaded, for use as the oracle after it is gone), rewriting
//! a perf.data with edited feature sections, and GNU objdump as the
//! disassembly oracle.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bpfinfo::sys::LiveProg;
use bpfinfo::testprog::TestProg;
use perfdata::{Features, PerfFile, PerfFileWriter};

use crate::support;

#[path = "../perf_start/mod.rs"]
mod perf_start;

use testkit::tool;

/// A recording made by Linux perf while a generated program ran, and what
/// the kernel said about the program before it was unloaded.
pub struct Recording {
    /// A folder of its own under cargo's per-target temporary directory,
    /// emptied when the recording is made and left for inspection after.
    pub dir: PathBuf,
    /// perf's file.
    pub data: PathBuf,
    pub prog: TestProg,
    pub id: u32,
    /// `bpf_prog_info` (all arrays) and BTF, fetched while loaded.
    pub live: LiveProg,
    /// /proc/kallsyms's name at `jited_ksyms[i]`, per sub-program, read
    /// while loaded.
    pub ksym_names: Vec<String>,
    /// `bpftool prog dump xlated id N` while loaded, if bpftool exists.
    pub bpftool_xlated: Option<String>,
    /// How many getpid calls the workload made.
    pub calls: u64,
    /// The comm of the thread that made them.
    pub comm: String,
}

/// The kernel's names for addresses, from /proc/kallsyms.
pub fn kallsyms_at(addrs: &[u64]) -> Vec<String> {
    let names = testkit::kallsyms_by_address();
    addrs
        .iter()
        .map(|a| {
            names
                .get(a)
                .and_then(|v| v.first().cloned())
                .unwrap_or_else(|| panic!("no /proc/kallsyms symbol at {a:#x}"))
        })
        .collect()
}

/// Whether program `id` is still loaded, asked two ways: bpftool (if
/// installed) and BPF_PROG_GET_NEXT_ID.
pub fn is_loaded(id: u32) -> bool {
    let listed = bpfinfo::sys::prog_ids()
        .filter_map(Result::ok)
        .any(|x| x == id);
    let shown = tool("bpftool").is_some_and(|b| {
        Command::new(b)
            .args(["prog", "show", "id", &id.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    listed || shown
}

/// Wait until the kernel has freed program `id` (closing the last
/// descriptor frees it through RCU, so it can take a moment), then assert
/// it is gone.
pub fn assert_unloaded(id: u32) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while is_loaded(id) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !is_loaded(id),
        "program {id} is still loaded: bpftool prog show id {id} succeeds or it is in BPF_PROG_GET_NEXT_ID"
    );
}

/// Load a program with a hot loop in its sub-program, attach it to
/// getpid, and record the whole system with `perf record -a -F 2999
/// <perf_args>` while a thread of this test calls getpid. The program is
/// unloaded (and checked to be gone) before this returns.
pub fn record_with_perf(name: &str, seed: u32, perf_args: &[&str]) -> Recording {
    record(name, seed, perf_args, false)
}

/// Like [`record_with_perf`], but the program is loaded a while after perf
/// starts, so perf sees its load as KSYMBOL/BPF_EVENT records in the
/// stream instead of synthesizing them.
pub fn record_with_perf_loading_during(name: &str, seed: u32) -> Recording {
    record(name, seed, &[], true)
}

/// One recording shared by every test of a file, made on first use (or
/// `None` when the live tests cannot run here; see [`support::live`]).
pub fn shared(
    cell: &'static std::sync::OnceLock<Recording>,
    make: impl FnOnce() -> Recording,
) -> Option<&'static Recording> {
    if !support::live(true) {
        return None;
    }
    Some(cell.get_or_init(make))
}

fn record(name: &str, seed: u32, perf_args: &[&str], load_during: bool) -> Recording {
    // perf records while a program loads: another test's BPF-event
    // listener beside it would make the kernel grow perf's records.
    let _machine = testkit::machine_lock();
    // Not a TempDir: statics are never dropped, and a fixed place per
    // recording lets a failing test's file be looked at.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("recording-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("make the recording's folder");
    let data = dir.join("perf.data");
    let mut args = vec!["record", "-a", "-F", "2999"];
    args.extend_from_slice(perf_args);
    let mut perf = Command::new("perf");
    perf.args(&args)
        .arg("-o")
        .arg(&data)
        .args(["--", "sleep", "3"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut early = None;
    if load_during {
        // perf must record (and be done synthesizing) before the load:
        // polled for, not a guessed sleep.
        early = Some(perf_start::spawn_ready(&args, &data, "4"));
    }
    let prog = TestProg::builder()
        .name(name)
        .loop_iters(2000)
        .seed(seed)
        .build()
        .expect("generate the test program");
    let loaded = prog.load().expect("load the test program");
    let id = loaded.id();
    let attached = loaded
        .attach_tracepoint("syscalls", "sys_enter_getpid")
        .expect("attach to sys_enter_getpid");
    let live = loaded.info().expect("bpf_prog_info of the loaded program");
    let ksym_names = kallsyms_at(&live.info.jited_ksyms);
    let bpftool_xlated = tool("bpftool").map(|b| {
        support::stdout(Command::new(b).args(["prog", "dump", "xlated", "id", &id.to_string()]))
    });

    let child = match early {
        Some(c) => c,
        None => perf.spawn().expect("start perf record"),
    };
    // The workload runs until perf is done, so a slow perf start on a
    // loaded machine still sees it for the whole recording.
    let stop = AtomicBool::new(false);
    let (out, (calls, comm)) = std::thread::scope(|s| {
        let worker = s.spawn(|| {
            let comm = std::fs::read_to_string("/proc/thread-self/comm").expect("own comm");
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                n += support::getpid_until(Instant::now() + Duration::from_millis(20));
            }
            (n, comm.trim_end().to_string())
        });
        let out = child.wait_with_output();
        stop.store(true, Ordering::Relaxed);
        (out, worker.join().expect("getpid thread"))
    });
    let out = out.expect("perf record");
    assert!(
        out.status.success(),
        "perf record failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(attached);
    drop(loaded);
    assert_unloaded(id);
    Recording {
        dir,
        data,
        prog,
        id,
        live,
        ksym_names,
        bpftool_xlated,
        calls,
        comm,
    }
}

/// Copy `src` to `dst` record for record, with its feature sections
/// edited by `edit`.
pub fn rewrite(src: &Path, dst: &Path, edit: impl FnOnce(&mut Features)) {
    rewrite_keeping(src, dst, |_| true, edit)
}

/// A copy without the samples taken in user mode (their binaries are slow
/// to symbolize and do not matter to BPF).
pub fn kernel_samples_only(src: &Path, dst: &Path) {
    const SAMPLE: u32 = 9;
    const CPUMODE_MASK: u16 = 7;
    const KERNEL: u16 = 1;
    rewrite_keeping(
        src,
        dst,
        |r| r.header.type_ != SAMPLE || r.header.misc & CPUMODE_MASK == KERNEL,
        |_| {},
    )
}

/// Copy the records `keep` selects, and the features edited by `edit`.
pub fn rewrite_keeping(
    src: &Path,
    dst: &Path,
    keep: impl Fn(&perfdata::RecordRef<'_>) -> bool,
    edit: impl FnOnce(&mut Features),
) {
    let f = PerfFile::open(src).expect("read the recording");
    let mut w = PerfFileWriter::create(dst, f.attrs()).expect("create the copy");
    let mut recs = f.records_in_file_order().expect("records");
    while let Some(r) = recs.next().expect("a record") {
        if keep(&r) {
            w.write_raw(r.raw).expect("copy a record");
        }
    }
    let mut feats = f.features().clone();
    edit(&mut feats);
    w.finish(&feats).expect("finish the copy");
}

/// One sub-program's bytes as the kernel gave them: `jited_prog_insns`
/// holds the functions back to back, so sub `i` starts after the lengths
/// of the ones before it.
pub fn sub_bytes(live: &LiveProg, i: usize) -> &[u8] {
    let lens = &live.info.jited_func_lens;
    let start: usize = lens[..i].iter().map(|&l| l as usize).sum();
    &live.info.jited_insns[start..start + lens[i] as usize]
}

/// `objdump -D -b binary -m i386:x86-64 --adjust-vma=ADDR` of `code` as
/// (offset from addr, instruction text).
pub fn objdump(code: &[u8], addr: u64) -> Vec<(u32, String)> {
    let objdump = tool("objdump").expect("GNU objdump (binutils) is installed");
    testkit::objdump_x86_64(&objdump, code, addr)
        .into_iter()
        .map(|i| (i.offset, i.text))
        .collect()
}

/// `bpfprof annotate <args> --json -i FILE` as JSON (the command must
/// succeed).
pub fn annotate_json(file: &Path, args: &[&str]) -> Vec<serde_json::Value> {
    let text = support::stdout(
        support::bpfprof()
            .arg("annotate")
            .args(args)
            .args(["--json", "-i"])
            .arg(file),
    );
    let v: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("annotate --json: {e}\n{text}"));
    v.as_array().expect("annotate --json is an array").clone()
}

/// The lines of the program's loop (header and body), as put into it: the
/// `for` line, and the line after it.
/// The samples of an annotated function's instructions, added up.
pub fn insn_samples(target: &serde_json::Value) -> u64 {
    target["insns"]
        .as_array()
        .expect("an annotated target has insns")
        .iter()
        .map(|i| i["samples"].as_u64().unwrap())
        .sum()
}

pub fn loop_lines(prog: &TestProg) -> Vec<(u32, String)> {
    let lines = prog.expected_source_lines();
    let header = lines
        .iter()
        .find(|l| l.line.text.contains("for ("))
        .expect("the test program has a for loop");
    let body = lines
        .iter()
        .find(|l| l.line.line == header.line.line + 1)
        .expect("the loop has a body line");
    vec![
        (header.line.line, header.line.text.clone()),
        (body.line.line, body.line.text.clone()),
    ]
}

/// perf's names for BPF addresses in a file: `perf script
/// --show-bpf-events`'s registering KSYMBOL records, as (addr, name).
pub fn perf_ksymbols(file: &Path) -> Vec<(u64, String)> {
    let out = support::stdout(
        Command::new("perf")
            .args(["script", "--show-bpf-events", "-i"])
            .arg(file),
    );
    out.lines()
        .filter_map(|l| {
            let rest = &l[l.find("PERF_RECORD_KSYMBOL addr ")? + 25..];
            let t: Vec<&str> = rest.split_whitespace().collect();
            let addr = u64::from_str_radix(t.first()?, 16).ok()?;
            let flags = t.iter().position(|x| *x == "flags")?;
            if t.get(flags + 1) != Some(&"0x0") {
                return None;
            }
            let name = t.iter().position(|x| *x == "name")?;
            Some((addr, t.get(name + 1)?.to_string()))
        })
        .collect()
}

/// The hex of a tag, as kernel symbol names spell it.
pub fn hex(tag: &[u8]) -> String {
    tag.iter().map(|b| format!("{b:02x}")).collect()
}
