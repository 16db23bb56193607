//! Source lines from line_info and BTF strings, and the per-function split
//! of jited_line_info into JIT line tables.

use perfdata::{array, BpfProgInfo};

use super::SubProg;
use crate::btf::Btf;

/// A source line as the compiler recorded it in line_info and BTF.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SourceLine {
    /// The file name string (as the compiler saw it, often a full path).
    pub file: String,
    /// 1-based line number (`line_col >> 10`).
    pub line: u32,
    /// Column (`line_col & 0x3ff`).
    pub column: u32,
    /// The full text of the source line, as stored in BTF.
    pub text: String,
}

/// One row of a JIT line table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JitLine {
    /// Byte offset from the start of the sub-program's machine code.
    pub offset: u32,
    /// Index into [`super::Program::source_lines`] (and `line_info`).
    pub line: usize,
}

pub(super) fn source_lines(
    info: &BpfProgInfo,
    btf: Option<&Btf>,
    warnings: &mut Vec<String>,
) -> Vec<SourceLine> {
    if info.line_info.is_empty() {
        return Vec::new();
    }
    let Some(btf) = btf else {
        warnings.push(format!(
            "program {}: {} line_info entries but no BTF to read them",
            info.id,
            info.line_info.len()
        ));
        return Vec::new();
    };
    let mut bad = 0;
    let lines = info
        .line_info
        .iter()
        .map(|l| {
            let file = btf.str_at(l.file_name_off);
            let text = btf.str_at(l.line_off);
            if file.is_none() || text.is_none() {
                bad += 1;
            }
            SourceLine {
                file: file.unwrap_or_default().to_string(),
                line: l.line(),
                column: l.column(),
                text: text.unwrap_or_default().to_string(),
            }
        })
        .collect();
    if bad > 0 {
        warnings.push(format!(
            "program {}: {bad} line_info entries point outside the BTF strings",
            info.id
        ));
    }
    lines
}

/// Split jited_line_info by function and make its addresses relative: the
/// entries of function f start at the first one equal to jited_ksyms[f]
/// (line_info is sorted by instruction and functions are laid out in
/// order), and run up to where the next function's start.
pub(super) fn jit_tables(
    info: &BpfProgInfo,
    subs: &[SubProg],
    warnings: &mut Vec<String>,
) -> Vec<Vec<JitLine>> {
    let mut tables = vec![Vec::new(); subs.len()];
    let jl = &info.jited_line_info;
    if !info.has(array::JITED_LINE_INFO) || jl.is_empty() || subs.is_empty() {
        return tables;
    }
    if jl.len() != info.line_info.len() {
        warnings.push(format!(
            "program {}: {} jited_line_info entries for {} line_info entries; no JIT line tables",
            info.id,
            jl.len(),
            info.line_info.len()
        ));
        return tables;
    }
    let mut starts = Vec::with_capacity(subs.len());
    let mut from = 0;
    for s in subs {
        match jl[from..].iter().position(|&a| a == s.addr) {
            Some(i) => {
                starts.push(Some(from + i));
                from += i + 1;
            }
            None => {
                warnings.push(format!(
                    "program {}: no jited_line_info entry at the start of sub-program {}",
                    info.id, s.index
                ));
                starts.push(None);
            }
        }
    }
    let mut outside = 0;
    for (f, s) in subs.iter().enumerate() {
        let Some(start) = starts[f] else { continue };
        let end = starts[f + 1..]
            .iter()
            .flatten()
            .next()
            .copied()
            .unwrap_or(jl.len());
        let t = &mut tables[f];
        for (i, &a) in jl.iter().enumerate().take(end).skip(start) {
            match a.checked_sub(s.addr) {
                Some(off) if off < u64::from(s.len.max(1)) => t.push(JitLine {
                    offset: off as u32,
                    line: i,
                }),
                _ => outside += 1,
            }
        }
        t.sort_by_key(|l| l.offset);
    }
    if outside > 0 {
        warnings.push(format!(
            "program {}: {outside} jited_line_info addresses fall outside their function",
            info.id
        ));
    }
    tables
}
