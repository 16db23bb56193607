//! Printing a report: perf-style stdio tables (with call graphs) and JSON.

use std::io::Write;

use rustc_hash::FxHashMap;

use serde::Serialize;

use super::bpf_render;
use super::bpf_view::{self, BpfSummary};
use super::callgraph::{self, CallOrder};
use super::fields::{self, Column, Count};
use super::table::{self, bpf_prog_of, Filters, Row, SortKey};
use crate::analyze::profile::{Counts, Profile};

/// What `bpfprof report` prints.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    pub keys: Vec<SortKey>,
    pub filters: Filters,
    pub children: bool,
    /// Print call graphs under each row (`-g`).
    pub callgraph: Option<CallOrder>,
    /// Hide rows below this percentage.
    pub percent_limit: f64,
    /// Only the BPF view.
    pub bpf_only: bool,
    /// The short BPF section at the top of the default report.
    pub bpf_summary: bool,
    /// Break each program's parts down by whose work ran it (`--by`).
    pub bpf_by: Option<crate::analyze::bpf_cost::By>,
    /// The table's columns in order (`-F`); `None`: the default ones.
    pub columns: Option<Vec<Column>>,
    /// What `-F` and `--sort` order rows by; `None`: heaviest first.
    pub row_order: Option<Vec<Column>>,
}

impl ReportOptions {
    /// The table's columns in order.
    pub fn columns(&self) -> Vec<Column> {
        match &self.columns {
            Some(c) => c.clone(),
            None => fields::default_columns(self.keys.len(), self.children),
        }
    }
}

/// The `# Samples:` count as perf prints it: perf's `convert_unit`
/// (tools/perf/util/units.c) divides by 1000 while the value is above
/// 1000 and appends K, M or G, or a space when there is no unit, so 999
/// prints `999 `, 1000 `1000 ` and 5669 `5K`.
fn fmt_count(n: u64) -> String {
    let mut v = n;
    let mut unit = ' ';
    for u in ['K', 'M', 'G'] {
        if v > 1000 {
            v /= 1000;
            unit = u;
        }
    }
    format!("{v}{unit}")
}

/// The width to cut table lines to: the terminal's when standard output
/// is one, as perf decides it (tools/perf/util/term.c
/// `get_term_dimensions`: `COLUMNS`, else the window size, else 80);
/// None into a file or a pipe, which get every name whole.
pub fn terminal_width() -> Option<usize> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return None;
    }
    if let Some(c) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c > 0)
    {
        return Some(c);
    }
    Some(crate::capture::sys::stdout_columns().map_or(80, usize::from))
}

/// `1 record`, `2 records`.
fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `s` in at most `n` characters; a cut one ends in `…`, so a name that
/// is cut is never mistaken for a whole one.
pub(super) fn cut(s: &str, n: usize) -> std::borrow::Cow<'_, str> {
    if s.chars().count() <= n {
        return s.into();
    }
    let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
    if n > 0 {
        t.push('…');
    }
    t.into()
}

/// The text report; on a terminal, lines are cut to its width.
pub fn stdio(p: &Profile, o: &ReportOptions, out: &mut dyn Write) -> std::io::Result<()> {
    stdio_width(p, o, terminal_width(), out)
}

