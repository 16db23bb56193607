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

use super::file_map::FileBytes;

#[derive(Debug, Clone, Copy)]
struct Sym {
    start: u64,
    end: u64,
    /// Offset of the name in the string table.
    name_off: u32,
}

/// Marks a symbol whose name is one of several aliases that only their
/// demangled names can tell apart: chosen when the name is first needed.
const LAZY: u32 = u32::MAX;

/// Aliases at one address left for [`ElfSymbols::name_of`] to choose from.
#[derive(Default)]
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
    /// Parse an ELF image. Errors are returned as text: the caller only
    /// reports them once per file.
    pub fn parse(data: FileBytes) -> Result<ElfSymbols, String> {
        let parsed = match object::FileKind::parse(&*data).map_err(|e| e.to_string())? {
            object::FileKind::Elf32 => read::<elf::FileHeader32<object::Endianness>>(&data)?,
            object::FileKind::Elf64 => read::<elf::FileHeader64<object::Endianness>>(&data)?,
            _ => return Err("not an ELF file".into()),
        };
        let ((syms, ties), strtab, segments, build_id, has_symtab) = parsed;
        Ok(ElfSymbols {
            syms,
            ties,
            data,
            strtab,
            segments,
            build_id,
            has_symtab,
        })
    }

    /// A symbol's name (mangled).
    fn name_of(&self, s: &Sym) -> Cow<'_, str> {
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
    pub fn with_symbols_of(self, debug: ElfSymbols) -> ElfSymbols {
        ElfSymbols {
            segments: self.segments,
            build_id: self.build_id,
            ..debug
        }
    }

    /// The virtual address that file offset `off` is loaded at.
    pub fn offset_to_vaddr(&self, off: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|&&(o, size, _)| off >= o && off < o + size.max(1))
            .map(|&(o, _, vaddr)| off - o + vaddr)
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
            .find(|&&(_, size, va)| vaddr >= va && vaddr < va + size)
            .map(|&(o, _, va)| vaddr - va + o)
    }
}

type Parsed = (
    (Vec<Sym>, Ties),
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
        // A function definition with an address and a name (an empty
        // name is its terminating NUL), or, as perf takes them, a label
        // in code (`_dl_start_user` in ld.so is one, with no size).
        let named = strings.get(name_off as usize).is_some_and(|&b| b != 0);
        let code = match s.st_type() {
            elf::STT_FUNC => true,
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
    cands.sort_unstable_by_key(|c| (c.start, c.order));
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
            end: best.start + best.size,
            name_off,
        });
        i = j;
    }
    // Zero-sized symbols extend to the next one, as perf's fixup does.
    for i in 0..syms.len() {
        if syms[i].end == syms[i].start {
            syms[i].end = syms.get(i + 1).map_or(u64::MAX, |n| n.start);
        }
    }
    Ok(((syms, ties), strtab, segments, build_id, has_symtab))
}

/// The aliases perf's `choose_best_symbol` cannot tell apart by size and
/// binding: the ones left for the names to decide.
fn tied(group: &[Candidate]) -> Vec<usize> {
    let cheap = |c: &Candidate| (c.size > 0, !c.weak, c.global && !c.weak);
    let top = group.iter().map(cheap).max();
    (0..group.len())
        .filter(|&k| Some(cheap(&group[k])) == top)
        .collect()
}

