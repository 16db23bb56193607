//! Drawing one refresh: the status line, the BPF pane (or one program's
//! sub-programs and hottest source lines), the symbols pane, the keys.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table, TableState};
use ratatui::Frame;

use super::json::{attach_text, owner_text};
use super::keys::{BpfSort, Pane, SymSort, UiState};
use super::window::{ProgLine, SymLine};

/// One of a program's source lines, with its samples since start.
#[derive(Debug, Clone)]
pub struct HotLine {
    pub place: String,
    pub text: String,
    pub samples: u64,
    pub percent: f64,
}

/// The program opened with Enter.
#[derive(Debug, Clone)]
pub struct Detail {
    pub prog: ProgLine,
    pub lines: Vec<HotLine>,
    /// Why there are no source lines, if there are none.
    pub note: Option<String>,
}

/// Everything one refresh draws, already filtered and sorted.
#[derive(Debug, Clone, Default)]
pub struct View {
    pub status: String,
    pub progs: Vec<ProgLine>,
    pub syms: Vec<SymLine>,
    pub detail: Option<Detail>,
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.2}%"))
}

/// A duration the way top prints uptime: the largest unit that fits.
pub fn age(secs: f64) -> String {
    let s = secs as u64;
    match s {
        0..=119 => format!("{s}s"),
        120..=7199 => format!("{}m", s / 60),
        7200..=172_799 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

fn bpf_sort_name(s: BpfSort) -> &'static str {
    match s {
        BpfSort::Total => "total",
        BpfSort::Own => "self",
        BpfSort::Called => "called",
        BpfSort::Hook => "hook",
        BpfSort::RunsPerSec => "runs/s",
        BpfSort::AvgNs => "avg ns",
        BpfSort::Loaded => "loaded",
        BpfSort::Id => "id",
        BpfSort::Name => "name",
    }
}

fn sym_sort_name(s: SymSort) -> &'static str {
    match s {
        SymSort::Overhead => "overhead",
        SymSort::Samples => "samples",
        SymSort::Symbol => "symbol",
        SymSort::Dso => "shared object",
    }
}

fn pane_block(title: String, focused: bool) -> Block<'static> {
    let style = match focused {
        true => Style::default().add_modifier(Modifier::BOLD),
        false => Style::default().add_modifier(Modifier::DIM),
    };
    Block::default()
        .borders(Borders::TOP)
        .title(title)
        .border_style(style)
}

pub fn draw(f: &mut Frame<'_>, v: &View, s: &UiState) {
    let [status, bpf, syms, keys] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Percentage(50),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(f.area());
    f.render_widget(Paragraph::new(v.status.as_str()), status);
    match &v.detail {
        Some(d) => draw_detail(f, bpf, d, s),
        None => draw_bpf(f, bpf, v, s),
    }
    draw_syms(f, syms, v, s);
    let help = match &s.editing {
        Some(t) => format!("filter (name or command, Enter applies, Esc cancels): {t}_"),
        None => {
            let filter = match s.filter.is_empty() {
                true => String::new(),
                false => format!("  [filter: {}]", s.filter),
            };
            format!(
                "q quit  Tab pane  </> sort  / filter  Enter open  Esc back  s stats{filter}"
            )
        }
    };
    f.render_widget(Paragraph::new(help), keys);
}

fn draw_bpf(f: &mut Frame<'_>, area: Rect, v: &View, s: &UiState) {
    let sort = s.bpf_sort();
    let head = |name: &'static str, col: BpfSort| -> Cell<'static> {
        match col == sort {
            true => Cell::from(format!("{name}▼")),
            false => Cell::from(name),
        }
    };
    let header = Row::new(vec![
        head("Total", BpfSort::Total),
        head("Self", BpfSort::Own),
        head("Called", BpfSort::Called),
        head("Hook", BpfSort::Hook),
        head("Runs/s", BpfSort::RunsPerSec),
        head("Avg ns", BpfSort::AvgNs),
        head("ID", BpfSort::Id),
        Cell::from("Type"),
        head("Name", BpfSort::Name),
        Cell::from("Attach"),
        Cell::from("Owner"),
        head("Loaded", BpfSort::Loaded),
    ])
    .style(Style::default().add_modifier(Modifier::UNDERLINED));
    let rows = v.progs.iter().map(|p| {
        let name = match p.unloaded {
            true => format!("{} [unloaded]", p.name),
            false => p.name.clone(),
        };
        let row = Row::new(vec![
            pct(p.percent.total),
            format!("{:.2}%", p.percent.own),
            pct(p.percent.called),
            pct(p.percent.hook),
            p.runs_per_s
                .map_or_else(|| "-".into(), |r| format!("{r:.0}")),
            p.avg_ns.map_or_else(|| "-".into(), |n| format!("{n:.0}")),
            p.id.to_string(),
            p.prog_type.clone(),
            name,
            attach_text(p),
            owner_text(p),
            p.loaded_s.map_or_else(|| "-".into(), age),
        ]);
        match p.unloaded {
            true => row.style(Style::default().add_modifier(Modifier::DIM)),
            false => row,
        }
    });
    let widths = [
        Constraint::Length(8),
        Constraint::Length(7),
        Constraint::Length(7),
        Constraint::Length(7),
        Constraint::Length(8),
        Constraint::Length(7),
        Constraint::Length(6),
        Constraint::Length(11),
        Constraint::Fill(1),
        Constraint::Length(26),
        Constraint::Length(16),
        Constraint::Length(7),
    ];
    let title = format!(
        " BPF programs ({}; last interval; sort: {}) ",
        v.progs.len(),
        bpf_sort_name(sort)
    );
    let table = Table::new(rows, widths)
        .header(header)
        .block(pane_block(title, s.pane == Pane::Bpf))
        .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED));
    let mut st = TableState::default();
    if s.pane == Pane::Bpf && !v.progs.is_empty() {
        st.select(Some(s.selected[0].min(v.progs.len() - 1)));
    }
    f.render_stateful_widget(table, area, &mut st);
}

