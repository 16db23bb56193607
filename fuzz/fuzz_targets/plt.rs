//! The PLT reader (`symbolize/plt.rs`: `.rela.plt`/`.rel.plt` against
//! `.plt` and `.dynsym`) on any bytes: no panic; the entries are
//! `name@plt`, one after another, without wrapping.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(entries) = bpfprof::fuzzing::plt_entries(data) else {
        return;
    };
    for (i, (at, size, name)) in entries.iter().enumerate() {
        assert!(name.ends_with("@plt"), "{name}");
        assert!(*size > 0);
        let end = at.checked_add(*size).expect("an entry wraps");
        if let Some((next, _, _)) = entries.get(i + 1) {
            assert_eq!(*next, end);
        }
    }
});