/// The text report with table lines cut to `width` characters (None:
/// never cut).
pub fn stdio_width(
    p: &Profile,
    o: &ReportOptions,
    width: Option<usize>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    for w in &p.warnings {
        writeln!(out, "# warning: {w}")?;
    }
    if p.total.samples == 0 {
        writeln!(
            out,
            "# The profile has no samples of '{}': nothing to report.",
            p.event
        )?;
        return Ok(());
    }
    writeln!(
        out,
        "# Samples: {} of event '{}'",
        fmt_count(p.total.samples),
        p.event
    )?;
    writeln!(out, "# Event count (approx.): {}", p.total.period)?;
    if p.lost + p.lost_samples > 0 {
        writeln!(
            out,
            "# Lost: {}, {}",
            plural(p.lost, "record", "records"),
            plural(p.lost_samples, "sample", "samples")
        )?;
    }
    for (name, n) in &p.other_events {
        writeln!(
            out,
            "# ({} of '{name}' not shown)",
            plural(*n, "sample", "samples")
        )?;
    }
    let summary = bpf_view::summarize_by(p, &o.filters, o.bpf_by);
    if o.bpf_only || o.bpf_summary {
        match &summary {
            Some(s) => bpf_render::table(s, (!o.bpf_only).then_some(5), out)?,
            None => writeln!(
                out,
                "#\n# No BPF program ran during the recording (try `bpfprof record --demo`)."
            )?,
        }
    }
    if o.bpf_only {
        return Ok(());
    }
    writeln!(out, "#")?;
    if o.keys.contains(&SortKey::Srcline) {
        return super::srcline::stdio(p, o, width, out);
    }
    let mut rows = table::group(p, &o.keys, &o.filters, o.children);
    if let Some(order) = &o.row_order {
        fields::order_rows(p, &o.keys, order, &mut rows);
    }
    main_table(p, o, &rows, width, out)
}

