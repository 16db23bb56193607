//! Where perf's reader delivers each record, for the flat pass, which
//! counts samples out of order and must still see them in that order.
//!
//! perf's reader (and [`perfdata::Records`]) queues records and, at each
//! FINISHED_ROUND, delivers those no later than the latest time seen
//! before the round end before it, sorted by time. So the delivered order
//! is time order, except for a record that arrives when its time has
//! already been delivered (a ring flushed late, on a loaded machine): it
//! comes at the next delivery, before that delivery's other records. The
//! flat pass places every record by an [`At`] that sorts as delivered.

use rustc_hash::FxHashMap;

/// A record's place in delivered order: its time and file offset (how
/// the reader breaks ties), and 0; for a record delivered late, the limit
/// and offset of the round end it missed, and its place from 1 among the
/// late records of its delivery (by time, then offset).
pub(super) type At = (u64, u64, u32);

/// Before every record.
pub(super) const FIRST: At = (0, 0, 0);

/// After every record.
pub(super) const NEVER: At = (u64::MAX, u64::MAX, u32::MAX);

/// The in-order place of a record (see [`Late::at`] for the others).
pub(super) fn at(time: u64, offset: u64) -> At {
    (time, offset, 0)
}

/// The round ends of a piece of the file, read with it.
#[derive(Debug, Default, Clone)]
pub(super) struct Rounds {
    /// Each round end's offset, and the latest time of the piece's records
    /// between the one before it (or the piece's start) and it.
    ends: Vec<(u64, u64)>,
    /// The latest time since the last round end (or the start).
    tail: u64,
}

impl Rounds {
    /// A record perf's reader queues (a SAMPLE or side-band record).
    pub fn record(&mut self, time: u64) {
        self.tail = self.tail.max(time);
    }

    /// A FINISHED_ROUND at `offset`.
    pub fn round_end(&mut self, offset: u64) {
        self.ends.push((offset, std::mem::take(&mut self.tail)));
    }
}

/// The round ends of the whole file and the records delivered late.
pub(super) struct Late {
    /// Each round end's offset, and the limit it delivered up to.
    ends: Vec<(u64, u64)>,
    /// File offset of each late record → its place among its delivery's
    /// late records.
    ranks: FxHashMap<u64, u32>,
}

/// Finds, along records in file order, how many round ends precede each.
pub(super) struct Cursor<'a> {
    late: &'a Late,
    /// Round ends before the last record asked about.
    before: usize,
}

impl Late {
    /// The file's round ends from its pieces' (in file order), and the
    /// late records among `runs` of records: (time, offset), each run in
    /// file order.
    pub fn of<I: Iterator<Item = (u64, u64)>>(
        pieces: &[&Rounds],
        runs: impl IntoIterator<Item = I>,
    ) -> Late {
        let mut ends = Vec::new();
        let (mut latest, mut limit) = (0, 0);
        for r in pieces {
            for &(offset, seen) in &r.ends {
                latest = latest.max(seen);
                ends.push((offset, limit));
                limit = latest;
            }
            latest = latest.max(r.tail);
        }
        let mut late = Late {
            ends,
            ranks: FxHashMap::default(),
        };
        let mut found: Vec<(usize, u64, u64)> = Vec::new();
        for run in runs {
            let mut cursor = late.cursor(0);
            for (time, offset) in run {
                let k = cursor.ends_before(offset);
                if late.missed(k, time).is_some() {
                    found.push((k, time, offset));
                }
            }
        }
        found.sort_unstable();
        let mut place = 0;
        for (i, &(k, _, offset)) in found.iter().enumerate() {
            place = match i > 0 && found[i - 1].0 == k {
                true => place + 1,
                false => 1,
            };
            late.ranks.insert(offset, place);
        }
        late
    }

    /// A cursor for records from `offset` on.
    pub fn cursor(&self, offset: u64) -> Cursor<'_> {
        Cursor {
            late: self,
            before: self.ends.partition_point(|e| e.0 < offset),
        }
    }

    /// The round end a record after `k` round ends missed: the last one,
    /// if it delivered past the record's time.
    fn missed(&self, k: usize, time: u64) -> Option<(u64, u64)> {
        let &(offset, limit) = self.ends.get(k.checked_sub(1)?)?;
        (time < limit).then_some((limit, offset))
    }
}

