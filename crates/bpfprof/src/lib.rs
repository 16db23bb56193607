//! bpfprof: a Linux profiler in which BPF programs are first-class code.
//!
//! - [`capture`]: recording (perf_event_open, rings, side band, synthesis);
//! - [`symbolize`]: addresses to (shared object, symbol) as of each sample;
//! - [`analyze`]: report tables, the BPF view, call graphs, annotation.
//!
//! The command-line interface in `main.rs` is a thin layer over these.

pub mod analyze;
pub mod capture;
pub mod export;
mod huge_vec;
pub mod parallel;
pub mod progress;
pub mod symbolize;
#[cfg(test)]
mod test_rng;
pub mod top;
pub mod tui;
pub mod utc;

/// The byte-level entry points of the symbolizer's file readers, for the
/// fuzz targets in fuzz/ only: each forwards to the reader as it is.
#[doc(hidden)]
pub mod fuzzing {
    use crate::symbolize::file_map::FileBytes;
    use crate::symbolize::{elf, kallsyms_cache, kcore, plt, ElfSymbols, Kallsyms};

    /// What a cache of parsed ELF symbols is valid for (see `elf::cache`).
    pub type ElfCacheStamp = [u64; 8];

    /// `ElfSymbols::parse` of a binary's bytes.
    pub fn elf_symbols(binary: &[u8]) -> Result<ElfSymbols, String> {
        ElfSymbols::parse(FileBytes::Owned(binary.to_vec()))
    }

    /// The ELF symbol cache's decoder: `cache` read as the cached tables of
    /// `binary` for `stamp`.
    pub fn elf_cache_decode(
        cache: &[u8],
        stamp: &ElfCacheStamp,
        binary: &[u8],
    ) -> Option<ElfSymbols> {
        elf::cache::decode(cache, stamp, FileBytes::Owned(binary.to_vec())).ok()
    }

    /// The ELF symbol cache's encoder, to check that what is read writes
    /// back as itself.
    pub fn elf_cache_encode(symbols: &ElfSymbols, stamp: &ElfCacheStamp) -> Vec<u8> {
        elf::cache::encode(symbols, stamp)
    }

    /// The PLT entries (address, size, `name@plt`) of an ELF image, `None`
    /// where it has no PLT or is not ELF.
    pub fn plt_entries(binary: &[u8]) -> Option<Vec<(u64, u64, String)>> {
        use object::read::elf::ElfFile;
        use object::{elf as e, Endianness};
        match object::FileKind::parse(binary).ok()? {
            object::FileKind::Elf32 => {
                plt::entries(&ElfFile::<e::FileHeader32<Endianness>>::parse(binary).ok()?)
            }
            object::FileKind::Elf64 => {
                plt::entries(&ElfFile::<e::FileHeader64<Endianness>>::parse(binary).ok()?)
            }
            _ => None,
        }
    }

    /// The kallsyms cache file's decoder, for a file written for `stamp`.
    pub fn kallsyms_cache(file: &[u8], stamp: &str) -> Option<Kallsyms> {
        kallsyms_cache::decode(FileBytes::Owned(file.to_vec()), stamp)
    }

    /// `len` bytes at kernel address `addr` of a /proc/kcore image.
    pub fn kcore_read(image: &[u8], addr: u64, len: usize) -> Result<Vec<u8>, String> {
        kcore::read_from(&mut std::io::Cursor::new(image), "kcore", addr, len)
    }
}
