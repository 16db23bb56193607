//! The index of a call-stack tree: (key, parent) → node, for the thread
//! that interns stacks (`raw_stacks`).
//!
//! Interning a frame is a lookup in a table of up to millions of nodes,
//! too big for the CPU cache. hashbrown reads a group of control bytes,
//! then the slot, two cache misses apart; here the key and the node sit
//! in one 16-byte slot, probed linearly, so a lookup is mostly one miss.
//!
//! A frame's key is not its address but a hash of its whole path from the
//! root ([`child_key`]), which the addresses alone give: so the slots of
//! all a stack's new frames are known before any of them is found, and
//! [`NodeTable::warm`] has their cache misses overlap instead of each
//! frame's lookup waiting for its parent's.

/// The multiplier of the keys: odd, so that multiplying is a bijection.
const MIX: u64 = 0x9e37_79b9_7f4a_7c15;

/// The key of the frame at `addr` under the node whose key is `parent`.
///
/// For one parent key this is a bijection of the address (a rotate and an
/// xor by a constant, then a multiply by an odd number), and a node's key
/// is fixed when it is made. So by induction from the roots, (key,
/// parent node) names the same node as (address, parent node) would:
/// two frames under one parent share a key only if they share an address.
pub fn child_key(parent: u64, addr: u64) -> u64 {
    (parent.rotate_left(26) ^ addr).wrapping_mul(MIX)
}

/// The key of a root, a bijection of what names it (see [`child_key`]).
pub fn root_key(name: u64) -> u64 {
    name.wrapping_mul(MIX)
}

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

const SHARD_BITS: u32 = SHARDS.trailing_zeros();

impl NodeTable {
    /// The node of `key` under `parent`; `new` makes it when absent.
    pub fn get_or_insert(&mut self, key: u64, parent: u32, new: impl FnOnce() -> u32) -> u32 {
        let shard = (key >> (64 - SHARD_BITS)) as usize;
        self.shards[shard].get_or_insert(key, parent, new)
    }

    /// Make room for one more node beside `key`'s: when its shard is full,
    /// it drops the nodes `live` says no lookup will ask for again, and
    /// grows if that did not free enough. A call of its own, before
    /// [`NodeTable::get_or_insert`]: a caller's `live` reads what its `new`
    /// writes (each node's root), so the two cannot be borrowed at once.
    pub fn make_room(&mut self, key: u64, live: impl Fn(u32) -> bool) {
        let shard = &mut self.shards[(key >> (64 - SHARD_BITS)) as usize];
        if shard.full() {
            shard.rebuild(live);
        }
    }

    #[cfg(test)]
    pub fn slots(&self) -> usize {
        self.shards.iter().map(|s| s.slots.len()).sum()
    }

    /// Read the slot where `key` would be found first, so that the
    /// lookup that follows finds it in the cache: a frame's lookup needs
    /// its parent's node, but its slot needs only the key.
    pub fn warm(&self, key: u64) -> u32 {
        let s = &self.shards[(key >> (64 - SHARD_BITS)) as usize];
        match s.slots.len() {
            0 => 0,
            len => s.slots[home(key, len - 1)].2,
        }
    }
}

/// Open addressing, linear probing; a slot is (key, parent, node),
/// empty while its node is 0 (node 0 is the root, nobody's child).
#[derive(Default)]
struct Shard {
    slots: Vec<(u64, u32, u32)>,
    len: usize,
}

/// Fewest slots a shard starts with, once it holds anything.
const MIN_SLOTS: usize = 1024;

impl Shard {
    /// At most 5/8 full: probes stay short.
    fn full(&self) -> bool {
        (self.len + 1) * 8 > self.slots.len() * 5
    }

    fn get_or_insert(&mut self, key: u64, parent: u32, new: impl FnOnce() -> u32) -> u32 {
        if self.full() {
            self.rebuild(|_| true);
        }
        let mask = self.slots.len() - 1;
        let mut i = home(key, mask);
        loop {
            let s = &mut self.slots[i];
            if s.2 == 0 {
                let n = new();
                debug_assert_ne!(n, 0, "node 0 marks an empty slot");
                *s = (key, parent, n);
                self.len += 1;
                return n;
            }
            if s.0 == key && s.1 == parent {
                return s.2;
            }
            i = (i + 1) & mask;
        }
    }

    /// The slots again without the nodes that are not `live`: as many
    /// when that leaves the shard at most half as full as it may be, else
    /// twice as many.
    fn rebuild(&mut self, live: impl Fn(u32) -> bool) {
        // Emptied in place, so that each node is asked about once.
        let mut kept = 0;
        for s in &mut self.slots {
            match s.2 != 0 && !live(s.2) {
                true => *s = (0, 0, 0),
                false => kept += usize::from(s.2 != 0),
            }
        }
        let size = match (kept + 1) * 16 <= self.slots.len() * 5 {
            true => self.slots.len().max(MIN_SLOTS),
            false => (self.slots.len() * 2).max(MIN_SLOTS),
        };
        let slots = crate::huge_vec::table(size, (0, 0, 0));
        let old = std::mem::replace(&mut self.slots, slots);
        self.len = kept;
        let mask = size - 1;
        for s in old.into_iter().filter(|s| s.2 != 0) {
            let mut i = home(s.0, mask);
            while self.slots[i].2 != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = s;
        }
    }
}

/// A key's first slot, by the top bits under those that chose the shard:
/// keys are products, whose high bits depend on every bit of what was
/// multiplied.
fn home(key: u64, mask: usize) -> usize {
    ((key << SHARD_BITS) >> (64 - mask.count_ones())) as usize
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
                let key = child_key(root_key(parent.into()), addr);
                let got = t.get_or_insert(key, parent, || {
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

    /// Nodes that are no longer live leave a full shard, which then keeps
    /// its size if that made room; every live node is still found.
    #[test]
    fn a_rebuild_drops_what_is_not_live_and_keeps_the_rest() {
        let mut t = NodeTable::default();
        let mut next = 1u32;
        let mut made = Vec::new();
        for i in 0..50_000u64 {
            let key = child_key(root_key(1), i);
            let live = |n: u32| n.is_multiple_of(10) || n + 1000 > next;
            t.make_room(key, live);
            let n = t.get_or_insert(key, 1, || {
                next += 1;
                next - 1
            });
            made.push((key, n));
        }
        let held: usize = t.shards.iter().map(|s| s.len).sum();
        assert!(held < 12_000, "{held} of 50000 nodes held");
        let slots: usize = t.shards.iter().map(|s| s.slots.len()).sum();
        assert!(
            slots <= 16 * 2048,
            "{slots} slots: the shards stopped growing"
        );
        for &(key, n) in made.iter().filter(|(_, n)| n.is_multiple_of(10)) {
            assert_eq!(t.get_or_insert(key, 1, || unreachable!()), n);
        }
    }

    #[test]
    fn one_parent_key_gives_each_address_its_own_key() {
        // The bijection's inverse, by the multiplier's inverse mod 2^64:
        // every address comes back from its key.
        let inverse = (0..6).fold(MIX, |x, _| {
            x.wrapping_mul(2u64.wrapping_sub(MIX.wrapping_mul(x)))
        });
        assert_eq!(MIX.wrapping_mul(inverse), 1);
        for parent in [0, 1, u64::MAX, root_key(7 << 32 | 3)] {
            for addr in [0, 1, 0x40_1000, 0xffff_ffff_8100_0010, u64::MAX] {
                let key = child_key(parent, addr);
                assert_eq!(key.wrapping_mul(inverse) ^ parent.rotate_left(26), addr);
            }
        }
    }
}
