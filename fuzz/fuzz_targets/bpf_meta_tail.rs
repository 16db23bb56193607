//! bpfprof's owners/attachments/maps tail (the bytes after a program's
//! arrays in a BPF_PROG_INFO entry, i.e. from any perf.data file) on
//! arbitrary bytes, starting from real tails so that mutations reach every
//! field. What decodes must encode to bytes that decode to the same thing,
//! and the encoding must be what `is_tail` recognises.
#![no_main]
use libfuzzer_sys::fuzz_target;
use perfdata::BpfProgMeta;

fuzz_target!(|data: &[u8]| {
    let Ok(m) = BpfProgMeta::decode_tail(data, 0) else {
        return;
    };
    assert!(BpfProgMeta::is_tail(data));
    let bytes = m.encode_tail();
    assert!(BpfProgMeta::is_tail(&bytes));
    assert_eq!(bytes.len() % 8, 0);
    let again = BpfProgMeta::decode_tail(&bytes, 0).expect("what we write must read back");
    assert_eq!(m, again);
});
