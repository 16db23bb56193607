//! When each process, and the BPF symbols, changed: what a count of
//! samples depends on, and the times between which that holds.

use rustc_hash::FxHashMap;

use crate::analyze::events::{change_of, Change, Event};
use crate::analyze::map_timeline::At;

/// When each process, and the BPF symbols, changed, numbered as
/// [`super::memo::Changes`] numbers the changes in the ordered replay.
#[derive(Default)]
pub(super) struct History {
    processes: FxHashMap<u32, Vec<(At, u32)>>,
    /// Of each process, the changes that may change a thread's command
    /// (COMM, FORK): all a kernel sample's row depends on, or a user
    /// one's besides the map it hit.
    names: FxHashMap<u32, Vec<(At, u32)>>,
    kernel: Vec<(At, u32)>,
    /// Every address range a BPF symbol held at some time, merged: a
    /// kernel address outside them is the same location all along.
    bpf: Vec<(u64, u64)>,
}

impl History {
    pub(super) fn of(events: &[(At, Event)]) -> History {
        let mut h = History::default();
        let mut seq = 0;
        for (at, ev) in events {
            let list = match change_of(ev) {
                Some(Change::Process(pid)) => h.processes.entry(pid).or_default(),
                Some(Change::Kernel) => &mut h.kernel,
                None => continue,
            };
            seq += 1;
            list.push((*at, seq));
            if let Event::Comm(_) | Event::Fork { .. } = ev {
                if let Some(Change::Process(pid)) = change_of(ev) {
                    h.names.entry(pid).or_default().push((*at, seq));
                }
            }
        }
        let mut bpf: Vec<(u64, u64)> = events
            .iter()
            .filter_map(|(_, ev)| match ev {
                Event::Ksymbol(k) if !k.unregister && k.len > 0 => {
                    Some((k.addr, k.addr.saturating_add(u64::from(k.len))))
                }
                _ => None,
            })
            .collect();
        bpf.sort_unstable();
        for (start, end) in bpf {
            match h.bpf.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => h.bpf.push((start, end)),
            }
        }
        h
    }

    /// Whether a BPF symbol ever held `addr`.
    pub(super) fn may_be_bpf(&self, addr: u64) -> bool {
        let i = self.bpf.partition_point(|r| r.0 <= addr);
        i > 0 && addr < self.bpf[i - 1].1
    }

    /// The last change before `at` that a sample of `pid` depends on, as
    /// [`super::memo::Changes::last`] answers in the ordered replay, and
    /// the times between which that answer holds.
    pub(super) fn last(&self, pid: u32, kernel: bool, at: At) -> Seen {
        self.last_in(&self.processes, pid, kernel, at)
    }

    /// [`Self::last`], of the changes to the command of `pid`'s threads
    /// only (and the BPF ones if `kernel`).
    pub(super) fn last_name(&self, pid: u32, kernel: bool, at: At) -> Seen {
        self.last_in(&self.names, pid, kernel, at)
    }

    fn last_in(
        &self,
        lists: &FxHashMap<u32, Vec<(At, u32)>>,
        pid: u32,
        kernel: bool,
        at: At,
    ) -> Seen {
        let around = |list: &[(At, u32)]| {
            let i = list.partition_point(|&(a, _)| a < at);
            let (from, seq) = match i {
                0 => ((0, 0), 0),
                i => list[i - 1],
            };
            let until = list.get(i).map_or((u64::MAX, u64::MAX), |x| x.0);
            Seen { seq, from, until }
        };
        let p = match lists.get(&pid) {
            Some(list) => around(list),
            None => Seen::ALWAYS,
        };
        match kernel {
            true => {
                let k = around(&self.kernel);
                Seen {
                    seq: p.seq.max(k.seq),
                    from: p.from.max(k.from),
                    until: p.until.min(k.until),
                }
            }
            false => p,
        }
    }
}

/// The last change a sample saw, and the times after and before which
/// another sample sees the same.
#[derive(Clone, Copy)]
pub(super) struct Seen {
    pub(super) seq: u32,
    pub(super) from: At,
    pub(super) until: At,
}

