//! The terminal UI's own thread: keys, resizes and drawing never wait for
//! the capture loop, which may be busy resolving a refresh. It owns the
//! terminal (given back when the thread ends), the window and the UI state;
//! the loop sends it each refresh and reads its requests.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ratatui::crossterm::event::{self, Event, KeyEventKind};

use super::model::Snapshot;
use super::window::{Interval, Window};
use super::{keys, ui};
use crate::tui::term;

/// One refresh, as the capture loop sends it.
pub struct Update {
    pub snap: Snapshot,
    pub secs: f64,
    pub stats_on: bool,
    /// The status line without the interval's numbers.
    pub status: StatusFacts,
    /// The opened program's hottest lines, if one is open.
    pub detail_lines: Option<(u32, Vec<ui::HotLine>, Option<String>)>,
}

pub struct StatusFacts {
    pub event: String,
    pub freq: u64,
    pub interval_s: f64,
    pub cpu: f64,
    pub note: Option<String>,
}

/// What the UI asks of the capture loop.
#[derive(Default)]
pub struct Requests {
    pub toggle_stats: bool,
    pub detail: Option<u32>,
}

pub struct Shared {
    pub requests: Mutex<Requests>,
    /// Set by the UI on `q`, by the loop on a signal or an error.
    pub quit: AtomicBool,
}

/// Wake the capture loop's poll.
fn wake(fd: &OwnedFd) {
    if let Ok(fd) = fd.try_clone() {
        let _ = std::io::Write::write_all(&mut std::fs::File::from(fd), &[1]);
    }
}

/// How long a key or resize may wait to be seen.
const TICK: Duration = Duration::from_millis(50);

pub fn run(
    mut term: term::Term,
    rx: Receiver<Update>,
    shared: Arc<Shared>,
    wake_loop: OwnedFd,
) -> std::io::Result<()> {
    let mut state = keys::UiState::default();
    let mut window = Window::default();
    let mut shown = Interval::default();
    let mut facts: Option<StatusFacts> = None;
    let mut detail_lines = None;
    let mut view = ui::View::default();
    let mut redraw = true;
    let result = loop {
        if shared.quit.load(Ordering::SeqCst) {
            break Ok(());
        }
        match event::poll(TICK) {
            Ok(true) => match event::read() {
                Ok(Event::Key(k)) if k.kind != KeyEventKind::Release => {
                    state.key(k, &view.progs);
                    redraw = true;
                }
                Ok(Event::Resize(..)) => redraw = true,
                Ok(_) => {}
                Err(e) => break Err(e),
            },
            Ok(false) => {}
            Err(e) => break Err(e),
        }
        if state.quit {
            break Ok(());
        }
        {
            let mut r = shared.requests.lock().unwrap();
            r.toggle_stats |= std::mem::take(&mut state.toggle_stats);
            if r.detail != state.detail {
                r.detail = state.detail;
                redraw = true;
            }
        }
        loop {
            match rx.try_recv() {
                Ok(u) => {
                    shown = window.advance(u.snap, u.secs, u.stats_on);
                    facts = Some(u.status);
                    detail_lines = u.detail_lines;
                    redraw = true;
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    shared.quit.store(true, Ordering::SeqCst);
                    break;
                }
            }
        }
        if redraw {
            view = build(&window, &shown, &state, facts.as_ref(), &detail_lines);
            term.t.draw(|f| ui::draw(f, &view, &state))?;
            redraw = false;
        }
    };
    // The terminal first, then the loop told: the shell's screen comes back
    // even while a refresh is still being resolved.
    drop(term);
    shared.quit.store(true, Ordering::SeqCst);
    wake(&wake_loop);
    result
}

/// The UI's lines: filtered, sorted, with the opened program.
fn build(
    window: &Window,
    shown: &Interval,
    s: &keys::UiState,
    facts: Option<&StatusFacts>,
    detail_lines: &Option<(u32, Vec<ui::HotLine>, Option<String>)>,
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
    let status = match facts {
        None => "bpfprof top: starting (the first refresh comes after one interval)".to_string(),
        Some(f) => status_line(shown, f),
    };
    let detail = s.detail.and_then(|id| {
        let prog = shown.progs.iter().find(|p| p.head.id == id)?.clone();
        let (lines, note) = match detail_lines {
            Some((d, lines, note)) if *d == id => (lines.clone(), note.clone()),
            _ => (
                Vec::new(),
                Some("reading its source lines at the next refresh".into()),
            ),
        };
        Some(ui::Detail { prog, lines, note })
    });
    ui::View {
        status,
        progs,
        syms,
        detail,
    }
}

fn status_line(shown: &Interval, f: &StatusFacts) -> String {
    let unloaded = shown.progs.iter().filter(|p| p.unloaded).count();
    let rate = match shown.secs > 0.0 {
        true => shown.samples as f64 / shown.secs,
        false => 0.0,
    };
    let lost = match shown.lost {
        0 => String::new(),
        n => format!(", {n} lost"),
    };
    let mut s = format!(
        "bpfprof top: {} at {} Hz, -g | {rate:.0} samples/s{lost} | {} BPF programs ({unloaded} unloaded) | BPF stats {} | top's CPU {:.1}% | every {:.1}s",
        f.event,
        f.freq,
        shown.progs.len(),
        if shown.stats_on { "on" } else { "off" },
        f.cpu,
        f.interval_s,
    );
    if let Some(n) = &f.note {
        s.push_str(" | ");
        s.push_str(n);
    }
    s
}
