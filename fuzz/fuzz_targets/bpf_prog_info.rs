//! Decode arbitrary bytes as one `perf_bpil` entry; re-encode what decodes
//! and check that it decodes to the same arrays.
#![no_main]
use libfuzzer_sys::fuzz_target;
use perfdata::BpfProgInfo;

fuzz_target!(|data: &[u8]| {
    let Ok(p) = BpfProgInfo::from_bpil(data) else {
        return;
    };
    let mut out = Vec::new();
    p.write_bpil(&mut out);
    let q = BpfProgInfo::from_bpil(&out).expect("what we write must read back");
    assert_eq!(p.jited_insns, q.jited_insns);
    assert_eq!(p.jited_ksyms, q.jited_ksyms);
    assert_eq!(p.func_info, q.func_info);
    assert_eq!(p.line_info, q.line_info);
    assert_eq!(p.prog_tags, q.prog_tags);
});
