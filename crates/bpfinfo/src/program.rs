//! A BPF program as a profiler sees it: sub-programs with names, addresses
//! and JIT bytes, and line tables from JIT offsets and xlated instructions to
//! source lines.
//!
//! [`Program`] is built from a [`BpfProgInfo`] and the program's raw BTF,
//! whether both came from the live kernel ([`crate::sys::fetch_prog`]) or
//! from a perf.data file, so the two give the same answers.

mod lines;
mod prog_type;

pub use lines::{JitLine, SourceLine};
pub use prog_type::prog_type_name;

use perfdata::{array, hex, BpfProgInfo};

use crate::btf::Btf;

/// One JIT-compiled function of a program (the main program is index 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubProg {
    /// Position in `jited_ksyms` (0 is the main function).
    pub index: usize,
    /// The BTF FUNC name; else the program name for a single-function
    /// program; else `"F"` (what the verifier calls sub-programs without
    /// BTF); else empty.
    pub func_name: String,
    /// `bpf_prog_<prog_tags[index]>_<func_name>`, the name perf synthesizes.
    /// Names are for display only: key sub-programs by (program id, index)
    /// and address. See [`Program::kernel_ksym_name`] for the kernel's.
    pub ksym_name: String,
    /// Start address of its machine code at the time the info was read.
    pub addr: u64,
    /// Length of its machine code in bytes.
    pub len: u32,
    /// Where its code starts in `jited_insns`: the kernel copies the
    /// functions back to back, so this is the sum of the earlier lengths.
    pub image_offset: u32,
}

/// A program with its sub-programs and line tables worked out.
#[derive(Debug, Clone)]
pub struct Program {
    info: BpfProgInfo,
    btf: Option<Btf>,
    subprogs: Vec<SubProg>,
    lines: Vec<SourceLine>,
    jit_lines: Vec<Vec<JitLine>>,
    warnings: Vec<String>,
}

impl Program {
    /// Build from a program's info and the raw BTF blob of its `btf_id`.
    ///
    /// Never fails: unreadable BTF or inconsistent arrays leave the program
    /// with less detail (fallback names, no line tables) and a message in
    /// [`warnings`](Self::warnings).
    pub fn new(info: BpfProgInfo, btf: Option<&[u8]>) -> Program {
        let mut warnings = Vec::new();
        let btf = btf.and_then(|b| match Btf::parse(b) {
            Ok(b) => Some(b),
            Err(e) => {
                warnings.push(format!("program {}: BTF ignored: {e}", info.id));
                None
            }
        });
        let mut p = Program {
            info,
            btf,
            subprogs: Vec::new(),
            lines: Vec::new(),
            jit_lines: Vec::new(),
            warnings,
        };
        p.subprogs = p.build_subprogs();
        p.lines = lines::source_lines(&p.info, p.btf.as_ref(), &mut p.warnings);
        p.jit_lines = lines::jit_tables(&p.info, &p.subprogs, &mut p.warnings);
        p
    }

    /// The info this program was built from.
    pub fn info(&self) -> &BpfProgInfo {
        &self.info
    }

    /// Its parsed BTF, if there was a readable blob.
    pub fn btf(&self) -> Option<&Btf> {
        self.btf.as_ref()
    }

    /// What was wrong with the input (empty when all is well).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// One entry per `jited_ksyms` address, in order.
    pub fn subprogs(&self) -> &[SubProg] {
        &self.subprogs
    }

    /// Sub-program `sub`'s function name from BTF, when the program has
    /// BTF (unlike [`SubProg::func_name`], never a stand-in such as `F`).
    pub fn btf_func_name(&self, sub: usize) -> Option<&str> {
        let fi = self.info.func_info.get(sub)?;
        self.btf.as_ref()?.func_name(fi.type_id)
    }

    /// The C signature of sub-program `sub` as bpftool prints it, e.g.
    /// `int work(int n)`.
    pub fn func_signature(&self, sub: usize) -> Option<String> {
        let fi = self.info.func_info.get(sub)?;
        self.btf.as_ref()?.func_signature(fi.type_id)
    }

