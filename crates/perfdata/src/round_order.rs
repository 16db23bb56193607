//! Whether sorting records by time gives the order [`crate::Records`]
//! delivers them in, checked along the file in parts that can be joined.

use crate::record::record_type as rt;
use crate::records::MAX_QUEUED;

/// Follows [`crate::Records`]' FINISHED_ROUND rule along records seen in
/// file order: at a round's end, what arrived up to the end of the round
/// before is delivered, so a record older than that is delivered out of
/// time order, and no more than 2^21 records may wait (the reader's
/// `MAX_QUEUED`). Records of perf's own types (64 and up) are not judged.
///
/// A check can start at any record, for one part of the data; joined in
/// file order with [`RoundOrder::then`], the checks of consecutive parts
/// answer as one check over all of them would. What a part cannot judge
/// alone (its records until its second round end, and how early its later
/// records are) it keeps for the join.
#[derive(Debug, Clone)]
pub struct RoundOrder {
    holds: bool,
    overflows: bool,
    /// Everything up to this time was delivered at the last round's end.
    delivered: u64,
    /// Latest time as of the last round's end.
    next: u64,
    latest: u64,
    /// Records since the last round's end, and in the round before.
    in_round: usize,
    in_last_round: usize,
    rounds: u64,
    /// The part's records before its first round end, and between its
    /// first and second: all a join needs of them, as the delivered limit
    /// changes only at round ends.
    prefix: [Span; 2],
    /// The earliest time after its second round end.
    earliest_after: u64,
}

/// How many records, and their earliest and latest times.
#[derive(Debug, Clone, Copy)]
struct Span {
    count: usize,
    earliest: u64,
    latest: u64,
}

impl Span {
    const EMPTY: Span = Span {
        count: 0,
        earliest: u64::MAX,
        latest: 0,
    };

    fn add(&mut self, o: Span) {
        self.count += o.count;
        self.earliest = self.earliest.min(o.earliest);
        self.latest = self.latest.max(o.latest);
    }
}

impl Default for RoundOrder {
    fn default() -> Self {
        RoundOrder {
            holds: true,
            overflows: false,
            delivered: 0,
            next: 0,
            latest: 0,
            in_round: 0,
            in_last_round: 0,
            rounds: 0,
            prefix: [Span::EMPTY; 2],
            earliest_after: u64::MAX,
        }
    }
}

impl RoundOrder {
    /// Whether, as far as seen, a stable sort by time gives the delivered
    /// order (for a check started at the beginning of the data, or joined
    /// to the checks of every part before).
    pub fn holds(&self) -> bool {
        self.holds
    }

    /// Whether, as far as seen, more records wait at once than the reader
    /// holds back, so that it delivers some before their round ends (one
    /// way the order may not hold; the other is a record older than what
    /// its round's start already delivered).
    pub fn overflows(&self) -> bool {
        self.overflows
    }

    /// The next record: its type and time.
    pub fn see(&mut self, ty: u32, time: u64) {
        match ty {
            rt::FINISHED_ROUND => self.round_end(),
            t if t >= rt::USER_START => {}
            _ => self.seen(Span {
                count: 1,
                earliest: time,
                latest: time,
            }),
        }
    }

    fn round_end(&mut self) {
        self.delivered = self.next;
        self.next = self.latest;
        self.in_last_round = std::mem::take(&mut self.in_round);
        self.rounds += 1;
    }

    /// Records within one round, as if seen one by one.
    fn seen(&mut self, s: Span) {
        if s.count == 0 {
            return;
        }
        match self.prefix.get_mut(self.rounds as usize) {
            Some(p) => p.add(s),
            None => self.earliest_after = self.earliest_after.min(s.earliest),
        }
        // Equal to what was delivered is still in order: it comes after
        // the records of that time, as it does in the file.
        if s.earliest < self.delivered {
            self.holds = false;
        }
        self.latest = self.latest.max(s.latest);
        self.in_round += s.count;
        if self.in_round + self.in_last_round >= MAX_QUEUED {
            self.holds = false;
            self.overflows = true;
        }
    }

    /// Join the check of the part that follows this one in the file.
    pub fn then(&mut self, later: &RoundOrder) {
        let before = self.latest;
        // Until its second round end, the later part's records are judged
        // by what came before it: see them again, here.
        self.seen(later.prefix[0]);
        if later.rounds >= 1 {
            self.round_end();
            self.seen(later.prefix[1]);
        }
        if later.rounds < 2 {
            return;
        }
        self.round_end();
        // After it, a record is delivered after everything before the part
        // and, within the part, judged by the part's own check.
        self.holds &= later.holds && later.earliest_after >= before;
        self.overflows |= later.overflows;
        self.earliest_after = self.earliest_after.min(later.earliest_after);
        self.delivered = before.max(later.delivered);
        self.next = before.max(later.next);
        self.latest = before.max(later.latest);
        self.in_round = later.in_round;
        self.in_last_round = later.in_last_round;
        self.rounds += later.rounds - 2;
    }
}
