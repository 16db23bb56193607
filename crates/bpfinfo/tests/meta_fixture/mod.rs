//! The owners/attachments fixture: fixtures/owners_attach.bpf.c built with
//! clang, loaded and attached by fixtures/attach_pin.c (libbpf), its links
//! pinned under /sys/fs/bpf so the programs outlive the loader. Shared by
//! bpfinfo's and bpfprof's live tests (bpfprof includes it by path).
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../bpfinfo/tests/fixtures");

/// The fixture's two programs, by the names in the C file.
pub const TP_PROG: &str = "meta_getppid";
pub const RAW_PROG: &str = "meta_raw_enter";
pub const MAP: &str = "meta_calls";

/// The loaded fixture. Dropping it ends the loader and unloads the programs.
pub struct Fixture {
    pub loader_pid: u32,
    pub pin_dir: PathBuf,
    pub tmp: PathBuf,
    child: Option<Child>,
    stdin: Option<ChildStdin>,
}

/// What a tool missing from the machine, or a failed step, is called.
pub type Why = String;

fn run(cmd: &mut Command) -> Result<String, Why> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

impl Fixture {
    /// Build and load. Err says what is missing (clang, cc, libbpf-dev).
    pub fn start(tag: &str) -> Result<Fixture, Why> {
        let clang = testkit::clang_for_bpf()?;
        let cc = testkit::tool("cc").ok_or("needs a C compiler (apt-get install gcc)")?;
        if !Path::new("/usr/include/bpf/libbpf.h").exists() {
            return Err("needs libbpf headers (apt-get install libbpf-dev)".into());
        }
        // Unique per start: tests of one binary run at once, and a loader
        // being rebuilt while another test runs it is "Text file busy".
        static STARTS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = STARTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let unique = format!("bpfmeta-{tag}-{}-{n}", std::process::id());
        let tmp = std::env::temp_dir().join(&unique);
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).map_err(|e| e.to_string())?;
        let obj = tmp.join("owners_attach.o");
        let loader = tmp.join("attach_pin");
        let src = PathBuf::from(format!("{DIR}/owners_attach.bpf.c"));
        run(&mut testkit::clang_bpf(&clang, &src, &obj))?;
        run(Command::new(cc)
            .arg(format!("{DIR}/attach_pin.c"))
            .arg("-o")
            .arg(&loader)
            .arg("-lbpf"))?;
        let pin_dir = PathBuf::from(format!("/sys/fs/bpf/{unique}"));
        let _ = std::fs::remove_dir_all(&pin_dir);
        std::fs::create_dir_all(&pin_dir).map_err(|e| format!("{}: {e}", pin_dir.display()))?;
        let mut child = Command::new(&loader)
            .arg(&obj)
            .arg(&pin_dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{}: {e}", loader.display()))?;
        let stdin = child.stdin.take();
        // Readiness is the loader's "ready PID" line, not a sleep.
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        let loader_pid = line
            .strip_prefix("ready ")
            .and_then(|p| p.trim().parse().ok())
            .ok_or_else(|| format!("the loader did not get ready: {line:?}"))?;
        Ok(Fixture {
            loader_pid,
            pin_dir,
            tmp,
            child: Some(child),
            stdin,
        })
    }

    /// The program id behind pinned link `prog` (its function name), as
    /// `bpftool link show pinned` says.
    pub fn prog_id(&self, prog: &str) -> u32 {
        let out = run(Command::new("bpftool")
            .args(["link", "show", "pinned"])
            .arg(self.pin_dir.join(prog))
            .arg("-j"))
        .unwrap();
        let at = out
            .find("\"prog_id\":")
            .expect("prog_id in bpftool's answer")
            + 10;
        out[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .expect("a numeric prog_id")
    }

    /// End the loader (the programs stay, held by their pinned links).
    pub fn end_owner(&mut self) {
        drop(self.stdin.take());
        if let Some(mut c) = self.child.take() {
            let _ = c.wait();
        }
    }

    /// Remove the pins, which unloads the programs.
    pub fn unload(&mut self) {
        let _ = std::fs::remove_dir_all(&self.pin_dir);
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.end_owner();
        self.unload();
        let _ = std::fs::remove_dir_all(&self.tmp);
    }
}
