//! The profile model: what a recording comes to once the engine
//! (`analyze::engine`) has attributed every sample. Every view — the
//! table, call graphs, the BPF view, annotate, exports, top — reads a
//! [`Profile`] and nothing else.

use std::collections::BTreeMap;

use perfdata::{BpfProgInfo, PerfFile};
use rustc_hash::FxHashMap;

use crate::symbolize::{CommId, Frame, Loc, Symbolizer};

/// How a sample is keyed before any `--sort` is applied: the finest
/// grouping a report can ask for. Built with
/// [`ProfileOptions::merge_threads`], `comm`, `pid` and `tid` are 0 and
/// mean nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RowKey {
    pub comm: CommId,
    /// Process id (what `--pid` filters on).
    pub pid: u32,
    /// Thread id: perf's `pid` sort key is the thread.
    pub tid: u32,
    /// The CPU, with [`ProfileOptions::cpus`] (else 0); `u16::MAX` when
    /// the recording has none.
    pub cpu: u16,
    pub frame: Frame,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub samples: u64,
    pub period: u64,
}

impl Counts {
    pub fn add(&mut self, period: u64) {
        self.samples += 1;
        self.period += period;
    }

    pub fn merge(&mut self, o: Counts) {
        self.samples += o.samples;
        self.period += o.period;
    }
}

/// Call stacks as a prefix tree: node = (parent, frame), root = 0, every
/// node after its parent. Equal frame stacks may be different nodes (they
/// mirror the recording's address stacks); readers merge by frame.
#[derive(Debug, Default)]
pub struct Stacks {
    pub nodes: Vec<(u32, Frame)>,
}

impl Stacks {
    /// Frames of a stack, leaf first.
    pub fn frames(&self, mut node: u32) -> impl Iterator<Item = Frame> + '_ {
        std::iter::from_fn(move || {
            if node == 0 {
                return None;
            }
            let (parent, f) = self.nodes[node as usize];
            node = parent;
            Some(f)
        })
    }
}

/// A BPF program as the recording knows it.
#[derive(Debug, Clone, Default)]
pub struct ProgRecord {
    pub info: Option<BpfProgInfo>,
    pub btf: Option<Vec<u8>>,
    /// Owners, attachments and maps, where the recorder captured them.
    pub meta: Option<perfdata::BpfProgMeta>,
}

/// Options for building a profile.
#[derive(Debug, Clone, Default)]
pub struct ProfileOptions {
    /// Keep call stacks (needed for `-g` and `--children`).
    pub callchains: bool,
    pub kallsyms: Option<std::path::PathBuf>,
    pub symfs: Option<std::path::PathBuf>,
    /// Show progress on stderr.
    pub progress: bool,
    /// Count samples per instruction address (for annotate).
    pub ip_hits: bool,
    /// Aggregate all threads together: rows keep no command, pid or tid.
    /// For reports that neither show nor filter on them, this makes rows
    /// per location instead of per (thread, location): fewer than half as
    /// many on a busy system, and every later step is per row.
    pub merge_threads: bool,
    /// Replay every sample in time order even for a flat profile, which
    /// does not need it (for tests that hold the two passes equal).
    pub ordered: bool,
    /// Keep each sample's CPU on its row (for `--sort cpu`).
    pub cpus: bool,
    /// Keep every sample, of every event, in time order, as
    /// [`Profile::samples`] (for `script`, which prints each one). Only
    /// the sampling event's are counted on rows.
    pub samples: bool,
}

/// One sample as the ordered pass settled it: its event (the attr's index
/// in the file), its row's key and location (the sampled address's), and
/// its stack's leaf node (0 without one). A sample of another event than
/// the sampling one has a key of its own, on no row of the profile.
#[derive(Debug, Clone, Copy)]
pub struct SampleAt {
    pub attr: u16,
    pub key: RowKey,
    pub loc: Loc,
    pub node: u32,
}