fn draw_detail(f: &mut Frame<'_>, area: Rect, d: &Detail, s: &UiState) {
    let p = &d.prog;
    let mut lines: Vec<Line<'_>> = vec![Line::from(format!(
        "{} (id {}, {}, tag {}): total {}  self {:.2}%  called {}  hook {}  runs/s {}  avg ns {}",
        p.name,
        p.id,
        p.prog_type,
        p.tag,
        pct(p.percent.total),
        p.percent.own,
        pct(p.percent.called),
        pct(p.percent.hook),
        p.runs_per_s.map_or_else(|| "-".into(), |r| format!("{r:.0}")),
        p.avg_ns.map_or_else(|| "-".into(), |n| format!("{n:.0}")),
    ))];
    lines.push(Line::from(format!(
        "attach: {}   owner: {}",
        attach_text(p),
        owner_text(p)
    )));
    lines.push(Line::from("sub-programs (samples: last interval / since start):"));
    for sub in &p.subprogs {
        lines.push(Line::from(format!(
            "  {:>6} {:>8}  #{} {}",
            sub.samples, sub.samples_total, sub.index, sub.name
        )));
    }
    lines.push(Line::from("hottest source lines (own samples since start):"));
    for h in &d.lines {
        lines.push(Line::from(format!(
            "  {:>6.2}% {:>6}  {}  {}",
            h.percent, h.samples, h.place, h.text
        )));
    }
    if let Some(n) = &d.note {
        lines.push(Line::from(format!("  {n}")));
    }
    let title = format!(" BPF program {} (Esc: back) ", p.id);
    f.render_widget(
        Paragraph::new(lines).block(pane_block(title, s.pane == Pane::Bpf)),
        area,
    );
}

fn draw_syms(f: &mut Frame<'_>, area: Rect, v: &View, s: &UiState) {
    let sort = s.sym_sort();
    let rows = v.syms.iter().map(|r| {
        Row::new(vec![
            format!("{:.2}%", r.overhead),
            r.samples.to_string(),
            format!("[{}] {}", if r.kernel { 'k' } else { '.' }, r.symbol),
            r.dso.clone(),
        ])
    });
    let widths = [
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Fill(1),
        Constraint::Length(28),
    ];
    let header = Row::new(vec!["Overhead", "Samples", "Symbol", "Shared Object"])
        .style(Style::default().add_modifier(Modifier::UNDERLINED));
    let title = format!(
        " Symbols (decaying by 7/8 each refresh; sort: {}) ",
        sym_sort_name(sort)
    );
    let table = Table::new(rows, widths)
        .header(header)
        .block(pane_block(title, s.pane == Pane::Symbols))
        .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED));
    let mut st = TableState::default();
    if s.pane == Pane::Symbols && !v.syms.is_empty() {
        st.select(Some(s.selected[1].min(v.syms.len() - 1)));
    }
    f.render_stateful_widget(table, area, &mut st);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::bpf_view::{Parts, Shares};
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    fn screen(v: &View, s: &UiState, w: u16, h: u16) -> String {
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| draw(f, v, s)).unwrap();
        let buf = t.backend().buffer().clone();
        let mut out = String::new();
        for y in 0..h {
            for x in 0..w {
                out.push_str(buf[(x, y)].symbol());
            }
            out.push('\n');
        }
        out
    }

    fn view() -> View {
        View {
            status: "bpfprof top".into(),
            progs: vec![ProgLine {
                id: 77,
                name: "sys_enter_getpp".into(),
                tag: "ab".into(),
                prog_type: "tracepoint".into(),
                samples: Parts {
                    own: 4,
                    called: Some(27),
                    hook: Some(40),
                    total: Some(71),
                },
                percent: Shares {
                    own: 4.0,
                    called: Some(27.0),
                    hook: Some(40.0),
                    total: Some(71.0),
                },
                subprogs: vec![],
                owners: vec![],
                attach: vec![],
                run_cnt: None,
                run_time_ns: None,
                run_cnt_total: None,
                runs_per_s: None,
                avg_ns: None,
                loaded_s: Some(130.0),
                unloaded: true,
            }],
            syms: vec![SymLine {
                kernel: true,
                symbol: "do_syscall_64".into(),
                dso: "[kernel.kallsyms]".into(),
                overhead: 12.5,
                samples: 3,
            }],
            detail: None,
        }
    }

    #[test]
    fn panes_show_programs_and_symbols() {
        let text = screen(&view(), &UiState::default(), 160, 20);
        assert!(text.contains("sys_enter_getpp [unloaded]"), "{text}");
        assert!(text.contains("71.00%"), "{text}");
        assert!(text.contains("2m"), "{text}");
        assert!(text.contains("[k] do_syscall_64"), "{text}");
        assert!(text.contains("sort: total"), "{text}");
    }

    #[test]
    fn a_narrow_terminal_still_draws() {
        let text = screen(&view(), &UiState::default(), 40, 8);
        assert!(text.contains("bpfprof top"), "{text}");
    }

    #[test]
    fn ages_pick_their_unit() {
        assert_eq!(age(5.0), "5s");
        assert_eq!(age(600.0), "10m");
        assert_eq!(age(3.0 * 86_400.0), "3d");
    }
}
