//! `bpfprof top`: the live profile, refreshed every interval, BPF programs
//! first: what each costs in parts (the true-cost model of `report --bpf`,
//! fed live through the one analysis engine), run stats, owners, and the
//! hottest symbols over a decaying window, as perf top shows them.
//!
//! `live` runs the capture and the engine; `model` takes plain snapshots
//! of the profile; `window` turns them into one refresh; `keys`, `screen` and
//! `ui` are the terminal UI (with the pieces in `crate::tui`); `json` the line-per-interval outputs.

pub(crate) mod json;
pub(crate) mod keys;
mod live;
mod model;
mod screen;
mod ui;
pub(crate) mod window;

use std::io::{IsTerminal, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use crate::analyze::annotate::{self, AnnotateOptions, Selection, Target};
use crate::analyze::Profile;
use crate::capture::sys;
use live::Live;
pub use live::LiveOptions;
use window::Window;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    Tui,
    Json,
    Csv,
}

pub struct TopOptions {
    pub live: LiveOptions,
    pub interval: Duration,
    pub output: Output,
    /// Stop after this many refreshes.
    pub iterations: Option<u64>,
}

/// How many times per interval the rings are drained at least (more when
/// a ring fills to its watermark).
const DRAINS_PER_INTERVAL: u32 = 4;

pub fn run(o: &TopOptions) -> anyhow::Result<i32> {
    if o.output == Output::Tui && !std::io::stdout().is_terminal() {
        bail!("stdout is not a terminal: use --json or --csv for a pipe or a file");
    }
    let (wake_r, wake_w) = sys::pipe(true)?;
    sys::install_stop_handlers(wake_w).context("installing signal handlers")?;
    let mut live = Live::start(&o.live)?;
    let r = match o.output {
        Output::Tui => run_tui(&mut live, o, &wake_r),
        _ => run_loop(&mut live, o, &wake_r, None),
    };
    live.stop();
    r.map(|_| 0)
}

/// The UI on its own thread, the capture loop on this one.
fn run_tui(live: &mut Live, o: &TopOptions, wake: &OwnedFd) -> anyhow::Result<()> {
    let term = crate::tui::term::Term::enter().context("setting up the terminal")?;
    let (ui_wake_r, ui_wake_w) = sys::pipe(true)?;
    let (tx, rx) = std::sync::mpsc::channel();
    let shared = Arc::new(screen::Shared {
        requests: Mutex::new(screen::Requests::default()),
        quit: AtomicBool::new(false),
    });
    let ui = {
        let shared = shared.clone();
        std::thread::Builder::new()
            .name("top-ui".into())
            .spawn(move || screen::run(term, rx, shared, ui_wake_w))?
    };
    let r = run_loop(
        live,
        o,
        wake,
        Some(Tui {
            tx,
            shared: &shared,
            wake: &ui_wake_r,
        }),
    );
    shared.quit.store(true, Ordering::SeqCst);
    let ui_result = ui.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
    r?;
    ui_result.context("drawing the terminal UI")
}

/// Own CPU time, in microseconds (all threads).
fn cpu_us() -> u64 {
    let (u, s) = sys::self_cpu_time_us();
    u + s
}

/// The capture loop's end of the UI thread.
struct Tui<'a> {
    tx: std::sync::mpsc::Sender<screen::Update>,
    shared: &'a screen::Shared,
    wake: &'a OwnedFd,
}

