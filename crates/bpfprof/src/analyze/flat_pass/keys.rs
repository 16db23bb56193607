//! What the workers count by, and their counts merged in key order.

use crate::analyze::profile::Counts;
use crate::symbolize::Loc;

/// Samples counted alike: same thread, address, mode and last change
/// seen; or, when threads merge, same location wherever it could be found
/// while counting (all but code that may be BPF). A [`Site`] packed in
/// `tag` and `addr`, so that a key takes 24 bytes: a report by thread has
/// hundreds of thousands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct Key {
    pub(super) seq: u32,
    /// What `addr` is: see the `TAG_` constants.
    tag: u32,
    pub(super) pid: u32,
    pub(super) tid: u32,
    addr: u64,
}

// Tags of found locations sort as `Loc` does, so that counts by location
// come out of the tally in location order.
const TAG_USER: u32 = 0;
const TAG_KERNEL: u32 = 1;
const TAG_FOUND_KERNEL: u32 = 2;
const TAG_FOUND_BPF: u32 = 3;
/// Plus the shared object's id.
const TAG_FOUND_USER: u32 = 4;
const TAG_FOUND_UNKNOWN: u32 = u32::MAX;

impl Key {
    pub(super) fn new(seq: u32, pid: u32, tid: u32, site: Site) -> Key {
        let (tag, addr) = match site {
            Site::User(ip) => (TAG_USER, ip),
            Site::Kernel(ip) => (TAG_KERNEL, ip),
            Site::Found(Loc::Kernel(a)) => (TAG_FOUND_KERNEL, a),
            Site::Found(Loc::Bpf(b)) => (TAG_FOUND_BPF, u64::from(b)),
            Site::Found(Loc::User(dso, rel)) => (TAG_FOUND_USER + dso, rel),
            Site::Found(Loc::Unknown(a)) => (TAG_FOUND_UNKNOWN, a),
        };
        Key {
            seq,
            tag,
            pid,
            tid,
            addr,
        }
    }

    pub(super) fn site(&self) -> Site {
        match self.tag {
            TAG_USER => Site::User(self.addr),
            TAG_KERNEL => Site::Kernel(self.addr),
            TAG_FOUND_KERNEL => Site::Found(Loc::Kernel(self.addr)),
            TAG_FOUND_BPF => Site::Found(Loc::Bpf(self.addr as u32)),
            TAG_FOUND_UNKNOWN => Site::Found(Loc::Unknown(self.addr)),
            t => Site::Found(Loc::User(t - TAG_FOUND_USER, self.addr)),
        }
    }
}

/// Where a count's samples went: found while counting, or an address
/// left for the replay to locate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Site {
    Found(Loc),
    Kernel(u64),
    User(u64),
}

impl Site {
    /// `loc`, if a [`Key`] can hold it (the shared object's id fits its
    /// tag; four billion binaries would not).
    pub(super) fn found(loc: Loc) -> Option<Site> {
        match loc {
            Loc::User(dso, _) if dso >= TAG_FOUND_UNKNOWN - TAG_FOUND_USER => None,
            _ => Some(Site::Found(loc)),
        }
    }
}

pub(super) struct Tally {
    /// Sorted by key, each key once.
    pub(super) counts: Vec<(Key, Counts)>,
    /// Samples of events other than the sampling one, by attr index.
    pub(super) other: Vec<u64>,
    pub(super) total: Counts,
    pub(super) first_time: u64,
    pub(super) last_time: u64,
}

impl Tally {
    pub(super) fn new(attrs: usize) -> Tally {
        Tally {
            counts: Vec::new(),
            other: vec![0; attrs],
            total: Counts::default(),
            first_time: u64::MAX,
            last_time: 0,
        }
    }

    pub(super) fn merge(&mut self, o: Tally) {
        if self.counts.is_empty() {
            self.counts = o.counts;
        } else if !o.counts.is_empty() {
            self.merge_counts(o.counts);
        }
        if self.other.len() < o.other.len() {
            self.other.resize(o.other.len(), 0);
        }
        for (a, n) in self.other.iter_mut().zip(o.other) {
            *a += n;
        }
        self.total.merge(o.total);
        self.first_time = self.first_time.min(o.first_time);
        self.last_time = self.last_time.max(o.last_time);
    }

    fn merge_counts(&mut self, counts: Vec<(Key, Counts)>) {
        let mut merged = Vec::with_capacity(self.counts.len() + counts.len());
        let (mut a, mut b) = (
            std::mem::take(&mut self.counts).into_iter().peekable(),
            counts.into_iter().peekable(),
        );
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if x.0 == y.0 => {
                    let (k, mut c) = a.next().expect("peeked");
                    c.merge(b.next().expect("peeked").1);
                    (k, c)
                }
                (Some(x), Some(y)) if x.0 < y.0 => a.next().expect("peeked"),
                (Some(_), Some(_)) | (None, Some(_)) => b.next().expect("peeked"),
                (Some(_), None) => a.next().expect("peeked"),
                (None, None) => break,
            };
            merged.push(next);
        }
        self.counts = merged;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_hold_every_site_and_sort_found_ones_as_locations_sort() {
        let locs = [
            Loc::Kernel(0xffff_ffff_8100_0000),
            Loc::Bpf(7),
            Loc::User(0, 0x10),
            Loc::User(3, 0x10),
            Loc::User(3, 0x20),
            Loc::User(TAG_FOUND_UNKNOWN - TAG_FOUND_USER - 1, 0),
            Loc::Unknown(0x1234),
        ];
        for w in locs.windows(2) {
            assert!(w[0] < w[1], "the list is in location order");
        }
        let keys: Vec<Key> = locs
            .iter()
            .map(|&l| Key::new(0, 0, 0, Site::found(l).expect("fits")))
            .collect();
        for (k, &l) in keys.iter().zip(&locs) {
            assert_eq!(k.site(), Site::Found(l));
        }
        for w in keys.windows(2) {
            assert!(w[0] < w[1], "{:?} !< {:?}", w[0], w[1]);
        }
        for raw in [Site::User(5), Site::Kernel(5)] {
            assert_eq!(Key::new(3, 1, 2, raw).site(), raw);
        }
        // A shared object id past what a tag holds is left to the replay.
        assert_eq!(
            Site::found(Loc::User(TAG_FOUND_UNKNOWN - TAG_FOUND_USER, 0)),
            None
        );
        assert_eq!(std::mem::size_of::<Key>(), 24);
    }

    #[test]
    fn tallies_merge_sorted_and_add_equal_keys() {
        let key = |seq, ip| Key::new(seq, 1, 1, Site::User(ip));
        let c = |n| Counts {
            samples: n,
            period: 10 * n,
        };
        let tally = |counts| Tally {
            counts,
            other: vec![1, 2],
            total: c(1),
            first_time: 5,
            last_time: 6,
        };
        let mut a = tally(vec![
            (key(0, 1), c(1)),
            (key(0, 3), c(2)),
            (key(2, 1), c(3)),
        ]);
        let b = Tally {
            first_time: 2,
            last_time: 9,
            ..tally(vec![
                (key(0, 2), c(4)),
                (key(0, 3), c(5)),
                (key(3, 0), c(6)),
            ])
        };
        a.merge(b);
        let want = vec![
            (key(0, 1), c(1)),
            (key(0, 2), c(4)),
            (key(0, 3), c(7)),
            (key(2, 1), c(3)),
            (key(3, 0), c(6)),
        ];
        assert_eq!(a.counts, want);
        assert_eq!(
            (a.other, a.total, a.first_time, a.last_time),
            (vec![2, 4], c(2), 2, 9)
        );
    }
}
