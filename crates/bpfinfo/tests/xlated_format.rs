//! The bytecode formatter on hand-made instructions. Each expected string
//! is the kernel's format string from kernel/bpf/disasm.c (quoted above
//! it) filled in by hand, with bpftool's callbacks for calls and 64-bit
//! immediates (tools/bpf/bpftool/xlated_dumper.c).

use bpfinfo::btf::BtfBuilder;
use bpfinfo::xlated::{format_insns, BpfInsn, CallNames};
use bpfinfo::{Kallsyms, Program};
use perfdata::{array, BpfProgInfo, FuncInfo};

fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> BpfInsn {
    BpfInsn::new(code, dst, src, off, imm)
}

fn bytes(insns: &[BpfInsn]) -> Vec<u8> {
    insns.iter().flat_map(BpfInsn::encode).collect()
}

/// The text of a single instruction with no symbols.
fn one(i: BpfInsn) -> String {
    let out = format_insns(&bytes(&[i]), &CallNames::new());
    assert_eq!(out.len(), 1);
    out[0].text.clone()
}

#[test]
fn alu() {
    // "(%02x) %c%d %s %d"
    assert_eq!(one(insn(0x57, 0, 0, 0, 1)), "(57) r0 &= 1");
    assert_eq!(one(insn(0x07, 2, 0, 0, -4)), "(07) r2 += -4");
    assert_eq!(one(insn(0xc7, 1, 0, 0, 3)), "(c7) r1 s>>= 3");
    assert_eq!(one(insn(0xb4, 3, 0, 0, 7)), "(b4) w3 = 7");
    // "(%02x) %c%d %s %s%c%d"
    assert_eq!(one(insn(0xbc, 0, 1, 0, 0)), "(bc) w0 = w1");
    assert_eq!(one(insn(0xaf, 3, 2, 0, 0)), "(af) r3 ^= r2");
    // Sign-extending moves (cpuv4): bpf_movsx_string[(off >> 3) - 1].
    assert_eq!(one(insn(0xbf, 0, 1, 8, 0)), "(bf) r0 = (s8)r1");
    assert_eq!(one(insn(0xbc, 2, 3, 16, 0)), "(bc) w2 = (s16)w3");
    assert_eq!(one(insn(0xbf, 4, 5, 32, 0)), "(bf) r4 = (s32)r5");
    // Signed division and modulo: off == 1.
    assert_eq!(one(insn(0x3f, 1, 2, 1, 0)), "(3f) r1 s/= r2");
    assert_eq!(one(insn(0x94, 1, 0, 1, -3)), "(94) w1 s%= -3");
    // "(%02x) %c%d = -%c%d"
    assert_eq!(one(insn(0x87, 3, 0, 0, 0)), "(87) r3 = -r3");
    assert_eq!(one(insn(0x84, 3, 0, 0, 0)), "(84) w3 = -w3");
    // "(%02x) r%d = %s%d r%d" (BPF_ALU, "be"/"le") and
    // "(%02x) r%d = bswap%d r%d" (BPF_ALU64).
    assert_eq!(one(insn(0xdc, 1, 0, 0, 16)), "(dc) r1 = be16 r1");
    assert_eq!(one(insn(0xd4, 1, 0, 0, 32)), "(d4) r1 = le32 r1");
    assert_eq!(one(insn(0xd7, 1, 0, 0, 64)), "(d7) r1 = bswap64 r1");
    // "(%02x) r%d = addr_space_cast(r%d, %u, %u)"
    assert_eq!(
        one(insn(0xbf, 1, 2, 1, 1 << 16)),
        "(bf) r1 = addr_space_cast(r2, 1, 0)"
    );
    // "(%02x) r%d = &(void __percpu *)(r%d)"
    assert_eq!(
        one(insn(0xbf, 0, 0, -1, 0)),
        "(bf) r0 = &(void __percpu *)(r0)"
    );
}

