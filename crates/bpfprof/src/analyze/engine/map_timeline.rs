//! Every user mapping of every process, with the times between which it
//! held: where a user address was at any time, without a replay.
//!
//! Built by replaying the side band through a [`Threads`] of its own (the
//! same rules as the replay's: a map replaces what it overlaps, a new
//! process starts with its parent's maps) and noting, after each event,
//! which maps of the process it touched came and went. So a worker
//! counting samples can say where a user sample went when threads merge,
//! and count by location rather than by process and time.

use rustc_hash::FxHashMap;

use super::delivery::{At, FIRST, NEVER};
use super::events::{Event, MmapEvent};
use crate::symbolize::{overlapped, DsoId, Loc, Map, Threads};

/// A map and the events after which and before which it held, by their
/// place in the side band ([`STILL`] for one that held to the end): the
/// place is a sixth of a time, and a recording of thousands of processes
/// has hundreds of thousands of pieces, moved as maps change and sorted.
#[derive(Debug, Clone, Copy)]
struct Piece {
    map: Map,
    from: u32,
    until: u32,
}

/// The `until` of a piece that held to the end.
const STILL: u32 = u32::MAX;

/// One process's pieces, sorted by start, and for each the largest end
/// up to it (so a lookup knows when no earlier piece can cover it).
#[derive(Debug, Default)]
struct Pieces {
    pieces: Vec<Piece>,
    max_end: Vec<u64>,
}

/// One process's pieces while the timeline is built: for each of its
/// maps now (the timeline's [`Threads`] holds them, in address order),
/// the event it began at, and the pieces that ended.
#[derive(Default)]
struct Building {
    from: Vec<u32>,
    closed: Vec<Piece>,
}

#[derive(Debug, Default)]
pub(super) struct MapTimeline {
    processes: FxHashMap<u32, Pieces>,
    /// The time of each event, by place: read by every lookup, so kept
    /// apart from the events themselves, whose records are far bigger.
    times: Vec<At>,
}

impl MapTimeline {
    /// The timeline of the side band `events`, in time order. `dso_of`
    /// names a user map's shared object (`None` for kernel maps): called in
    /// time order, as the replay does, so that ids come out the same.
    /// `None`, before any is named, for a side band of more events than a
    /// piece can number.
    pub(super) fn of(
        events: &[(At, Event)],
        mut dso_of: impl FnMut(&MmapEvent) -> Option<DsoId>,
    ) -> Option<MapTimeline> {
        if u32::try_from(events.len()).ok()? == STILL {
            return None;
        }
        let mut threads = Threads::default();
        let mut building: FxHashMap<u32, Building> = FxHashMap::default();
        // Reused, as most events change one or two maps and a recording
        // of thousands of short-lived processes has tens of thousands of
        // them: the maps an event replaced, and when the new ones began.
        let (mut old, mut next) = (Vec::new(), Vec::new());
        for (i, (_, ev)) in (0u32..).zip(events) {
            match *ev {
                Event::Mmap(ref m) => {
                    let Some(dso) = dso_of(m) else {
                        continue;
                    };
                    let map = Map {
                        start: m.addr,
                        end: m.addr.saturating_add(m.len),
                        pgoff: m.pgoff,
                        dso,
                    };
                    // Only the run of maps it overlaps changes (see
                    // `Threads::mmap`): the rest is the same on both sides.
                    let b = building.entry(m.pid).or_default();
                    let before = threads.maps_of(m.pid);
                    let (first, last) = overlapped(before, &map, |x| x);
                    let kept = before.len() - last;
                    old.clear();
                    old.extend_from_slice(&before[first..last]);
                    threads.mmap(m.pid, map);
                    let now = threads.maps_of(m.pid);
                    let changed = &now[first..now.len() - kept];
                    let from = &b.from[first..last];
                    follow((&old, from), changed, i, &mut b.closed, &mut next);
                    b.from.splice(first..last, next.drain(..));
                }
                // A new thread shares its process's maps.
                Event::Fork {
                    pid,
                    ppid,
                    tid,
                    ptid,
                } if pid != ppid => {
                    let b = building.entry(pid).or_default();
                    old.clear();
                    old.extend_from_slice(threads.maps_of(pid));
                    threads.fork(pid, ppid, tid, ptid);
                    let now = threads.maps_of(pid);
                    follow((&old, &b.from), now, i, &mut b.closed, &mut next);
                    b.from.clear();
                    b.from.append(&mut next);
                }
                _ => {}
            }
        }
        let processes = building
            .into_iter()
            .map(|(pid, b)| {
                let mut pieces = b.closed;
                let now = threads.maps_of(pid);
                debug_assert_eq!(now.len(), b.from.len());
                pieces.extend(now.iter().zip(&b.from).map(|(&map, &from)| Piece {
                    map,
                    from,
                    until: STILL,
                }));
                pieces.sort_unstable_by_key(|x| (x.map.start, x.from));
                let max_end = pieces
                    .iter()
                    .scan(0, |m, x| {
                        *m = x.map.end.max(*m);
                        Some(*m)
                    })
                    .collect();
                (pid, Pieces { pieces, max_end })
            })
            .collect();
        let times = events.iter().map(|&(at, _)| at).collect();
        Some(MapTimeline { processes, times })
    }

