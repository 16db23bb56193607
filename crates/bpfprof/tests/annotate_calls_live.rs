//! Calls in BPF code, named and charged with the samples of what they
//! called: `bpf show --jited/--xlated` on a loaded clang-built program, and
//! `annotate` on a `bpfprof record -a -g` recording of a bpftrace program
//! that updates a hash map on every getpid(2). Oracles: /proc/kallsyms
//! (what is at each call target), `bpftool prog dump xlated` (the
//! bytecode's call names), and `perf script`'s call chains of the same
//! file (which samples were inside each call).

mod support;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use bpfinfo::sys::{self, Capture, LiveProg};
use serde_json::Value;
use testkit::tool;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../bpfinfo/tests/fixtures/map_calls.bpf.c"
);

/// The absolute target of an AT&T `call 0x...` text.
fn call_addr(text: &str) -> Option<u64> {
    let t = text.strip_prefix("call ")?.trim();
    u64::from_str_radix(t.strip_prefix("0x")?, 16).ok()
}

/// `bpftool prog dump xlated id ID`'s call instructions: (index, text).
fn bpftool_calls(bpftool: &Path, id: u32) -> Vec<(u64, String)> {
    testkit::bpftool_xlated_calls(&support::stdout(Command::new(bpftool).args([
        "prog",
        "dump",
        "xlated",
        "id",
        &id.to_string(),
    ])))
}

/// Removes the bpffs pin (which unloads the program) when dropped.
struct Pin(PathBuf);

impl Drop for Pin {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn bpf_show_names_calls_as_kallsyms_and_bpftool_do() {
    if !support::live(false) {
        return;
    }
    let (Some(clang), Some(bpftool)) = (tool("clang"), tool("bpftool")) else {
        support::require(
            false,
            "needs clang and bpftool (apt-get install clang libbpf-dev bpftool)",
        );
        return;
    };
    if !support::require(
        Path::new("/usr/include/bpf/bpf_helpers.h").exists(),
        "libbpf headers not installed (apt-get install libbpf-dev)",
    ) {
        return;
    }
    let dir = support::tempdir();
    let obj = support::path(&dir, "map_calls.bpf.o");
    support::run(&mut testkit::clang_bpf(&clang, Path::new(FIXTURE), &obj));
    let pin = Pin(PathBuf::from(format!(
        "/sys/fs/bpf/bpfprof_annotate_calls_{}",
        std::process::id()
    )));
    support::run(
        Command::new(&bpftool)
            .args(["prog", "load"])
            .arg(&obj)
            .arg(&pin.0),
    );
    let shown: Value = serde_json::from_str(&support::stdout(
        Command::new(&bpftool)
            .args(["-j", "prog", "show", "pinned"])
            .arg(&pin.0),
    ))
    .unwrap();
    let id = shown["id"].as_u64().expect("bpftool shows the id") as u32;
    let live = sys::fetch_prog(id, Capture::Full).expect("fetch the program");
    let ksyms = testkit::kallsyms_by_address();

    // --jited: every call is named, by kallsyms's name at its target; a
    // sub-program (kallsyms: bpf_prog_<tag>_<func>) by its function name.
    let out = support::stdout(support::bpfprof().args(["bpf", "show", &id.to_string(), "--jited"]));
    let mut calls = 0;
    let mut names = BTreeSet::new();
    for l in out.lines().filter(|l| l.contains("\tcall ")) {
        let text = l.split_once('\t').unwrap().1;
        let (insn, name) = text
            .split_once(" <")
            .unwrap_or_else(|| panic!("call not named: {l}\n{out}"));
        let name = name.strip_suffix('>').unwrap();
        let addr = call_addr(insn).unwrap_or_else(|| panic!("not a direct call: {l}"));
        let theirs = ksyms
            .get(&addr)
            .unwrap_or_else(|| panic!("no kallsyms symbol at {addr:#x}"));
        let ok = theirs.iter().any(|k| {
            k == name
                || live.info.jited_ksyms.contains(&addr)
                    && k.starts_with("bpf_prog_")
                    && k.ends_with(&format!("_{name}"))
        });
        assert!(ok, "{l}: kallsyms has {theirs:?}");
        names.insert(name.to_string());
        calls += 1;
    }
    assert!(calls >= 7, "the fixture makes 7 calls:\n{out}");
    // bpftool names the same kernel functions in the bytecode.
    let xl = bpftool_calls(&bpftool, id);
    for (_, text) in &xl {
        let callee = text
            .split_once("call ")
            .unwrap()
            .1
            .split('#')
            .next()
            .unwrap();
        if !callee.starts_with("pc") {
            assert!(
                names.contains(callee),
                "{callee} (bpftool) not in {names:?}"
            );
        }
    }

