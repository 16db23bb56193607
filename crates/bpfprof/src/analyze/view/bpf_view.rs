//! The BPF view of a profile: every program of the recording, all
//! sub-programs summed, with what it cost in parts (`bpf_cost.rs`), its
//! lifetime, owners, attachments and maps, and the kernel's own run-time
//! stats where the file has them.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::table::Filters;
use crate::analyze::bpf_cost::{BpfCost, By, SplitBy};
use crate::analyze::profile::{Counts, Profile};

/// Samples of one program, in parts. Without call chains only `self` is
/// known and the others are `None`.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Parts {
    #[serde(rename = "self")]
    pub own: u64,
    pub called: Option<u64>,
    pub hook: Option<u64>,
    pub total: Option<u64>,
}

/// The same parts as shares of the samples in view, in percent.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Shares {
    #[serde(rename = "self")]
    pub own: f64,
    pub called: Option<f64>,
    pub hook: Option<f64>,
    pub total: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SubSummary {
    pub index: u32,
    pub name: String,
    pub samples: u64,
    pub percent: f64,
}

/// Hook samples a program took at one site.
#[derive(Debug, Clone, Serialize)]
pub struct HookSite {
    pub site: String,
    pub samples: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Owner {
    pub pid: u32,
    pub comm: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct AttachPoint {
    pub kind: String,
    pub target: String,
    pub link_id: Option<u32>,
}

#[derive(Debug, Clone, Serialize)]
pub struct MapSummary {
    pub id: u32,
    pub name: String,
    #[serde(rename = "type")]
    pub map_type: String,
    pub key_size: u32,
    pub value_size: u32,
    pub max_entries: u32,
}

/// A program and its cost in parts: what `report --bpf --json` and
/// `top --json` say of each program under the same keys, one struct so
/// that the two cannot drift.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ProgHead {
    pub id: u32,
    /// The main function's BTF name where the program has BTF (never the
    /// kernel's 16-byte cut when BTF has the whole name).
    pub name: String,
    pub tag: String,
    #[serde(rename = "type")]
    pub prog_type: String,
    pub samples: Parts,
    /// Shares of the samples in view, in percent.
    pub percent: Shares,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProgSummary {
    #[serde(flatten)]
    pub head: ProgHead,
    /// Samples in each sub-program's own code.
    pub subprogs: Vec<SubSummary>,
    pub hook_sites: Vec<HookSite>,
    pub owners: Vec<Owner>,
    pub attach: Vec<AttachPoint>,
    pub maps: Vec<MapSummary>,
    /// Seconds from the first sample; `None` = loaded before the recording.
    pub loaded_at: Option<f64>,
    pub unloaded_at: Option<f64>,
    /// `bpf_prog_info.load_time`: nanoseconds since boot.
    pub load_time_ns: Option<u64>,
    /// The load as a clock time (UTC), where the recorder noted its clocks.
    pub loaded: Option<String>,
    /// Seconds between the load and the start of the recording, for a
    /// program loaded before it.
    pub loaded_before_s: Option<f64>,
    pub loader_pid: Option<u32>,
    pub loader_comm: Option<String>,
    /// Kernel stats over the recording, where the file carries them.
    pub run_cnt: Option<u64>,
    pub run_time_ns: Option<u64>,
    /// Whether the file holds this program's bpf_prog_info (needed to
    /// annotate it).
    pub has_info: bool,
    /// The parts by whose work ran the program (`--by`), costliest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub by: Vec<ByRow>,
}

/// One value of `--by` (a command, process, CPU or context) and the part
/// of a program's samples that came from it.
#[derive(Debug, Clone, Serialize)]
pub struct ByRow {
    pub value: String,
    pub samples: Parts,
    pub percent: Shares,
}

/// What the kernel's run-time stats cost, as measured in the recording.
#[derive(Debug, Clone, Serialize)]
pub struct StatsSummary {
    /// Samples reading the clock for the stats, under the code that runs
    /// programs.
    pub samples: u64,
    pub percent: f64,
    pub runs: u64,
    /// Time per program run, where the event counts nanoseconds.
    pub ns_per_run: Option<f64>,
}

/// Hook samples at one site and how they were split.
#[derive(Debug, Clone, Serialize)]
pub struct SiteSummary {
    pub site: String,
    pub samples: u64,
    /// `None`: no program there could be found.
    pub split_by: Option<SplitBy>,
    pub programs: Vec<u32>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BpfSummary {
    /// Samples in view (after `--comm`/`--pid`).
    pub total: Counts,
    /// Whether the parts beyond `self` are known (the file has call chains
    /// and the report read them).
    pub callchains: bool,
    /// Samples in programs' own code, and their share.
    pub samples: u64,
    pub percent: f64,
    /// Every program of the recording, costliest first.
    pub programs: Vec<ProgSummary>,
    pub sites: Vec<SiteSummary>,
    /// Hook samples no program could be charged with.
    pub unclaimed_hook: u64,
    /// Hook samples found where interrupts came back on after a trap (a
    /// uprobe's int3 or single-step), and charged to its hook.
    pub deferred_hook: u64,
    pub stats: Option<StatsSummary>,
    /// BPF symbols whose program id the recording never named.
    pub unattributed: Vec<(String, u64)>,
}

impl serde::Serialize for Counts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Counts", 2)?;
        st.serialize_field("samples", &self.samples)?;
        st.serialize_field("period", &self.period)?;
        st.end()
    }
}

/// Summarize the BPF part of the samples `filters` keeps (by command and
/// process); `None` when the recording has no BPF program at all.
pub fn summarize(p: &Profile, filters: &Filters) -> Option<BpfSummary> {
    summarize_by(p, filters, None)
}

/// [`summarize`], with each program's parts also broken down `by` whose
/// work ran it.
pub fn summarize_by(p: &Profile, filters: &Filters, by: Option<By>) -> Option<BpfSummary> {
    let f = Filters {
        dsos: Vec::new(),
        ..filters.clone()
    };
    let filtered = !f.comms.is_empty() || !f.pids.is_empty() || !f.tids.is_empty();
    let recomputed;
    let cost: Option<&BpfCost> = match (&p.bpf_cost, filtered || by.is_some()) {
        (Some(_), true) => {
            recomputed = BpfCost::compute_by(p, Some(&f), by);
            Some(&recomputed)
        }
        (c, _) => c.as_ref(),
    };
    // Own samples per (program, sub-program), and the view's total, from
    // the rows: they carry the command and process the filters need.
    let mut total = Counts::default();
    let mut own: BTreeMap<u32, BTreeMap<u32, (String, Counts)>> = BTreeMap::new();
    let mut unattributed: BTreeMap<String, u64> = BTreeMap::new();
    for (k, c) in &p.rows {
        if !f.keep(p, k) {
            continue;
        }
        total.merge(*c);
        let Some(b) = p.sym.syms[k.frame.sym as usize].bpf else {
            continue;
        };
        let s = &p.sym.bpf.syms[b as usize];
        match s.prog {
            Some((id, sub)) if !s.image => {
                let e = own
                    .entry(id)
                    .or_default()
                    .entry(sub)
                    .or_insert_with(|| (s.name.clone(), Counts::default()));
                e.1.merge(*c);
            }
            _ => *unattributed.entry(s.name.clone()).or_default() += c.samples,
        }
    }
    let mut ids: BTreeSet<u32> = p.progs.keys().copied().collect();
    ids.extend(p.sym.bpf.events.keys());
    ids.extend(own.keys());
    if let Some(c) = cost {
        ids.extend(c.progs.keys());
    }
    if ids.is_empty() && unattributed.is_empty() {
        return None;
    }
    let pct = |n: u64| match total.samples {
        0 => 0.0,
        t => 100.0 * n as f64 / t as f64,
    };
    let t0 = p.first_time;
    // Signed: a load before the first sample is a negative offset (before
    // the recording), one after the last is past its length; neither may
    // wrap or clamp to 0 as if it happened at the start.
    let secs = |t: u64| (i128::from(t) - i128::from(t0)) as f64 / 1e9;
    let mut programs: Vec<ProgSummary> = ids
        .into_iter()
        .map(|id| {
            let rec = p.progs.get(&id);
            let info = rec.and_then(|r| r.info.as_ref());
            let meta = rec.and_then(|r| r.meta.as_ref());
            let ev = p.sym.bpf.events.get(&id);
            let subs = own.remove(&id).unwrap_or_default();
            let own_samples: u64 = subs.values().map(|(_, c)| c.samples).sum();
            let pc = cost.and_then(|c| c.progs.get(&id));
            let parts = match cost {
                Some(_) => {
                    let (called, hook) =
                        pc.map_or((0, 0), |pc| (pc.called.samples, pc.hook.samples));
                    Parts {
                        own: own_samples,
                        called: Some(called),
                        hook: Some(hook),
                        total: Some(own_samples + called + hook),
                    }
                }
                None => Parts {
                    own: own_samples,
                    ..Parts::default()
                },
            };
            let subprogs: Vec<SubSummary> = subs
                .into_iter()
                .map(|(index, (name, c))| SubSummary {
                    index,
                    name,
                    samples: c.samples,
                    percent: pct(c.samples),
                })
                .collect();
            let head = ProgHead {
                id,
                name: full_name(rec, &subprogs),
                tag: perfdata::hex(
                    &info
                        .map(|i| i.tag)
                        .or(ev.map(|e| e.tag))
                        .unwrap_or_default(),
                ),
                prog_type: info
                    .and_then(|i| bpfinfo::prog_type_name(i.prog_type))
                    .unwrap_or("?")
                    .to_string(),
                samples: parts,
                percent: Shares {
                    own: pct(parts.own),
                    called: parts.called.map(pct),
                    hook: parts.hook.map(pct),
                    total: parts.total.map(pct),
                },
            };
            ProgSummary {
                head,
                subprogs,
                hook_sites: pc.map_or_else(Vec::new, |pc| {
                    pc.hook_sites
                        .iter()
                        .map(|(s, c)| HookSite {
                            site: s.describe(),
                            samples: c.samples,
                        })
                        .collect()
                }),
                owners: meta.map_or_else(Vec::new, |m| {
                    m.owners
                        .iter()
                        .map(|o| Owner {
                            pid: o.pid,
                            comm: o.comm.clone(),
                        })
                        .collect()
                }),
                attach: meta.map_or_else(Vec::new, |m| {
                    m.attach
                        .iter()
                        .map(|a| AttachPoint {
                            kind: a.kind.clone(),
                            target: a.target.clone(),
                            link_id: a.link_id,
                        })
                        .collect()
                }),
                maps: meta.map_or_else(Vec::new, |m| {
                    m.maps
                        .iter()
                        .map(|m| MapSummary {
                            id: m.id,
                            name: m.name.clone(),
                            map_type: bpfinfo::map_type_name(m.map_type)
                                .map_or_else(|| format!("type {}", m.map_type), str::to_string),
                            key_size: m.key_size,
                            value_size: m.value_size,
                            max_entries: m.max_entries,
                        })
                        .collect()
                }),
                loaded_at: ev.and_then(|e| e.loaded_at).map(secs),
                unloaded_at: ev.and_then(|e| e.unloaded_at).map(secs),
                load_time_ns: info.map(|i| i.load_time).filter(|&t| t > 0),
                loaded: dated(info, meta).map(|(wall, _)| crate::utc::utc(wall / 1_000_000_000)),
                loaded_before_s: dated(info, meta)
                    .map(|(_, before)| before as f64 / 1e9)
                    .filter(|_| ev.and_then(|e| e.loaded_at).is_none()),
                loader_pid: ev.and_then(|e| e.loader_pid),
                loader_comm: ev
                    .and_then(|e| Some((e.loader_pid?, e.loader_tid?)))
                    .map(|(_, tid)| p.sym.threads.comm_name(tid)),
                run_cnt: info.filter(|i| i.run_cnt > 0).map(|i| i.run_cnt),
                run_time_ns: info.filter(|i| i.run_cnt > 0).map(|i| i.run_time_ns),
                has_info: info.is_some(),
                by: pc.map_or_else(Vec::new, |pc| by_rows(pc, &pct)),
            }
        })
        .collect();
    let key = |s: &ProgSummary| s.head.samples.total.unwrap_or(s.head.samples.own);
    programs.sort_by(|a, b| key(b).cmp(&key(a)).then(a.head.id.cmp(&b.head.id)));
    let samples: u64 = programs.iter().map(|s| s.head.samples.own).sum();
    let stats = cost.and_then(|c| c.stats).map(|s| StatsSummary {
        samples: s.samples.samples,
        percent: pct(s.samples.samples),
        runs: s.runs,
        ns_per_run: counts_ns(&p.event).then(|| s.samples.period as f64 / s.runs as f64),
    });
    Some(BpfSummary {
        total,
        callchains: cost.is_some(),
        samples,
        percent: pct(samples),
        programs,
        sites: cost.map_or_else(Vec::new, |c| {
            c.sites
                .iter()
                .map(|s| SiteSummary {
                    site: s.site.describe(),
                    samples: s.counts.samples,
                    split_by: s.split_by,
                    programs: s.progs.iter().map(|x| x.0).collect(),
                })
                .collect()
        }),
        unclaimed_hook: cost.map_or(0, |c| c.unclaimed.samples),
        deferred_hook: cost.map_or(0, |c| c.deferred.samples),
        stats,
        unattributed: unattributed.into_iter().collect(),
    })
}

/// A program's `--by` rows, costliest first.
fn by_rows(pc: &crate::analyze::bpf_cost::ProgCost, pct: &dyn Fn(u64) -> f64) -> Vec<ByRow> {
    let mut rows: Vec<ByRow> = pc
        .by
        .iter()
        .map(|(v, c)| {
            let parts = Parts {
                own: c.own.samples,
                called: Some(c.called.samples),
                hook: Some(c.hook.samples),
                total: Some(c.total().samples),
            };
            ByRow {
                value: v.clone(),
                samples: parts,
                percent: Shares {
                    own: pct(parts.own),
                    called: parts.called.map(pct),
                    hook: parts.hook.map(pct),
                    total: parts.total.map(pct),
                },
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.samples
            .total
            .cmp(&a.samples.total)
            .then_with(|| a.value.cmp(&b.value))
    });
    rows
}

/// A load time as (clock time, time before the recording started), both
/// in nanoseconds, from the clocks the recorder read as it started.
fn dated(
    info: Option<&perfdata::BpfProgInfo>,
    meta: Option<&perfdata::BpfProgMeta>,
) -> Option<(u64, u64)> {
    let load = info.map(|i| i.load_time).filter(|&t| t > 0)?;
    let (boot, real) = meta?.clock?;
    let before = boot.saturating_sub(load);
    Some((real.saturating_sub(before), before))
}

/// Whether the sampling event's period is in nanoseconds.
fn counts_ns(event: &str) -> bool {
    event.starts_with("cpu-clock") || event.starts_with("task-clock")
}

/// The program's name as bpftool prints it: the main function's BTF
/// name, else the kernel's (cut to 15 bytes), else the symbol's.
fn full_name(rec: Option<&crate::analyze::profile::ProgRecord>, subs: &[SubSummary]) -> String {
    if let Some(info) = rec.and_then(|r| r.info.as_ref()) {
        // Only the name is wanted: the BTF alone, not the line tables a
        // whole `Program` would build.
        let main = info.func_info.first().map(|f| f.type_id);
        let btf = rec.and_then(|r| r.btf.as_deref());
        if let (Some(id), Some(Ok(btf))) = (main, btf.map(bpfinfo::Btf::parse)) {
            if let Some(n) = btf.func_name(id).filter(|n| !n.is_empty()) {
                return n.to_string();
            }
        }
        if !info.name.is_empty() {
            return info.name.clone();
        }
    }
    subs.first()
        .map(|s| short_name(&s.name))
        .unwrap_or_default()
}

/// `bpf_prog_<tag>_<name>` → `<name>`.
fn short_name(ksym: &str) -> String {
    ksym.strip_prefix("bpf_prog_")
        .and_then(|r| r.split_once('_'))
        .map_or_else(|| ksym.to_string(), |(_, n)| n.to_string())
}
