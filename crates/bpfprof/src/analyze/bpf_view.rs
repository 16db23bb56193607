//! The BPF view of a profile: per program, all sub-programs summed, with
//! its lifetime in the recording, its loader, and the kernel's own run-time
//! stats where the file has them. Trampolines and dispatchers are charged
//! to the programs they serve where the recording says which.

use std::collections::BTreeMap;

use serde::Serialize;

use super::profile::{Counts, Profile};
use crate::symbolize::BpfSymId;

#[derive(Debug, Clone, Serialize)]
pub struct SubSummary {
    pub index: u32,
    pub name: String,
    pub samples: u64,
    pub percent: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProgSummary {
    pub id: u32,
    pub name: String,
    pub prog_type: String,
    pub tag: String,
    pub samples: u64,
    pub percent: f64,
    pub subprogs: Vec<SubSummary>,
    /// Seconds from the first sample; `None` = loaded before the recording.
    pub loaded_at: Option<f64>,
    pub unloaded_at: Option<f64>,
    pub loader_pid: Option<u32>,
    pub loader_comm: Option<String>,
    /// Kernel stats over the recording, where the file carries them.
    pub run_cnt: Option<u64>,
    pub run_time_ns: Option<u64>,
    /// Whether the file holds this program's bpf_prog_info (needed to
    /// annotate it).
    pub has_info: bool,
    /// Samples in trampolines/dispatchers charged to this program.
    pub image_samples: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ImageSummary {
    pub name: String,
    pub samples: u64,
    pub percent: f64,
    /// The program this image serves, when exactly one does.
    pub charged_to: Option<u32>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BpfSummary {
    pub samples: u64,
    pub percent: f64,
    pub programs: Vec<ProgSummary>,
    pub images: Vec<ImageSummary>,
    /// BPF symbols whose program id the recording never named.
    pub unattributed: Vec<ImageSummary>,
}

fn pct(p: &Profile, c: Counts) -> f64 {
    p.percent(&c)
}

/// Summarize the BPF part of a profile; `None` when it has no BPF samples.
pub fn summarize(p: &Profile) -> Option<BpfSummary> {
    // Per registration, not per report row: programs whose functions
    // share a name (same bytecode, same tag) share a row, as in perf, but
    // each program is charged only its own samples here.
    let by_sym: BTreeMap<BpfSymId, Counts> = p.bpf_samples.iter().map(|(&b, &c)| (b, c)).collect();
    if by_sym.is_empty() {
        return None;
    }
    let t0 = p.first_time;
    let secs = |t: u64| (t.saturating_sub(t0)) as f64 / 1e9;
    // Per program: its total, and per sub-program (name, counts).
    type Subs = BTreeMap<u32, (String, Counts)>;
    let mut progs: BTreeMap<u32, (Counts, Subs)> = BTreeMap::new();
    let mut images = Vec::new();
    let mut unattributed = Vec::new();
    let mut total = Counts::default();
    for (&b, &c) in &by_sym {
        total.samples += c.samples;
        total.period += c.period;
        let s = &p.sym.bpf.syms[b as usize];
        match s.prog {
            Some((id, sub)) if !s.image => {
                let e = progs.entry(id).or_default();
                e.0.samples += c.samples;
                e.0.period += c.period;
                let sub_e =
                    e.1.entry(sub)
                        .or_insert_with(|| (s.name.clone(), Counts::default()));
                sub_e.1.samples += c.samples;
                sub_e.1.period += c.period;
            }
            _ if s.image => images.push(ImageSummary {
                name: s.name.clone(),
                samples: c.samples,
                percent: pct(p, c),
                charged_to: serving_prog(p, &s.name),
            }),
            _ => unattributed.push(ImageSummary {
                name: s.name.clone(),
                samples: c.samples,
                percent: pct(p, c),
                charged_to: None,
            }),
        }
    }
    for img in &images {
        if let Some(id) = img.charged_to {
            progs.entry(id).or_default();
        }
    }
    let mut programs: Vec<ProgSummary> = progs
        .into_iter()
        .map(|(id, (c, subs))| {
            let rec = p.progs.get(&id);
            let info = rec.and_then(|r| r.info.as_ref());
            let ev = p.sym.bpf.events.get(&id);
            let subprogs: Vec<SubSummary> = subs
                .into_iter()
                .map(|(index, (name, sc))| SubSummary {
                    index,
                    name,
                    samples: sc.samples,
                    percent: pct(p, sc),
                })
                .collect();
            let image_samples: u64 = images
                .iter()
                .filter(|i| i.charged_to == Some(id))
                .map(|i| i.samples)
                .sum();
            let name = info
                .map(|i| i.name.clone())
                .filter(|n| !n.is_empty())
                .or_else(|| subprogs.first().map(|s| short_name(&s.name)))
                .unwrap_or_default();
            ProgSummary {
                id,
                name,
                prog_type: info
                    .and_then(|i| bpfinfo::prog_type_name(i.prog_type))
                    .unwrap_or("?")
                    .to_string(),
                tag: perfdata::hex(
                    &info
                        .map(|i| i.tag)
                        .or(ev.map(|e| e.tag))
                        .unwrap_or_default(),
                ),
                samples: c.samples,
                percent: pct(p, c),
                subprogs,
                loaded_at: ev.and_then(|e| e.loaded_at).map(secs),
                unloaded_at: ev.and_then(|e| e.unloaded_at).map(secs),
                loader_pid: ev.and_then(|e| e.loader_pid),
                loader_comm: ev
                    .and_then(|e| Some((e.loader_pid?, e.loader_tid?)))
                    .map(|(_, tid)| p.sym.threads.comm_name(tid)),
                run_cnt: info.filter(|i| i.run_cnt > 0).map(|i| i.run_cnt),
                run_time_ns: info.filter(|i| i.run_cnt > 0).map(|i| i.run_time_ns),
                has_info: info.is_some(),
                image_samples,
            }
        })
        .collect();
    programs.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.id.cmp(&b.id)));
    images.sort_by_key(|i| std::cmp::Reverse(i.samples));
    Some(BpfSummary {
        samples: total.samples,
        percent: pct(p, total),
        programs,
        images,
        unattributed,
    })
}

/// `bpf_prog_<tag>_<name>` → `<name>`.
fn short_name(ksym: &str) -> String {
    ksym.strip_prefix("bpf_prog_")
        .and_then(|r| r.split_once('_'))
        .map_or_else(|| ksym.to_string(), |(_, n)| n.to_string())
}

/// The one program an image serves: a trampoline's key is
/// `attach_btf_obj_id << 32 | attach_btf_id` of the programs attached
/// through it; a dispatcher serves the XDP programs.
fn serving_prog(p: &Profile, image: &str) -> Option<u32> {
    let infos = p.progs.values().filter_map(|r| r.info.as_ref());
    let candidates: Vec<u32> = if let Some(key) = image.strip_prefix("bpf_trampoline_") {
        let key: u64 = key.parse().ok()?;
        infos
            .filter(|i| {
                ((i.attach_btf_obj_id as u64) << 32 | i.attach_btf_id as u64) == key
                    && i.attach_btf_id != 0
            })
            .map(|i| i.id)
            .collect()
    } else if image.starts_with("bpf_dispatcher_xdp") {
        infos.filter(|i| i.prog_type == 6).map(|i| i.id).collect()
    } else {
        Vec::new()
    };
    match candidates.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}
