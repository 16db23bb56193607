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
    /// Lists sorted by key, each key once in a list: one per worker.
    lists: Vec<Vec<(Key, Counts)>>,
    /// Samples of events other than the sampling one, by attr index.
    pub(super) other: Vec<u64>,
    pub(super) total: Counts,
    pub(super) first_time: u64,
    pub(super) last_time: u64,
}

impl Tally {
    pub(super) fn new(attrs: usize) -> Tally {
        Tally {
            lists: Vec::new(),
            other: vec![0; attrs],
            total: Counts::default(),
            first_time: u64::MAX,
            last_time: 0,
        }
    }

    /// A tally of `counts`, sorted by key, each key once.
    pub(super) fn of(counts: Vec<(Key, Counts)>) -> Tally {
        let mut t = Tally::new(0);
        t.lists.push(counts);
        t
    }

    pub(super) fn merge(&mut self, o: Tally) {
        self.lists
            .extend(o.lists.into_iter().filter(|l| !l.is_empty()));
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

    /// Every count in key order, equal keys added up: the workers' lists
    /// joined as the replay reads them, without a merged copy.
    pub(super) fn counts(&mut self) -> Merged {
        Merged {
            heads: std::mem::take(&mut self.lists)
                .into_iter()
                .map(|l| l.into_iter().peekable())
                .collect(),
        }
    }
}

pub(super) struct Merged {
    heads: Vec<std::iter::Peekable<std::vec::IntoIter<(Key, Counts)>>>,
}

impl Iterator for Merged {
    type Item = (Key, Counts);

    fn next(&mut self) -> Option<(Key, Counts)> {
        let key = self
            .heads
            .iter_mut()
            .filter_map(|h| h.peek().map(|x| x.0))
            .min()?;
        let mut sum = Counts::default();
        for h in &mut self.heads {
            if let Some((_, c)) = h.next_if(|x| x.0 == key) {
                sum.merge(c);
            }
        }
        Some((key, sum))
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
            other: vec![1, 2],
            total: c(1),
            first_time: 5,
            last_time: 6,
            ..Tally::of(counts)
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
        a.merge(tally(vec![(key(0, 3), c(1))]));
        a.merge(Tally::new(0));
        let want = vec![
            (key(0, 1), c(1)),
            (key(0, 2), c(4)),
            (key(0, 3), c(8)),
            (key(2, 1), c(3)),
            (key(3, 0), c(6)),
        ];
        assert_eq!(a.counts().collect::<Vec<_>>(), want);
        assert_eq!(
            (a.other, a.total, a.first_time, a.last_time),
            (vec![3, 6], c(3), 2, 9)
        );
    }
}
