//! Call graphs under a report row (`-g`): the stacks of the row's samples
//! merged into a tree, callee first (the row's function, then its callers)
//! by default, or caller first.

use std::io::Write;

use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

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
/// those beats hashing (and allocating a table) per node. A node with
/// many (a function called from thousands of unresolved addresses) finds
/// them through an index instead: searched, it was most of a report.
#[derive(Default)]
struct Node {
    counts: Counts,
    children: Vec<(SymId, Node)>,
    /// Position in `children` by symbol, once there are more than
    /// [`SCAN_MAX`].
    index: Option<Box<FxHashMap<SymId, u32>>>,
}

/// Children searched one by one, at most.
const SCAN_MAX: usize = 16;

impl Node {
    fn child(&mut self, s: SymId) -> &mut Node {
        let found = match &self.index {
            Some(index) => index.get(&s).map(|&i| i as usize),
            None => self.children.iter().position(|c| c.0 == s),
        };
        let i = found.unwrap_or_else(|| {
            let i = self.children.len();
            self.children.push((s, Node::default()));
            match &mut self.index {
                Some(index) => {
                    index.insert(s, i as u32);
                }
                None if i >= SCAN_MAX => {
                    let all = self.children.iter().enumerate();
                    self.index = Some(Box::new(all.map(|(i, c)| (c.0, i as u32)).collect()));
                }
                None => {}
            }
            i
        });
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

/// The stacks of one row merged into a tree, in `order`.
fn merge(p: &Profile, stacks: &[(u32, Counts)], order: CallOrder) -> Node {
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
        n.counts.merge(*c);
        for &s in &frames {
            n = n.child(s);
            n.counts.merge(*c);
        }
    }
    root
}

/// Whether a row's stacks can print anything at `min_percent`: no branch
/// can reach the threshold when the whole row does not, and skipping the
/// tree is most of the work on a big profile, where that is nearly every
/// row.
fn reaches(p: &Profile, stacks: &[(u32, Counts)], min_percent: f64) -> bool {
    let mut total = Counts::default();
    for (_, c) in stacks {
        total.merge(*c);
    }
    p.percent(&total) >= min_percent
}

pub fn print(
    p: &Profile,
    stacks: &[(u32, Counts)],
    order: CallOrder,
    min_percent: f64,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    if !reaches(p, stacks, min_percent) {
        if stacks.iter().any(|&(node, _)| node != 0) {
            writeln!(out)?;
        }
        return Ok(());
    }
    let root = merge(p, stacks, order);
    if root.children.is_empty() {
        return Ok(());
    }
    walk(p, &root, 0, min_percent, out)?;
    writeln!(out)
}

/// One node of a call graph in JSON: a function, its share of all
/// samples, and the branches below it (callers in callee order, callees
/// in caller order), heaviest first, as the text graph shows them.
#[derive(Debug, Serialize)]
pub struct GraphNode {
    pub symbol: String,
    pub dso: String,
    pub percent: f64,
    pub samples: u64,
    pub period: u64,
    pub children: Vec<GraphNode>,
}

/// A row's call graph as the text prints it: branches below
/// `min_percent` left out.
pub fn tree(
    p: &Profile,
    stacks: &[(u32, Counts)],
    order: CallOrder,
    min_percent: f64,
) -> Vec<GraphNode> {
    if !reaches(p, stacks, min_percent) {
        return Vec::new();
    }
    let root = merge(p, stacks, order);
    branches(p, &root, min_percent)
}

fn branches(p: &Profile, n: &Node, min: f64) -> Vec<GraphNode> {
    sorted_kids(p, n, min)
        .into_iter()
        .map(|(s, c)| {
            let sym = &p.sym.syms[*s as usize];
            GraphNode {
                symbol: sym.name.clone(),
                dso: p.sym.dsos[sym.dso as usize].short.clone(),
                percent: p.percent(&c.counts),
                samples: c.counts.samples,
                period: c.counts.period,
                children: branches(p, c, min),
            }
        })
        .collect()
}

/// A node's children at or above `min` percent, heaviest first.
fn sorted_kids<'a>(p: &Profile, n: &'a Node, min: f64) -> Vec<(&'a SymId, &'a Node)> {
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
    kids
}

/// perf's graph layout: a chain with one way up is a column of names;
/// where it splits, each branch gets its share.
fn walk(p: &Profile, n: &Node, depth: usize, min: f64, out: &mut dyn Write) -> std::io::Result<()> {
    let kids = sorted_kids(p, n, min);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Children are found again whether searched or indexed: symbols
    /// come back in an order unlike the first, many more than are
    /// searched one by one.
    #[test]
    fn each_symbol_is_one_child_however_many_there_are() {
        let mut root = Node::default();
        let mut want: std::collections::BTreeMap<SymId, u64> = Default::default();
        for i in 0..5000u32 {
            let s = (i * 7919) % 701;
            root.child(s).counts.add(u64::from(i));
            *want.entry(s).or_default() += u64::from(i);
        }
        let mut got: Vec<(SymId, u64)> = root
            .children
            .iter()
            .map(|(s, n)| (*s, n.counts.period))
            .collect();
        got.sort_unstable();
        let want: Vec<(SymId, u64)> = want.into_iter().collect();
        assert_eq!(got, want);
    }
}
