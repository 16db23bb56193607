//! The ELF symbol reader (`ElfSymbols::parse`: .symtab/.dynsym, aliases,
//! PLT entries, segments, build id) on any bytes: no panic; every lookup's
//! range holds the address looked up and agrees with the lookup; a name
//! found is found again by name; and the parsed tables go through the
//! symbol cache's encoder and decoder as themselves.
#![no_main]
use bpfprof::fuzzing::{elf_cache_decode, elf_cache_encode, elf_symbols};
use bpfprof::symbolize::elf::demangle;
use libfuzzer_sys::fuzz_target;

const STAMP: [u64; 8] = [1, 2, 3, 4, 5, 6, 7, 8];

fuzz_target!(|data: &[u8]| {
    let Ok(elf) = elf_symbols(data) else {
        return;
    };
    // Addresses inside the loaded segments, where samples fall.
    let step = (data.len() / 64).max(1);
    let mut named = false;
    for off in (0..data.len()).step_by(step) {
        let Some(vaddr) = elf.offset_to_vaddr(off as u64) else {
            continue;
        };
        let range = elf.lookup_range(vaddr);
        match elf.lookup(vaddr) {
            Some((name, start)) => {
                let (rs, re) = range.expect("lookup found a symbol, lookup_range none");
                assert_eq!(rs, start);
                assert!(
                    rs <= vaddr && vaddr < re,
                    "{vaddr:#x} not in {rs:#x}..{re:#x}"
                );
                if !named && !name.is_empty() {
                    named = true;
                    assert!(
                        elf.find(&demangle(&name)).is_some(),
                        "{name} not found by name"
                    );
                }
            }
            None => assert!(range.is_none()),
        }
    }
    let bytes = elf_cache_encode(&elf, &STAMP);
    let back = elf_cache_decode(&bytes, &STAMP, data).expect("the cache refused a parsed table");
    assert!(elf_cache_encode(&back, &STAMP) == bytes);
});
