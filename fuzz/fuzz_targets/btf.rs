//! bpfinfo's BTF parser on arbitrary bytes (BTF comes from the kernel and
//! from perf.data's HEADER_BPF_BTF, i.e. from any file): parse, then walk
//! every type, name, parameter list and array, as annotate and naming do.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(btf) = bpfinfo::Btf::parse(data) else {
        return;
    };
    assert!(btf.raw().len() <= data.len());
    let n = btf.type_count();
    // Bounded: a huge count of tiny types must not make the walk the hang.
    for id in 0..=n.min(1 << 16) + 1 {
        let _ = btf.type_name(id);
        let _ = btf.func_name(id);
        if let Some(t) = btf.type_by_id(id) {
            let _ = btf.str_at(t.name_off);
            for (name_off, ty) in t.params().take(1 << 12) {
                let _ = btf.str_at(name_off);
                let _ = btf.type_name(ty);
            }
            let _ = t.array();
            let _ = t.var_linkage();
        }
    }
    for off in [0u32, 1, u32::MAX, data.len() as u32] {
        let _ = btf.str_at(off);
    }
});