    /// Where a user address of `pid` was at `at`, as the replay's
    /// [`crate::symbolize::Symbolizer::locate`] finds it, and the records
    /// after which and before which that answer holds.
    pub(super) fn locate(&self, pid: u32, addr: u64, at: At) -> (Loc, At, At) {
        let (mut from, mut until) = (FIRST, NEVER);
        let Some(p) = self.processes.get(&pid) else {
            return (Loc::Unknown(addr), from, until);
        };
        // STILL is past the last event: NEVER.
        let time = |i: u32| self.times.get(i as usize).copied().unwrap_or(NEVER);
        for x in p.covering(addr) {
            let (x_from, x_until) = (time(x.from), time(x.until));
            if x_from < at && at < x_until {
                let m = x.map;
                return (
                    Loc::User(m.dso, (addr - m.start).wrapping_add(m.pgoff)),
                    x_from,
                    x_until,
                );
            }
            // No map held it at `at`: the answer holds between the maps
            // that held it before and after.
            if x_until < at {
                from = from.max(x_until);
            } else {
                until = until.min(x_from);
            }
        }
        (Loc::Unknown(addr), from, until)
    }

    /// The shared object some map of `pid` held `addr` in at some time.
    pub(super) fn any_dso(&self, pid: u32, addr: u64) -> Option<DsoId> {
        let p = self.processes.get(&pid)?;
        let x = p.covering(addr).next()?;
        Some(x.map.dso)
    }
}

impl Pieces {
    /// The pieces that cover `addr`, at whatever time.
    fn covering(&self, addr: u64) -> impl Iterator<Item = &Piece> {
        let i = self.pieces.partition_point(|x| x.map.start <= addr);
        (0..i)
            .rev()
            .take_while(move |&j| self.max_end[j] > addr)
            .map(move |j| &self.pieces[j])
            .filter(move |x| addr < x.map.end)
    }
}

/// When the maps `now` began, after the event `at`, into `next`, given
/// the maps there before and the events they began at (in address order,
/// without overlaps, as `now` is): the maps that went end there (into
/// `ended`), the ones that stayed keep their start, the others start there.
fn follow(
    (old, from): (&[Map], &[u32]),
    now: &[Map],
    at: u32,
    ended: &mut Vec<Piece>,
    next: &mut Vec<u32>,
) {
    let mut old = old.iter().zip(from).peekable();
    let end = |(&map, &from): (&Map, &u32)| Piece {
        map,
        from,
        until: at,
    };
    for m in now {
        while let Some(x) =
            old.next_if(|(x, _)| x.start < m.start || (x.start == m.start && !same(x, m)))
        {
            ended.push(end(x));
        }
        next.push(match old.next_if(|(x, _)| same(x, m)) {
            Some((_, &from)) => from,
            None => at,
        });
    }
    ended.extend(old.map(end));
}

