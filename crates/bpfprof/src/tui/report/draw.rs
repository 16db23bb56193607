//! Drawing report's interface: the title, the BPF pane (top's), the rows
//! pane with open call graphs, or one program's annotation; the keys.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{List, ListItem, Paragraph};
use ratatui::Frame;

use super::{App, Focus};
use crate::top::keys::BpfSort;
use crate::tui::widgets::{self, highlight, pane_block, ProgPane};

const HELP: &str =
    "q/Esc quit  Enter open/close  Tab pane  / filter  \u{2191}\u{2193} PgUp PgDn move";

pub fn draw(f: &mut Frame<'_>, app: &mut App<'_>) {
    let Some([title, body, keys]) = widgets::screen_parts(f, "bpfprof report", 6) else {
        return;
    };
    let body_h = body.height;
    f.render_widget(Paragraph::new(app.title.as_str()), title);
    let help = match &app.annotated {
        Some(_) => "q/Esc back  \u{2191}\u{2193} PgUp PgDn scroll".to_string(),
        None => app
            .filter
            .help_line("rows' text, programs' names or owners", HELP),
    };
    f.render_widget(Paragraph::new(help), keys);
    if app.annotated.is_some() {
        return draw_annotated(f, body, app);
    }
    let shown = app.shown_progs().len();
    let bpf_h = match app.progs.is_empty() {
        true => 0,
        // A header and a frame line, and at most a third of the screen.
        false => ((shown as u16) + 2).clamp(3, (body_h / 3).max(3)),
    };
    let [bpf, rows] = Layout::vertical([
        Constraint::Length(bpf_h),
        Constraint::Length(body_h - bpf_h),
    ])
    .areas(body);
    if bpf_h > 0 {
        draw_bpf(f, bpf, app, shown);
    }
    draw_rows(f, rows, app);
}

fn draw_bpf(f: &mut Frame<'_>, area: Rect, app: &App<'_>, shown: usize) {
    let progs: Vec<_> = app.shown_progs().into_iter().map(|p| p.0.clone()).collect();
    let title = format!(
        " BPF programs ({shown} of {}; over the recording; Enter: annotate) ",
        app.progs.len()
    );
    let pane = ProgPane {
        progs: &progs,
        sort: BpfSort::Total,
        title,
        selected: (app.focus == Focus::Bpf).then_some(app.prog_sel),
    };
    widgets::draw_progs(f, area, pane);
}

fn draw_rows(f: &mut Frame<'_>, area: Rect, app: &mut App<'_>) {
    let items = app.items();
    let lines: Vec<ListItem<'_>> = items
        .iter()
        .map(|it| {
            let row = &app.table.rows[it.row];
            match it.graph {
                Some(n) => ListItem::new(app.open[&it.row][n].as_str()),
                None => {
                    let mark = match (app.open.contains_key(&it.row), row.has_graph) {
                        (true, _) => '-',
                        (false, true) => '+',
                        (false, false) => ' ',
                    };
                    ListItem::new(format!("{mark}{}", row.text))
                }
            }
        })
        .collect();
    let title = format!(
        " Rows ({} of {}{}) ",
        items.iter().filter(|i| i.graph.is_none()).count(),
        app.table.rows.len(),
        match app.graphs.is_some() {
            true => "; +: Enter shows the call graph",
            false => "; no call graphs: record with -g",
        }
    );
    let block = pane_block(title, app.focus == Focus::Rows);
    let inner = block.inner(area);
    f.render_widget(block, area);
    if inner.height == 0 {
        return;
    }
    let [head, list_at] =
        Layout::vertical([Constraint::Length(1), Constraint::Length(inner.height - 1)])
            .areas(inner);
    f.render_widget(
        Paragraph::new(format!(" {}", app.table.header))
            .style(Style::default().add_modifier(Modifier::UNDERLINED)),
        head,
    );
    let list = List::new(lines).highlight_style(match app.focus {
        Focus::Rows => highlight(),
        Focus::Bpf => Style::default(),
    });
    if items.is_empty() {
        app.rows_state.select(None);
    } else if app.rows_state.selected().is_none() {
        app.rows_state.select(Some(0));
    }
    f.render_stateful_widget(list, list_at, &mut app.rows_state);
}

fn draw_annotated(f: &mut Frame<'_>, area: Rect, app: &App<'_>) {
    let Some(a) = &app.annotated else {
        return;
    };
    let lines: Vec<Line<'_>> = a.lines.iter().map(|l| Line::from(l.as_str())).collect();
    let title = format!(" BPF program {} annotated (q/Esc: back) ", a.id);
    f.render_widget(
        Paragraph::new(lines)
            .block(pane_block(title, true))
            .scroll((a.scroll.min(u16::MAX as usize) as u16, 0)),
        area,
    );
}
