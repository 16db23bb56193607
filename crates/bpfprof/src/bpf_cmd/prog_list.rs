//! `bpf list`: every loaded program with what `bpftool prog show` prints
//! (memlock, maps, GPL, BTF, owning processes) and, when statistics are
//! on, its run count and time.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use bpfinfo::sys::{self, Capture, LiveProg};
use perfdata::{BpfOwner, BpfProgInfo, BpfProgMeta};

use super::columns;
use super::{full_name, loaded_at, type_name};

/// Seconds since the epoch of a `load_time`, computed as bpftool's
/// `print_boot_time` does (realtime seconds minus boot-time seconds, plus
/// the load time's seconds), so `loaded_at_epoch` equals bpftool's
/// `loaded_at` to the second.
pub fn loaded_at_epoch(load_time_ns: u64) -> u64 {
    let secs = |clock| bpfprof::capture::sys::clock_ns(clock) / 1_000_000_000;
    (secs(libc::CLOCK_REALTIME) - secs(libc::CLOCK_BOOTTIME)) + load_time_ns / 1_000_000_000
}

/// One program and what the snapshot knows of it.
struct Entry {
    info: BpfProgInfo,
    name: String,
    memlock: Option<u64>,
    map_ids: Vec<u32>,
    owners: Vec<BpfOwner>,
}

fn entries() -> Result<Vec<Entry>> {
    let mut progs: Vec<LiveProg> = Vec::new();
    for (id, r) in sys::walk_progs(Capture::Summary) {
        match r {
            Ok(p) => progs.push(p),
            // Unloaded between listing and fetching: nothing to show.
            Err(bpfinfo::Error::Gone { .. }) => {}
            Err(e) if id == 0 => return Err(e).context("listing BPF programs"),
            Err(e) => eprintln!("bpfprof: BPF program {id}: {e}"),
        }
    }
    // One /proc scan and link walk for all programs; without it (no
    // permission for /proc of others) the list still has the rest.
    let meta: BTreeMap<u32, BpfProgMeta> = sys::prog_meta_snapshot().unwrap_or_default();
    Ok(progs
        .into_iter()
        .map(|p| {
            let id = p.info.id;
            // The map ids from the program itself: the snapshot leaves out
            // maps it could not read.
            let map_ids = sys::prog_map_ids(id).ok().flatten().unwrap_or_default();
            Entry {
                name: full_name(&p.info),
                memlock: sys::prog_memlock(id),
                map_ids,
                owners: meta.get(&id).map(|m| m.owners.clone()).unwrap_or_default(),
                info: p.info,
            }
        })
        .collect())
}

pub fn list(json: bool) -> Result<()> {
    let entries = entries()?;
    if json {
        let rows: Vec<serde_json::Value> = entries.iter().map(list_json).collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    let header = [
        "ID",
        "TYPE",
        "TAG",
        "NAME",
        "JITED",
        "XLATED",
        "MEMLOCK",
        "SUBS",
        "MAPS",
        "GPL",
        "BTF",
        "LOADED AT",
        "UID",
        "PIDS",
        "RUN_CNT",
        "RUN_TIME_NS",
    ];
    let rows: Vec<Vec<String>> = entries
        .iter()
        .map(|e| {
            let i = &e.info;
            let stats = i.run_cnt != 0 || i.run_time_ns != 0;
            let dash = |on: bool, v: String| if on { v } else { "-".into() };
            vec![
                i.id.to_string(),
                type_name(i.prog_type),
                i.tag_hex(),
                e.name.clone(),
                i.jited_prog_len.to_string(),
                i.xlated_prog_len.to_string(),
                e.memlock.map_or("-".into(), |m| m.to_string()),
                i.nr_jited_ksyms.to_string(),
                dash(
                    !e.map_ids.is_empty(),
                    e.map_ids
                        .iter()
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join(","),
                ),
                if i.gpl_compatible { "yes" } else { "no" }.into(),
                dash(i.btf_id != 0, i.btf_id.to_string()),
                loaded_at(i.load_time),
                i.created_by_uid.to_string(),
                columns::owners(&e.owners),
                dash(stats, i.run_cnt.to_string()),
                dash(stats, i.run_time_ns.to_string()),
            ]
        })
        .collect();
    columns::print(&header, &rows, &[0, 4, 5, 6, 7, 12, 14, 15]);
    if rows.is_empty() {
        println!("(no BPF programs loaded)");
    }
    Ok(())
}

/// Our keys, then bpftool's (`prog show -j`) where they differ, so a
/// script written for either reads this: `bytes_xlated`, `bytes_jited`,
/// `jited`, `bytes_memlock`, `map_ids`, `gpl_compatible`, `pids`; bpftool's
/// `loaded_at` (epoch seconds) is `loaded_at_epoch`, since ours is text.
fn list_json(e: &Entry) -> serde_json::Value {
    let i = &e.info;
    let stats = i.run_cnt != 0 || i.run_time_ns != 0;
    serde_json::json!({
        "id": i.id,
        "type": type_name(i.prog_type),
        "tag": i.tag_hex(),
        "name": e.name,
        "jited_size": i.jited_prog_len,
        "xlated_size": i.xlated_prog_len,
        "subprogs": i.nr_jited_ksyms,
        "loaded_at": loaded_at(i.load_time),
        "load_time_ns": i.load_time,
        "uid": i.created_by_uid,
        "btf_id": i.btf_id,
        "nr_map_ids": i.nr_map_ids,
        "run_cnt": stats.then_some(i.run_cnt),
        "run_time_ns": stats.then_some(i.run_time_ns),
        "bytes_xlated": i.xlated_prog_len,
        "bytes_jited": i.jited_prog_len,
        "jited": i.jited_prog_len > 0,
        "bytes_memlock": e.memlock,
        "map_ids": e.map_ids,
        "gpl_compatible": i.gpl_compatible,
        "loaded_at_epoch": loaded_at_epoch(i.load_time),
        "pids": columns::owners_json(&e.owners),
    })
}
