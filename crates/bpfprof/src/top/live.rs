//! The capture loop behind `top`: the events `record -a -g` opens, the
//! side band that reads each program as it loads, the state at start
//! synthesized, and every ring record fed to the analysis engine.

use std::collections::BTreeSet;
use std::io::Cursor;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use bpfinfo::sys::Capture;
use perfdata::{bpf_event, record_type, Features, PerfFile, PerfFileWriter};

use super::model::Snapshot;
use crate::analyze::bpf_view::{AttachPoint, Owner};
use crate::analyze::profile::ProgRecord;
use crate::analyze::Engine;
use crate::analyze::{Profile, ProfileOptions};
use crate::capture::bpf::{self, BpfBook, SharedBook};
use crate::capture::events::{self, Config, EventSpec, Opened, Target};
use crate::capture::prog_meta::{self, MetaBook};
use crate::capture::session::{choose_event, threads_of, true_len};
use crate::capture::sideband::{self, Sideband};
use crate::capture::synthesize::{Processes, Synth};
use crate::capture::sys;

pub struct LiveOptions {
    /// None: the whole system; else these processes.
    pub pids: Option<Vec<i32>>,
    pub freq: u64,
    pub data_pages: usize,
    pub bpf_stats: bool,
    /// Sample idle CPUs too, as perf top does.
    pub idle: bool,
}

pub struct Live {
    opened: Opened,
    engine: Engine,
    book: SharedBook,
    side: Option<Sideband>,
    meta: MetaBook,
    /// Programs handed to the engine.
    added: BTreeSet<u32>,
    trailer: usize,
    /// A KSYMBOL/BPF_EVENT trimmed to its true length.
    fixed: Vec<u8>,
    /// Held open while `top` keeps BPF_ENABLE_STATS on.
    stats_fd: Option<OwnedFd>,
    /// kernel.bpf_stats_enabled was on already (ours to leave alone).
    stats_sysctl: bool,
    /// Snapshots of owners and attachments still to take: a program is
    /// usually attached a moment after it loads.
    meta_due: u32,
    pub event: String,
    /// Records the engine refused, and the first reason.
    pub feed_errors: (u64, Option<String>),
    /// Things worth saying once (side band missing, stats refused).
    pub notes: Vec<String>,
}

fn sysctl_stats() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/bpf_stats_enabled").is_ok_and(|s| s.trim() == "1")
}

impl Live {
    pub fn start(o: &LiveOptions) -> anyhow::Result<Live> {
        let cpus = events::online_cpus().context("reading /sys/devices/system/cpu/online")?;
        let target = match &o.pids {
            None => Target::SystemWide,
            Some(p) => Target::Threads(threads_of(p)?),
        };
        let mut cfg = Config {
            event: choose_event(&None, true),
            freq: o.freq,
            period: None,
            sample_cpus: cpus.clone(),
            callchain: true,
            bpf_events: true,
            data_pages: o.data_pages,
            exclude_idle: !o.idle,
        };
        let opened = match events::open(&cfg, &target, &cpus) {
            Err(events::OpenError::Unsupported { .. }) if cfg.event.is_hardware() => {
                cfg.event = EventSpec::cpu_clock();
                events::open(&cfg, &target, &cpus)?
            }
            r => r?,
        };
        let mut notes = Vec::new();
        let book: SharedBook = Arc::new(Mutex::new(BpfBook::default()));
        let side = match sideband::start(&cpus, book.clone(), Capture::Full) {
            Ok(s) => Some(s),
            Err(e) => {
                notes.push(format!(
                    "BPF side band unavailable ({e}): programs loaded from now on are read late"
                ));
                None
            }
        };
        let opts = ProfileOptions {
            callchains: true,
            ip_hits: true,
            ..Default::default()
        };
        let trailer = opened.attrs[0].attr.id_trailer_size();
        let mut live = Live {
            engine: Engine::live(opened.attrs.clone(), &opts),
            event: cfg.event.name.clone(),
            opened,
            book,
            side,
            meta: MetaBook::default(),
            added: BTreeSet::new(),
            trailer,
            fixed: Vec::with_capacity(256),
            stats_fd: None,
            stats_sysctl: sysctl_stats(),
            meta_due: 0,
            feed_errors: (0, None),
            notes,
        };
        if o.bpf_stats {
            if let Err(e) = live.set_stats(true) {
                live.notes.push(e);
            }
        }
        live.synthesize(&o.pids)?;
        live.opened
            .enable_sampling()
            .context("enabling the sampling events")?;
        Ok(live)
    }

