//! Collapsed stacks (`comm;outermost;…;leaf count`), the input of
//! FlameGraph's flamegraph.pl, inferno, speedscope and many scripts.
//!
//! The lines come from the profile's stack tree merged by name, in two
//! steps: every stack node to its path of names, in node order (parents
//! first, so one lookup per node, and names looked up once per distinct
//! frame); then each stack's path under its command. A line's text is
//! made only for the lines written.

use std::collections::HashMap;
use std::io::Write;

use rustc_hash::FxHashMap;

use super::{comm_text, frame_name, ExportError};
use crate::analyze::profile::Profile;
use crate::analyze::table::Filters;
use crate::symbolize::{CommId, Frame};

const NONE: u32 = u32::MAX;

/// A node of a tree of names. Node 0 is the root; every node comes after
/// its parent.
#[derive(Clone, Copy)]
struct Node {
    parent: u32,
    name: u32,
    first_child: u32,
    /// Samples whose stack ends here.
    own: u64,
    /// Samples of the node and everything under it.
    total: u64,
}

struct NameTree {
    nodes: Vec<Node>,
    children: FxHashMap<(u32, u32), u32>,
}

impl NameTree {
    fn new() -> NameTree {
        NameTree {
            nodes: vec![Node {
                parent: NONE,
                name: NONE,
                first_child: NONE,
                own: 0,
                total: 0,
            }],
            children: FxHashMap::default(),
        }
    }

    fn child(&mut self, parent: u32, name: u32) -> u32 {
        let next = self.nodes.len() as u32;
        let id = *self.children.entry((parent, name)).or_insert(next);
        if id == next {
            self.nodes.push(Node {
                parent,
                name,
                first_child: NONE,
                own: 0,
                total: 0,
            });
            let p = &mut self.nodes[parent as usize];
            if p.first_child == NONE {
                p.first_child = id;
            }
        }
        id
    }
}

/// Names as folded lines write them, each once.
#[derive(Default)]
struct Names {
    text: Vec<String>,
    ids: HashMap<String, u32>,
    frames: FxHashMap<Frame, u32>,
    comms: FxHashMap<CommId, u32>,
}

impl Names {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let i = self.text.len() as u32;
        self.text.push(s.to_string());
        self.ids.insert(s.to_string(), i);
        i
    }

    fn frame(&mut self, p: &Profile, f: Frame) -> u32 {
        if let Some(&i) = self.frames.get(&f) {
            return i;
        }
        let i = self.id(&frame_name(p, f));
        self.frames.insert(f, i);
        i
    }

    fn comm(&mut self, p: &Profile, c: CommId) -> u32 {
        if let Some(&i) = self.comms.get(&c) {
            return i;
        }
        let i = self.id(&comm_text(p, c).replace(';', ":"));
        self.comms.insert(c, i);
        i
    }
}

/// The stacks the filters keep, merged by name, command first: what
/// every folded line, and every frame of a flame graph, is made of.
pub struct Tree {
    names: Vec<String>,
    nodes: Vec<Node>,
}

impl Tree {
    /// Merge the stacks the filters keep (without call chains, each row
    /// is a stack of one frame).
    pub fn build(p: &Profile, filters: &Filters) -> Tree {
        let mut names = Names::default();
        let mut paths = NameTree::new();
        let mut path_of: Vec<u32> = Vec::with_capacity(p.stacks.nodes.len());
        path_of.push(0);
        for &(parent, frame) in p.stacks.nodes.iter().skip(1) {
            let name = names.frame(p, frame);
            let id = paths.child(path_of[parent as usize], name);
            path_of.push(id);
        }
        let mut tree = NameTree::new();
        let mut under: FxHashMap<(u32, u32), u32> = FxHashMap::default();
        let mut walk: Vec<u32> = Vec::with_capacity(128);
        let mut count = |tree: &mut NameTree, top: u32, path: u32, n: u64| {
            // The path's node under the command: the nearest ancestor
            // already placed there, then the rest made below it.
            walk.clear();
            let (mut at, mut up) = (top, path);
            while up != 0 {
                if let Some(&t) = under.get(&(top, up)) {
                    at = t;
                    break;
                }
                walk.push(up);
                up = paths.nodes[up as usize].parent;
            }
            for &w in walk.iter().rev() {
                at = tree.child(at, paths.nodes[w as usize].name);
                under.insert((top, w), at);
            }
            tree.nodes[at as usize].own += n;
        };
        if p.chains.is_empty() {
            for (k, c) in &p.rows {
                if filters.keep(p, k) {
                    let top = tree.child(0, names.comm(p, k.comm));
                    let n = tree.child(top, names.frame(p, k.frame));
                    tree.nodes[n as usize].own += c.samples;
                }
            }
        }
        for ((k, leaf), c) in &p.chains {
            if !filters.keep(p, k) {
                continue;
            }
            let top = tree.child(0, names.comm(p, k.comm));
            match *leaf {
                // A sample without a chain: its own frame is all there is.
                0 => {
                    let n = tree.child(top, names.frame(p, k.frame));
                    tree.nodes[n as usize].own += c.samples;
                }
                leaf => count(&mut tree, top, path_of[leaf as usize], c.samples),
            }
        }
        let mut nodes = tree.nodes;
        for n in nodes.iter_mut() {
            n.total = n.own;
        }
        for i in (1..nodes.len()).rev() {
            let (parent, total) = (nodes[i].parent, nodes[i].total);
            nodes[parent as usize].total += total;
        }
        Tree {
            names: names.text,
            nodes,
        }
    }

    /// Samples in all stacks.
    pub fn total(&self) -> u64 {
        self.nodes[0].total
    }

    /// Each distinct stack once with its samples, sorted as
    /// stackcollapse-perf.pl sorts them (so equal inputs diff cleanly).
    ///
    /// A subtree of fewer than `min` samples comes as at most two lines,
    /// for a flame graph that omits frames that narrow: its top frame's
    /// own samples, and the rest in one line through its first child.
    /// Sorted, they stand where the subtree's lines would (a sibling whose
    /// name extends this one's can fall between the two, as between the
    /// subtree's own lines), so every frame drawn is where it would be.
    pub fn lines(&self, min: f64) -> Vec<(String, u64)> {
        let keep = |i: usize| self.nodes[i].total as f64 >= min;
        let mut out = Vec::new();
        for (i, n) in self.nodes.iter().enumerate().skip(1) {
            if n.parent != 0 && !keep(n.parent as usize) {
                continue;
            }
            if n.own > 0 {
                out.push((self.path(i, None), n.own));
            }
            if !keep(i) && n.total > n.own {
                out.push((self.path(i, Some(n.first_child)), n.total - n.own));
            }
        }
        out.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// The names from the command down to node `i`, and `child`'s.
    fn path(&self, i: usize, child: Option<u32>) -> String {
        let mut ids: Vec<u32> = child
            .map(|c| self.nodes[c as usize].name)
            .into_iter()
            .collect();
        let mut at = i;
        while at != 0 {
            ids.push(self.nodes[at].name);
            at = self.nodes[at].parent as usize;
        }
        let mut line = String::with_capacity(ids.len() * 24);
        for (j, name) in ids.iter().rev().enumerate() {
            if j > 0 {
                line.push(';');
            }
            line.push_str(&self.names[*name as usize]);
        }
        line
    }
}

/// Write the collapsed stacks.
pub fn write(p: &Profile, filters: &Filters, out: &mut dyn Write) -> Result<(), ExportError> {
    for (stack, n) in Tree::build(p, filters).lines(0.0) {
        writeln!(out, "{stack} {n}")?;
    }
    Ok(())
}
