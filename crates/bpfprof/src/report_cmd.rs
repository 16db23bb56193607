//! `bpfprof report`: where the CPU went.

use std::io::Write;

use crate::input_args::InputArgs;
use anyhow::{Context, Result};
use bpfprof::analyze::bpf_cost::By;
use bpfprof::analyze::callgraph::CallOrder;
use bpfprof::analyze::fields::{self, Column};
use bpfprof::analyze::render::{self, ReportOptions};
use bpfprof::analyze::table::{Filters, SortKey};
use bpfprof::analyze::ProfileOptions;

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Sort (group) by these keys, comma-separated: comm, pid, tid, cpu, dso, sym, srcline, bpf_prog
    /// [default: comm,dso,sym] (srcline: with dso and sym only, self samples only).
    #[arg(short = 's', long, value_delimiter = ',')]
    pub sort: Option<Vec<SortKey>>,
    /// The columns, in order, comma-separated: overhead, overhead_children, sample, period and sort
    /// keys (perf's -F; a leading + adds to the default columns).
    #[arg(
        short = 'F',
        long = "fields",
        value_delimiter = ',',
        allow_hyphen_values = true
    )]
    pub fields: Vec<String>,
    /// Show each row's share including its callees: the default, as in
    /// perf, for a recording with call chains (`record -g`).
    #[arg(long, overrides_with = "no_children")]
    pub children: bool,
    /// Show only each row's own samples.
    #[arg(long, overrides_with = "children")]
    pub no_children: bool,
    /// Print call graphs under each row: callee (default) or caller order;
    /// `none` prints none, as in perf.
    #[arg(short = 'g', long = "call-graph", num_args = 0..=1, default_missing_value = "callee")]
    pub call_graph: Option<CallGraph>,
    /// Call graphs in caller order, as perf's `-G`, whatever `-g` says.
    #[arg(short = 'G', long)]
    pub inverted: bool,
    /// Accepted for perf compatibility (`-n`): the samples column is always
    /// shown.
    #[arg(short = 'n', long, hide = true)]
    pub show_nr_samples: bool,
    /// Only these commands (comma-separated).
    #[arg(long = "comm", alias = "comms", value_delimiter = ',')]
    pub comms: Vec<String>,
    /// Only these process ids (comma-separated).
    #[arg(long = "pid", value_delimiter = ',')]
    pub pids: Vec<u32>,
    /// Only these thread ids (comma-separated).
    #[arg(long = "tid", value_delimiter = ',')]
    pub tids: Vec<u32>,
    /// Only these shared objects (short or full names, comma-separated).
    #[arg(long = "dso", alias = "dsos", value_delimiter = ',')]
    pub dsos: Vec<String>,
    /// Hide rows below this percentage.
    #[arg(long, default_value_t = 0.0)]
    pub percent_limit: f64,
    /// The BPF view only: per program, all sub-programs summed.
    #[arg(long)]
    pub bpf: bool,
    /// Break each BPF program's parts down by whose work ran it: the
    /// command, process, thread, CPU or context (task, softirq, hardirq,
    /// nmi) of its samples. The rows add up to the program's parts.
    #[arg(long, value_enum)]
    pub by: Option<bpfprof::analyze::bpf_cost::By>,
    /// Leave out the BPF summary at the top of the default report.
    #[arg(long)]
    pub no_bpf_summary: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Print the recording's header (as perf's `--header`) before the report.
    #[arg(long)]
    pub header: bool,
    /// Print only the recording's header.
    #[arg(long)]
    pub header_only: bool,
}

/// What `-g` asks for. perf's own `-g none` is the habit of anyone who
/// wants a flat table from a recording with call chains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CallGraph {
    /// Callee order (the default of a bare `-g`).
    Callee,
    /// Caller order.
    Caller,
    /// No call graphs.
    None,
}

impl CallGraph {
    fn order(self) -> Option<CallOrder> {
        match self {
            CallGraph::Callee => Some(CallOrder::Callee),
            CallGraph::Caller => Some(CallOrder::Caller),
            CallGraph::None => None,
        }
    }
}

