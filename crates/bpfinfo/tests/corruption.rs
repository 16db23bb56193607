//! Corrupt and truncated inputs (BTF blobs, line tables, machine code)
//! give errors or warnings, never panics. Random cases use a fixed seed.

use bpfinfo::btf::Btf;
use bpfinfo::testprog::TestProg;
use bpfinfo::{disassemble, listing, Arch, BtfError, Program, Syntax};
use perfdata::{array, BpfProgInfo};

/// xorshift64*: deterministic, good enough to pick bytes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const MAIN: u64 = 0xffff_ffff_c000_1000;
const WORK: u64 = 0xffff_ffff_c000_2000;

/// The generated test program as a recording would hold it, with made-up
/// addresses: main 32 bytes, work 48 bytes, line entries spread over both.
fn recorded() -> (BpfProgInfo, Vec<u8>) {
    let t = TestProg::builder().build().unwrap();
    let line_info = t.line_info();
    let jited_line_info = line_info
        .iter()
        .map(|l| match l.insn_off {
            0 => MAIN,
            3 => MAIN + 20,
            4 => WORK,
            n => WORK + u64::from(n - 4) * 4,
        })
        .collect();
    let info = BpfProgInfo {
        id: 7,
        tag: [1; 8],
        name: "bpfprof_busy".into(),
        btf_id: 3,
        jited_prog_len: 80,
        xlated_prog_len: t.insns().len() as u32,
        nr_jited_ksyms: 2,
        nr_jited_func_lens: 2,
        arrays: (1 << array::JITED_INSNS)
            | (1 << array::XLATED_INSNS)
            | (1 << array::JITED_KSYMS)
            | (1 << array::JITED_FUNC_LENS)
            | (1 << array::FUNC_INFO)
            | (1 << array::LINE_INFO)
            | (1 << array::JITED_LINE_INFO)
            | (1 << array::PROG_TAGS),
        jited_insns: vec![0x90; 80],
        xlated_insns: t.insns().to_vec(),
        jited_ksyms: vec![MAIN, WORK],
        jited_func_lens: vec![32, 48],
        func_info: t.func_info(),
        nr_line_info: line_info.len() as u32,
        nr_jited_line_info: line_info.len() as u32,
        line_info,
        jited_line_info,
        prog_tags: vec![[2; 8], [3; 8]],
        ..Default::default()
    };
    (info, t.btf().to_vec())
}

/// Touch everything a report or annotate would ask for.
fn exercise(p: &Program) {
    let _ = listing(p, None, true);
    for s in p.subprogs() {
        let _ = p.kernel_ksym_name(s.index);
        let _ = p.func_signature(s.index);
        if let Some(code) = p.jited_bytes(s.index) {
            let _ = disassemble(Arch::X86_64, code, s.addr, Syntax::Att);
        }
        for off in [0, 1, 17, s.len.saturating_sub(1), s.len, u32::MAX] {
            let _ = p.line_at_jit(s.index, off);
        }
        let _ = p.lookup(s.addr);
        let _ = p.lookup(s.addr.wrapping_add(u64::from(s.len)));
    }
    for i in [0, 3, 4, 13, 14, u32::MAX] {
        let _ = p.line_at_xlated(i);
        let _ = p.subprog_of_xlated(i);
    }
}

#[test]
fn the_uncorrupted_recording_is_clean() {
    let (info, btf) = recorded();
    let p = Program::new(info, Some(&btf));
    assert!(p.warnings().is_empty(), "{:?}", p.warnings());
    assert_eq!(p.subprogs()[1].func_name, "work");
    assert_eq!(p.jit_lines(1).len(), 5);
    assert_eq!(p.lookup(WORK + 10), Some((1, 10)));
    assert_eq!(
        p.line_at_jit(1, 11).map(|l| l.line),
        Some(5),
        "offset 11 of work is covered by the entry at 4 (insn 5)"
    );
    exercise(&p);
}

#[test]
fn every_truncation_of_btf_is_an_error() {
    let (info, btf) = recorded();
    for cut in 0..btf.len() {
        let e = Btf::parse(&btf[..cut]).expect_err("truncated BTF must not parse");
        let p = Program::new(info.clone(), Some(&btf[..cut]));
        assert!(
            p.warnings().iter().any(|w| w.contains("BTF ignored")),
            "cut at {cut}: {e}"
        );
        // Without BTF, sub-programs fall back to the verifier's "F".
        assert_eq!(p.subprogs()[1].func_name, "F");
        exercise(&p);
    }
}

