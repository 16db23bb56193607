//! Helpers shared by the tests of the workspace's crates.
//!
//! The one skip gate lives here: a test that needs root, BPF, perf or an
//! external tool and cannot have them says why and returns, unless the
//! environment variable `CI` is set, where it fails instead (a green CI run
//! never hides a skipped test). So do the oracles more than one crate
//! reads the same way: GNU objdump listings, /proc/kallsyms, perf's
//! FINISHED_INIT record, clang building a BPF object. A dev-only crate:
//! nothing outside tests depends on it.

#![warn(missing_docs)]

mod machine;
pub use machine::{machine_lock, MachineLock, Sysctl};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Whether a missing requirement must fail the test instead of skipping it:
/// the environment variable `CI` is set.
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some()
}

/// Say that the running test cannot do its work and why: prints
/// `skipped: <test>: <why>` and returns, so that the caller returns next;
/// under CI (see [`in_ci`]) it panics with the why instead.
#[track_caller]
pub fn skip(why: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("?");
    if in_ci() {
        panic!("{test}: CI is set, so this test may not be skipped: {why}");
    }
    eprintln!("skipped: {test}: {why}");
    log_skip(test, std::panic::Location::caller().file(), why);
}

/// The test harness captures a passing test's output, so a skip would look
/// like a pass: scripts/test names a file in `BPFPROF_SKIP_LOG`, each skip
/// appends a line to it, and the script ends with their count and reasons.
fn log_skip(test: &str, file: &str, why: &str) {
    use std::io::Write;
    let Some(path) = std::env::var_os("BPFPROF_SKIP_LOG") else {
        return;
    };
    // One write of one line with O_APPEND: lines of tests running at once
    // do not interleave.
    let line = format!("{file}: {test}: {why}\n");
    let written = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        eprintln!(
            "cannot note the skip in {}: {e}",
            Path::new(&path).display()
        );
    }
}

/// `ok`, or else [`skip`] with `why` and `false`: `if !require(..) { return }`.
#[track_caller]
pub fn require(ok: bool, why: &str) -> bool {
    if !ok {
        skip(why);
    }
    ok
}

/// Return from the calling test unless the condition holds, saying why (a
/// format string) the way [`skip`] does.
#[macro_export]
macro_rules! require {
    ($cond:expr, $($why:tt)+) => {
        if !$crate::require($cond, &format!($($why)+)) {
            return;
        }
    };
}

/// Whether the tests run as root (what they use for bpf(2) and system-wide
/// perf events; CAP_BPF and CAP_PERFMON would do, but are not looked for).
/// Read from /proc so that a crate without libc can ask.
pub fn is_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .is_some_and(|l| l.split_whitespace().nth(2) == Some("0"))
}

/// Whether Linux perf runs (`perf --version` succeeds).
pub fn has_perf() -> bool {
    Command::new("perf")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Run a command, panicking with its stderr when it cannot start or fails.
#[track_caller]
pub fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// clang, if the BPF C fixtures can be built here (clang and libbpf's
/// headers); else what to install.
pub fn clang_for_bpf() -> Result<PathBuf, &'static str> {
    let clang = tool("clang").ok_or("clang not installed (apt-get install clang libbpf-dev)")?;
    if !Path::new("/usr/include/bpf/bpf_helpers.h").exists() {
        return Err("libbpf headers not installed (apt-get install libbpf-dev)");
    }
    Ok(clang)
}

/// The clang command that builds BPF C `src` into object `out`, with BTF
/// and line info (`-g`) as libbpf loaders expect.
pub fn clang_bpf(clang: &Path, src: &Path, out: &Path) -> Command {
    let mut cmd = Command::new(clang);
    cmd.args(["-target", "bpf", "-O2", "-g"])
        .arg(format!(
            "-I/usr/include/{}-linux-gnu",
            std::env::consts::ARCH
        ))
        .arg("-c")
        .arg(src)
        .arg("-o")
        .arg(out);
    cmd
}

/// /proc/kallsyms as address → names, in the file's order (several
/// symbols may share an address): the kernel's own view, an oracle
/// independent of the parsers under test.
pub fn kallsyms_by_address() -> HashMap<u64, Vec<String>> {
    let text = std::fs::read_to_string("/proc/kallsyms").expect("read /proc/kallsyms");
    let mut m: HashMap<u64, Vec<String>> = HashMap::new();
    for l in text.lines() {
        let t: Vec<&str> = l.split_whitespace().collect();
        if let (Some(a), Some(name)) = (t.first(), t.get(2)) {
            if let Ok(a) = u64::from_str_radix(a, 16) {
                m.entry(a).or_default().push(name.to_string());
            }
        }
    }
    m
}

/// Whether the data section of the perf.data written so far at `path`
/// holds FINISHED_INIT (type 82: perf's start-up synthesis is done),
/// walking records by their sizes from the header's data offset (@40).
/// Written for tests that wait for a live `perf record`, so a short or
/// half-written file is "not yet", never an error.
pub fn perf_has_finished_init(path: &Path) -> bool {
    let b = std::fs::read(path).unwrap_or_default();
    if b.len() < 104 {
        return false;
    }
    let mut off = u64::from_le_bytes(b[40..48].try_into().unwrap()) as usize;
    while off + 8 <= b.len() {
        let ty = u32::from_le_bytes(b[off..off + 4].try_into().unwrap());
        let size = u16::from_le_bytes([b[off + 6], b[off + 7]]) as usize;
        if ty == 82 {
            return true;
        }
        if size < 8 {
            return false;
        }
        off += size;
    }
    false
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

/// One instruction of an objdump listing.
#[derive(Debug, Clone)]
pub struct ObjdumpInsn {
    /// Offset from the listing's start address.
    pub offset: u32,
    /// The instruction's bytes.
    pub bytes: Vec<u8>,
    /// objdump's text of it (AT&T syntax, as it printed it).
    pub text: String,
}

/// Split `objdump -D --adjust-vma=VMA` output into instructions, joining
/// continuation lines (long instructions print their bytes on two lines).
pub fn parse_objdump(out: &str, vma: u64) -> Vec<ObjdumpInsn> {
    let mut insns: Vec<ObjdumpInsn> = Vec::new();
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
            Some(text) => insns.push(ObjdumpInsn {
                offset: (addr - vma) as u32,
                bytes,
                text: text.to_string(),
            }),
            None => insns
                .last_mut()
                .expect("continuation after an instruction")
                .bytes
                .extend(bytes),
        }
    }
    insns
}

