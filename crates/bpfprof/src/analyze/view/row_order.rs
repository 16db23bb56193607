//! The order of rows with equal overhead: perf orders them by each sort
//! key's text (resolved symbols before bare addresses). Comparing names
//! inside the sort cost more than the rest of grouping on a big profile,
//! so each key's values are ranked once, and rows compare integers.
//!
//! Rows whose texts are all equal (`[k] strcmp` and `[.] strcmp` under
//! `--sort sym`) are ordered by their shared object's name (as perf's
//! collapsed entries are: `[k] strcmp` of `[kernel.kallsyms]` before
//! `[.] strcmp` of `libc.so.6`), then path, then the symbol's address:
//! never by internal ids, which depend on the order in which symbols were
//! first resolved, and so on thread timing.

use std::cmp::Ordering;

use rustc_hash::FxHashMap;

use super::table::{bpf_prog_of, SortKey};
use crate::analyze::profile::{Profile, RowKey};

/// Per sort key, the rank of a value in perf's tie order. Equal texts
/// get equal ranks.
pub struct TieRanks<'a> {
    p: &'a Profile,
    keys: &'a [SortKey],
    comm: Vec<u32>,
    dso: Vec<u32>,
    /// By symbol id; only the symbols of the rows being sorted are ranked.
    sym: Vec<u32>,
    bpf: FxHashMap<Option<(u32, u32)>, u32>,
    /// By DSO id: the rank of its short name, then path.
    dso_path: Vec<u32>,
}

impl<'a> TieRanks<'a> {
    pub fn new(p: &'a Profile, keys: &'a [SortKey], rows: &[&RowKey]) -> TieRanks<'a> {
        let mut r = TieRanks {
            p,
            keys,
            comm: Vec::new(),
            dso: Vec::new(),
            sym: Vec::new(),
            bpf: FxHashMap::default(),
            dso_path: Vec::new(),
        };
        let dsos = &p.sym.dsos;
        r.dso_path = rank((0..dsos.len() as u32).collect(), |&a, &b| {
            let (a, b) = (&dsos[a as usize], &dsos[b as usize]);
            (&a.short, &a.name).cmp(&(&b.short, &b.name))
        });
        for key in keys {
            match key {
                SortKey::Comm => {
                    let comms = &p.sym.threads.comms;
                    r.comm = rank((0..comms.len() as u32).collect(), |&a, &b| {
                        comms[a as usize].cmp(&comms[b as usize])
                    });
                }
                SortKey::Dso => {
                    let dsos = &p.sym.dsos;
                    r.dso = rank((0..dsos.len() as u32).collect(), |&a, &b| {
                        dsos[a as usize].short.cmp(&dsos[b as usize].short)
                    });
                }
                SortKey::Sym => {
                    // Marked rather than sorted: a big profile's rows
                    // hold tens of thousands of symbols.
                    let mut seen = vec![false; p.sym.syms.len()];
                    for k in rows {
                        seen[k.frame.sym as usize] = true;
                    }
                    let used = (0..seen.len() as u32).filter(|&i| seen[i as usize]);
                    r.sym = rank_syms(p, used.collect());
                }
                SortKey::BpfProg => {
                    let mut progs: Vec<_> = rows.iter().map(|k| bpf_prog_of(p, k)).collect();
                    progs.sort_unstable();
                    progs.dedup();
                    r.bpf = progs.into_iter().zip(0..).collect();
                }
                SortKey::Pid | SortKey::Tid | SortKey::Cpu | SortKey::Srcline => {}
            }
        }
        r
    }

    /// What orders rows whose ranks are all equal: the row's shared object
    /// by name and path, then its symbol's address.
    pub fn identity(&self, k: &RowKey) -> (u32, u64) {
        let start = self.p.sym.syms[k.frame.sym as usize].start;
        (self.dso_path[k.frame.dso as usize], start)
    }

    /// The ranks of a row's values, key by key.
    pub fn of(&self, k: &RowKey) -> [u32; 5] {
        let mut out = [0; 5];
        for (slot, key) in out.iter_mut().zip(self.keys) {
            *slot = match key {
                SortKey::Comm => self.comm[k.comm as usize],
                // As signed, as perf compares a pid_t: -1 first.
                SortKey::Pid | SortKey::Tid => k.tid ^ 0x8000_0000,
                SortKey::Cpu => u32::from(k.cpu),
                SortKey::Srcline => 0,
                SortKey::Dso => self.dso[k.frame.dso as usize],
                SortKey::Sym => self.sym[k.frame.sym as usize],
                SortKey::BpfProg => self.bpf[&bpf_prog_of(self.p, k)],
            };
        }
        out
    }
}