#[test]
fn loads_and_stores() {
    // "(%02x) r%d = *(%s *)(r%d %+d)"
    assert_eq!(one(insn(0x61, 0, 1, 0, 0)), "(61) r0 = *(u32 *)(r1 +0)");
    assert_eq!(one(insn(0x79, 7, 1, 80, 0)), "(79) r7 = *(u64 *)(r1 +80)");
    assert_eq!(one(insn(0x89, 0, 1, -8, 0)), "(89) r0 = *(s16 *)(r1 -8)");
    assert_eq!(one(insn(0x91, 2, 3, 1, 0)), "(91) r2 = *(s8 *)(r3 +1)");
    // "(%02x) *(%s *)(r%d %+d) = r%d"
    assert_eq!(one(insn(0x7b, 10, 1, -8, 0)), "(7b) *(u64 *)(r10 -8) = r1");
    // "(%02x) *(%s *)(r%d %+d) = %d"
    assert_eq!(one(insn(0x62, 10, 0, -4, 7)), "(62) *(u32 *)(r10 -4) = 7");
    // "(%02x) r0 = *(%s *)skb[%d]" and "(%02x) r0 = *(%s *)skb[r%d + %d]"
    assert_eq!(one(insn(0x30, 0, 0, 0, 12)), "(30) r0 = *(u8 *)skb[12]");
    assert_eq!(one(insn(0x48, 0, 3, 0, 2)), "(48) r0 = *(u16 *)skb[r3 + 2]");
    // "(%02x) nospec"
    assert_eq!(one(insn(0xc2, 0, 0, 0, 0)), "(c2) nospec");
}

#[test]
fn atomics() {
    // "(%02x) lock *(%s *)(r%d %+d) %s r%d"
    assert_eq!(
        one(insn(0xdb, 0, 6, 0, 0x00)),
        "(db) lock *(u64 *)(r0 +0) += r6"
    );
    assert_eq!(
        one(insn(0xc3, 1, 2, 4, 0x50)),
        "(c3) lock *(u32 *)(r1 +4) &= r2"
    );
    // "(%02x) r%d = atomic%s_fetch_%s((%s *)(r%d %+d), r%d)"
    assert_eq!(
        one(insn(0xc3, 1, 2, 0, 0x01)),
        "(c3) r2 = atomic_fetch_add((u32 *)(r1 +0), r2)"
    );
    assert_eq!(
        one(insn(0xdb, 1, 2, 0, 0x41)),
        "(db) r2 = atomic64_fetch_or((u64 *)(r1 +0), r2)"
    );
    // "(%02x) r0 = atomic%s_cmpxchg((%s *)(r%d %+d), r0, r%d)"
    assert_eq!(
        one(insn(0xdb, 1, 2, 0, 0xf1)),
        "(db) r0 = atomic64_cmpxchg((u64 *)(r1 +0), r0, r2)"
    );
    // "(%02x) r%d = atomic%s_xchg((%s *)(r%d %+d), r%d)"
    assert_eq!(
        one(insn(0xdb, 1, 2, 16, 0xe1)),
        "(db) r2 = atomic64_xchg((u64 *)(r1 +16), r2)"
    );
    // "(%02x) r%d = load_acquire((%s *)(r%d %+d))": dst, size, src, off
    assert_eq!(
        one(insn(0xdb, 0, 1, 8, 0x100)),
        "(db) r0 = load_acquire((u64 *)(r1 +8))"
    );
    // "(%02x) store_release((%s *)(r%d %+d), r%d)"
    assert_eq!(
        one(insn(0xdb, 1, 2, 0, 0x110)),
        "(db) store_release((u64 *)(r1 +0), r2)"
    );
}

#[test]
fn jumps() {
    // "(%02x) if %c%d %s 0x%x goto pc%+d"
    assert_eq!(one(insn(0x25, 1, 0, 3, 5)), "(25) if r1 > 0x5 goto pc+3");
    assert_eq!(
        one(insn(0x45, 1, 0, 1, -1)),
        "(45) if r1 & 0xffffffff goto pc+1"
    );
    // "(%02x) if %c%d %s %c%d goto pc%+d"
    assert_eq!(one(insn(0x3d, 2, 1, 6, 0)), "(3d) if r2 >= r1 goto pc+6");
    assert_eq!(one(insn(0x2e, 1, 2, 5, 0)), "(2e) if w1 > w2 goto pc+5");
    assert_eq!(one(insn(0xcd, 1, 2, -2, 0)), "(cd) if r1 s< r2 goto pc-2");
    // "(%02x) goto pc%+d", "(%02x) gotol pc%+d", "(%02x) may_goto pc%+d",
    // "(%02x) gotox r%d", "(%02x) exit"
    assert_eq!(one(insn(0x05, 0, 0, -7, 0)), "(05) goto pc-7");
    assert_eq!(one(insn(0x06, 0, 0, 0, 300)), "(06) gotol pc+300");
    assert_eq!(one(insn(0xe5, 0, 0, 4, 0)), "(e5) may_goto pc+4");
    assert_eq!(one(insn(0x0d, 3, 0, 0, 0)), "(0d) gotox r3");
    assert_eq!(one(insn(0x95, 0, 0, 0, 0)), "(95) exit");
}

