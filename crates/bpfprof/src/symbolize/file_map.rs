//! Binaries mapped rather than read: a symbol table is a small part of a
//! large binary (cc1 is 33 MB), and only the pages parsed are touched.
//! This is the one mmap of the report path, hence its own module.

use std::path::Path;

pub enum FileBytes {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl std::ops::Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            FileBytes::Mapped(m) => m,
            FileBytes::Owned(v) => v,
        }
    }
}

pub fn map_file(path: &Path) -> Option<FileBytes> {
    let f = std::fs::File::open(path).ok()?;
    if f.metadata().ok()?.len() == 0 {
        return None;
    }
    // SAFETY: the map is read-only and private to this process; a binary
    // rewritten underneath it while we parse would give wrong symbols (as
    // for any reader), and the object parser bounds-checks every access,
    // so truncation shows as a parse error, not undefined reads of freed
    // memory. The symbols keep the mapping for their names until the
    // report ends; a binary truncated in place meanwhile (not replaced, as
    // package managers do) can raise SIGBUS, as it can for perf.
    let map = unsafe { memmap2::Mmap::map(&f) }.ok()?;
    Some(FileBytes::Mapped(map))
}
