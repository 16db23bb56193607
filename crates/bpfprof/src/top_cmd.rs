//! `bpfprof top`: the command line over [`bpfprof::top`].

use std::time::Duration;

use anyhow::bail;
use bpfprof::top::{LiveOptions, Output, TopOptions};

/// The live profile, refreshed every interval: BPF programs with what each
/// costs (self, called, hook, total), run stats and owners, and the
/// hottest symbols.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "The BPF pane shows the last interval exactly; the symbols pane a decaying \
window, as perf top: each refresh keeps 7/8 of a row's weight and adds its new samples. \
Idle CPUs are not sampled, so shares are of busy CPU time and an idle machine costs top next \
to nothing; --idle samples them too, as perf top does.\n\n\
Keys: Tab switches panes, < and > change the sort column, / filters by name or command \
(Esc clears), Enter opens a program (its sub-programs and hottest source lines; Esc goes back), \
s toggles BPF run-time stats, q quits.\n\n\
Examples:\n  bpfprof top\n  bpfprof top --bpf-stats -d 2\n  bpfprof top -p 1234\n  \
bpfprof top --json -n 10 > top.ndjson\n  bpfprof top --csv --bpf-stats"
)]
pub struct TopArgs {
    /// Profile all CPUs (the default).
    #[arg(short = 'a', long = "all-cpus")]
    pub all_cpus: bool,
    /// Profile existing processes (all their threads), comma-separated.
    #[arg(short = 'p', long = "pid", value_delimiter = ',')]
    pub pid: Vec<i32>,
    /// Samples per second per CPU, with call chains (frame pointers).
    #[arg(short = 'F', long = "freq", default_value_t = 4000)]
    pub freq: u64,
    /// Seconds between refreshes (fractions allowed).
    #[arg(
        short = 'd',
        long = "delay",
        value_name = "SECONDS",
        default_value_t = 1.0
    )]
    pub delay: f64,
    /// Stop after this many refreshes.
    #[arg(short = 'n', long = "iterations", value_name = "N")]
    pub iterations: Option<u64>,
    /// One JSON object per interval on stdout, newline-delimited; each
    /// program keyed as in `report --bpf --json`.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// One CSV row per program per interval on stdout, after a header.
    #[arg(long)]
    pub csv: bool,
    /// Turn on the kernel's BPF run-time stats while top runs
    /// (BPF_ENABLE_STATS; off again on exit, as found).
    #[arg(long = "bpf-stats")]
    pub bpf_stats: bool,
    /// Ring buffer size per CPU in pages (a power of two).
    #[arg(short = 'm', long = "mmap-pages", default_value_t = 128)]
    pub mmap_pages: usize,
    /// Sample idle CPUs too, as perf top does: shares are then of all CPU
    /// time, not of busy time, and an idle machine costs top as much to
    /// watch as a busy one.
    #[arg(long)]
    pub idle: bool,
}

pub fn run(a: &TopArgs) -> anyhow::Result<i32> {
    if !(a.delay.is_finite() && a.delay >= 0.1) {
        bail!(
            "-d: the refresh interval must be at least 0.1 seconds, not {}",
            a.delay
        );
    }
    if a.freq == 0 {
        bail!("-F: the frequency must be at least 1 Hz");
    }
    // top has no way to tell -F 4000 from the default: it says the same.
    let (freq, why) = bpfprof::capture::caps::fit_freq(a.freq, true);
    if let Some(why) = why {
        eprintln!("bpfprof: {why}");
    }
    if !a.mmap_pages.is_power_of_two() {
        bail!(
            "-m: the ring size must be a power of two pages, not {}",
            a.mmap_pages
        );
    }
    if a.all_cpus && !a.pid.is_empty() {
        bail!("-a and -p exclude each other: -a is the whole system, -p some processes");
    }
    let output = match (a.json, a.csv) {
        (true, _) => Output::Json,
        (_, true) => Output::Csv,
        _ => Output::Tui,
    };
    bpfprof::top::run(&TopOptions {
        live: LiveOptions {
            pids: (!a.pid.is_empty()).then(|| a.pid.clone()),
            freq,
            data_pages: a.mmap_pages,
            bpf_stats: a.bpf_stats,
            idle: a.idle,
        },
        interval: Duration::from_secs_f64(a.delay),
        output,
        iterations: a.iterations,
    })
}
