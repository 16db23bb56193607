//! Where an xlated call goes, and what it is called.
//!
//! After verification a helper call's imm is no longer the helper id but
//! the offset of the kernel function from `__bpf_call_base` (map
//! operations become the map type's own function, e.g.
//! `__htab_map_lookup_elem`), kfunc calls hold the same kind of offset, and
//! bpf-to-bpf calls hold the callee's sub-program index. bpftool names all
//! three through /proc/kallsyms; [`KernelNames`] lets a recording's symbol
//! table stand in for it.

use super::helpers::HELPERS;
use super::insn::{BpfInsn, PSEUDO_CALL};
use crate::program::Program;
use crate::Kallsyms;

/// `src_reg` of a kfunc call.
const PSEUDO_KFUNC_CALL: u8 = 2;
/// BPF_JMP | BPF_CALL.
const CALL: u8 = 0x85;

/// A kernel symbol table, asked only for the symbol starting exactly at an
/// address (what bpftool's `kernel_syms_search` does).
pub trait KernelNames {
    /// The name of the symbol that starts at `addr`.
    fn name_at(&self, addr: u64) -> Option<String>;
}

impl KernelNames for Kallsyms {
    fn name_at(&self, addr: u64) -> Option<String> {
        Kallsyms::name_at(self, addr).map(str::to_string)
    }
}

/// How calls are named: sub-programs (for bpf-to-bpf calls) and kernel
/// symbols (for helpers and kfuncs in xlated code).
#[derive(Clone, Default)]
pub struct CallNames<'a> {
    subprogs: Vec<(u64, String)>,
    pub(super) nr_subprogs: usize,
    kernel: Option<&'a dyn KernelNames>,
    call_base: u64,
}

impl std::fmt::Debug for CallNames<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallNames")
            .field("subprogs", &self.subprogs)
            .field("kernel", &self.kernel.is_some())
            .field("call_base", &format_args!("{:#x}", self.call_base))
            .finish()
    }
}

impl<'a> CallNames<'a> {
    /// No names: calls print as bpftool prints them without symbols.
    pub fn new() -> CallNames<'a> {
        CallNames::default()
    }

    /// Name bpf-to-bpf calls after `prog`'s sub-programs (by the kernel's
    /// names, which is what bpftool finds in kallsyms).
    pub fn for_program(prog: &Program) -> CallNames<'a> {
        let subprogs = prog
            .subprogs()
            .iter()
            .map(|s| (s.addr, prog.kernel_ksym_name(s.index).unwrap_or_default()))
            .collect();
        CallNames {
            subprogs,
            nr_subprogs: prog.info().nr_jited_ksyms as usize,
            ..CallNames::default()
        }
    }

    /// Resolve call targets through kernel symbols too, as bpftool does.
    pub fn with_kallsyms(self, kallsyms: &'a Kallsyms) -> CallNames<'a> {
        let base = kallsyms.address_of("__bpf_call_base").unwrap_or(0);
        self.with_symbols(kallsyms, base)
    }

    /// Resolve call targets through any kernel symbol table, given where
    /// `__bpf_call_base` is in it (see [`infer_call_base`] when the table
    /// cannot be searched by name).
    pub fn with_symbols(mut self, kernel: &'a dyn KernelNames, call_base: u64) -> CallNames<'a> {
        self.kernel = Some(kernel);
        self.call_base = call_base;
        self
    }

    /// The address of `__bpf_call_base` these names use (0 if unknown).
    pub fn call_base(&self) -> u64 {
        self.call_base
    }

    /// The absolute address a call instruction goes to, or `None` for a
    /// helper call that still holds its id (bytecode before verification)
    /// or when the address cannot be known (no `__bpf_call_base`).
    pub fn target(&self, insn: &BpfInsn) -> Option<u64> {
        if insn.code != CALL {
            return None;
        }
        if insn.src == PSEUDO_CALL {
            let i = usize::try_from(insn.imm).ok()?;
            return self.subprogs.get(i).map(|s| s.0);
        }
        let is_helper_id =
            insn.src == 0 && usize::try_from(insn.imm).is_ok_and(|i| i < HELPERS.len());
        if is_helper_id || self.call_base == 0 {
            return None;
        }
        Some(self.call_base.wrapping_add(insn.imm as i64 as u64))
    }

    /// The target of `call pc...#` for sub-program `imm`.
    pub(super) fn subprog(&self, imm: i32) -> String {
        let sub = usize::try_from(imm).ok().and_then(|i| self.subprogs.get(i));
        let addr = match sub {
            Some(s) => s.0,
            None => self.call_base.wrapping_add(imm as i64 as u64),
        };
        if let Some(k) = self.kernel {
            return match k.name_at(addr) {
                Some(n) => n,
                None => format!("{addr:#x}"),
            };
        }
        match sub {
            Some(s) if !s.1.is_empty() => s.1.clone(),
            _ => format!("{addr:#x}"),
        }
    }

    /// A helper or kfunc at `__bpf_call_base + imm`.
    pub(super) fn kernel_function(&self, imm: i32) -> String {
        let addr = self.call_base.wrapping_add(imm as i64 as u64);
        match self.kernel.and_then(|k| k.name_at(addr)) {
            Some(n) => n,
            None => format!("{addr:#x}"),
        }
    }
}

/// One call instruction of a program's xlated code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallSite {
    /// Index of its 8-byte slot.
    pub index: u32,
    /// Where it goes (see [`CallNames::target`]).
    pub target: Option<u64>,
}

/// Every call in `prog`'s xlated code, in order, with its target.
pub fn call_sites(prog: &Program, names: &CallNames<'_>) -> Vec<CallSite> {
    let mut out = Vec::new();
    let mut skip = false;
    for (i, c) in prog.info().xlated_insns.chunks_exact(8).enumerate() {
        let insn = BpfInsn::decode(c.try_into().expect("8 bytes"));
        // The second slot of an ld_imm64 is data, not an instruction.
        if std::mem::take(&mut skip) {
            continue;
        }
        skip = insn.is_ld_imm64();
        if insn.code == CALL {
            out.push(CallSite {
                index: i as u32,
                target: names.target(&insn),
            });
        }
    }
    out
}

/// Where `__bpf_call_base` is, for a symbol table that can only be asked
/// what is at an address (a recording's): the JIT calls each helper and
/// kfunc at `__bpf_call_base + imm`, so some JIT call target minus some
/// xlated imm is the base, and `is_call_base` says which candidate is.
pub fn infer_call_base(
    prog: &Program,
    jit_call_targets: &[u64],
    is_call_base: impl Fn(u64) -> bool,
) -> Option<u64> {
    let imms: Vec<i32> = prog
        .info()
        .xlated_insns
        .chunks_exact(8)
        .map(|c| BpfInsn::decode(c.try_into().expect("8 bytes")))
        .filter(|i| i.code == CALL && (i.src == 0 || i.src == PSEUDO_KFUNC_CALL))
        .map(|i| i.imm)
        .collect();
    let mut tried = Vec::new();
    for &t in jit_call_targets {
        for &imm in &imms {
            let c = t.wrapping_sub(imm as i64 as u64);
            if tried.contains(&c) {
                continue;
            }
            if is_call_base(c) {
                return Some(c);
            }
            tried.push(c);
        }
    }
    None
}
