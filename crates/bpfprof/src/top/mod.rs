//! `bpfprof top`: the live profile, refreshed every interval, BPF programs
//! first: what each costs in parts (the true-cost model of `report --bpf`,
//! fed live through the one analysis engine), run stats, owners, and the
//! hottest symbols over a decaying window, as perf top shows them.
//!
//! `live` runs the capture and the engine; `model` takes plain snapshots
//! of the profile; `window` turns them into one refresh; `keys`, `ui` and
//! `term` are the terminal UI; `json` the line-per-interval outputs.

mod json;
mod keys;
mod live;
mod model;
mod term;
mod ui;
mod window;

use std::io::{IsTerminal, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use ratatui::crossterm::event::{self, Event, KeyEventKind};

use crate::analyze::annotate::{self, AnnotateOptions, Selection, Target};
use crate::capture::sys;
pub use live::LiveOptions;
use live::Live;
use window::{Interval, Window};

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
/// The longest the UI waits for a key or a resize.
const UI_TICK: Duration = Duration::from_millis(100);

pub fn run(o: &TopOptions) -> anyhow::Result<i32> {
    if o.output == Output::Tui && !std::io::stdout().is_terminal() {
        bail!("stdout is not a terminal: use --json or --csv for a pipe or a file");
    }
    let (wake_r, wake_w) = sys::pipe(true)?;
    sys::install_stop_handlers(wake_w).context("installing signal handlers")?;
    let mut live = Live::start(&o.live)?;
    let r = match o.output {
        Output::Tui => term::Term::enter()
            .context("setting up the terminal")
            .and_then(|mut t| run_loop(&mut live, o, &wake_r, Some(&mut t))),
        _ => run_loop(&mut live, o, &wake_r, None),
    };
    live.stop();
    r.map(|_| 0)
}

/// Own CPU time, in microseconds (all threads).
fn cpu_us() -> u64 {
    let (u, s) = sys::self_cpu_time_us();
    u + s
}

struct Ui<'a> {
    term: &'a mut term::Term,
    state: keys::UiState,
    view: ui::View,
}

