//! One pass over a recording: replay the side-band records in time order,
//! resolve every sample, and aggregate. Everything a report or annotate
//! shows is derived from a [`Profile`].

use std::collections::BTreeMap;
use std::sync::mpsc::TryRecvError;

use anyhow::{Context, Result};
use perfdata::{BpfProgInfo, PerfFile};

use super::early_frames::{EarlyFrames, LocKey};
use super::events::{is_kernel_mode, note, owner, Event, MmapEvent};
use super::memo::{Changes, RowCache, SampleKey};
use super::raw_stacks::NodeKind;
use rustc_hash::FxHashMap;

use crate::symbolize::Map;
use crate::symbolize::{BpfSymbols, CommId, DsoId, DsoKind, Frame, Loc, Symbolizer};

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

/// Location rows: counts by (command, pid, tid, location), each key once.
#[derive(Default)]
pub(super) struct LocRows {
    pub index: FxHashMap<LocKey, u32>,
    pub rows: Vec<(LocKey, Counts)>,
}

impl LocRows {
    /// Count on a new row whose key no other row has or will have, without
    /// the index: the flat pass's rows by location are unique by making.
    pub fn push_unique(&mut self, key: LocKey, c: Counts) {
        self.rows.push((key, c));
    }
}

/// What a pass over the records leaves for resolving.
#[derive(Default)]
pub(super) struct Pass {
    pub rows: LocRows,
    /// Location stacks: (parent, location), root first.
    pub loc_nodes: Vec<(u32, Loc)>,
    /// (row, stack leaf node) → counts.
    pub loc_chains: FxHashMap<(u32, u32), Counts>,
    /// Stack node → offset of its address in its BPF symbol.
    pub bpf_offsets: FxHashMap<u32, u32>,
    pub early: EarlyFrames,
    /// (location row, stack leaf node) of each sample, with `samples`.
    pub samples: Vec<(u32, u32)>,
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
    /// Keep every sample of the sampling event, in time order, as
    /// [`Profile::samples`] (for `script`, which prints each one).
    pub samples: bool,
}

/// One sample as the ordered pass settled it: its row's key and location
/// (the sampled address's), and its stack's leaf node (0 without one).
#[derive(Debug, Clone, Copy)]
pub struct SampleAt {
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
    /// Whether every record was replayed in time order, rather than only
    /// the side band (see `flat_pass`): with call chains, when asked for,
    /// and for files the flat pass cannot take.
    pub ordered_pass: bool,
    /// Every sample of the sampling event in time order (the order of
    /// `PerfFile::records`), filled with [`ProfileOptions::samples`].
    pub samples: Vec<SampleAt>,
    /// The location of each stack node (as `stacks`), filled with
    /// [`ProfileOptions::samples`]: the addresses a script prints.
    pub stack_locs: Vec<Loc>,
}

