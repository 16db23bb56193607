//! Grouping a profile's rows by `--sort` keys, with filters and percent
//! limits: the data behind the main report table, before it is printed.

use std::cmp::Reverse;

use super::groups::Groups;
use super::row_order::TieRanks;
pub use crate::analyze::profile::Filters;
use crate::analyze::profile::{Counts, Profile, RowKey};
use crate::symbolize::DsoKind;

/// A `--sort` key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SortKey {
    /// The thread's command at the time of the sample.
    Comm,
    /// The thread id and command (perf's pid key is the thread).
    Pid,
    /// The thread id alone.
    Tid,
    /// The CPU the sample was taken on (`-1` when the recording has none).
    Cpu,
    /// The source file and line of the sampled address: DWARF for user
    /// code, BTF line info for BPF programs (`srcline` view).
    Srcline,
    /// The shared object: a binary, the kernel, a module or a BPF function.
    Dso,
    /// The function.
    #[value(alias = "symbol")]
    Sym,
    /// The BPF program (id and name); `-` outside BPF code.
    // Spelled with an underscore, as in the docs and the JSON output.
    #[value(name = "bpf_prog", alias = "bpf-prog")]
    BpfProg,
}

impl SortKey {
    pub fn header(self) -> &'static str {
        match self {
            SortKey::Comm => "Command",
            // perf's header, spaced to sit over "%7d:%s".
            SortKey::Pid => "    Pid:Command",
            SortKey::Tid => "Tid",
            SortKey::Cpu => "CPU",
            SortKey::Srcline => "Source:Line",
            SortKey::Dso => "Shared Object",
            SortKey::Sym => "Symbol",
            SortKey::BpfProg => "BPF program",
        }
    }
}

/// One output row: the sort keys' values (ids) and its counts.
#[derive(Debug, Clone)]
pub struct Row {
    /// A representative key (the first raw row folded into this one) from
    /// which every column's text is derived.
    pub key: RowKey,
    pub counts: Counts,
    /// With `--children`: the period of samples with this row anywhere in
    /// the stack.
    pub children: Option<Counts>,
}

/// The identity of an output row: the sort keys' values in order,
/// `u64::MAX` past the last.
pub type GroupKey = [u64; 5];

/// The identity of the output row a raw row folds into.
pub fn group_key(keys: &[SortKey], p: &Profile, k: &RowKey) -> GroupKey {
    let mut out = [u64::MAX; 5];
    for (slot, key) in out.iter_mut().zip(keys) {
        *slot = match key {
            SortKey::Comm => k.comm as u64,
            SortKey::Pid | SortKey::Tid => k.tid as u64,
            SortKey::Cpu => k.cpu as u64,
            // Rows by source line are made by the srcline view, from
            // per-address counts; a row key holds no line.
            SortKey::Srcline => 0,
            SortKey::Dso => p.dso_group(k.frame.dso) as u64,
            SortKey::Sym => p.sym.syms[k.frame.sym as usize].group as u64,
            SortKey::BpfProg => bpf_prog_of(p, k).map_or(u64::MAX, |(id, _)| id as u64),
        };
    }
    out
}

/// A row's CPU as perf numbers it: -1 when the samples carry none.
pub fn cpu_number(cpu: u16) -> i32 {
    match cpu {
        u16::MAX => -1,
        c => i32::from(c),
    }
}

/// Whether a row's symbol is kernel code, as the `[k]` / `[.]` marker
/// says: a kernel image or module, or an address in the kernel's half
/// where no image is known (perf's rule too).
pub fn is_kernel_sym(p: &Profile, k: &RowKey) -> bool {
    let s = &p.sym.syms[k.frame.sym as usize];
    let d = &p.sym.dsos[s.dso as usize];
    d.is_kernel() || (d.kind == DsoKind::Unknown && s.start >= crate::symbolize::KERNEL_START)
}

/// The BPF program and sub-program a row's symbol belongs to.
pub fn bpf_prog_of(p: &Profile, k: &RowKey) -> Option<(u32, u32)> {
    let s = &p.sym.syms[k.frame.sym as usize];
    p.sym.bpf.syms.get(s.bpf? as usize)?.prog
}