fn same(a: &Map, b: &Map) -> bool {
    a.start == b.start && a.end == b.end && a.pgoff == b.pgoff && a.dso == b.dso
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::XorShift;

    fn mmap(pid: u32, addr: u64, len: u64, pgoff: u64, name: &str) -> Event {
        Event::Mmap(Box::new(MmapEvent {
            pid,
            addr,
            len,
            pgoff,
            name: name.into(),
            build_id: None,
        }))
    }

    fn fork(pid: u32, ppid: u32) -> Event {
        Event::Fork {
            pid,
            ppid,
            tid: pid,
            ptid: ppid,
        }
    }

    /// Shared objects numbered by name, as the replay would number them.
    fn dso_of(m: &MmapEvent) -> Option<DsoId> {
        m.name.strip_prefix("/lib").and_then(|n| n.parse().ok())
    }

    /// The oracle: the replay's own rules. Where each of `addrs` of each
    /// of `pids` was at each of `times` (ascending).
    fn replayed(
        events: &[(At, Event)],
        pids: &[u32],
        addrs: &[u64],
        times: &[At],
    ) -> Vec<Vec<Vec<Loc>>> {
        let mut t = Threads::default();
        let mut next = events.iter().peekable();
        let mut out = Vec::new();
        for &at in times {
            while let Some((_, ev)) = next.next_if(|(when, _)| *when < at) {
                match ev {
                    Event::Mmap(m) => {
                        if let Some(dso) = dso_of(m) {
                            let map = Map {
                                start: m.addr,
                                end: m.addr + m.len,
                                pgoff: m.pgoff,
                                dso,
                            };
                            t.mmap(m.pid, map);
                        }
                    }
                    &Event::Fork {
                        pid,
                        ppid,
                        tid,
                        ptid,
                    } => t.fork(pid, ppid, tid, ptid),
                    _ => {}
                }
            }
            let locate = |pid, addr| match t.find_map(pid, addr) {
                Some(m) => Loc::User(m.dso, (addr - m.start).wrapping_add(m.pgoff)),
                None => Loc::Unknown(addr),
            };
            out.push(
                pids.iter()
                    .map(|&pid| addrs.iter().map(|&a| locate(pid, a)).collect())
                    .collect(),
            );
        }
        out
    }

    #[test]
    fn answers_as_the_replay_would_at_every_time() {
        for seed in 1..200u64 {
            let mut rng = XorShift(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let mut events = Vec::new();
            let mut pids = vec![1u32];
            for i in 0..30u64 {
                let at = (10 * (i + 1), i, 0);
                let ev = match rng.below(5) {
                    0 => {
                        let child = 100 + i as u32;
                        let parent = pids[rng.below(pids.len() as u64) as usize];
                        pids.push(child);
                        fork(child, parent)
                    }
                    1 => fork(pids[0], pids[0]),
                    _ => {
                        let pid = pids[rng.below(pids.len() as u64) as usize];
                        let addr = 0x1000 * rng.below(16);
                        let len = 0x1000 * (1 + rng.below(6));
                        let name = format!("/lib{}", rng.below(4));
                        mmap(pid, addr, len, 0x1000 * rng.below(3), &name)
                    }
                };
                events.push((at, ev));
            }
            let timeline = MapTimeline::of(&events, dso_of).unwrap();
            let times: Vec<At> = (0..33u64).map(|t| (10 * t + 5, 0, 0)).collect();
            let addrs: Vec<u64> = (0..0x16000).step_by(0x800).collect();
            let want = replayed(&events, &pids, &addrs, &times);
            for (p, &pid) in pids.iter().enumerate() {
                for (a, &addr) in addrs.iter().enumerate() {
                    for (i, &at) in times.iter().enumerate() {
                        let (loc, from, until) = timeline.locate(pid, addr, at);
                        let case = format!("seed {seed} pid {pid} addr {addr:#x} at {at:?}");
                        assert_eq!(loc, want[i][p][a], "{case}");
                        assert!(from < at && at < until, "{case}");
                        // The answer holds wherever it says it does.
                        for (j, &other) in times.iter().enumerate() {
                            if from < other && other < until {
                                assert_eq!(loc, want[j][p][a], "{case}: window to {other:?}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_child_keeps_the_maps_its_parent_had_when_it_forked() {
        let events = vec![
            ((10, 0, 0), mmap(1, 0x1000, 0x1000, 0, "/lib1")),
            ((20, 0, 0), fork(2, 1)),
            ((30, 0, 0), mmap(1, 0x1000, 0x1000, 0, "/lib2")),
        ];
        let t = MapTimeline::of(&events, dso_of).unwrap();
        assert_eq!(t.locate(2, 0x1800, (40, 0, 0)).0, Loc::User(1, 0x800));
        assert_eq!(t.locate(1, 0x1800, (40, 0, 0)).0, Loc::User(2, 0x800));
        assert_eq!(t.locate(1, 0x1800, (25, 0, 0)).0, Loc::User(1, 0x800));
        // Before the fork the child had no maps.
        let (loc, from, until) = t.locate(2, 0x1800, (15, 0, 0));
        assert_eq!(
            (loc, from, until),
            (Loc::Unknown(0x1800), FIRST, (20, 0, 0))
        );
    }

    #[test]
    fn a_hostile_file_offset_wraps_as_in_the_replay() {
        let events = vec![
            ((10, 0, 0), mmap(1, 0x1000, 0x1000, u64::MAX, "/lib1")),
            // Cuts the first map, whose rest starts past its offset.
            ((20, 0, 0), mmap(1, 0x1000, 0x400, 0, "/lib2")),
        ];
        let t = MapTimeline::of(&events, dso_of).unwrap();
        let times = [(15, 0, 0), (25, 0, 0)];
        let want = replayed(&events, &[1], &[0x1800], &times);
        for (i, &at) in times.iter().enumerate() {
            assert_eq!(t.locate(1, 0x1800, at).0, want[i][0][0]);
        }
        assert_eq!(want[1][0][0], Loc::User(1, 0x7ff));
    }
}
