//! Where inside a function the time goes: its machine code with a sample
//! count per instruction, interleaved with the source lines it came from.
//! BPF programs come from the recording's own JIT image, BTF and line
//! tables (so they annotate after they are gone); kernel functions from
//! /proc/kcore; user functions from their binary. One disassembler serves
//! all three.

use std::collections::BTreeMap;
use std::path::Path;

use bpfinfo::{disassemble, Arch, Program, Syntax};
use perfdata::array;
use serde::Serialize;

use super::annotate_calls as calls;
use crate::analyze::profile::{Counts, Profile};
use crate::symbolize::{BpfSymId, DsoKind, SymId};

/// A BPF sub-program's identity in an annotation.
#[derive(Debug, Clone, Serialize)]
pub struct BpfRef {
    pub prog_id: u32,
    pub prog_name: String,
    pub sub: u32,
    pub func_name: String,
    pub subprogs: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct AnnotatedInsn {
    pub offset: u32,
    pub addr: u64,
    pub text: String,
    pub samples: u64,
    /// Share of this function's samples.
    pub percent: f64,
    /// Index into [`Annotation::lines`] of the source line it came from.
    pub line: Option<usize>,
    /// What a direct call calls (a helper, map operation, kfunc,
    /// sub-program), from the recording's symbols; the instruction text
    /// stays as objdump prints it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub callee: Option<String>,
    /// Samples in the code this call called (with call chains only).
    pub called: u64,
    /// Their share of the function's own and called samples together.
    pub called_percent: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct LineShare {
    pub file: String,
    pub line: u32,
    pub text: String,
    pub samples: u64,
    pub percent: f64,
    /// Samples in code called from this line's calls.
    pub called: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct XlatedRow {
    pub index: u32,
    pub text: String,
    pub line: Option<usize>,
    /// Where a line_info entry starts: the samples of that source line's
    /// JIT code (None on the other instructions). They belong to the line,
    /// not to this instruction: the line tables map JIT code to lines, and
    /// no table says which bytecode instruction a JIT instruction came
    /// from.
    pub line_samples: Option<u64>,
    /// `line_samples` as a share of the function's own samples.
    pub line_percent: Option<f64>,
    /// Samples in the code this call called, carried from its JIT call
    /// (or, when the JIT call has no xlated partner, to the first
    /// instruction of its source line, as `samples` are).
    pub called: u64,
    /// Their share of the function's own and called samples together.
    pub called_percent: f64,
}

/// One annotated function.
#[derive(Debug, Clone, Serialize)]
pub struct Annotation {
    pub symbol: String,
    pub dso: String,
    pub bpf: Option<BpfRef>,
    pub start: u64,
    pub len: u64,
    pub samples: u64,
    /// Share of all samples in the recording.
    pub percent: f64,
    /// Samples in code the function called (helpers, map operations,
    /// kfuncs, sub-programs), when the recording has call chains to tell;
    /// `None` without them.
    pub called: Option<u64>,
    /// Their share of all samples in the recording.
    pub called_percent: f64,
    pub insns: Vec<AnnotatedInsn>,
    /// Source lines, in the order of line info, with their summed shares.
    pub lines: Vec<LineShare>,
    pub xlated: Vec<XlatedRow>,
    pub warnings: Vec<String>,
}

/// Why a function cannot be annotated, in the user's terms.
#[derive(Debug, Clone, Serialize)]
pub struct Unavailable {
    pub symbol: String,
    pub samples: u64,
    pub why: String,
}

/// The result for one requested function.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Target {
    Annotated(Box<Annotation>),
    Unavailable(Unavailable),
}

/// What to annotate.
#[derive(Debug, Clone)]
pub enum Selection {
    /// The hottest `n` BPF programs, every sub-program with samples.
    TopBpf(usize),
    /// One BPF program, all its sub-programs with samples.
    Prog(u32),
    /// A symbol by name (a BPF `bpf_prog_<tag>_<func>`, a BPF function
    /// name, a kernel or a user function).
    Symbol(String),
}

pub struct AnnotateOptions {
    pub xlated: bool,
    pub kcore: std::path::PathBuf,
    /// Whether the profile was built from call chains, so that
    /// [`Profile::bpf_calls`] holds the samples in called code.
    pub callchains: bool,
}

fn arch_of(p: &Profile, file_arch: Option<&str>) -> Arch {
    let _ = p;
    match file_arch {
        Some("aarch64") | Some("arm64") => Arch::Aarch64,
        _ => Arch::X86_64,
    }
}

/// Samples per (program id, sub) over all registrations of that sub.
fn bpf_counts(p: &Profile) -> BTreeMap<(u32, u32), (Counts, Vec<BpfSymId>)> {
    let mut out: BTreeMap<(u32, u32), (Counts, Vec<BpfSymId>)> = BTreeMap::new();
    for (&(b, _), c) in &p.bpf_hits {
        if let Some(key) = p.sym.bpf.syms[b as usize].prog {
            let e = out.entry(key).or_default();
            e.0.samples += c.samples;
            e.0.period += c.period;
            if !e.1.contains(&b) {
                e.1.push(b);
            }
        }
    }
    // A function whose time all went into what it called has no samples of
    // its own, and is still worth annotating.
    for &(b, _) in p.bpf_calls.keys() {
        if let Some(key) = p.sym.bpf.syms[b as usize].prog {
            let e = out.entry(key).or_default();
            if !e.1.contains(&b) {
                e.1.push(b);
            }
        }
    }
    out
}

/// Called-code samples per (program id, sub), for ranking programs by all
/// the time they cost.
fn called_counts(p: &Profile) -> BTreeMap<(u32, u32), u64> {
    let mut out: BTreeMap<(u32, u32), u64> = BTreeMap::new();
    for (&(b, _), c) in &p.bpf_calls {
        if let Some(key) = p.sym.bpf.syms[b as usize].prog {
            *out.entry(key).or_default() += c.period;
        }
    }
    out
}

pub fn annotate(
    p: &Profile,
    sel: &Selection,
    arch: Option<&str>,
    o: &AnnotateOptions,
) -> Vec<Target> {
    let arch = arch_of(p, arch);
    let counts = bpf_counts(p);
    let called = called_counts(p);
    let mut want: Vec<(u32, u32)> = Vec::new();
    match sel {
        Selection::TopBpf(n) => {
            let mut per_prog: BTreeMap<u32, u64> = BTreeMap::new();
            for (&(id, sub), (c, _)) in &counts {
                let inside = called.get(&(id, sub)).copied().unwrap_or(0);
                *per_prog.entry(id).or_default() += c.period + inside;
            }
            let mut progs: Vec<(u32, u64)> = per_prog.into_iter().collect();
            progs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            for (id, _) in progs.into_iter().take(*n) {
                want.extend(counts.keys().filter(|k| k.0 == id));
            }
        }
        Selection::Prog(id) => want.extend(counts.keys().filter(|k| k.0 == *id)),
        Selection::Symbol(name) => {
            want.extend(
                counts
                    .iter()
                    .filter(|(_, (_, regs))| {
                        regs.iter().any(|&b| {
                            let n = &p.sym.bpf.syms[b as usize].name;
                            n == name
                                || n.ends_with(&format!("_{name}")) && n.starts_with("bpf_prog_")
                        })
                    })
                    .map(|(k, _)| *k),
            );
            if want.is_empty() {
                return annotate_native(p, name, arch, o);
            }
        }
    }
    if want.is_empty() {
        let why = match sel {
            Selection::Prog(id) => format!("no samples landed in BPF program {id}"),
            _ => "no samples landed in BPF programs in this recording".to_string(),
        };
        return vec![Target::Unavailable(Unavailable {
            symbol: String::new(),
            samples: 0,
            why,
        })];
    }
    want.into_iter()
        .map(|(id, sub)| annotate_bpf(p, id, sub, &counts[&(id, sub)], arch, o))
        .collect()
}

fn annotate_bpf(
    p: &Profile,
    id: u32,
    sub: u32,
    (c, regs): &(Counts, Vec<BpfSymId>),
    arch: Arch,
    o: &AnnotateOptions,
) -> Target {
    let name = p.sym.bpf.syms[regs[0] as usize].name.clone();
    let unavailable = |why: String| {
        Target::Unavailable(Unavailable {
            symbol: name.clone(),
            samples: c.samples,
            why,
        })
    };
    let Some(rec) = p.progs.get(&id).filter(|r| r.info.is_some()) else {
        return unavailable(format!(
            "program {id} has no bpf_prog_info in the recording: it was unloaded before the recorder could read it, \
             or the recorder did not capture BPF info (perf --no-bpf-event). Record with `bpfprof record` while it is loaded."
        ));
    };
    let info = rec.info.clone().expect("filtered");
    if !info.has(array::JITED_INSNS) || info.jited_insns.is_empty() {
        return unavailable(format!(
            "program {id}'s JIT image is not in the recording (recorded with --bpf-info=symbols, or the kernel hid it: \
             kernel.kptr_restrict / not JIT-compiled). Record again with --bpf-info=full as root."
        ));
    }
    let prog = Program::new(info, rec.btf.as_deref());
    let Some(sp) = prog.subprogs().get(sub as usize).cloned() else {
        return unavailable(format!(
            "program {id} has no sub-program {sub} in its prog info"
        ));
    };
    let Some(code) = prog.jited_bytes(sub as usize) else {
        return unavailable(format!(
            "program {id} sub-program {sub}: its bytes lie outside the captured image"
        ));
    };
    let insns = disassemble(arch, code, sp.addr, Syntax::Att);
    let call_counts = calls::calls_of(p, regs);
    let called_total: u64 = call_counts.iter().map(|c| c.1.samples).sum();
    let mut hits: Vec<(u32, Counts)> = p
        .bpf_hits
        .iter()
        .filter(|((b, _), _)| regs.contains(b))
        .map(|(&(_, off), &c)| (off, c))
        .collect();
    hits.sort_by_key(|h| h.0);
    let mut a = Annotation {
        // The name the recording gave this code (the kernel's, or perf's
        // synthesized one): report rows use it too, so the two agree.
        symbol: name.clone(),
        dso: name.clone(),
        bpf: Some(BpfRef {
            prog_id: id,
            prog_name: prog.info().name.clone(),
            sub,
            func_name: sp.func_name.clone(),
            subprogs: prog.subprogs().len(),
        }),
        start: sp.addr,
        len: sp.len as u64,
        samples: c.samples,
        percent: p.percent(c),
        called: o.callchains.then_some(called_total),
        called_percent: p.percent(&Counts {
            samples: called_total,
            period: call_counts.iter().map(|c| c.1.period).sum(),
        }),
        insns: Vec::new(),
        lines: Vec::new(),
        xlated: Vec::new(),
        warnings: prog.warnings().to_vec(),
    };
    // Source lines: one per line_info entry, or none when the BTF to read
    // them is missing or broken (a warning says so); JIT rows pointing at
    // no source line are dropped.
    let src = prog.source_lines();
    let jit_lines: Vec<bpfinfo::JitLine> = prog
        .jit_lines(sub as usize)
        .iter()
        .filter(|l| l.line < src.len())
        .copied()
        .collect();
    let jit_lines = &jit_lines[..];
    let line_of = |off: u32| -> Option<usize> {
        let i = jit_lines
            .partition_point(|l| l.offset <= off)
            .checked_sub(1)?;
        Some(jit_lines[i].line)
    };
    fill(&mut a, &insns, &hits, sp.addr, line_of, c);
    let inclusive = c.samples + called_total;
    for ((ins, x), n) in a
        .insns
        .iter_mut()
        .zip(&insns)
        .zip(calls::called_per_insn(&insns, &call_counts))
    {
        ins.callee = x.call_target.and_then(|t| calls::callee_name(p, &prog, t));
        ins.called = n;
        ins.called_percent = share(n, inclusive);
    }
    // Merge line_info entries of the same file:line.
    let mut by_line: BTreeMap<(String, u32), (usize, Counts, u64)> = BTreeMap::new();
    let mut per_info: BTreeMap<usize, (Counts, u64)> = BTreeMap::new();
    for ins in &a.insns {
        if let Some(li) = ins.line {
            let e = per_info.entry(li).or_default();
            e.0.samples += ins.samples;
            e.1 += ins.called;
        }
    }
    for l in jit_lines {
        let s = &src[l.line];
        let e = by_line
            .entry((s.file.clone(), s.line))
            .or_insert((l.line, Counts::default(), 0));
        if let Some((n, called)) = per_info.remove(&l.line) {
            e.1.samples += n.samples;
            e.2 += called;
        }
    }
    let mut order: Vec<(usize, LineShare)> = by_line
        .into_iter()
        .map(|((file, line), (first, cnt, called))| {
            (
                first,
                LineShare {
                    file,
                    line,
                    text: src[first].text.clone(),
                    samples: cnt.samples,
                    percent: share(cnt.samples, c.samples),
                    called,
                },
            )
        })
        .collect();
    order.sort_by_key(|x| x.0);
    // Re-point instructions at the merged table.
    let remap: BTreeMap<(String, u32), usize> = order
        .iter()
        .enumerate()
        .map(|(i, (_, l))| ((l.file.clone(), l.line), i))
        .collect();
    for ins in &mut a.insns {
        ins.line = ins
            .line
            .and_then(|li| remap.get(&(src[li].file.clone(), src[li].line)).copied());
    }
    a.lines = order.into_iter().map(|x| x.1).collect();
    if o.xlated {
        let targets: Vec<u64> = insns.iter().filter_map(|x| x.call_target).collect();
        let names = calls::RecordingNames::new(p, &prog);
        let call_names = calls::xlated_names(p, &names, &prog, &targets);
        a.xlated = xlated_rows(&prog, sub, &a, &insns, jit_lines, &call_names);
    }
    Target::Annotated(Box::new(a))
}

/// Bytecode of a sub-program with each source line's JIT samples on the
/// first instruction of that line, marked as the line's (the finest the
/// line tables allow).
fn xlated_rows(
    prog: &Program,
    sub: u32,
    a: &Annotation,
    insns: &[bpfinfo::Insn],
    jit_lines: &[bpfinfo::JitLine],
    names: &bpfinfo::xlated::CallNames<'_>,
) -> Vec<XlatedRow> {
    let info = prog.info();
    // The first xlated instruction of the source line a JIT offset is in.
    let line_start = |off: u32| -> Option<u32> {
        let k = jit_lines
            .partition_point(|l| l.offset <= off)
            .checked_sub(1)?;
        info.line_info.get(jit_lines[k].line).map(|l| l.insn_off)
    };
    let mut carried: BTreeMap<u32, u64> = BTreeMap::new();
    for ins in &a.insns {
        if let Some(at) = line_start(ins.offset) {
            *carried.entry(at).or_default() += ins.samples;
        }
    }
    // Called-code samples go to the xlated call itself, which is finer
    // than the line tables allow for the instruction's own samples.
    let jit_calls: Vec<calls::JitCall> = insns
        .iter()
        .zip(&a.insns)
        .filter(|(x, _)| x.call_target.is_some())
        .map(|(x, ai)| calls::JitCall {
            offset: x.offset,
            target: x.call_target,
            called: ai.called,
        })
        .collect();
    let sites = calls::xlated_calls_of(prog, names, sub);
    let (mut called, mut lost) = calls::carry_to_xlated(&jit_calls, &sites);
    // Samples "called" from an instruction that is no call (an interrupt
    // taken there) follow the instruction's own samples to its line.
    lost.extend(
        insns
            .iter()
            .zip(&a.insns)
            .filter(|(x, ai)| x.call_target.is_none() && ai.called > 0)
            .map(|(x, ai)| (x.offset, ai.called)),
    );
    for (off, n) in lost {
        if let Some(at) = line_start(off) {
            *called.entry(at).or_default() += n;
        }
    }
    let inclusive = a.samples + a.called.unwrap_or(0);
    bpfinfo::xlated::format_program_with(prog, names)
        .into_iter()
        .filter(|x| prog.subprog_of_xlated(x.index) == Some(sub as usize))
        .map(|x| {
            let samples = carried.get(&x.index).copied();
            let called = called.get(&x.index).copied().unwrap_or(0);
            let line = prog.line_at_xlated(x.index).and_then(|s| {
                a.lines
                    .iter()
                    .position(|l| l.file == s.file && l.line == s.line)
            });
            XlatedRow {
                index: x.index,
                text: x.text,
                line,
                line_samples: samples,
                line_percent: samples.map(|n| share(n, a.samples)),
                called,
                called_percent: share(called, inclusive),
            }
        })
        .collect()
}

fn share(n: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        100.0 * n as f64 / total as f64
    }
}

/// Put each hit on the instruction that contains it (an address between
/// instructions goes to the one before, so the counts always sum to the
/// function's samples).
fn fill(
    a: &mut Annotation,
    insns: &[bpfinfo::Insn],
    hits: &[(u32, Counts)],
    base: u64,
    line_of: impl Fn(u32) -> Option<usize>,
    total: &Counts,
) {
    let mut per: Vec<u64> = vec![0; insns.len()];
    for &(off, c) in hits {
        let i = insns.partition_point(|x| x.offset <= off).saturating_sub(1);
        if let Some(slot) = per.get_mut(i) {
            *slot += c.samples;
        }
    }
    a.insns = insns
        .iter()
        .zip(per)
        .map(|(x, n)| AnnotatedInsn {
            offset: x.offset,
            addr: base + x.offset as u64,
            text: x.text.clone(),
            samples: n,
            percent: share(n, total.samples),
            line: line_of(x.offset),
            callee: None,
            called: 0,
            called_percent: 0.0,
        })
        .collect();
}

/// Kernel and user functions by name.
fn annotate_native(p: &Profile, name: &str, arch: Arch, o: &AnnotateOptions) -> Vec<Target> {
    let syms: Vec<SymId> = (0..p.sym.syms.len() as SymId)
        .filter(|&s| p.sym.syms[s as usize].name == name && p.sym.syms[s as usize].resolved)
        .collect();
    if syms.is_empty() {
        return vec![Target::Unavailable(Unavailable {
            symbol: name.to_string(),
            samples: 0,
            why: format!(
                "no samples landed in a function named {name} (bpfprof report lists the symbols)"
            ),
        })];
    }
    syms.into_iter()
        .map(|s| annotate_sym(p, s, arch, o))
        .collect()
}

fn annotate_sym(p: &Profile, s: SymId, arch: Arch, o: &AnnotateOptions) -> Target {
    let sym = &p.sym.syms[s as usize];
    let dso = &p.sym.dsos[sym.dso as usize];
    let mut c = Counts::default();
    let mut hits: Vec<(u64, Counts)> = Vec::new();
    for (&(hs, addr), hc) in &p.ip_hits {
        if hs == s {
            c.samples += hc.samples;
            c.period += hc.period;
            hits.push((addr, *hc));
        }
    }
    let unavailable = |why: String| {
        Target::Unavailable(Unavailable {
            symbol: sym.name.clone(),
            samples: c.samples,
            why,
        })
    };
    let (start, code) = match dso.kind {
        DsoKind::Kernel | DsoKind::Module => {
            let end = p
                .sym
                .kallsyms
                .next_after(sym.start)
                .unwrap_or(sym.start + 4096);
            let len = (end - sym.start).min(1 << 20) as usize;
            match crate::symbolize::kcore::read(&o.kcore, sym.start, len) {
                Ok(b) => (sym.start, b),
                Err(e) => return unavailable(format!("kernel code unreadable: {e}")),
            }
        }
        DsoKind::User => {
            let Some(elf) = p.sym.elf(sym.dso) else {
                return unavailable(format!(
                    "{}: binary unreadable or rebuilt since the recording",
                    dso.name
                ));
            };
            let Some((start, end)) = elf.find(&sym.name) else {
                return unavailable(format!("{}: no symbol {}", dso.name, sym.name));
            };
            let Some(off) = elf.vaddr_to_offset(start) else {
                return unavailable(format!(
                    "{}: {} is not in a loaded segment",
                    dso.name, sym.name
                ));
            };
            let bytes = std::fs::read(p.sym.path_of(sym.dso)).ok().and_then(|b| {
                let e = (off + (end - start).min(1 << 20)) as usize;
                b.get(off as usize..e.min(b.len())).map(<[u8]>::to_vec)
            });
            match bytes {
                Some(b) => (start, b),
                None => return unavailable(format!("{}: cannot read {}", dso.name, sym.name)),
            }
        }
        _ => {
            return unavailable(
                "only BPF programs, kernel and user functions can be annotated".into(),
            )
        }
    };
    let insns = disassemble(arch, &code, start, Syntax::Att);
    let rel: Vec<(u32, Counts)> = hits
        .iter()
        .filter(|(a, _)| *a >= start)
        .map(|&(a, c)| ((a - start) as u32, c))
        .collect();
    let mut a = Annotation {
        symbol: sym.name.clone(),
        dso: dso.short.clone(),
        bpf: None,
        start,
        len: code.len() as u64,
        samples: c.samples,
        percent: p.percent(&c),
        called: None,
        called_percent: 0.0,
        insns: Vec::new(),
        lines: Vec::new(),
        xlated: Vec::new(),
        warnings: Vec::new(),
    };
    fill(&mut a, &insns, &rel, start, |_| None, &c);
    // Kernel code calls kernel functions (and BPF trampolines); a user
    // binary's targets are its own virtual addresses, which kallsyms
    // cannot name.
    if matches!(dso.kind, DsoKind::Kernel | DsoKind::Module) {
        for (ins, x) in a.insns.iter_mut().zip(&insns) {
            ins.callee = x.call_target.and_then(|t| calls::kernel_callee_name(p, t));
        }
    }
    Target::Annotated(Box::new(a))
}

/// Default path of the kernel's memory image.
pub fn default_kcore() -> &'static Path {
    Path::new("/proc/kcore")
}