#[test]
fn header_errors_name_the_offset() {
    let (_, btf) = recorded();
    let set = |off: usize, v: u32| {
        let mut b = btf.clone();
        b[off..off + 4].copy_from_slice(&v.to_le_bytes());
        b
    };
    assert_eq!(
        Btf::parse(&[0x9f, 0xeb, 1]).unwrap_err(),
        BtfError::TooShort { len: 3 }
    );
    let mut swapped = btf.clone();
    swapped.swap(0, 1);
    assert_eq!(
        Btf::parse(&swapped).unwrap_err(),
        BtfError::Magic { found: 0x9feb }
    );
    let e = Btf::parse(&set(4, 0xffff)).unwrap_err();
    assert!(
        matches!(
            e,
            BtfError::HeaderLen {
                hdr_len: 0xffff,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("offset 4"), "{e}");
    let e = Btf::parse(&set(20, u32::MAX)).unwrap_err();
    assert!(matches!(e, BtfError::Section { what: "string", .. }), "{e}");
    // Type 1 at offset 24: give it kind 31, then a huge vlen on a
    // FUNC_PROTO (type 3 in the generated BTF).
    let e = Btf::parse(&set(24 + 4, 31 << 24)).unwrap_err();
    assert!(
        matches!(
            e,
            BtfError::Type {
                id: 1,
                offset: 24,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("unknown kind 31"), "{e}");
    let proto3 = 24 + 16 + 12;
    let e = Btf::parse(&set(proto3 + 4, (13 << 24) | 0xffff)).unwrap_err();
    assert!(
        matches!(e, BtfError::Type { id: 3, offset, .. } if offset == proto3),
        "{e}"
    );
}

#[test]
fn random_btf_corruption_never_panics() {
    let (info, btf) = recorded();
    let mut rng = Rng(0x5eed_b7f0_1234_5678);
    let mut parsed = 0;
    for round in 0..4000 {
        let mut b = btf.clone();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(b.len());
            if round % 2 == 0 {
                b[at] ^= 1 << rng.below(8);
            } else {
                b[at] = rng.next() as u8;
            }
        }
        if let Ok(btf) = Btf::parse(&b) {
            parsed += 1;
            for id in 0..=btf.type_count() + 1 {
                let _ = btf.type_by_id(id);
                let _ = btf.type_name(id);
                let _ = btf.func_name(id);
                let _ = btf.func_signature(id);
            }
            for _ in 0..16 {
                let _ = btf.str_at(rng.next() as u32 % 2048);
            }
        }
        exercise(&Program::new(info.clone(), Some(&b)));
    }
    // Most single-byte changes hit strings or ids, which still parse.
    assert!(parsed > 100, "only {parsed} corrupted blobs parsed");
}

#[test]
fn line_table_inconsistencies_are_warnings() {
    let (info, btf) = recorded();

    let mut i = info.clone();
    i.jited_line_info.pop();
    let p = Program::new(i, Some(&btf));
    assert!(p
        .warnings()
        .iter()
        .any(|w| w.contains("jited_line_info entries for")));
    assert!(p.jit_lines(0).is_empty() && p.jit_lines(1).is_empty());

    // work's first line no longer starts at work's address.
    let mut i = info.clone();
    i.jited_line_info[2] += 1;
    let p = Program::new(i, Some(&btf));
    assert!(
        p.warnings()
            .iter()
            .any(|w| w.contains("start of sub-program 1")),
        "{:?}",
        p.warnings()
    );
    assert!(!p.jit_lines(0).is_empty());

    // An address past the end of its function.
    let mut i = info.clone();
    i.jited_line_info[6] = WORK + 4096;
    let p = Program::new(i, Some(&btf));
    assert!(p
        .warnings()
        .iter()
        .any(|w| w.contains("outside their function")));

    // Strings that are not there.
    let mut i = info.clone();
    i.line_info[1].line_off = 1 << 30;
    let p = Program::new(i, Some(&btf));
    assert!(p
        .warnings()
        .iter()
        .any(|w| w.contains("outside the BTF strings")));

    // More addresses than lengths.
    let mut i = info.clone();
    i.jited_func_lens.pop();
    let p = Program::new(i, Some(&btf));
    assert!(p
        .warnings()
        .iter()
        .any(|w| w.contains("2 addresses but 1 lengths")));
    assert_eq!(p.jited_bytes(1), None);
}

#[test]
fn random_line_table_corruption_never_panics() {
    let (info, btf) = recorded();
    let mut rng = Rng(42);
    for _ in 0..3000 {
        let mut i = info.clone();
        match rng.below(8) {
            0 => {
                let n = i.jited_line_info.len();
                i.jited_line_info[rng.below(n)] = rng.next();
            }
            1 => {
                let n = i.line_info.len();
                let l = &mut i.line_info[rng.below(n)];
                l.insn_off = rng.next() as u32;
                l.file_name_off = rng.next() as u32 % 512;
                l.line_off = rng.next() as u32;
            }
            2 => {
                let n = i.func_info.len();
                i.func_info[rng.below(n)].type_id = rng.next() as u32 % 16;
            }
            3 => i.jited_func_lens[rng.below(2)] = rng.next() as u32,
            4 => i.jited_ksyms[rng.below(2)] = rng.next(),
            5 => i.jited_insns.truncate(rng.below(81)),
            6 => {
                let n = i.xlated_insns.len();
                i.xlated_insns[rng.below(n)] = rng.next() as u8;
            }
            _ => {
                i.func_info.truncate(rng.below(3));
                i.prog_tags.truncate(rng.below(3));
                i.jited_line_info.reverse();
            }
        }
        exercise(&Program::new(i, Some(&btf)));
    }
}

#[test]
fn random_machine_code_disassembles_without_gaps() {
    let mut rng = Rng(7);
    for round in 0..2000 {
        let len = rng.below(64);
        let code: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        for arch in [Arch::X86_64, Arch::Aarch64] {
            let insns = disassemble(arch, &code, 0xffff_ffff_c000_0000, Syntax::Intel);
            let mut at = 0u32;
            for i in &insns {
                assert_eq!(i.offset, at, "round {round} {arch:?}");
                assert_eq!(i.bytes.len(), usize::from(i.len));
                assert!(!i.text.is_empty());
                at += u32::from(i.len);
            }
            assert_eq!(at as usize, code.len(), "round {round} {arch:?}");
        }
    }
}
