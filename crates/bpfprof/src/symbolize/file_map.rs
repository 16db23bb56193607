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
    map_with_metadata(path).map(|(bytes, _)| bytes)
}

/// The file mapped, with what fstat said of the file mapped: the identity
/// of the very bytes parsed, whatever replaces the path meanwhile.
pub fn map_with_metadata(path: &Path) -> Option<(FileBytes, std::fs::Metadata)> {
    let f = std::fs::File::open(path).ok()?;
    let meta = f.metadata().ok()?;
    if meta.len() == 0 {
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
    Some((FileBytes::Mapped(map), meta))
}
