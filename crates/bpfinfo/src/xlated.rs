//! BPF bytecode as text, in the kernel's own syntax, exactly as
//! `bpftool prog dump xlated` prints it: `(61) r0 = *(u32 *)(r1 +0)`,
//! `(85) call pc+2#bpf_prog_<tag>_work`, `(18) r1 = map[id:5]`.
//!
//! Helper calls are named from the UAPI id table when the instruction still
//! holds the id; in xlated code the verifier has replaced it with an address
//! offset from `__bpf_call_base`, which only /proc/kallsyms can name (pass a
//! [`Kallsyms`] for that, as bpftool reads it).

mod calls;
mod helpers;
mod insn;

pub use calls::{call_sites, infer_call_base, CallNames, CallSite, KernelNames};
pub use insn::BpfInsn;

use crate::program::Program;
use crate::Kallsyms;

/// One formatted instruction (an ld_imm64 is one entry for two slots).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XlatedInsn {
    /// Index of the (first) 8-byte slot.
    pub index: u32,
    /// The opcode byte.
    pub code: u8,
    /// What bpftool prints after the index, e.g. `(b7) r0 = 0`.
    pub text: String,
}

impl XlatedInsn {
    /// The full bpftool line, e.g. `   3: (95) exit` (no newline).
    pub fn bpftool_line(&self) -> String {
        format!("{:>4}: {}", format!(" {}", self.index), self.text)
    }
}

/// Format raw bytecode (a multiple of 8 bytes; a trailing partial
/// instruction is ignored).
pub fn format_insns(bytes: &[u8], names: &CallNames<'_>) -> Vec<XlatedInsn> {
    let insns: Vec<BpfInsn> = bytes
        .chunks_exact(8)
        .map(|c| BpfInsn::decode(c.try_into().expect("8 bytes")))
        .collect();
    let mut out = Vec::with_capacity(insns.len());
    let mut i = 0;
    while i < insns.len() {
        let insn = &insns[i];
        let next = insn.is_ld_imm64().then(|| insns.get(i + 1)).flatten();
        out.push(XlatedInsn {
            index: i as u32,
            code: insn.code,
            text: insn::format(insn, next, names),
        });
        i += if insn.is_ld_imm64() { 2 } else { 1 };
    }
    out
}

/// Format a program's xlated instructions (empty if they were not captured).
pub fn format_program(prog: &Program, kallsyms: Option<&Kallsyms>) -> Vec<XlatedInsn> {
    let mut names = CallNames::for_program(prog);
    if let Some(k) = kallsyms {
        names = names.with_kallsyms(k);
    }
    format_program_with(prog, &names)
}

/// [`format_program`] with calls named by `names` (e.g. a recording's
/// kernel symbols rather than this machine's /proc/kallsyms).
pub fn format_program_with(prog: &Program, names: &CallNames<'_>) -> Vec<XlatedInsn> {
    format_insns(&prog.info().xlated_insns, names)
}

/// The whole listing as `bpftool prog dump xlated [linum]` prints it:
/// a signature line before each function (with BTF), `; source` lines
/// before the first instruction of each line_info entry (with
/// `[file:.. line_num:.. line_col:..]` when `linum`), then the
/// instructions. Every line ends with a newline.
pub fn listing(prog: &Program, kallsyms: Option<&Kallsyms>, linum: bool) -> String {
    let info = prog.info();
    let btf = prog.btf();
    let mut out = String::new();
    let mut next_func = 0;
    let mut nr_skip = 0;
    for x in format_program(prog, kallsyms) {
        let i = x.index;
        if let Some(btf) = btf {
            if let Some(f) = info.func_info.get(next_func).filter(|f| f.insn_off == i) {
                if let Some(sig) = btf.func_signature(f.type_id).filter(|s| !s.is_empty()) {
                    out.push_str(&sig);
                    out.push_str(":\n");
                }
                next_func += 1;
            }
        }
        // bpftool prints the last line_info entry at or before i, counting
        // from the entries already printed, if it starts exactly at i.
        let li = info.line_info.get(nr_skip..).unwrap_or_default();
        let upto = li.iter().take_while(|l| l.insn_off <= i).count();
        if upto > 0 && li[upto - 1].insn_off == i {
            let l = &li[upto - 1];
            if let Some(text) = btf.and_then(|b| b.str_at(l.line_off)) {
                out.push_str("; ");
                out.push_str(text.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']));
                if linum {
                    let file = btf.and_then(|b| b.str_at(l.file_name_off)).unwrap_or("");
                    out.push_str(&format!(
                        " [file:{file} line_num:{} line_col:{}]",
                        l.line(),
                        l.column()
                    ));
                }
                out.push('\n');
            }
            nr_skip += 1;
        }
        out.push_str(&x.bpftool_line());
        out.push('\n');
    }
    out
}