    // --xlated: the call lines are bpftool's.
    let out =
        support::stdout(support::bpfprof().args(["bpf", "show", &id.to_string(), "--xlated"]));
    let ours = testkit::bpftool_xlated_calls(&out);
    assert_eq!(ours, xl);
    drop(pin);
}

/// A `bpfprof record -a -g` recording of a bpftrace program, and what the
/// kernel said about the program while it was loaded.
struct Recording {
    data: PathBuf,
    id: u32,
    live: LiveProg,
    kallsyms: HashMap<u64, Vec<String>>,
    bpftool_calls: Vec<(u64, String)>,
}

static REC: OnceLock<Recording> = OnceLock::new();

fn rec() -> Option<&'static Recording> {
    // perf script is the oracle for the call-site samples.
    if !support::live(true) {
        return None;
    }
    let (Some(_), Some(bpftool)) = (tool("bpftrace"), tool("bpftool")) else {
        support::require(
            false,
            "needs bpftrace and bpftool (apt-get install bpftrace bpftool)",
        );
        return None;
    };
    Some(REC.get_or_init(|| record(&bpftool)))
}

fn record(bpftool: &Path) -> Recording {
    // Programs load while perf is the oracle of other tests' recordings.
    let _machine = testkit::machine_lock();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("recording-annotate-calls");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let before: BTreeSet<u32> = sys::prog_ids().filter_map(Result::ok).collect();
    // A map update on every getpid: the expensive call of the program.
    let guard = support::Bpftrace::start(
        "tracepoint:syscalls:sys_enter_getpid { @s[tid, nsecs & 1023] = nsecs; }",
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let id = loop {
        let new = sys::prog_ids()
            .filter_map(Result::ok)
            .filter(|id| !before.contains(id))
            .find(|&id| {
                sys::fetch_prog(id, Capture::Summary)
                    .is_ok_and(|p| p.info.name.starts_with("sys_enter_getp"))
            });
        if let Some(id) = new {
            break id;
        }
        assert!(
            Instant::now() < deadline,
            "bpftrace's program did not appear"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let live = sys::fetch_prog(id, Capture::Full).expect("fetch bpftrace's program");
    let bpftool_calls = bpftool_calls(bpftool, id);
    let kallsyms = testkit::kallsyms_by_address();

    let data = dir.join("calls.data");
    record_while_calling_getpid(&data);
    drop(guard);
    Recording {
        data,
        id,
        live,
        kallsyms,
        bpftool_calls,
    }
}

/// `bpfprof record -a -g --duration 2` into `data`, calling getpid until
/// it ends so the programs on it run throughout.
fn record_while_calling_getpid(data: &Path) {
    let mut rec = support::bpfprof()
        .args(["record", "-a", "-g", "--duration", "2", "-o"])
        .arg(data)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start bpfprof record");
    let status = loop {
        support::getpid_until(Instant::now() + Duration::from_millis(20));
        if let Some(s) = rec.try_wait().unwrap() {
            break s;
        }
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut rec.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "bpfprof record failed: {err}");
}

/// `annotate --prog ID --json [args]`: the one sub-program of bpftrace's
/// program.
fn annotated(r: &Recording, args: &[&str]) -> Value {
    let text = support::stdout(
        support::bpfprof()
            .args(["annotate", "--json", "--prog", &r.id.to_string(), "-i"])
            .arg(&r.data)
            .args(args),
    );
    let v: Value = serde_json::from_str(&text).unwrap();
    let t = v.as_array().unwrap();
    assert_eq!(t.len(), 1, "one sub-program: {text}");
    assert!(t[0].get("insns").is_some(), "not annotated: {text}");
    t[0].clone()
}

/// The kernel function bpftool's bytecode shows the map update calling.
fn update_function(r: &Recording) -> String {
    r.bpftool_calls
        .iter()
        .map(|(_, t)| t.split_once("call ").unwrap().1.split('#').next().unwrap())
        .find(|n| n.contains("update"))
        .unwrap_or_else(|| panic!("bpftool shows no update call: {:?}", r.bpftool_calls))
        .to_string()
}

#[test]
fn annotate_names_calls_by_kallsyms_at_their_targets() {
    let Some(r) = rec() else { return };
    let a = annotated(r, &[]);
    let mut named = 0;
    for i in a["insns"].as_array().unwrap() {
        let Some(addr) = call_addr(i["text"].as_str().unwrap()) else {
            continue;
        };
        let theirs = r.kallsyms.get(&addr).cloned().unwrap_or_default();
        let ours = i["callee"]
            .as_str()
            .unwrap_or_else(|| panic!("call not named: {i}"));
        assert!(
            theirs.iter().any(|k| k == ours),
            "{i}: kallsyms has {theirs:?}"
        );
        named += 1;
    }
    assert!(named >= 2, "bpftrace's program makes calls: {a}");
    let text = support::stdout(
        support::bpfprof()
            .args(["annotate", "--prog", &r.id.to_string(), "-i"])
            .arg(&r.data),
    );
    let update = update_function(r);
    assert!(text.contains(&format!("<{update}>  → ")), "{text}");
    assert!(text.contains("in code it called ("), "{text}");
}

/// Per call instruction (by return address), the samples whose innermost
/// BPF frame is that return address and not their leaf, from `perf
/// script`'s call chains; and how many samples have the program anywhere.
fn perf_call_sites(r: &Recording) -> (BTreeMap<u64, u64>, u64) {
    let out = support::stdout(
        Command::new("perf")
            .args(["script", "-F", "ip,sym", "-i"])
            .arg(&r.data),
    );
    let lo = r.live.info.jited_ksyms[0];
    let hi = lo + u64::from(r.live.info.jited_func_lens[0]);
    let is_bpf = |s: &str| {
        ["bpf_prog_", "bpf_trampoline_", "bpf_dispatcher_"]
            .iter()
            .any(|p| s.starts_with(p))
    };
    let mut sites = BTreeMap::new();
    let mut with_prog = 0;
    for sample in out.split("\n\n") {
        let frames: Vec<(u64, &str)> = sample
            .lines()
            .filter_map(|l| {
                let (a, s) = l.trim().split_once(' ').unwrap_or((l.trim(), ""));
                Some((u64::from_str_radix(a, 16).ok()?, s.trim()))
            })
            .collect();
        if frames.iter().any(|f| (lo..hi).contains(&f.0)) {
            with_prog += 1;
        }
        if let Some(j) = frames.iter().position(|f| is_bpf(f.1)) {
            let ip = frames[j].0;
            if j > 0 && (lo..hi).contains(&ip) {
                *sites.entry(ip).or_default() += 1;
            }
        }
    }
    (sites, with_prog)
}

#[test]
fn each_call_carries_the_samples_perf_script_sees_inside_it() {
    let Some(r) = rec() else { return };
    let a = annotated(r, &[]);
    let insns = a["insns"].as_array().unwrap();
    let (sites, with_prog) = perf_call_sites(r);
    let update = update_function(r);
    let mut update_called = None;
    let mut sum = 0;
    for (k, i) in insns.iter().enumerate() {
        let called = i["called"].as_u64().unwrap();
        sum += called;
        if i.get("callee").is_none() {
            continue;
        }
        // The return address is where the next instruction starts.
        let ret = insns.get(k + 1).map_or_else(
            || a["start"].as_u64().unwrap() + a["len"].as_u64().unwrap(),
            |n| n["addr"].as_u64().unwrap(),
        );
        let want = sites.get(&ret).copied().unwrap_or(0);
        assert_eq!(
            called, want,
            "{i}: perf script has {want} samples returning to {ret:#x}"
        );
        if i["callee"].as_str() == Some(update.as_str()) {
            update_called = Some(called);
        }
    }
    assert_eq!(
        a["called"].as_u64(),
        Some(sum),
        "the header's total is the calls'"
    );
    let update_called = update_called.unwrap_or_else(|| panic!("no call to {update}: {a}"));
    assert!(update_called > 0, "no samples inside {update}");
    assert!(
        a["samples"].as_u64().unwrap() + sum <= with_prog,
        "own + called exceed the {with_prog} samples with the program on the stack"
    );
}

#[test]
fn xlated_view_names_calls_as_bpftool_and_carries_their_samples() {
    let Some(r) = rec() else { return };
    let jit = annotated(r, &[]);
    let x = annotated(r, &["--xlated"]);
    let rows = x["xlated"].as_array().unwrap();
    let ours: Vec<(u64, String)> = rows
        .iter()
        .filter(|x| x["text"].as_str().unwrap().contains(") call "))
        .map(|x| {
            (
                x["index"].as_u64().unwrap(),
                x["text"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(ours, r.bpftool_calls, "call names vs bpftool's");
    // The update call in bytecode has the JIT update call's samples.
    let update = update_function(r);
    let jit_called: u64 = jit["insns"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["callee"].as_str() == Some(update.as_str()))
        .map(|i| i["called"].as_u64().unwrap())
        .sum();
    let x_called: u64 = rows
        .iter()
        .filter(|x| {
            x["text"]
                .as_str()
                .unwrap()
                .contains(&format!("call {update}#"))
        })
        .map(|x| x["called"].as_u64().unwrap())
        .sum();
    assert!(jit_called > 0, "no samples inside {update}");
    assert_eq!(x_called, jit_called, "{update}: xlated vs JIT");
    // Every call's samples reach the bytecode (bpftrace's program has no
    // line info, so samples of interrupts taken at other instructions
    // have nowhere to go, like the instructions' own samples).
    let total: u64 = rows.iter().map(|x| x["called"].as_u64().unwrap()).sum();
    let at_calls: u64 = jit["insns"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i.get("callee").is_some())
        .map(|i| i["called"].as_u64().unwrap())
        .sum();
    assert_eq!(total, at_calls, "every call's samples are carried");
}

/// Kills the loader (which unloads its program) when dropped.
struct Loader(Child);

impl Drop for Loader {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

static REC_C: OnceLock<Recording> = OnceLock::new();

/// The clang fixture (which has BTF and line info, unlike bpftrace's
/// programs), attached to getpid by perf's BPF loader, recorded with -g.
fn rec_c() -> Option<&'static Recording> {
    if !support::live(true) {
        return None;
    }
    let (Some(clang), Some(bpftool)) = (tool("clang"), tool("bpftool")) else {
        support::require(
            false,
            "needs clang and bpftool (apt-get install clang libbpf-dev bpftool)",
        );
        return None;
    };
    Some(REC_C.get_or_init(|| record_c(&clang, &bpftool)))
}

fn record_c(clang: &Path, bpftool: &Path) -> Recording {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("recording-annotate-calls-c");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let obj = dir.join("map_calls.bpf.o");
    support::run(testkit::clang_bpf(clang, Path::new(FIXTURE), &obj).arg("-DPERF_LOADER"));
    let before: BTreeSet<u32> = sys::prog_ids().filter_map(Result::ok).collect();
    let loader = Loader(
        Command::new("perf")
            .args(["record", "-e"])
            .arg(&obj)
            .arg("-o")
            .arg(dir.join("loader.data"))
            .args(["--", "sleep", "600"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start perf's BPF loader"),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let id = loop {
        let new = sys::prog_ids()
            .filter_map(Result::ok)
            .filter(|id| !before.contains(id))
            .find(|&id| {
                sys::fetch_prog(id, Capture::Summary).is_ok_and(|p| p.info.name == "count_getpid")
            });
        if let Some(id) = new {
            break id;
        }
        assert!(Instant::now() < deadline, "perf did not load the fixture");
        std::thread::sleep(Duration::from_millis(20));
    };
    let live = sys::fetch_prog(id, Capture::Full).expect("fetch the fixture");
    let bpftool_calls = bpftool_calls(bpftool, id);
    let kallsyms = testkit::kallsyms_by_address();
    let data = dir.join("calls.data");
    record_while_calling_getpid(&data);
    drop(loader);
    Recording {
        data,
        id,
        live,
        kallsyms,
        bpftool_calls,
    }
}

/// The clang program's update call: the JIT call to the function bpftool
/// names, on the source line that calls bpf_map_update_elem, in the JIT,
/// source and bytecode views alike.
#[test]
fn source_and_bytecode_views_carry_a_calls_samples_to_its_line_and_call() {
    let Some(r) = rec_c() else { return };
    let update = update_function(r);
    let targets: Vec<Value> = serde_json::from_str(&support::stdout(
        support::bpfprof()
            .args([
                "annotate",
                "--json",
                "--xlated",
                "--prog",
                &r.id.to_string(),
                "-i",
            ])
            .arg(&r.data),
    ))
    .unwrap();
    let main = targets
        .iter()
        .find(|t| t["bpf"]["sub"].as_u64() == Some(0))
        .expect("the main function is annotated");
    let insns = main["insns"].as_array().unwrap();
    let call = insns
        .iter()
        .find(|i| i["callee"].as_str() == Some(update.as_str()))
        .unwrap_or_else(|| panic!("no call named {update}: {main}"));
    let addr = call_addr(call["text"].as_str().unwrap()).unwrap();
    assert!(r.kallsyms[&addr].contains(&update), "kallsyms at {addr:#x}");
    let called = call["called"].as_u64().unwrap();
    assert!(called > 0, "no samples inside {update}");

    let lines = main["lines"].as_array().unwrap();
    let line = &lines[call["line"].as_u64().expect("the call has a line") as usize];
    assert!(
        line["text"]
            .as_str()
            .unwrap()
            .contains("bpf_map_update_elem("),
        "{update} is called from {line}"
    );
    assert!(line["called"].as_u64().unwrap() >= called, "{line}");
    let text = support::stdout(
        support::bpfprof()
            .args(["annotate", "--source", "--prog", &r.id.to_string(), "-i"])
            .arg(&r.data),
    );
    let row = text
        .lines()
        .find(|l| l.contains("bpf_map_update_elem("))
        .unwrap_or_else(|| panic!("no source row for the update:\n{text}"));
    assert!(
        row.contains(" → ") && row.ends_with("in called code"),
        "{row}"
    );

    // The bytecode: calls named as bpftool names them (sub-programs by the
    // kernel's names), the update call carrying the JIT call's samples.
    let rows = main["xlated"].as_array().unwrap();
    let sub1: Vec<Value> = targets
        .iter()
        .filter(|t| t["bpf"]["sub"].as_u64() != Some(0))
        .flat_map(|t| t["xlated"].as_array().unwrap().clone())
        .collect();
    let ours: BTreeMap<u64, String> = rows
        .iter()
        .chain(&sub1)
        .filter(|x| x["text"].as_str().unwrap().contains(") call "))
        .map(|x| {
            (
                x["index"].as_u64().unwrap(),
                x["text"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for (i, text) in &r.bpftool_calls {
        // A sub-program without samples is not annotated.
        if let Some(o) = ours.get(i) {
            assert_eq!(o, text, "xlated call {i} vs bpftool");
        }
    }
    assert!(ours.values().any(|t| t.contains("call pc")), "{ours:?}");
    let x = rows
        .iter()
        .find(|x| {
            x["text"]
                .as_str()
                .unwrap()
                .contains(&format!("call {update}#"))
        })
        .unwrap();
    assert_eq!(x["called"].as_u64(), Some(called), "{x}");
}
