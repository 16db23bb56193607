//! Disassembly of JIT images: x86-64 with iced-x86, arm64 with yaxpeax-arm.
//!
//! Bytes that do not decode become a `(bad)` instruction (one byte long on
//! x86-64, one word on arm64) and decoding goes on after them, as objdump
//! does; nothing here panics on arbitrary input.

use iced_x86::{
    Decoder, DecoderOptions, FlowControl, Formatter, GasFormatter, Instruction, IntelFormatter,
    OpKind,
};

/// An instruction set the JIT can emit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// x86-64.
    X86_64,
    /// AArch64 (arm64).
    Aarch64,
}

impl Arch {
    /// The architecture of this machine, if it is one we disassemble.
    pub fn host() -> Option<Arch> {
        match std::env::consts::ARCH {
            "x86_64" => Some(Arch::X86_64),
            "aarch64" => Some(Arch::Aarch64),
            _ => None,
        }
    }
}

/// Assembly syntax for x86-64 (arm64 has one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Syntax {
    /// AT&T / GAS, as GNU objdump prints it (the default, so listings can be
    /// compared with `objdump -D`).
    #[default]
    Att,
    /// Intel.
    Intel,
}

/// One decoded instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Insn {
    /// Byte offset from the start of the slice.
    pub offset: u32,
    /// Length in bytes.
    pub len: u8,
    /// The instruction bytes.
    pub bytes: Vec<u8>,
    /// Mnemonic and operands, separated by one space; `(bad)` when the bytes
    /// do not decode. Branch targets are absolute, from the base address.
    pub text: String,
    /// The absolute address a direct call goes to (x86-64 `call rel32`,
    /// arm64 `bl`): what a caller names, as a helper, a map operation, a
    /// kfunc or a sub-program. `None` for every other instruction.
    pub call_target: Option<u64>,
}

/// Disassemble `code`, which starts at address `base`.
pub fn disassemble(arch: Arch, code: &[u8], base: u64, syntax: Syntax) -> Vec<Insn> {
    match arch {
        Arch::X86_64 => x86_64(code, base, syntax),
        Arch::Aarch64 => aarch64(code, base),
    }
}

fn bad(code: &[u8], offset: usize, len: usize) -> Insn {
    Insn {
        offset: offset as u32,
        len: len as u8,
        bytes: code[offset..offset + len].to_vec(),
        text: "(bad)".to_string(),
        call_target: None,
    }
}

fn x86_64(code: &[u8], base: u64, syntax: Syntax) -> Vec<Insn> {
    let mut formatter: Box<dyn Formatter> = match syntax {
        Syntax::Att => Box::new(GasFormatter::new()),
        Syntax::Intel => Box::new(IntelFormatter::new()),
    };
    let o = formatter.options_mut();
    o.set_uppercase_hex(false);
    o.set_space_after_operand_separator(false);
    o.set_branch_leading_zeros(false);
    o.set_leading_zeros(false);
    o.set_show_zero_displacements(true);
    o.set_small_hex_numbers_in_decimal(false);
    // objdump prints `imul $imm,%rax,%rax`, not the two-operand pseudo form.
    o.set_use_pseudo_ops(false);
    o.set_first_operand_char_index(0);
    if syntax == Syntax::Intel {
        o.set_hex_prefix("0x");
        o.set_hex_suffix("");
        o.set_space_after_operand_separator(true);
    }

    let mut out = Vec::new();
    let mut decoder = Decoder::with_ip(64, code, base, DecoderOptions::NONE);
    let mut insn = Instruction::default();
    let mut text = String::new();
    while decoder.can_decode() {
        let pos = decoder.position();
        decoder.decode_out(&mut insn);
        if insn.is_invalid() {
            out.push(bad(code, pos, 1));
            // Resynchronise one byte on, as objdump does after "(bad)".
            if decoder.set_position(pos + 1).is_err() {
                break;
            }
            decoder.set_ip(base.wrapping_add(pos as u64 + 1));
            continue;
        }
        text.clear();
        formatter.format(&insn, &mut text);
        let len = insn.len();
        // Indirect calls (through a register or memory) have no target to
        // name; the BPF JIT emits direct calls for helpers and sub-programs.
        let direct = matches!(
            insn.op0_kind(),
            OpKind::NearBranch64 | OpKind::NearBranch32 | OpKind::NearBranch16
        );
        let call_target =
            (insn.flow_control() == FlowControl::Call && direct).then(|| insn.near_branch_target());
        out.push(Insn {
            offset: pos as u32,
            len: len as u8,
            bytes: code[pos..pos + len].to_vec(),
            text: normalize_spaces(&text),
            call_target,
        });
    }
    out
}

/// The target of an arm64 `bl imm26` at `pc` (the only direct call the
/// arm64 JIT emits; helpers out of its range go through `blr`).
fn aarch64_bl_target(word: u32, pc: u64) -> Option<u64> {
    if word & 0xfc00_0000 != 0x9400_0000 {
        return None;
    }
    // imm26 counts words, signed.
    let imm = ((word & 0x03ff_ffff) << 6) as i32 >> 6;
    Some(pc.wrapping_add((i64::from(imm) * 4) as u64))
}

fn aarch64(code: &[u8], base: u64) -> Vec<Insn> {
    use yaxpeax_arch::{Decoder as _, U8Reader};
    let decoder = yaxpeax_arm::armv8::a64::InstDecoder::default();
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < code.len() {
        let Some(word) = code.get(pos..pos + 4) else {
            out.push(bad(code, pos, code.len() - pos));
            break;
        };
        let mut reader = U8Reader::new(word);
        match decoder.decode(&mut reader) {
            Ok(i) => out.push(Insn {
                offset: pos as u32,
                len: 4,
                bytes: word.to_vec(),
                text: normalize_spaces(&i.to_string()),
                call_target: aarch64_bl_target(
                    u32::from_le_bytes(word.try_into().expect("4 bytes")),
                    base.wrapping_add(pos as u64),
                ),
            }),
            Err(_) => out.push(bad(code, pos, 4)),
        }
        pos += 4;
    }
    out
}

/// Mnemonic, one space, operands.
fn normalize_spaces(s: &str) -> String {
    let s = s.trim();
    match s.split_once(char::is_whitespace) {
        Some((m, rest)) => format!("{m} {}", rest.trim_start()),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x86_direct_calls_have_their_absolute_target() {
        // call rel32 at 0x1000 to 0x1000 + 5 + 0x10; then call *%rax.
        let code = [0xe8, 0x10, 0, 0, 0, 0xff, 0xd0];
        let v = disassemble(Arch::X86_64, &code, 0x1000, Syntax::Att);
        assert_eq!(v[0].call_target, Some(0x1015));
        assert_eq!(v[1].call_target, None, "{}", v[1].text);
    }

    #[test]
    fn arm64_bl_targets_go_both_ways() {
        // bl +8, bl -4 (imm26 all ones), ret.
        let words: [u32; 3] = [0x9400_0002, 0x97ff_ffff, 0xd65f_03c0];
        let code: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let v = disassemble(Arch::Aarch64, &code, 0x4000, Syntax::Att);
        assert_eq!(v[0].call_target, Some(0x4008));
        assert_eq!(v[1].call_target, Some(0x4000));
        assert_eq!(v[2].call_target, None);
    }
}
