//! Call graphs under a report row (`-g`): the stacks of the row's samples
//! merged into a tree, callee first (the row's function, then its callers)
//! by default, or caller first.

use std::io::Write;

use rustc_hash::FxHashMap;

use super::profile::{Counts, Profile, RowKey};
use super::table::{Filters, SortKey};
use crate::symbolize::SymId;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CallOrder {
    /// The sampled function first, then its callers.
    Callee,
    /// The outermost caller first, down to the sampled function.
    Caller,
}

#[derive(Default)]
struct Node {
    counts: Counts,
    children: FxHashMap<SymId, Node>,
}

fn same_row(keys: &[SortKey], a: &RowKey, b: &RowKey) -> bool {
    keys.iter().all(|k| match k {
        SortKey::Comm => a.comm == b.comm,
        SortKey::Pid => a.pid == b.pid,
        SortKey::Dso => a.frame.dso == b.frame.dso,
        SortKey::Sym => a.frame.sym == b.frame.sym,
        SortKey::BpfProg => true,
    })
}

pub fn print(
    p: &Profile,
    filters: &Filters,
    keys: &[SortKey],
    row: &RowKey,
    order: CallOrder,
    min_percent: f64,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let mut root = Node::default();
    let mut frames: Vec<SymId> = Vec::with_capacity(64);
    for ((k, node), c) in &p.chains {
        if !same_row(keys, k, row) || !filters.keep(p, k) {
            continue;
        }
        frames.clear();
        frames.extend(p.stacks.frames(*node).map(|f| f.sym));
        if order == CallOrder::Caller {
            frames.reverse();
        }
        let mut n = &mut root;
        n.counts.samples += c.samples;
        n.counts.period += c.period;
        for &s in &frames {
            n = n.children.entry(s).or_default();
            n.counts.samples += c.samples;
            n.counts.period += c.period;
        }
    }
    if root.children.is_empty() {
        return Ok(());
    }
    walk(p, &root, 0, min_percent, out)?;
    writeln!(out)
}

fn walk(p: &Profile, n: &Node, depth: usize, min: f64, out: &mut dyn Write) -> std::io::Result<()> {
    let mut kids: Vec<(&SymId, &Node)> = n.children.iter().collect();
    kids.sort_by(|a, b| b.1.counts.period.cmp(&a.1.counts.period).then(a.0.cmp(b.0)));
    let single = kids.len() == 1;
    for (sym, child) in kids {
        let pc = p.percent(&child.counts);
        if pc < min {
            continue;
        }
        let indent = "    ".repeat(depth + 3);
        let name = &p.sym.syms[*sym as usize].name;
        if single && depth > 0 {
            writeln!(out, "{indent}{name}")?;
        } else {
            writeln!(out, "{indent}--{pc:.2}%-- {name}")?;
        }
        walk(p, child, depth + usize::from(!single), min, out)?;
    }
    Ok(())
}