/// Resolved symbols first, by name; then addresses.
fn sym_order(p: &Profile, a: u32, b: u32) -> Ordering {
    let (x, y) = (&p.sym.syms[a as usize], &p.sym.syms[b as usize]);
    y.resolved.cmp(&x.resolved).then_with(|| {
        if x.resolved {
            x.name.cmp(&y.name)
        } else {
            x.start.cmp(&y.start)
        }
    })
}

/// Ranks of symbols, indexed by symbol id. Most names differ in their
/// first eight bytes, so those are compared as an integer, from an array,
/// before whole names are.
fn rank_syms(p: &Profile, used: Vec<u32>) -> Vec<u32> {
    let syms = &p.sym.syms;
    let keyed: Vec<(bool, u64, u32)> = used
        .into_iter()
        .map(|id| {
            let s = &syms[id as usize];
            let k = match s.resolved {
                true => prefix(&s.name),
                false => s.start,
            };
            (!s.resolved, k, id)
        })
        .collect();
    let order = |a: &(bool, u64, u32), b: &(bool, u64, u32)| {
        (a.0, a.1)
            .cmp(&(b.0, b.1))
            .then_with(|| sym_order(p, a.2, b.2))
    };
    ranks_of(keyed, syms.len(), |k| k.2, order)
}

/// The first eight bytes of a name as an integer that orders as the bytes
/// do; names that differ there compare the same as whole names.
fn prefix(name: &str) -> u64 {
    let mut b = [0u8; 8];
    let n = name.len().min(8);
    b[..n].copy_from_slice(&name.as_bytes()[..n]);
    u64::from_be_bytes(b)
}

/// Ranks of `ids` under `order`, indexed by id.
fn rank(ids: Vec<u32>, order: impl Fn(&u32, &u32) -> Ordering) -> Vec<u32> {
    let n = ids.len();
    ranks_of(ids, n, |&id| id, order)
}

/// Ranks of `items` under `order`, in a table of `len` indexed by each
/// item's `id` (ids not given rank 0); items equal under `order` share a
/// rank.
fn ranks_of<T>(
    mut items: Vec<T>,
    len: usize,
    id: impl Fn(&T) -> u32,
    order: impl Fn(&T, &T) -> Ordering,
) -> Vec<u32> {
    items.sort_unstable_by(&order);
    let mut ranks = vec![0; len];
    let mut r = 0;
    for i in 0..items.len() {
        if i > 0 && order(&items[i - 1], &items[i]) != Ordering::Equal {
            r += 1;
        }
        ranks[id(&items[i]) as usize] = r;
    }
    ranks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_order_as_names_do_where_they_differ() {
        let names = [
            "",
            "a",
            "ab",
            "abc",
            "abcdefgh",
            "abcdefgh2",
            "b",
            "B",
            "_x",
            "\u{e9}t\u{e9}",
        ];
        for a in names {
            for b in names {
                let (pa, pb) = (prefix(a), prefix(b));
                if pa != pb {
                    assert_eq!(pa.cmp(&pb), a.cmp(b), "{a:?} vs {b:?}");
                }
            }
        }
        assert_eq!(
            prefix("abcdefgh1"),
            prefix("abcdefgh2"),
            "whole names decide"
        );
    }

    #[test]
    fn equal_items_share_a_rank_and_absent_ids_rank_zero() {
        let names = ["b", "a", "b", "c"];
        let ranks = ranks_of(
            vec![0u32, 1, 2, 3],
            6,
            |&i| i,
            |&x, &y| names[x as usize].cmp(names[y as usize]),
        );
        assert_eq!(ranks, vec![1, 0, 1, 2, 0, 0]);
    }
}
