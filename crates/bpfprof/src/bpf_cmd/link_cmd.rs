//! `bpf link list|show`: the links, as `bpftool link show` prints them:
//! type, program and where it is attached (tracepoint, cgroup, netdev,
//! function), with the processes holding each.

use anyhow::{bail, Context, Result};
use bpfinfo::sys::{self, Capture, LinkInfo};

use super::columns;
use super::select::{self, Selector};

/// `bpfprof bpf link ...`.
#[derive(clap::Subcommand, Debug)]
pub enum LinkCommand {
    /// List every link: id, type, program, attach point, owning processes.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one link by `ID`, `id ID` or `pinned PATH`.
    Show {
        /// `ID`, `id ID` or `pinned PATH`, as bpftool takes them.
        #[arg(required = true, num_args = 1..=2, value_name = "LINK")]
        link: Vec<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cmd: &LinkCommand) -> Result<()> {
    let all = sys::links().context("listing BPF links")?;
    match cmd {
        LinkCommand::List { json } => print(&all, *json),
        LinkCommand::Show { link, json } => {
            let id = match select::parse(link, &["pinned"], "bpf link show")? {
                Selector::Id(id) => id,
                Selector::Pinned(p) => select::pinned_id(&p, "link")?,
                _ => unreachable!("links take an id or a pin"),
            };
            let hit: Vec<LinkInfo> = all.into_iter().filter(|l| l.id == id).collect();
            if hit.is_empty() {
                bail!("no BPF link with id {id} exists (see `bpfprof bpf link list`)");
            }
            print(&hit, *json)
        }
    }
}

fn prog_name(id: u32) -> String {
    sys::fetch_prog(id, Capture::Summary)
        .map(|p| super::full_name(&p.info))
        .unwrap_or_default()
}

fn print(links: &[LinkInfo], json: bool) -> Result<()> {
    let scan = sys::scan_proc();
    let owners = |l: &LinkInfo| -> Vec<perfdata::BpfOwner> {
        scan.link_holders
            .get(&l.id)
            .into_iter()
            .flatten()
            .map(|&pid| perfdata::BpfOwner {
                pid,
                comm: scan.comms.get(&pid).cloned().unwrap_or_default(),
            })
            .collect()
    };
    if json {
        let rows: Vec<serde_json::Value> = links
            .iter()
            .map(|l| {
                serde_json::json!({
                    "id": l.id,
                    "type": sys::link_type_name(l.link_type),
                    "prog_id": l.prog_id,
                    "prog_name": prog_name(l.prog_id),
                    "attach_kind": l.attach.kind,
                    "target": l.attach.target,
                    "attach_type": l.attach.attach_type,
                    "cookie": l.attach.cookie,
                    "offset": l.attach.offset,
                    "pids": columns::owners_json(&owners(l)),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    let header = ["ID", "TYPE", "PROG", "ATTACHED AS", "TO", "PIDS"];
    let rows: Vec<Vec<String>> = links
        .iter()
        .map(|l| {
            vec![
                l.id.to_string(),
                sys::link_type_name(l.link_type).to_string(),
                format!("{} {}", l.prog_id, prog_name(l.prog_id)),
                l.attach.kind.clone(),
                l.attach.target.clone(),
                columns::owners(&owners(l)),
            ]
        })
        .collect();
    columns::print(&header, &rows, &[0]);
    if rows.is_empty() {
        println!("(no BPF links)");
    }
    Ok(())
}
