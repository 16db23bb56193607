//! One snapshot of every program's owners, attachments and maps: one link
//! walk and one /proc scan serve all programs, so the cost does not grow
//! with programs × processes.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use perfdata::{BpfMapMeta, BpfOwner, BpfProgMeta};

use super::links::links_with;
use super::maps::{map_meta, prog_map_ids};
use super::names::Names;
use super::owners::scan_proc_with;
use crate::Error;

/// Owners, attachments and maps of every program loaded now, by program id.
///
/// Owners are the processes holding an fd on the program, on one of its
/// links, or on a perf event it is attached to (with their `comm`).
/// Attachments are its links (with `link_id`) and its perf-event
/// attachments (PERF_EVENT_IOC_SET_BPF, no link). Anything that vanishes
/// during the snapshot is left out; only a failure to list programs or
/// links at all (e.g. no permission) is an error.
pub fn prog_meta_snapshot() -> Result<BTreeMap<u32, BpfProgMeta>, Error> {
    let mut names = Names::default();
    let links = links_with(&mut names)?;
    let scan = scan_proc_with(&mut names);
    let mut out: BTreeMap<u32, BpfProgMeta> = BTreeMap::new();
    for id in super::prog_ids() {
        let id = id?;
        out.insert(
            id,
            BpfProgMeta {
                prog_id: id,
                ..Default::default()
            },
        );
    }

    let mut pids: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    for (prog, holders) in &scan.prog_holders {
        pids.entry(*prog).or_default().extend(holders);
    }
    for l in &links {
        let Some(m) = out.get_mut(&l.prog_id) else {
            continue;
        };
        m.attach.push(l.attach.clone());
        if let Some(h) = scan.link_holders.get(&l.id) {
            pids.entry(l.prog_id).or_default().extend(h);
        }
    }
    for p in &scan.perf {
        let Some(m) = out.get_mut(&p.prog_id) else {
            continue;
        };
        pids.entry(p.prog_id).or_default().insert(p.pid);
        // A perf_event link's event is also a perf fd in its loader: the
        // link already describes that attachment.
        let known = m
            .attach
            .iter()
            .any(|a| a.kind == p.attach.kind && a.target == p.attach.target);
        if !known {
            m.attach.push(p.attach.clone());
        }
    }
    for (prog, set) in pids {
        if let Some(m) = out.get_mut(&prog) {
            m.owners = set
                .into_iter()
                .map(|pid| BpfOwner {
                    pid,
                    comm: scan.comms.get(&pid).cloned().unwrap_or_default(),
                })
                .collect();
        }
    }

    // Maps are shared between programs: read each once.
    let mut maps: HashMap<u32, Option<BpfMapMeta>> = HashMap::new();
    for m in out.values_mut() {
        let Ok(Some(ids)) = prog_map_ids(m.prog_id) else {
            continue;
        };
        for mid in ids {
            let info = maps
                .entry(mid)
                .or_insert_with(|| map_meta(mid).ok().flatten());
            if let Some(i) = info {
                m.maps.push(i.clone());
            }
        }
    }
    Ok(out)
}