/// Group rows by the sort keys, apply filters, sort by overhead.
pub fn group(p: &Profile, keys: &[SortKey], filters: &Filters, children: bool) -> Vec<Row> {
    let (groups, ranks) = if children {
        // Callers that are no row's leaf get groups too: ranked after.
        let mut groups = sum_rows(p, keys, filters, true);
        add_children(p, keys, filters, &mut groups);
        let ranks = TieRanks::new(
            p,
            keys,
            &groups.rows.iter().map(|(_, r)| &r.key).collect::<Vec<_>>(),
        );
        (groups, ranks)
    } else {
        // Every group's key is one of the rows', so the values of all rows
        // can be ranked on another core while the rows are summed.
        std::thread::scope(|s| {
            let ranks = s.spawn(|| {
                let all: Vec<&RowKey> = p.rows.iter().map(|(k, _)| k).collect();
                TieRanks::new(p, keys, &all)
            });
            let groups = sum_rows(p, keys, filters, false);
            let ranks = ranks
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e));
            (groups, ranks)
        })
    };
    let rows = groups.rows;
    // Heaviest first; ties as perf orders them (see `row_order`), then in
    // the order the groups were first seen, for a stable output (rows
    // equal in all that is sorted on print the same text).
    let mut order: Vec<_> = rows
        .iter()
        .enumerate()
        .map(|(i, (_, r))| {
            let period = r.children.unwrap_or(r.counts).period;
            (
                Reverse(period),
                Reverse(r.counts.period),
                ranks.of(&r.key),
                ranks.identity(&r.key),
                i as u32,
            )
        })
        .collect();
    order.sort_unstable();
    let mut rows: Vec<Option<Row>> = rows.into_iter().map(|(_, r)| Some(r)).collect();
    order
        .into_iter()
        .filter_map(|o| rows[o.4 as usize].take())
        .collect()
}

/// The rows that pass the filters, summed by group.
fn sum_rows(p: &Profile, keys: &[SortKey], filters: &Filters, children: bool) -> Groups {
    let sym = keys.iter().position(|&k| k == SortKey::Sym);
    let mut groups = Groups::new(sym, p.sym.syms.len(), p.rows.len() / 2);
    let mut add = |g: GroupKey, row: Row| {
        groups
            .entry(g, || Row {
                counts: Counts::default(),
                ..row
            })
            .counts
            .merge(row.counts)
    };
    // Rows come in location order, so the rows of one function follow each
    // other: they are added up before the groups are looked in.
    let mut run: Option<(GroupKey, Row)> = None;
    for (k, c) in &p.rows {
        if !filters.keep(p, k) {
            continue;
        }
        let g = group_key(keys, p, k);
        match &mut run {
            Some((rg, row)) if *rg == g => row.counts.merge(*c),
            _ => {
                let row = Row {
                    key: *k,
                    counts: *c,
                    children: children.then(Counts::default),
                };
                if let Some((rg, row)) = run.replace((g, row)) {
                    add(rg, row);
                }
            }
        }
    }
    if let Some((rg, row)) = run {
        add(rg, row);
    }
    groups
}

/// Children: each sample counts once for every distinct group its stack
/// passes through (the leaf included).
fn add_children(p: &Profile, keys: &[SortKey], filters: &Filters, groups: &mut Groups) {
    let mut seen: Vec<GroupKey> = Vec::with_capacity(64);
    for ((k, node), c) in &p.chains {
        if !filters.keep(p, k) {
            continue;
        }
        seen.clear();
        for f in p.stacks.frames(*node) {
            let fk = RowKey { frame: f, ..*k };
            let g = group_key(keys, p, &fk);
            if seen.contains(&g) {
                continue;
            }
            seen.push(g);
            let row = groups.entry(g, || Row {
                key: fk,
                counts: Counts::default(),
                children: Some(Counts::default()),
            });
            let ch = row.children.get_or_insert_with(Counts::default);
            ch.samples += c.samples;
            ch.period += c.period;
        }
    }
}

/// Append the text of one column for a row to `out`.
pub fn push_column(p: &Profile, key: SortKey, k: &RowKey, out: &mut String) {
    use std::fmt::Write;
    // Writing to a String cannot fail.
    let _ = match key {
        SortKey::Comm => out.write_str(&p.sym.threads.comms[k.comm as usize]),
        SortKey::Pid => {
            // perf names a thread by its last command, whichever the
            // samples had (a row may hold a thread's samples from before
            // and after an exec).
            let last = p.sym.threads.current_comm(k.tid).unwrap_or(k.comm);
            // perf's "%7d:%s", signed as a pid_t: -1 for samples with no
            // thread.
            write!(
                out,
                "{:>7}:{}",
                k.tid as i32, p.sym.threads.comms[last as usize]
            )
        }
        SortKey::Srcline => Ok(()),
        SortKey::Tid => write!(out, "{}", k.tid as i32),
        // perf's "%*.*d" with width 3: 001, and -001 with no CPU.
        SortKey::Cpu => match cpu_number(k.cpu) {
            c if c < 0 => write!(out, "-{:03}", -c),
            c => write!(out, "{c:03}"),
        },
        SortKey::Dso => out.write_str(&p.sym.dsos[k.frame.dso as usize].short),
        SortKey::Sym => {
            let kernel = is_kernel_sym(p, k);
            let s = &p.sym.syms[k.frame.sym as usize];
            write!(out, "[{}] {}", if kernel { 'k' } else { '.' }, s.name)
        }
        SortKey::BpfProg => match bpf_prog_of(p, k) {
            Some((id, _)) => {
                let name = p
                    .progs
                    .get(&id)
                    .and_then(|r| r.info.as_ref())
                    .map_or("", |i| i.name.as_str());
                write!(out, "{id} {name}")
            }
            None => out.write_str("-"),
        },
    };
}
