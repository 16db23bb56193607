//! `bpfprof report` on a terminal, as perf report: the report's rows to
//! browse (the rows, order and shares `--stdio` prints), Enter to open or
//! close a row's call graph, the recording's BPF programs in top's pane,
//! Enter on one for its annotation, `/` to filter, `q`/Esc back and out.

mod draw;
mod rows;

use std::io;
use std::time::Duration;

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::widgets::ListState;
use rustc_hash::FxHashMap;

use crate::analyze::bpf_view::ProgSummary;
use crate::analyze::render::ReportOptions;
use crate::analyze::Profile;
use crate::top::window::ProgLine;
use crate::tui::filter::{Edit, Filter};
use rows::{Graphs, Table};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Focus {
    Rows,
    Bpf,
}

/// One line of the rows pane: a row, or a line of its open call graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Item {
    row: usize,
    graph: Option<usize>,
}

/// An opened program's annotation.
struct Annotated {
    id: u32,
    lines: Vec<String>,
    scroll: usize,
}

pub struct App<'a> {
    p: &'a Profile,
    callchains: bool,
    title: String,
    table: Table,
    graphs: Option<Graphs>,
    progs: Vec<(ProgLine, ProgSummary)>,
    /// Open call graphs' lines, by row.
    open: FxHashMap<usize, Vec<String>>,
    focus: Focus,
    filter: Filter,
    rows_state: ListState,
    prog_sel: usize,
    annotated: Option<Annotated>,
    quit: bool,
}

/// How often a wait for a key looks for SIGTERM.
const TICK: Duration = Duration::from_millis(100);

/// Browse the report until `q`; the terminal is given back on every way
/// out (the guard, its panic hook, SIGTERM seen here).
pub fn run(p: &Profile, o: &ReportOptions, callchains: bool, title: String) -> io::Result<()> {
    let mut app = App::new(p, o, callchains, title);
    let (_wake_r, wake_w) = crate::capture::sys::pipe(true)?;
    crate::capture::sys::install_stop_handlers(wake_w)?;
    let mut term = super::term::Term::enter()?;
    loop {
        term.t.draw(|f| draw::draw(f, &mut app))?;
        while !event::poll(TICK)? {
            if crate::capture::sys::stop_requested().is_some() {
                return Ok(());
            }
        }
        match event::read()? {
            Event::Key(k) if k.kind != KeyEventKind::Release => app.key(k),
            _ => {}
        }
        if app.quit {
            return Ok(());
        }
    }
}

