//! The one attribution engine: the rules that turn records into a
//! [`Profile`], with one handler per kind of record.
//!
//! An [`Engine`] owns what the rules need between records — each process's
//! maps and commands, the BPF symbol timeline, the numbering of changes,
//! the recent-sample memo — and the counts being built. It is fed in one
//! of three ways, and the rules are the same in each:
//! - [`Engine::replay_file`]: every record of a file in time order, read
//!   and decoded on threads of their own (`events`), call stacks interned
//!   on another (`raw_stacks`);
//! - `flat_pass`: a flat profile's samples counted in parallel pieces
//!   of the file, each count handed to [`Engine::settle`] once the
//!   side band, replayed through [`Engine::side`], has reached it;
//! - [`Engine::feed`]: records as read live from the kernel's rings.
//!
//! [`Engine::finish`] (or [`Engine::profile`], which can be called again
//! as more records come) resolves what was counted into the model.

mod chains;
mod delivery;
mod early_frames;
mod events;
mod flat_pass;
mod history;
mod kernel_text;
mod map_timeline;
mod memo;
mod node_table;
mod raw_stacks;
mod resolve;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::mpsc::TryRecvError;

use anyhow::{Context, Result};
use perfdata::{AttrEntry, Attrs, PerfFile, Record};
use rustc_hash::FxHashMap;

use chains::Chains;
use early_frames::{EarlyFrames, LocKey};
use events::{is_kernel_mode, note, owner, Event, MmapEvent};
use memo::{Changes, RowCache, SampleKey};
use raw_stacks::{NodeKind, RawNode, RawStacks};

use super::profile::{sampling_index, Counts, ProgRecord, Stacks};
use super::{Profile, ProfileOptions};
use crate::symbolize::{BpfSymbols, DsoKind, Loc, Map, Symbolizer};

/// Location rows: counts by (command, pid, tid, location), each key once.
#[derive(Default)]
struct LocRows {
    index: FxHashMap<LocKey, u32>,
    rows: Vec<(LocKey, Counts)>,
}

impl LocRows {
    /// Count on a new row whose key no other row has or will have, without
    /// the index: the flat pass's rows by location are unique by making.
    fn push_unique(&mut self, key: LocKey, c: Counts) {
        self.rows.push((key, c));
    }
}

/// What the engine has counted, by location, until it is resolved.
struct Counted {
    rows: LocRows,
    /// Location stacks: (parent, location), root first.
    loc_nodes: Vec<(u32, Loc)>,
    /// Raw stack node id → location node id (a process root maps to the
    /// root): location stacks mirror the interned address stacks.
    raw_to_loc: Vec<u32>,
    /// Counts by (row, stack leaf node).
    chains: Chains,
    /// Stack node → offset of its address in its BPF symbol.
    bpf_offsets: FxHashMap<u32, u32>,
    early: EarlyFrames,
    /// (attr, location row, stack leaf node) of each sample, with
    /// `samples`: a row of `rows` for the sampling event, of `other_rows`
    /// for the others.
    samples: Vec<(u16, u32, u32)>,
    /// Where other events' samples went, with `samples` (counted on no
    /// row of the profile: only a script prints them).
    other_rows: LocRows,
    changes: Changes,
    row_cache: RowCache,
}

impl Default for Counted {
    fn default() -> Self {
        Counted {
            rows: LocRows::default(),
            loc_nodes: vec![(0, Loc::Unknown(0))],
            raw_to_loc: vec![0],
            chains: Chains::default(),
            bpf_offsets: FxHashMap::default(),
            early: EarlyFrames::default(),
            samples: Vec::new(),
            other_rows: LocRows::default(),
            changes: Changes::default(),
            row_cache: RowCache::default(),
        }
    }
}

/// What feeding raw records needs: the attrs to parse them by, and the
/// stack interner that a file replay runs on a thread of its own.
struct LiveInput {
    attrs: Attrs,
    stacks: RawStacks,
    nodes: Vec<RawNode>,
    chain: Vec<u64>,
}

/// The attribution engine (see the module's documentation).
pub struct Engine {
    p: Profile,
    opts: ProfileOptions,
    /// Index of the attr whose samples are counted.
    sampling: usize,
    attr_names: Vec<String>,
    /// Whether each attr's samples carry their CPU.
    cpu_recorded: Vec<bool>,
    kallsyms_path: PathBuf,
    counted: Counted,
    live: Option<LiveInput>,
}

