//! The index of a call-stack tree: (address, parent) → node, for the
//! thread that interns stacks (`raw_stacks`).
//!
//! Interning a frame is a lookup in a table of up to millions of nodes,
//! too big for the CPU cache, and each frame's lookup waits for its
//! parent's. hashbrown reads a group of control bytes, then the slot, two
//! cache misses apart; here the key and the node sit in one 16-byte slot,
//! probed linearly, so a lookup is mostly one miss.

/// The index, in [`SHARDS`] tables chosen by the hash's top bits: each
/// grows on its own, so the index never holds two copies of itself.
pub struct NodeTable {
    shards: Vec<Shard>,
}

const SHARDS: usize = 16;

impl Default for NodeTable {
    fn default() -> Self {
        NodeTable {
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
        }
    }
}

impl NodeTable {
    /// The node of `addr` under `parent`; `new` makes it when absent.
    pub fn get_or_insert(&mut self, addr: u64, parent: u32, new: impl FnOnce() -> u32) -> u32 {
        let h = hash(addr, parent);
        let shard = (h >> (64 - SHARDS.trailing_zeros())) as usize;
        self.shards[shard].get_or_insert(h << SHARDS.trailing_zeros(), addr, parent, new)
    }
}

/// Open addressing, linear probing; a slot is (address, parent, node),
/// empty while its node is 0 (node 0 is the root, nobody's child).
#[derive(Default)]
struct Shard {
    slots: Vec<(u64, u32, u32)>,
    len: usize,
}

/// Fewest slots a shard starts with, once it holds anything.
const MIN_SLOTS: usize = 1024;

impl Shard {
    /// `hash`: the key's hash without the bits that chose the shard.
    fn get_or_insert(
        &mut self,
        hash: u64,
        addr: u64,
        parent: u32,
        new: impl FnOnce() -> u32,
    ) -> u32 {
        // At most 5/8 full: probes stay short.
        if (self.len + 1) * 8 > self.slots.len() * 5 {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = home(hash, mask);
        loop {
            let s = &mut self.slots[i];
            if s.2 == 0 {
                let n = new();
                debug_assert_ne!(n, 0, "node 0 marks an empty slot");
                *s = (addr, parent, n);
                self.len += 1;
                return n;
            }
            if s.0 == addr && s.1 == parent {
                return s.2;
            }
            i = (i + 1) & mask;
        }
    }

    /// Twice the slots, every node moved.
    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(MIN_SLOTS);
        let slots = crate::huge_vec::table(size, (0, 0, 0));
        let old = std::mem::replace(&mut self.slots, slots);
        let mask = size - 1;
        for s in old.into_iter().filter(|s| s.2 != 0) {
            let mut i = home(hash(s.0, s.1) << SHARDS.trailing_zeros(), mask);
            while self.slots[i].2 != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = s;
        }
    }
}

/// A slot for `hash` by its top bits, where a multiplicative hash mixes.
fn home(hash: u64, mask: usize) -> usize {
    (hash >> (64 - mask.count_ones())) as usize
}

/// The hash a key is stored under: mixed by a multiply, so that its high
/// bits depend on every bit of the key.
fn hash(addr: u64, parent: u32) -> u64 {
    (addr ^ u64::from(parent).rotate_left(32)).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn finds_what_a_hash_map_finds_across_growth() {
        let mut t = NodeTable::default();
        let mut oracle: HashMap<(u64, u32), u32> = HashMap::new();
        let mut next = 1u32;
        // Keys that collide in their low bits and repeat, as frames do:
        // many addresses under one parent, one address under many.
        for round in 0..3u64 {
            for i in 0..20_000u64 {
                let addr = 0x40_0000 + (i % 997) * 4096 + round;
                let parent = (i / 997) as u32;
                let want = *oracle.entry((addr, parent)).or_insert_with(|| {
                    next += 1;
                    next - 1
                });
                let got = t.get_or_insert(addr, parent, || {
                    // Made only when the oracle made one too.
                    next - 1
                });
                assert_eq!(got, want, "addr {addr:#x} parent {parent}");
            }
        }
        assert_eq!(t.shards.iter().map(|s| s.len).sum::<usize>(), oracle.len());
        for s in &t.shards {
            assert!(s.slots.len() * 5 >= s.len * 8, "kept at most 5/8 full");
        }
    }
}
