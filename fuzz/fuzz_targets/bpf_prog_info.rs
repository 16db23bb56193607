//! Decode arbitrary bytes as one `perf_bpil` entry; re-encode what decodes
//! and check that it decodes to the same arrays. The same bytes also go to
//! the owners/attachments/maps tail decoder (behind a valid magic, so the
//! fuzzer reaches the body), which must round-trip what it accepts.
#![no_main]
use libfuzzer_sys::fuzz_target;
use perfdata::{bpf_meta_tail, BpfProgInfo, BpfProgMeta};

fuzz_target!(|data: &[u8]| {
    let mut tail = bpf_meta_tail::MAGIC.to_vec();
    tail.extend_from_slice(&bpf_meta_tail::VERSION.to_le_bytes());
    tail.extend_from_slice(data);
    for bytes in [data, &tail[..]] {
        if let Ok(m) = BpfProgMeta::decode_tail(bytes, 0) {
            let again = BpfProgMeta::decode_tail(&m.encode_tail(), 0)
                .expect("what we write must read back");
            assert_eq!(m, again);
        }
    }

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
