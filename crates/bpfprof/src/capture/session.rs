//! One recording from start to summary: open, synthesize, stream the rings
//! to disk until told to stop, then write the feature sections.

use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use bpfinfo::sys::Capture;
use perfdata::{misc, record_type, sample_type as st, EventAttr, PerfFileWriter, Record, SampleId};

use super::bpf::{self, BpfBook, SharedBook};
use super::events::{self, Config, EventSpec, Opened, Target};
use super::output::{check_output, rotate_old};
use super::stats::BpfStats;
use super::synthesize::{Dsos, Processes, Synth};
use super::sys::{self, ExitStatus, ParkedChild};
use super::{features, prog_meta, sideband};

/// What to record.
#[derive(Debug, Clone)]
pub enum What {
    SystemWide,
    Pids(Vec<i32>),
    /// Only these threads (`-t`), not the rest of their processes.
    Tids(Vec<i32>),
    /// Start this command; with `system_wide` (`-a`/`-C`), every process
    /// on the (chosen) CPUs is recorded while it runs.
    Command {
        argv: Vec<String>,
        system_wide: bool,
    },
}

/// Everything `bpfprof record` was asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    pub what: What,
    /// None: the best event this machine has (cycles, else cpu-clock).
    pub event: Option<EventSpec>,
    pub freq: u64,
    /// A fixed sample period (`-c`); overrides `freq`, as in perf.
    pub period: Option<u64>,
    /// The CPUs to sample (`-C`); None: all online CPUs.
    pub cpus: Option<Vec<i32>>,
    pub callchain: bool,
    pub output: PathBuf,
    pub duration: Option<Duration>,
    pub data_pages: usize,
    pub capture: Capture,
    pub bpf_events: bool,
    pub bpf_stats: bool,
    /// Run the built-in BPF demo workload during the recording.
    pub demo: bool,
    /// zstd level for the data section (`-z`), None: uncompressed.
    pub compression: Option<u32>,
    /// `-q`: no messages but errors.
    pub quiet: bool,
    /// The command line, for the CMDLINE feature.
    pub cmdline: Vec<String>,
}

/// Counters of the stream, updated per record.
#[derive(Debug, Default)]
struct Tally {
    samples: u64,
    lost: u64,
    first_time: u64,
    last_time: u64,
    /// Offset of TIME in a SAMPLE (records start with the header).
    time_off: usize,
    /// BPF_EVENT LOAD ids seen in the stream, when no side band fetches them.
    pending_loads: Vec<u32>,
    pending_unloads: Vec<u32>,
    /// (prog id, loader pid, loader comm) of each PROG_LOAD in the stream.
    loaders: Vec<(u32, u32, String)>,
    mmap_build_ids: Vec<(String, Vec<u8>)>,
    mmap_files: Vec<String>,
    garbage: bool,
}

fn time_offset(a: &EventAttr) -> usize {
    8 + [st::IDENTIFIER, st::IP, st::TID]
        .iter()
        .filter(|&&b| a.sample_type & b != 0)
        .count()
        * 8
}

