//! `--sort srcline`: samples by source line — BPF programs' lines from
//! their BTF line info, user code's from DWARF — made from the profile's
//! per-address counts (`ip_hits`, `bpf_hits`), since a row key holds a
//! function, not an address.
//!
//! Where no line is known, the text is perf's (tools/perf/util/srcline.c,
//! `__get_srcline`): `sym+offset` for code perf never asks addr2line
//! about (the kernel, modules, the vdso, BPF, perf-map JIT code) or for
//! which nothing answers, `dso[address]` when there is no symbol either,
//! and `??:0` for code outside any map or with no line but a symbol
//! before it in its file (GNU addr2line then names the function and
//! prints `??:?`, which perf reads as a line).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use rustc_hash::FxHashMap;
use serde::Serialize;

use super::render::{cut, ReportOptions};
use super::table::{self, SortKey};
use crate::analyze::profile::{Counts, Profile, RowKey};
use crate::symbolize::lines::{DwarfLines, Found};
use crate::symbolize::{BpfSymId, DsoId, DsoKind, Frame, SymId};

/// perf's text for an address no line table covers.
const UNKNOWN: &str = "??:0";

/// One output row: the values of the other keys, its line, its counts.
struct Line {
    frame: Frame,
    text: String,
    counts: Counts,
}

/// The row values of the keys other than srcline: a DSO, a symbol group.
type Group = (Option<DsoId>, Option<SymId>);

/// Rows by (other keys, line text), heaviest first.
fn rows(p: &Profile, o: &ReportOptions) -> Vec<Line> {
    let by_dso = o.keys.contains(&SortKey::Dso);
    let by_sym = o.keys.contains(&SortKey::Sym);
    let mut sums: BTreeMap<(Group, String), (Frame, Counts)> = BTreeMap::new();
    let keep = |f: Frame| {
        let k = RowKey {
            comm: 0,
            pid: 0,
            tid: 0,
            cpu: 0,
            frame: f,
        };
        o.filters.dsos.is_empty() || o.filters.keep(p, &k)
    };
    let mut add = |f: Frame, text: String, c: &Counts| {
        let g = (
            by_dso.then_some(f.dso),
            by_sym.then(|| p.sym.syms[f.sym as usize].group),
        );
        let e = sums.entry((g, text)).or_insert((f, Counts::default()));
        e.1.merge(*c);
    };
    let mut names = Names::new(p);
    for (&(sym, addr), c) in &p.ip_hits {
        let s = &p.sym.syms[sym as usize];
        let f = Frame { dso: s.dso, sym };
        // Code in no known image is counted from the rows, below.
        if p.sym.dsos[s.dso as usize].kind != DsoKind::Unknown && keep(f) {
            add(f, names.native(sym, addr), c);
        }
    }
    let bpf_syms: FxHashMap<BpfSymId, SymId> = p
        .sym
        .syms
        .iter()
        .enumerate()
        .filter_map(|(i, s)| Some((s.bpf?, i as SymId)))
        .collect();
    let mut progs: FxHashMap<u32, Option<bpfinfo::Program>> = FxHashMap::default();
    for (&(b, off), c) in &p.bpf_hits {
        let Some(&sym) = bpf_syms.get(&b) else {
            continue;
        };
        let f = Frame {
            dso: p.sym.syms[sym as usize].dso,
            sym,
        };
        if keep(f) {
            add(f, bpf_line(p, &mut progs, b, sym, off), c);
        }
    }
    // Code in no map: perf has no DSO to ask and prints ??:0.
    for (k, c) in &p.rows {
        if p.sym.dsos[k.frame.dso as usize].kind == DsoKind::Unknown && keep(k.frame) {
            add(k.frame, UNKNOWN.to_string(), c);
        }
    }
    let mut rows: Vec<Line> = sums
        .into_iter()
        .map(|((_, text), (frame, counts))| Line {
            frame,
            text,
            counts,
        })
        .filter(|l| p.percent(&l.counts) >= o.percent_limit)
        .collect();
    // Heaviest first; ties as perf's sort keys leave them, key by key: a
    // DSO by its short name, a line by its text, both ascending (a symbol
    // by the map's order, which the sort keeps, being stable).
    rows.sort_by(|a, b| {
        b.counts.period.cmp(&a.counts.period).then_with(|| {
            o.keys
                .iter()
                .map(|k| match k {
                    SortKey::Dso => p.sym.dsos[a.frame.dso as usize]
                        .short
                        .cmp(&p.sym.dsos[b.frame.dso as usize].short),
                    SortKey::Srcline => a.text.cmp(&b.text),
                    _ => std::cmp::Ordering::Equal,
                })
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
        })
    });
    rows
}

