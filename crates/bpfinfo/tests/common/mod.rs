//! Gates shared by the integration tests: a test that needs root, BPF or an
//! external tool prints why and skips, unless the environment variable `CI`
//! is set, in which case it fails instead.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

pub use testkit::{normalize_att, parse_objdump, tool};

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
        for (o, t) in ours.iter().zip(&theirs) {
            let off = t.offset;
            assert_eq!(o.offset, off, "sub {}", s.index);
            assert_eq!(o.bytes, t.bytes, "sub {} at {off:#x}", s.index);
            assert_eq!(
                normalize_att(&o.text),
                normalize_att(&t.text),
                "sub {} at {off:#x}",
                s.index
            );
        }
        compared += ours.len();
    }
    compared
}