impl ReportArgs {
    /// The call graphs asked for, if any.
    fn graph_order(&self) -> Option<CallOrder> {
        match self.inverted {
            true => Some(CallOrder::Caller),
            false => self.call_graph.and_then(CallGraph::order),
        }
    }

    /// Whether the children column is shown: asked for, or by default on
    /// a recording with call chains (perf's default too), unless
    /// `--no-children`.
    fn children(&self, file_has_callchains: bool) -> bool {
        !self.no_children && (self.children || file_has_callchains)
    }
}

/// Everything the report's options decide once the file is known to have
/// call chains or not, decided here and nowhere else.
struct Decided {
    keys: Vec<SortKey>,
    /// `-F`'s columns; `None`: the default ones.
    columns: Option<Vec<Column>>,
    /// The order `-F` and `--sort` give rows; `None`: heaviest first.
    row_order: Option<Vec<Column>>,
    children: bool,
    /// Whether the profile keeps call chains: for graphs, children, or
    /// the BPF cost parts.
    callchains: bool,
    /// Whether rows keep their thread: for keys and filters that name one.
    by_thread: bool,
    /// Whether the report opens its terminal interface instead of printing.
    tui: bool,
}

const DEFAULT_SORT: [SortKey; 3] = [SortKey::Comm, SortKey::Dso, SortKey::Sym];

/// `tty`: whether standard output is a terminal.
fn decide(a: &ReportArgs, has_callchains: bool, tty: bool) -> Result<Decided> {
    let (keys, columns, row_order, children) = match a.fields.is_empty() {
        true => (
            a.sort.clone().unwrap_or(DEFAULT_SORT.to_vec()),
            None,
            None,
            a.children(has_callchains),
        ),
        false => {
            let f = fields::resolve(
                &a.fields,
                a.sort.as_deref(),
                &DEFAULT_SORT,
                a.children(has_callchains),
            )?;
            (
                f.keys,
                Some(f.columns),
                f.order,
                f.children && !a.no_children,
            )
        }
    };
    if keys.len() > 5 {
        anyhow::bail!("at most 5 sort keys (got {})", keys.len());
    }
    let srcline = keys.contains(&SortKey::Srcline);
    if srcline {
        check_srcline(a, &keys)?;
    }
    // Lines are counted from each sample's own address only.
    let children = children && !srcline;
    // A program's cost beyond its own code is known only from call chains:
    // the BPF view, and the summary atop the default report, read them
    // when the file has them, unless `-g none` asked for a flat report.
    let bpf_cost =
        (a.bpf || !a.no_bpf_summary) && a.call_graph != Some(CallGraph::None) && has_callchains;
    let by_thread = keys
        .iter()
        .any(|k| matches!(k, SortKey::Comm | SortKey::Pid | SortKey::Tid))
        || !a.comms.is_empty()
        || !a.pids.is_empty()
        || !a.tids.is_empty()
        || matches!(a.by, Some(By::Comm | By::Pid | By::Tid));
    // perf report's rule: a terminal gets the interface unless a way of
    // printing is asked for. `--bpf` prints its own view (hook sites, maps,
    // stats: more than the interface's pane); rows by source line have no
    // interface.
    let printed = a.input.stdio || a.json || a.header || a.header_only || a.bpf;
    let tui = tty && !printed && !srcline;
    // The interface opens call graphs when the file has them.
    let graphs = tui && has_callchains && a.call_graph != Some(CallGraph::None);
    Ok(Decided {
        callchains: children || a.graph_order().is_some() || bpf_cost || graphs,
        tui,
        keys,
        columns,
        row_order,
        children,
        by_thread,
    })
}

