//! Drawing pieces both interfaces use: columns fitted to a width, pane
//! frames, and the BPF programs pane (one line per program with its cost
//! in parts), so that `top` and `report` show programs the same way.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table, TableState};
use ratatui::Frame;

use crate::top::json::{attach_text, owner_text};
use crate::top::keys::BpfSort;
use crate::top::window::ProgLine;

/// The narrowest the flexible column (a name) gets before others go.
pub const NAME_MIN: u16 = 15;

/// Widths of the columns that fit in `width` (one blank between columns):
/// by priority, lowest number first, each kept while the rest still fit;
/// column `flex` gets what is left. Exact lengths only: constraints that
/// cannot all hold send ratatui's solver into a loop.
pub fn fit(width: u16, cols: &[(u16, u8)], flex: usize) -> Vec<Option<u16>> {
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

/// The kept widths as ratatui constraints.
pub fn lengths(widths: &[Option<u16>]) -> Vec<Constraint> {
    widths
        .iter()
        .flatten()
        .map(|&w| Constraint::Length(w))
        .collect()
}

pub fn pct(v: Option<f64>) -> String {
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

/// The screen's status line, body and key line; `None` (with a word on
/// the screen) when it is smaller than `min_height` lines or 20 columns.
pub fn screen_parts(f: &mut Frame<'_>, who: &str, min_height: u16) -> Option<[Rect; 3]> {
    let area = f.area();
    if area.height < min_height.max(3) || area.width < 20 {
        let text = format!("{who}: window too small (q quits)");
        f.render_widget(Paragraph::new(text), area);
        return None;
    }
    // Exact heights, for the reason `fit` gives.
    Some(
        Layout::vertical([
            Constraint::Length(1),
            Constraint::Length(area.height - 2),
            Constraint::Length(1),
        ])
        .areas(area),
    )
}

pub fn pane_block(title: String, focused: bool) -> Block<'static> {
    let style = match focused {
        true => Style::default().add_modifier(Modifier::BOLD),
        false => Style::default().add_modifier(Modifier::DIM),
    };
    Block::default()
        .borders(Borders::TOP)
        .title(title)
        .border_style(style)
}

/// The selection highlight of a focused pane.
pub fn highlight() -> Style {
    Style::default().add_modifier(Modifier::REVERSED)
}

/// The BPF pane's one-line summary of a program: its parts, run stats,
/// attachment and owner.
pub fn prog_heading(p: &ProgLine) -> [String; 2] {
    [
        format!(
            "{} (id {}, {}, tag {}): total {}  self {:.2}%  called {}  hook {}  runs/s {}  avg ns {}",
            p.head.name,
            p.head.id,
            p.head.prog_type,
            p.head.tag,
            pct(p.head.percent.total),
            p.head.percent.own,
            pct(p.head.percent.called),
            pct(p.head.percent.hook),
            p.runs_per_s
                .map_or_else(|| "-".into(), |r| format!("{r:.0}")),
            p.avg_ns.map_or_else(|| "-".into(), |n| format!("{n:.0}")),
        ),
        format!("attach: {}   owner: {}", attach_text(p), owner_text(p)),
    ]
}

/// The BPF programs pane: what it shows and how.
pub struct ProgPane<'a> {
    pub progs: &'a [ProgLine],
    pub sort: BpfSort,
    pub title: String,
    /// The selected line, when the pane has the focus.
    pub selected: Option<usize>,
}

/// One line per program: (header, sort column, width, priority), what a
/// narrow terminal drops first having the highest priority number; the
/// name takes what is left.
pub fn draw_progs(f: &mut Frame<'_>, area: Rect, pane: ProgPane<'_>) {
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
            .map(|(c, _)| match c.1 == Some(pane.sort) {
                true => Cell::from(format!("{}▼", c.0)),
                false => Cell::from(c.0),
            }),
    )
    .style(Style::default().add_modifier(Modifier::UNDERLINED));
    let rows = pane.progs.iter().map(|p| {
        let name = match p.unloaded {
            true => format!("{} [unloaded]", p.head.name),
            false => p.head.name.clone(),
        };
        let cells = [
            pct(p.head.percent.total),
            format!("{:.2}%", p.head.percent.own),
            pct(p.head.percent.called),
            pct(p.head.percent.hook),
            p.runs_per_s
                .map_or_else(|| "-".into(), |r| format!("{r:.0}")),
            p.avg_ns.map_or_else(|| "-".into(), |n| format!("{n:.0}")),
            p.head.id.to_string(),
            p.head.prog_type.clone(),
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
    let table = Table::new(rows, lengths(&widths))
        .header(header)
        .block(pane_block(pane.title, pane.selected.is_some()))
        .row_highlight_style(highlight());
    let mut st = TableState::default();
    if !pane.progs.is_empty() {
        st.select(pane.selected.map(|s| s.min(pane.progs.len() - 1)));
    }
    f.render_stateful_widget(table, area, &mut st);
}

/// A screen as text, for tests that draw without a terminal.
#[cfg(test)]
pub fn screen(w: u16, h: u16, draw: impl FnOnce(&mut Frame<'_>)) -> String {
    let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h)).unwrap();
    t.draw(draw).unwrap();
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn ages_pick_their_unit() {
        assert_eq!(age(5.0), "5s");
        assert_eq!(age(600.0), "10m");
        assert_eq!(age(3.0 * 86_400.0), "3d");
    }
}
