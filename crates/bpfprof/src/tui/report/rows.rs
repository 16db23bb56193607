//! What `report`'s interface shows, as text, without a terminal: the
//! table's rows as `--stdio` prints them (same rows, order, shares and
//! columns, never cut), a row's call graph as the `-g` text draws it
//! (from the tree `-g --json` gives), the BPF view's programs as top's
//! pane lines, and a program's annotation.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::analyze::annotate::{self, AnnotateOptions, Selection, Target};
use crate::analyze::bpf_view::{self, ProgSummary};
use crate::analyze::callgraph::{self, CallOrder, GraphNode};
use crate::analyze::fields::{self, Column, Count};
use crate::analyze::profile::{Counts, Profile};
use crate::analyze::render::ReportOptions;
use crate::analyze::table::{self, GroupKey};
use crate::top::window::{ProgLine, SubLine};

/// perf's default threshold for a call-graph branch (`-g graph,0.5`), as
/// the text report uses it.
const GRAPH_MIN_PERCENT: f64 = 0.5;

pub struct RowLine {
    pub text: String,
    pub key: GroupKey,
    /// Whether Enter shows a call graph under it.
    pub has_graph: bool,
}

pub struct Table {
    /// The column names, aligned with the rows' text.
    pub header: String,
    pub rows: Vec<RowLine>,
}

/// The call graphs the rows can open.
pub struct Graphs {
    order: CallOrder,
    min: f64,
    stacks: FxHashMap<GroupKey, Vec<(u32, Counts)>>,
}

/// The report's rows, as `--stdio` has them; call graphs when the
/// profile holds call chains (in `-g`'s order, callee by default).
pub fn table(p: &Profile, o: &ReportOptions) -> (Table, Option<Graphs>) {
    let mut rows = table::group(p, &o.keys, &o.filters, o.children);
    if let Some(order) = &o.row_order {
        fields::order_rows(p, &o.keys, order, &mut rows);
    }
    rows.retain(|r| p.percent(&r.children.unwrap_or(r.counts)) >= o.percent_limit);
    let cols = o.columns();
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            o.keys
                .iter()
                .map(|&k| {
                    let mut s = String::new();
                    table::push_column(p, k, &r.key, &mut s);
                    s
                })
                .collect()
        })
        .collect();
    let mut widths: Vec<usize> = o.keys.iter().map(|k| k.header().len()).collect();
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut header = String::new();
    for c in &cols {
        header.push_str("  ");
        match *c {
            Column::Count {
                width, header: h, ..
            } => header += &format!("{h:>width$}"),
            Column::Key(i) => header += &format!("{:<w$}", o.keys[i].header(), w = widths[i]),
        }
    }
    let graph_min = o.percent_limit.max(GRAPH_MIN_PERCENT);
    let graphs = (!p.chains.is_empty()).then(|| {
        let wanted: FxHashSet<GroupKey> = rows
            .iter()
            .filter(|r| r.counts.samples > 0 && p.percent(&r.counts) >= graph_min)
            .map(|r| table::group_key(&o.keys, p, &r.key))
            .collect();
        Graphs {
            order: o.callgraph.unwrap_or(CallOrder::Callee),
            min: graph_min,
            stacks: callgraph::index(p, &o.keys, &o.filters, &wanted),
        }
    });
    let lines = rows
        .iter()
        .zip(&cells)
        .map(|(r, cells)| {
            let key = table::group_key(&o.keys, p, &r.key);
            RowLine {
                text: row_text(p, r, &cols, cells, &widths),
                has_graph: graphs.as_ref().is_some_and(|g| g.stacks.contains_key(&key)),
                key,
            }
        })
        .collect();
    (
        Table {
            header: header.trim_end().to_string(),
            rows: lines,
        },
        graphs,
    )
}

/// A row's line as `--stdio` prints it into a file.
fn row_text(
    p: &Profile,
    r: &table::Row,
    cols: &[Column],
    cells: &[String],
    widths: &[usize],
) -> String {
    let mut line = String::new();
    for c in cols {
        line.push_str("  ");
        match *c {
            Column::Count { count, width, .. } => {
                line += &match count {
                    Count::Children => {
                        let c = r.children.unwrap_or(r.counts);
                        format!("{:>w$.2}%", p.percent(&c), w = width - 1)
                    }
                    Count::Overhead => format!("{:>w$.2}%", p.percent(&r.counts), w = width - 1),
                    Count::Samples => format!("{:>width$}", r.counts.samples),
                    Count::Period => format!("{:>width$}", r.counts.period),
                }
            }
            Column::Key(i) => line += &format!("{:<w$}", cells[i], w = widths[i]),
        }
    }
    line.trim_end().to_string()
}

impl Graphs {
    /// A row's call graph in the text report's layout: a chain with one
    /// way on is a column of names; where it splits, each branch shows its
    /// share.
    pub fn lines(&self, p: &Profile, row: &RowLine) -> Vec<String> {
        let Some(stacks) = self.stacks.get(&row.key) else {
            return Vec::new();
        };
        let tree = callgraph::tree(p, stacks, self.order, self.min);
        let mut out = Vec::new();
        let period = stacks.iter().map(|s| s.1.period).sum();
        walk(&tree, period, 0, &mut out);
        out
    }
}

