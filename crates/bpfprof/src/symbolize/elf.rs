//! User-space symbols from ELF files (.symtab, else .dynsym), with the
//! segment table needed to turn a file offset into a symbol address.
//!
//! The symbol table is read in place, from the file's mapping, which the
//! symbols keep: a name is looked for, checked and demangled only when its
//! function gets a sample. Reading every name up front (finding its end,
//! checking its UTF-8, copying it) was most of the cost of loading a big
//! binary's symbols, and a report names a few thousand of its functions.

use std::borrow::Cow;

use object::elf;
use object::read::elf::{ElfFile, FileHeader, SectionHeader, Sym as _};
use object::{Object, ObjectSegment};

pub use super::demangle::demangle;
use super::file_map::FileBytes;

pub(crate) mod cache;

#[derive(Debug, Clone, Copy, PartialEq)]
struct Sym {
    start: u64,
    end: u64,
    /// Offset of the name in the string table; for a PLT entry, its index
    /// in [`ElfSymbols::plt_names`].
    name_off: u32,
    plt: bool,
}

/// Marks a symbol whose name is one of several aliases that only their
/// demangled names can tell apart: chosen when the name is first needed.
const LAZY: u32 = u32::MAX;

/// Aliases at one address left for [`ElfSymbols::name_of`] to choose from.
#[derive(Default, Debug, PartialEq)]
struct Ties {
    /// (start, first, count) into `names`, by start.
    groups: Vec<(u64, u32, u32)>,
    /// (name offset, symbol table order) of each tied alias.
    names: Vec<(u32, u32)>,
}

/// One ELF file's function symbols.
pub struct ElfSymbols {
    syms: Vec<Sym>,
    ties: Ties,
    /// `name@plt`, name as mangled, of each PLT entry.
    plt_names: Vec<String>,
    /// The file, and where its string table lies in it.
    data: FileBytes,
    strtab: std::ops::Range<usize>,
    /// (file offset, file size, virtual address) of each loadable segment.
    segments: Vec<(u64, u64, u64)>,
    pub build_id: Option<Vec<u8>>,
    /// Whether the symbols came from a full .symtab (else .dynsym only).
    pub has_symtab: bool,
}

impl Default for ElfSymbols {
    fn default() -> Self {
        ElfSymbols {
            syms: Vec::new(),
            ties: Ties::default(),
            plt_names: Vec::new(),
            data: FileBytes::Owned(Vec::new()),
            strtab: 0..0,
            segments: Vec::new(),
            build_id: None,
            has_symtab: false,
        }
    }
}

impl std::fmt::Debug for ElfSymbols {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ElfSymbols")
            .field("symbols", &self.syms.len())
            .field("has_symtab", &self.has_symtab)
            .finish()
    }
}

/// A function symbol as the table gives it, before aliases are resolved.
struct Candidate {
    start: u64,
    order: usize,
    name_off: u32,
    size: u64,
    weak: bool,
    global: bool,
}

impl ElfSymbols {
    /// The symbols of the binary at `path`, parsed, or as parsed before
    /// when the cache of parsed tables has this very file (see `cache`);
    /// `None` if it cannot be read or parsed.
    pub fn load(path: &std::path::Path) -> Option<ElfSymbols> {
        cache::load(path)
    }

    /// Parse an ELF image. Errors are returned as text: the caller only
    /// reports them once per file.
    pub fn parse(data: FileBytes) -> Result<ElfSymbols, String> {
        let parsed = match object::FileKind::parse(&*data).map_err(|e| e.to_string())? {
            object::FileKind::Elf32 => read::<elf::FileHeader32<object::Endianness>>(&data)?,
            object::FileKind::Elf64 => read::<elf::FileHeader64<object::Endianness>>(&data)?,
            _ => return Err("not an ELF file".into()),
        };
        let ((syms, ties, plt), strtab, segments, build_id, has_symtab) = parsed;
        let elf = ElfSymbols {
            syms,
            ties,
            plt_names: Vec::new(),
            data,
            strtab,
            segments,
            build_id,
            has_symtab,
        };
        Ok(elf.with_plt(plt))
    }