/// Column widths that fit `width` characters after the counts (`counts`
/// characters of them): when the line would not fit, the widest columns
/// are narrowed first, to one cap (never below a column's header), so
/// short columns stay whole. Returns the room for the last key's text
/// when it ends the line (None: no width, never cut).
fn fit_widths(
    keys: &[SortKey],
    widths: &mut [usize],
    counts: usize,
    width: Option<usize>,
) -> Option<usize> {
    let width = width?;
    let avail = width.saturating_sub(counts);
    let capped = |cap: usize, w: usize, k: &SortKey| w.min(cap.max(k.header().len()));
    let need = |cap: usize| -> usize {
        widths
            .iter()
            .zip(keys)
            .map(|(&w, k)| capped(cap, w, k) + 2)
            .sum()
    };
    let widest = widths.iter().copied().max().unwrap_or(0);
    if need(widest) > avail {
        // The largest cap that fits (need grows with the cap).
        let (mut lo, mut hi) = (0, widest);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if need(mid) <= avail {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        for (w, k) in widths.iter_mut().zip(keys) {
            *w = capped(lo, *w, k);
        }
    }
    let n = widths.len();
    let before: usize = widths[..n.saturating_sub(1)].iter().map(|w| w + 2).sum();
    Some(avail.saturating_sub(before + 2))
}

/// The characters the count columns take, separators included.
fn counts_width(cols: &[Column]) -> usize {
    cols.iter()
        .map(|c| match c {
            Column::Count { width, .. } => width + 2,
            Column::Key(_) => 0,
        })
        .sum()
}

/// The key that ends the line, if a key does.
fn last_key(cols: &[Column]) -> Option<usize> {
    match cols.last() {
        Some(Column::Key(i)) => Some(*i),
        _ => None,
    }
}

fn main_table(
    p: &Profile,
    o: &ReportOptions,
    rows: &[Row],
    width: Option<usize>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let visible: Vec<&Row> = rows
        .iter()
        .filter(|r| p.percent(&r.children.unwrap_or(r.counts)) >= o.percent_limit)
        .collect();
    let parts = crate::parallel::map_parts(&visible, MIN_ROWS_PER_CORE, |rows| {
        Cells::of(p, &o.keys, rows)
    });
    let mut widths: Vec<usize> = o.keys.iter().map(|k| k.header().len()).collect();
    for part in &parts {
        part.widen(&mut widths);
    }
    let cols = o.columns();
    let last_room = fit_widths(&o.keys, &mut widths, counts_width(&cols), width);
    let layout = Layout {
        keys: &o.keys,
        cols: &cols,
        widths: &widths,
        last_room,
        last_key: last_key(&cols),
    };
    let (head, dots) = layout.header();
    match width {
        Some(w) => writeln!(out, "{}\n{}\n#", cut(head.trim_end(), w), cut(&dots, w))?,
        None => writeln!(out, "{}\n{}\n#", head.trim_end(), dots)?,
    }
    // Only rows at or above the graph's threshold can print a branch; the
    // others print the empty line that ends a graph (every sample has a
    // stack, so a row with samples has one).
    let graph_min = o.percent_limit.max(GRAPH_MIN_PERCENT);
    let stacks = o.callgraph.map(|_| graph_stacks(p, o, &visible, graph_min));
    let (Some(order), Some(stacks)) = (o.callgraph, stacks) else {
        // Without graphs, lines are made on every core.
        // Sized up front: grown by doubling, the text of a big profile was
        // copied over and over.
        let line_len = layout.line_len();
        let text = crate::parallel::map_parts(&parts, 1, |parts| {
            let rows: usize = parts.iter().map(|p| p.rows.len()).sum();
            let mut text = String::with_capacity(rows * line_len);
            for part in parts {
                for i in 0..part.rows.len() {
                    part.push_line(p, i, &layout, &mut text);
                }
            }
            text
        });
        for t in text {
            out.write_all(t.as_bytes())?;
        }
        return Ok(());
    };
    // Each graph is made from its own row's stacks, and making them was
    // most of the printing: on every core, the biggest first.
    let mut jobs: Vec<_> = stacks.iter().collect();
    jobs.sort_unstable_by_key(|(_, s)| std::cmp::Reverse(s.len()));
    let graphs: FxHashMap<_, Vec<u8>> = crate::parallel::map_each(&jobs, |&(g, s)| {
        let mut text = Vec::new();
        // Writing to a Vec cannot fail.
        let _ = callgraph::print(p, s, order, graph_min, &mut text);
        (*g, text)
    })
    .into_iter()
    .collect();
    let mut line = String::new();
    for part in &parts {
        for (i, r) in part.rows.iter().enumerate() {
            line.clear();
            part.push_line(p, i, &layout, &mut line);
            out.write_all(line.as_bytes())?;
            match graphs.get(&table::group_key(&o.keys, p, &r.key)) {
                Some(text) => out.write_all(text)?,
                None if r.counts.samples > 0 => writeln!(out)?,
                None => {}
            }
        }
    }
    Ok(())
}

/// perf's default threshold for a call-graph branch (`-g graph,0.5`).
const GRAPH_MIN_PERCENT: f64 = 0.5;

/// The stacks of the rows that can show a graph: rows at or above the
/// graph's threshold (the others could print no branch).
fn graph_stacks(
    p: &Profile,
    o: &ReportOptions,
    visible: &[&Row],
    graph_min: f64,
) -> FxHashMap<table::GroupKey, Vec<(u32, Counts)>> {
    let wanted = visible
        .iter()
        .filter(|r| r.counts.samples > 0 && p.percent(&r.counts) >= graph_min)
        .map(|r| table::group_key(&o.keys, p, &r.key))
        .collect();
    callgraph::index(p, &o.keys, &o.filters, &wanted)
}

/// Fewer rows than this are printed on one core.
const MIN_ROWS_PER_CORE: usize = 4096;

/// The text of some rows' cells, in one buffer: a big profile has tens of
/// thousands of rows, and a String per cell was a good part of the
/// printing time.
struct Cells<'a> {
    rows: &'a [&'a Row],
    keys: &'a [SortKey],
    text: String,
    /// Each cell's place in `text`, row by row.
    spans: Vec<(usize, usize)>,
}

