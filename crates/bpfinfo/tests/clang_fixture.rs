//! A realistic C program (tests/fixtures/packet_parser.bpf.c) built with
//! clang and loaded with bpftool, then read back through this crate and
//! run with BPF_PROG_TEST_RUN.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use bpfinfo::sys::{self, Capture};
use bpfinfo::{listing, Kallsyms, Program};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/packet_parser.bpf.c"
);

/// Removes the bpffs pin (which unloads the program) when dropped.
struct Pin(PathBuf);

impl Drop for Pin {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The `"id"` of `bpftool -j prog show` output.
fn json_id(json: &str) -> u32 {
    let at = json.find("\"id\":").expect("an id field") + 5;
    json[at..]
        .chars()
        .skip_while(|c| c.is_whitespace())
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .expect("a numeric id")
}

/// What hash_ports() in the fixture computes.
fn hash_ports(sport: u32, dport: u32, rounds: u32) -> u32 {
    let mut h: u32 = 2_166_136_261;
    for i in 0..rounds.min(64) {
        h ^= sport.wrapping_add(i);
        h = h.wrapping_mul(16_777_619);
        h ^= dport;
    }
    h
}

/// An Ethernet frame carrying IPv4 with `proto`, and TCP ports if TCP.
fn packet(ethertype: u16, proto: u8, sport: u16, dport: u16) -> Vec<u8> {
    let mut p = vec![0u8; 64];
    p[12..14].copy_from_slice(&ethertype.to_be_bytes());
    p[14] = 0x45; // version 4, ihl 5
    p[23] = proto;
    p[34..36].copy_from_slice(&sport.to_be_bytes());
    p[36..38].copy_from_slice(&dport.to_be_bytes());
    p
}

#[test]
fn clang_program_reads_back_like_bpftool() {
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
    let (clang, bpftool) = (clang.unwrap(), bpftool.unwrap());

    let dir = common::TempDir::new("clang");
    let obj = dir.0.join("packet_parser.bpf.o");
    common::run(&mut testkit::clang_bpf(&clang, Path::new(FIXTURE), &obj));
    let pin = Pin(PathBuf::from(format!(
        "/sys/fs/bpf/bpfprof_test_{}",
        std::process::id()
    )));
    common::run(Command::new(&bpftool).args([
        "prog",
        "load",
        obj.to_str().unwrap(),
        pin.0.to_str().unwrap(),
    ]));
    let id = json_id(&common::run(Command::new(&bpftool).args([
        "-j",
        "prog",
        "show",
        "pinned",
        pin.0.to_str().unwrap(),
    ])));

    let live = sys::fetch_prog(id, Capture::Full).expect("fetch");
    assert!(live.warnings.is_empty(), "{:?}", live.warnings);
    let prog = Program::new(live.info, live.btf.as_deref());
    assert!(prog.warnings().is_empty(), "{:?}", prog.warnings());
    let source = std::fs::read_to_string(FIXTURE).unwrap();

    // Function names from BTF are the C functions, main program first.
    let mut names: Vec<&str> = prog
        .subprogs()
        .iter()
        .map(|s| s.func_name.as_str())
        .collect();
    assert_eq!(names[0], "parse_packet");
    names.sort_unstable();
    assert_eq!(names, ["count_protocol", "hash_ports", "parse_packet"]);
    for n in &names {
        assert!(
            source.contains(&format!("{n}(")),
            "{n} is not in the source"
        );
    }

    // Every line_info text is a line of the file, and the file is ours.
    assert!(!prog.source_lines().is_empty());
    for l in prog.source_lines() {
        assert!(l.file.ends_with("packet_parser.bpf.c"), "{}", l.file);
        assert!(
            source.lines().any(|s| s.trim() == l.text.trim()),
            "line {} {:?} is not in the source",
            l.line,
            l.text
        );
        // Line 0 (with empty text) marks compiler-generated code.
        if l.line == 0 {
            assert_eq!(l.text, "");
            continue;
        }
        assert_eq!(
            source.lines().nth(l.line as usize - 1).map(str::trim),
            Some(l.text.trim()),
            "line number {} does not hold its text",
            l.line
        );
    }
    // The loop's lines are in hash_ports's JIT line table.
    let hash = prog
        .subprogs()
        .iter()
        .find(|s| s.func_name == "hash_ports")
        .unwrap();
    assert!(prog
        .jit_lines(hash.index)
        .iter()
        .any(|l| prog.source_lines()[l.line].text.contains("h *= 16777619u;")));

    // The xlated listing, line for line.
    let kallsyms = Kallsyms::load().unwrap();
    for linum in [false, true] {
        let mut cmd = Command::new(&bpftool);
        cmd.args(["prog", "dump", "xlated", "id", &id.to_string()]);
        if linum {
            cmd.arg("linum");
        }
        let theirs = common::run(&mut cmd);
        let ours = listing(&prog, Some(&kallsyms), linum);
        for (i, (t, o)) in theirs.lines().zip(ours.lines()).enumerate() {
            assert_eq!(o, t, "line {i} (linum {linum})");
        }
        assert_eq!(ours.lines().count(), theirs.lines().count());
    }

    // The machine code, against GNU objdump.
    // (objdump's x86 syntax is what we compare with: other hosts have no
    // oracle here; a missing objdump goes through the gate.)
    if bpfinfo::Arch::host() == Some(bpfinfo::Arch::X86_64) {
        match common::tool("objdump") {
            Some(objdump) => assert!(common::compare_with_objdump(&objdump, &prog) > 50),
            None => {
                common::unavailable(
                    "the machine-code check needs GNU objdump (apt-get install binutils)",
                );
            }
        }
    }

    // Run it through our own BPF_PROG_TEST_RUN.
    let fd = sys::prog_fd_by_id(id).unwrap();
    use std::os::fd::AsFd;
    let run = |p: &[u8]| sys::test_run(fd.as_fd(), p, 3).expect("test run").retval;
    assert_eq!(run(&packet(0x86dd, 6, 1, 2)), 1, "not IPv4");
    assert_eq!(run(&packet(0x0800, 17, 1, 2)), 3, "UDP");
    for (sport, dport) in [(80u16, 443u16), (12345, 22), (0, 0)] {
        let want = hash_ports(u32::from(sport), u32::from(dport), 16) & 0xff;
        assert_eq!(run(&packet(0x0800, 6, sport, dport)), want);
    }
    drop(fd);
    drop(pin);
}
