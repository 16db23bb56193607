//! Counting samples while the file is read, before the side band is known:
//! by thread, address and mode, with the first and last time each count
//! saw. Once the side band is in, a count whose samples all fell strictly
//! between the times of the same two changes that matter to it is settled
//! whole; the few that straddle a change, or share its timestamp (only the
//! file offset would tell them apart), are counted again, sample by
//! sample.

use std::sync::mpsc::Sender;

use rustc_hash::FxHashSet;

use super::history::{History, Seen};
use super::keys::{Key, Site, Tally};
use super::Msg;
use crate::analyze::map_timeline::{At, MapTimeline};
use crate::analyze::profile::Counts;
use crate::symbolize::{DsoId, Loc};

/// Whose samples a raw count holds: thread (or what stands for it when
/// threads merge), address and mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Who {
    pub pid: u32,
    pub tid: u32,
    pub ip: u64,
    pub kernel: bool,
}

/// A raw count: its samples, the times of the earliest and latest of
/// them (a piece is in file order, not in time order), and the first and
/// last piece it took samples from. With its [`Who`], 64 bytes: a cache
/// line per slot.
#[derive(Debug, Clone, Copy)]
pub(super) struct Span {
    pub counts: Counts,
    pub first: u64,
    pub last: u64,
    pub pieces: (u32, u32),
}

/// A slot of the cache, on a cache line of its own.
#[derive(Clone, Copy)]
#[repr(align(64))]
struct Slot(Who, Span);

/// Slots of a reader's cache of recent counts: most samples repeat an
/// address hit a moment ago, and a small table keeps them in the CPU
/// cache and the list of what left it short.
const SLOTS: usize = 1 << 12;

const EMPTY: Slot = Slot(
    Who {
        pid: 0,
        tid: 0,
        ip: 0,
        kernel: false,
    },
    Span {
        counts: Counts {
            samples: 0,
            period: 0,
        },
        first: 0,
        last: 0,
        pieces: (0, 0),
    },
);

fn slot_of(pid: u32, tid: u32, ip: u64) -> usize {
    let h = (ip ^ (u64::from(tid) << 40) ^ u64::from(pid)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> (64 - SLOTS.trailing_zeros())) as usize
}

/// One reader's raw counts, over all the pieces it read: the cache, and
/// what left it, in a list. Appending costs less than a hash table, whose
/// misses a table of this size pays in memory latency; equal counts are
/// added up once settled, by sorting.
pub(super) struct RawCounts {
    /// Empty while 0 samples.
    slots: Vec<Slot>,
    spilled: Vec<(Who, Span)>,
    /// The piece being read.
    piece: u32,
}

impl RawCounts {
    pub fn new() -> RawCounts {
        RawCounts {
            slots: vec![EMPTY; SLOTS],
            spilled: Vec::new(),
            piece: 0,
        }
    }

    /// The samples that follow are piece `i`'s.
    pub fn piece(&mut self, i: usize) {
        self.piece = i as u32;
    }

    pub fn add(&mut self, who: Who, time: u64, period: u64) {
        let slot = &mut self.slots[slot_of(who.pid, who.tid, who.ip)];
        if slot.1.counts.samples > 0 && slot.0 == who {
            let s = &mut slot.1;
            s.counts.add(period);
            s.first = s.first.min(time);
            s.last = s.last.max(time);
            s.pieces.1 = self.piece;
            return;
        }
        let new = Span {
            counts: Counts { samples: 1, period },
            first: time,
            last: time,
            pieces: (self.piece, self.piece),
        };
        let Slot(old, span) = std::mem::replace(slot, Slot(who, new));
        if span.counts.samples > 0 {
            self.spilled.push((old, span));
        }
    }

    /// Every count, the cache's included; one who may have several.
    pub fn finish(mut self) -> Vec<(Who, Span)> {
        let slots = std::mem::take(&mut self.slots);
        let used = slots.into_iter().filter(|x| x.1.counts.samples > 0);
        self.spilled.extend(used.map(|Slot(w, s)| (w, s)));
        self.spilled
    }
}

/// The counts that straddle a change: whose, and the ranges of pieces
/// that hold their samples (a reader takes pieces in file order).
pub(super) struct Straddle {
    pub who: FxHashSet<Who>,
    pub pieces: Vec<(u32, u32)>,
}

impl Straddle {
    /// Whether piece `i` holds samples to count again.
    pub fn in_piece(&self, i: usize) -> bool {
        let i = i as u32;
        self.pieces.iter().any(|&(a, b)| a <= i && i <= b)
    }
}

