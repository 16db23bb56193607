//! The `# bpf_prog_info` and `# btf info` lines of perf's header
//! (print_bpf_prog_info, bpf_event__print_bpf_prog_info, print_bpf_btf).

use std::collections::BTreeMap;

use bpfinfo::btf::Btf;
use perfdata::{hex, BpfProgInfo, BtfBlob};

/// perf keeps programs and BTF objects in trees by id (the first of a
/// duplicate id wins) and prints them in id order.
fn by_id<T>(items: &[T], id: impl Fn(&T) -> u32) -> BTreeMap<u32, &T> {
    let mut m = BTreeMap::new();
    for x in items {
        m.entry(id(x)).or_insert(x);
    }
    m
}

/// perf's name for sub-program `i` (synthesize_bpf_prog_name): its own tag
/// from `prog_tags` (sub-program 0 included, unlike the kernel's ksym), then
/// the BTF name of its func_info type; without BTF the program name for a
/// single function, `F` for one of several.
pub(super) fn sub_prog_name(info: &BpfProgInfo, btf: Option<&Btf>, i: usize) -> String {
    let tag = info.prog_tags.get(i).copied().unwrap_or_default();
    let mut name = format!("bpf_prog_{}", hex(&tag));
    let short = match btf {
        Some(b) => info
            .func_info
            .get(i)
            .and_then(|f| b.type_name(f.type_id))
            .map(str::to_string),
        None if i == 0 && info.nr_jited_ksyms == 1 => {
            Some(info.name.clone()).filter(|n| !n.is_empty())
        }
        None => Some("F".into()),
    };
    if let Some(s) = short {
        name.push('_');
        name.push_str(&s);
    }
    name
}

/// The lines for the BPF_PROG_INFO section.
pub(super) fn prog_info_lines(infos: &[BpfProgInfo], btfs: &[BtfBlob]) -> Vec<String> {
    let btfs = by_id(btfs, |b| b.id);
    let mut out = Vec::new();
    for (id, info) in by_id(infos, |p| p.id) {
        let n = info.nr_jited_ksyms;
        // perf prints nothing for a program whose counts disagree; a file
        // whose arrays are shorter than their counts is not read past.
        let arrays = info.jited_ksyms.len().min(info.jited_func_lens.len());
        if n != info.nr_prog_tags || n != info.nr_jited_func_lens || arrays < n as usize {
            continue;
        }
        let btf = match info.btf_id {
            0 => None,
            b => btfs.get(&b).and_then(|blob| Btf::parse(&blob.data).ok()),
        };
        let btf = btf.as_ref();
        if n == 1 {
            out.push(format!(
                "# bpf_prog_info {id}: {} addr {:#x} size {}",
                sub_prog_name(info, btf, 0),
                info.jited_ksyms[0],
                info.jited_func_lens[0]
            ));
            continue;
        }
        out.push(format!("# bpf_prog_info {id}:"));
        for i in 0..n as usize {
            out.push(format!(
                "# \tsub_prog {i}: {} addr {:#x} size {}",
                sub_prog_name(info, btf, i),
                info.jited_ksyms[i],
                info.jited_func_lens[i]
            ));
        }
    }
    out
}

/// The lines for the BPF_BTF section.
pub(super) fn btf_lines(btfs: &[BtfBlob]) -> Vec<String> {
    by_id(btfs, |b| b.id)
        .keys()
        .map(|id| format!("# btf info of id {id}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prog(id: u32, name: &str, subs: usize) -> BpfProgInfo {
        BpfProgInfo {
            id,
            name: name.into(),
            nr_jited_ksyms: subs as u32,
            nr_jited_func_lens: subs as u32,
            nr_prog_tags: subs as u32,
            jited_ksyms: (0..subs as u64)
                .map(|i| 0xffffffffc0000658 + 0x48 * i)
                .collect(),
            jited_func_lens: (0..subs as u32).map(|i| 32 + i).collect(),
            prog_tags: (0..subs as u8)
                .map(|i| [0x70, 0xec, 0xde, 0xd2, 0x10, 0xc3, 0xfc, i])
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn one_function_on_one_line_several_as_sub_progs() {
        let lines = prog_info_lines(&[prog(7, "getpid_loop", 2), prog(3, "tp", 1)], &[]);
        assert_eq!(
            lines,
            [
                "# bpf_prog_info 3: bpf_prog_70ecded210c3fc00_tp addr 0xffffffffc0000658 size 32",
                "# bpf_prog_info 7:",
                "# \tsub_prog 0: bpf_prog_70ecded210c3fc00_F addr 0xffffffffc0000658 size 32",
                "# \tsub_prog 1: bpf_prog_70ecded210c3fc01_F addr 0xffffffffc00006a0 size 33",
            ]
        );
    }

    #[test]
    fn unnamed_single_function_and_disagreeing_counts() {
        let mut bad = prog(9, "x", 2);
        bad.nr_prog_tags = 1;
        let lines = prog_info_lines(&[prog(4, "", 1), bad], &[]);
        assert_eq!(
            lines,
            ["# bpf_prog_info 4: bpf_prog_70ecded210c3fc00 addr 0xffffffffc0000658 size 32"]
        );
    }

    #[test]
    fn btf_ids_in_order_without_duplicates() {
        let b = |id| BtfBlob { id, data: vec![] };
        assert_eq!(
            btf_lines(&[b(12), b(5), b(12)]),
            ["# btf info of id 5", "# btf info of id 12"]
        );
    }
}