    /// The symbols with PLT entries added, as perf adds them after the
    /// fix-ups of the symbol table's own (so a zero-sized symbol before
    /// the PLT, such as `_init`, reaches over it, and each entry takes
    /// over where it starts).
    fn with_plt(mut self, plt: Vec<(u64, u64, String)>) -> ElfSymbols {
        if plt.is_empty() {
            return self;
        }
        for (start, size, name) in plt {
            self.syms.push(Sym {
                start,
                end: start.saturating_add(size),
                name_off: self.plt_names.len() as u32,
                plt: true,
            });
            self.plt_names.push(name);
        }
        // Stable: at an address the table's symbol also has, the entry
        // comes after it, and so is the one found.
        self.syms.sort_by_key(|s| s.start);
        self
    }

    /// The PLT entries, to move to another file's symbols.
    fn plt(&self) -> Vec<(u64, u64, String)> {
        self.syms
            .iter()
            .filter(|s| s.plt)
            .map(|s| {
                (
                    s.start,
                    s.end - s.start,
                    self.plt_names[s.name_off as usize].clone(),
                )
            })
            .collect()
    }

    /// A symbol's name (mangled).
    fn name_of(&self, s: &Sym) -> Cow<'_, str> {
        if s.plt {
            return Cow::Borrowed(&self.plt_names[s.name_off as usize]);
        }
        let strings = &self.data[self.strtab.clone()];
        if s.name_off != LAZY {
            return name_in(strings, s.name_off);
        }
        let g = self.ties.groups.partition_point(|g| g.0 < s.start);
        let Some(&(_, first, n)) = self.ties.groups.get(g) else {
            return Cow::Borrowed("");
        };
        let group = &self.ties.names[first as usize..(first + n) as usize];
        let best = group.iter().max_by_key(|&&(off, order)| {
            let name = demangle(&name_in(strings, off));
            let underscores = name.bytes().take_while(|&b| b == b'_').count();
            (
                std::cmp::Reverse(underscores),
                name.len(),
                std::cmp::Reverse(order),
            )
        });
        best.map_or(Cow::Borrowed(""), |&(off, _)| name_in(strings, off))
    }

    /// This file's segments with another file's symbols: a stripped
    /// binary with its separate debug file.
    /// The PLT is the binary's: perf reads it from the file that runs.
    pub fn with_symbols_of(self, debug: ElfSymbols) -> ElfSymbols {
        let plt = self.plt();
        let debug = ElfSymbols {
            syms: debug.syms.into_iter().filter(|s| !s.plt).collect(),
            plt_names: Vec::new(),
            ..debug
        };
        ElfSymbols {
            segments: self.segments,
            build_id: self.build_id,
            ..debug
        }
        .with_plt(plt)
    }

    /// The virtual address that file offset `off` is loaded at.
    pub fn offset_to_vaddr(&self, off: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|&&(o, size, _)| off >= o && off - o < size.max(1))
            .and_then(|&(o, _, vaddr)| vaddr.checked_add(off - o))
    }

    /// The function containing `vaddr`, with the symbol's start address.
    /// The name is as stored (mangled): see [`demangle`].
    pub fn lookup(&self, vaddr: u64) -> Option<(Cow<'_, str>, u64)> {
        let i = self
            .syms
            .partition_point(|s| s.start <= vaddr)
            .checked_sub(1)?;
        let s = self.syms[i];
        (vaddr < s.end).then(|| (self.name_of(&s), s.start))
    }

    /// The start of the function [`ElfSymbols::lookup`] finds for `vaddr`,
    /// and the end of the range of addresses for which it finds that one:
    /// symbols may overlap, and a later one takes over where it starts.
    pub fn lookup_range(&self, vaddr: u64) -> Option<(u64, u64)> {
        let i = self
            .syms
            .partition_point(|s| s.start <= vaddr)
            .checked_sub(1)?;
        let s = self.syms[i];
        let next = self.syms.get(i + 1).map_or(u64::MAX, |n| n.start);
        (vaddr < s.end).then_some((s.start, s.end.min(next)))
    }

    /// A function's bytes range by its demangled name (for annotate).
    pub fn find(&self, name: &str) -> Option<(u64, u64)> {
        self.syms
            .iter()
            .find(|s| demangle(&self.name_of(s)) == name)
            .map(|s| (s.start, s.end))
    }

    /// The file offset of `vaddr`, the inverse of [`Self::offset_to_vaddr`].
    pub fn vaddr_to_offset(&self, vaddr: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|&&(_, size, va)| vaddr >= va && vaddr - va < size)
            .and_then(|&(o, _, va)| o.checked_add(vaddr - va))
    }
}

