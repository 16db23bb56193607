//! One BPF instruction, and its text in the syntax of the kernel's
//! kernel/bpf/disasm.c (`print_bpf_insn`) with bpftool's call and immediate
//! callbacks. The format strings are the kernel's; the code is ours.

use super::calls::CallNames;
use super::helpers::HELPERS;

// Instruction classes, operations, modes, sizes (include/uapi/linux/bpf.h
// and bpf_common.h).
const LD: u8 = 0x00;
const LDX: u8 = 0x01;
const ST: u8 = 0x02;
const STX: u8 = 0x03;
const ALU: u8 = 0x04;
const JMP: u8 = 0x05;
const JMP32: u8 = 0x06;
const ALU64: u8 = 0x07;

const SRC_X: u8 = 0x08;

const OP_DIV: u8 = 0x30;
const OP_NEG: u8 = 0x80;
const OP_MOD: u8 = 0x90;
const OP_MOV: u8 = 0xb0;
const OP_END: u8 = 0xd0;

const JA: u8 = 0x00;
const CALL: u8 = 0x80;
const EXIT: u8 = 0x90;
const JCOND: u8 = 0xe0;

const MODE_IMM: u8 = 0x00;
const MODE_ABS: u8 = 0x20;
const MODE_IND: u8 = 0x40;
const MODE_MEM: u8 = 0x60;
const MODE_MEMSX: u8 = 0x80;
const MODE_ATOMIC: u8 = 0xc0;
/// BPF_NOSPEC: internal, no UAPI name; shares the ATOMIC mode bits in ST.
const MODE_NOSPEC: u8 = 0xc0;

const SIZE_DW: u8 = 0x18;

const FETCH: i32 = 0x01;
const XCHG: i32 = 0xe0 | FETCH;
const CMPXCHG: i32 = 0xf0 | FETCH;
const LOAD_ACQ: i32 = 0x100;
const STORE_REL: i32 = 0x110;

/// `src_reg` of a call: a bpf-to-bpf call, and a kfunc call.
pub(crate) const PSEUDO_CALL: u8 = 1;
/// `src_reg` of ld_imm64 loading a map (xlated: map id in imm).
pub(crate) const PSEUDO_MAP_FD: u8 = 1;
const PSEUDO_MAP_VALUE: u8 = 2;
const PSEUDO_FUNC: u8 = 4;
const MAY_GOTO: u8 = 0;

/// One 8-byte BPF instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BpfInsn {
    /// Opcode: class | size/op | mode/source.
    pub code: u8,
    /// Destination register (low nibble of byte 1).
    pub dst: u8,
    /// Source register (high nibble of byte 1).
    pub src: u8,
    /// Signed offset.
    pub off: i16,
    /// Signed immediate.
    pub imm: i32,
}

impl BpfInsn {
    /// An instruction from its fields, as written in bytecode listings.
    pub const fn new(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> BpfInsn {
        BpfInsn {
            code,
            dst,
            src,
            off,
            imm,
        }
    }

    /// Decode from the little-endian in-memory layout.
    pub fn decode(b: [u8; 8]) -> BpfInsn {
        BpfInsn {
            code: b[0],
            dst: b[1] & 0x0f,
            src: b[1] >> 4,
            off: i16::from_le_bytes([b[2], b[3]]),
            imm: i32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        }
    }

    /// Encode to the little-endian in-memory layout.
    pub fn encode(&self) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[0] = self.code;
        b[1] = (self.dst & 0x0f) | (self.src << 4);
        b[2..4].copy_from_slice(&self.off.to_le_bytes());
        b[4..8].copy_from_slice(&self.imm.to_le_bytes());
        b
    }

    /// Whether this is the first half of a 16-byte ld_imm64.
    pub fn is_ld_imm64(&self) -> bool {
        self.code == LD | MODE_IMM | SIZE_DW
    }

    fn class(&self) -> u8 {
        self.code & 0x07
    }
    fn op(&self) -> u8 {
        self.code & 0xf0
    }
    fn mode(&self) -> u8 {
        self.code & 0xe0
    }
    fn size(&self) -> u8 {
        self.code & 0x18
    }
    fn src_is_x(&self) -> bool {
        self.code & SRC_X != 0
    }
}

/// printf's "%s" of a NULL string, for table holes the kernel prints that way.
const NULL: &str = "(null)";

