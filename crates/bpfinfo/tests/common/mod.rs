//! Gates shared by the integration tests: a test that needs root, BPF or an
//! external tool prints why and skips, unless the environment variable `CI`
//! is set, in which case it fails instead.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

/// Whether missing prerequisites must fail the test.
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some()
}

/// Report a missing prerequisite. Returns `true` when the caller should
/// return (skip); panics under CI.
pub fn unavailable(why: &str) -> bool {
    if in_ci() {
        panic!("CI is set, so this test may not be skipped: {why}");
    }
    eprintln!("SKIPPED: {why}");
    true
}

/// Skip (or fail under CI) unless `$cond` holds.
#[macro_export]
macro_rules! require {
    ($cond:expr, $($why:tt)+) => {
        if !$cond && common::unavailable(&format!($($why)+)) {
            return;
        }
    };
}

/// Root is what the tests use for BPF (CAP_BPF + CAP_PERFMON would do).
pub fn is_root() -> bool {
    bpfinfo::sys::is_root()
}

/// The path of an external program, searching PATH and the sbin
/// directories (bpftool lives in /usr/sbin, not always on a user's PATH).
pub fn tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    let found = path
        .split(':')
        .chain(["/usr/sbin", "/sbin", "/usr/local/sbin"])
        .map(|d| PathBuf::from(d).join(name))
        .find(|p| p.is_file());
    found
}

/// Run a command and return its stdout, panicking with its stderr on failure.
pub fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("running {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// A fresh directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!(
            "bpfinfo-{tag}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("create temp dir");
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Split `objdump -D` output into (offset, bytes, text) per instruction,
/// joining continuation lines (long instructions print their bytes on two
/// lines).
pub fn parse_objdump(out: &str, vma: u64) -> Vec<(u32, Vec<u8>, String)> {
    let mut insns: Vec<(u32, Vec<u8>, String)> = Vec::new();
    for line in out.lines() {
        let mut parts = line.splitn(3, '\t');
        let (Some(addr), Some(bytes)) = (parts.next(), parts.next()) else {
            continue;
        };
        let Some(addr) = addr.trim().strip_suffix(':') else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(addr, 16) else {
            continue;
        };
        let bytes: Vec<u8> = bytes
            .split_whitespace()
            .map(|b| u8::from_str_radix(b, 16).expect("hex byte"))
            .collect();
        match parts.next() {
            Some(text) => insns.push(((addr - vma) as u32, bytes, text.to_string())),
            None => insns
                .last_mut()
                .expect("continuation after an instruction")
                .1
                .extend(bytes),
        }
    }
    insns
}

/// Light normalisation applied to both sides of the objdump comparison:
/// - whitespace runs become one space;
/// - objdump always prints the scale of an index register (`,1)`), iced
///   omits a scale of 1;
/// - objdump prints the one-operand shift/rotate-by-one encoding (D1/D3)
///   as `shl %rdx`, iced as `shl $0x1,%rdx`;
/// - objdump's trailing `# address` comments go.
pub fn normalize_att(text: &str) -> String {
    let text = text.split(" #").next().unwrap_or(text);
    let mut s = text.split_whitespace().collect::<Vec<_>>().join(" ");
    s = s.replace(",1)", ")");
    let shifts = ["shl", "shr", "sar", "sal", "rol", "ror", "rcl", "rcr"];
    if let Some((m, ops)) = s.split_once(' ') {
        if shifts.iter().any(|x| m.starts_with(x)) && !ops.contains(',') {
            s = format!("{m} $0x1,{ops}");
        }
    }
    s
}

/// Disassemble every sub-program of `prog` with us and with
/// `objdump -D -b binary -m i386:x86-64 --adjust-vma=ADDR`, and assert they
/// agree instruction for instruction. Returns how many were compared.
pub fn compare_with_objdump(objdump: &std::path::Path, prog: &bpfinfo::Program) -> usize {
    use bpfinfo::{disassemble, Arch, Syntax};
    let dir = TempDir::new("objdump");
    let mut compared = 0;
    for s in prog.subprogs() {
        let code = prog.jited_bytes(s.index).expect("JIT bytes");
        assert_eq!(code.len(), s.len as usize);
        let file = dir.0.join(format!("sub{}.bin", s.index));
        std::fs::write(&file, code).unwrap();
        let out = run(Command::new(objdump).args([
            "-D",
            "-b",
            "binary",
            "-m",
            "i386:x86-64",
            &format!("--adjust-vma={:#x}", s.addr),
            file.to_str().unwrap(),
        ]));
        let theirs = parse_objdump(&out, s.addr);
        let ours = disassemble(Arch::X86_64, code, s.addr, Syntax::Att);
        assert_eq!(ours.len(), theirs.len(), "sub {}:\n{out}", s.index);
        for (o, (off, bytes, text)) in ours.iter().zip(&theirs) {
            assert_eq!(o.offset, *off, "sub {}", s.index);
            assert_eq!(&o.bytes, bytes, "sub {} at {off:#x}", s.index);
            assert_eq!(
                normalize_att(&o.text),
                normalize_att(text),
                "sub {} at {off:#x}",
                s.index
            );
        }
        compared += ours.len();
    }
    compared
}