impl Cursor<'_> {
    /// Round ends before `offset`, which is no less than the last asked.
    fn ends_before(&mut self, offset: u64) -> usize {
        let ends = &self.late.ends;
        while self.before < ends.len() && ends[self.before].0 < offset {
            self.before += 1;
        }
        self.before
    }

    /// The place of the record at (`time`, `offset`), asked in file order.
    pub fn at(&mut self, time: u64, offset: u64) -> At {
        let k = self.ends_before(offset);
        match self.late.missed(k, time) {
            // Right after what the missed round end delivered, which is
            // everything up to its limit before it in the file.
            Some((limit, end)) => (limit, end, self.late.ranks[&offset]),
            None => at(time, offset),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The order perf's reader delivers (time, offset) records in, with
    /// round ends at the offsets in `ends`, by simulating its queue.
    fn delivered(records: &[(u64, u64)], ends: &[u64]) -> Vec<u64> {
        let (mut queue, mut out) = (Vec::new(), Vec::new());
        let (mut next_flush, mut max_time) = (0, 0);
        let mut flush = |queue: &mut Vec<(u64, u64)>, limit: u64| {
            queue.sort_by_key(|r: &(u64, u64)| r.0);
            let cut = queue.partition_point(|r| r.0 <= limit);
            out.extend(queue.drain(..cut).map(|r| r.1));
        };
        let mut ends = ends.iter().peekable();
        for &(time, offset) in records {
            while let Some(&&e) = ends.peek() {
                if e > offset {
                    break;
                }
                ends.next();
                flush(&mut queue, next_flush);
                next_flush = max_time;
            }
            max_time = max_time.max(time);
            queue.push((time, offset));
        }
        flush(&mut queue, u64::MAX);
        out
    }

    #[test]
    fn sorting_by_place_gives_the_delivered_order() {
        // Rounds of records from two "rings", the second's flushed late
        // now and then: times that go back past what was delivered.
        let mut rng = crate::test_rng::XorShift::new();
        let mut rand = |n: u64| rng.below(n);
        let mut late_ones = 0;
        for _ in 0..200 {
            let (mut records, mut ends, mut offset, mut clock) = (vec![], vec![], 0, 100);
            for _ in 0..(1 + rand(12)) {
                for _ in 0..rand(8) {
                    clock += rand(3);
                    // Late by up to 40 ticks, or at an equal time.
                    let time = clock.saturating_sub(rand(4) * rand(14));
                    records.push((time, offset));
                    offset += 8;
                }
                ends.push(offset);
                offset += 8;
            }
            // Cut into pieces before a random record or round end.
            let mut items: Vec<(u64, Option<u64>)> =
                records.iter().map(|&(t, o)| (o, Some(t))).collect();
            items.extend(ends.iter().map(|&e| (e, None)));
            items.sort();
            let mut pieces = vec![Rounds::default()];
            for (offset, time) in items {
                if rand(5) == 0 {
                    pieces.push(Rounds::default());
                }
                let r = pieces.last_mut().unwrap();
                match time {
                    Some(t) => r.record(t),
                    None => r.round_end(offset),
                }
            }
            let rounds: Vec<&Rounds> = pieces.iter().collect();
            let late = Late::of(&rounds, [records.iter().copied()]);
            late_ones += late.ranks.len();
            let mut cursor = late.cursor(0);
            let mut placed: Vec<(At, u64)> =
                records.iter().map(|&(t, o)| (cursor.at(t, o), o)).collect();
            placed.sort();
            let ours: Vec<u64> = placed.iter().map(|p| p.1).collect();
            assert_eq!(
                ours,
                delivered(&records, &ends),
                "{records:?} ends {ends:?}"
            );
        }
        assert!(late_ones > 100, "the cases have late records: {late_ones}");
    }
}
