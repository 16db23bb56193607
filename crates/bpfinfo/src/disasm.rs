//! Disassembly of JIT images: x86-64 with iced-x86, arm64 with yaxpeax-arm.
//!
//! Bytes that do not decode become a `(bad)` instruction (one byte long on
//! x86-64, one word on arm64) and decoding goes on after them, as objdump
//! does; nothing here panics on arbitrary input.

use iced_x86::{Decoder, DecoderOptions, Formatter, GasFormatter, Instruction, IntelFormatter};

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
}

/// Disassemble `code`, which starts at address `base`.
pub fn disassemble(arch: Arch, code: &[u8], base: u64, syntax: Syntax) -> Vec<Insn> {
    match arch {
        Arch::X86_64 => x86_64(code, base, syntax),
        Arch::Aarch64 => aarch64(code),
    }
}

fn bad(code: &[u8], offset: usize, len: usize) -> Insn {
    Insn {
        offset: offset as u32,
        len: len as u8,
        bytes: code[offset..offset + len].to_vec(),
        text: "(bad)".to_string(),
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
        out.push(Insn {
            offset: pos as u32,
            len: len as u8,
            bytes: code[pos..pos + len].to_vec(),
            text: normalize_spaces(&text),
        });
    }
    out
}

fn aarch64(code: &[u8]) -> Vec<Insn> {
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
