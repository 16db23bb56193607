//! PLT entries as symbols, `name@plt`, as perf synthesizes them: samples
//! in a binary's procedure linkage table are calls on their way to a
//! shared library, and perf names them after the function called.

use object::elf;
use object::read::elf::{ElfFile, FileHeader, Rel as _, Rela as _, SectionHeader, Sym as _};

/// (address, size, `name@plt`) of each PLT entry, as perf 6.1's
/// `dso__synthesize_plt_symbols` makes them: the n-th relocation of
/// `.rela.plt` (or `.rel.plt`) names the n-th entry of `.plt` after its
/// header, by its symbol in `.dynsym`. `None` where the file has no such
/// PLT.
pub(super) fn entries<Elf: FileHeader<Endian = object::Endianness>>(
    file: &ElfFile<'_, Elf>,
) -> Option<Vec<(u64, u64, String)>> {
    let endian = file.endian();
    let data = file.data();
    let sections = file.elf_section_table();
    let dynsym = file.elf_dynamic_symbol_table();
    if dynsym.is_empty() {
        return None;
    }
    let (rel, rela) = match sections.section_by_name(endian, b".rela.plt") {
        Some((_, h)) => (h, true),
        None => (sections.section_by_name(endian, b".rel.plt")?.1, false),
    };
    if rel.sh_link(endian) as usize != dynsym.section().0 {
        return None;
    }
    let (_, plt) = sections.section_by_name(endian, b".plt")?;
    let entsize: u64 = plt.sh_entsize(endian).into();
    let (header, entry) = match file.elf_header().e_machine(endian) {
        elf::EM_ARM => (20, 12),
        elf::EM_AARCH64 => (32, 16),
        elf::EM_SPARC => (48, 12),
        elf::EM_SPARCV9 => (128, 32),
        _ => (entsize, entsize),
    };
    if entry == 0 {
        return None;
    }
    let syms: Vec<u32> = match rela {
        true => rel
            .data_as_array::<Elf::Rela, _>(endian, data)
            .ok()?
            .iter()
            .map(|r| r.r_sym(endian, false))
            .collect(),
        false => rel
            .data_as_array::<Elf::Rel, _>(endian, data)
            .ok()?
            .iter()
            .map(|r| r.r_sym(endian))
            .collect(),
    };
    let strings = dynsym.strings();
    let mut at = Into::<u64>::into(plt.sh_addr(endian)) + header;
    let mut out = Vec::with_capacity(syms.len());
    for i in syms {
        let name = dynsym
            .symbol(object::SymbolIndex(i as usize))
            .ok()
            .and_then(|s| s.name(endian, strings).ok())
            .unwrap_or_default();
        out.push((at, entry, format!("{}@plt", String::from_utf8_lossy(name))));
        at += entry;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::super::elf::ElfSymbols;
    use super::super::file_map::FileBytes;
    use super::super::test_support::{binutils, skip, system_lib};

    /// objdump names PLT entries (`<getpid@plt>:`) by decoding each entry's
    /// jump to its GOT slot, not by counting, so it is an independent
    /// check of the order perf assumes. bash's PLT has C names, libstdc++'s
    /// mangled C++ ones.
    #[test]
    fn plt_entries_are_named_as_objdump_names_them() {
        let Some(objdump) = binutils("objdump") else {
            return;
        };
        let libstdcxx = system_lib("libstdc++.so.6");
        for path in ["/usr/bin/bash", libstdcxx.as_str()] {
            let Ok(bytes) = std::fs::read(path) else {
                skip(&format!("no {path}"));
                continue;
            };
            let e = ElfSymbols::parse(FileBytes::Owned(bytes)).unwrap();
            let out = std::process::Command::new(&objdump)
                .args(["-d", "-j", ".plt", path])
                .output()
                .unwrap();
            assert!(out.status.success(), "objdump failed on {path}");
            let labels: Vec<(u64, String)> = String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|l| {
                    let (addr, rest) = l.split_once(" <")?;
                    let name = rest.strip_suffix(">:")?;
                    name.ends_with("@plt")
                        .then(|| (u64::from_str_radix(addr, 16).ok(), name.to_string()))
                })
                .filter_map(|(a, n)| Some((a?, n)))
                .collect();
            assert!(labels.len() > 50, "{path}: {} PLT labels", labels.len());
            for (addr, name) in labels {
                let found = e.lookup(addr).map(|(n, s)| (n.to_string(), s));
                assert_eq!(found, Some((name, addr)), "{path} at {addr:#x}");
            }
        }
    }
}
