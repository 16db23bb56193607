//! Call stacks interned by address, on a thread between the reader and
//! the replay.
//!
//! Interning a stack frame by frame is most of the work of a report with
//! call graphs, and it needs no symbol: only the addresses and which
//! process (in which state) they belong to. So a thread of its own interns
//! them from the chains the reader copied out (`events::intern_stacks`),
//! and hands over each node once, when first seen; the replay resolves
//! that one node to a location and never probes a table.

use rustc_hash::FxHashMap;

use super::memo::{Changes, SampleKey, StackCache};
use super::node_table::{self, NodeTable};

/// What a node stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeKind {
    User,
    Kernel,
    /// The root of one process's stacks while nothing changed for it (its
    /// mappings, its threads, the BPF symbols): the same address may mean
    /// another function in another process or after an exec.
    Process,
}

/// A node first seen: its parent and address.
#[derive(Debug, Clone, Copy)]
pub struct RawNode {
    pub parent: u32,
    pub addr: u64,
    pub kind: NodeKind,
}

/// The tree; node 0 is the root of everything.
pub struct RawStacks {
    tree: Tree,
    memo: StackCache,
}

struct Tree {
    /// (key, parent) → node, a table per kind: 16-byte slots rather than
    /// 24 with the kind in the key (on a recording of a million nodes,
    /// the report's peak RSS is 174-181 MB; perf's is 231).
    index: Vec<NodeTable>,
    /// Recently used (key, parent) → node, direct-mapped: the hot part of
    /// a big tree, small enough to stay in the CPU cache.
    recent: Vec<(u64, u32, u32)>,
    len: u32,
    /// The root each node was made under, by node.
    root_of: Vec<u32>,
    /// Each process's newest root (see [`Roots`]).
    roots: Roots,
}

/// Which roots can still get children. A root stands for one state of a
/// process; once the process has a newer one, or has exited, no sample
/// looks under the old root again, and the index drops its nodes when it
/// grows. On a recording of thousands of short-lived processes, nearly
/// every node is such a node (of a 60 s recording's 4.8M nodes, the index
/// held all at 194 MB, and now holds those of live processes in 4 MB, for
/// 19 MB of `root_of`); the nodes themselves stay, handed over and
/// counted.
#[derive(Default)]
struct Roots {
    newest: FxHashMap<u32, u32>,
    /// Roots no sample will look under again, a bit per node.
    dead: Vec<u64>,
}

impl Roots {
    /// `root`, just made, is `pid`'s newest root.
    fn newest(&mut self, pid: u32, root: u32) {
        if let Some(old) = self.newest.insert(pid, root) {
            self.bury(old);
        }
    }

    /// The process has exited (its main thread has): its roots are done.
    /// Should a thread of it still be sampled, its frames are made anew,
    /// as equal nodes (readers merge nodes by frame).
    fn exited(&mut self, pid: u32) {
        if let Some(old) = self.newest.remove(&pid) {
            self.bury(old);
        }
    }

    fn bury(&mut self, root: u32) {
        let (word, bit) = (root as usize / 64, root % 64);
        if word >= self.dead.len() {
            self.dead.resize(word + 1, 0);
        }
        self.dead[word] |= 1 << bit;
    }

    fn is_dead(&self, root: u32) -> bool {
        let (word, bit) = (root as usize / 64, root % 64);
        self.dead.get(word).is_some_and(|w| w & (1 << bit) != 0)
    }
}

const RECENT: usize = 1 << 15;

const KINDS: usize = NodeKind::Process as usize + 1;

impl Default for RawStacks {
    fn default() -> Self {
        RawStacks {
            tree: Tree {
                index: (0..KINDS).map(|_| NodeTable::default()).collect(),
                recent: crate::huge_vec::table(RECENT, (0, 0, 0)),
                len: 1,
                root_of: vec![0],
                roots: Roots::default(),
            },
            memo: StackCache::default(),
        }
    }
}