/// GNU objdump's listing of raw x86-64 machine code placed at `vma`
/// (`objdump -D -b binary -m i386:x86-64 --adjust-vma=VMA`), parsed: the
/// oracle for JIT images. The code goes through a temp file, removed after.
pub fn objdump_x86_64(objdump: &Path, code: &[u8], vma: u64) -> Vec<ObjdumpInsn> {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let file = std::env::temp_dir().join(format!("testkit-objdump-{}-{n}.bin", std::process::id()));
    std::fs::write(&file, code).expect("write the code for objdump");
    let out = Command::new(objdump)
        .args(["-D", "-b", "binary", "-m", "i386:x86-64"])
        .arg(format!("--adjust-vma={vma:#x}"))
        .arg(&file)
        .output();
    let _ = std::fs::remove_file(&file);
    let out = out.unwrap_or_else(|e| panic!("cannot run {}: {e}", objdump.display()));
    assert!(
        out.status.success(),
        "objdump failed: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    parse_objdump(&String::from_utf8_lossy(&out.stdout), vma)
}

/// The call instructions of a `bpftool prog dump xlated` listing, as
/// (instruction index, text after `N: `): the oracle for call names.
pub fn bpftool_xlated_calls(listing: &str) -> Vec<(u64, String)> {
    listing
        .lines()
        .filter(|l| l.contains(") call "))
        .filter_map(|l| {
            let (i, text) = l.trim_start().split_once(": ")?;
            Some((i.parse().ok()?, text.to_string()))
        })
        .collect()
}

/// Light normalisation applied to both sides of a comparison with objdump:
/// - objdump's trailing `# address` and `<symbol>` comments go;
/// - whitespace runs become one space;
/// - objdump always prints the scale of an index register (`,1)`), iced
///   omits a scale of 1;
/// - objdump prints the one-operand shift/rotate-by-one encoding (D1/D3)
///   as `shl %rdx`, iced as `shl $0x1,%rdx`.
pub fn normalize_att(text: &str) -> String {
    let text = text.split(" #").next().unwrap_or(text);
    let text = match text.find(" <") {
        Some(i) if text.ends_with('>') => &text[..i],
        _ => text,
    };
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Only does something when run by the test below, as a child process.
    #[test]
    fn gate_child() {
        if std::env::var_os("TESTKIT_GATE_CHILD").is_none() {
            return;
        }
        require!(1 + 1 == 3, "needs {} to be {}", "arithmetic", "broken");
        panic!("require! did not return");
    }

    /// The gate's two behaviours, seen from outside: this test binary runs
    /// `gate_child` again, without and with CI, and its exit status and
    /// output say whether the test skipped or failed.
    #[test]
    fn a_missing_requirement_skips_but_fails_under_ci() {
        let run_child = |ci: bool| {
            let mut cmd = Command::new(std::env::current_exe().unwrap());
            cmd.args([
                "tests::gate_child",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("TESTKIT_GATE_CHILD", "1")
            .env_remove("CI");
            if ci {
                cmd.env("CI", "true");
            }
            let out = cmd.output().expect("run the test binary again");
            let text = String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr);
            (out.status.success(), text)
        };
        let (ok, text) = run_child(false);
        assert!(ok, "without CI the test passes (skips):\n{text}");
        assert!(
            text.contains("skipped: tests::gate_child: needs arithmetic to be broken"),
            "{text}"
        );
        let (ok, text) = run_child(true);
        assert!(!ok, "with CI the test fails:\n{text}");
        assert!(
            text.contains("CI is set, so this test may not be skipped: needs arithmetic"),
            "{text}"
        );
        assert!(!text.contains("require! did not return"), "{text}");
    }

    #[test]
    fn a_long_instruction_continues_on_the_next_line() {
        let out = "ffffffffc0001000:\t0f 1f 44 00 00       \tnopl   0x0(%rax,%rax,1)\n\
                   ffffffffc0001005:\t48 b8 01 02 03 04 05 \tmovabs $0x807060504030201,%rax\n\
                   ffffffffc000100c:\t06 07 08 \n";
        let v = parse_objdump(out, 0xffff_ffff_c000_1000);
        assert_eq!(v.len(), 2);
        assert_eq!((v[1].offset, v[1].bytes.len()), (5, 10));
        assert_eq!(normalize_att(&v[0].text), "nopl 0x0(%rax,%rax)");
    }

    #[test]
    fn comments_and_shift_by_one_are_normalised() {
        assert_eq!(normalize_att("call   0x10 <foo>"), "call 0x10");
        assert_eq!(
            normalize_att("lea    0x8(%rip),%rax        # 0x20"),
            "lea 0x8(%rip),%rax"
        );
        assert_eq!(normalize_att("shl    %rdx"), "shl $0x1,%rdx");
    }
}
