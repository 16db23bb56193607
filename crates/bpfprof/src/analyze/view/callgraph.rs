//! Call graphs under a report row (`-g`): the stacks of the row's samples
//! merged into a tree, callee first (the row's function, then its callers)
//! by default, or caller first.

use std::io::Write;

use rustc_hash::{FxHashMap, FxHashSet};

use super::table::{group_key, Filters, GroupKey, SortKey};
use crate::analyze::profile::{Counts, Profile};
use crate::symbolize::SymId;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOrder {
    /// The sampled function first, then its callers.
    Callee,
    /// The outermost caller first, down to the sampled function.
    Caller,
}

/// Children in a vector: most nodes have one or two, and a search through
/// those beats hashing (and allocating a table) per node.
#[derive(Default)]
struct Node {
    counts: Counts,
    children: Vec<(SymId, Node)>,
}

impl Node {
    fn child(&mut self, s: SymId) -> &mut Node {
        let i = match self.children.iter().position(|c| c.0 == s) {
            Some(i) => i,
            None => {
                self.children.push((s, Node::default()));
                self.children.len() - 1
            }
        };
        &mut self.children[i].1
    }
}

/// The stacks of the `wanted` output rows, gathered in one pass over the
/// profile's stacks (a per-row scan would be rows × stacks).
pub fn index(
    p: &Profile,
    keys: &[SortKey],
    filters: &Filters,
    wanted: &FxHashSet<GroupKey>,
) -> FxHashMap<GroupKey, Vec<(u32, Counts)>> {
    let mut by_row: FxHashMap<GroupKey, Vec<(u32, Counts)>> = FxHashMap::default();
    for ((k, node), c) in &p.chains {
        let g = group_key(keys, p, k);
        if wanted.contains(&g) && filters.keep(p, k) {
            by_row.entry(g).or_default().push((*node, *c));
        }
    }
    by_row
}

pub fn print(
    p: &Profile,
    stacks: &[(u32, Counts)],
    order: CallOrder,
    min_percent: f64,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let total = stacks.iter().fold(Counts::default(), |mut t, (_, c)| {
        t.samples += c.samples;
        t.period += c.period;
        t
    });
    if p.percent(&total) < min_percent {
        // No branch can reach the threshold when the whole row does not:
        // skip building a tree that would print nothing (on a big profile
        // that is nearly every row).
        if stacks.iter().any(|&(node, _)| node != 0) {
            writeln!(out)?;
        }
        return Ok(());
    }
    let mut root = Node::default();
    let mut frames: Vec<SymId> = Vec::with_capacity(64);
    for (node, c) in stacks {
        frames.clear();
        frames.extend(
            p.stacks
                .frames(*node)
                .map(|f| p.sym.syms[f.sym as usize].group),
        );
        if order == CallOrder::Caller {
            frames.reverse();
        }
        let mut n = &mut root;
        n.counts.samples += c.samples;
        n.counts.period += c.period;
        for &s in &frames {
            n = n.child(s);
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

/// perf's graph layout: a chain with one way up is a column of names;
/// where it splits, each branch gets its share.
fn walk(p: &Profile, n: &Node, depth: usize, min: f64, out: &mut dyn Write) -> std::io::Result<()> {
    let mut kids: Vec<(&SymId, &Node)> = n
        .children
        .iter()
        .filter(|(_, c)| p.percent(&c.counts) >= min)
        .map(|(s, c)| (s, c))
        .collect();
    // Equal shares by name, shared object and address, not by symbol id:
    // ids depend on the order symbols were first resolved in, which
    // depends on thread timing.
    let ident = |s: &SymId| {
        let sym = &p.sym.syms[*s as usize];
        let dso = &p.sym.dsos[sym.dso as usize];
        (&sym.name, &dso.short, &dso.name, sym.start)
    };
    kids.sort_by(|a, b| {
        b.1.counts
            .period
            .cmp(&a.1.counts.period)
            .then_with(|| ident(a.0).cmp(&ident(b.0)))
            .then(a.0.cmp(b.0))
    });
    let single = kids.len() == 1 && kids[0].1.counts.period == n.counts.period;
    for (sym, child) in kids {
        let indent = " ".repeat(12 + 4 * depth);
        let name = &p.sym.syms[*sym as usize].name;
        if single {
            writeln!(out, "{indent}   {name}")?;
            walk(p, child, depth, min, out)?;
        } else {
            writeln!(out, "{indent}--{:.2}%--{name}", p.percent(&child.counts))?;
            walk(p, child, depth + 1, min, out)?;
        }
    }
    Ok(())
}