#[test]
fn calls_without_symbols() {
    // "(%02x) call %s#%d" with func_id_str[imm] = "bpf_" #name
    assert_eq!(
        one(insn(0x85, 0, 0, 0, 1)),
        "(85) call bpf_map_lookup_elem#1"
    );
    assert_eq!(one(insn(0x85, 0, 0, 0, 5)), "(85) call bpf_ktime_get_ns#5");
    assert_eq!(
        one(insn(0x85, 0, 0, 0, 211)),
        "(85) call bpf_cgrp_storage_delete#211"
    );
    // An address offset (xlated) with no kallsyms: bpftool's "0x%lx" of
    // __bpf_call_base (0 when unknown) + imm, sign-extended.
    assert_eq!(
        one(insn(0x85, 0, 0, 0, 330_864)),
        "(85) call 0x50c70#330864"
    );
    assert_eq!(
        one(insn(0x85, 0, 0, 0, -100)),
        "(85) call 0xffffffffffffff9c#-100"
    );
    // A kfunc call (src_reg 2).
    assert_eq!(one(insn(0x85, 0, 2, 0, 77)), "(85) call 0x4d#77");
    // A bpf-to-bpf call in a program that is not JITed: "%+d" of off.
    assert_eq!(one(insn(0x85, 0, 1, 2, 1)), "(85) call pc+2");
}

#[test]
fn calls_through_kallsyms() {
    let k = Kallsyms::parse(
        "ffffffff81000000 T __bpf_call_base\n\
         ffffffff8100004d T bpf_obj_new_impl\n\
         ffffffff81050c70 t __htab_map_lookup_elem\n",
    );
    let names = CallNames::new().with_kallsyms(&k);
    let out = format_insns(
        &bytes(&[
            insn(0x85, 0, 0, 0, 0x50c70),
            insn(0x85, 0, 2, 0, 0x4d),
            insn(0x85, 0, 0, 0, 0x123),
            insn(0x85, 0, 0, 0, 1),
        ]),
        &names,
    );
    let texts: Vec<&str> = out.iter().map(|x| x.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "(85) call __htab_map_lookup_elem#330864",
            "(85) call bpf_obj_new_impl#77",
            "(85) call 0xffffffff81000123#291",
            // A helper id is named from the table before kallsyms is asked.
            "(85) call bpf_map_lookup_elem#1",
        ]
    );
}

