//! User-space symbols from ELF files (.symtab, else .dynsym), with the
//! segment table needed to turn a file offset into a symbol address.

use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};

#[derive(Debug, Clone, Copy)]
struct Sym {
    start: u64,
    end: u64,
    name_off: u32,
    name_len: u32,
}

/// One ELF file's function symbols.
#[derive(Debug, Default)]
pub struct ElfSymbols {
    syms: Vec<Sym>,
    names: String,
    /// (file offset, file size, virtual address) of each loadable segment.
    segments: Vec<(u64, u64, u64)>,
    pub build_id: Option<Vec<u8>>,
    /// Whether the symbols came from a full .symtab (else .dynsym only).
    pub has_symtab: bool,
}

impl ElfSymbols {
    /// Parse an ELF image. Errors are returned as text: the caller only
    /// reports them once per file.
    pub fn parse(data: &[u8]) -> Result<ElfSymbols, String> {
        let obj = object::File::parse(data).map_err(|e| e.to_string())?;
        let mut out = ElfSymbols {
            build_id: obj.build_id().ok().flatten().map(<[u8]>::to_vec),
            ..Default::default()
        };
        for seg in obj.segments() {
            let (off, size) = seg.file_range();
            out.segments.push((off, size, seg.address()));
        }
        let dynamic = !obj.symbols().any(|s| s.kind() == SymbolKind::Text);
        out.has_symtab = !dynamic;
        let table: Vec<object::Symbol<'_, '_>> = if dynamic {
            obj.dynamic_symbols().collect()
        } else {
            obj.symbols().collect()
        };
        // (start, symtab order, raw name, size, weak, global)
        let mut cands = Vec::new();
        for (order, s) in table.into_iter().enumerate() {
            if s.kind() != SymbolKind::Text || s.address() == 0 || !s.is_definition() {
                continue;
            }
            let Ok(name) = s.name() else { continue };
            if name.is_empty() {
                continue;
            }
            cands.push((
                s.address(),
                order,
                name,
                s.size(),
                s.is_weak(),
                s.is_global(),
            ));
        }
        cands.sort_unstable_by_key(|c| (c.0, c.1));
        // Aliases at one address: keep the one perf keeps, so that both
        // tools print the same name. Names are demangled only here, for
        // the few addresses with aliases; the rest on first use.
        let mut i = 0;
        while i < cands.len() {
            let mut j = i + 1;
            while j < cands.len() && cands[j].0 == cands[i].0 {
                j += 1;
            }
            let best = if j - i == 1 {
                i
            } else {
                (i..j)
                    .max_by_key(|&k| {
                        let c = &cands[k];
                        (
                            preference(&demangle(c.2), c.3, c.4, c.5),
                            std::cmp::Reverse(c.1),
                        )
                    })
                    .expect("non-empty group")
            };
            let (start, _, name, size, _, _) = cands[best];
            let name_off = out.names.len() as u32;
            out.names.push_str(name);
            out.syms.push(Sym {
                start,
                end: start + size,
                name_off,
                name_len: name.len() as u32,
            });
            i = j;
        }
        // Zero-sized symbols extend to the next one, as perf's fixup does.
        for i in 0..out.syms.len() {
            if out.syms[i].end == out.syms[i].start {
                out.syms[i].end = out.syms.get(i + 1).map_or(u64::MAX, |n| n.start);
            }
        }
        Ok(out)
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
    pub fn lookup(&self, vaddr: u64) -> Option<(&str, u64)> {
        let i = self
            .syms
            .partition_point(|s| s.start <= vaddr)
            .checked_sub(1)?;
        let s = self.syms[i];
        (vaddr < s.end).then(|| {
            (
                &self.names[s.name_off as usize..(s.name_off + s.name_len) as usize],
                s.start,
            )
        })
    }

    /// A function's bytes range by its demangled name (for annotate).
    pub fn find(&self, name: &str) -> Option<(u64, u64)> {
        self.syms
            .iter()
            .find(|s| {
                demangle(&self.names[s.name_off as usize..(s.name_off + s.name_len) as usize])
                    == name
            })
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
                return strip_signature(&drop_empty_packs(&full));
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
    use super::demangle;

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
