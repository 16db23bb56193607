//! Drawing one refresh: the status line, the BPF pane (or one program's
//! sub-programs and hottest source lines), the symbols pane, the keys.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Row, Table, TableState};
use ratatui::Frame;

use super::keys::{BpfSort, Pane, SymSort, UiState};
use super::window::{ProgLine, SymLine};
use crate::tui::widgets::{self, fit, highlight, lengths, pane_block, NAME_MIN};

/// One of a program's source lines, with its samples over the last interval.
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

pub fn draw(f: &mut Frame<'_>, v: &View, s: &UiState) {
    let Some([status, panes, keys]) = widgets::screen_parts(f, "bpfprof top", 8) else {
        return;
    };
    let [bpf, syms] = Layout::vertical([
        Constraint::Length(panes.height / 2),
        Constraint::Length(panes.height - panes.height / 2),
    ])
    .areas(panes);
    f.render_widget(Paragraph::new(v.status.as_str()), status);
    match &v.detail {
        Some(d) => draw_detail(f, bpf, d, s),
        None => draw_bpf(f, bpf, v, s),
    }
    draw_syms(f, syms, v, s);
    let help = s.filter.help_line(
        "name or command",
        "q quit  Tab pane  </> sort  / filter  Enter open  Esc back  s stats",
    );
    f.render_widget(Paragraph::new(help), keys);
}

fn draw_bpf(f: &mut Frame<'_>, area: Rect, v: &View, s: &UiState) {
    let sort = s.bpf_sort();
    let title = format!(
        " BPF programs ({}; last interval; sort: {}) ",
        v.progs.len(),
        bpf_sort_name(sort)
    );
    let pane = widgets::ProgPane {
        progs: &v.progs,
        sort,
        title,
        selected: (s.pane == Pane::Bpf).then_some(s.selected[0]),
    };
    widgets::draw_progs(f, area, pane);
}

fn draw_detail(f: &mut Frame<'_>, area: Rect, d: &Detail, s: &UiState) {
    let p = &d.prog;
    let mut lines: Vec<Line<'_>> = widgets::prog_heading(p).map(Line::from).into();
    lines.push(Line::from(
        "sub-programs (samples: last interval / since start):",
    ));
    for sub in &p.subprogs {
        lines.push(Line::from(format!(
            "  {:>6} {:>8}  #{} {}",
            sub.samples, sub.samples_total, sub.index, sub.name
        )));
    }
    lines.push(Line::from(
        "hottest source lines (own samples, last interval):",
    ));
    for h in &d.lines {
        lines.push(Line::from(format!(
            "  {:>6.2}% {:>6}  {}  {}",
            h.percent, h.samples, h.place, h.text
        )));
    }
    if let Some(n) = &d.note {
        lines.push(Line::from(format!("  {n}")));
    }
    let title = format!(" BPF program {} (Esc: back) ", p.head.id);
    f.render_widget(
        Paragraph::new(lines).block(pane_block(title, s.pane == Pane::Bpf)),
        area,
    );
}

fn draw_syms(f: &mut Frame<'_>, area: Rect, v: &View, s: &UiState) {
    let sort = s.sym_sort();
    let widths = fit(area.width, &[(8, 0), (8, 2), (NAME_MIN, 0), (28, 1)], 2);
    let keep = |i: usize| widths[i].is_some();
    let rows = v.syms.iter().map(|r| {
        let cells = [
            format!("{:.2}%", r.overhead),
            r.samples.to_string(),
            format!("[{}] {}", if r.kernel { 'k' } else { '.' }, r.symbol),
            r.dso.clone(),
        ];
        Row::new(
            cells
                .into_iter()
                .enumerate()
                .filter(|(i, _)| keep(*i))
                .map(|(_, c)| c),
        )
    });
    let header = Row::new(
        ["Overhead", "Samples", "Symbol", "Shared Object"]
            .into_iter()
            .enumerate()
            .filter(|(i, _)| keep(*i))
            .map(|(_, c)| c),
    )
    .style(Style::default().add_modifier(Modifier::UNDERLINED));
    let widths = lengths(&widths);
    let title = format!(
        " Symbols (decaying by 7/8 each refresh; sort: {}) ",
        sym_sort_name(sort)
    );
    let table = Table::new(rows, widths)
        .header(header)
        .block(pane_block(title, s.pane == Pane::Symbols))
        .row_highlight_style(highlight());
    let mut st = TableState::default();
    if s.pane == Pane::Symbols && !v.syms.is_empty() {
        st.select(Some(s.selected[1].min(v.syms.len() - 1)));
    }
    f.render_stateful_widget(table, area, &mut st);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::bpf_view::Parts;

    fn screen(v: &View, s: &UiState, w: u16, h: u16) -> String {
        widgets::screen(w, h, |f| draw(f, v, s))
    }

    fn view() -> View {
        View {
            status: "bpfprof top".into(),
            progs: vec![{
                let mut l = super::super::window::example(
                    77,
                    "sys_enter_getpp",
                    Parts {
                        own: 4,
                        called: Some(27),
                        hook: Some(40),
                        total: Some(71),
                    },
                );
                l.head.tag = "ab".into();
                l.head.prog_type = "tracepoint".into();
                l.loaded_s = Some(130.0);
                l.unloaded = true;
                l
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
        for (w, h) in [(40, 8), (19, 30), (100, 3), (1, 1)] {
            let text = screen(&view(), &UiState::default(), w, h);
            assert!(text.starts_with('b'), "{w}x{h}: {text}");
        }
    }

    #[test]
    fn a_narrow_window_keeps_the_name() {
        let text = screen(&view(), &UiState::default(), 100, 20);
        assert!(text.contains("sys_enter_getpp"), "{text}");
    }
}