/// Rows by source line are made from per-address counts, which keep no
/// thread or CPU.
fn check_srcline(a: &ReportArgs, keys: &[SortKey]) -> Result<()> {
    if let Some(k) = keys
        .iter()
        .find(|k| !matches!(k, SortKey::Srcline | SortKey::Dso | SortKey::Sym))
    {
        anyhow::bail!(
            "--sort srcline goes with dso and sym only, not {}: samples are counted per address, not per thread or CPU; \
             drop {0} from --sort (or report it without srcline)",
            clap::ValueEnum::to_possible_value(k).map_or_else(String::new, |v| v.get_name().to_string())
        );
    }
    if !a.comms.is_empty() || !a.pids.is_empty() || !a.tids.is_empty() {
        anyhow::bail!(
            "--sort srcline cannot filter by --comm, --pid or --tid: samples are counted per address, not per thread; \
             drop the filter (--dso works)"
        );
    }
    Ok(())
}

pub fn run(a: &ReportArgs) -> Result<()> {
    let file = a.input.open()?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if a.header || a.header_only {
        let r = bpfprof::analyze::header::print(&file, &mut out);
        if a.header_only {
            return finish(r.and_then(|_| out.flush()));
        }
        finish(r)?;
    }
    let d = decide(
        a,
        bpfprof::analyze::profile::has_callchains(&file),
        std::io::IsTerminal::is_terminal(&std::io::stdout()),
    )?;
    let profile = a.input.build(
        &file,
        ProfileOptions {
            callchains: d.callchains,
            progress: !a.json,
            merge_threads: !d.by_thread,
            cpus: d.keys.contains(&SortKey::Cpu) || a.by == Some(By::Cpu),
            // Lines are found per address (the interface annotates).
            ip_hits: d.keys.contains(&SortKey::Srcline) || d.tui,
            ..Default::default()
        },
    )?;
    let opts = ReportOptions {
        keys: d.keys,
        filters: Filters {
            comms: a.comms.clone(),
            pids: a.pids.clone(),
            tids: a.tids.clone(),
            dsos: a.dsos.clone(),
        },
        children: d.children,
        callgraph: a.graph_order(),
        percent_limit: a.percent_limit,
        bpf_only: a.bpf,
        bpf_summary: !a.no_bpf_summary,
        bpf_by: a.by,
        columns: d.columns,
        row_order: d.row_order,
    };
    if d.tui {
        drop(out);
        let title = format!(
            "bpfprof report: {} | {} samples of '{}'{}",
            a.input.input.display(),
            profile.total.samples,
            profile.event,
            match profile.lost + profile.lost_samples {
                0 => String::new(),
                n => format!(" | {n} lost"),
            }
        );
        let r = bpfprof::tui::report::run(&profile, &opts, d.callchains, title)
            .context("running the report's terminal interface (--stdio prints the table)");
        std::mem::forget((file, profile));
        return r;
    }
    let r = if a.json {
        render::json(&profile, &opts, &mut out)
    } else {
        render::stdio(&profile, &opts, &mut out)
    };
    let r = finish(r.and_then(|_| out.flush()));
    // The process exits next, and the kernel takes the memory back at
    // once: freeing the profile's allocations one by one took 3-4 ms of a
    // 70 ms report (2x30 alternating runs).
    std::mem::forget((file, profile));
    r
}

/// A closed pipe ends the report quietly, as it ends perf's.
fn finish(r: std::io::Result<()>) -> Result<()> {
    match r {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing the report"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        a: ReportArgs,
    }

    fn tui(args: &[&str], tty: bool) -> bool {
        let c = Cli::try_parse_from(std::iter::once("report").chain(args.iter().copied())).unwrap();
        decide(&c.a, true, tty).unwrap().tui
    }

    #[test]
    fn a_terminal_gets_the_interface_unless_printing_is_asked_for() {
        assert!(tui(&[], true));
        assert!(tui(&["-g", "caller", "--comm", "x"], true));
        assert!(!tui(&[], false), "a pipe or a file gets the table");
        for a in ["--stdio", "--json", "--header", "--header-only", "--bpf"] {
            assert!(!tui(&[a], true), "{a}");
        }
        assert!(!tui(&["--sort", "srcline"], true));
    }
}