/// Line texts of native code, with each file's line tables read once.
struct Names<'a> {
    p: &'a Profile,
    files: FxHashMap<DsoId, Option<DwarfLines>>,
}

impl<'a> Names<'a> {
    fn new(p: &'a Profile) -> Self {
        Names {
            p,
            files: FxHashMap::default(),
        }
    }

    /// The text for `addr` (a kernel address, or an ELF virtual address)
    /// in symbol `sym`.
    fn native(&mut self, sym: SymId, addr: u64) -> String {
        let p = self.p;
        let s = &p.sym.syms[sym as usize];
        let d = &p.sym.dsos[s.dso as usize];
        let asks_addr2line = d.kind == DsoKind::User
            && !d.name.starts_with("/tmp/perf-")
            && !d.name.starts_with('[');
        if asks_addr2line {
            let lines = self
                .files
                .entry(s.dso)
                .or_insert_with(|| DwarfLines::load(&p.sym.path_of(s.dso), d.build_id.as_deref()));
            match lines.as_ref().map(|l| l.find(addr)) {
                Some(Found::Line(file, line)) => {
                    return file_line(file.as_deref().unwrap_or("??"), line)
                }
                Some(Found::FunctionOnly) => return UNKNOWN.to_string(),
                Some(Found::Nothing) | None => {}
            }
        }
        match d.kind {
            DsoKind::Unknown => UNKNOWN.to_string(),
            _ if s.resolved => format!("{}+{}", s.name, addr.wrapping_sub(s.start)),
            _ => format!("{}[{addr:x}]", d.short),
        }
    }
}

/// `file:line` with the file's base name, as perf prints it by default.
fn file_line(file: &str, line: u32) -> String {
    let base = Path::new(file)
        .file_name()
        .map_or(file.into(), |f| f.to_string_lossy());
    format!("{base}:{line}")
}

/// The C line of offset `off` in BPF registration `b`'s JIT code, from
/// its program's BTF line info (what `bpfprof annotate` shows); without
/// one, perf's `sym+offset`.
fn bpf_line(
    p: &Profile,
    progs: &mut FxHashMap<u32, Option<bpfinfo::Program>>,
    b: BpfSymId,
    sym: SymId,
    off: u32,
) -> String {
    let bs = &p.sym.bpf.syms[b as usize];
    if let Some((id, sub)) = bs.prog {
        let prog = progs.entry(id).or_insert_with(|| {
            let rec = p.progs.get(&id)?;
            let info = rec.info.clone()?;
            Some(bpfinfo::Program::new(info, rec.btf.as_deref()))
        });
        if let Some(l) = prog
            .as_ref()
            .and_then(|pr| pr.line_at_jit(sub as usize, off))
        {
            return file_line(&l.file, l.line);
        }
    }
    format!("{}+{off}", p.sym.syms[sym as usize].name)
}

/// A row's cell for `key`.
fn cell(p: &Profile, key: SortKey, l: &Line) -> String {
    if key == SortKey::Srcline {
        return l.text.clone();
    }
    let mut s = String::new();
    let k = RowKey {
        comm: 0,
        pid: 0,
        tid: 0,
        cpu: 0,
        frame: l.frame,
    };
    table::push_column(p, key, &k, &mut s);
    s
}

