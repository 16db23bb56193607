//! Memos that let the replay skip work for samples like recent ones.
//!
//! On a big recording most samples repeat an address the same thread hit a
//! moment ago, and most call stacks share their outer frames with the
//! thread's previous stack. Resolving and interning those again is what
//! the replay spent its time on (probing tables far bigger than the
//! cache), so both are remembered, and trusted only while nothing that
//! could change the answer has happened since.

use rustc_hash::FxHashMap;

use super::node_table::child_key;
use crate::analyze::profile::Counts;

/// When each thing a resolution depends on last changed. A sample's
/// command and location depend on its process's COMM, FORK and MMAP
/// history and, for kernel addresses, on the BPF symbol events; every such
/// record takes the next sequence number.
#[derive(Default)]
pub struct Changes {
    seq: u32,
    processes: FxHashMap<u32, u32>,
    kernel: u32,
}

impl Changes {
    /// A COMM, FORK or MMAP of process `pid`.
    pub fn process(&mut self, pid: u32) {
        self.seq += 1;
        self.processes.insert(pid, self.seq);
    }

    /// A KSYMBOL or BPF_EVENT.
    pub fn kernel(&mut self) {
        self.seq += 1;
        self.kernel = self.seq;
    }

    pub fn now(&self) -> u32 {
        self.seq
    }

    /// The last change that matters to a sample of `pid`.
    pub fn last(&self, pid: u32, kernel: bool) -> u32 {
        let p = self.processes.get(&pid).copied().unwrap_or(0);
        depends_on(p, self.kernel, kernel)
    }
}

/// Which of its process's last change and the BPF symbols' last change a
/// sample depends on: the BPF symbols matter to kernel addresses only.
pub fn depends_on(process: u32, bpf_symbols: u32, kernel: bool) -> u32 {
    match kernel {
        true => process.max(bpf_symbols),
        false => process,
    }
}

/// What identifies a sample to the memos.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SampleKey {
    pub tid: u32,
    pub pid: u32,
    pub ip: u64,
    /// Sampled in kernel mode.
    pub kernel: bool,
}

#[derive(Clone, Copy)]
struct Slot {
    ip: u64,
    tid: u32,
    pid: u32,
    seq: u32,
    kernel: bool,
    row: u32,
    /// Counted here since the slot was filled, not yet added to the row.
    counts: Counts,
}

const EMPTY: Slot = Slot {
    ip: 0,
    tid: 0,
    pid: 0,
    seq: 0,
    kernel: false,
    row: u32::MAX,
    counts: Counts {
        samples: 0,
        period: 0,
    },
};

const SLOTS: usize = 1 << 13;

/// A direct-mapped cache of (thread, address, mode) → aggregation row that
/// also holds the row's counts until the slot is reused: small enough to
/// stay in the CPU cache, where the rows table is not.
pub struct RowCache {
    slots: Vec<Slot>,
}

impl Default for RowCache {
    fn default() -> Self {
        RowCache {
            slots: vec![EMPTY; SLOTS],
        }
    }
}

impl RowCache {
    fn index(k: &SampleKey) -> usize {
        let h =
            (k.ip ^ ((k.tid as u64) << 40) ^ k.kernel as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (h >> (64 - 13)) as usize
    }

    /// Count a sample on the row remembered for it, if that is still
    /// right, and return the row.
    #[inline]
    pub fn count(&mut self, ch: &Changes, k: SampleKey, period: u64) -> Option<u32> {
        let s = &mut self.slots[Self::index(&k)];
        let hit = s.row != u32::MAX
            && s.ip == k.ip
            && s.tid == k.tid
            && s.pid == k.pid
            && s.kernel == k.kernel
            && s.seq >= ch.last(k.pid, k.kernel);
        if !hit {
            return None;
        }
        s.counts.add(period);
        Some(s.row)
    }

    /// Remember `row` for samples like `k` (the caller counted this one
    /// on the row); returns the counts the slot held for the row it
    /// forgets.
    pub fn put(&mut self, ch: &Changes, k: SampleKey, row: u32) -> Option<(u32, Counts)> {
        let counts = Counts::default();
        let old = std::mem::replace(
            &mut self.slots[Self::index(&k)],
            Slot {
                ip: k.ip,
                tid: k.tid,
                pid: k.pid,
                seq: ch.now(),
                kernel: k.kernel,
                row,
                counts,
            },
        );
        (old.row != u32::MAX).then_some((old.row, old.counts))
    }

    /// Every count still held, by row.
    pub fn drain(&mut self) -> impl Iterator<Item = (u32, Counts)> + '_ {
        self.slots
            .iter_mut()
            .map(|s| std::mem::replace(s, EMPTY))
            .filter(|s| s.row != u32::MAX)
            .map(|s| (s.row, s.counts))
    }
}

