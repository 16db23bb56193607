//! A copy of /proc/kallsyms kept between reports.
//!
//! Reading /proc/kallsyms makes the kernel format every symbol again, about
//! 60 ms of system time on a 120,000-symbol kernel: more than the rest of a
//! flat report on a million samples. Within one boot the kernel image's
//! symbols never move and module symbols move only when modules come and
//! go, so the symbols are kept in the cache directory, named by the boot id,
//! and trusted while /proc/modules lists the same modules at the same
//! addresses. It holds the parsed table ([`Kallsyms::encode`]), not the
//! text: parsing 120,000 lines again cost more CPU than the rest of the
//! symbol loading. `[bpf]` lines are left out (programs come from the
//! recording, which knows them at the time of each sample). Dynamic
//! trampolines (`[__builtin__ftrace]`) are kept as first seen in the boot.

use std::path::Path;

use super::cache_files::{self, Fnv};
use super::file_map::{map_file, FileBytes};
use super::Kallsyms;

const PROC: &str = "/proc/kallsyms";
const MAGIC: &str = "# bpfprof kallsyms cache v2";
/// The cache file's name in the cache directory.
const NAME: &str = "kallsyms";

/// Kernel symbols from `path`; for the running kernel's /proc/kallsyms,
/// through the cache when it is still right, refreshing it when not.
pub fn load(path: &Path) -> std::io::Result<Kallsyms> {
    if path != Path::new(PROC) {
        return Kallsyms::load(path);
    }
    let (Some(dir), Some(stamp)) = (cache_files::dir(), stamp()) else {
        return Kallsyms::load(path);
    };
    let file = dir.join(NAME);
    if let Some(k) = read(&file, &stamp) {
        return Ok(k);
    }
    let text = std::fs::read(path)?;
    let k = Kallsyms::parse(&text);
    if !k.is_empty() {
        // Best effort: a report does not fail for want of a cache.
        let _ = write(&dir, &stamp, &k);
    }
    Ok(k)
}

/// What the cache depends on: this boot, and the loaded modules
/// with their addresses.
fn stamp() -> Option<String> {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let modules = std::fs::read_to_string("/proc/modules").unwrap_or_default();
    let mut h = Fnv::default();
    for line in modules.lines() {
        let f: Vec<&str> = line.split_ascii_whitespace().collect();
        // name size refcount users state address
        if let (Some(name), Some(addr)) = (f.first(), f.get(5)) {
            h.write(name.as_bytes());
            h.write(b" ");
            h.write(addr.as_bytes());
            h.write(b"\n");
        }
    }
    Some(format!("{} {:016x}", boot.trim(), h.0))
}

/// The cached symbols if the file was written for `stamp` and is whole.
/// The file is mapped, not read: it is replaced by renaming, never
/// rewritten in place, so the mapping stays valid.
fn read(file: &Path, stamp: &str) -> Option<Kallsyms> {
    decode(map_file(file)?, stamp)
}

/// The symbols of a cache file's bytes, if written for `stamp` and whole.
pub(crate) fn decode(data: FileBytes, stamp: &str) -> Option<Kallsyms> {
    let nl = data.iter().take(256).position(|&b| b == b'\n')?;
    let head = std::str::from_utf8(&data[..nl]).ok()?;
    let rest = head.strip_prefix(MAGIC)?.strip_prefix(' ')?;
    let (st, len) = rest.rsplit_once(' ')?;
    if st != stamp || len.parse::<usize>().ok()? != data.len() - nl - 1 {
        return None;
    }
    Kallsyms::decode(data, nl + 1).filter(|k| !k.is_empty())
}

/// Write the cache file `NAME` in `dir`; 0600 (see `cache_files`), as
/// kernel addresses reveal the boot's KASLR offset.
fn write(dir: &Path, stamp: &str, k: &Kallsyms) -> std::io::Result<()> {
    let body = k.encode();
    let head = format!("{MAGIC} {stamp} {}\n", body.len());
    cache_files::write(dir, NAME, &[head.as_bytes(), body])
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "ffffffff81000000 T _text\nffffffff81000100 t do_thing\n\
                        ffffffffc0000000 t bpf_prog_1234_x\t[bpf]\n\
                        ffffffffc0100000 t mod_fn\t[kvm]\n";

    fn names(k: &Kallsyms) -> Vec<Option<&str>> {
        [
            0xffffffff81000150u64,
            0xffffffffc0100010,
            0xffffffffc0000010,
        ]
        .iter()
        .map(|&a| k.lookup(a).map(|s| s.name))
        .collect()
    }

    #[test]
    fn the_cache_gives_what_the_text_gives_and_only_for_its_stamp() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(NAME);
        write(dir.path(), "boot-1 00", &Kallsyms::parse(TEXT.as_bytes())).unwrap();
        let cached = read(&file, "boot-1 00").expect("a cache written for this stamp");
        assert_eq!(names(&cached), names(&Kallsyms::parse(TEXT.as_bytes())));
        assert!(read(&file, "boot-2 00").is_none(), "another boot");
        assert!(read(&file, "boot-1 01").is_none(), "other modules");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let bytes = std::fs::read(&file).unwrap();
        assert!(
            !bytes.windows(8).any(|w| w == b"bpf_prog"),
            "a [bpf] line was kept"
        );
    }

    #[test]
    fn a_damaged_cache_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(NAME);
        write(dir.path(), "b 00", &Kallsyms::parse(TEXT.as_bytes())).unwrap();
        let whole = std::fs::read(&file).unwrap();
        for cut in [0, 5, whole.len() / 2, whole.len() - 1] {
            std::fs::write(&file, &whole[..cut]).unwrap();
            assert!(read(&file, "b 00").is_none(), "cut at {cut}");
        }
        let mut longer = whole.clone();
        longer.push(0);
        std::fs::write(&file, &longer).unwrap();
        assert!(read(&file, "b 00").is_none(), "grown");
        std::fs::write(&file, b"\xff\xfe garbage\n\0\0").unwrap();
        assert!(read(&file, "b 00").is_none());
    }
}