impl Tally {
    /// Look at one record on its way to disk. Cheap for SAMPLEs.
    #[inline]
    fn see(&mut self, r: &[u8], side_band: bool) {
        let ty = u32::from_le_bytes(r[0..4].try_into().unwrap());
        match ty {
            record_type::SAMPLE => {
                self.samples += 1;
                if let Some(b) = r.get(self.time_off..self.time_off + 8) {
                    let t = u64::from_le_bytes(b.try_into().unwrap());
                    if self.first_time == 0 || t < self.first_time {
                        self.first_time = t;
                    }
                    self.last_time = self.last_time.max(t);
                }
            }
            record_type::LOST if r.len() >= 24 => {
                self.lost += u64::from_le_bytes(r[16..24].try_into().unwrap());
            }
            record_type::LOST_SAMPLES if r.len() >= 16 => {
                self.lost += u64::from_le_bytes(r[8..16].try_into().unwrap());
            }
            record_type::MMAP2 if r.len() > 72 => {
                let m = u16::from_le_bytes(r[4..6].try_into().unwrap());
                let name_end = r[72..]
                    .iter()
                    .position(|&c| c == 0)
                    .map_or(r.len(), |p| 72 + p);
                let name = String::from_utf8_lossy(&r[72..name_end]).into_owned();
                if !name.starts_with('/') {
                    return;
                }
                if m & misc::MMAP_BUILD_ID != 0 {
                    let n = (r[40] as usize).min(20);
                    self.mmap_build_ids.push((name, r[44..44 + n].to_vec()));
                } else {
                    self.mmap_files.push(name);
                }
            }
            record_type::BPF_EVENT if r.len() >= 16 => {
                let kind = u16::from_le_bytes(r[8..10].try_into().unwrap());
                let id = u32::from_le_bytes(r[12..16].try_into().unwrap());
                // The trailer starts with the TID field (pid of the task
                // that loaded the program); its comm is read now, while the
                // loader most likely still runs.
                if kind == perfdata::bpf_event::PROG_LOAD && r.len() >= 32 {
                    let pid = u32::from_le_bytes(r[24..28].try_into().unwrap());
                    if pid != 0 && pid != u32::MAX {
                        self.loaders.push((id, pid, prog_meta::comm_of(pid)));
                    }
                }
                if side_band {
                    return;
                }
                match kind {
                    perfdata::bpf_event::PROG_LOAD => self.pending_loads.push(id),
                    perfdata::bpf_event::PROG_UNLOAD => self.pending_unloads.push(id),
                    _ => {}
                }
            }
            _ => {}
        }
    }
}

/// Why the recording ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Signal(i32),
    Duration,
    ChildExited,
    TargetsExited,
    WriteFailed,
}

/// Resolve a command like a shell: a name with a slash as is, else along
/// PATH. The error is the shell's message and exit code.
fn resolve_command(name: &str) -> Result<PathBuf, (String, i32)> {
    use std::os::unix::fs::PermissionsExt;
    let is_exec = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if name.contains('/') {
        let p = PathBuf::from(name);
        return match std::fs::metadata(&p) {
            Err(e) => Err((format!("{name}: {e}"), 127)),
            Ok(_) if !is_exec(&p) => Err((format!("{name}: Permission denied"), 126)),
            Ok(_) => Ok(p),
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_exec(p))
        .ok_or_else(|| (format!("{name}: command not found"), 127))
}

/// Threads of each process, for per-thread events.
pub(crate) fn threads_of(pids: &[i32]) -> anyhow::Result<Vec<i32>> {
    let mut tids = Vec::new();
    for &pid in pids {
        let dir = format!("/proc/{pid}/task");
        let rd = std::fs::read_dir(&dir).map_err(|_| anyhow!("no such process: {pid}"))?;
        let before = tids.len();
        tids.extend(rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok()));
        if tids.len() == before {
            bail!("no such process: {pid}");
        }
    }
    Ok(tids)
}

