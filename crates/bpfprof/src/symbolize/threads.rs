//! Threads, their commands, and each process's executable mappings, as
//! COMM/FORK/EXIT/MMAP records replay.

use rustc_hash::FxHashMap;

use super::{CommId, DsoId};

#[derive(Debug, Clone, Copy)]
pub struct Map {
    pub start: u64,
    pub end: u64,
    pub pgoff: u64,
    pub dso: DsoId,
}

#[derive(Debug, Default)]
struct Process {
    /// Sorted by start, non-overlapping.
    maps: Vec<Map>,
}

#[derive(Debug, Default)]
pub struct Threads {
    /// Each thread's current command.
    threads: FxHashMap<u32, CommId>,
    /// The last thread asked about: consecutive samples are mostly from
    /// the same thread, and this saves a hash lookup per sample.
    last: Option<(u32, CommId)>,
    processes: FxHashMap<u32, Process>,
    pub comms: Vec<String>,
    comm_index: FxHashMap<String, CommId>,
    /// Set by [`Threads::forget_maps`].
    maps_forgotten: bool,
}

impl Threads {
    pub fn comm_id(&mut self, name: &str) -> CommId {
        if let Some(&id) = self.comm_index.get(name) {
            return id;
        }
        let id = self.comms.len() as CommId;
        self.comms.push(name.to_string());
        self.comm_index.insert(name.to_string(), id);
        id
    }

    /// The command of a thread; `:TID` when none was recorded, as perf shows.
    pub fn comm_of(&mut self, tid: u32) -> CommId {
        if let Some((t, c)) = self.last {
            if t == tid {
                return c;
            }
        }
        if let Some(&comm) = self.threads.get(&tid) {
            self.last = Some((tid, comm));
            return comm;
        }
        let name = if tid == 0 {
            "swapper".to_string()
        } else {
            format!(":{}", tid as i32)
        };
        let comm = self.comm_id(&name);
        self.threads.insert(tid, comm);
        comm
    }

    /// A thread's command as of now (at the end of a replay: its last
    /// one, which is what perf shows next to a thread id).
    pub fn current_comm(&self, tid: u32) -> Option<CommId> {
        self.threads.get(&tid).copied()
    }

    pub fn set_comm(&mut self, tid: u32, comm: &str) {
        self.last = None;
        let comm = self.comm_id(comm);
        self.threads.insert(tid, comm);
    }

    /// Drop every process's maps and keep none from now on: for a replay
    /// that will not be asked where a user address is (the flat pass, once
    /// the map timeline has found them all), where copying the parent's
    /// maps at each fork and splicing each new map was most of its time.
    pub fn forget_maps(&mut self) {
        self.processes = FxHashMap::default();
        self.maps_forgotten = true;
    }

    /// Whether maps are kept (they are unless [`Threads::forget_maps`]).
    pub fn keeps_maps(&self) -> bool {
        !self.maps_forgotten
    }

    /// A new thread or process. A new process starts with its parent's
    /// mappings (until it execs and maps its own).
    pub fn fork(&mut self, pid: u32, ppid: u32, tid: u32, ptid: u32) {
        self.last = None;
        let parent = self.threads.get(&ptid).copied();
        let comm = match parent {
            Some(c) => c,
            None => self.comm_id(&format!(":{}", tid as i32)),
        };
        self.threads.insert(tid, comm);
        if self.keeps_maps() && pid != ppid && !self.processes.contains_key(&pid) {
            let maps = self
                .processes
                .get(&ppid)
                .map(|p| p.maps.clone())
                .unwrap_or_default();
            self.processes.insert(pid, Process { maps });
        }
    }

    pub fn exit(&mut self, _pid: u32, _tid: u32) {
        // Samples may still arrive for an exiting thread within the round;
        // keep its state, as perf does until the last reference.
    }

    /// Add a mapping, replacing whatever it overlaps. The maps it overlaps
    /// are a run of the sorted list, replaced in place by what is left of
    /// them and the new one: rebuilding the list on every MMAP was most of
    /// replaying the side band of a compiler run thousands of times.
    pub fn mmap(&mut self, pid: u32, m: Map) {
        if !self.keeps_maps() {
            return;
        }
        let maps = &mut self.processes.entry(pid).or_default().maps;
        let (first, last) = overlapped(maps, &m, |x| x);
        // What is left of the first and last maps it overlaps, around it:
        // put as a slice, whose exact length lets `splice` move the tail
        // once, without a vector of its own for the surplus. Only
        // `put[..n]` is used: `m` in the others is filler.
        let mut put = [m; 3];
        let mut n = 0;
        if let Some(&old) = maps[first..last].first() {
            if old.start < m.start {
                put[0] = Map {
                    end: m.start,
                    ..old
                };
                n = 1;
            }
        }
        put[n] = m;
        n += 1;
        if let Some(&old) = maps[first..last].last() {
            if old.end > m.end {
                put[n] = Map {
                    start: m.end,
                    pgoff: old.pgoff.wrapping_add(m.end - old.start),
                    ..old
                };
                n += 1;
            }
        }
        maps.splice(first..last, put[..n].iter().copied());
    }