type Parsed = (
    (Vec<Sym>, Ties, Vec<(u64, u64, String)>),
    std::ops::Range<usize>,
    Vec<(u64, u64, u64)>,
    Option<Vec<u8>>,
    bool,
);

fn read<Elf: FileHeader<Endian = object::Endianness>>(data: &[u8]) -> Result<Parsed, String> {
    let file = ElfFile::<Elf>::parse(data).map_err(|e| e.to_string())?;
    let endian = file.endian();
    let build_id = file.build_id().ok().flatten().map(<[u8]>::to_vec);
    let segments = file
        .segments()
        .map(|seg| {
            let (off, size) = seg.file_range();
            (off, size, seg.address())
        })
        .collect();
    let is_text = |s: &Elf::Sym| matches!(s.st_type(), elf::STT_FUNC | elf::STT_GNU_IFUNC);
    let symtab = file.elf_symbol_table();
    let has_symtab = symtab.symbols().iter().skip(1).any(is_text);
    let table = match has_symtab {
        true => symtab,
        false => file.elf_dynamic_symbol_table(),
    };
    let strtab = file
        .elf_section_table()
        .section(table.string_section())
        .ok()
        .and_then(|h| h.file_range(endian))
        .and_then(|(off, size)| {
            let (off, size) = (usize::try_from(off).ok()?, usize::try_from(size).ok()?);
            (off.checked_add(size)? <= data.len()).then_some(off..off + size)
        })
        .unwrap_or(0..0);
    let strings = &data[strtab.clone()];
    let sections = file.elf_section_table();
    let executable = |shndx: u16| {
        sections
            .section(object::SectionIndex(shndx.into()))
            .is_ok_and(|h| h.sh_flags(endian).into() & u64::from(elf::SHF_EXECINSTR) != 0)
    };
    let mut cands = Vec::new();
    for (i, s) in table.symbols().iter().enumerate().skip(1) {
        let shndx = s.st_shndx(endian);
        let defined =
            shndx != elf::SHN_UNDEF && (shndx < elf::SHN_LORESERVE || shndx == elf::SHN_XINDEX);
        let start: u64 = s.st_value(endian).into();
        let name_off = s.st_name(endian);
        // A function definition with an address and a name, or, as perf
        // takes them, a label in code (`_dl_start_user` in ld.so is one,
        // with no size). Named as perf tells it, by a name offset other
        // than 0: reading each name's first byte here faulted in most of a
        // big binary's string table, half of the time spent loading it.
        let named = name_off != 0 && (name_off as usize) < strings.len();
        let code = match s.st_type() {
            // perf takes IFUNC symbols for functions: glibc's `memcpy` is
            // one, at the address of the function of the same name that
            // selects the implementation.
            elf::STT_FUNC | elf::STT_GNU_IFUNC => true,
            elf::STT_NOTYPE => shndx != elf::SHN_ABS && defined && executable(shndx),
            _ => false,
        };
        if !code || !defined || start == 0 || !named {
            continue;
        }
        cands.push(Candidate {
            start,
            order: i,
            name_off,
            size: s.st_size(endian).into(),
            weak: s.st_bind() == elf::STB_WEAK,
            global: s.st_bind() != elf::STB_LOCAL,
        });
    }
    // In address order, then table order (see `by_address`).
    let starts: Vec<u64> = cands.iter().map(|c| c.start).collect();
    let cands: Vec<&Candidate> = super::by_address::order(&starts)
        .into_iter()
        .map(|i| &cands[i as usize])
        .collect();
    // Aliases at one address: keep the one perf keeps, so that both tools
    // print the same name.
    let mut syms: Vec<Sym> = Vec::with_capacity(cands.len());
    let mut ties = Ties::default();
    let mut i = 0;
    while i < cands.len() {
        let mut j = i + 1;
        while j < cands.len() && cands[j].start == cands[i].start {
            j += 1;
        }
        let group = &cands[i..j];
        if let [only] = group {
            // Most addresses have one symbol: no aliases to choose among.
            syms.push(Sym {
                start: only.start,
                end: only.start.saturating_add(only.size),
                name_off: only.name_off,
                plt: false,
            });
            i = j;
            continue;
        }
        let tied = tied(group);
        let same_size = tied.iter().all(|&k| group[k].size == group[tied[0]].size);
        let (best, name_off) = if tied.len() > 1 && same_size {
            // Only the demangled names can choose (C1/C2 constructors...):
            // leave it to the first lookup, as most are never sampled.
            let first = ties.names.len() as u32;
            for &k in &tied {
                ties.names.push((group[k].name_off, group[k].order as u32));
            }
            ties.groups.push((group[0].start, first, tied.len() as u32));
            (&group[tied[0]], LAZY)
        } else {
            let best = &group[choose_best(group, &tied, strings)];
            (best, best.name_off)
        };
        syms.push(Sym {
            start: best.start,
            end: best.start.saturating_add(best.size),
            name_off,
            plt: false,
        });
        i = j;
    }
    // Zero-sized symbols extend to the next one, as perf's fixup does;
    // the last to the end of the page after its own (perf's
    // `symbols__fixup_end`), not over every address past it.
    for i in 0..syms.len() {
        if syms[i].end == syms[i].start {
            let start = syms[i].start;
            syms[i].end = syms.get(i + 1).map_or_else(
                || start.next_multiple_of(4096).saturating_add(4096),
                |n| n.start,
            );
        }
    }
    let plt = super::plt::entries(&file).unwrap_or_default();
    Ok(((syms, ties, plt), strtab, segments, build_id, has_symtab))
}