    /// What existed at start, as `record` writes it first: written into
    /// memory, then fed record by record.
    fn synthesize(&mut self, pids: &Option<Vec<i32>>) -> anyhow::Result<()> {
        let mut w = PerfFileWriter::new(Cursor::new(Vec::new()), &self.opened.attrs)?;
        let mut synth = Synth {
            w: &mut w,
            book: &self.book,
            capture: Capture::Full,
            bpf_event: true,
            page_size: sys::page_size() as u64,
            dsos: Default::default(),
            out: Default::default(),
            warnings: Vec::new(),
        };
        let procs = match pids {
            None => Processes::All,
            Some(p) => Processes::Only(p.clone()),
        };
        synth
            .run(&procs, true)
            .context("describing the running system")?;
        self.notes.append(&mut synth.warnings);
        let bytes = w.finish(&Features::default())?.into_inner();
        self.meta.snapshot();
        self.sync_programs();
        let file = PerfFile::from_bytes(bytes)?;
        for r in file.raw_records() {
            let r = r.context("reading back the start-up records")?;
            self.feed(r.raw);
        }
        Ok(())
    }

    fn feed(&mut self, raw: &[u8]) {
        if let Err(e) = self.engine.feed(raw) {
            self.feed_errors.0 += 1;
            self.feed_errors.1.get_or_insert_with(|| e.to_string());
        }
    }

    /// Hand the programs the side band (or the start) read to the engine.
    fn sync_programs(&mut self) {
        let b = self.book.lock().unwrap();
        for (&id, info) in b.progs.range(..) {
            if !self.added.insert(id) {
                continue;
            }
            let btf = (info.btf_id != 0)
                .then(|| b.btf.get(&info.btf_id).cloned())
                .flatten();
            self.engine.add_program(ProgRecord {
                info: Some(info.clone()),
                btf,
                meta: self.meta.for_file(std::iter::once(id)).pop(),
            });
        }
    }

    /// The fds whose readiness means the rings have data.
    pub fn ring_fds(&self) -> Vec<RawFd> {
        self.opened
            .rings
            .iter()
            .map(|r| r.owner.as_raw_fd())
            .collect()
    }

    /// Feed what the rings hold.
    pub fn drain(&mut self) {
        self.sync_programs();
        let trailer = self.trailer;
        let mut loads: Vec<(u32, u32)> = Vec::new();
        let mut unloads: Vec<u32> = Vec::new();
        let mut rings = std::mem::take(&mut self.opened.rings);
        for cr in rings.iter_mut() {
            cr.ring.drain(|raw| {
                let ty = u32::from_le_bytes(raw[0..4].try_into().unwrap());
                if ty == record_type::KSYMBOL || ty == record_type::BPF_EVENT {
                    if ty == record_type::BPF_EVENT && raw.len() >= 32 {
                        let kind = u16::from_le_bytes(raw[8..10].try_into().unwrap());
                        let id = u32::from_le_bytes(raw[12..16].try_into().unwrap());
                        let pid = u32::from_le_bytes(raw[24..28].try_into().unwrap());
                        match kind {
                            bpf_event::PROG_LOAD => loads.push((id, pid)),
                            bpf_event::PROG_UNLOAD => unloads.push(id),
                            _ => {}
                        }
                    }
                    let n = true_len(raw, trailer);
                    if n < raw.len() {
                        self.fixed.clear();
                        self.fixed.extend_from_slice(&raw[..n]);
                        self.fixed[6..8].copy_from_slice(&(n as u16).to_le_bytes());
                        let fixed = std::mem::take(&mut self.fixed);
                        self.feed(&fixed);
                        self.fixed = fixed;
                        return true;
                    }
                }
                self.feed(raw);
                true
            });
        }
        self.opened.rings = rings;
        if self.side.is_none() && !unloads.is_empty() {
            self.book.lock().unwrap().unloaded.extend(unloads);
        }
        for (id, pid) in loads {
            if self.side.is_none() {
                // Without a side band, read as the stream reports it.
                self.book.lock().unwrap().loaded.insert(id);
                bpf::fetch_into(&self.book, id, Capture::Full);
            }
            if pid != 0 && pid != u32::MAX {
                self.meta.loader(id, pid, prog_meta::comm_of(pid));
            }
            self.meta_due = 2;
        }
    }

