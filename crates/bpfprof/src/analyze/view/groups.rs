//! The report's rows by group key, in the order first seen.
//!
//! Summing a big profile's rows by group was mostly the probes of a hash
//! table of tens of thousands of groups, each a cache miss. Where the sort
//! has a symbol key, the symbol's group id is a dense index: an array by
//! that id points at the last group with it, and groups that share it
//! (other commands, threads, shared objects) are chained.

use rustc_hash::FxHashMap;

use super::table::{GroupKey, Row};

const NONE: u32 = u32::MAX;

pub struct Groups {
    pub rows: Vec<(GroupKey, Row)>,
    /// Which value of the key is a symbol group id, if one is.
    sym: Option<usize>,
    /// By symbol group id: the last group with it, or [`NONE`].
    last: Vec<u32>,
    /// By group: the group before it with the same symbol group id.
    before: Vec<u32>,
    /// Without a symbol key: group key → group.
    index: FxHashMap<GroupKey, u32>,
}

impl Groups {
    /// `sym`: the position of the symbol key in the group keys, if any;
    /// `syms`: how many symbol ids there are.
    pub fn new(sym: Option<usize>, syms: usize, capacity: usize) -> Groups {
        Groups {
            rows: Vec::with_capacity(capacity),
            sym,
            last: match sym {
                Some(_) => vec![NONE; syms],
                None => Vec::new(),
            },
            before: Vec::new(),
            index: FxHashMap::default(),
        }
    }

    /// The row of group `g`, made by `new` if it has none yet.
    pub fn entry(&mut self, g: GroupKey, new: impl FnOnce() -> Row) -> &mut Row {
        let at = match self.sym {
            Some(s) => {
                let id = g[s] as usize;
                let mut i = self.last[id];
                while i != NONE && self.rows[i as usize].0 != g {
                    i = self.before[i as usize];
                }
                if i == NONE {
                    i = self.rows.len() as u32;
                    self.before.push(self.last[id]);
                    self.last[id] = i;
                    self.rows.push((g, new()));
                }
                i
            }
            None => *self.index.entry(g).or_insert_with(|| {
                self.rows.push((g, new()));
                self.rows.len() as u32 - 1
            }),
        };
        &mut self.rows[at as usize].1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::profile::{Counts, RowKey};
    use crate::symbolize::Frame;

    fn row(n: u64) -> Row {
        Row {
            key: RowKey {
                comm: 0,
                pid: 0,
                tid: 0,
                cpu: 0,
                frame: Frame { dso: 0, sym: 0 },
            },
            counts: Counts {
                samples: n,
                period: n,
            },
            children: None,
        }
    }

    /// Keys of (command, symbol) sorts: one symbol under several commands,
    /// so that groups share a symbol id, in an interleaved order.
    #[test]
    fn sums_as_a_hash_map_does() {
        let keys: Vec<GroupKey> = (0..3000u64)
            .map(|i| [i % 7, (i * 31) % 101, u64::MAX, u64::MAX, u64::MAX])
            .collect();
        for sym in [Some(1), None] {
            let mut g = Groups::new(sym, 101, 0);
            let mut oracle: FxHashMap<GroupKey, u64> = FxHashMap::default();
            for (i, k) in keys.iter().enumerate() {
                g.entry(*k, || row(0)).counts.samples += i as u64;
                *oracle.entry(*k).or_default() += i as u64;
            }
            assert_eq!(g.rows.len(), oracle.len(), "{sym:?}");
            for (k, r) in &g.rows {
                assert_eq!(r.counts.samples, oracle[k], "{k:?}, {sym:?}");
            }
            // First seen first.
            let mut seen = Vec::new();
            for k in &keys {
                if !seen.contains(k) {
                    seen.push(*k);
                }
            }
            let order: Vec<GroupKey> = g.rows.iter().map(|(k, _)| *k).collect();
            assert_eq!(order, seen, "{sym:?}");
        }
    }
}