impl RawStacks {
    /// The leaf node of a sample's stack (`raw` as recorded, leaf first);
    /// nodes seen for the first time are appended to `new`, in id order.
    pub fn leaf(&mut self, ch: &Changes, k: SampleKey, raw: &[u64], new: &mut Vec<RawNode>) -> u32 {
        let state = (k.pid as u64) << 32 | ch.last(k.pid, true) as u64;
        let root_key = node_table::root_key(state);
        let (tree, memo) = (&mut self.tree, &mut self.memo);
        let made_from = tree.len;
        let root = tree.intern(0, 0, root_key, state, NodeKind::Process, new);
        // A root is made when its process's state is new, which ends the
        // state before it; noting only then keeps the map off the
        // per-sample path.
        if root >= made_from {
            tree.roots.newest(k.pid, root);
        }
        memo.leaf(ch, k, raw, (root, root_key), |run| {
            let kind = |kernel| match kernel {
                true => NodeKind::Kernel,
                false => NodeKind::User,
            };
            // Every frame's first slot is read before any is looked up:
            // the cache misses overlap rather than queue one behind the
            // other.
            let warmed = run
                .frames
                .iter()
                .zip(run.keys)
                .fold(0, |acc, (&(_, kernel), &key)| {
                    acc ^ tree.index[kind(kernel) as usize].warm(key)
                });
            std::hint::black_box(warmed);
            let mut node = run.parent;
            for i in (0..run.frames.len()).rev() {
                let (addr, kernel) = run.frames[i];
                node = tree.intern(root, node, run.keys[i], addr, kind(kernel), new);
                run.nodes[i] = node;
            }
        })
    }

    /// What a side-band event means to the tree: an exited process's
    /// roots are done.
    pub fn side(&mut self, ev: &super::events::Event) {
        if let super::events::Event::Exit { pid, tid } = *ev {
            if pid == tid {
                self.tree.roots.exited(pid);
            }
        }
    }
}