/// Settles raw counts into [`Key`]s once the side band is known.
pub(super) struct Worker<'a> {
    pub merge: bool,
    pub history: &'a History,
    pub maps: &'a MapTimeline,
    pub tx: Sender<Msg>,
}

/// Keys counted so far, one key perhaps many times, and the shared
/// objects asked to load.
#[derive(Default)]
pub(super) struct KeyCounts {
    counts: Vec<(Key, Counts)>,
    sent: Vec<bool>,
}

impl Worker<'_> {
    /// Where a sample of `who` at `at` went, and between which times any
    /// sample of `who` goes there too.
    fn classify(&self, who: &Who, at: At) -> (Seen, Site) {
        let bpf = who.kernel && self.history.may_be_bpf(who.ip);
        if who.kernel {
            return match self.merge && !bpf {
                // Merging threads, a location is all a count needs, and
                // only BPF code makes a kernel one depend on the time.
                true => (Seen::ALWAYS, Site::Found(Loc::Kernel(who.ip))),
                // By thread, the thread's command too.
                false => (
                    self.history.last_name(who.pid, bpf, at),
                    Site::Kernel(who.ip),
                ),
            };
        }
        let (loc, from, until) = self.maps.locate(who.pid, who.ip, at);
        let Some(site) = Site::found(loc) else {
            return (self.history.last(who.pid, false, at), Site::User(who.ip));
        };
        let name = match self.merge {
            true => Seen::ALWAYS,
            false => self.history.last_name(who.pid, false, at),
        };
        let seen = Seen {
            seq: name.seq,
            from: from.max(name.from),
            until: until.min(name.until),
        };
        (seen, site)
    }

    /// Settle what holds whole. The rest straddles a change, and is
    /// counted again sample by sample: its threads' addresses are
    /// returned, with the pieces that hold their samples. A thread's
    /// address may have several counts (it left the cache and came back):
    /// if one straddles, none of them is settled here, as the recount
    /// counts all of their samples.
    pub fn settle(&self, raw: Vec<(Who, Span)>, keys: &mut KeyCounts) -> Straddle {
        let mut who = FxHashSet::default();
        let start = keys.counts.len();
        keys.counts.reserve(raw.len());
        for (w, span) in &raw {
            let (seen, site) = self.classify(w, (span.first, 0));
            // Binaries load while the counts are settled and sorted.
            if let Site::Found(Loc::User(dso, _)) = site {
                self.load(&mut keys.sent, dso);
            }
            // Found for the first time at offset 0, the answer holds for
            // every sample if their times are strictly between the changes.
            if seen.holds_between(span.first, span.last) {
                keys.push(self.merge, w, seen.seq, site, span.counts);
            } else {
                who.insert(*w);
            }
        }
        let mut pieces = Vec::new();
        if !who.is_empty() {
            keys.counts.truncate(start);
            for (w, span) in &raw {
                if who.contains(w) {
                    pieces.push(span.pieces);
                    continue;
                }
                let (seen, site) = self.classify(w, (span.first, 0));
                keys.push(self.merge, w, seen.seq, site, span.counts);
            }
        }
        Straddle { who, pieces }
    }

    /// Have the symbols of `dso` loaded, once.
    fn load(&self, sent: &mut Vec<bool>, dso: DsoId) {
        let i = dso as usize;
        if sent.len() <= i {
            sent.resize(i + 1, false);
        }
        if !std::mem::replace(&mut sent[i], true) {
            let _ = self.tx.send(Msg::Dso(dso));
        }
    }

    /// Count one sample of a count that straddles a change.
    pub fn one(&self, keys: &mut KeyCounts, who: &Who, at: At, period: u64) {
        let (seen, site) = self.classify(who, at);
        if let Site::Found(Loc::User(dso, _)) = site {
            self.load(&mut keys.sent, dso);
        }
        let one = Counts { samples: 1, period };
        keys.push(self.merge, who, seen.seq, site, one);
    }

    /// The counts sorted by key, each key once, on this core, for the
    /// replay; the binaries of user counts are asked to load.
    pub fn tally(&self, mut keys: KeyCounts) -> Tally {
        let mut counts = std::mem::take(&mut keys.counts);
        counts.sort_unstable_by_key(|&(k, _)| k);
        let mut unique: Vec<(Key, Counts)> = Vec::with_capacity(counts.len());
        for (k, c) in counts {
            match unique.last_mut() {
                Some(last) if last.0 == k => last.1.merge(c),
                _ => unique.push((k, c)),
            }
        }
        // Addresses no map was found for may still be in one.
        for (k, _) in &unique {
            if let Site::User(ip) = k.site() {
                if let Some(dso) = self.maps.any_dso(k.pid, ip) {
                    self.load(&mut keys.sent, dso);
                }
            }
        }
        Tally::of(unique)
    }
}

