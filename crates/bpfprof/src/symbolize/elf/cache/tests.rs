use std::path::{Path, PathBuf};

use super::super::super::file_map::{map_file, FileBytes};
use super::super::ElfSymbols;
use super::{decode, load_in, parts, prune, prune_to, stamp_of, MAX_FILES, MIN_SIZE};

/// This test binary: big enough to be cached, with a full symbol table,
/// aliases and PLT entries of its own.
fn binary() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let len = std::fs::metadata(&exe).expect("test binary").len();
    assert!(len >= MIN_SIZE, "the test binary has {len} bytes");
    exe
}

fn parsed(path: &Path) -> ElfSymbols {
    ElfSymbols::parse(map_file(path).expect("mapped")).expect("parsed")
}

/// Everything a lookup reads, the file's bytes aside.
fn tables(e: &ElfSymbols) -> impl PartialEq + std::fmt::Debug + '_ {
    (
        &e.syms,
        &e.ties,
        &e.plt_names,
        &e.strtab,
        &e.segments,
        &e.build_id,
        e.has_symtab,
    )
}

/// The names found at addresses all over the file's code.
fn names_at(e: &ElfSymbols, len: u64, n: u64) -> Vec<Option<(String, u64)>> {
    (0..len)
        .step_by((len / n).max(1) as usize)
        .map(|off| {
            let v = e.offset_to_vaddr(off)?;
            e.lookup(v).map(|(n, s)| (n.into_owned(), s))
        })
        .collect()
}

/// The one cache file in `dir`.
fn cache_file(dir: &Path) -> PathBuf {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("cache directory")
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files.into_iter().next().unwrap()
}

#[test]
fn a_cached_table_is_the_parsed_table() {
    let exe = binary();
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("elf");
    let (first, cached) = load_in(&exe, Some(&cache)).expect("symbols");
    assert!(!cached, "an empty cache gave symbols");
    let (second, cached) = load_in(&exe, Some(&cache)).expect("symbols");
    assert!(cached, "the second load parsed again");
    // The oracle: the parse itself, tested against readelf and objdump.
    let want = parsed(&exe);
    assert!(want.syms.len() > 1000, "{} functions", want.syms.len());
    assert!(!want.ties.groups.is_empty(), "no aliases to choose among");
    assert_eq!(tables(&first), tables(&want));
    assert_eq!(tables(&second), tables(&want));
    let len = std::fs::metadata(&exe).unwrap().len();
    let names = names_at(&want, len, 20_000);
    assert!(names.iter().filter(|n| n.is_some()).count() > 1000);
    assert_eq!(names_at(&second, len, 20_000), names);
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&cache), 0o700);
    assert_eq!(mode(&cache_file(&cache)), 0o600);
}

#[test]
fn a_changed_or_other_binary_is_parsed_again() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("elf");
    let bin = dir.path().join("bin");
    std::fs::copy(binary(), &bin).unwrap();
    assert!(!load_in(&bin, Some(&cache)).unwrap().1);
    assert!(load_in(&bin, Some(&cache)).unwrap().1);
    // A copy: the same bytes, another file.
    let copy = dir.path().join("copy");
    std::fs::copy(&bin, &copy).unwrap();
    assert!(!load_in(&copy, Some(&cache)).unwrap().1, "a copy");
    // Rewritten in place with its old size and modification time: only
    // the change time tells.
    let meta = std::fs::metadata(&bin).unwrap();
    let mut bytes = std::fs::read(&bin).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&bin, &bytes).unwrap();
    let f = std::fs::File::options().write(true).open(&bin).unwrap();
    f.set_modified(meta.modified().unwrap()).unwrap();
    drop(f);
    let now = std::fs::metadata(&bin).unwrap();
    assert_eq!(now.modified().unwrap(), meta.modified().unwrap());
    assert_eq!(now.len(), meta.len());
    assert!(
        !load_in(&bin, Some(&cache)).unwrap().1,
        "rewritten in place"
    );
    assert!(load_in(&bin, Some(&cache)).unwrap().1);
}

/// A small binary is parsed each time: reading a cache file would cost
/// about as much.
#[test]
fn small_binaries_are_not_cached() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("elf");
    let small = ["/usr/bin/true", "/bin/true"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.exists() && std::fs::metadata(p).unwrap().len() < MIN_SIZE)
        .expect("/usr/bin/true");
    for _ in 0..2 {
        assert!(!load_in(small, Some(&cache)).unwrap().1);
    }
    assert!(!cache.exists() || std::fs::read_dir(&cache).unwrap().next().is_none());
}