fn walk(kids: &[GraphNode], parent_period: u64, depth: usize, out: &mut Vec<String>) {
    let single = kids.len() == 1 && kids[0].period == parent_period;
    let indent = " ".repeat(12 + 4 * depth);
    for k in kids {
        match single {
            true => {
                out.push(format!("{indent}   {}", k.symbol));
                walk(&k.children, k.period, depth, out);
            }
            false => {
                out.push(format!("{indent}--{:.2}%--{}", k.percent, k.symbol));
                walk(&k.children, k.period, depth + 1, out);
            }
        }
    }
}

/// The recording's programs as top's pane shows them, costliest first;
/// runs per second over the recording where the file has the kernel's
/// run stats.
pub fn programs(p: &Profile, o: &ReportOptions) -> Vec<(ProgLine, ProgSummary)> {
    let Some(view) = bpf_view::summarize(p, &o.filters) else {
        return Vec::new();
    };
    let secs = p.last_time.saturating_sub(p.first_time) as f64 / 1e9;
    view.programs
        .into_iter()
        .map(|s| (prog_line(&s, secs), s))
        .collect()
}

fn prog_line(s: &ProgSummary, secs: f64) -> ProgLine {
    let runs = s.run_cnt.filter(|&r| r > 0);
    ProgLine {
        head: s.head.clone(),
        subprogs: s
            .subprogs
            .iter()
            .map(|x| SubLine {
                index: x.index,
                name: x.name.clone(),
                samples: x.samples,
                samples_total: x.samples,
            })
            .collect(),
        owners: s.owners.clone(),
        attach: s.attach.clone(),
        run_cnt: s.run_cnt,
        run_time_ns: s.run_time_ns,
        run_cnt_total: s.run_cnt,
        runs_per_s: runs.filter(|_| secs > 0.0).map(|r| r as f64 / secs),
        avg_ns: runs.zip(s.run_time_ns).map(|(r, t)| t as f64 / r as f64),
        loaded_s: None,
        unloaded: s.unloaded_at.is_some(),
    }
}

/// A program's annotate view: its sub-programs with their shares, then
/// each one's source lines with theirs (`annotate`'s numbers).
pub fn annotation(
    p: &Profile,
    prog: &ProgLine,
    sum: &ProgSummary,
    callchains: bool,
) -> Vec<String> {
    let mut out: Vec<String> = crate::tui::widgets::prog_heading(prog).into();
    out.push(String::new());
    out.push("sub-programs (own samples, share of all samples):".into());
    for s in &sum.subprogs {
        out.push(format!(
            "  {:>7.2}% {:>8}  #{} {}",
            s.percent, s.samples, s.index, s.name
        ));
    }
    let opts = AnnotateOptions {
        xlated: false,
        kcore: annotate::default_kcore().to_path_buf(),
        callchains,
    };
    for t in annotate::annotate(p, &Selection::Prog(prog.head.id), None, &opts) {
        out.push(String::new());
        match t {
            Target::Annotated(a) => {
                let sub = a
                    .bpf
                    .as_ref()
                    .map_or_else(String::new, |b| format!(" (#{} {})", b.sub, b.func_name));
                let called = a.called.map_or_else(String::new, |c| {
                    format!(", called {c} ({:.2}%)", a.called_percent)
                });
                out.push(format!(
                    "{}{sub}: {} samples ({:.2}%){called}",
                    a.symbol, a.samples, a.percent
                ));
                if a.lines.is_empty() {
                    out.push("  (no source lines: the program has no line info)".into());
                }
                out.push("  share  samples  called  source line".into());
                for l in &a.lines {
                    let share = match l.samples {
                        0 => String::new(),
                        _ => format!("{:.2}%", l.percent),
                    };
                    out.push(format!(
                        "  {share:>7} {:>7} {:>7}  {}:{}  {}",
                        l.samples,
                        l.called,
                        l.file.rsplit('/').next().unwrap_or(&l.file),
                        l.line,
                        l.text.trim()
                    ));
                }
                out.extend(a.warnings.iter().map(|w| format!("  warning: {w}")));
            }
            Target::Unavailable(u) => out.push(format!("{}: {}", u.symbol, u.why)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(symbol: &str, period: u64, children: Vec<GraphNode>) -> GraphNode {
        GraphNode {
            symbol: symbol.into(),
            dso: String::new(),
            percent: period as f64,
            samples: period,
            period,
            children,
        }
    }

    #[test]
    fn graphs_split_as_the_text_report_draws_them() {
        let tree = vec![node(
            "f",
            10,
            vec![
                node("g", 6, vec![node("main", 6, vec![])]),
                node("h", 4, vec![]),
            ],
        )];
        let mut out = Vec::new();
        walk(&tree, 10, 0, &mut out);
        let pad = " ".repeat(12);
        assert_eq!(
            out,
            [
                format!("{pad}   f"),
                format!("{pad}--6.00%--g"),
                format!("{pad}       main"),
                format!("{pad}--4.00%--h"),
            ]
        );
    }
}