    fn build_subprogs(&mut self) -> Vec<SubProg> {
        let info = &self.info;
        let n = info.jited_ksyms.len();
        if info.has(array::JITED_FUNC_LENS) && info.jited_func_lens.len() != n {
            self.warnings.push(format!(
                "program {}: {} addresses but {} lengths",
                info.id,
                n,
                info.jited_func_lens.len()
            ));
        }
        let mut image_offset: u64 = 0;
        let mut subs = Vec::with_capacity(n);
        let mut unnamed = Vec::new();
        for i in 0..n {
            if self.btf.is_some()
                && self.info.func_info.get(i).is_some()
                && self.btf_func_name(i).is_none()
            {
                unnamed.push(i);
            }
            let info = &self.info;
            let func_name = match self.btf_func_name(i) {
                Some(name) => name.to_string(),
                None if n == 1 => info.name.clone(),
                None => "F".to_string(),
            };
            let tag = info.prog_tags.get(i).unwrap_or(&info.tag);
            let len = info.jited_func_lens.get(i).copied().unwrap_or(0);
            subs.push(SubProg {
                index: i,
                ksym_name: ksym_name(tag, &func_name),
                func_name,
                addr: info.jited_ksyms[i],
                len,
                image_offset: u32::try_from(image_offset).unwrap_or(u32::MAX),
            });
            image_offset += u64::from(len);
        }
        if !unnamed.is_empty() {
            self.warnings.push(format!(
                "program {}: func_info of sub-programs {unnamed:?} names no BTF FUNC type; their names fall back to the program name or \"F\"",
                self.info.id
            ));
        }
        subs
    }

    /// The name the kernel gives sub-program `sub` in /proc/kallsyms and
    /// PERF_RECORD_KSYMBOL. It differs from [`SubProg::ksym_name`] for the
    /// main function of a multi-function program: current kernels use the
    /// whole-program tag there, perf uses `prog_tags[0]`. Display only.
    pub fn kernel_ksym_name(&self, sub: usize) -> Option<String> {
        let info = &self.info;
        self.subprogs.get(sub)?;
        let tag = if sub == 0 {
            &info.tag
        } else {
            info.prog_tags.get(sub).unwrap_or(&info.tag)
        };
        let name = match self.btf_func_name(sub) {
            Some(n) => n.to_string(),
            None if sub == 0 => info.name.clone(),
            None => "F".to_string(),
        };
        Some(ksym_name(tag, &name))
    }

    /// The machine code of sub-program `sub`, if the JIT image was captured
    /// and holds it (and its length is known).
    pub fn jited_bytes(&self, sub: usize) -> Option<&[u8]> {
        let s = self.subprogs.get(sub)?;
        if !self.info.has(array::JITED_INSNS) || s.len == 0 {
            return None;
        }
        let start = s.image_offset as usize;
        self.info
            .jited_insns
            .get(start..start.checked_add(s.len as usize)?)
    }

    /// Source lines, one per `line_info` entry (same index). Empty without
    /// BTF.
    pub fn source_lines(&self) -> &[SourceLine] {
        &self.lines
    }

    /// The JIT line table of sub-program `sub`, sorted by offset.
    pub fn jit_lines(&self, sub: usize) -> &[JitLine] {
        self.jit_lines.get(sub).map_or(&[], Vec::as_slice)
    }

    /// The source line of the machine code at `offset` bytes into
    /// sub-program `sub`: the last line-table entry at or before it.
    pub fn line_at_jit(&self, sub: usize, offset: u32) -> Option<&SourceLine> {
        let t = self.jit_lines(sub);
        let i = t.partition_point(|l| l.offset <= offset).checked_sub(1)?;
        self.lines.get(t[i].line)
    }

    /// The source line of xlated instruction `index`: the last `line_info`
    /// entry at or before it.
    pub fn line_at_xlated(&self, index: u32) -> Option<&SourceLine> {
        let li = &self.info.line_info;
        let i = li.partition_point(|l| l.insn_off <= index).checked_sub(1)?;
        self.lines.get(i)
    }

    /// The sub-program xlated instruction `index` belongs to, from the
    /// `func_info` start offsets. Without func_info this is known only for a
    /// single-function program.
    pub fn subprog_of_xlated(&self, index: u32) -> Option<usize> {
        let fi = &self.info.func_info;
        if fi.is_empty() {
            return (self.subprogs.len() <= 1).then_some(0);
        }
        fi.partition_point(|f| f.insn_off <= index).checked_sub(1)
    }

    /// Which sub-program holds `addr`, and the offset into it.
    pub fn lookup(&self, addr: u64) -> Option<(usize, u32)> {
        self.subprogs.iter().find_map(|s| {
            let off = addr.checked_sub(s.addr)?;
            (off < u64::from(s.len)).then_some((s.index, off as u32))
        })
    }
}

fn ksym_name(tag: &[u8; 8], func: &str) -> String {
    if func.is_empty() {
        format!("bpf_prog_{}", hex(tag))
    } else {
        format!("bpf_prog_{}_{func}", hex(tag))
    }
}