/// The index of the alias perf's `choose_best_symbol` keeps among the
/// `tied` ones of a group.
fn choose_best(group: &[Candidate], tied: &[usize], strings: &[u8]) -> usize {
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

/// Rust and C++ names demangled as perf shows them by default: Rust
/// without the hash, C++ as `c++filt -p` prints it (no outer parameter
/// list, return type or clone suffix; local entities keep their enclosing
/// function's parameters).
pub fn demangle(name: &str) -> String {
    if let Ok(d) = rustc_demangle::try_demangle(name) {
        return format!("{d:#}");
    }
    if name.starts_with("_Z") {
        // `.cold`, `.constprop.0`... are GCC clone suffixes, not mangling.
        let base = name.split('.').next().unwrap_or(name);
        if let Ok(d) = cpp_demangle::Symbol::new(base) {
            if let Ok(full) = d.demangle(&cpp_demangle::DemangleOptions::default()) {
                return strip_signature(&literal_suffixes(&drop_empty_packs(&full)));
            }
        }
    }
    name.to_string()
}

/// cpp_demangle prints an empty template parameter pack as an empty
/// argument (`AnalysisManager<llvm::Function, >`); libiberty, and so perf,
/// leaves it out. No C++ name has an empty argument otherwise.
fn drop_empty_packs(s: &str) -> String {
    if !s.contains(", >") && !s.contains(", , ") {
        return s.to_string();
    }
    let mut out = s.replace(", , ", ", ");
    while out.contains(", , ") {
        out = out.replace(", , ", ", ");
    }
    out.replace(", >", ">")
}

/// cpp_demangle prints a template argument literal of a builtin integer
/// type as a cast, `(unsigned int)2`; libiberty, and so perf, prints
/// `2u` (and `2l`, `2ul`, `2ll`, `2ull`). On libLLVM's 146k C++ names, this
/// was nearly three quarters of those that read otherwise than `c++filt -p`.
fn literal_suffixes(s: &str) -> String {
    const CASTS: [(&str, &str); 5] = [
        ("(unsigned int)", "u"),
        ("(long)", "l"),
        ("(unsigned long)", "ul"),
        ("(long long)", "ll"),
        ("(unsigned long long)", "ull"),
    ];
    if !s.contains("int)") && !s.contains("long)") {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    'next: while let Some(i) = rest.find('(') {
        for (cast, suffix) in CASTS {
            let Some(after) = rest[i..].strip_prefix(cast) else {
                continue;
            };
            let sign = usize::from(after.starts_with('-'));
            let digits = after[sign..].bytes().take_while(u8::is_ascii_digit).count();
            let (number, tail) = after.split_at(sign + digits);
            // Digits that go on into a name are no literal.
            if digits == 0 || tail.starts_with(|c: char| c.is_alphanumeric() || c == '_') {
                continue;
            }
            out.push_str(&rest[..i]);
            out.push_str(number);
            out.push_str(suffix);
            rest = tail;
            continue 'next;
        }
        out.push_str(&rest[..=i]);
        rest = &rest[i + 1..];
    }
    out.push_str(rest);
    out
}

/// `ret ns::f<T>(args) const` → `ns::f<T>`.
fn strip_signature(full: &str) -> String {
    let mut s = full.trim_end();
    for q in [" const", " volatile", " &&", " &", " noexcept"] {
        while let Some(r) = s.strip_suffix(q) {
            s = r;
        }
    }
    if s.ends_with(')') {
        let mut depth = 0i32;
        for (i, c) in s.char_indices().rev() {
            match c {
                ')' => depth += 1,
                '(' => {
                    depth -= 1;
                    if depth == 0 {
                        s = &s[..i];
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    // A return type (template functions) ends at the last space outside
    // brackets, unless that space belongs to `operator new` and the like.
    let mut depth = 0i32;
    let mut cut = None;
    let bytes = s.as_bytes();
    for (i, &c) in bytes.iter().enumerate() {
        match c {
            b'(' | b'<' | b'{' | b'[' => depth += 1,
            b')' | b'>' | b'}' | b']' => depth -= 1,
            b' ' if depth == 0 && !s[..i].ends_with("operator") => cut = Some(i + 1),
            _ => {}
        }
    }
    match cut {
        Some(i) if !s[..i].trim_end().ends_with("operator") => s[i..].to_string(),
        _ => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::{demangle, literal_suffixes, ElfSymbols, FileBytes, Sym, Ties, LAZY};

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
                },
                Sym {
                    start: 0x200,
                    end: 0x210,
                    name_off: LAZY,
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
        let Some(assembler) = testkit::tool("as") else {
            assert!(std::env::var_os("CI").is_none(), "CI needs as (binutils)");
            eprintln!("skipped: needs as (binutils)");
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
    }

    /// A cast that is not before a literal stays.
    #[test]
    fn only_literals_lose_their_cast() {
        assert_eq!(
            literal_suffixes("f<(unsigned int)2, (long)-3>"),
            "f<2u, -3l>"
        );
        assert_eq!(literal_suffixes("f<(long long)7>"), "f<7ll>");
        assert_eq!(literal_suffixes("f<(unsigned long long)0>"), "f<0ull>");
        for same in [
            "f<(long)x>",
            "f<(long)2x>",
            "g(long)",
            "h<(char)97>",
            "(unsigned int)",
        ] {
            assert_eq!(literal_suffixes(same), same);
        }
    }

    /// Expected values are `c++filt -p` (binutils 2.40) on this machine,
    /// which is how perf's default demangling prints them.
    #[test]
    fn cpp_names_read_like_cxxfilt_p() {
        for (mangled, want) in [
            (
                "_ZZN6fuzzer6Fuzzer6RunOneEPKhmbPNS_9InputInfoEbPbENKUljE_clEj",
                "fuzzer::Fuzzer::RunOne(unsigned char const*, unsigned long, bool, fuzzer::InputInfo*, bool, bool*)::{lambda(unsigned int)#1}::operator()",
            ),
            ("_ZNSt6vectorIiSaIiEE9push_backERKi", "std::vector<int, std::allocator<int> >::push_back"),
            ("_ZNK3foo3barEv", "foo::bar"),
            ("_ZN3fooplERKS_", "foo::operator+"),
            ("_ZN12_GLOBAL__N_13bazEi", "(anonymous namespace)::baz"),
            ("_ZN6fuzzer10RunOneTestEPNS_6FuzzerEPKcm.cold", "fuzzer::RunOneTest"),
            ("_Znwm", "operator new"),
            ("_ZN9__gnu_cxx13new_allocatorIcE8allocateEmPKv", "__gnu_cxx::new_allocator<char>::allocate"),
            // Integer literals as template arguments, from cc1 and libLLVM.
            ("_Z15pp_wide_integerILj1ElEvP14pretty_printerRK12poly_int_podIXT_ET0_E", "pp_wide_integer<1u, long>"),
            (
                "_ZNK4llvm12PatternMatch17constantint_matchILln1EE5matchINS_5ValueEEEbPT_",
                "llvm::PatternMatch::constantint_match<-1l>::match<llvm::Value>",
            ),
            (
                "_ZL19decodeRegisterClassILm32EEN4llvm14MCDisassembler12DecodeStatusERNS0_6MCInstEmRAT__Kt",
                "decodeRegisterClass<32ul>",
            ),
            (
                "_ZN4llvm12SparseSolverINS_14PointerIntPairIPNS_5ValueELj2EN12_GLOBAL__N_111IPOGroupingENS_21PointerLikeTypeTraitsIS3_EENS_18PointerIntPairInfoIS3_Lj2ES7_EEEENS4_13CVPLatticeValENS_14LatticeKeyInfoISA_EEE9visitInstERNS_11InstructionE",
                "llvm::SparseSolver<llvm::PointerIntPair<llvm::Value*, 2u, (anonymous namespace)::IPOGrouping, llvm::PointerLikeTypeTraits<llvm::Value*>, llvm::PointerIntPairInfo<llvm::Value*, 2u, llvm::PointerLikeTypeTraits<llvm::Value*> > >, (anonymous namespace)::CVPLatticeVal, llvm::LatticeKeyInfo<llvm::PointerIntPair<llvm::Value*, 2u, (anonymous namespace)::IPOGrouping, llvm::PointerLikeTypeTraits<llvm::Value*>, llvm::PointerIntPairInfo<llvm::Value*, 2u, llvm::PointerLikeTypeTraits<llvm::Value*> > > > >::visitInst",
            ),
            // An empty parameter pack (`JE`), from libLLVM.
            (
                "_ZN4llvm15AnalysisManagerINS_15MachineFunctionEJEE13getResultImplEPNS_11AnalysisKeyERS1_",
                "llvm::AnalysisManager<llvm::MachineFunction>::getResultImpl",
            ),
        ] {
            assert_eq!(demangle(mangled), want, "{mangled}");
        }
    }
}
