//! `bpf map list|show`: the maps, as `bpftool map show` prints them, with
//! the programs that use each (what bpftool leaves to `prog show`).

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use bpfinfo::sys::{self, Capture, MapInfo};

use super::columns;
use super::select::{self, Selector};

/// `bpfprof bpf map ...`.
#[derive(clap::Subcommand, Debug)]
pub enum MapCommand {
    /// List every map: id, type, name, key and value sizes, max entries,
    /// flags, memlock and the programs using it.
    List {
        /// Print JSON (bpftool's `map show -j` keys, plus `prog_ids`).
        #[arg(long)]
        json: bool,
    },
    /// Show maps by `ID`, `id ID`, `name NAME` or `pinned PATH`.
    Show {
        /// `ID`, `id ID`, `name NAME` or `pinned PATH`, as bpftool takes them.
        #[arg(required = true, num_args = 1..=2, value_name = "MAP")]
        map: Vec<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cmd: &MapCommand) -> Result<()> {
    match cmd {
        MapCommand::List { json } => print(&sys::maps().context("listing BPF maps")?, *json),
        MapCommand::Show { map, json } => {
            let sel = select::parse(map, &["name", "pinned"], "bpf map show")?;
            let maps = match &sel {
                Selector::Id(id) => one(*id)?,
                Selector::Pinned(p) => one(select::pinned_id(p, "map")?)?,
                Selector::Name(n) => {
                    let all = sys::maps().context("listing BPF maps")?;
                    let hits: Vec<MapInfo> =
                        all.into_iter().filter(|m| m.meta.name == *n).collect();
                    if hits.is_empty() {
                        bail!("no BPF map named {n} is loaded (see `bpfprof bpf map list`)");
                    }
                    hits
                }
                Selector::Tag(_) => unreachable!("maps take no tag"),
            };
            print(&maps, *json)
        }
    }
}

fn one(id: u32) -> Result<Vec<MapInfo>> {
    match sys::map_info(id).with_context(|| format!("BPF map {id}"))? {
        Some(m) => Ok(vec![m]),
        None => bail!("no BPF map with id {id} is loaded (see `bpfprof bpf map list`)"),
    }
}

/// Map id → the programs using it (id and name), from every program's
/// map ids.
fn users() -> BTreeMap<u32, Vec<(u32, String)>> {
    let mut out: BTreeMap<u32, Vec<(u32, String)>> = BTreeMap::new();
    for (id, r) in sys::walk_progs(Capture::Summary) {
        let Ok(p) = r else { continue };
        let Ok(Some(maps)) = sys::prog_map_ids(id) else {
            continue;
        };
        let name = super::full_name(&p.info);
        for m in maps {
            out.entry(m).or_default().push((id, name.clone()));
        }
    }
    out
}

fn type_name(t: u32) -> String {
    bpfinfo::map_type_name(t).map_or_else(|| format!("type {t}"), str::to_string)
}

fn print(maps: &[MapInfo], json: bool) -> Result<()> {
    let users = users();
    let none = Vec::new();
    if json {
        let rows: Vec<serde_json::Value> = maps
            .iter()
            .map(|m| {
                let u = users.get(&m.meta.id).unwrap_or(&none);
                serde_json::json!({
                    "id": m.meta.id,
                    "type": type_name(m.meta.map_type),
                    "name": m.meta.name,
                    "flags": m.meta.map_flags,
                    "bytes_key": m.meta.key_size,
                    "bytes_value": m.meta.value_size,
                    "max_entries": m.meta.max_entries,
                    "bytes_memlock": m.memlock,
                    "frozen": u32::from(m.frozen),
                    "btf_id": m.btf_id,
                    "prog_ids": u.iter().map(|p| p.0).collect::<Vec<_>>(),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    let header = [
        "ID",
        "TYPE",
        "NAME",
        "KEY",
        "VALUE",
        "MAX_ENTRIES",
        "FLAGS",
        "MEMLOCK",
        "BTF",
        "PROGRAMS",
    ];
    let rows: Vec<Vec<String>> = maps
        .iter()
        .map(|m| {
            let u = users.get(&m.meta.id).unwrap_or(&none);
            vec![
                m.meta.id.to_string(),
                type_name(m.meta.map_type),
                m.meta.name.clone(),
                format!("{}B", m.meta.key_size),
                format!("{}B", m.meta.value_size),
                m.meta.max_entries.to_string(),
                format!("{:#x}", m.meta.map_flags),
                m.memlock.map_or("-".into(), |b| format!("{b}B")),
                if m.btf_id == 0 {
                    "-".into()
                } else {
                    m.btf_id.to_string()
                },
                if u.is_empty() {
                    "-".into()
                } else {
                    u.iter()
                        .map(|(id, name)| format!("{id} {name}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                },
            ]
        })
        .collect();
    columns::print(&header, &rows, &[0, 3, 4, 5, 7, 8]);
    if rows.is_empty() {
        println!("(no BPF maps loaded)");
    }
    Ok(())
}
