//! The kallsyms cache file (`symbolize/kallsyms_cache.rs` decode, then
//! `Kallsyms::decode`): any bytes, no panic; what it accepts is the body
//! as written (its encoding gives the bytes after the header back), and
//! every lookup's range holds the address looked up.
//! The stamp is fixed: seeds are real cache files with their header's
//! stamp replaced by it.
#![no_main]
use libfuzzer_sys::fuzz_target;

const STAMP: &str = "fuzz 0000000000000000";

fuzz_target!(|data: &[u8]| {
    let Some(k) = bpfprof::fuzzing::kallsyms_cache(data, STAMP) else {
        return;
    };
    let nl = data
        .iter()
        .position(|&b| b == b'\n')
        .expect("a header line");
    assert!(k.encode() == &data[nl + 1..]);
    // Probe at every 8-byte word of the body read as an address, and next
    // to it: real symbol addresses are among them.
    for w in data[nl + 1..].chunks_exact(8).take(4096) {
        let a = u64::from_le_bytes(w.try_into().unwrap());
        for addr in [a.wrapping_sub(1), a, a.wrapping_add(1)] {
            if let Some((sym, end)) = k.lookup_range(addr) {
                // The last symbol's range ends at u64::MAX, which it holds.
                assert!(
                    sym.start <= addr && (addr < end || end == u64::MAX),
                    "{addr:#x}"
                );
                assert_eq!(k.lookup(addr).map(|s| s.start), Some(sym.start));
            }
        }
    }
});
