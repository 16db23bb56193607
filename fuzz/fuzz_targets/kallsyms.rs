//! /proc/kallsyms text, as the three readers parse it (bpfinfo's symbol
//! table, record's `[bpf]`/_text scan, and the report's symbolizer table):
//! any text parses without a panic, every symbol found is found again by
//! its own address, and a lookup's range holds the address looked up.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let k = bpfinfo::Kallsyms::parse(&text);
    let mut probes = vec![0u64, u64::MAX];
    for line in text.lines().take(256) {
        if let Some(a) = line.split_whitespace().next() {
            if let Ok(a) = u64::from_str_radix(a, 16) {
                probes.extend([a, a.wrapping_sub(1), a.wrapping_add(1)]);
            }
        }
    }
    for &a in &probes {
        if let Some(name) = k.name_at(a) {
            let name = name.to_string();
            let _ = k.address_of(&name);
        }
        let _ = k.next_address_after(a);
    }
    let b = bpfprof::capture::bpf::Kallsyms::parse(&text);
    for &(addr, ref name) in b.bpf.iter().take(256) {
        assert!(
            b.bpf_name_at(addr).is_some(),
            "{name} at {addr:#x} not found"
        );
    }
    for &a in &probes {
        let _ = b.bpf_name_at(a);
    }
    let _ = b.images(4096);

    let r = bpfprof::symbolize::kallsyms::Kallsyms::parse(data);
    for &a in &probes {
        if let Some((sym, end)) = r.lookup_range(a) {
            // The last symbol's range ends at u64::MAX, which it includes.
            let inside = sym.start <= a && (a < end || end == u64::MAX);
            assert!(inside, "{a:#x} outside [{:#x}, {end:#x})", sym.start);
            let start = sym.start;
            assert_eq!(r.lookup(start).map(|s| s.start), Some(start));
        }
        if let Some(next) = r.next_after(a) {
            assert!(next > a, "next_after({a:#x}) = {next:#x}");
        }
    }
    let _ = r.encode();
});