fn alu_op(op: u8) -> &'static str {
    match op {
        0x00 => "+=",
        0x10 => "-=",
        0x20 => "*=",
        0x30 => "/=",
        0x40 => "|=",
        0x50 => "&=",
        0x60 => "<<=",
        0x70 => ">>=",
        0x80 => "neg",
        0x90 => "%=",
        0xa0 => "^=",
        0xb0 => "=",
        0xc0 => "s>>=",
        0xd0 => "endian",
        _ => NULL,
    }
}

fn jmp_op(op: u8) -> &'static str {
    match op {
        0x00 => "jmp",
        0x10 => "==",
        0x20 => ">",
        0x30 => ">=",
        0x40 => "&",
        0x50 => "!=",
        0x60 => "s>",
        0x70 => "s>=",
        0x80 => "call",
        0x90 => "exit",
        0xa0 => "<",
        0xb0 => "<=",
        0xc0 => "s<",
        0xd0 => "s<=",
        _ => NULL,
    }
}

fn size_name(size: u8) -> &'static str {
    match size {
        0x00 => "u32",
        0x08 => "u16",
        0x10 => "u8",
        _ => "u64",
    }
}

fn signed_size_name(size: u8) -> &'static str {
    match size {
        0x00 => "s32",
        0x08 => "s16",
        0x10 => "s8",
        _ => NULL,
    }
}

fn atomic_op(op: i32) -> &'static str {
    match op & 0xf0 {
        0x00 => "add",
        0x50 => "and",
        0x40 => "or",
        0xa0 => "xor",
        _ => NULL,
    }
}

/// `%+d`
fn signed(v: impl Into<i64>) -> String {
    format!("{:+}", v.into())
}