impl KeyCounts {
    fn push(&mut self, merge: bool, who: &Who, seq: u32, site: Site, counts: Counts) {
        // Merging threads, counts by location stand for every thread and
        // process.
        let (pid, tid) = match (merge, site) {
            (true, Site::Found(_)) => (0, 0),
            _ => (who.pid, who.tid),
        };
        self.counts.push((Key::new(seq, pid, tid, site), counts));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::events::{CommEvent, Event};
    use rustc_hash::FxHashMap;

    fn who(ip: u64) -> Who {
        Who {
            pid: 3,
            tid: 4,
            ip,
            kernel: false,
        }
    }

    #[test]
    fn raw_counts_add_up_and_span_their_samples() {
        let mut raw = RawCounts::new();
        // More addresses than slots, so that counts leave the cache.
        let n = 3 * SLOTS as u64;
        for round in 0..3u64 {
            for ip in 0..n {
                raw.add(who(ip), 100 - round, 10 + round);
            }
        }
        let mut counts: FxHashMap<Who, Span> = FxHashMap::default();
        for (w, s) in raw.finish() {
            counts
                .entry(w)
                .and_modify(|x| {
                    x.counts.merge(s.counts);
                    x.first = x.first.min(s.first);
                    x.last = x.last.max(s.last);
                })
                .or_insert(s);
        }
        assert_eq!(counts.len(), n as usize);
        for s in counts.values() {
            assert_eq!(s.counts.samples, 3);
            assert_eq!(s.counts.period, 33);
            assert_eq!((s.first, s.last), (98, 100));
        }
        let mut other = RawCounts::new();
        other.piece(3);
        other.add(
            Who {
                kernel: true,
                ..who(1)
            },
            5,
            1,
        );
        let other = other.finish();
        assert_eq!(other.len(), 1, "the mode tells counts apart");
        assert_eq!(other[0].1.pieces, (3, 3));
    }

    /// A process renamed (exec) at time 50: by thread, its kernel samples
    /// before and after it are on different rows.
    fn renamed_at_50() -> Vec<(At, Event)> {
        let comm = CommEvent {
            pid: 7,
            tid: 7,
            comm: "b".into(),
        };
        vec![((50, 500), Event::Comm(Box::new(comm)))]
    }

    #[test]
    fn a_thread_address_with_a_count_that_straddles_is_left_whole_to_the_recount() {
        let events = renamed_at_50();
        let history = History::of(&events);
        let maps = MapTimeline::of(&events, |_| None);
        let (tx, _rx) = std::sync::mpsc::channel();
        let w = Worker {
            merge: false,
            history: &history,
            maps: &maps,
            tx,
        };
        let ip = 0xffff_ffff_8100_0000;
        let who = Who {
            pid: 7,
            tid: 7,
            ip,
            kernel: true,
        };
        let other = Who { ip: ip + 1, ..who };
        let span = |first: u64, last: u64, n: u64, pieces| Span {
            counts: Counts {
                samples: n,
                period: n,
            },
            first,
            last,
            pieces,
        };
        let raw = vec![
            (who, span(10, 20, 2, (0, 0))),
            (other, span(30, 30, 1, (0, 0))),
            (who, span(40, 60, 3, (1, 2))),
            (other, span(60, 70, 4, (2, 2))),
        ];
        let mut keys = KeyCounts::default();
        let s = w.settle(raw, &mut keys);
        // Neither of its counts is settled here, even the one that holds:
        // the recount reads all of its samples, in the pieces of both.
        assert_eq!(s.who.iter().collect::<Vec<_>>(), [&who]);
        assert!((0..3).all(|i| s.in_piece(i)) && !s.in_piece(3));
        let got: Vec<(u32, Site, u64)> = w
            .tally(keys)
            .counts()
            .map(|(k, c)| (k.seq, k.site(), c.samples))
            .collect();
        assert_eq!(
            got,
            [(0, Site::Kernel(ip + 1), 1), (1, Site::Kernel(ip + 1), 4)]
        );
        // Sample by sample, each side of the change is its own key.
        let mut keys = KeyCounts::default();
        for (time, n) in [(10, 1), (20, 1), (40, 1), (60, 2)] {
            for _ in 0..n {
                w.one(&mut keys, &who, (time, 0), 1);
            }
        }
        let got: Vec<(u32, u64)> = w
            .tally(keys)
            .counts()
            .map(|(k, c)| (k.seq, c.samples))
            .collect();
        assert_eq!(got, [(0, 3), (1, 2)]);
    }
}