/// Damage of every kind is caught or harmless: never a panic, never a
/// huge allocation; a cut file, another stamp, counts that do not fit,
/// a string table past the binary's end, and functions out of order are
/// all refused, and the binary parsed again.
#[test]
fn a_damaged_cache_is_not_used() {
    let exe = binary();
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("elf");
    load_in(&exe, Some(&cache)).unwrap();
    let file = cache_file(&cache);
    let whole = std::fs::read(&file).unwrap();
    let meta = std::fs::metadata(&exe).unwrap();
    let stamp = stamp_of(&meta).unwrap();
    let len = meta.len() as usize;
    let refused = |bytes: &[u8]| parts(bytes, &stamp, len).is_none();
    assert!(!refused(&whole), "the file as written");
    let magic = super::MAGIC.len();
    let counts = magic + 64;
    let strtab = counts + 20;
    for cut in [0, 3, magic, counts, whole.len() / 2, whole.len() - 1] {
        assert!(refused(&whole[..cut]), "cut at {cut}");
    }
    let mut longer = whole.clone();
    longer.push(0);
    assert!(refused(&longer), "grown");
    let changed = |at: usize, bytes: &[u8]| {
        let mut w = whole.clone();
        w[at..at + bytes.len()].copy_from_slice(bytes);
        w
    };
    assert!(refused(&changed(magic, &[0xff])), "another binary's stamp");
    assert!(refused(&changed(magic + 56, &[0xff])), "another bpfprof's");
    for i in 0..5 {
        let huge = changed(counts + 4 * i, &u32::MAX.to_le_bytes());
        assert!(refused(&huge), "count {i} at u32::MAX");
    }
    let past_end = (len as u64 + 1).to_le_bytes();
    assert!(refused(&changed(strtab + 8, &past_end)), "string table");
    // The first function's start moved past the second's.
    let build_id = u32::from_le_bytes(whole[strtab + 16..strtab + 20].try_into().unwrap());
    let first_sym = strtab + 20 + build_id as usize + 1;
    assert!(refused(&changed(first_sym, &u64::MAX.to_le_bytes())));
    // Any byte changed anywhere: refused, or tables that lookups can use.
    let step = (whole.len() / 300).max(1);
    for at in (0..whole.len()).step_by(step).chain(0..120) {
        let w = changed(at, &[whole[at] ^ 0xa5]);
        if let Some(e) = parts(&w, &stamp, len) {
            let e = ElfSymbols {
                data: map_file(&exe).unwrap(),
                ..e
            };
            names_at(&e, meta.len(), 500);
        }
    }
    // And through the front door: the binary is parsed instead.
    std::fs::write(&file, &whole[..whole.len() / 2]).unwrap();
    let (e, cached) = load_in(&exe, Some(&cache)).unwrap();
    assert!(!cached);
    let want = parsed(&exe);
    assert_eq!(tables(&e), tables(&want));
    let data = FileBytes::Owned(vec![0; 16]);
    assert!(decode(&whole, &stamp, data).is_err(), "a smaller binary");
}

#[test]
fn the_cache_keeps_the_newest_files() {
    let dir = tempfile::tempdir().unwrap();
    let t0 = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    let n = MAX_FILES + 20;
    for i in 0..n {
        let p = dir.path().join(format!("{i:04}"));
        let f = std::fs::File::create(&p).unwrap();
        f.set_modified(t0 + std::time::Duration::from_secs(i as u64))
            .unwrap();
    }
    prune(dir.path());
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    let want: Vec<String> = (n - MAX_FILES..n).map(|i| format!("{i:04}")).collect();
    assert_eq!(left, want);
}

/// A few big files weigh as much as many small ones: the newest are kept
/// up to the byte limit, whatever their number.
#[test]
fn the_cache_keeps_its_bytes_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let t0 = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for i in 0..10u64 {
        let p = dir.path().join(format!("{i:02}"));
        std::fs::write(&p, vec![0u8; 300]).unwrap();
        let f = std::fs::File::options().write(true).open(&p).unwrap();
        f.set_modified(t0 + std::time::Duration::from_secs(i))
            .unwrap();
    }
    prune_to(dir.path(), 100, 1000);
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["07", "08", "09"]);
}