pub struct Profile {
    pub sym: Symbolizer,
    /// Counts by row key. A key may appear more than once (one entry per
    /// location that resolved to it): every reader groups rows anyway.
    pub rows: Vec<(RowKey, Counts)>,
    pub stacks: Stacks,
    /// (row, stack leaf node) → counts; filled with `callchains`.
    /// (row, stack leaf node) → counts, as one entry per distinct
    /// location stack: a key may repeat, and readers group anyway.
    pub chains: Vec<((RowKey, u32), Counts)>,
    pub total: Counts,
    /// The sampling event whose samples are aggregated, by name.
    pub event: String,
    /// Samples of other events, by name (reported, not aggregated).
    pub other_events: BTreeMap<String, u64>,
    pub lost: u64,
    pub lost_samples: u64,
    pub first_time: u64,
    pub last_time: u64,
    pub progs: BTreeMap<u32, ProgRecord>,
    /// (symbol, address in the symbol's own space: kernel address, or ELF
    /// virtual address for user code) → counts; filled with `ip_hits`.
    pub ip_hits: FxHashMap<(crate::symbolize::SymId, u64), Counts>,
    /// (BPF registration, offset in its code) → counts; filled with
    /// `ip_hits`. Kept per registration, not per symbol: programs with the
    /// same name share a report row but each has its own image.
    pub bpf_hits: FxHashMap<(crate::symbolize::BpfSymId, u32), Counts>,
    /// Samples per BPF registration (the BPF view's unit).
    pub bpf_samples: FxHashMap<crate::symbolize::BpfSymId, Counts>,
    /// (BPF registration, offset of a return address in its code) →
    /// samples in code called from there: helpers, map operations, kfuncs.
    /// Filled with `callchains`, from each sample's innermost BPF frame
    /// that is not its leaf.
    pub bpf_calls: FxHashMap<(crate::symbolize::BpfSymId, u32), Counts>,
    /// Stack node → offset of its address in its BPF symbol, for the
    /// stack nodes in BPF code.
    pub bpf_offsets: FxHashMap<u32, u32>,
    /// What each BPF program cost, in parts, over the whole profile
    /// (`None` without call chains: then only samples in programs'
    /// own code are known).
    pub bpf_cost: Option<super::bpf_cost::BpfCost>,
    pub warnings: Vec<String>,
    /// Each shared object's group for `--sort dso`: the first one with
    /// its short name (perf compares the names it prints: two binaries
    /// called `rustc` are one row).
    pub dso_groups: Vec<u32>,
    /// Whether every record was replayed in time order, rather than only
    /// the side band (see `flat_pass`): with call chains, when asked for,
    /// and for files the flat pass cannot take.
    pub ordered_pass: bool,
    /// Every sample, of every event, in time order (the order of
    /// `PerfFile::records`), filled with [`ProfileOptions::samples`].
    pub samples: Vec<SampleAt>,
    /// The location of each stack node (as `stacks`), filled with
    /// [`ProfileOptions::samples`]: the addresses a script prints.
    pub stack_locs: Vec<Loc>,
}

/// The attr whose samples a profile aggregates: the first that is not a
/// dummy (perf's side-band event).
pub fn sampling_attr(file: &PerfFile) -> usize {
    sampling_index(file.attrs())
}

/// [`sampling_attr`] of a list of attrs.
pub fn sampling_index(attrs: &[perfdata::AttrEntry]) -> usize {
    attrs
        .iter()
        .position(|a| {
            !(a.attr.type_ == perfdata::event_type::SOFTWARE
                && a.attr.config == perfdata::sw::DUMMY)
        })
        .unwrap_or(0)
}

/// Whether the recording's samples carry call chains (`record -g`).
pub fn has_callchains(file: &PerfFile) -> bool {
    file.attrs()
        .get(sampling_attr(file))
        .is_some_and(|a| a.attr.sample_type & perfdata::sample_type::CALLCHAIN != 0)
}

impl Profile {
    /// The `--sort dso` group of shared object `dso`.
    pub fn dso_group(&self, dso: u32) -> u32 {
        self.dso_groups.get(dso as usize).copied().unwrap_or(dso)
    }

    /// Share of all samples' period, in percent.
    pub fn percent(&self, c: &Counts) -> f64 {
        if self.total.period == 0 {
            0.0
        } else {
            100.0 * c.period as f64 / self.total.period as f64
        }
    }
}

/// `--comm`, `--pid`, `--tid`, `--dso` filters (each a set; empty = all).
#[derive(Debug, Clone, Default)]
pub struct Filters {
    pub comms: Vec<String>,
    pub pids: Vec<u32>,
    pub tids: Vec<u32>,
    pub dsos: Vec<String>,
}

impl Filters {
    pub fn keep(&self, p: &Profile, k: &RowKey) -> bool {
        (self.comms.is_empty()
            || self
                .comms
                .iter()
                .any(|c| *c == p.sym.threads.comms[k.comm as usize]))
            && (self.pids.is_empty() || self.pids.contains(&k.pid))
            && (self.tids.is_empty() || self.tids.contains(&k.tid))
            && (self.dsos.is_empty() || {
                let d = &p.sym.dsos[k.frame.dso as usize];
                self.dsos.iter().any(|x| *x == d.short || *x == d.name)
            })
    }
}
