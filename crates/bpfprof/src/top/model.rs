//! One look at the live profile, over the interval since the last one
//! (the engine forgets its counts after each): plain numbers the window
//! adds up. Kept apart from the engine so that the window,
//! the UI and the JSON are tested on made-up snapshots.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use crate::analyze::bpf_view::{self, AttachPoint, Owner};
use crate::analyze::table::{self, Filters};
use crate::analyze::Profile;

/// A symbols-pane row's identity: what perf top shows, plus the command
/// (for the `/` filter), by name, so that it is stable across snapshots.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SymKey {
    pub kernel: bool,
    pub sym: String,
    pub dso: String,
    pub comm: String,
}

/// A program's numbers over the interval.
#[derive(Debug, Clone, Default)]
pub struct ProgCum {
    pub id: u32,
    pub name: String,
    pub tag: String,
    pub prog_type: String,
    /// Samples in its own code, in what it called, in its hook; the last
    /// two `None` without call chains.
    pub own: u64,
    pub called: Option<u64>,
    pub hook: Option<u64>,
    /// (index, name, own samples) per sub-program.
    pub subprogs: Vec<(u32, String, u64)>,
    pub owners: Vec<Owner>,
    pub attach: Vec<AttachPoint>,
    /// `bpf_prog_info.load_time`: nanoseconds since boot.
    pub load_time_ns: Option<u64>,
}

/// Everything `top` shows of one interval.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Samples of the sampling event in the interval.
    pub samples: u64,
    pub lost: u64,
    pub callchains: bool,
    pub progs: BTreeMap<u32, ProgCum>,
    /// Samples per symbol row.
    pub syms: FxHashMap<SymKey, u64>,
    /// The kernel's run-time stats (run_cnt, run_time_ns) of each live
    /// program, read at this moment while stats are on.
    pub stats: BTreeMap<u32, (u64, u64)>,
    /// Programs reported unloaded.
    pub unloaded: Vec<u32>,
    /// CLOCK_BOOTTIME at this moment, for how long programs are loaded.
    pub boot_ns: u64,
}

impl Snapshot {
    /// The profile's programs (the BPF view `report --bpf` shows) and
    /// symbol rows (`report --sort comm,dso,sym`).
    pub fn from_profile(p: &Profile) -> Snapshot {
        let mut s = Snapshot {
            samples: p.total.samples,
            lost: p.lost + p.lost_samples,
            callchains: p.bpf_cost.is_some(),
            ..Default::default()
        };
        if let Some(view) = bpf_view::summarize(p, &Filters::default()) {
            for g in view.programs {
                s.progs.insert(
                    g.head.id,
                    ProgCum {
                        id: g.head.id,
                        name: g.head.name,
                        tag: g.head.tag,
                        prog_type: g.head.prog_type,
                        own: g.head.samples.own,
                        called: g.head.samples.called,
                        hook: g.head.samples.hook,
                        subprogs: g
                            .subprogs
                            .into_iter()
                            .map(|x| (x.index, x.name, x.samples))
                            .collect(),
                        owners: g.owners,
                        attach: g.attach,
                        load_time_ns: g.load_time_ns,
                    },
                );
            }
        }
        for (k, c) in &p.rows {
            let sym = &p.sym.syms[k.frame.sym as usize];
            let key = SymKey {
                kernel: table::is_kernel_sym(p, k),
                sym: sym.name.clone(),
                dso: p.sym.dsos[k.frame.dso as usize].short.clone(),
                comm: p.sym.threads.comms[k.comm as usize].clone(),
            };
            *s.syms.entry(key).or_default() += c.samples;
        }
        s
    }
}
