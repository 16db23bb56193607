//! Samples with call chains counted by (row, stack leaf node).
//!
//! A leaf node stands for one address in one process in one state, so
//! nearly all of its samples go on one row: its counts live in a vector
//! indexed by the node, and a map takes only a leaf's samples on any other
//! row (other threads of the process with rows by thread, a chain whose
//! first frame is not the sampled address). Most samples of a recording of
//! short-lived processes end in a node just made: counting one in a map
//! was an insert at a random slot (probe, write and, as the map grew,
//! rehash: 56% of the replay's per-record handler on such a recording); in
//! the vector it is a write to the last few slots, which are in the cache.

use rustc_hash::FxHashMap;

use crate::analyze::profile::Counts;

/// The counts of one leaf's first row; `row` is `u32::MAX` while none.
#[derive(Clone, Copy)]
struct Slot {
    row: u32,
    samples: u32,
    period: u64,
}

const FREE: Slot = Slot {
    row: u32::MAX,
    samples: 0,
    period: 0,
};

/// Slots per chunk of `by_leaf` (1 MB): the vector grows by chunks, so
/// that growing it never holds two copies (which a doubling `Vec` would
/// at its peak).
const CHUNK: usize = 1 << 16;

#[derive(Default)]
pub struct Chains {
    by_leaf: Vec<Box<[Slot]>>,
    others: FxHashMap<(u32, u32), Counts>,
}

impl Chains {
    /// Count a sample of `period` on `row` with the stack ending at `leaf`.
    #[inline]
    pub fn add(&mut self, row: u32, leaf: u32, period: u64) {
        let (chunk, i) = (leaf as usize / CHUNK, leaf as usize % CHUNK);
        while chunk >= self.by_leaf.len() {
            self.by_leaf.push(vec![FREE; CHUNK].into_boxed_slice());
        }
        let s = &mut self.by_leaf[chunk][i];
        if s.row == u32::MAX {
            s.row = row;
        }
        if s.row == row && s.samples < u32::MAX {
            s.samples += 1;
            s.period += period;
            return;
        }
        self.others.entry((row, leaf)).or_default().add(period);
    }

    pub fn is_empty(&self) -> bool {
        self.by_leaf.is_empty() && self.others.is_empty()
    }

    /// Every ((row, leaf), counts) with samples; a pair may come twice
    /// (once a leaf's first row has counted `u32::MAX` samples).
    pub fn iter(&self) -> impl Iterator<Item = ((u32, u32), Counts)> + '_ {
        let slots = self.by_leaf.iter().flat_map(|c| c.iter());
        let first = (0u32..).zip(slots).filter_map(|(leaf, s)| {
            let c = Counts {
                samples: s.samples.into(),
                period: s.period,
            };
            (s.samples > 0).then_some(((s.row, leaf), c))
        });
        first.chain(self.others.iter().map(|(&k, &c)| (k, c)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same counts as a map by (row, leaf), summed.
    #[test]
    fn counts_as_a_map_by_row_and_leaf_would() {
        let mut rng = crate::test_rng::XorShift::new();
        let mut c = Chains::default();
        let mut want: FxHashMap<(u32, u32), Counts> = FxHashMap::default();
        for _ in 0..20_000 {
            let (row, leaf) = (rng.below(7) as u32, rng.below(300) as u32);
            let period = rng.below(1000);
            c.add(row, leaf, period);
            want.entry((row, leaf)).or_default().add(period);
        }
        let mut got: FxHashMap<(u32, u32), Counts> = FxHashMap::default();
        for (k, n) in c.iter() {
            got.entry(k).or_default().merge(n);
        }
        assert_eq!(got, want);
        assert!(!c.others.is_empty(), "leaves on several rows took the map");
    }

    #[test]
    fn a_full_slot_counts_on_in_the_map() {
        let mut c = Chains::default();
        c.add(3, 0, 10);
        c.by_leaf[0][0].samples = u32::MAX;
        c.add(3, 0, 5);
        let got: Vec<_> = c.iter().collect();
        assert_eq!(got.len(), 2);
        let total: u64 = got.iter().map(|(_, n)| n.samples).sum();
        assert_eq!(total, u64::from(u32::MAX) + 1);
    }
}