/// The attr whose samples a profile aggregates: the first that is not a
/// dummy (perf's side-band event).
pub fn sampling_attr(file: &PerfFile) -> usize {
    file.attrs()
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
    pub fn build(file: &PerfFile, opts: &ProfileOptions) -> Result<Profile> {
        let path = file
            .path()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let f = file.features();
        let mut warnings: Vec<String> = f.warnings.clone();

        let mut progs: BTreeMap<u32, ProgRecord> = BTreeMap::new();
        let btfs: FxHashMap<u32, &Vec<u8>> = f
            .bpf_btf
            .iter()
            .flatten()
            .map(|b| (b.id, &b.data))
            .collect();
        for info in f.bpf_prog_info.iter().flatten() {
            let btf = (info.btf_id != 0)
                .then(|| btfs.get(&info.btf_id).map(|b| (*b).clone()))
                .flatten();
            progs.insert(
                info.id,
                ProgRecord {
                    info: Some(info.clone()),
                    btf,
                    meta: None,
                },
            );
        }
        for m in &f.bpf_prog_meta {
            progs.entry(m.prog_id).or_default().meta = Some(m.clone());
        }
        let bpf = BpfSymbols::new(
            progs
                .iter()
                .filter_map(|(&id, p)| Some((id, p.info.as_ref()?.jited_ksyms.clone()))),
        );

        let kallsyms_path = opts
            .kallsyms
            .clone()
            .unwrap_or_else(|| "/proc/kallsyms".into());
        if let (Some(rec), Ok(run)) = (
            &f.osrelease,
            std::fs::read_to_string("/proc/sys/kernel/osrelease"),
        ) {
            if opts.kallsyms.is_none() && rec.trim() != run.trim() {
                warnings.push(format!(
                    "recorded on kernel {} but running {}: kernel symbols may be wrong (use --kallsyms FILE)",
                    rec.trim(),
                    run.trim()
                ));
            }
        }
        let mut sym = Symbolizer::new(kallsyms_path.clone(), bpf);
        sym.symfs = opts.symfs.clone();
        for b in &f.build_ids {
            sym.build_ids.insert(b.filename.clone(), b.build_id.clone());
        }

        let attrs = file.attrs();
        let sampling = sampling_attr(file);

        let mut p = Profile {
            sym,
            rows: Vec::new(),
            stacks: Stacks::default(),
            chains: Vec::new(),
            total: Counts::default(),
            event: attrs[sampling].name.clone(),
            other_events: BTreeMap::new(),
            lost: 0,
            lost_samples: 0,
            first_time: u64::MAX,
            last_time: 0,
            progs,
            ip_hits: FxHashMap::default(),
            bpf_hits: FxHashMap::default(),
            bpf_samples: FxHashMap::default(),
            bpf_calls: FxHashMap::default(),
            bpf_offsets: FxHashMap::default(),
            bpf_cost: None,
            warnings,
            ordered_pass: false,
            samples: Vec::new(),
            stack_locs: Vec::new(),
        };
        let mut progress = crate::progress::Progress::new(opts.progress, file.data_size());
        let flat = match opts.callchains || opts.ordered || opts.samples {
            true => None,
            false => super::flat_pass::run(file, &mut p, opts, sampling, &mut progress),
        };
        let pass = match flat {
            Some(pass) => pass,
            None => {
                p.ordered_pass = true;
                p.replay_in_order(file, opts, sampling, &mut progress, &path)?
            }
        };
        progress.finish();
        p.finish(pass, opts, &kallsyms_path);
        Ok(p)
    }

    /// The pass that replays every record in time order: the one for call
    /// chains, and for files the flat pass cannot take.
    fn replay_in_order(
        &mut self,
        file: &PerfFile,
        opts: &ProfileOptions,
        sampling: usize,
        progress: &mut crate::progress::Progress,
        path: &str,
    ) -> Result<Pass> {
        let p = self;
        let attrs = file.attrs();
        // The pass settles each address to a location; symbols are looked
        // up once per distinct location, while the replay waits for
        // records if its symbols are loaded by then, else after the pass.
        let mut rows = LocRows::default();
        // Location stacks mirror the reader's address stacks: raw node id →
        // location node id (a process root maps to the root).
        let mut loc_nodes: Vec<(u32, Loc)> = vec![(0, Loc::Unknown(0))];
        let mut raw_to_loc: Vec<u32> = vec![0];
        // (row, stack leaf node) → counts.
        let mut loc_chains: FxHashMap<(u32, u32), Counts> = FxHashMap::default();
        // Stack node → offset of its address in its BPF symbol.
        let mut bpf_offsets: FxHashMap<u32, u32> = FxHashMap::default();
        let mut changes = Changes::default();
        let mut row_cache = RowCache::default();
        let mut early = EarlyFrames::default();
        let mut samples: Vec<(u32, u32)> = Vec::new();
        let (tx, rx) = std::sync::mpsc::sync_channel(4);
        let (give_back, recycle) = std::sync::mpsc::channel();
        std::thread::scope(|scope| -> Result<()> {
            if opts.callchains {
                let (to_intern, interned) = std::sync::mpsc::sync_channel(4);
                scope.spawn(|| super::events::stream(file, true, to_intern, recycle));
                scope.spawn(|| super::events::intern_stacks(interned, tx));
            } else {
                scope.spawn(|| super::events::stream(file, false, tx, recycle));
            }
            loop {
                let batch = match rx.try_recv() {
                    Ok(b) => b,
                    Err(TryRecvError::Disconnected) => break,
                    Err(TryRecvError::Empty) => {
                        if early.step(&mut p.sym, &loc_nodes, &rows.rows, opts.callchains) {
                            continue;
                        }
                        match rx.recv() {
                            Ok(b) => b,
                            Err(_) => break,
                        }
                    }
                };
                let mut batch = batch.with_context(|| format!("reading {path}"))?;
                progress.update(batch.offset);
                p.warnings.append(&mut batch.warnings);
                let mut seen = 0;
                for ev in &batch.events {
                    note(&mut changes, ev);
                    match *ev {
                        Event::Sample {
                            attr,
                            misc,
                            pid,
                            tid,
                            ip,
                            period,
                            time,
                            stack: (leaf, seen_by),
                        } => {
                            for n in &batch.nodes[seen..seen_by as usize] {
                                let id = match n.kind {
                                    NodeKind::Process => 0,
                                    kind => {
                                        let kernel = kind == NodeKind::Kernel;
                                        let loc = p.sym.locate(pid, n.addr, kernel);
                                        loc_nodes.push((raw_to_loc[n.parent as usize], loc));
                                        if let Loc::Bpf(b) = loc {
                                            let start = p.sym.bpf.syms[b as usize].addr;
                                            bpf_offsets.insert(
                                                loc_nodes.len() as u32 - 1,
                                                (n.addr - start) as u32,
                                            );
                                        }
                                        loc_nodes.len() as u32 - 1
                                    }
                                };
                                raw_to_loc.push(id);
                            }
                            seen = seen_by as usize;
                            if attr as usize != sampling {
                                *p.other_events
                                    .entry(attrs[attr as usize].name.clone())
                                    .or_default() += 1;
                                continue;
                            }
                            let kernel = is_kernel_mode(misc, ip);
                            let (ctid, cpid) = owner(opts.merge_threads, kernel, tid, pid);
                            let key = SampleKey {
                                tid: ctid,
                                pid: cpid,
                                ip,
                                kernel,
                            };
                            let period = period.max(1);
                            p.total.add(period);
                            let row = match row_cache.count(&changes, key, period) {
                                Some(row) => row,
                                None => {
                                    let one = Counts { samples: 1, period };
                                    let (row, loc) =
                                        p.settle(&mut rows, opts, (pid, tid, ip, kernel), one);
                                    // BPF samples are not cached: each is
                                    // also counted per registration.
                                    if !matches!(loc, Loc::Bpf(_)) {
                                        if let Some((r, c)) = row_cache.put(&changes, key, row) {
                                            rows.rows[r as usize].1.merge(c);
                                        }
                                    }
                                    row
                                }
                            };
                            p.first_time = p.first_time.min(time);
                            p.last_time = p.last_time.max(time);
                            if opts.callchains {
                                let node = raw_to_loc[leaf as usize];
                                loc_chains.entry((row, node)).or_default().add(period);
                            }
                            if opts.samples {
                                samples.push((row, raw_to_loc[leaf as usize]));
                            }
                        }
                        ref side => p.apply(side),
                    }
                }
                let _ = give_back.send(batch);
            }
            Ok(())
        })?;
        for (r, c) in row_cache.drain() {
            rows.rows[r as usize].1.merge(c);
        }
        Ok(Pass {
            rows,
            loc_nodes,
            loc_chains,
            bpf_offsets,
            early,
            samples,
        })
    }

    /// Replay a record other than a sample.
    pub(super) fn apply(&mut self, ev: &Event) {
        match *ev {
            Event::Comm(ref c) => self.sym.threads.set_comm(c.tid, &c.comm),
            Event::Fork {
                pid,
                ppid,
                tid,
                ptid,
            } => self.sym.threads.fork(pid, ppid, tid, ptid),
            Event::Exit { pid, tid } => self.sym.threads.exit(pid, tid),
            Event::Mmap(ref m) => self.map(m),
            Event::Ksymbol(ref k) => {
                if k.unregister {
                    self.sym.bpf.unregister(k.addr, &k.name, k.time);
                } else if k.len > 0 {
                    self.sym.bpf.register(k.addr, k.len, &k.name, k.time);
                }
            }
            Event::BpfProg {
                load,
                id,
                tag,
                time,
                pid,
                tid,
            } => {
                self.sym.bpf.bpf_event(load, id, tag, time, pid, tid);
                if load && time != 0 {
                    // Keep the loader's name while it is known.
                    self.sym.threads.comm_of(tid);
                }
            }
            Event::Lost(n) => self.lost += n,
            Event::LostSamples(n) => self.lost_samples += n,
            Event::Sample { .. } => {}
        }
    }

    /// Settle where a sample (or a count of like samples) went, as of now
    /// in the replay, and count it on its location row.
    pub(super) fn settle(
        &mut self,
        rows: &mut LocRows,
        opts: &ProfileOptions,
        (pid, tid, ip, kernel): (u32, u32, u64, bool),
        c: Counts,
    ) -> (u32, Loc) {
        let loc = self.sym.locate(pid, ip, kernel);
        let row = self.count_at(rows, opts, (pid, tid, ip), loc, c);
        (row, loc)
    }

    /// Count a sample (or like samples) at the address `ip` on the row of
    /// its location `loc`, already settled; its row.
    pub(super) fn count_at(
        &mut self,
        rows: &mut LocRows,
        opts: &ProfileOptions,
        (pid, tid, ip): (u32, u32, u64),
        loc: Loc,
        c: Counts,
    ) -> u32 {
        let lkey = match opts.merge_threads {
            true => (0, 0, 0, loc),
            false => (self.sym.threads.comm_of(tid), pid, tid, loc),
        };
        let row = *rows.index.entry(lkey).or_insert_with(|| {
            rows.rows.push((lkey, Counts::default()));
            rows.rows.len() as u32 - 1
        });
        rows.rows[row as usize].1.merge(c);
        if let Loc::Bpf(b) = loc {
            self.bpf_samples.entry(b).or_default().merge(c);
            if opts.ip_hits {
                let off = (ip - self.sym.bpf.syms[b as usize].addr) as u32;
                self.bpf_hits.entry((b, off)).or_default().merge(c);
            }
        }
        row
    }

    /// Resolve the rows and stacks a pass left, once every symbol source
    /// is loaded.
    fn finish(&mut self, pass: Pass, opts: &ProfileOptions, kallsyms_path: &std::path::Path) {
        let p = self;
        let Pass {
            rows:
                LocRows {
                    index: row_index,
                    rows: loc_rows,
                },
            loc_nodes,
            loc_chains,
            bpf_offsets,
            early,
            samples,
        } = pass;
        p.sym.finish_loading();
        if p.sym.kallsyms.restricted {
            p.warnings.push(format!(
                "{}: kernel addresses are hidden (kptr_restrict): kernel symbols show as addresses; run as root or set kernel.kptr_restrict=0",
                kallsyms_path.display()
            ));
        }
        // In address order, so that the symbol tables are walked forward
        // rather than probed at random.
        drop(row_index);
        let mut order: Vec<(Loc, u32)> = loc_rows
            .iter()
            .enumerate()
            .map(|(i, r)| (r.0 .3, i as u32))
            .collect();
        sort_mostly_sorted(&mut order);
        p.rows.reserve(order.len());
        let mut last: Option<(Loc, Frame)> = None;
        // Each location row's key, by row: chains refer to rows (a flat
        // profile has none, and needs no keys).
        let mut row_keys: Vec<Option<RowKey>> = match loc_chains.is_empty() && !opts.samples {
            true => Vec::new(),
            false => vec![None; loc_rows.len()],
        };
        // The user functions of the rows resolved below, looked up first
        // on every core: the lookups only read.
        let users = match opts.callchains {
            true => Vec::new(),
            false => users_to_resolve(&order, &early),
        };
        let frames = p.sym.resolve_users(&users);
        // Taken by location, so that a row the lookups skipped is resolved
        // here rather than handed another row's frame.
        let mut user_frames = users.iter().zip(frames).peekable();
        for &(loc, r) in &order {
            let ((comm, pid, tid, _), c) = loc_rows[r as usize];
            let frame = match (early.row(r as usize), last) {
                (Some(f), _) => f,
                (None, Some((l, f))) if l == loc => f,
                // Stacks ask again for the locations they hold.
                _ if opts.callchains => p.sym.frame(loc),
                _ => match loc {
                    Loc::User(dso, rel) => match user_frames.next_if(|(&u, _)| u == (dso, rel)) {
                        Some((_, f)) => f,
                        None => p.sym.resolve(loc),
                    },
                    _ => p.sym.resolve(loc),
                },
            };
            last = Some((loc, frame));
            let key = RowKey {
                comm,
                pid,
                tid,
                frame,
            };
            if let Some(k) = row_keys.get_mut(r as usize) {
                *k = Some(key);
            }
            p.rows.push((key, c));
            if opts.ip_hits {
                let addr = match loc {
                    Loc::Kernel(a) => Some(a),
                    Loc::User(dso, rel) => Some(
                        p.sym
                            .elf(dso)
                            .and_then(|e| e.offset_to_vaddr(rel))
                            .unwrap_or(rel),
                    ),
                    _ => None,
                };
                if let Some(a) = addr {
                    let h = p.ip_hits.entry((frame.sym, a)).or_default();
                    h.samples += c.samples;
                    h.period += c.period;
                }
            }
        }
        // The frame stacks mirror the location stacks node for node, so
        // that nothing is interned again; readers merge frames as they go.
        p.stacks = Stacks {
            nodes: loc_nodes
                .iter()
                .enumerate()
                .map(|(i, &(parent, loc))| {
                    let frame = early.node(i).unwrap_or_else(|| p.sym.frame(loc));
                    (parent, frame)
                })
                .collect(),
        };
        if opts.samples {
            p.stack_locs = loc_nodes.iter().map(|n| n.1).collect();
            p.samples = samples
                .iter()
                .filter_map(|&(row, node)| {
                    Some(SampleAt {
                        key: row_keys[row as usize]?,
                        loc: loc_rows[row as usize].0 .3,
                        node,
                    })
                })
                .collect();
        }
        p.chains = loc_chains
            .into_iter()
            .filter_map(|((row, node), c)| Some(((row_keys[row as usize]?, node), c)))
            .collect();
        if p.first_time == u64::MAX {
            p.first_time = 0;
        }
        p.bpf_offsets = bpf_offsets;
        if opts.callchains {
            let cost = super::bpf_cost::BpfCost::compute(p, None);
            p.bpf_calls = cost.calls.clone();
            p.bpf_cost = Some(cost);
        }
    }

    /// The shared object of a user map, registered (with its build id)
    /// on first sight; `None` for kernel and module maps, for which
    /// kallsyms answers.
    pub(super) fn map_dso(&mut self, m: &MmapEvent) -> Option<crate::symbolize::DsoId> {
        if m.pid == u32::MAX || m.addr >= crate::symbolize::KERNEL_START {
            return None;
        }
        let kind = match m.name.as_str() {
            "[vdso]" => DsoKind::Vdso,
            n if n.starts_with('/') => DsoKind::User,
            _ => DsoKind::Unknown,
        };
        let dso = self.sym.dso_id(kind, &m.name);
        if let Some(b) = &m.build_id {
            self.sym.dsos[dso as usize]
                .build_id
                .get_or_insert_with(|| b.clone());
        }
        Some(dso)
    }

    fn map(&mut self, m: &MmapEvent) {
        if let Some(dso) = self.map_dso(m) {
            self.sym.threads.mmap(
                m.pid,
                Map {
                    start: m.addr,
                    end: m.addr.saturating_add(m.len),
                    pgoff: m.pgoff,
                    dso,
                },
            );
        }
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

/// Sort rows by location. The flat pass leaves them mostly in order, and
/// a stable sort merges the runs it finds where the unstable one would
/// start over; other passes leave them in no order, which the unstable
/// one sorts faster.
fn sort_mostly_sorted(order: &mut [(Loc, u32)]) {
    let run = order.windows(2).take_while(|w| w[0] <= w[1]).count() + 1;
    match run >= order.len() / 2 {
        true => order.sort(),
        false => order.sort_unstable(),
    }
}

/// The user locations that `finish` resolves, in its order: those of rows
/// with no early frame, each once per run of equal locations.
fn users_to_resolve(order: &[(Loc, u32)], early: &EarlyFrames) -> Vec<(DsoId, u64)> {
    let mut prev = None;
    let fresh = |&(loc, r): &(Loc, u32)| {
        let fresh = early.row(r as usize).is_none() && prev != Some(loc);
        prev = Some(loc);
        match loc {
            Loc::User(dso, rel) if fresh => Some((dso, rel)),
            _ => None,
        }
    };
    order.iter().filter_map(fresh).collect()
}
