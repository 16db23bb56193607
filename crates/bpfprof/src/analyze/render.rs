//! Printing a report: perf-style stdio tables (with call graphs) and JSON.

use std::io::Write;

use rustc_hash::FxHashMap;

use serde::Serialize;

use super::bpf_render;
use super::bpf_view::{self, BpfSummary};
use super::callgraph::{self, CallOrder};
use super::profile::Profile;
use super::table::{self, bpf_prog_of, Filters, Row, SortKey};

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
}

fn fmt_count(n: u64) -> String {
    if n >= 10_000_000 {
        format!("{}M", n / 1_000_000)
    } else if n >= 10_000 {
        format!("{}K", n / 1000)
    } else {
        n.to_string()
    }
}

pub fn stdio(p: &Profile, o: &ReportOptions, out: &mut dyn Write) -> std::io::Result<()> {
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
            "# Lost: {} records, {} samples",
            p.lost, p.lost_samples
        )?;
    }
    for (name, n) in &p.other_events {
        writeln!(out, "# ({n} samples of '{name}' not shown)")?;
    }
    let summary = bpf_view::summarize(p, &o.filters);
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
    let rows = table::group(p, &o.keys, &o.filters, o.children);
    main_table(p, o, &rows, out)
}

fn main_table(
    p: &Profile,
    o: &ReportOptions,
    rows: &[Row],
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
    let last = o.keys.len().saturating_sub(1);
    let mut head = String::from("# ");
    let mut dots = String::from("# ");
    if o.children {
        head += "Children      Self";
        dots += "........  ........";
    } else {
        head += "Overhead";
        dots += "........";
    }
    head += "   Samples";
    dots += "  ........";
    for (i, k) in o.keys.iter().enumerate() {
        let w = if i == last {
            k.header().len()
        } else {
            widths[i]
        };
        head += &format!("  {:<w$}", k.header());
        dots += &format!("  {}", ".".repeat(w));
    }
    writeln!(out, "{}\n{}\n#", head.trim_end(), dots)?;
    // Only rows at or above the graph's threshold can print a branch; the
    // others print the empty line that ends a graph (every sample has a
    // stack, so a row with samples has one).
    let graph_min = o.percent_limit.max(0.5);
    let stacks = o.callgraph.map(|_| {
        let wanted = visible
            .iter()
            .filter(|r| r.counts.samples > 0 && p.percent(&r.counts) >= graph_min)
            .map(|r| table::group_key(&o.keys, p, &r.key))
            .collect();
        callgraph::index(p, &o.keys, &o.filters, &wanted)
    });
    let (Some(order), Some(stacks)) = (o.callgraph, stacks) else {
        // Without graphs, lines are made on every core.
        // Sized up front: grown by doubling, the text of a big profile was
        // copied over and over.
        let line_len = Cells::line_len(&widths, o.children);
        let text = crate::parallel::map_parts(&parts, 1, |parts| {
            let rows: usize = parts.iter().map(|p| p.rows.len()).sum();
            let mut text = String::with_capacity(rows * line_len);
            for part in parts {
                for i in 0..part.rows.len() {
                    part.push_line(p, i, &widths, &mut text);
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
            part.push_line(p, i, &widths, &mut line);
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

    /// Row `n`'s line; the last column is not padded.
    /// The longest line [`Self::push_line`] makes with `widths`, whose
    /// last is the widest cell of the last column: the counts (two
    /// percentages with `--children`, else one, and the samples), then
    /// each cell after two spaces, then the newline.
    fn line_len(widths: &[usize], children: bool) -> usize {
        let counts = if children { 30 } else { 20 };
        counts + widths.iter().map(|w| w + 2).sum::<usize>() + 1
    }

    fn push_line(&self, p: &Profile, n: usize, widths: &[usize], line: &mut String) {
        use std::fmt::Write as _;
        let r = self.rows[n];
        if let Some(ch) = r.children {
            let _ = write!(line, "  {:>7.2}%", p.percent(&ch));
        }
        let _ = write!(
            line,
            "  {:>7.2}%  {:>8}",
            p.percent(&r.counts),
            r.counts.samples
        );
        let last = widths.len().saturating_sub(1);
        for (i, &w) in widths.iter().enumerate() {
            let c = self.cell(n * self.keys.len() + i);
            line.push_str("  ");
            line.push_str(c);
            if i != last {
                let pad = w.saturating_sub(c.chars().count());
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        line.push('\n');
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
    dso: Option<String>,
    symbol: Option<String>,
    kernel: bool,
    bpf_prog_id: Option<u32>,
    bpf_subprog: Option<u32>,
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
    warnings: &'a [String],
    rows: Vec<JsonRow>,
    bpf: Option<BpfSummary>,
}

pub fn json(p: &Profile, o: &ReportOptions, out: &mut dyn Write) -> std::io::Result<()> {
    if o.bpf_only {
        let view = BpfJson {
            event: &p.event,
            warnings: &p.warnings,
            bpf: bpf_view::summarize(p, &o.filters),
        };
        serde_json::to_writer_pretty(&mut *out, &view)?;
        return writeln!(out);
    }
    let rows = table::group(p, &o.keys, &o.filters, o.children);
    let has = |k| o.keys.contains(&k);
    let json_rows = rows
        .iter()
        .filter(|r| p.percent(&r.children.unwrap_or(r.counts)) >= o.percent_limit)
        .map(|r| {
            let s = &p.sym.syms[r.key.frame.sym as usize];
            let bpf = bpf_prog_of(p, &r.key);
            JsonRow {
                overhead: p.percent(&r.counts),
                children: r.children.map(|c| p.percent(&c)),
                samples: r.counts.samples,
                period: r.counts.period,
                comm: has(SortKey::Comm).then(|| p.sym.threads.comms[r.key.comm as usize].clone()),
                pid: has(SortKey::Pid).then_some(r.key.tid),
                dso: has(SortKey::Dso).then(|| p.sym.dsos[r.key.frame.dso as usize].short.clone()),
                symbol: has(SortKey::Sym).then(|| s.name.clone()),
                kernel: p.sym.dsos[s.dso as usize].is_kernel(),
                bpf_prog_id: bpf.map(|b| b.0),
                bpf_subprog: bpf.map(|b| b.1),
            }
        })
        .collect();
    let report = JsonReport {
        event: &p.event,
        samples: p.total.samples,
        period: p.total.period,
        lost: p.lost,
        lost_samples: p.lost_samples,
        sort: &o.keys,
        warnings: &p.warnings,
        rows: json_rows,
        bpf: bpf_view::summarize(p, &o.filters),
    };
    serde_json::to_writer_pretty(&mut *out, &report)?;
    writeln!(out)
}
