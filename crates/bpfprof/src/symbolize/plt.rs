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
pub(crate) fn entries<Elf: FileHeader<Endian = object::Endianness>>(
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
    // A PLT said to lie at the top of the address space is a damaged file:
    // its entries' addresses would wrap.
    let start = Into::<u64>::into(plt.sh_addr(endian)).checked_add(header)?;
    start.checked_add(entry.checked_mul(syms.len() as u64)?)?;
    let mut at = start;
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

    /// A `.plt` whose address lies at the top of the address space (a
    /// damaged file) gives no entries rather than addresses that wrap.
    #[test]
    fn a_plt_at_the_top_of_the_address_space_gives_no_entries() {
        use object::read::elf::{ElfFile64, FileHeader as _};
        let path = "/usr/bin/bash";
        let Ok(mut bytes) = std::fs::read(path) else {
            return skip(&format!("no {path}"));
        };
        let at = {
            let file = ElfFile64::<object::Endianness>::parse(&*bytes).unwrap();
            let endian = file.endian();
            let (index, _) = file
                .elf_section_table()
                .section_by_name(endian, b".plt")
                .expect("bash has a .plt");
            let head = file.elf_header();
            head.e_shoff(endian) as usize + index.0 * head.e_shentsize(endian) as usize
        };
        // sh_addr of an Elf64_Shdr is at offset 16.
        bytes[at + 16..at + 24].copy_from_slice(&(u64::MAX - 8).to_le_bytes());
        let file = ElfFile64::<object::Endianness>::parse(&*bytes).unwrap();
        assert_eq!(super::entries(&file), None);
        let e = ElfSymbols::parse(FileBytes::Owned(bytes)).unwrap();
        assert!(e.lookup(u64::MAX - 1).is_none());
    }
}