/// One of a thread's recent call stacks: its frames leaf first, as
/// (address, kernel mode), and the key and stack-tree node of each.
#[derive(Default)]
struct Previous {
    seq: u32,
    frames: Vec<(u64, bool)>,
    keys: Vec<u64>,
    nodes: Vec<u32>,
}

/// How many recent stacks are kept per thread: a thread's samples often
/// alternate between a few paths (a loop calling two functions), and the
/// stack two samples back may share more than the last one.
const RECENT_STACKS: usize = 4;

#[derive(Default)]
struct Thread {
    pid: u32,
    recent: [Previous; RECENT_STACKS],
    /// The slot to overwrite next.
    next: usize,
}

/// Per-thread recent stacks, so that the frames a stack shares with one of
/// them, counted from the root, are neither resolved nor interned again.
#[derive(Default)]
pub struct StackCache {
    threads: FxHashMap<u32, Thread>,
    frames: Vec<(u64, bool)>,
    keys: Vec<u64>,
    nodes: Vec<u32>,
}

/// The frames of a stack that no recent stack shares, leaf first: to be
/// interned from the last (the outermost) to the first, under `parent`.
pub struct Run<'a> {
    pub parent: u32,
    pub frames: &'a [(u64, bool)],
    /// Each frame's key: [`child_key`] of its path from the root.
    pub keys: &'a [u64],
    /// Where the node of each frame goes.
    pub nodes: &'a mut [u32],
}