impl<'a> Cells<'a> {
    fn of(p: &Profile, keys: &'a [SortKey], rows: &'a [&'a Row]) -> Cells<'a> {
        let mut text = String::new();
        let mut spans = Vec::with_capacity(rows.len() * keys.len());
        for r in rows {
            for &k in keys {
                let start = text.len();
                table::push_column(p, k, &r.key, &mut text);
                spans.push((start, text.len()));
            }
        }
        Cells {
            rows,
            keys,
            text,
            spans,
        }
    }

    fn cell(&self, i: usize) -> &str {
        &self.text[self.spans[i].0..self.spans[i].1]
    }

    /// Make `widths` (one per key) wide enough for these cells.
    fn widen(&self, widths: &mut [usize]) {
        for i in 0..self.spans.len() {
            let w = &mut widths[i % self.keys.len()];
            *w = (*w).max(self.cell(i).chars().count());
        }
    }

    /// Row `n`'s line; the last column is not padded. Cells wider than
    /// their column are cut, and the last to its room, when the line must
    /// fit a terminal (`last_room` set).
    fn push_line(&self, p: &Profile, n: usize, l: &Layout, line: &mut String) {
        use std::fmt::Write as _;
        let r = self.rows[n];
        let end = l.cols.len().saturating_sub(1);
        for (ci, col) in l.cols.iter().enumerate() {
            line.push_str("  ");
            match *col {
                Column::Count { count, width, .. } => {
                    let _ = match count {
                        Count::Children => {
                            let c = r.children.unwrap_or(r.counts);
                            write!(line, "{:>w$.2}%", p.percent(&c), w = width - 1)
                        }
                        Count::Overhead => {
                            write!(line, "{:>w$.2}%", p.percent(&r.counts), w = width - 1)
                        }
                        Count::Samples => write!(line, "{:>width$}", r.counts.samples),
                        Count::Period => write!(line, "{:>width$}", r.counts.period),
                    };
                }
                Column::Key(i) => {
                    let w = l.widths[i];
                    let whole = self.cell(n * self.keys.len() + i);
                    let c = match l.last_room {
                        Some(room) => cut(whole, if l.last_key == Some(i) { room } else { w }),
                        None => whole.into(),
                    };
                    line.push_str(&c);
                    if ci != end {
                        let pad = w.saturating_sub(c.chars().count());
                        line.extend(std::iter::repeat_n(' ', pad));
                    }
                }
            }
        }
        line.push('\n');
    }
}

/// How the table's lines are laid out.
struct Layout<'a> {
    keys: &'a [SortKey],
    cols: &'a [Column],
    /// Width of each key's column.
    widths: &'a [usize],
    /// Room for the last key's text, when lines must fit a terminal.
    last_room: Option<usize>,
    /// The key that ends the line, if one does.
    last_key: Option<usize>,
}

impl Layout<'_> {
    /// The header line and the line of dots under it. The column that
    /// ends the line is as wide as its header there.
    fn header(&self) -> (String, String) {
        let (mut head, mut dots) = (String::from("#"), String::from("#"));
        let end = self.cols.len().saturating_sub(1);
        for (ci, col) in self.cols.iter().enumerate() {
            let sep = if ci == 0 { " " } else { "  " };
            head.push_str(sep);
            dots.push_str(sep);
            match *col {
                Column::Count { width, header, .. } => {
                    head += &format!("{header:>width$}");
                    dots += &".".repeat(width);
                }
                Column::Key(i) => {
                    let h = self.keys_header(i);
                    let w = if ci == end { h.len() } else { self.widths[i] };
                    head += &format!("{h:<w$}");
                    dots += &".".repeat(w);
                }
            }
        }
        (head, dots)
    }

    fn keys_header(&self, i: usize) -> &'static str {
        self.keys[i].header()
    }

    /// The longest line [`Cells::push_line`] makes: each column after two
    /// spaces, keys as wide as their widest cell, then the newline.
    fn line_len(&self) -> usize {
        counts_width(self.cols) + self.widths.iter().map(|w| w + 2).sum::<usize>() + 1
    }
}

