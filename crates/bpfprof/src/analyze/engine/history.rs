//! When each process, and the BPF symbols, changed: what the flat pass
//! counts a sample against, numbered as the ordered replay numbers its
//! changes, so that both passes key a sample alike.

use rustc_hash::FxHashMap;

use super::delivery::{At, FIRST, NEVER};
use super::events::{change_of, note, Change, Event};
use super::memo::{depends_on, Changes};

/// Each process's changes and the kernel's, with their [`Changes`]
/// numbers, and where BPF symbols ever were.
#[derive(Default)]
pub(super) struct History {
    processes: FxHashMap<u32, Vec<(At, u32)>>,
    kernel: Vec<(At, u32)>,
    /// Every address range a BPF symbol held at some time, merged: a
    /// kernel address outside them is the same location all along.
    bpf: Vec<(u64, u64)>,
}

impl History {
    /// The history of the side band `events`, in time order, whose BPF
    /// symbols held `bpf` (see [`bpf_ranges`]).
    pub(super) fn of(events: &[(At, Event)], bpf: Vec<(u64, u64)>) -> History {
        let mut h = History {
            bpf,
            ..History::default()
        };
        let mut changes = Changes::default();
        for (at, ev) in events {
            let list = match change_of(ev) {
                Some(Change::Process(pid)) => h.processes.entry(pid).or_default(),
                Some(Change::Kernel) => &mut h.kernel,
                None => continue,
            };
            note(&mut changes, ev);
            list.push((*at, changes.now()));
        }
        h
    }

    /// Whether a BPF symbol ever held `addr`.
    pub(super) fn may_be_bpf(&self, addr: u64) -> bool {
        let i = self.bpf.partition_point(|r| r.0 <= addr);
        i > 0 && addr < self.bpf[i - 1].1
    }

    /// The last change before `at` that a sample of `pid` depends on, as
    /// [`Changes::last`] answers in the ordered replay, and the times
    /// between which that answer holds.
    pub(super) fn last(&self, pid: u32, kernel: bool, at: At) -> Seen {
        let around = |list: &[(At, u32)]| {
            let i = list.partition_point(|&(a, _)| a < at);
            let (from, seq) = match i {
                0 => (FIRST, 0),
                i => list[i - 1],
            };
            let until = list.get(i).map_or(NEVER, |x| x.0);
            Seen { seq, from, until }
        };
        let p = match self.processes.get(&pid) {
            Some(list) => around(list),
            None => Seen::ALWAYS,
        };
        match kernel {
            true => {
                let k = around(&self.kernel);
                Seen {
                    seq: depends_on(p.seq, k.seq, true),
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
        from: FIRST,
        until: NEVER,
    };

    pub(super) fn holds_at(&self, at: At) -> bool {
        self.from < at && at < self.until
    }
}

/// Every address range a BPF symbol held at some time in `events`,
/// sorted, overlapping ranges merged.
pub(super) fn bpf_ranges(events: &[(At, Event)]) -> Vec<(u64, u64)> {
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
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (start, end) in bpf {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::super::events::{KsymbolEvent, MmapEvent};
    use super::*;

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
        let events = [
            ((10, 100, 0), mmap(7)),
            ((20, 200, 0), ksym(0x5000, 0x100, false)),
            ((20, 300, 0), Event::Exit { pid: 9, tid: 9 }),
            ((30, 400, 0), mmap(7)),
            ((40, 500, 0), mmap(8)),
            ((50, 600, 0), ksym(0x5000, 0x100, true)),
            ((60, 700, 0), ksym(0x5080, 0x100, false)),
        ];
        History::of(&events, bpf_ranges(&events))
    }

    #[test]
    fn a_sample_sees_the_last_change_of_its_process_before_it() {
        let h = history();
        let at = |t, o| h.last(7, false, (t, o, 0));
        assert_eq!(at(5, 0).seq, 0);
        assert_eq!(at(10, 99).seq, 0, "same time, earlier in the file");
        assert_eq!(at(10, 101).seq, 1, "same time, later in the file");
        assert_eq!(at(25, 0).seq, 1, "BPF events do not concern user code");
        assert_eq!(at(35, 0).seq, 3);
        assert_eq!(h.last(8, false, (35, 0, 0)).seq, 0);
        assert_eq!(h.last(8, false, (45, 0, 0)).seq, 4);
        assert_eq!(h.last(9, false, (99, 0, 0)).seq, 0, "EXIT changes nothing");
        // Kernel code sees the later of its process's and the BPF changes.
        assert_eq!(h.last(7, true, (25, 0, 0)).seq, 2);
        assert_eq!(h.last(7, true, (35, 0, 0)).seq, 3);
        assert_eq!(h.last(7, true, (65, 0, 0)).seq, 6);
    }

    #[test]
    fn the_answer_holds_until_the_next_change_that_matters() {
        let h = history();
        let s = h.last(7, false, (15, 0, 0));
        assert!(s.holds_at((29, 0, 0)) && !s.holds_at((45, 0, 0)));
        assert!(!s.holds_at((10, 100, 0)) && s.holds_at((10, 101, 0)));
        let k = h.last(7, true, (15, 0, 0));
        assert!(k.holds_at((19, 0, 0)) && !k.holds_at((25, 0, 0)));
        let never = h.last(99, false, (1, 0, 0));
        assert!(never.holds_at((u64::MAX - 1, 0, 0)));
    }

    #[test]
    fn bpf_ranges_cover_every_range_a_symbol_held() {
        let h = history();
        assert_eq!(h.bpf, vec![(0x5000, 0x5180)], "overlapping ranges merge");
        assert!(h.may_be_bpf(0x5000) && h.may_be_bpf(0x517f));
        assert!(!h.may_be_bpf(0x4fff) && !h.may_be_bpf(0x5180));
    }
}
