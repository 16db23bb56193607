//! Shared by the integration tests: the workspace's skip gate (testkit's:
//! a test that needs root, BPF or an external tool prints why and skips,
//! unless `CI` is set, where it fails), and a temp dir, a runner and the
//! objdump comparison.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

pub use testkit::{is_root, normalize_att, tool};

/// Report a missing prerequisite (testkit's gate). Returns `true` when the
/// caller should return (skip); panics under CI.
pub fn unavailable(why: &str) -> bool {
    testkit::skip(why);
    true
}

/// Skip (or fail under CI) unless `$cond` holds: testkit's `require!`,
/// named here so that the tests use it without an import.
#[macro_export]
macro_rules! require {
    ($($t:tt)+) => {
        testkit::require!($($t)+)
    };
}

/// Run a command and return its stdout, panicking with its stderr on failure.
pub fn run(cmd: &mut Command) -> String {
    String::from_utf8(testkit::run(cmd).stdout).expect("utf-8 output")
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
    let mut compared = 0;
    for s in prog.subprogs() {
        let code = prog.jited_bytes(s.index).expect("JIT bytes");
        assert_eq!(code.len(), s.len as usize);
        let theirs = testkit::objdump_x86_64(objdump, code, s.addr);
        let ours = disassemble(Arch::X86_64, code, s.addr, Syntax::Att);
        assert_eq!(ours.len(), theirs.len(), "sub {}:\n{theirs:#?}", s.index);
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