fn run_loop(
    live: &mut Live,
    o: &TopOptions,
    wake: &OwnedFd,
    ui: Option<Tui<'_>>,
) -> anyhow::Result<()> {
    let mut pfds: Vec<libc::pollfd> = std::iter::once(wake.as_raw_fd())
        .chain(ui.as_ref().map(|u| u.wake.as_raw_fd()))
        .chain(live.ring_fds())
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let first_ring = 1 + ui.is_some() as usize;
    let start = Instant::now();
    let drain_every = o.interval / DRAINS_PER_INTERVAL;
    let mut next_drain = start + drain_every;
    let mut next_refresh = start + o.interval;
    let mut last = (start, cpu_us());
    let mut window = Window::default();
    let mut refreshes = 0u64;
    // Locked per line: the UI thread draws on stdout.
    let out = std::io::stdout();
    if o.output == Output::Csv {
        writeln!(out.lock(), "{}", json::CSV_HEADER)?;
    }
    let mut note: Option<String> = live.notes.first().cloned();
    let debug = std::env::var_os("BPFPROF_DEBUG").is_some();
    loop {
        let now = Instant::now();
        let wait = next_drain.min(next_refresh).saturating_duration_since(now);
        sys::poll(&mut pfds, wait.as_millis() as i32).context("poll")?;
        if sys::stop_requested().is_some() {
            return Ok(());
        }
        if let Some(u) = &ui {
            if u.shared.quit.load(Ordering::SeqCst) {
                return Ok(());
            }
            // The UI's wake-ups carry no data: what it wants is in `requests`.
            let mut buf = [0u8; 64];
            while matches!(nix_read(u.wake, &mut buf), Some(n) if n > 0) {}
            if std::mem::take(&mut u.shared.requests.lock().unwrap().toggle_stats) {
                note = live.set_stats(!live.stats_on()).err();
            }
        }
        let ring_ready = pfds[first_ring..]
            .iter()
            .any(|p| p.revents & libc::POLLIN != 0);
        for p in &mut pfds[first_ring..] {
            // A ring whose task exited (-p) would make poll return at once.
            if p.revents & (libc::POLLHUP | libc::POLLERR) != 0 {
                p.fd = -1;
            }
        }
        let now = Instant::now();
        if ring_ready || now >= next_drain {
            live.drain();
            next_drain = now + drain_every;
        }
        if now < next_refresh {
            continue;
        }
        let t0 = Instant::now();
        live.drain();
        // A `q` pressed during the drain ends the session before the
        // refresh, the one slow step, rather than after it.
        if ui
            .as_ref()
            .is_some_and(|u| u.shared.quit.load(Ordering::SeqCst))
        {
            return Ok(());
        }
        let t1 = Instant::now();
        let open = ui
            .as_ref()
            .and_then(|u| u.shared.requests.lock().unwrap().detail);
        let (snap, detail_lines) = live.snapshot(|p| open.map(|id| hot_lines(p, id)));
        let (t, c) = (Instant::now(), cpu_us());
        if debug && ui.is_none() {
            eprintln!(
                "bpfprof top: drain {:.1} ms, snapshot {:.1} ms",
                (t1 - t0).as_secs_f64() * 1e3,
                (t - t1).as_secs_f64() * 1e3
            );
        }
        let secs = t.duration_since(last.0).as_secs_f64();
        let cpu = match secs > 0.0 {
            true => 100.0 * (c - last.1) as f64 / 1e6 / secs,
            false => 0.0,
        };
        last = (t, c);
        refreshes += 1;
        next_refresh = (next_refresh + o.interval).max(t);
        let cx = json::Context {
            event: &live.event,
            elapsed_s: t.duration_since(start).as_secs_f64(),
            cpu_percent: cpu,
            wall_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        };
        let stats_on = live.stats_on();
        match (&ui, o.output) {
            (Some(u), _) => {
                let update = screen::Update {
                    snap,
                    secs,
                    stats_on,
                    status: screen::StatusFacts {
                        event: live.event.clone(),
                        freq: o.live.freq,
                        interval_s: o.interval.as_secs_f64(),
                        cpu,
                        note: note.clone(),
                    },
                    detail_lines,
                };
                if u.tx.send(update).is_err() {
                    return Ok(()); // the UI is gone
                }
            }
            (None, Output::Csv) => {
                let shown = window.advance(snap, secs, stats_on);
                json::csv_rows(&mut out.lock(), &shown, &cx)?
            }
            (None, _) => {
                let shown = window.advance(snap, secs, stats_on);
                let syms = window.symbols(|_| true);
                json::json_line(&mut out.lock(), &shown, &syms, &cx)?
            }
        }
        if o.iterations.is_some_and(|n| refreshes >= n) {
            return Ok(());
        }
    }
}

/// Read what a non-blocking pipe holds; None when it holds nothing.
fn nix_read(fd: &OwnedFd, buf: &mut [u8]) -> Option<usize> {
    use std::io::Read;
    let mut f = std::fs::File::from(fd.try_clone().ok()?);
    f.read(buf).ok()
}

/// A program's hottest source lines over the last interval, from the annotation of
/// its JIT code that `annotate` prints.
fn hot_lines(p: &Profile, id: u32) -> (u32, Vec<ui::HotLine>, Option<String>) {
    let opts = AnnotateOptions {
        xlated: false,
        kcore: annotate::default_kcore().to_path_buf(),
        callchains: true,
    };
    let targets = annotate::annotate(p, &Selection::Prog(id), None, &opts);
    let mut lines = Vec::new();
    let mut note = None;
    for t in targets {
        match t {
            Target::Annotated(a) => lines.extend(a.lines.iter().filter(|l| l.samples > 0).map(
                |l| ui::HotLine {
                    place: format!(
                        "{}:{}",
                        l.file.rsplit('/').next().unwrap_or(&l.file),
                        l.line
                    ),
                    text: l.text.trim().to_string(),
                    samples: l.samples,
                    percent: l.percent,
                },
            )),
            Target::Unavailable(u) => note = Some(u.why),
        }
    }
    lines.sort_by_key(|l| std::cmp::Reverse(l.samples));
    lines.truncate(12);
    if lines.is_empty() && note.is_none() {
        note = Some("no samples on its source lines yet (or it has no line info)".into());
    }
    (id, lines, note)
}
