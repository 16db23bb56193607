//! Where the symbol caches live and how their files are written: the
//! kallsyms cache and the cache of parsed ELF symbol tables share both.

use std::io::Write;
use std::path::{Path, PathBuf};

/// `$XDG_CACHE_HOME/bpfprof`, else `~/.cache/bpfprof`.
pub fn dir() -> Option<PathBuf> {
    let base = match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(x) => PathBuf::from(x),
        None => PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?).join(".cache"),
    };
    Some(base.join("bpfprof"))
}

/// Write `parts` as the file `name` in `dir` (made 0700 if missing):
/// aside first and renamed, so that a reader never sees half a file, and
/// 0600, since what is cached tells where code lies in memory.
pub fn write(dir: &Path, name: &str, parts: &[&[u8]]) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let tmp = dir.join(format!("{name}.{}.tmp", std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    let written = parts.iter().try_for_each(|p| f.write_all(p));
    drop(f);
    written
        .and_then(|()| std::fs::rename(&tmp, dir.join(name)))
        .inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
}

/// FNV-1a: a stable hash, so that a name or stamp means the same across
/// builds.
pub struct Fnv(pub u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    pub fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
}
