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

/// The narrowest the flexible column (a name) gets before others go.
const NAME_MIN: u16 = 15;

/// Widths of the columns that fit in `width` (one blank between columns):
/// by priority, lowest number first, each kept while the rest still fit;
/// column `flex` gets what is left. Exact lengths only: constraints that
/// cannot all hold send ratatui's solver into a loop.
fn fit(width: u16, cols: &[(u16, u8)], flex: usize) -> Vec<Option<u16>> {
    let mut order: Vec<usize> = (0..cols.len()).collect();
    order.sort_by_key(|&i| (cols[i].1, i));
    let mut kept = vec![false; cols.len()];
    let mut used: u32 = 0;
    for i in order {
        let add = cols[i].0 as u32 + if used == 0 { 0 } else { 1 };
        if used + add <= width as u32 {
            used += add;
            kept[i] = true;
        }
    }
    let spare = width as u32 - used;
    (0..cols.len())
        .map(|i| match (kept[i], i == flex) {
            (false, _) => None,
            (true, false) => Some(cols[i].0),
            (true, true) => Some((cols[i].0 as u32 + spare).min(u16::MAX as u32) as u16),
        })
        .collect()
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
    let area = f.area();
    if area.height < 8 || area.width < 20 {
        f.render_widget(
            Paragraph::new("bpfprof top: window too small (q quits)"),
            area,
        );
        return;
    }
    // Exact heights, for the reason `fit` gives.
    let panes = area.height - 2;
    let [status, bpf, syms, keys] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(panes / 2),
        Constraint::Length(panes - panes / 2),
        Constraint::Length(1),
    ])
    .areas(area);
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
            format!("q quit  Tab pane  </> sort  / filter  Enter open  Esc back  s stats{filter}")
        }
    };
    f.render_widget(Paragraph::new(help), keys);
}

fn draw_bpf(f: &mut Frame<'_>, area: Rect, v: &View, s: &UiState) {
    let sort = s.bpf_sort();
    // (header, sort column, width, priority): what a narrow terminal drops
    // first has the highest priority number. Name takes what is left.
    let cols: [(&'static str, Option<BpfSort>, u16, u8); 12] = [
        ("Total", Some(BpfSort::Total), 8, 0),
        ("Self", Some(BpfSort::Own), 7, 1),
        ("Called", Some(BpfSort::Called), 7, 3),
        ("Hook", Some(BpfSort::Hook), 7, 3),
        ("Runs/s", Some(BpfSort::RunsPerSec), 8, 5),
        ("Avg ns", Some(BpfSort::AvgNs), 7, 5),
        ("ID", Some(BpfSort::Id), 6, 2),
        ("Type", None, 11, 6),
        ("Name", Some(BpfSort::Name), NAME_MIN, 0),
        ("Attach", None, 26, 4),
        ("Owner", None, 16, 4),
        ("Loaded", Some(BpfSort::Loaded), 7, 7),
    ];
    let widths = fit(area.width, &cols.map(|c| (c.2, c.3)), 8);
    let header = Row::new(
        cols.iter()
            .zip(&widths)
            .filter(|(_, w)| w.is_some())
            .map(|(c, _)| match c.1 == Some(sort) {
                true => Cell::from(format!("{}▼", c.0)),
                false => Cell::from(c.0),
            }),
    )
    .style(Style::default().add_modifier(Modifier::UNDERLINED));
    let rows = v.progs.iter().map(|p| {
        let name = match p.unloaded {
            true => format!("{} [unloaded]", p.name),
            false => p.name.clone(),
        };
        let cells = [
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
        ];
        let row = Row::new(
            cells
                .into_iter()
                .zip(&widths)
                .filter(|(_, w)| w.is_some())
                .map(|(c, _)| c),
        );
        match p.unloaded {
            true => row.style(Style::default().add_modifier(Modifier::DIM)),
            false => row,
        }
    });
    let widths: Vec<Constraint> = widths
        .iter()
        .flatten()
        .map(|&w| Constraint::Length(w))
        .collect();
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
        p.runs_per_s
            .map_or_else(|| "-".into(), |r| format!("{r:.0}")),
        p.avg_ns.map_or_else(|| "-".into(), |n| format!("{n:.0}")),
    ))];
    lines.push(Line::from(format!(
        "attach: {}   owner: {}",
        attach_text(p),
        owner_text(p)
    )));
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
        "hottest source lines (own samples since start):",
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
    let title = format!(" BPF program {} (Esc: back) ", p.id);
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
    let widths: Vec<Constraint> = widths
        .iter()
        .flatten()
        .map(|&w| Constraint::Length(w))
        .collect();
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
        for (w, h) in [(40, 8), (19, 30), (100, 3), (1, 1)] {
            let text = screen(&view(), &UiState::default(), w, h);
            assert!(text.starts_with('b'), "{w}x{h}: {text}");
        }
    }

    #[test]
    fn columns_fit_any_width() {
        for w in [0u16, 10, 40, 100, 160, 300] {
            let cols = [(8, 0), (7, 1), (NAME_MIN, 0), (26, 4)];
            let got = fit(w, &cols, 2);
            let kept: Vec<u16> = got.iter().flatten().copied().collect();
            let total: u32 =
                kept.iter().map(|&x| x as u32).sum::<u32>() + kept.len().saturating_sub(1) as u32;
            assert!(total <= w as u32, "{w}: {got:?}");
            if w >= 8 + 1 + NAME_MIN + 1 + 7 {
                assert!(
                    got[0].is_some() && got[1].is_some() && got[2].is_some(),
                    "{w}: {got:?}"
                );
            }
        }
        // Wide: everything, the name taking the rest.
        assert_eq!(
            fit(100, &[(8, 0), (15, 0), (20, 3)], 1),
            [Some(8), Some(70), Some(20)]
        );
    }

    #[test]
    fn a_narrow_window_keeps_the_name() {
        let text = screen(&view(), &UiState::default(), 100, 20);
        assert!(text.contains("sys_enter_getpp"), "{text}");
    }

    #[test]
    fn ages_pick_their_unit() {
        assert_eq!(age(5.0), "5s");
        assert_eq!(age(600.0), "10m");
        assert_eq!(age(3.0 * 86_400.0), "3d");
    }
}
