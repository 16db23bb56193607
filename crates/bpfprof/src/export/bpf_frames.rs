//! What bpfprof knows about a BPF frame beyond its name: the program, its
//! tag, the sub-program and, from BTF line info, source lines. Programs
//! are parsed once each, when an export first asks about one of theirs.

use std::collections::HashMap;

use bpfinfo::{Program, SourceLine};

use crate::analyze::profile::Profile;
use crate::symbolize::{BpfSymId, Frame};

/// A BPF function as exports describe it.
#[derive(Debug, Clone)]
pub struct BpfFrame {
    pub prog_id: u32,
    pub prog_name: String,
    /// The program's tag, in hex.
    pub tag: String,
    pub sub: u32,
    /// The sub-program's BTF name, where BTF has one.
    pub func: Option<String>,
    /// The first source line of the sub-program, as (file, line).
    pub source: Option<(String, u32)>,
}

impl BpfFrame {
    /// Everything known, in a fixed order, without parentheses (flame
    /// graph scripts take a frame's label back from its title by cutting
    /// the title's last parenthesis, which must not nest).
    pub fn detail(&self) -> String {
        let mut s = format!(
            "BPF program {} {}, tag {}, sub-program {}",
            self.prog_id, self.prog_name, self.tag, self.sub
        );
        if let Some(f) = &self.func {
            s += &format!(" {f}");
        }
        if let Some((file, line)) = &self.source {
            s += &format!(", {file}:{line}");
        }
        s.replace('(', "[").replace(')', "]")
    }
}

/// Per-program parse results, looked up by BPF symbol.
#[derive(Default)]
pub struct BpfFrames {
    progs: HashMap<u32, Option<Program>>,
    frames: HashMap<BpfSymId, Option<BpfFrame>>,
}

impl BpfFrames {
    fn program<'a>(&'a mut self, p: &Profile, id: u32) -> Option<&'a Program> {
        self.progs
            .entry(id)
            .or_insert_with(|| {
                let rec = p.progs.get(&id)?;
                Some(Program::new(rec.info.clone()?, rec.btf.as_deref()))
            })
            .as_ref()
    }

    fn bpf_sym(p: &Profile, f: Frame) -> Option<BpfSymId> {
        p.sym.syms[f.sym as usize].bpf
    }

    /// The program behind a BPF frame; `None` for other frames and for BPF
    /// code the recording does not tie to a program (trampolines).
    pub fn frame(&mut self, p: &Profile, f: Frame) -> Option<&BpfFrame> {
        let b = Self::bpf_sym(p, f)?;
        if !self.frames.contains_key(&b) {
            let d = self.describe(p, b);
            self.frames.insert(b, d);
        }
        self.frames.get(&b)?.as_ref()
    }

    fn describe(&mut self, p: &Profile, b: BpfSymId) -> Option<BpfFrame> {
        let (prog_id, sub) = p.sym.bpf.syms.get(b as usize)?.prog?;
        let tag = p
            .sym
            .bpf
            .events
            .get(&prog_id)
            .map(|e| e.tag)
            .filter(|t| *t != [0; 8])
            .or_else(|| p.progs.get(&prog_id)?.info.as_ref().map(|i| i.tag))
            .map(|t| t.iter().map(|b| format!("{b:02x}")).collect())
            .unwrap_or_default();
        let prog = self.program(p, prog_id);
        let prog_name = prog.map(|g| g.info().name.clone()).unwrap_or_default();
        let func = prog.and_then(|g| g.btf_func_name(sub as usize).map(str::to_string));
        let source = prog.and_then(|g| {
            let first = g.jit_lines(sub as usize).first()?;
            let l = g.source_lines().get(first.line)?;
            Some((l.file.clone(), l.line))
        });
        Some(BpfFrame {
            prog_id,
            prog_name,
            tag,
            sub,
            func,
            source,
        })
    }

    /// The source line of a BPF stack node, from its offset in the code.
    pub fn line_at(&mut self, p: &Profile, f: Frame, node: u32) -> Option<SourceLine> {
        let b = Self::bpf_sym(p, f)?;
        let (prog_id, sub) = p.sym.bpf.syms.get(b as usize)?.prog?;
        let off = *p.bpf_offsets.get(&node)?;
        self.program(p, prog_id)?
            .line_at_jit(sub as usize, off)
            .cloned()
    }
}
