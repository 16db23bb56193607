//! Owners, attachments and maps of the recording's programs: a snapshot
//! when the recording starts (daemons' programs, loaded long before), one
//! when it ends (programs loaded during the run, attachments made after
//! load), and the loader of each program loaded in between, from its
//! BPF_EVENT. Two scans in all, whatever the length of the recording.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use perfdata::{BpfOwner, BpfProgMeta};

/// What the snapshots and the stream said, merged per program id.
#[derive(Debug, Default)]
pub struct MetaBook {
    pub progs: BTreeMap<u32, BpfProgMeta>,
    /// How long each snapshot took (start, end), for BPFPROF_DEBUG and the
    /// cost budget.
    pub scan_times: Vec<Duration>,
    /// Why a snapshot failed, said once.
    pub error: Option<String>,
    /// CLOCK_BOOTTIME and CLOCK_REALTIME at the first snapshot, stored
    /// with every entry: what dates a program's `load_time` in a report.
    pub clock: Option<(u64, u64)>,
}

impl MetaBook {
    /// Take one snapshot and merge it in. Programs gone since an earlier
    /// snapshot keep what it saw; owners and attachments add up.
    pub fn snapshot(&mut self) {
        if self.clock.is_none() {
            let real = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            self.clock = Some((bpfinfo::sys::boottime_ns(), real));
        }
        let t = Instant::now();
        let snap = bpfinfo::sys::prog_meta_snapshot();
        self.scan_times.push(t.elapsed());
        match snap {
            Ok(s) => self.merge(s),
            Err(e) => {
                self.error.get_or_insert_with(|| {
                    let e = super::caps::bpf_listing_refused(&e).unwrap_or_else(|| e.to_string());
                    format!("owners and attachments of BPF programs not captured: {e}")
                });
            }
        }
    }

    fn merge(&mut self, snap: BTreeMap<u32, BpfProgMeta>) {
        for (id, m) in snap {
            match self.progs.get_mut(&id) {
                Some(old) => old.merge(&m),
                None => {
                    self.progs.insert(id, m);
                }
            }
        }
    }

    /// The process that loaded program `id` during the recording (the pid
    /// of its BPF_EVENT, its comm read when the event was seen). It held
    /// the program at load, so it is an owner even if it is gone by the
    /// end.
    pub fn loader(&mut self, id: u32, pid: u32, comm: String) {
        let m = self.progs.entry(id).or_insert_with(|| BpfProgMeta {
            prog_id: id,
            ..Default::default()
        });
        m.merge(&BpfProgMeta {
            prog_id: id,
            owners: vec![BpfOwner { pid, comm }],
            ..Default::default()
        });
    }

    /// The merged entries of the programs in `ids` (those with an info
    /// entry in the file, where the meta is stored).
    pub fn for_file(&self, ids: impl Iterator<Item = u32>) -> Vec<BpfProgMeta> {
        ids.filter_map(|id| {
            let mut m = self.progs.get(&id)?.clone();
            m.clock = self.clock;
            Some(m)
        })
        .collect()
    }
}

/// `comm` of `pid` now, or empty when it is gone.
pub fn comm_of(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim_end_matches('\n').to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use perfdata::BpfAttach;

    fn m(id: u32, pid: u32, target: &str) -> BpfProgMeta {
        BpfProgMeta {
            prog_id: id,
            owners: vec![BpfOwner {
                pid,
                comm: format!("p{pid}"),
            }],
            attach: vec![BpfAttach {
                kind: "tracepoint".into(),
                target: target.into(),
                ..Default::default()
            }],
            maps: vec![],
            clock: None,
        }
    }

    #[test]
    fn start_end_and_loaders_merge_per_program() {
        let mut b = MetaBook::default();
        // Start: prog 1 held by pid 10.
        b.merge(BTreeMap::from([(1, m(1, 10, "a:b"))]));
        // Mid-run: prog 2 loaded by pid 20, which then exits.
        b.loader(2, 20, "loader".into());
        // End: prog 1 now also attached elsewhere, held by 11; prog 2 is
        // held by a pinned link only; prog 3 is new.
        b.merge(BTreeMap::from([
            (1, m(1, 11, "c:d")),
            (
                2,
                BpfProgMeta {
                    prog_id: 2,
                    ..Default::default()
                },
            ),
            (3, m(3, 30, "e:f")),
        ]));
        let one = &b.progs[&1];
        assert_eq!(
            one.owners.iter().map(|o| o.pid).collect::<Vec<_>>(),
            [10, 11]
        );
        assert_eq!(one.attach.len(), 2);
        assert_eq!(b.progs[&2].owners[0].comm, "loader");
        assert_eq!(b.for_file([3, 1, 9].into_iter()).len(), 2);
    }
}