    pub fn stats_on(&self) -> bool {
        self.stats_sysctl || self.stats_fd.is_some()
    }

    /// Turn the kernel's run-time stats on or off for this session; an
    /// error says why it could not.
    pub fn set_stats(&mut self, on: bool) -> Result<(), String> {
        self.stats_sysctl = sysctl_stats();
        if on && self.stats_fd.is_none() && !self.stats_sysctl {
            let fd = bpfinfo::sys::enable_stats()
                .map_err(|e| format!("cannot enable BPF run-time stats: {e}"))?;
            self.stats_fd = Some(fd);
        } else if !on {
            self.stats_fd = None;
            if self.stats_sysctl {
                return Err(
                    "BPF stats stay on: kernel.bpf_stats_enabled=1 was set before top".into(),
                );
            }
        }
        Ok(())
    }

    /// Everything since the last snapshot as plain numbers, and what `also`
    /// reads from the same resolved profile. The engine's counts are
    /// dropped then, so each refresh resolves one interval's rows and
    /// stacks, not the whole session's.
    pub fn snapshot<T>(&mut self, also: impl FnOnce(&Profile) -> T) -> (Snapshot, T) {
        self.sync_programs();
        if self.meta_due > 0 {
            self.meta_due -= 1;
            self.meta.snapshot();
        }
        let p = self.engine.profile();
        let extra = also(p);
        let mut s = Snapshot::from_profile(p);
        self.engine.clear_counts();
        for (id, p) in s.progs.iter_mut() {
            // Owners and attachments as last seen: the engine got them
            // when the program was added, often before it was attached.
            if let Some(m) = self.meta.progs.get(id) {
                p.owners = m
                    .owners
                    .iter()
                    .map(|o| Owner {
                        pid: o.pid,
                        comm: o.comm.clone(),
                    })
                    .collect();
                p.attach = m
                    .attach
                    .iter()
                    .map(|a| AttachPoint {
                        kind: a.kind.clone(),
                        target: a.target.clone(),
                        link_id: a.link_id,
                    })
                    .collect();
            }
        }
        let b = self.book.lock().unwrap();
        s.unloaded = b.unloaded.iter().copied().collect();
        drop(b);
        if self.stats_on() {
            for &id in s.progs.keys() {
                if s.unloaded.contains(&id) {
                    continue;
                }
                if let Some(st) = bpf::current_stats(id) {
                    s.stats.insert(id, st);
                }
            }
        }
        s.boot_ns = bpfinfo::sys::boottime_ns();
        (s, extra)
    }

    /// End the session; `top` exits next.
    pub fn stop(self) {
        self.opened.disable_sampling();
        if let Some(s) = self.side {
            s.stop();
        }
        // Dropping the stats fd turns BPF_ENABLE_STATS back off. The
        // engine's state (every process's maps and symbols) is left to the
        // exit: freed one allocation at a time, it only kept the shell's
        // prompt waiting.
        std::mem::forget(self.engine);
    }
}