/// The aliases perf's `choose_best_symbol` cannot tell apart by size and
/// binding: the ones left for the names to decide.
fn tied(group: &[&Candidate]) -> Vec<usize> {
    let cheap = |c: &Candidate| (c.size > 0, !c.weak, c.global && !c.weak);
    let top = group.iter().map(|c| cheap(c)).max();
    (0..group.len())
        .filter(|&k| Some(cheap(group[k])) == top)
        .collect()
}

/// The index of the alias perf's `choose_best_symbol` keeps among the
/// `tied` ones of a group.
fn choose_best(group: &[&Candidate], tied: &[usize], strings: &[u8]) -> usize {
    if tied.len() == 1 {
        return tied[0];
    }
    tied.iter()
        .copied()
        .max_by_key(|&k| {
            let c = &group[k];
            let name = demangle(&name_in(strings, c.name_off));
            (
                preference(&name, c.size, c.weak, c.global),
                std::cmp::Reverse(c.order),
            )
        })
        .expect("non-empty group")
}

fn name_in(strings: &[u8], off: u32) -> Cow<'_, str> {
    let rest = strings.get(off as usize..).unwrap_or_default();
    let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
    String::from_utf8_lossy(&rest[..end])
}

/// perf's `choose_best_symbol` order, as a key to maximize: a sized symbol,
/// then non-weak, then global, then fewer leading underscores, then the
/// longer name; ties go to the first in the symbol table.
fn preference(
    name: &str,
    size: u64,
    weak: bool,
    global: bool,
) -> (bool, bool, bool, std::cmp::Reverse<usize>, usize) {
    let underscores = name.bytes().take_while(|&b| b == b'_').count();
    (
        size > 0,
        !weak,
        global && !weak,
        std::cmp::Reverse(underscores),
        name.len(),
    )
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{binutils, skip, system_lib};
    use super::{ElfSymbols, FileBytes, Sym, Ties, LAZY};

    #[test]
    fn tied_aliases_are_chosen_by_name_when_first_looked_up() {
        // Two constructor aliases at 0x100 (C2 listed first), and at 0x200
        // `__x` and `x`: perf keeps the first listed of equal names, else
        // the name with fewer leading underscores.
        let strings = b"\0_ZN1AC2Ev\0_ZN1AC1Ev\0__x\0x\0".to_vec();
        let e = ElfSymbols {
            syms: vec![
                Sym {
                    start: 0x100,
                    end: 0x110,
                    name_off: LAZY,
                    plt: false,
                },
                Sym {
                    start: 0x200,
                    end: 0x210,
                    name_off: LAZY,
                    plt: false,
                },
            ],
            ties: Ties {
                groups: vec![(0x100, 0, 2), (0x200, 2, 2)],
                names: vec![(1, 5), (11, 9), (21, 3), (25, 4)],
            },
            strtab: 0..strings.len(),
            data: FileBytes::Owned(strings),
            ..Default::default()
        };
        assert_eq!(e.lookup(0x105).unwrap().0, "_ZN1AC2Ev");
        assert_eq!(e.lookup(0x205).unwrap().0, "x");
        assert_eq!(e.find("x"), Some((0x200, 0x210)));
    }

    #[test]
    fn a_lookup_range_holds_only_addresses_that_find_its_symbol() {
        let sym = |start, end| Sym {
            start,
            end,
            name_off: 0,
            plt: false,
        };
        // An outer function with an inner symbol inside it, then one
        // that ends before the next starts.
        let e = ElfSymbols {
            syms: vec![sym(0x100, 0x200), sym(0x150, 0x160), sym(0x300, 0x310)],
            ..Default::default()
        };
        for v in 0..0x400u64 {
            let found = e.lookup(v).map(|(_, s)| s);
            let range = e.lookup_range(v);
            assert_eq!(found, range.map(|r| r.0), "{v:#x}");
            if let Some((start, end)) = range {
                assert!(start <= v && v < end, "{v:#x}");
                for w in start..end {
                    let at_w = e.lookup(w).map(|(_, s)| s);
                    assert_eq!(at_w, Some(start), "{w:#x} in {v:#x}'s range");
                }
            }
        }
    }

    /// perf takes a named label in code as a symbol (ld.so's
    /// `_dl_start_user` has no type and no size), but not one in data.
    #[test]
    fn labels_in_code_are_symbols_and_labels_in_data_are_not() {
        let Some(assembler) = binutils("as") else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let (src, obj) = (dir.path().join("l.s"), dir.path().join("l.o"));
        let asm = ".text\n.skip 16\n.type f,@function\nf:\n.skip 16\n.size f, 16\n\
                   lbl:\n.skip 16\n.data\n.skip 8\ndlabel:\n.quad 0\n";
        std::fs::write(&src, asm).unwrap();
        let ok = std::process::Command::new(assembler)
            .arg("-o")
            .arg(&obj)
            .arg(&src)
            .status()
            .unwrap()
            .success();
        assert!(ok, "as failed");
        let e = ElfSymbols::parse(FileBytes::Owned(std::fs::read(&obj).unwrap())).unwrap();
        assert_eq!(
            e.lookup(0x15).map(|(n, s)| (n.to_string(), s)),
            Some(("f".into(), 0x10))
        );
        assert_eq!(
            e.lookup(0x25).map(|(n, s)| (n.to_string(), s)),
            Some(("lbl".into(), 0x20))
        );
        assert_eq!(e.lookup(0x8), None, "a data label is no symbol");
        // The last symbol has no size: perf ends it a page past its
        // start rounded up to a page.
        assert_eq!(e.lookup(0x1fff).map(|(_, s)| s), Some(0x20));
        assert_eq!(e.lookup(0x2000), None, "past the last symbol's page");
    }

    /// glibc's `memcpy` and the like are IFUNC symbols at the address of
    /// the code that picks an implementation; perf takes them for
    /// functions, and shows a sample there under one of the names that
    /// address has (readelf lists them).
    #[test]
    fn ifunc_symbols_are_functions() {
        let Some(readelf) = binutils("readelf") else {
            return;
        };
        let libc = system_lib("libc.so.6");
        let Ok(bytes) = std::fs::read(&libc) else {
            skip(&format!("no {libc}"));
            return;
        };
        let e = ElfSymbols::parse(FileBytes::Owned(bytes)).unwrap();
        let out = std::process::Command::new(readelf)
            .args(["--dyn-syms", "-W", &libc])
            .output()
            .unwrap();
        // (value, type, name without its version) of each defined symbol.
        let syms: Vec<(u64, String, String)> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                if f.len() < 8 || f[6] == "UND" {
                    return None;
                }
                let value = u64::from_str_radix(f[1], 16).ok()?;
                let name = f[7].split('@').next()?.to_string();
                Some((value, f[3].to_string(), name))
            })
            .collect();
        let ifuncs: Vec<u64> = syms
            .iter()
            .filter(|s| s.1 == "IFUNC")
            .map(|s| s.0)
            .collect();
        assert!(
            ifuncs.len() > 20,
            "{} IFUNC symbols in {libc}",
            ifuncs.len()
        );
        for at in ifuncs {
            let names: Vec<&str> = syms
                .iter()
                .filter(|s| s.0 == at && (s.1 == "IFUNC" || s.1 == "FUNC"))
                .map(|s| s.2.as_str())
                .collect();
            let (name, start) = e.lookup(at).expect("a symbol at an IFUNC's address");
            assert_eq!(start, at, "{names:?}");
            assert!(names.contains(&&*name), "{name} is none of {names:?}");
        }
    }
}