fn run_loop(
    live: &mut Live,
    o: &TopOptions,
    wake: &OwnedFd,
    term: Option<&mut term::Term>,
) -> anyhow::Result<()> {
    let mut ui = term.map(|term| Ui {
        term,
        state: keys::UiState::default(),
        view: ui::View::default(),
    });
    let mut pfds: Vec<libc::pollfd> = std::iter::once(wake.as_raw_fd())
        .chain(live.ring_fds())
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let start = Instant::now();
    let drain_every = o.interval / DRAINS_PER_INTERVAL;
    let mut next_drain = start + drain_every;
    let mut next_refresh = start + o.interval;
    let mut last = (start, cpu_us());
    let mut window = Window::default();
    let mut shown = Interval::default();
    let mut cpu = 0.0;
    let mut refreshes = 0u64;
    let mut out = std::io::stdout().lock();
    if o.output == Output::Csv {
        writeln!(out, "{}", json::CSV_HEADER)?;
    }
    let mut status_note: Option<String> = live.notes.first().cloned();
    loop {
        let now = Instant::now();
        let mut wait = next_drain.min(next_refresh).saturating_duration_since(now);
        if ui.is_some() {
            wait = wait.min(UI_TICK);
        }
        sys::poll(&mut pfds, wait.as_millis() as i32).context("poll")?;
        if sys::stop_requested().is_some() {
            return Ok(());
        }
        let ring_ready = pfds[1..].iter().any(|p| p.revents & libc::POLLIN != 0);
        for p in &mut pfds[1..] {
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
        let mut redraw = false;
        if let Some(u) = ui.as_mut() {
            while event::poll(Duration::ZERO)? {
                match event::read()? {
                    Event::Key(k) if k.kind != KeyEventKind::Release => {
                        u.state.key(k, &u.view.progs);
                        redraw = true;
                    }
                    Event::Resize(..) => redraw = true,
                    _ => {}
                }
            }
            if u.state.quit {
                return Ok(());
            }
            if std::mem::take(&mut u.state.toggle_stats) {
                status_note = live.set_stats(!live.stats_on()).err();
            }
        }
        if now >= next_refresh {
            live.drain();
            let snap = live.snapshot();
            let (t, c) = (Instant::now(), cpu_us());
            let secs = t.duration_since(last.0).as_secs_f64();
            cpu = match secs > 0.0 {
                true => 100.0 * (c - last.1) as f64 / 1e6 / secs,
                false => 0.0,
            };
            shown = window.advance(snap, secs, live.stats_on());
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
            match o.output {
                Output::Json => {
                    let syms = window.symbols(|_| true);
                    json::json_line(&mut out, &shown, &syms, &cx)?
                }
                Output::Csv => json::csv_rows(&mut out, &shown, &cx)?,
                Output::Tui => redraw = true,
            }
            if o.iterations.is_some_and(|n| refreshes >= n) {
                return Ok(());
            }
        }
        if let (Some(u), true) = (ui.as_mut(), redraw) {
            u.view = view(live, &window, &shown, &u.state, cpu, o, &status_note);
            let (state, view) = (&u.state, &u.view);
            u.term.t.draw(|f| ui::draw(f, view, state))?;
        }
    }
}

/// The UI's lines: filtered, sorted, and the opened program's details.
fn view(
    live: &mut Live,
    window: &Window,
    shown: &Interval,
    s: &keys::UiState,
    cpu: f64,
    o: &TopOptions,
    note: &Option<String>,
) -> ui::View {
    let mut progs: Vec<_> = shown
        .progs
        .iter()
        .filter(|p| s.keeps_prog(p))
        .cloned()
        .collect();
    keys::sort_progs(&mut progs, s.bpf_sort());
    let mut syms = window.symbols(|k| s.keeps_sym(&k.sym, &k.comm));
    syms.truncate(500);
    keys::sort_syms(&mut syms, s.sym_sort());
    let unloaded = shown.progs.iter().filter(|p| p.unloaded).count();
    let mut status = format!(
        "bpfprof top: {} at {} Hz, -g | {:.0} samples/s{} | {} BPF programs ({unloaded} unloaded) | BPF stats {} | top's CPU {cpu:.1}% | every {:.1}s",
        live.event,
        o.live.freq,
        match shown.secs > 0.0 {
            true => shown.samples as f64 / shown.secs,
            false => 0.0,
        },
        match shown.lost {
            0 => String::new(),
            n => format!(", {n} lost"),
        },
        shown.progs.len(),
        if shown.stats_on { "on" } else { "off" },
        o.interval.as_secs_f64(),
    );
    if let Some(n) = note {
        status.push_str(" | ");
        status.push_str(n);
    }
    let detail = s.detail.and_then(|id| {
        let prog = shown.progs.iter().find(|p| p.id == id)?.clone();
        Some(detail(live, prog))
    });
    ui::View {
        status,
        progs,
        syms,
        detail,
    }
}

/// A program's hottest source lines since start, from the annotation of
/// its JIT code that `annotate` prints.
fn detail(live: &mut Live, prog: window::ProgLine) -> ui::Detail {
    let opts = AnnotateOptions {
        xlated: false,
        kcore: annotate::default_kcore().to_path_buf(),
        callchains: true,
    };
    let targets = annotate::annotate(live.profile(), &Selection::Prog(prog.id), None, &opts);
    let mut lines = Vec::new();
    let mut note = None;
    for t in targets {
        match t {
            Target::Annotated(a) => lines.extend(a.lines.iter().filter(|l| l.samples > 0).map(
                |l| ui::HotLine {
                    place: format!("{}:{}", l.file.rsplit('/').next().unwrap_or(&l.file), l.line),
                    text: l.text.trim().to_string(),
                    samples: l.samples,
                    percent: l.percent,
                },
            )),
            Target::Unavailable(u) => note = Some(u.why),
        }
    }
    lines.sort_by(|a, b| b.samples.cmp(&a.samples));
    lines.truncate(12);
    if lines.is_empty() && note.is_none() {
        note = Some("no samples on its source lines yet (or it has no line info)".into());
    }
    ui::Detail { prog, lines, note }
}