/// The table by source line, as perf's `--sort srcline` prints it.
pub fn stdio(
    p: &Profile,
    o: &ReportOptions,
    width: Option<usize>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let rows = rows(p, o);
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|l| o.keys.iter().map(|&k| cell(p, k, l)).collect())
        .collect();
    let mut widths: Vec<usize> = o.keys.iter().map(|k| k.header().len()).collect();
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let last = o.keys.len().saturating_sub(1);
    if let Some(w) = width {
        narrow(&o.keys, &mut widths, w);
    }
    let mut head = String::from("# Overhead   Samples");
    let mut dots = String::from("# ........  ........");
    for (i, k) in o.keys.iter().enumerate() {
        let w = if i == last {
            k.header().len()
        } else {
            widths[i]
        };
        head += &format!("  {:<w$}", k.header());
        dots += &format!("  {}", ".".repeat(w));
    }
    let fit = |s: &str| -> String {
        match width {
            Some(w) => cut(s, w).into_owned(),
            None => s.to_string(),
        }
    };
    writeln!(out, "{}\n{}\n#", fit(head.trim_end()), fit(&dots))?;
    for (l, row) in rows.iter().zip(&cells) {
        let mut line = format!("  {:>7.2}%  {:>8}", p.percent(&l.counts), l.counts.samples);
        for (i, c) in row.iter().enumerate() {
            line += "  ";
            let c = if i == last {
                c.into()
            } else {
                cut(c, widths[i])
            };
            line += &c;
            if i != last {
                line.extend(std::iter::repeat_n(
                    ' ',
                    widths[i].saturating_sub(c.chars().count()),
                ));
            }
        }
        writeln!(out, "{}", fit(&line))?;
    }
    Ok(())
}

/// On a terminal too narrow for every column whole, the columns before
/// the line's are narrowed (never below their header) so that the line
/// keeps at least half of the room after the counts.
fn narrow(keys: &[SortKey], widths: &mut [usize], width: usize) {
    let Some((&mut last_w, before)) = widths.split_last_mut() else {
        return;
    };
    let room = width.saturating_sub(20);
    let used = |b: &[usize]| b.iter().map(|w| w + 2).sum::<usize>();
    if used(before) + 2 + last_w <= room || before.is_empty() {
        return;
    }
    let for_before = room.saturating_sub(2 + last_w.min(room / 2));
    let cap = (for_before / before.len()).saturating_sub(2);
    for (w, k) in before.iter_mut().zip(keys) {
        *w = (*w).min(cap.max(k.header().len()));
    }
}

#[derive(Serialize)]
struct JsonRow {
    overhead: f64,
    samples: u64,
    period: u64,
    srcline: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    dso: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    symbol: Option<String>,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    event: &'a str,
    samples: u64,
    sort: &'a [SortKey],
    rows: Vec<JsonRow>,
}

/// The same rows as JSON.
pub fn json(p: &Profile, o: &ReportOptions, out: &mut dyn Write) -> std::io::Result<()> {
    let rows = rows(p, o)
        .into_iter()
        .map(|l| JsonRow {
            overhead: p.percent(&l.counts),
            samples: l.counts.samples,
            period: l.counts.period,
            dso: o
                .keys
                .contains(&SortKey::Dso)
                .then(|| p.sym.dsos[l.frame.dso as usize].short.clone()),
            symbol: o
                .keys
                .contains(&SortKey::Sym)
                .then(|| p.sym.syms[l.frame.sym as usize].name.clone()),
            srcline: l.text,
        })
        .collect();
    let view = JsonReport {
        event: &p.event,
        samples: p.total.samples,
        sort: &o.keys,
        rows,
    };
    serde_json::to_writer_pretty(&mut *out, &view)?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_narrow_terminal_leaves_the_line_half_the_room() {
        let keys = [SortKey::Dso, SortKey::Srcline];
        let mut widths = [40, 30];
        narrow(&keys, &mut widths, 80);
        // 80 columns less the counts' 20: the line's column starts after
        // the DSO's and two spaces on each side, and keeps 30.
        assert!(80 - 20 - (2 + widths[0] + 2) >= 30, "{widths:?}");
        assert!(widths[0] >= "Shared Object".len());
        // Wide enough for all: nothing narrowed.
        let mut wide = [40, 30];
        narrow(&keys, &mut wide, 200);
        assert_eq!(wide, [40, 30]);
    }
}