#[test]
fn bpf_to_bpf_call_names_the_callee() {
    // A JITed two-function program: after JIT the call's imm is the
    // callee's sub-program index, off the original relative offset.
    let mut b = BtfBuilder::new();
    let int = b.int("int", 4, true);
    let proto = b.func_proto(int, &[("n", int)]);
    let main = b.func("main_fn", proto, true);
    let work = b.func("work", proto, false);
    let insns = bytes(&[
        insn(0x85, 0, 1, 2, 1),
        insn(0x95, 0, 0, 0, 0),
        insn(0xb7, 0, 0, 0, 0),
        insn(0x95, 0, 0, 0, 0),
    ]);
    let info = BpfProgInfo {
        tag: [0xaa; 8],
        nr_jited_ksyms: 2,
        arrays: (1 << array::XLATED_INSNS)
            | (1 << array::JITED_KSYMS)
            | (1 << array::JITED_FUNC_LENS)
            | (1 << array::FUNC_INFO)
            | (1 << array::PROG_TAGS),
        xlated_insns: insns,
        jited_ksyms: vec![0xffff_ffff_c000_0000, 0xffff_ffff_c000_0100],
        jited_func_lens: vec![0x40, 0x20],
        func_info: vec![
            FuncInfo {
                insn_off: 0,
                type_id: main,
            },
            FuncInfo {
                insn_off: 2,
                type_id: work,
            },
        ],
        prog_tags: vec![[0x11; 8], [0x22; 8]],
        ..Default::default()
    };
    let prog = Program::new(info, Some(&b.build()));
    assert!(prog.warnings().is_empty(), "{:?}", prog.warnings());
    let out = bpfinfo::format_program(&prog, None);
    // "(%02x) call pc%s" with bpftool's "%+d#%s".
    assert_eq!(out[0].text, "(85) call pc+2#bpf_prog_2222222222222222_work");
    // The listing puts bpftool's signature line before each function.
    let l = bpfinfo::listing(&prog, None, false);
    assert_eq!(
        l,
        "int main_fn(int n):\n   0: (85) call pc+2#bpf_prog_2222222222222222_work\n   1: (95) exit\n\
         int work(int n):\n   2: (b7) r0 = 0\n   3: (95) exit\n"
    );
}

#[test]
fn ld_imm64_takes_two_slots() {
    let out = format_insns(
        &bytes(&[
            // "(%02x) r%d = %s" with bpftool's print_imm: "0x%llx",
            insn(0x18, 1, 0, 0, 0x1122_3344),
            insn(0x00, 0, 0, 0, 0x5566_7788),
            // "map[id:%u]",
            insn(0x18, 1, 1, 0, 25),
            insn(0x00, 0, 0, 0, 0),
            // "map[id:%u][0]+%u",
            insn(0x18, 2, 2, 0, 25),
            insn(0x00, 0, 0, 0, 8),
            // "subprog[%+d]"
            insn(0x18, 3, 4, 0, 5),
            insn(0x00, 0, 0, 0, 0),
            insn(0x95, 0, 0, 0, 0),
        ]),
        &CallNames::new(),
    );
    let got: Vec<(u32, &str)> = out.iter().map(|x| (x.index, x.text.as_str())).collect();
    assert_eq!(
        got,
        [
            (0, "(18) r1 = 0x5566778811223344"),
            (2, "(18) r1 = map[id:25]"),
            (4, "(18) r2 = map[id:25][0]+8"),
            (6, "(18) r3 = subprog[+5]"),
            (8, "(95) exit"),
        ]
    );
}

#[test]
fn malformed_instructions() {
    // "BUG_ldx_%02x", "BUG_%02x" (stx), "BUG_st_%02x", "BUG_ld_%02x": no
    // opcode prefix.
    assert_eq!(one(insn(0x01, 0, 0, 0, 0)), "BUG_ldx_01");
    assert_eq!(one(insn(0x23, 0, 0, 0, 0)), "BUG_23");
    assert_eq!(one(insn(0x42, 0, 0, 0, 0)), "BUG_st_42");
    assert_eq!(one(insn(0x60, 0, 0, 0, 0)), "BUG_ld_60");
    // An atomic with an unknown operation.
    assert_eq!(one(insn(0xdb, 0, 0, 0, 0x77)), "BUG_db");
    // A trailing half instruction is ignored; an ld_imm64 cut in half
    // still formats (high half 0).
    let mut b = bytes(&[insn(0x18, 1, 0, 0, 7)]);
    assert_eq!(format_insns(&b, &CallNames::new())[0].text, "(18) r1 = 0x7");
    b.extend_from_slice(&[1, 2, 3]);
    assert_eq!(format_insns(&b, &CallNames::new()).len(), 1);
}

#[test]
fn bpftool_index_column() {
    // bpftool prints the index with "% 4d: ".
    let out = format_insns(
        &bytes(&vec![insn(0x95, 0, 0, 0, 0); 1001]),
        &CallNames::new(),
    );
    assert_eq!(out[0].bpftool_line(), "   0: (95) exit");
    assert_eq!(out[999].bpftool_line(), " 999: (95) exit");
    assert_eq!(out[1000].bpftool_line(), " 1000: (95) exit");
}