/// Text of `insn` (with `next` the second half if it is an ld_imm64),
/// exactly as `bpftool prog dump xlated` prints it after the index.
pub(crate) fn format(insn: &BpfInsn, next: Option<&BpfInsn>, names: &CallNames<'_>) -> String {
    let code = insn.code;
    let class = insn.class();
    let (d, s) = (insn.dst, insn.src);
    let body = match class {
        ALU | ALU64 => {
            let w = if class == ALU { 'w' } else { 'r' };
            let op = insn.op();
            if op == OP_END {
                if class == ALU64 {
                    format!("r{d} = bswap{} r{d}", insn.imm)
                } else {
                    let order = if insn.src_is_x() { "be" } else { "le" };
                    format!("r{d} = {order}{} r{d}", insn.imm)
                }
            } else if op == OP_NEG {
                format!("{w}{d} = -{w}{d}")
            } else if code == ALU64 | OP_MOV | SRC_X && insn.off == 1 {
                let imm = insn.imm as u32;
                format!(
                    "r{d} = addr_space_cast(r{s}, {}, {})",
                    imm >> 16,
                    imm & 0xffff
                )
            } else if code == ALU64 | OP_MOV | SRC_X && insn.off == -1 {
                format!("r{d} = &(void __percpu *)(r{s})")
            } else {
                let sym = if (op == OP_DIV || op == OP_MOD) && insn.off == 1 {
                    if op == OP_DIV {
                        "s/="
                    } else {
                        "s%="
                    }
                } else {
                    alu_op(op)
                };
                if insn.src_is_x() {
                    let sx = match (op, insn.off) {
                        (OP_MOV, 8) => "(s8)",
                        (OP_MOV, 16) => "(s16)",
                        (OP_MOV, 32) => "(s32)",
                        _ => "",
                    };
                    format!("{w}{d} {sym} {sx}{w}{s}")
                } else {
                    format!("{w}{d} {sym} {}", insn.imm)
                }
            }
        }
        STX => {
            let size = size_name(insn.size());
            let off = signed(insn.off);
            let dw = if insn.size() == SIZE_DW { "64" } else { "" };
            let imm = insn.imm;
            match insn.mode() {
                MODE_MEM => format!("*({size} *)(r{d} {off}) = r{s}"),
                MODE_ATOMIC if matches!(imm, 0x00 | 0x50 | 0x40 | 0xa0) => {
                    format!("lock *({size} *)(r{d} {off}) {} r{s}", alu_op(imm as u8))
                }
                MODE_ATOMIC if matches!(imm, 0x01 | 0x51 | 0x41 | 0xa1) => format!(
                    "r{s} = atomic{dw}_fetch_{}(({size} *)(r{d} {off}), r{s})",
                    atomic_op(imm)
                ),
                MODE_ATOMIC if imm == CMPXCHG => {
                    format!("r0 = atomic{dw}_cmpxchg(({size} *)(r{d} {off}), r0, r{s})")
                }
                MODE_ATOMIC if imm == XCHG => {
                    format!("r{s} = atomic{dw}_xchg(({size} *)(r{d} {off}), r{s})")
                }
                MODE_ATOMIC if imm == LOAD_ACQ => {
                    format!("r{d} = load_acquire(({size} *)(r{s} {off}))")
                }
                MODE_ATOMIC if imm == STORE_REL => {
                    format!("store_release(({size} *)(r{d} {off}), r{s})")
                }
                _ => return format!("BUG_{code:02x}"),
            }
        }
        ST => match insn.mode() {
            MODE_MEM => format!(
                "*({} *)(r{d} {}) = {}",
                size_name(insn.size()),
                signed(insn.off),
                insn.imm
            ),
            MODE_NOSPEC => "nospec".to_string(),
            _ => return format!("BUG_st_{code:02x}"),
        },
        LDX => {
            let size = match insn.mode() {
                MODE_MEM => size_name(insn.size()),
                MODE_MEMSX => signed_size_name(insn.size()),
                _ => return format!("BUG_ldx_{code:02x}"),
            };
            format!("r{d} = *({size} *)(r{s} {})", signed(insn.off))
        }
        LD => match insn.mode() {
            MODE_ABS => format!("r0 = *({} *)skb[{}]", size_name(insn.size()), insn.imm),
            MODE_IND => format!(
                "r0 = *({} *)skb[r{s} + {}]",
                size_name(insn.size()),
                insn.imm
            ),
            MODE_IMM if insn.size() == SIZE_DW => {
                let hi = next.map_or(0, |n| n.imm);
                format!("r{d} = {}", ld_imm64_operand(insn, hi))
            }
            _ => return format!("BUG_ld_{code:02x}"),
        },
        _ => {
            // JMP and JMP32
            let op = insn.op();
            let w = if class == JMP32 { 'w' } else { 'r' };
            if op == CALL {
                call(insn, names)
            } else if code == JMP | JA {
                format!("goto pc{}", signed(insn.off))
            } else if code == JMP | JA | SRC_X {
                format!("gotox r{d}")
            } else if code == JMP | JCOND && s == MAY_GOTO {
                format!("may_goto pc{}", signed(insn.off))
            } else if code == JMP32 | JA {
                format!("gotol pc{}", signed(insn.imm))
            } else if code == JMP | EXIT {
                "exit".to_string()
            } else if insn.src_is_x() {
                format!(
                    "if {w}{d} {} {w}{s} goto pc{}",
                    jmp_op(op),
                    signed(insn.off)
                )
            } else {
                format!(
                    "if {w}{d} {} {:#x} goto pc{}",
                    jmp_op(op),
                    insn.imm as u32,
                    signed(insn.off)
                )
            }
        }
    };
    format!("({code:02x}) {body}")
}

/// The operand of an ld_imm64 as bpftool's `print_imm` shows it.
fn ld_imm64_operand(insn: &BpfInsn, hi: i32) -> String {
    match insn.src {
        PSEUDO_MAP_FD => format!("map[id:{}]", insn.imm as u32),
        PSEUDO_MAP_VALUE => format!("map[id:{}][0]+{}", insn.imm as u32, hi as u32),
        PSEUDO_FUNC => format!("subprog[{}]", signed(insn.imm)),
        _ => {
            let full = (u64::from(hi as u32) << 32) | u64::from(insn.imm as u32);
            format!("{full:#x}")
        }
    }
}

/// A call: helper by id, or (in xlated code, where the verifier replaced the
/// id by an address offset) by kernel symbol; bpf-to-bpf calls by the
/// callee's symbol.
fn call(insn: &BpfInsn, names: &CallNames<'_>) -> String {
    if insn.src == PSEUDO_CALL {
        // After JIT the verifier leaves the callee's sub-program index in imm
        // and the original pc-relative offset in off.
        let off = signed(insn.off);
        if names.nr_subprogs == 0 {
            return format!("call pc{off}");
        }
        let target = names.subprog(insn.imm);
        return format!("call pc{off}#{target}");
    }
    let name = match usize::try_from(insn.imm) {
        Ok(id) if insn.src == 0 && id < HELPERS.len() => HELPERS[id].to_string(),
        _ => names.kernel_function(insn.imm),
    };
    format!("call {name}#{}", insn.imm)
}
