//! Calls in annotated BPF code: what each call instruction calls, named
//! from the recording's own symbols (so a program annotates the same after
//! it is gone), and how many samples landed in the code it called, put on
//! the call instruction and carried to the bytecode's call.
//!
//! The profile keeps called-code samples per return address
//! ([`Profile::bpf_calls`]); the call is the instruction that ends there.

use std::collections::BTreeMap;

use bpfinfo::xlated::{call_sites, infer_call_base, CallNames, CallSite, KernelNames};
use bpfinfo::{Insn, Program};

use crate::analyze::profile::{Counts, Profile};
use crate::symbolize::BpfSymId;

/// The recording's symbols as bpftool's kallsyms lookup: the symbol that
/// starts exactly at an address, BPF code first (kallsyms as loaded by the
/// symbolizer leaves `[bpf]` entries out).
pub struct RecordingNames<'a> {
    p: &'a Profile,
    /// The program's sub-programs by the kernel's names, which is what
    /// bpftool finds in kallsyms; the recording may hold perf's
    /// synthesized names for the same addresses.
    subprogs: Vec<(u64, String)>,
}

impl<'a> RecordingNames<'a> {
    pub fn new(p: &'a Profile, prog: &Program) -> RecordingNames<'a> {
        let subprogs = prog
            .subprogs()
            .iter()
            .filter_map(|s| Some((s.addr, prog.kernel_ksym_name(s.index)?)))
            .collect();
        RecordingNames { p, subprogs }
    }
}

impl KernelNames for RecordingNames<'_> {
    fn name_at(&self, addr: u64) -> Option<String> {
        if let Some(s) = self.subprogs.iter().find(|s| s.0 == addr) {
            return Some(s.1.clone());
        }
        let bpf = self.p.sym.bpf.syms.iter().filter(|s| s.addr == addr);
        // A program's own name before a trampoline's at the same address.
        if let Some(s) = bpf
            .clone()
            .find(|s| !s.image)
            .or_else(|| bpf.clone().next())
        {
            return Some(s.name.clone());
        }
        let k = self.p.sym.kallsyms.lookup(addr)?;
        (k.start == addr).then(|| k.name.to_string())
    }
}

/// What a JIT call at `target` calls, as `name` or `name+0xOFF`: one of
/// `prog`'s sub-programs by its BTF function name, another BPF symbol of
/// the recording (a program, a trampoline), else the kernel function.
pub fn callee_name(p: &Profile, prog: &Program, target: u64) -> Option<String> {
    // Without BTF a sub-program's only name is the recorded
    // `bpf_prog_<tag>_F`, found below.
    if let Some(s) = prog.subprogs().iter().find(|s| s.addr == target) {
        if let Some(name) = prog.btf_func_name(s.index) {
            return Some(name.to_string());
        }
    }
    kernel_callee_name(p, target)
}

/// What a call from kernel or BPF code at `target` calls, as `name` or
/// `name+0xOFF`: a BPF symbol of the recording (a program, a trampoline),
/// else the kernel function.
pub fn kernel_callee_name(p: &Profile, target: u64) -> Option<String> {
    let with_off = |name: &str, start: u64| match target - start {
        0 => name.to_string(),
        off => format!("{name}+{off:#x}"),
    };
    // Any registration in the recording, not only those live at its end:
    // the call was made while the callee was loaded.
    let covering = p
        .sym
        .bpf
        .syms
        .iter()
        .filter(|s| s.addr <= target && target < s.addr + u64::from(s.len));
    if let Some(s) = covering
        .clone()
        .find(|s| !s.image)
        .or_else(|| covering.clone().next())
    {
        return Some(with_off(&s.name, s.addr));
    }
    let (k, end) = p.sym.kallsyms.lookup_range(target)?;
    (target < end).then(|| with_off(k.name, k.start))
}

/// Where `__bpf_call_base` is in the recording's kernel symbols, from the
/// program's JIT call targets (the symbolizer's table cannot be searched
/// by name).
pub fn call_base(p: &Profile, prog: &Program, jit_targets: &[u64]) -> Option<u64> {
    infer_call_base(prog, jit_targets, |c| {
        p.sym
            .kallsyms
            .lookup(c)
            .is_some_and(|k| k.start == c && k.name == "__bpf_call_base")
    })
}

/// The recording's names for `prog`'s xlated calls, as bpftool would print
/// them on the machine where it ran.
pub fn xlated_names<'a>(
    p: &'a Profile,
    names: &'a RecordingNames<'a>,
    prog: &Program,
    jit_targets: &[u64],
) -> CallNames<'a> {
    let base = call_base(p, prog, jit_targets).unwrap_or(0);
    CallNames::for_program(prog).with_symbols(names, base)
}

/// Called-code samples of registrations `regs`, by return-address offset.
pub fn calls_of(p: &Profile, regs: &[BpfSymId]) -> Vec<(u32, Counts)> {
    let mut v: Vec<(u32, Counts)> = p
        .bpf_calls
        .iter()
        .filter(|((b, _), _)| regs.contains(b))
        .map(|(&(_, off), &c)| (off, c))
        .collect();
    v.sort_by_key(|x| x.0);
    v
}