impl StackCache {
    /// The leaf node of a sample's stack. `raw` is the callchain as
    /// recorded (leaf first, with context markers); `intern` interns the
    /// frames no recent stack shares; the outermost frame goes under
    /// `root` (node, key), which must be the same while nothing changed
    /// for the process.
    pub fn leaf(
        &mut self,
        ch: &Changes,
        k: SampleKey,
        raw: &[u64],
        (root, root_key): (u32, u64),
        intern: impl FnOnce(Run<'_>),
    ) -> u32 {
        let pid = k.pid;
        self.frames.clear();
        frames_of(raw, k.ip, k.kernel, &mut self.frames);
        let t = self.threads.entry(k.tid).or_default();
        if t.pid != pid {
            *t = Thread {
                pid,
                ..Thread::default()
            };
        }
        let valid_since = ch.last(pid, true);
        let (mut best, mut shared) = (0, 0);
        for (i, prev) in t.recent.iter().enumerate() {
            if prev.seq < valid_since || prev.frames.is_empty() {
                continue;
            }
            let n = self
                .frames
                .iter()
                .rev()
                .zip(prev.frames.iter().rev())
                .take_while(|(a, b)| a == b)
                .count();
            if n > shared {
                (best, shared) = (i, n);
            }
        }
        let n = self.frames.len();
        self.nodes.clear();
        self.nodes.resize(n, 0);
        self.keys.clear();
        self.keys.resize(n, 0);
        let (mut parent, mut key) = (root, root_key);
        if shared > 0 {
            let prev = &t.recent[best];
            let from = prev.frames.len() - shared;
            (parent, key) = (prev.nodes[from], prev.keys[from]);
            self.nodes[n - shared..].copy_from_slice(&prev.nodes[from..]);
            self.keys[n - shared..].copy_from_slice(&prev.keys[from..]);
        }
        let run = n - shared;
        for i in (0..run).rev() {
            key = child_key(key, self.frames[i].0);
            self.keys[i] = key;
        }
        if run > 0 {
            intern(Run {
                parent,
                frames: &self.frames[..run],
                keys: &self.keys[..run],
                nodes: &mut self.nodes[..run],
            });
        }
        let leaf = self.nodes[0];
        let slot = &mut t.recent[t.next];
        t.next = (t.next + 1) % RECENT_STACKS;
        slot.seq = ch.now();
        std::mem::swap(&mut slot.frames, &mut self.frames);
        std::mem::swap(&mut slot.keys, &mut self.keys);
        std::mem::swap(&mut slot.nodes, &mut self.nodes);
        leaf
    }
}

/// A callchain's frames, leaf first, each with the mode its context marker
/// gives it; the sample's own address when the chain has none.
fn frames_of(raw: &[u64], ip: u64, kernel: bool, out: &mut Vec<(u64, bool)>) {
    use perfdata::context;
    let mut in_kernel = kernel;
    for &addr in raw {
        if addr >= context::MAX {
            in_kernel = matches!(addr, context::KERNEL | context::GUEST_KERNEL);
            continue;
        }
        out.push((addr, in_kernel));
    }
    if out.is_empty() {
        out.push((ip, kernel));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use perfdata::context;

    /// Interns (parent, address) pairs, counting how often it is asked.
    #[derive(Default)]
    struct Tree {
        nodes: FxHashMap<(u32, u64), u32>,
        asked: usize,
    }

    impl Tree {
        fn child(&mut self, parent: u32, addr: u64) -> u32 {
            self.asked += 1;
            let n = self.nodes.len() as u32 + 1;
            *self.nodes.entry((parent, addr)).or_insert(n)
        }
    }

    fn leaf(c: &mut StackCache, ch: &Changes, t: &mut Tree, pid: u32, raw: &[u64]) -> u32 {
        let k = SampleKey {
            tid: 1,
            pid,
            ip: 0,
            kernel: false,
        };
        c.leaf(ch, k, raw, (0, 0), |run| {
            let mut node = run.parent;
            for i in (0..run.frames.len()).rev() {
                node = t.child(node, run.frames[i].0);
                run.nodes[i] = node;
            }
        })
    }

    #[test]
    fn shared_outer_frames_are_not_interned_again() {
        let (mut c, ch, mut t, mut fresh) = (
            StackCache::default(),
            Changes::default(),
            Tree::default(),
            Tree::default(),
        );
        let a = [context::USER, 10, 20, 30, 40];
        let b = [context::USER, 11, 21, 30, 40];
        let la = leaf(&mut c, &ch, &mut t, 7, &a);
        let lb = leaf(&mut c, &ch, &mut t, 7, &b);
        assert_eq!(t.asked, 4 + 2, "only the two differing frames of b");
        // The same leaves as interning every frame from the root.
        let mut walk = |raw: &[u64]| {
            raw[1..]
                .iter()
                .rev()
                .fold(0, |node, &addr| fresh.child(node, addr))
        };
        assert_eq!((la, lb), (walk(&a), walk(&b)));
    }

    #[test]
    fn a_thread_alternating_between_two_paths_reuses_both() {
        let (mut c, ch, mut t) = (StackCache::default(), Changes::default(), Tree::default());
        let a = [context::USER, 10, 20, 30, 40];
        let b = [context::USER, 11, 21, 31, 40];
        let la = leaf(&mut c, &ch, &mut t, 7, &a);
        leaf(&mut c, &ch, &mut t, 7, &b);
        let asked = t.asked;
        assert_eq!(leaf(&mut c, &ch, &mut t, 7, &a), la);
        assert_eq!(t.asked, asked, "a is still remembered behind b");
    }

    #[test]
    fn a_change_to_the_process_or_the_mode_forgets_the_stack() {
        let (mut c, mut ch, mut t) = (StackCache::default(), Changes::default(), Tree::default());
        let a = [context::USER, 10, 20];
        leaf(&mut c, &ch, &mut t, 7, &a);
        ch.process(7);
        leaf(&mut c, &ch, &mut t, 7, &a);
        assert_eq!(
            t.asked, 4,
            "an MMAP since means every frame is resolved again"
        );
        ch.process(8);
        leaf(&mut c, &ch, &mut t, 7, &a);
        assert_eq!(t.asked, 4, "another process's MMAP changes nothing");
        leaf(&mut c, &ch, &mut t, 7, &[context::KERNEL, 10, 20]);
        assert_eq!(
            t.asked, 6,
            "the same addresses in another mode are other frames"
        );
    }

    #[test]
    fn the_row_cache_answers_only_while_nothing_changed() {
        let (mut rc, mut ch) = (RowCache::default(), Changes::default());
        let k = SampleKey {
            tid: 1,
            pid: 7,
            ip: 0x1000,
            kernel: false,
        };
        assert_eq!(rc.put(&ch, k, 5), None);
        assert_eq!(rc.count(&ch, k, 10), Some(5));
        assert_eq!(rc.count(&ch, SampleKey { kernel: true, ..k }, 1), None);
        let reused = SampleKey { pid: 8, ..k };
        assert_eq!(
            rc.count(&ch, reused, 1),
            None,
            "tid reused by another process"
        );
        ch.kernel();
        assert_eq!(
            rc.count(&ch, k, 10),
            Some(5),
            "user addresses ignore BPF events"
        );
        ch.process(7);
        assert_eq!(rc.count(&ch, k, 1), None);
        // Refilling the slot hands back what it counted for the old row.
        let held = rc.put(&ch, k, 6);
        assert_eq!(rc.count(&ch, k, 1), Some(6));
        assert_eq!(
            held,
            Some((
                5,
                Counts {
                    samples: 2,
                    period: 20
                }
            ))
        );
        let left: Vec<_> = rc.drain().collect();
        assert_eq!(
            left,
            vec![(
                6,
                Counts {
                    samples: 1,
                    period: 1
                }
            )]
        );
        assert_eq!(rc.drain().count(), 0);
    }
}
