//! Naming what a program calls, on a clang-built program that calls
//! helpers, hash-map operations and a sub-program
//! (tests/fixtures/map_calls.bpf.c), loaded with bpftool. Oracles: GNU
//! objdump for the JIT's call targets, /proc/kallsyms (read here, not
//! through this crate) for what is at them, and `bpftool prog dump xlated`
//! for the bytecode's call names.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use bpfinfo::sys::{self, Capture};
use bpfinfo::xlated::{call_sites, infer_call_base, CallNames};
use bpfinfo::{disassemble, Arch, Kallsyms, Program, Syntax};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/map_calls.bpf.c"
);

/// Removes the bpffs pin (which unloads the program) when dropped.
struct Pin(PathBuf);

impl Drop for Pin {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The name bpftool gives the call on a `N: (85) call ...` line: after
/// `#` for a bpf-to-bpf call (`call pc+38#bpf_prog_<tag>_f`), before it
/// for helpers and kfuncs (`call htab_map_update_elem#356208`).
fn bpftool_call_name(text: &str) -> Option<String> {
    let rest = text.split_once("call ")?.1;
    let (a, b) = rest.split_once('#')?;
    Some(if a.starts_with("pc") { b } else { a }.to_string())
}

/// Load the fixture; returns the pin (keeping it loaded) and its id.
fn load(bpftool: &Path, clang: &Path, dir: &Path) -> (Pin, u32) {
    let obj = dir.join("map_calls.bpf.o");
    common::run(&mut testkit::clang_bpf(clang, Path::new(FIXTURE), &obj));
    let pin = Pin(PathBuf::from(format!(
        "/sys/fs/bpf/bpfprof_calls_{}",
        std::process::id()
    )));
    common::run(Command::new(bpftool).args([
        "prog",
        "load",
        obj.to_str().unwrap(),
        pin.0.to_str().unwrap(),
    ]));
    let json = common::run(Command::new(bpftool).args([
        "-j",
        "prog",
        "show",
        "pinned",
        pin.0.to_str().unwrap(),
    ]));
    let at = json.find("\"id\":").expect("an id field") + 5;
    let id = json[at..]
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .expect("a numeric id");
    (pin, id)
}

#[test]
fn calls_are_named_as_objdump_kallsyms_and_bpftool_see_them() {
    require!(common::is_root(), "needs root for bpf(2) and bpffs");
    let clang = testkit::clang_for_bpf();
    if let Err(why) = clang {
        common::unavailable(why);
        return;
    }
    let bpftool = common::tool("bpftool");
    require!(
        bpftool.is_some(),
        "bpftool not installed (apt-get install bpftool)"
    );
    let objdump = common::tool("objdump");
    require!(
        objdump.is_some(),
        "GNU objdump not installed (apt-get install binutils)"
    );
    require!(
        bpfinfo::Arch::host() == Some(Arch::X86_64),
        "the objdump comparison is for x86-64"
    );
    let (clang, bpftool, objdump) = (clang.unwrap(), bpftool.unwrap(), objdump.unwrap());
    let dir = common::TempDir::new("calls");
    let (pin, id) = load(&bpftool, &clang, &dir.0);
    let live = sys::fetch_prog(id, Capture::Full).expect("fetch");
    let prog = Program::new(live.info, live.btf.as_deref());
    let ksyms = testkit::kallsyms_by_address();

    // JIT: our call targets are objdump's, and each is where a kernel
    // symbol starts.
    let mut jit_targets: Vec<Vec<u64>> = Vec::new();
    for s in prog.subprogs() {
        let code = prog.jited_bytes(s.index).expect("JIT bytes");
        let listing = testkit::objdump_x86_64(&objdump, code, s.addr);
        let theirs: Vec<u64> = listing
            .iter()
            .filter_map(|i| {
                let t = i.text.strip_prefix("call")?.trim_start();
                u64::from_str_radix(t.split_whitespace().next()?.strip_prefix("0x")?, 16).ok()
            })
            .collect();
        let ours: Vec<u64> = disassemble(Arch::X86_64, code, s.addr, Syntax::Att)
            .iter()
            .filter_map(|i| i.call_target)
            .collect();
        assert_eq!(
            ours, theirs,
            "sub {} call targets vs objdump:\n{listing:#?}",
            s.index
        );
        for t in &ours {
            assert!(ksyms.contains_key(t), "no /proc/kallsyms symbol at {t:#x}");
        }
        jit_targets.push(ours);
    }
    assert!(
        jit_targets.iter().map(Vec::len).sum::<usize>() >= 7,
        "the fixture makes at least 7 calls: {jit_targets:x?}"
    );

    // Xlated: our call lines are bpftool's.
    let k = Kallsyms::load().unwrap();
    let theirs =
        common::run(Command::new(&bpftool).args(["prog", "dump", "xlated", "id", &id.to_string()]));
    let their_calls: Vec<(u32, String)> = testkit::bpftool_xlated_calls(&theirs)
        .into_iter()
        .map(|(i, text)| (i as u32, text))
        .collect();
    let our_calls: Vec<(u32, String)> = bpfinfo::format_program(&prog, Some(&k))
        .into_iter()
        .filter(|x| x.text.contains(") call "))
        .map(|x| (x.index, x.text))
        .collect();
    assert_eq!(our_calls, their_calls);
    for want in ["htab_map_update_elem", "bpf_get_current_comm"] {
        assert!(
            their_calls.iter().any(|c| c.1.contains(want)),
            "bpftool names no call {want}:\n{theirs}"
        );
    }

    // __bpf_call_base, found from the JIT's targets alone, is kallsyms's.
    let all: Vec<u64> = jit_targets.concat();
    let base = infer_call_base(&prog, &all, |c| {
        ksyms
            .get(&c)
            .is_some_and(|n| n.iter().any(|n| n == "__bpf_call_base"))
    });
    let want = ksyms
        .iter()
        .find(|(_, n)| n.iter().any(|n| n == "__bpf_call_base"))
        .map(|(a, _)| *a);
    assert_eq!(base, want, "__bpf_call_base");

    // Each xlated call's target is what bpftool names it, and the JIT
    // calls the same addresses in the same order (it may add calls of
    // its own, never drop one that is still in the bytecode).
    let names = CallNames::for_program(&prog).with_kallsyms(&k);
    let sites = call_sites(&prog, &names);
    assert_eq!(sites.len(), their_calls.len());
    for (site, (i, text)) in sites.iter().zip(&their_calls) {
        assert_eq!(site.index, *i);
        let t = site.target.expect("every xlated call has a target");
        let name = bpftool_call_name(text).expect("bpftool names the call");
        assert!(
            ksyms.get(&t).is_some_and(|n| n.contains(&name)),
            "call {i} at {t:#x}: kallsyms {:?}, bpftool {name}",
            ksyms.get(&t)
        );
    }
    for s in prog.subprogs() {
        let mut jit = jit_targets[s.index].iter();
        for site in sites
            .iter()
            .filter(|c| prog.subprog_of_xlated(c.index) == Some(s.index))
        {
            let t = site.target.unwrap();
            assert!(
                jit.any(|&j| j == t),
                "sub {}: xlated call {} to {t:#x} is not in the JIT's calls {:x?}",
                s.index,
                site.index,
                jit_targets[s.index]
            );
        }
    }
    drop(pin);
}