impl Engine {
    fn new(
        opts: &ProfileOptions,
        attrs: &[AttrEntry],
        progs: BTreeMap<u32, ProgRecord>,
        warnings: Vec<String>,
    ) -> Engine {
        let bpf = BpfSymbols::new(
            progs
                .iter()
                .filter_map(|(&id, p)| Some((id, p.info.as_ref()?.jited_ksyms.clone()))),
        );
        let kallsyms_path = opts
            .kallsyms
            .clone()
            .unwrap_or_else(|| "/proc/kallsyms".into());
        let mut sym = Symbolizer::new(kallsyms_path.clone(), bpf);
        sym.symfs = opts.symfs.clone();
        let sampling = sampling_index(attrs);
        let p = Profile {
            sym,
            rows: Vec::new(),
            stacks: Stacks::default(),
            chains: Vec::new(),
            total: Counts::default(),
            event: attrs
                .get(sampling)
                .map(|a| a.name.clone())
                .unwrap_or_default(),
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
            dso_groups: Vec::new(),
            ordered_pass: false,
            samples: Vec::new(),
            stack_locs: Vec::new(),
        };
        Engine {
            p,
            opts: opts.clone(),
            sampling,
            attr_names: attrs.iter().map(|a| a.name.clone()).collect(),
            cpu_recorded: attrs
                .iter()
                .map(|a| a.attr.sample_type & perfdata::sample_type::CPU != 0)
                .collect(),
            kallsyms_path,
            counted: Counted::default(),
            live: None,
        }
    }

    /// An engine for one recording: its BPF programs, build ids and
    /// warnings taken from the file's header.
    pub fn for_file(file: &PerfFile, opts: &ProfileOptions) -> Engine {
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
        let mut e = Engine::new(opts, file.attrs(), progs, warnings);
        for b in &f.build_ids {
            e.p.sym
                .build_ids
                .insert(b.filename.clone(), b.build_id.clone());
        }
        e
    }

    /// An engine for records read live from rings: the attrs of the
    /// opened events (sampling first, then the tracking dummy). Programs
    /// are told of with [`Engine::add_program`].
    pub fn live(attrs: Vec<AttrEntry>, opts: &ProfileOptions) -> Engine {
        let mut e = Engine::new(opts, &attrs, BTreeMap::new(), Vec::new());
        e.p.ordered_pass = true;
        e.live = Some(LiveInput {
            attrs: Attrs::new(attrs),
            stacks: RawStacks::default(),
            nodes: Vec::new(),
            chain: Vec::new(),
        });
        e
    }

    /// A BPF program's info and BTF: for each program loaded at the start
    /// of a live session, and each that loads later. Its sub-programs are
    /// numbered by its `jited_ksyms` from then on.
    pub fn add_program(&mut self, prog: ProgRecord) {
        let Some(info) = &prog.info else { return };
        self.p
            .sym
            .bpf
            .add_program_ksyms(info.id, info.jited_ksyms.clone());
        self.p.progs.insert(info.id, prog);
    }

    /// One record exactly as read from a ring (perf_event_header first),
    /// each ring's records in their order. Synthesized records (the
    /// processes and programs that existed at start) are fed the same way,
    /// first.
    pub fn feed(&mut self, record: &[u8]) -> Result<(), perfdata::Error> {
        let Some(live) = self.live.as_mut() else {
            return Ok(());
        };
        let (header, rec, sid) = perfdata::parse_record(record, &live.attrs, 0)?;
        let ev = match rec {
            Record::Sample(s) => {
                let key = SampleKey {
                    tid: s.tid,
                    pid: s.pid,
                    ip: s.ip,
                    kernel: is_kernel_mode(header.misc, s.ip),
                };
                live.chain.clear();
                live.chain.extend(s.callchain());
                live.nodes.clear();
                let leaf = match self.opts.callchains {
                    true => {
                        live.stacks
                            .leaf(&self.counted.changes, key, &live.chain, &mut live.nodes)
                    }
                    false => 0,
                };
                Event::Sample {
                    attr: events::attr_u16(live.attrs.index_of(s.id)),
                    misc: header.misc,
                    cpu: events::cpu_u16(s.cpu),
                    pid: s.pid,
                    tid: s.tid,
                    ip: s.ip,
                    period: s.period,
                    time: s.time,
                    stack: (leaf, 0),
                }
            }
            ref other => match events::side_event(other, &sid) {
                Some(ev) => ev,
                None => return Ok(()),
            },
        };
        live.stacks.side(&ev);
        let nodes = std::mem::take(&mut live.nodes);
        self.event(&ev, &nodes);
        if let Some(live) = self.live.as_mut() {
            live.nodes = nodes;
        }
        Ok(())
    }