/// Called-code samples per instruction: each return address goes to the
/// instruction that ends there (the call), or, if none ends exactly there
/// (a recording of other code at that address), to the one holding the
/// byte before it, so that they all add up to the function's. Offset 0
/// is no return address but where an interrupt hit the first instruction
/// (the profile counts interrupted BPF code the same way), and stays there.
pub fn called_per_insn(insns: &[Insn], calls: &[(u32, Counts)]) -> Vec<u64> {
    let mut per = vec![0u64; insns.len()];
    for &(ret, c) in calls {
        let before = ret.saturating_sub(1);
        let i = insns.partition_point(|x| x.offset <= before);
        if let Some(slot) = i.checked_sub(1).and_then(|i| per.get_mut(i)) {
            *slot += c.samples;
        }
    }
    per
}

/// A JIT call with samples in its callee, to be carried to the bytecode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JitCall {
    pub offset: u32,
    pub target: Option<u64>,
    pub called: u64,
}

/// Carry called-code samples from JIT calls to the xlated calls they were
/// compiled from. The JIT keeps the bytecode's order and calls each
/// helper, kfunc or sub-program at the address the xlated call names, so
/// the k-th JIT call to an address is the k-th xlated call to it; without
/// addresses (no `__bpf_call_base`), calls pair in order when both sides
/// have as many. `jit` is every JIT call of the sub-program (with or
/// without samples), `xlated` its xlated calls. Returns samples per xlated
/// index, and the JIT calls that found no partner (offset, samples).
pub fn carry_to_xlated(
    jit: &[JitCall],
    xlated: &[CallSite],
) -> (BTreeMap<u32, u64>, Vec<(u32, u64)>) {
    let mut carried: BTreeMap<u32, u64> = BTreeMap::new();
    let mut lost = Vec::new();
    let by_target = xlated.iter().all(|x| x.target.is_some());
    if !by_target {
        if jit.len() == xlated.len() {
            for (j, x) in jit.iter().zip(xlated) {
                if j.called > 0 {
                    *carried.entry(x.index).or_default() += j.called;
                }
            }
        } else {
            lost.extend(
                jit.iter()
                    .filter(|j| j.called > 0)
                    .map(|j| (j.offset, j.called)),
            );
        }
        return (carried, lost);
    }
    let mut seen: BTreeMap<u64, usize> = BTreeMap::new();
    for j in jit {
        let nth = j.target.map(|t| {
            let n = seen.entry(t).or_default();
            *n += 1;
            (t, *n - 1)
        });
        if j.called == 0 {
            continue;
        }
        let partner = nth.and_then(|(t, n)| xlated.iter().filter(|x| x.target == Some(t)).nth(n));
        match partner {
            Some(x) => *carried.entry(x.index).or_default() += j.called,
            None => lost.push((j.offset, j.called)),
        }
    }
    (carried, lost)
}

/// The xlated calls of sub-program `sub`.
pub fn xlated_calls_of(prog: &Program, names: &CallNames<'_>, sub: u32) -> Vec<CallSite> {
    call_sites(prog, names)
        .into_iter()
        .filter(|c| prog.subprog_of_xlated(c.index) == Some(sub as usize))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn insn(offset: u32, len: u8, call_target: Option<u64>) -> Insn {
        Insn {
            offset,
            len,
            bytes: vec![0; len as usize],
            text: String::new(),
            call_target,
        }
    }

    fn n(samples: u64) -> Counts {
        Counts {
            samples,
            period: samples,
        }
    }

    #[test]
    fn a_return_address_charges_the_call_that_ends_there() {
        // mov (0..3), call (3..8), mov (8..11), call (11..16)
        let insns = [
            insn(0, 3, None),
            insn(3, 5, Some(0x100)),
            insn(8, 3, None),
            insn(11, 5, Some(0x200)),
        ];
        let calls = [(8, n(7)), (16, n(5)), (16, n(1)), (0, n(9)), (99, n(2))];
        let per = called_per_insn(&insns, &calls);
        // Offset 0 is an interrupt at the first instruction; 99 lies past
        // the code, so its samples go to the last instruction (the byte
        // before it is counted as the last instruction's, as hits are).
        assert_eq!(per, vec![9, 7, 0, 8]);
    }

    fn jit(offset: u32, target: u64, called: u64) -> JitCall {
        JitCall {
            offset,
            target: Some(target),
            called,
        }
    }

    fn site(index: u32, target: Option<u64>) -> CallSite {
        CallSite { index, target }
    }

    #[test]
    fn calls_pair_by_target_in_order() {
        // Two updates, a lookup, and a JIT-only call (no xlated partner).
        let j = [
            jit(0x10, 0xa, 3),
            jit(0x20, 0xb, 0),
            jit(0x30, 0xa, 4),
            jit(0x40, 0xc, 2),
        ];
        let x = [site(5, Some(0xa)), site(9, Some(0xb)), site(12, Some(0xa))];
        let (carried, lost) = carry_to_xlated(&j, &x);
        assert_eq!(carried, BTreeMap::from([(5, 3), (12, 4)]));
        assert_eq!(lost, vec![(0x40, 2)]);
    }

    #[test]
    fn without_targets_calls_pair_in_order_only_when_counts_agree() {
        let j = [jit(0x10, 0xa, 3), jit(0x20, 0xb, 5)];
        let x = [site(2, None), site(7, None)];
        assert_eq!(carry_to_xlated(&j, &x).0, BTreeMap::from([(2, 3), (7, 5)]));
        let (carried, lost) = carry_to_xlated(&j, &x[..1]);
        assert!(carried.is_empty());
        assert_eq!(lost, vec![(0x10, 3), (0x20, 5)]);
    }
}