impl<'a> App<'a> {
    pub fn new(p: &'a Profile, o: &ReportOptions, callchains: bool, title: String) -> App<'a> {
        let (table, graphs) = rows::table(p, o);
        let progs = rows::programs(p, o);
        let mut rows_state = ListState::default();
        rows_state.select(Some(0));
        App {
            p,
            callchains,
            title,
            table,
            graphs,
            progs,
            open: FxHashMap::default(),
            focus: Focus::Rows,
            filter: Filter::default(),
            rows_state,
            prog_sel: 0,
            annotated: None,
            quit: false,
        }
    }

    /// The rows pane's lines: the rows the filter keeps, each followed by
    /// its call graph when open.
    fn items(&self) -> Vec<Item> {
        let mut out = Vec::new();
        for (i, r) in self.table.rows.iter().enumerate() {
            if !self.filter.keeps(std::iter::once(r.text.as_str())) {
                continue;
            }
            out.push(Item {
                row: i,
                graph: None,
            });
            if let Some(g) = self.open.get(&i) {
                out.extend((0..g.len()).map(|n| Item {
                    row: i,
                    graph: Some(n),
                }));
            }
        }
        out
    }

    /// The programs the filter keeps (by name or owner's command).
    fn shown_progs(&self) -> Vec<&(ProgLine, ProgSummary)> {
        self.progs
            .iter()
            .filter(|(l, _)| {
                self.filter.keeps(
                    std::iter::once(l.head.name.as_str())
                        .chain(l.owners.iter().map(|o| o.comm.as_str())),
                )
            })
            .collect()
    }

    pub fn key(&mut self, k: KeyEvent) {
        match self.filter.key(k) {
            Edit::Pass => {}
            Edit::Taken => return,
            Edit::Applied => {
                self.rows_state.select(Some(0));
                self.prog_sel = 0;
                return;
            }
            Edit::Quit => {
                self.quit = true;
                return;
            }
        }
        let ctrl_c = k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl_c {
            self.quit = true;
            return;
        }
        if let Some(a) = &mut self.annotated {
            let last = a.lines.len().saturating_sub(1);
            match k.code {
                KeyCode::Char('q') | KeyCode::Esc => self.annotated = None,
                KeyCode::Down | KeyCode::Char('j') => a.scroll = (a.scroll + 1).min(last),
                KeyCode::Up | KeyCode::Char('k') => a.scroll = a.scroll.saturating_sub(1),
                KeyCode::PageDown | KeyCode::Char(' ') => a.scroll = (a.scroll + 20).min(last),
                KeyCode::PageUp => a.scroll = a.scroll.saturating_sub(20),
                KeyCode::Home => a.scroll = 0,
                _ => {}
            }
            return;
        }
        let n = match self.focus {
            Focus::Rows => self.items().len(),
            Focus::Bpf => self.shown_progs().len(),
        };
        let sel = match self.focus {
            Focus::Rows => self.rows_state.selected().unwrap_or(0),
            Focus::Bpf => self.prog_sel,
        };
        let moved = match k.code {
            KeyCode::Char('q') => {
                self.quit = true;
                return;
            }
            KeyCode::Esc if !self.filter.text.is_empty() => {
                self.filter.text.clear();
                Some(0)
            }
            KeyCode::Esc => {
                self.quit = true;
                return;
            }
            KeyCode::Tab | KeyCode::BackTab if !self.progs.is_empty() => {
                self.focus = match self.focus {
                    Focus::Rows => Focus::Bpf,
                    Focus::Bpf => Focus::Rows,
                };
                None
            }
            KeyCode::Down | KeyCode::Char('j') => Some(sel + 1),
            KeyCode::Up | KeyCode::Char('k') => Some(sel.saturating_sub(1)),
            KeyCode::PageDown => Some(sel + 20),
            KeyCode::PageUp => Some(sel.saturating_sub(20)),
            KeyCode::Home => Some(0),
            KeyCode::End => Some(usize::MAX),
            KeyCode::Enter => {
                self.enter(sel);
                None
            }
            _ => None,
        };
        if let Some(m) = moved {
            let m = m.min(n.saturating_sub(1));
            match self.focus {
                Focus::Rows => self.rows_state.select(Some(m)),
                Focus::Bpf => self.prog_sel = m,
            }
        }
    }

    /// Enter on the selected line: a row's call graph opens or closes
    /// (the row stays selected), a program's annotation opens.
    fn enter(&mut self, sel: usize) {
        match self.focus {
            Focus::Rows => {
                let items = self.items();
                let Some(item) = items.get(sel.min(items.len().saturating_sub(1))) else {
                    return;
                };
                let row = item.row;
                if self.open.remove(&row).is_none() {
                    if let Some(g) = &self.graphs {
                        self.open
                            .insert(row, g.lines(self.p, &self.table.rows[row]));
                    }
                }
                let at = self.items().iter().position(|i| i.row == row);
                self.rows_state.select(at);
            }
            Focus::Bpf => {
                let progs = self.shown_progs();
                let Some((line, sum)) = progs.get(sel.min(progs.len().saturating_sub(1))) else {
                    return;
                };
                let lines = rows::annotation(self.p, line, sum, self.callchains);
                self.annotated = Some(Annotated {
                    id: line.head.id,
                    lines,
                    scroll: 0,
                });
            }
        }
    }
}