#[derive(Serialize)]
struct JsonRow {
    overhead: f64,
    children: Option<f64>,
    samples: u64,
    period: u64,
    comm: Option<String>,
    /// With `--sort pid`: the thread id, which is what perf's pid key is.
    pid: Option<u32>,
    /// With `--sort tid`: the thread id.
    #[serde(skip_serializing_if = "Option::is_none")]
    tid: Option<u32>,
    /// With `--sort cpu`: the CPU, -1 when the recording has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    cpu: Option<i32>,
    dso: Option<String>,
    symbol: Option<String>,
    /// True when all the row's samples are in kernel code, false when
    /// none are, null when it holds both (e.g. the `-` row of
    /// `--sort bpf_prog`); `kernel_samples` says how many.
    kernel: Option<bool>,
    /// Of `samples`, those in kernel code (the kernel, modules, BPF).
    kernel_samples: u64,
    /// The program all the row's samples are in; null when some are in
    /// no BPF program, or in several.
    bpf_prog_id: Option<u32>,
    /// The one sub-program all the row's samples are in; null when the
    /// row sums several (see `bpf_subprogs`).
    bpf_subprog: Option<u32>,
    /// Every sub-program of `bpf_prog_id` the row sums, ascending.
    bpf_subprogs: Option<Vec<u32>>,
    /// With `-g`: the row's call graph, as the text report draws it (the
    /// same 0.5% threshold); absent without `-g`.
    #[serde(skip_serializing_if = "Option::is_none")]
    callgraph: Option<Vec<callgraph::GraphNode>>,
}

/// What the samples of one output row are: found over the raw rows it
/// sums, because its representative key speaks for one of them only.
#[derive(Default)]
struct RowFacts {
    kernel_samples: u64,
    user: bool,
    kernel: bool,
    outside_bpf: bool,
    progs: std::collections::BTreeSet<(u32, u32)>,
}

impl RowFacts {
    fn add(&mut self, p: &Profile, k: &crate::analyze::profile::RowKey, samples: u64) {
        if table::is_kernel_sym(p, k) {
            self.kernel = true;
            self.kernel_samples += samples;
        } else {
            self.user = true;
        }
        match bpf_prog_of(p, k) {
            Some(b) => {
                self.progs.insert(b);
            }
            None => self.outside_bpf = true,
        }
    }

    fn fill(&self, row: &mut JsonRow) {
        row.kernel = (self.kernel != self.user).then_some(self.kernel);
        row.kernel_samples = self.kernel_samples;
        let mut ids = self.progs.iter().map(|b| b.0);
        let first = ids.next();
        let one_prog = first.filter(|&f| !self.outside_bpf && ids.all(|i| i == f));
        row.bpf_prog_id = one_prog;
        row.bpf_subprogs = one_prog.map(|_| self.progs.iter().map(|b| b.1).collect());
        row.bpf_subprog = match row.bpf_subprogs.as_deref() {
            Some([one]) => Some(*one),
            _ => None,
        };
    }
}

/// `report --bpf --json`: the BPF view's fields at the top level.
#[derive(Serialize)]
struct BpfJson<'a> {
    event: &'a str,
    warnings: &'a [String],
    #[serde(flatten)]
    bpf: Option<BpfSummary>,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    event: &'a str,
    samples: u64,
    period: u64,
    lost: u64,
    lost_samples: u64,
    sort: &'a [SortKey],
    /// `callee` or `caller` with `-g`, else null.
    call_graph: Option<&'static str>,
    warnings: &'a [String],
    rows: Vec<JsonRow>,
    bpf: Option<BpfSummary>,
}