impl Tree {
    /// The node of the frame `key` (at `addr`) under `parent`, in the tree
    /// of `root`.
    fn intern(
        &mut self,
        root: u32,
        parent: u32,
        key: u64,
        addr: u64,
        kind: NodeKind,
        new: &mut Vec<RawNode>,
    ) -> u32 {
        // The parent and kind share one word of the slot; node 0 is never
        // a child, so a zeroed slot matches nothing. Parents past 2^30 do
        // not fit beside the kind: they skip the cache.
        let tag = parent << 2 | kind as u32;
        let slot = &mut self.recent[(key >> (64 - 15)) as usize];
        let cached = parent < 1 << 30;
        if cached && slot.0 == key && slot.1 == tag && slot.2 != 0 {
            return slot.2;
        }
        let (len, root_of, roots) = (&mut self.len, &mut self.root_of, &self.roots);
        let table = &mut self.index[kind as usize];
        table.make_room(key, |node| !roots.is_dead(root_of[node as usize]));
        let n = table.get_or_insert(key, parent, || {
            new.push(RawNode { parent, addr, kind });
            // A root is its own.
            root_of.push(if kind == NodeKind::Process {
                *len
            } else {
                root
            });
            *len += 1;
            *len - 1
        });
        if cached {
            *slot = (key, tag, n);
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use perfdata::context;

    fn key(pid: u32) -> SampleKey {
        SampleKey {
            tid: pid,
            pid,
            ip: 0,
            kernel: false,
        }
    }

    /// Frames of a leaf, leaf first, from the nodes handed over.
    fn frames(nodes: &[RawNode], mut n: u32) -> Vec<(u64, NodeKind)> {
        let mut out = Vec::new();
        while n != 0 {
            let r = nodes[n as usize - 1];
            out.push((r.addr, r.kind));
            n = r.parent;
        }
        out
    }

    #[test]
    fn nodes_come_once_and_rebuild_each_stack() {
        let (mut t, mut ch, mut new) = (RawStacks::default(), Changes::default(), Vec::new());
        let a = [
            context::KERNEL,
            0xffff_ffff_8100_0010,
            context::USER,
            10,
            20,
        ];
        let b = [context::USER, 11, 20];
        let la = t.leaf(&ch, key(7), &a, &mut new);
        let lb = t.leaf(&ch, key(7), &b, &mut new);
        assert_eq!(
            new.len(),
            1 + 3 + 1,
            "process root, a's frames, b's new leaf"
        );
        let state0 = 7u64 << 32;
        use NodeKind::*;
        assert_eq!(
            frames(&new, la),
            vec![
                (0xffff_ffff_8100_0010, Kernel),
                (10, User),
                (20, User),
                (state0, Process)
            ]
        );
        assert_eq!(
            frames(&new, lb),
            vec![(11, User), (20, User), (state0, Process)]
        );
        // Another process, or the same one after an MMAP: a new root.
        let lc = t.leaf(&ch, key(8), &b, &mut new);
        ch.process(7);
        let ld = t.leaf(&ch, key(7), &b, &mut new);
        assert_ne!(lc, lb);
        assert_ne!(ld, lb);
        assert_eq!(frames(&new, ld).last(), Some(&((7u64 << 32) | 1, Process)));
        // The same stack again adds nothing.
        let before = new.len();
        assert_eq!(t.leaf(&ch, key(7), &b, &mut new), ld);
        assert_eq!(new.len(), before);
        // One address under one parent, as user and as kernel code: two
        // nodes (the kinds' tables are apart).
        let user = t.leaf(&ch, key(9), &[context::USER, 0x20], &mut new);
        let kernel = t.leaf(&ch, key(9), &[context::KERNEL, 0x20], &mut new);
        assert_ne!(user, kernel);
        assert_eq!(frames(&new, user)[0], (0x20, User));
        assert_eq!(frames(&new, kernel)[0], (0x20, Kernel));
        assert_eq!(frames(&new, user)[1], frames(&new, kernel)[1], "one parent");
    }

    /// The index forgets the frames of processes that exited, or moved to
    /// a newer state, once it needs the room; a live process's stacks are
    /// still found, and a dead one's are made anew, as equal frames.
    #[test]
    fn frames_under_dead_roots_leave_the_index() {
        use super::super::events::Event;
        let (mut t, mut ch, mut new) = (RawStacks::default(), Changes::default(), Vec::new());
        let stack = |i: u64| {
            [
                context::KERNEL,
                0xffff_ffff_8100_0000 + i,
                context::USER,
                0x40_1000 + i,
                0x40_0000,
            ]
        };
        let l7 = t.leaf(&ch, key(7), &stack(0), &mut new);
        for pid in 100..6100u32 {
            for i in 0..20 {
                t.leaf(&ch, key(pid), &stack(i), &mut new);
            }
            // Half map something first (a new state, with a sample).
            if pid % 2 == 1 {
                ch.process(pid);
                t.leaf(&ch, key(pid), &stack(0), &mut new);
            }
            t.side(&Event::Exit { pid, tid: pid });
        }
        let made = new.len();
        // Without dropping, the index would hold every node in slots at
        // most 5/8 full.
        let slots: usize = t.tree.index.iter().map(NodeTable::slots).sum();
        assert!(made > 240_000, "{made} nodes made");
        assert!(slots < made, "{slots} slots for {made} nodes");
        let before = new.len();
        assert_eq!(t.leaf(&ch, key(7), &stack(0), &mut new), l7);
        assert_eq!(new.len(), before, "process 7's stack is found again");
        // An exited process sampled once more: its frames come back as
        // new nodes with the same addresses.
        let again = t.leaf(&ch, key(100), &stack(3), &mut new);
        assert_eq!(
            frames(&new, again)[..3],
            [
                (0xffff_ffff_8100_0003, NodeKind::Kernel),
                (0x40_1003, NodeKind::User),
                (0x40_0000, NodeKind::User)
            ]
        );
    }

    /// Past 2^30 nodes, a parent no longer fits the recent cache's tag
    /// beside the kind: parents 2^30 apart must still get nodes of their
    /// own. (A tree that big needs a recording of gigabytes; the counter
    /// is moved on instead.)
    #[test]
    fn parents_past_two_to_the_thirty_keep_their_own_children() {
        let (mut t, ch, mut new) = (RawStacks::default(), Changes::default(), Vec::new());
        let stack = [context::USER, 0x40];
        let small = t.leaf(&ch, key(7), &stack, &mut new);
        let small_parent = new[0];
        assert_eq!((small_parent.kind, new.len()), (NodeKind::Process, 2));
        // The next node, process 8's root, is node 2^30 + 1, whose tag
        // wraps to process 7's root's (node 1). Frames are keyed by path,
        // so the two frames' keys differ too; a false hit would need one
        // key under two such parents (a frame under a user node and under
        // the kernel node of the same address, 2^30 nodes apart), which
        // the guard on big parents still rules out.
        t.tree.len = (1 << 30) + 1;
        let big = t.leaf(&ch, key(8), &stack, &mut new);
        assert_ne!(big, small, "process 8's frame is process 7's node");
        let last = new.last().expect("a new node for process 8's frame");
        assert_eq!((last.addr, last.parent), (0x40, (1 << 30) + 1));
        // And each is found again.
        assert_eq!(t.leaf(&ch, key(7), &stack, &mut new), small);
        assert_eq!(t.leaf(&ch, key(8), &stack, &mut new), big);
    }
}