    /// Replay every record of `file` in time order: the pass for call
    /// chains, and for files the flat pass cannot take.
    pub fn replay_file(&mut self, file: &PerfFile) -> Result<()> {
        let path = file
            .path()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        self.p.ordered_pass = true;
        let callchains = self.opts.callchains;
        let mut progress = crate::progress::Progress::new(self.opts.progress, file.data_size());
        let (tx, rx) = std::sync::mpsc::sync_channel(4);
        let (give_back, recycle) = std::sync::mpsc::channel();
        std::thread::scope(|scope| -> Result<()> {
            if callchains {
                let (to_intern, interned) = std::sync::mpsc::sync_channel(4);
                scope.spawn(|| events::stream(file, true, to_intern, recycle));
                scope.spawn(|| events::intern_stacks(interned, tx));
            } else {
                scope.spawn(|| events::stream(file, false, tx, recycle));
            }
            loop {
                let batch = match rx.try_recv() {
                    Ok(b) => b,
                    Err(TryRecvError::Disconnected) => break,
                    Err(TryRecvError::Empty) => {
                        // Resolve what can be while the reader reads.
                        let c = &mut self.counted;
                        if c.early
                            .step(&mut self.p.sym, &c.loc_nodes, &c.rows.rows, callchains)
                        {
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
                self.p.warnings.append(&mut batch.warnings);
                let mut seen = 0;
                for ev in &batch.events {
                    let nodes = match *ev {
                        Event::Sample {
                            stack: (_, seen_by),
                            ..
                        } => {
                            let nodes = &batch.nodes[seen..seen_by as usize];
                            seen = seen_by as usize;
                            nodes
                        }
                        _ => &[],
                    };
                    self.event(ev, nodes);
                }
                let _ = give_back.send(batch);
            }
            Ok(())
        })?;
        progress.finish();
        Ok(())
    }

    /// Handle one event: a sample, with the stack nodes first seen in it,
    /// or a side-band record.
    fn event(&mut self, ev: &Event, new_nodes: &[RawNode]) {
        match *ev {
            Event::Sample {
                attr,
                misc,
                cpu,
                pid,
                tid,
                ip,
                period,
                time,
                stack: (leaf, _),
            } => {
                self.stack_nodes(pid, new_nodes);
                let cpu = match self.cpu_recorded.get(attr as usize) {
                    Some(true) => cpu,
                    _ => events::NO_CPU,
                };
                self.sample(attr, (misc, pid, tid, cpu, ip), period, time, leaf);
            }
            ref side => self.side(side),
        }
    }

    /// Give each stack node first seen its location.
    fn stack_nodes(&mut self, pid: u32, nodes: &[RawNode]) {
        let c = &mut self.counted;
        for n in nodes {
            let id = match n.kind {
                NodeKind::Process => 0,
                kind => {
                    let loc = self.p.sym.locate(pid, n.addr, kind == NodeKind::Kernel);
                    c.loc_nodes.push((c.raw_to_loc[n.parent as usize], loc));
                    let id = c.loc_nodes.len() as u32 - 1;
                    if let Loc::Bpf(b) = loc {
                        let start = self.p.sym.bpf.syms[b as usize].addr;
                        c.bpf_offsets.insert(id, (n.addr - start) as u32);
                    }
                    id
                }
            };
            c.raw_to_loc.push(id);
        }
    }

    /// Count one sample, settled against the state the replay is in.
    fn sample(
        &mut self,
        attr: u16,
        (misc, pid, tid, cpu, ip): (u16, u32, u32, u16, u64),
        period: u64,
        time: u64,
        leaf: u32,
    ) {
        if attr as usize != self.sampling {
            if self.opts.samples {
                self.other_sample(attr, (misc, pid, tid, ip), leaf);
            }
            // A name is copied once per event, not once per sample.
            let name = self
                .attr_names
                .get(attr as usize)
                .map_or("", String::as_str);
            match self.p.other_events.get_mut(name) {
                Some(n) => *n += 1,
                None => {
                    self.p.other_events.insert(name.to_string(), 1);
                }
            }
            return;
        }
        let kernel = is_kernel_mode(misc, ip);
        let (ctid, cpid) = owner(self.opts.merge_threads, kernel, tid, pid);
        let key = SampleKey {
            tid: ctid,
            pid: cpid,
            ip,
            kernel,
        };
        let period = period.max(1);
        self.p.total.add(period);
        // The memo knows no CPU: rows by CPU skip it.
        let cached = match self.opts.cpus {
            true => None,
            false => self
                .counted
                .row_cache
                .count(&self.counted.changes, key, period),
        };
        let row = match cached {
            Some(row) => row,
            None => {
                let one = Counts { samples: 1, period };
                let loc = self.p.sym.locate(pid, ip, kernel);
                let row = self.count_at((pid, tid, cpu, ip), loc, one);
                // BPF samples are not cached: each is also counted per
                // registration.
                let c = &mut self.counted;
                if !matches!(loc, Loc::Bpf(_)) && !self.opts.cpus {
                    if let Some((r, evicted)) = c.row_cache.put(&c.changes, key, row) {
                        c.rows.rows[r as usize].1.merge(evicted);
                    }
                }
                row
            }
        };
        self.p.first_time = self.p.first_time.min(time);
        self.p.last_time = self.p.last_time.max(time);
        let c = &mut self.counted;
        if self.opts.callchains {
            let node = c.raw_to_loc[leaf as usize];
            c.chains.add(row, node, period);
        }
        if self.opts.samples {
            let attr = self.sampling as u16;
            c.samples.push((attr, row, c.raw_to_loc[leaf as usize]));
        }
    }

    /// Keep where a sample of another event than the sampling one went,
    /// by the same rules, for a script to print.
    fn other_sample(&mut self, attr: u16, (misc, pid, tid, ip): (u16, u32, u32, u64), leaf: u32) {
        let loc = self.p.sym.locate(pid, ip, is_kernel_mode(misc, ip));
        let key = self.loc_key(pid, tid, 0, loc);
        let rows = &mut self.counted.other_rows;
        let row = *rows.index.entry(key).or_insert_with(|| {
            rows.rows.push((key, Counts::default()));
            rows.rows.len() as u32 - 1
        });
        let c = &mut self.counted;
        c.samples.push((attr, row, c.raw_to_loc[leaf as usize]));
    }

    /// The row a sample at `loc` goes on, by the options' keys.
    fn loc_key(&mut self, pid: u32, tid: u32, cpu: u16, loc: Loc) -> LocKey {
        let mut key = match self.opts.merge_threads {
            true => LocKey::merged(loc),
            false => LocKey {
                comm: self.p.sym.threads.comm_of(tid),
                pid,
                tid,
                cpu: 0,
                loc,
            },
        };
        if self.opts.cpus {
            key.cpu = cpu;
        }
        key
    }

    /// Handle a record other than a sample.
    fn side(&mut self, ev: &Event) {
        note(&mut self.counted.changes, ev);
        let p = &mut self.p;
        match *ev {
            Event::Comm(ref c) => p.sym.threads.set_comm(c.tid, &c.comm),
            Event::Fork {
                pid,
                ppid,
                tid,
                ptid,
            } => p.sym.threads.fork(pid, ppid, tid, ptid),
            Event::Exit { pid, tid } => p.sym.threads.exit(pid, tid),
            // Naming the map's DSO is for the map: the flat pass, which has
            // the replay forget maps, named them all on its map timeline.
            Event::Mmap(_) if !p.sym.threads.keeps_maps() => {}
            Event::Mmap(ref m) => {
                if let Some(dso) = self.map_dso(m) {
                    self.p.sym.threads.mmap(
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
            Event::Ksymbol(ref k) => {
                if k.unregister {
                    p.sym.bpf.unregister(k.addr, &k.name, k.time);
                } else if k.len > 0 {
                    p.sym.bpf.register(k.addr, k.len, &k.name, k.time);
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
                p.sym.bpf.bpf_event(load, id, tag, time, pid, tid);
                if load && time != 0 {
                    // Keep the loader's name while it is known.
                    p.sym.threads.comm_of(tid);
                }
            }
            Event::Lost(n) => p.lost += n,
            Event::LostSamples(n) => p.lost_samples += n,
            Event::Sample { .. } => {}
        }
    }

    /// Settle where a sample (or a count of like samples) went, as of now
    /// in the replay, and count it on its location row.
    fn settle(&mut self, (pid, tid, ip, kernel): (u32, u32, u64, bool), c: Counts) {
        let loc = self.p.sym.locate(pid, ip, kernel);
        self.count_at((pid, tid, 0, ip), loc, c);
    }

    /// Count a sample (or like samples) at the address `ip` on the row of
    /// its location `loc`, already settled; its row.
    fn count_at(&mut self, (pid, tid, cpu, ip): (u32, u32, u16, u64), loc: Loc, c: Counts) -> u32 {
        let lkey = self.loc_key(pid, tid, cpu, loc);
        let p = &mut self.p;
        let rows = &mut self.counted.rows;
        let row = *rows.index.entry(lkey).or_insert_with(|| {
            rows.rows.push((lkey, Counts::default()));
            rows.rows.len() as u32 - 1
        });
        rows.rows[row as usize].1.merge(c);
        if let Loc::Bpf(b) = loc {
            p.bpf_samples.entry(b).or_default().merge(c);
            if self.opts.ip_hits {
                let off = (ip - p.sym.bpf.syms[b as usize].addr) as u32;
                p.bpf_hits.entry((b, off)).or_default().merge(c);
            }
        }
        row
    }

    /// The shared object of a user map, registered (with its build id)
    /// on first sight; `None` for kernel and module maps, for which
    /// kallsyms answers.
    fn map_dso(&mut self, m: &MmapEvent) -> Option<crate::symbolize::DsoId> {
        if m.pid == u32::MAX || m.addr >= crate::symbolize::KERNEL_START {
            return None;
        }
        let kind = match m.name.as_str() {
            "[vdso]" => DsoKind::Vdso,
            n if n.starts_with('/') => DsoKind::User,
            _ => DsoKind::Unknown,
        };
        let sym = &mut self.p.sym;
        let known = sym.dsos.len();
        let dso = sym.dso_id(kind, &m.name);
        // The header's build id or the first map's, never a later map's:
        // the ordered replay may have loaded the symbols by then and the
        // flat pass not, and the two would differ wherever a later map
        // names another build id (seen: perf 6.1 recordings whose maps of
        // /usr/bin/sleep carry one that is not the file's).
        if let (true, Some(b)) = (dso as usize == known, &m.build_id) {
            sym.dsos[dso as usize]
                .build_id
                .get_or_insert_with(|| b.clone());
        }
        Some(dso)
    }

    /// Resolve everything counted so far into the profile, and hand it
    /// over.
    pub fn finish(mut self) -> Profile {
        // Nothing is counted after this: the index can go first.
        self.counted.rows.index = FxHashMap::default();
        self.resolve();
        self.p
    }

    /// Everything fed so far, resolved: counts since the engine started
    /// (or since [`Engine::clear_counts`]). Costs in proportion to the rows
    /// and stack nodes, not the samples, so a live view can ask once per
    /// refresh.
    pub fn profile(&mut self) -> &Profile {
        self.resolve();
        &self.p
    }

    /// Forget what was counted — rows, stacks, chains, totals, lost counts,
    /// per-address hits — and keep the state the rules need: processes'
    /// maps and commands, the BPF symbol timeline and programs, the change
    /// numbering. The next [`Engine::profile`] holds only what is fed
    /// after this, so a live view that clears after each refresh resolves
    /// one interval, not the whole session.
    pub fn clear_counts(&mut self) {
        // Its caches number rows and stack nodes that go now.
        let changes = std::mem::take(&mut self.counted.changes);
        self.counted = Counted {
            changes,
            ..Counted::default()
        };
        if let Some(live) = self.live.as_mut() {
            live.stacks = RawStacks::default();
        }
        let p = &mut self.p;
        p.rows.clear();
        p.chains.clear();
        p.stacks = Stacks::default();
        p.total = Counts::default();
        p.other_events.clear();
        p.lost = 0;
        p.lost_samples = 0;
        p.ip_hits.clear();
        p.bpf_hits.clear();
        p.bpf_samples.clear();
        p.bpf_calls.clear();
        p.bpf_offsets.clear();
        p.bpf_cost = None;
        p.samples.clear();
        p.stack_locs.clear();
    }
}

/// Build the profile of a recording: the flat pass where it can take the
/// file, else the ordered replay.
pub fn build(file: &PerfFile, opts: &ProfileOptions) -> Result<Profile> {
    let mut e = Engine::for_file(file, opts);
    // The flat pass counts no CPU.
    let flat = !(opts.callchains || opts.ordered || opts.samples || opts.cpus)
        && flat_pass::run(file, &mut e);
    if !flat {
        e.replay_file(file)?;
    }
    Ok(e.finish())
}