impl Seen {
    pub(super) const ALWAYS: Seen = Seen {
        seq: 0,
        from: (0, 0),
        until: (u64::MAX, u64::MAX),
    };

    /// Whether the answer holds for every sample at the times `first` to
    /// `last`, whatever their file offsets: whether those times are
    /// strictly between the changes around it. At a change's own time only
    /// the offset tells before from after, so that is not known here.
    pub(super) fn holds_between(&self, first: u64, last: u64) -> bool {
        let after = self.from == (0, 0) || self.from.0 < first;
        after && last < self.until.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::events::{KsymbolEvent, MmapEvent};

    fn mmap(pid: u32) -> Event {
        Event::Mmap(Box::new(MmapEvent {
            pid,
            addr: 0x1000,
            len: 0x1000,
            pgoff: 0,
            name: "/bin/x".into(),
            build_id: None,
        }))
    }

    fn ksym(addr: u64, len: u32, unregister: bool) -> Event {
        Event::Ksymbol(Box::new(KsymbolEvent {
            addr,
            len,
            unregister,
            name: "bpf_prog_x".into(),
            time: 0,
        }))
    }

    /// The side band of the tests below, numbered as `Changes` numbers it
    /// in the ordered replay: 1 = process 7, 2 = BPF, 3 = process 7
    /// (an EXIT is no change), 4 = process 8, 5 and 6 = BPF.
    fn history() -> History {
        History::of(&[
            ((10, 100), mmap(7)),
            ((20, 200), ksym(0x5000, 0x100, false)),
            ((20, 300), Event::Exit { pid: 9, tid: 9 }),
            ((30, 400), mmap(7)),
            ((40, 500), mmap(8)),
            ((50, 600), ksym(0x5000, 0x100, true)),
            ((60, 700), ksym(0x5080, 0x100, false)),
        ])
    }

    #[test]
    fn a_sample_sees_the_last_change_of_its_process_before_it() {
        let h = history();
        let at = |t, o| h.last(7, false, (t, o));
        assert_eq!(at(5, 0).seq, 0);
        assert_eq!(at(10, 99).seq, 0, "same time, earlier in the file");
        assert_eq!(at(10, 101).seq, 1, "same time, later in the file");
        assert_eq!(at(25, 0).seq, 1, "BPF events do not concern user code");
        assert_eq!(at(35, 0).seq, 3);
        assert_eq!(h.last(8, false, (35, 0)).seq, 0);
        assert_eq!(h.last(8, false, (45, 0)).seq, 4);
        assert_eq!(h.last(9, false, (99, 0)).seq, 0, "EXIT changes nothing");
        // Kernel code sees the later of its process's and the BPF changes.
        assert_eq!(h.last(7, true, (25, 0)).seq, 2);
        assert_eq!(h.last(7, true, (35, 0)).seq, 3);
        assert_eq!(h.last(7, true, (65, 0)).seq, 6);
    }

    #[test]
    fn the_answer_holds_until_the_next_change_that_matters() {
        let h = history();
        let s = h.last(7, false, (15, 0));
        assert!(s.holds_between(11, 29) && !s.holds_between(11, 45));
        // A change's own time: before or after it only by file offset.
        assert!(!s.holds_between(10, 29) && !s.holds_between(11, 30));
        let k = h.last(7, true, (15, 0));
        assert!(k.holds_between(19, 19) && !k.holds_between(19, 25));
        let never = h.last(99, false, (1, 0));
        assert!(never.holds_between(0, u64::MAX - 1) && !never.holds_between(0, u64::MAX));
        // Before a process's first change, from the start of time.
        let first = h.last(8, false, (0, 0));
        assert_eq!(first.seq, 0);
        assert!(first.holds_between(0, 39) && !first.holds_between(0, 40));
    }

    #[test]
    fn bpf_ranges_cover_every_range_a_symbol_held() {
        let h = history();
        assert_eq!(h.bpf, vec![(0x5000, 0x5180)], "overlapping ranges merge");
        assert!(h.may_be_bpf(0x5000) && h.may_be_bpf(0x517f));
        assert!(!h.may_be_bpf(0x4fff) && !h.may_be_bpf(0x5180));
    }
}
