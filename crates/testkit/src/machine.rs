//! Tests that change machine-wide state (a sysctl) or that are disturbed
//! by each other's (perf recording while another test's BPF programs load:
//! the kernel then writes over-long records into perf's ring) take one
//! lock, held across the test binaries of every checkout on the machine,
//! and put sysctls back even when they fail.

use std::fs::File;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

/// Held while a test touches or depends on machine-wide state: a file lock
/// (other test binaries, other runs of the suite) and a mutex (the other
/// tests of this binary, which run on other threads of the same process:
/// a file lock does not exclude them).
pub struct MachineLock {
    _file: File,
    _thread: MutexGuard<'static, ()>,
}

/// Where the lock lives: one path for every checkout of the project.
fn lock_path() -> PathBuf {
    std::env::temp_dir().join("bpfprof-tests-machine.lock")
}

/// Wait for the machine-wide lock. Panics only if the lock file cannot be
/// opened at all (a read-only /tmp), naming it.
pub fn machine_lock() -> MachineLock {
    static THREADS: Mutex<()> = Mutex::new(());
    let thread = THREADS.lock().unwrap_or_else(|e| e.into_inner());
    let path = lock_path();
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("cannot open the tests' lock {}: {e}", path.display()));
    // Released by the kernel when the file closes, also when a test
    // process dies.
    file.lock()
        .unwrap_or_else(|e| panic!("cannot lock {}: {e}", path.display()));
    MachineLock {
        _file: file,
        _thread: thread,
    }
}

/// A sysctl set for a test and put back when dropped, also when the test
/// panics. Take [`machine_lock`] first.
pub struct Sysctl {
    path: PathBuf,
    old: String,
}

impl Sysctl {
    /// Set `name` (`kernel.perf_event_paranoid`) to `value`, panicking with
    /// the OS's reason if it cannot.
    pub fn set(name: &str, value: &str) -> Sysctl {
        let path = PathBuf::from(format!("/proc/sys/{}", name.replace('.', "/")));
        let old = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
            .trim()
            .to_string();
        std::fs::write(&path, value).unwrap_or_else(|e| panic!("setting {name}={value}: {e}"));
        Sysctl { path, old }
    }

    /// The value it had before.
    pub fn old(&self) -> &str {
        &self.old
    }
}

impl Drop for Sysctl {
    fn drop(&mut self) {
        if let Err(e) = std::fs::write(&self.path, &self.old) {
            eprintln!(
                "could not restore {} to {}: {e}",
                self.path.display(),
                self.old
            );
        }
    }
}
