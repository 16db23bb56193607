//! The cache of parsed ELF symbol tables (`elf::cache::decode`), files in
//! the user's cache directory: any bytes, no panic; what it accepts writes
//! back as the very bytes read, and its lookups hold together.
//! Input: the cache file's length (u32, little-endian), the cache file,
//! then the binary it describes. The stamp is taken from the file, so that
//! the fuzzer gets past it (the check is a comparison of eight words).
#![no_main]
use bpfprof::fuzzing::{elf_cache_decode, elf_cache_encode, ElfCacheStamp};
use libfuzzer_sys::fuzz_target;

const MAGIC_LEN: usize = b"bpfprof elf symbols v1\n".len();

fuzz_target!(|data: &[u8]| {
    let Some((len, rest)) = data.split_first_chunk::<4>() else {
        return;
    };
    let len = (u32::from_le_bytes(*len) as usize).min(rest.len());
    let (cache, binary) = rest.split_at(len);
    let mut stamp: ElfCacheStamp = [0; 8];
    for (i, w) in stamp.iter_mut().enumerate() {
        let at = MAGIC_LEN + 8 * i;
        if let Some(b) = cache.get(at..at + 8) {
            *w = u64::from_le_bytes(b.try_into().unwrap());
        }
    }
    let Some(elf) = elf_cache_decode(cache, &stamp, binary) else {
        return;
    };
    assert!(
        elf_cache_encode(&elf, &stamp) == cache,
        "read and written differ"
    );
    let step = (binary.len() / 64).max(1);
    for off in (0..binary.len()).step_by(step) {
        let Some(vaddr) = elf.offset_to_vaddr(off as u64) else {
            continue;
        };
        match (elf.lookup(vaddr), elf.lookup_range(vaddr)) {
            (Some((_, start)), Some((rs, re))) => {
                assert_eq!(rs, start);
                assert!(rs <= vaddr && vaddr < re);
            }
            (None, None) => {}
            (a, b) => panic!("lookup {:?} but lookup_range {b:?}", a.map(|x| x.1)),
        }
    }
});