pub fn json(p: &Profile, o: &ReportOptions, out: &mut dyn Write) -> std::io::Result<()> {
    if o.bpf_only {
        let view = BpfJson {
            event: &p.event,
            warnings: &p.warnings,
            bpf: bpf_view::summarize_by(p, &o.filters, o.bpf_by),
        };
        serde_json::to_writer_pretty(&mut *out, &view)?;
        return writeln!(out);
    }
    if o.keys.contains(&SortKey::Srcline) {
        return super::srcline::json(p, o, out);
    }
    let mut rows = table::group(p, &o.keys, &o.filters, o.children);
    if let Some(order) = &o.row_order {
        fields::order_rows(p, &o.keys, order, &mut rows);
    }
    let has = |k| o.keys.contains(&k);
    let mut facts: FxHashMap<table::GroupKey, RowFacts> = FxHashMap::default();
    for (k, c) in &p.rows {
        if o.filters.keep(p, k) {
            facts
                .entry(table::group_key(&o.keys, p, k))
                .or_default()
                .add(p, k, c.samples);
        }
    }
    let visible: Vec<&Row> = rows
        .iter()
        .filter(|r| p.percent(&r.children.unwrap_or(r.counts)) >= o.percent_limit)
        .collect();
    let graph_min = o.percent_limit.max(GRAPH_MIN_PERCENT);
    let graphs = o.callgraph.map(|order| {
        let stacks = graph_stacks(p, o, &visible, graph_min);
        (order, stacks)
    });
    let json_rows = visible
        .iter()
        .map(|r| {
            let s = &p.sym.syms[r.key.frame.sym as usize];
            let mut row = JsonRow {
                overhead: p.percent(&r.counts),
                children: r.children.map(|c| p.percent(&c)),
                samples: r.counts.samples,
                period: r.counts.period,
                comm: has(SortKey::Comm).then(|| p.sym.threads.comms[r.key.comm as usize].clone()),
                pid: has(SortKey::Pid).then_some(r.key.tid),
                tid: has(SortKey::Tid).then_some(r.key.tid),
                cpu: has(SortKey::Cpu).then(|| table::cpu_number(r.key.cpu)),
                dso: has(SortKey::Dso).then(|| p.sym.dsos[r.key.frame.dso as usize].short.clone()),
                symbol: has(SortKey::Sym).then(|| s.name.clone()),
                kernel: None,
                kernel_samples: 0,
                bpf_prog_id: None,
                bpf_subprog: None,
                bpf_subprogs: None,
                callgraph: graphs.as_ref().map(|(order, stacks)| {
                    match stacks.get(&table::group_key(&o.keys, p, &r.key)) {
                        Some(s) => callgraph::tree(p, s, *order, graph_min),
                        None => Vec::new(),
                    }
                }),
            };
            match facts.get(&table::group_key(&o.keys, p, &r.key)) {
                Some(f) => f.fill(&mut row),
                // A row of callers only (`--children`): no samples of its
                // own, so what it is comes from its key alone.
                None => {
                    let mut f = RowFacts::default();
                    f.add(p, &r.key, 0);
                    f.fill(&mut row);
                }
            }
            row
        })
        .collect();
    let report = JsonReport {
        event: &p.event,
        samples: p.total.samples,
        period: p.total.period,
        lost: p.lost,
        lost_samples: p.lost_samples,
        sort: &o.keys,
        call_graph: o.callgraph.map(|c| match c {
            CallOrder::Callee => "callee",
            CallOrder::Caller => "caller",
        }),
        warnings: &p.warnings,
        rows: json_rows,
        bpf: bpf_view::summarize_by(p, &o.filters, o.bpf_by),
    };
    serde_json::to_writer_pretty(&mut *out, &report)?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_follow_perfs_convert_unit() {
        // perf report's headers for these counts (checked against perf 6.1
        // in tests/first_hour.rs): no unit is a space.
        for (n, s) in [
            (999, "999 "),
            (1000, "1000 "),
            (1001, "1K"),
            (5669, "5K"),
            (1_000_999, "1000K"),
            (1_001_000, "1M"),
        ] {
            assert_eq!(fmt_count(n), s, "{n}");
        }
    }

    #[test]
    fn the_widest_column_is_narrowed_first() {
        let keys = [SortKey::Dso, SortKey::Sym];
        // 20 for the counts, then "  dso" and "  symbol".
        let mut w = [17, 400];
        let room = fit_widths(&keys, &mut w, 20, Some(100));
        assert_eq!(w[0], 17, "the short column stays whole");
        assert_eq!(room, Some(100 - 20 - 19 - 2));
        let mut w = [400, 17];
        let room = fit_widths(&keys, &mut w, 20, Some(60));
        assert_eq!(w, [19, 17]);
        assert_eq!(room, Some(17));
        // Never below a header.
        let mut w = [400, 400];
        fit_widths(&keys, &mut w, 20, Some(10));
        assert_eq!(w, ["Shared Object".len(), "Symbol".len()]);
        let mut w = [400, 400];
        assert_eq!(fit_widths(&keys, &mut w, 20, None), None);
        assert_eq!(w, [400, 400], "no width: nothing cut");
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abcd", 4), "abcd");
    }
}