    /// A process's maps now, in address order.
    pub fn maps_of(&self, pid: u32) -> &[Map] {
        self.processes.get(&pid).map_or(&[], |p| &p.maps)
    }

    pub fn find_map(&self, pid: u32, addr: u64) -> Option<Map> {
        let p = self.processes.get(&pid)?;
        let i = p.maps.partition_point(|m| m.start <= addr).checked_sub(1)?;
        let m = p.maps[i];
        (addr < m.end).then_some(m)
    }

    /// The last command recorded for a thread.
    pub fn comm_name(&self, tid: u32) -> String {
        match self.current_comm(tid) {
            Some(c) => self.comms[c as usize].clone(),
            None => format!(":{}", tid as i32),
        }
    }
}

/// The run of `items` (whose maps, by `map`, are sorted and disjoint)
/// that `m` overlaps: `first..last`.
pub fn overlapped<T>(items: &[T], m: &Map, map: impl Fn(&T) -> &Map) -> (usize, usize) {
    let first = items.partition_point(|x| map(x).end <= m.start);
    let last = first + items[first..].partition_point(|x| map(x).start < m.end);
    (first, last)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The oracle: every map checked against the new one, kept, cut or
    /// dropped, and the new one put in by its start.
    fn replaced(maps: &[Map], m: Map) -> Vec<Map> {
        let mut out = Vec::new();
        for &old in maps {
            if old.end <= m.start || old.start >= m.end {
                out.push(old);
                continue;
            }
            if old.start < m.start {
                out.push(Map {
                    end: m.start,
                    ..old
                });
            }
            if old.end > m.end {
                let pgoff = old.pgoff.wrapping_add(m.end - old.start);
                out.push(Map {
                    start: m.end,
                    pgoff,
                    ..old
                });
            }
        }
        let at = out.partition_point(|x| x.start < m.start);
        out.insert(at, m);
        out
    }

    fn key(m: &Map) -> (u64, u64, u64, DsoId) {
        (m.start, m.end, m.pgoff, m.dso)
    }

    #[test]
    fn a_map_replaces_what_it_overlaps_as_one_by_one_checks_say() {
        let mut rng = crate::test_rng::XorShift::new();
        let mut next = |n: u64| rng.below(n);
        for round in 0..200 {
            let mut t = Threads::default();
            let mut want: Vec<Map> = Vec::new();
            for i in 0..40 {
                // Pages of a small space, so that maps overlap, cut each
                // other in two and cover runs of others; lengths >= 1.
                let start = next(64) * 0x1000;
                let m = Map {
                    start,
                    end: start + (1 + next(16)) * 0x1000,
                    pgoff: next(8) * 0x1000,
                    dso: i,
                };
                t.mmap(7, m);
                want = replaced(&want, m);
                let got: Vec<_> = t.maps_of(7).iter().map(key).collect();
                let want: Vec<_> = want.iter().map(key).collect();
                assert_eq!(got, want, "round {round}, map {i}");
            }
        }
    }

    #[test]
    fn forgetting_maps_keeps_commands_and_locates_nothing() {
        let map = |start| Map {
            start,
            end: start + 0x1000,
            pgoff: 0,
            dso: 1,
        };
        let mut t = Threads::default();
        t.set_comm(1, "parent");
        t.mmap(1, map(0x1000));
        assert!(t.find_map(1, 0x1800).is_some());
        t.forget_maps();
        assert!(!t.keeps_maps());
        assert!(t.find_map(1, 0x1800).is_none(), "dropped");
        t.fork(2, 1, 2, 1);
        t.mmap(2, map(0x3000));
        assert!(t.maps_of(2).is_empty() && t.find_map(2, 0x3800).is_none());
        assert_eq!(
            t.comm_name(2),
            "parent",
            "a child still takes its parent's command"
        );
    }
}