/// The processes of threads (`-t`), for synthesis: their maps and names.
fn tgids_of(tids: &[i32]) -> Vec<i32> {
    let mut v: Vec<i32> = tids
        .iter()
        .map(|&t| {
            std::fs::read_to_string(format!("/proc/{t}/status"))
                .ok()
                .and_then(|s| {
                    s.lines()
                        .find_map(|l| l.strip_prefix("Tgid:"))
                        .and_then(|v| v.trim().parse().ok())
                })
                .unwrap_or(t)
        })
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Pick the sampling event: what the user asked, else cycles when a
/// hardware PMU exists, else cpu-clock (said once).
pub(crate) fn choose_event(asked: &Option<EventSpec>, quiet: bool) -> EventSpec {
    if let Some(e) = asked {
        return e.clone();
    }
    let pmu = ["cpu", "cpu_core", "armv8_pmuv3", "armv8_pmuv3_0"]
        .iter()
        .any(|d| Path::new("/sys/bus/event_source/devices").join(d).exists());
    if pmu {
        EventSpec::parse("cycles").unwrap()
    } else {
        if !quiet {
            eprintln!("bpfprof: no hardware PMU on this machine: sampling cpu-clock");
        }
        EventSpec::cpu_clock()
    }
}

pub fn record(opts: &Options) -> anyhow::Result<i32> {
    let page = sys::page_size() as u64;
    if !opts.data_pages.is_power_of_two() {
        bail!(
            "-m: the ring size must be a power of two pages, not {}",
            opts.data_pages
        );
    }
    check_output(&opts.output)?;

    // The command is resolved before anything starts, so a typo costs nothing.
    let mut child: Option<ParkedChild> = None;
    let target = match &opts.what {
        What::SystemWide => Target::SystemWide,
        What::Pids(p) => Target::Threads(threads_of(p)?),
        What::Tids(t) => {
            for &tid in t {
                if !Path::new(&format!("/proc/{tid}/status")).exists() {
                    bail!("no such thread: {tid}");
                }
            }
            Target::Threads(t.clone())
        }
        What::Command { argv, system_wide } => {
            let path = match resolve_command(&argv[0]) {
                Ok(p) => p,
                Err((msg, code)) => {
                    eprintln!("bpfprof: {msg}");
                    return Ok(code);
                }
            };
            let c = |s: &str| std::ffi::CString::new(s).context("NUL byte in the command line");
            let cpath = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())?;
            let cargv = argv
                .iter()
                .map(|a| c(a))
                .collect::<anyhow::Result<Vec<_>>>()?;
            let envp = std::env::vars_os()
                .map(|(k, v)| {
                    let mut kv = k.into_encoded_bytes();
                    kv.push(b'=');
                    kv.extend(v.into_encoded_bytes());
                    std::ffi::CString::new(kv).context("NUL byte in the environment")
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let p = sys::fork_parked(&cpath, &cargv, &envp).context("fork")?;
            let pid = p.pid;
            child = Some(p);
            if *system_wide {
                Target::SystemWide
            } else {
                Target::Child(pid)
            }
        }
    };
    let result = record_target(opts, &target, child.as_mut(), page);
    if result.is_err() {
        if let Some(c) = &child {
            // Never released: it exits by itself when its pipe closes.
            let _ = sys::kill(c.pid, libc::SIGKILL);
            let _ = sys::waitpid(c.pid, true);
        }
    }
    result
}

fn record_target(
    opts: &Options,
    target: &Target,
    mut child: Option<&mut ParkedChild>,
    page: u64,
) -> anyhow::Result<i32> {
    let cpus = events::online_cpus().context("reading /sys/devices/system/cpu/online")?;
    let sample_cpus = match &opts.cpus {
        None => cpus.clone(),
        Some(asked) => {
            if let Some(c) = asked.iter().find(|c| !cpus.contains(c)) {
                let online: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
                bail!(
                    "-C: CPU {c} is not online (online: {}); see /sys/devices/system/cpu/online",
                    online.join(",")
                );
            }
            asked.clone()
        }
    };
    let (wake_r, wake_w) = sys::pipe(true)?;
    sys::install_stop_handlers(wake_w).context("installing signal handlers")?;

    let mut cfg = Config {
        event: choose_event(&opts.event, opts.quiet),
        freq: opts.freq,
        period: opts.period,
        sample_cpus: sample_cpus.clone(),
        callchain: opts.callchain,
        bpf_events: opts.bpf_events,
        data_pages: opts.data_pages,
        exclude_idle: false,
    };
    let opened = match events::open(&cfg, target, &cpus) {
        Err(events::OpenError::Unsupported { .. })
            if opts.event.is_none() && cfg.event.is_hardware() =>
        {
            if !opts.quiet {
                eprintln!(
                    "bpfprof: {} is not supported here: sampling cpu-clock",
                    cfg.event.name
                );
            }
            cfg.event = EventSpec::cpu_clock();
            events::open(&cfg, target, &cpus)?
        }
        r => r?,
    };

    if !opts.quiet {
        for r in super::caps::restrictions() {
            eprintln!("bpfprof: {r}");
        }
    }
    let book: SharedBook = Arc::new(Mutex::new(BpfBook::default()));
    let mut side = None;
    if opts.bpf_events {
        match sideband::start(&cpus, book.clone(), opts.capture) {
            Ok(s) => side = Some(s),
            Err(e) if !opts.quiet => eprintln!(
                "bpfprof: BPF side band unavailable ({e}): info of programs loaded from now on is read late and may be missing"
            ),
            Err(_) => {}
        }
    }

    let stats = BpfStats::start(opts.bpf_stats);

    rotate_old(&opts.output)?;
    let mut w = PerfFileWriter::create(&opts.output, &opened.attrs)
        .with_context(|| format!("creating {}", opts.output.display()))?;

    let t0 = Instant::now();
    let mut synth = Synth {
        w: &mut w,
        book: &book,
        capture: opts.capture,
        bpf_event: opts.bpf_events,
        page_size: page,
        dsos: Dsos::default(),
        out: Default::default(),
        warnings: Vec::new(),
    };
    let procs = match target {
        Target::SystemWide => Processes::All,
        Target::Threads(_) => match &opts.what {
            What::Pids(p) => Processes::Only(p.clone()),
            What::Tids(t) => Processes::Only(tgids_of(t)),
            _ => Processes::Only(vec![]),
        },
        Target::Child(pid) => Processes::Only(vec![*pid]),
    };
    synth
        .run(&procs, opts.bpf_events)
        .with_context(|| format!("writing {}", opts.output.display()))?;
    if !opts.quiet {
        for warn in &synth.warnings {
            eprintln!("bpfprof: {warn}");
        }
    }
    // Owners and attachments of the programs present now; the end of the
    // recording adds what changed.
    let mut meta = prog_meta::MetaBook::default();
    if opts.bpf_events {
        meta.snapshot();
    }
    let synthesized = std::mem::take(&mut synth.out);
    let mut dsos = std::mem::take(&mut synth.dsos);
    if let Some(level) = opts.compression {
        // As perf: the start-up records stay plain, the stream is zstd in
        // COMPRESSED records, each decompressing to at most one ring.
        let ring = (opts.data_pages as u64 * page).min(u32::MAX as u64) as u32;
        w.compress(level, ring)
            .with_context(|| format!("-z: starting zstd level {level}"))?;
    }
    w.checkpoint()?;
    let startup = t0.elapsed();

    // Start.
    let mut exit_code = 0;
    let mut child_status: Option<ExitStatus> = None;
    let mut child_pidfd: Option<OwnedFd> = None;
    if let Some(c) = child.as_deref_mut() {
        if target.is_system_wide() {
            // -a with a command: everything runs from before the exec.
            opened
                .enable_sampling()
                .context("enabling the sampling events")?;
        }
        child_pidfd = sys::pidfd_open(c.pid).ok();
        if let Some(errno) = c.release().context("starting the command")? {
            let e = std::io::Error::from_raw_os_error(errno);
            eprintln!("bpfprof: cannot run the command: {e}");
            exit_code = if errno == libc::ENOENT { 127 } else { 126 };
        }
    } else {
        opened
            .enable_sampling()
            .context("enabling the sampling events")?;
    }
    let demo_stop = Arc::new(AtomicBool::new(false));
    let demo = if opts.demo {
        Some(super::demo::start(demo_stop.clone()).context("starting the demo workload")?)
    } else {
        None
    };
    let target_pidfds: Vec<OwnedFd> = match &opts.what {
        What::Pids(p) => p
            .iter()
            .filter_map(|&pid| sys::pidfd_open(pid).ok())
            .collect(),
        _ => Vec::new(),
    };

    let mut tally = Tally {
        time_off: time_offset(&opened.attrs[0].attr),
        ..Default::default()
    };
    let trailer = opened.attrs[0].attr.id_trailer_size();
    let mut stream = Stream {
        opened,
        fixed: Vec::with_capacity(1024),
        trailer,
        pfds: Vec::new(),
        wake: wake_r,
        write_error: None,
        checkpointed: (w.data_size(), 0.0),
    };
    let end = if exit_code != 0 {
        End::ChildExited
    } else {
        stream.run(
            &mut w,
            &mut tally,
            side.is_some(),
            &book,
            opts,
            child_pidfd.as_ref(),
            &target_pidfds,
        )
    };

    // Stop.
    stream.opened.disable_sampling();
    demo_stop.store(true, Ordering::SeqCst);
    if let Some(d) = demo {
        let _ = d.join();
    }
    if let Some(c) = child.as_deref() {
        if end != End::ChildExited {
            let _ = sys::kill(c.pid, libc::SIGTERM);
        }
        child_status = sys::waitpid(c.pid, true).ok().flatten();
    }
    if end != End::WriteFailed {
        stream.drain_all(&mut w, &mut tally, side.is_some());
    }
    if let Some(s) = side {
        s.stop();
    } else {
        apply_stream_bpf_events(&book, &mut tally, opts.capture);
    }

    if let Some(e) = stream.write_error.take() {
        let (bytes, secs) = stream.checkpointed;
        eprintln!(
            "bpfprof: writing {} failed: {e:#}\nThe file stays readable by perf report with what the last checkpoint saw: {:.3} MB of data, {secs:.1} s into the recording (checkpoints are taken every second).",
            opts.output.display(),
            bytes as f64 / 1e6
        );
        return Ok(1);
    }

    // Losses the kernel counted per event but did not report in the ring.
    let read_lost: u64 = stream.opened.lost_counts().iter().map(|(_, l)| l).sum();
    if read_lost > tally.lost {
        let first_id = stream.opened.attrs[0].ids.first().copied().unwrap_or(0);
        let extra = read_lost - tally.lost;
        let sid = SampleId {
            id: first_id,
            ..Default::default()
        };
        w.write(&Record::LostSamples(extra), 0, &sid)?;
        tally.lost = read_lost;
    }

    for (name, id) in std::mem::take(&mut tally.mmap_build_ids) {
        dsos.add(&name, misc::USER, id);
    }
    for name in std::mem::take(&mut tally.mmap_files) {
        if !dsos.by_name.contains_key(&name) {
            if let Ok(Some(id)) = super::buildid::of_elf(Path::new(&name)) {
                dsos.add(&name, misc::USER, id);
            }
        }
    }

    let stats_note = stats.finish(&book);
    if opts.bpf_events {
        for (id, pid, comm) in std::mem::take(&mut tally.loaders) {
            meta.loader(id, pid, comm);
        }
        meta.snapshot();
        if let Some(e) = &meta.error {
            eprintln!("bpfprof: {e}");
        }
    }
    let feats = {
        let b = book.lock().unwrap();
        features::collect(
            opts,
            &dsos,
            (tally.samples > 0).then_some((tally.first_time, tally.last_time)),
            b.progs.values().cloned().collect(),
            b.btf_blobs(),
            meta.for_file(b.progs.keys().copied()),
        )
    };
    let size = w.data_size();
    w.finish(&feats)
        .with_context(|| format!("finishing {}", opts.output.display()))?;

    let b = book.lock().unwrap();
    let mb = std::fs::metadata(&opts.output)
        .map(|m| m.len())
        .unwrap_or(size) as f64
        / 1e6;
    let mut line = format!(
        "[ bpfprof record: Captured and wrote {mb:.3} MB {} ({} samples, {} lost)",
        opts.output.display(),
        tally.samples,
        tally.lost
    );
    if opts.bpf_events {
        line += &format!(
            "; BPF programs: {} seen, {} loaded, {} unloaded during the run",
            b.seen(),
            b.loaded.len(),
            b.unloaded.len()
        );
        if !b.failed.is_empty() {
            let list: Vec<String> = b
                .failed
                .iter()
                .take(3)
                .map(|(id, why)| format!("id {id}: {why}"))
                .collect();
            let more = if b.failed.len() > 3 { ", ..." } else { "" };
            line += &format!(
                "; {} without info ({}{more})",
                b.failed.len(),
                list.join(", ")
            );
        }
        if b.sideband_lost > 0 {
            line += &format!("; side band lost {} BPF events", b.sideband_lost);
        }
    }
    if !opts.quiet {
        eprintln!("{line} ]");
    }
    if let Some(n) = stats_note.filter(|_| !opts.quiet) {
        eprintln!("{n}");
    }
    if tally.garbage && !opts.quiet {
        eprintln!(
            "bpfprof: a ring held a corrupt record header; the rest of that batch was skipped"
        );
    }
    if std::env::var_os("BPFPROF_DEBUG").is_some() {
        eprintln!(
            "bpfprof: start-up {:.1} ms ({} records: {} programs, {} images, {} processes, {} threads)",
            startup.as_secs_f64() * 1e3,
            synthesized.records,
            synthesized.programs,
            synthesized.images,
            synthesized.processes,
            synthesized.threads
        );
        let ms: Vec<String> = meta
            .scan_times
            .iter()
            .map(|t| format!("{:.1} ms", t.as_secs_f64() * 1e3))
            .collect();
        eprintln!(
            "bpfprof: owners/attachments/maps snapshots (start, end): {}",
            ms.join(", ")
        );
    }
    Ok(match (child_status, end) {
        (Some(s), _) if exit_code == 0 => s.shell_code(),
        _ => exit_code,
    })
}

/// The programs the stream reported when no side band ran: read them now.
fn apply_stream_bpf_events(book: &SharedBook, tally: &mut Tally, capture: Capture) {
    for id in std::mem::take(&mut tally.pending_loads) {
        book.lock().unwrap().loaded.insert(id);
        bpf::fetch_into(book, id, capture);
    }
    let mut b = book.lock().unwrap();
    b.unloaded
        .extend(tally.pending_unloads.drain(..).filter(|&id| id != 0));
}

/// The real length of a KSYMBOL or BPF_EVENT record whose header size the
/// kernel may have inflated (see [`events::sideband_attr`]): fields, then
/// the trailer; whatever follows is stale ring bytes.
pub(crate) fn true_len(r: &[u8], trailer: usize) -> usize {
    let ty = u32::from_le_bytes(r[0..4].try_into().unwrap());
    let fields = match ty {
        record_type::BPF_EVENT => 24,
        record_type::KSYMBOL => match r.get(24..).and_then(|n| n.iter().position(|&c| c == 0)) {
            Some(n) => 24 + (n + 1).div_ceil(8) * 8,
            None => return r.len(),
        },
        _ => return r.len(),
    };
    (fields + trailer).min(r.len())
}

struct Stream {
    opened: Opened,
    /// A KSYMBOL/BPF_EVENT being trimmed (see [`true_len`]).
    fixed: Vec<u8>,
    trailer: usize,
    pfds: Vec<libc::pollfd>,
    wake: OwnedFd,
    write_error: Option<perfdata::Error>,
    /// Data bytes and seconds into the recording at the last checkpoint.
    checkpointed: (u64, f64),
}

impl Stream {
    /// One pass over all rings; FINISHED_ROUND if anything was written.
    fn drain_all(
        &mut self,
        w: &mut PerfFileWriter<File>,
        tally: &mut Tally,
        side_band: bool,
    ) -> bool {
        let mut wrote = false;
        let trailer = self.trailer;
        for cr in self.opened.rings.iter_mut() {
            let err = &mut self.write_error;
            let fixed = &mut self.fixed;
            let d = cr.ring.drain(|raw| {
                let ty = u32::from_le_bytes(raw[0..4].try_into().unwrap());
                let mut rec = raw;
                if ty == record_type::KSYMBOL || ty == record_type::BPF_EVENT {
                    let n = true_len(raw, trailer);
                    if n < raw.len() {
                        fixed.clear();
                        fixed.extend_from_slice(&raw[..n]);
                        fixed[6..8].copy_from_slice(&(n as u16).to_le_bytes());
                        rec = &fixed[..];
                    }
                }
                tally.see(rec, side_band);
                match w.write_raw(rec) {
                    Ok(()) => true,
                    Err(e) => {
                        *err = Some(e);
                        false
                    }
                }
            });
            tally.garbage |= d.garbage;
            wrote |= d.records > 0;
            if self.write_error.is_some() {
                return false;
            }
        }
        if wrote {
            if let Err(e) = w.finished_round() {
                self.write_error = Some(e);
            }
        }
        wrote
    }

    #[allow(clippy::too_many_arguments)]
    fn run(
        &mut self,
        w: &mut PerfFileWriter<File>,
        tally: &mut Tally,
        side_band: bool,
        book: &SharedBook,
        opts: &Options,
        child: Option<&OwnedFd>,
        targets: &[OwnedFd],
    ) -> End {
        let pfd = |fd: i32| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        self.pfds.clear();
        self.pfds.push(pfd(self.wake.as_raw_fd()));
        let first_ring = self.pfds.len();
        for r in &self.opened.rings {
            self.pfds.push(pfd(r.owner.as_raw_fd()));
        }
        let first_exit = self.pfds.len();
        for fd in child.into_iter().chain(targets) {
            self.pfds.push(pfd(fd.as_raw_fd()));
        }
        let start = Instant::now();
        let deadline = opts.duration.map(|d| start + d);
        let mut next_checkpoint = start + Duration::from_secs(1);
        loop {
            let now = Instant::now();
            let mut until = next_checkpoint.saturating_duration_since(now);
            if let Some(d) = deadline {
                until = until.min(d.saturating_duration_since(now));
            }
            let timeout = until.as_millis().min(1000) as i32;
            if let Err(e) = sys::poll(&mut self.pfds, timeout) {
                eprintln!("bpfprof: poll: {e}");
                return End::Signal(0);
            }
            self.drain_all(w, tally, side_band);
            if self.write_error.is_some() {
                return End::WriteFailed;
            }
            if !side_band && !tally.pending_loads.is_empty() {
                apply_stream_bpf_events(book, tally, opts.capture);
            }
            // A ring whose owner hung up (its task exited) would make poll
            // return at once forever.
            for p in &mut self.pfds[first_ring..first_exit] {
                if p.revents & (libc::POLLHUP | libc::POLLERR) != 0 {
                    p.fd = -1;
                }
            }
            if let Some(sig) = sys::stop_requested() {
                return End::Signal(sig);
            }
            let exits = &mut self.pfds[first_exit..];
            if child.is_some() && exits[0].revents != 0 {
                return End::ChildExited;
            }
            if !targets.is_empty() {
                for p in exits.iter_mut() {
                    if p.revents != 0 {
                        p.fd = -1;
                    }
                }
                if exits.iter().all(|p| p.fd < 0) {
                    return End::TargetsExited;
                }
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return End::Duration;
            }
            if now >= next_checkpoint {
                if let Err(e) = w.checkpoint() {
                    self.write_error = Some(e);
                    return End::WriteFailed;
                }
                self.checkpointed = (w.data_size(), start.elapsed().as_secs_f64());
                next_checkpoint = now + Duration::from_secs(1);
            }
        }
    }
}
