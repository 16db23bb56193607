//! `bpfprof record`: the command line over [`bpfprof::capture`].

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, bail};
use bpfinfo::sys::Capture;
use bpfprof::capture::{self, events::EventSpec, Options, What};

/// How much of each BPF program to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BpfInfo {
    /// JIT images, bytecode, BTF and line tables: what annotate needs.
    Full,
    /// Names and addresses only: smaller files.
    Symbols,
}

/// Record a profile into a perf.data file that Linux perf also reads.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  bpfprof record -a -g --duration 10\n  bpfprof record -F 999 -p 1234,5678\n  bpfprof record -g -- ./my-program arg\n  bpfprof record --demo"
)]
pub struct RecordArgs {
    /// Profile all CPUs (the default when no command or -p is given).
    #[arg(short = 'a', long = "all-cpus")]
    pub all_cpus: bool,
    /// Profile existing processes (all their threads), comma-separated.
    #[arg(short = 'p', long = "pid", value_delimiter = ',')]
    pub pid: Vec<i32>,
    /// Samples per second per CPU.
    #[arg(short = 'F', long = "freq", default_value_t = 4000)]
    pub freq: u64,
    /// Record call chains (kernel and user, frame pointers).
    #[arg(short = 'g')]
    pub callchain: bool,
    /// Output file; an existing one is kept as FILE.old.
    #[arg(short = 'o', long = "output", default_value = "perf.data")]
    pub output: PathBuf,
    /// Stop after this many seconds (fractions allowed; 0 = right after start-up).
    #[arg(long)]
    pub duration: Option<f64>,
    /// Sampling event: cpu-clock, task-clock, or a hardware event (cycles,
    /// instructions, ...) where a PMU exists. Default: cycles, else cpu-clock.
    #[arg(short = 'e', long = "event")]
    pub event: Option<String>,
    /// Ring buffer size per CPU in pages (a power of two).
    #[arg(short = 'm', long = "mmap-pages", default_value_t = 128)]
    pub mmap_pages: usize,
    /// What to keep of each BPF program.
    #[arg(long = "bpf-info", value_enum, default_value_t = BpfInfo::Full)]
    pub bpf_info: BpfInfo,
    /// Do not track BPF program loads and unloads.
    #[arg(long = "no-bpf-event")]
    pub no_bpf_event: bool,
    /// Turn on the kernel's BPF run-time stats for the recording and store
    /// each program's run count and time over it (they cost two clock reads
    /// per run; `report --bpf` measures it from a -g recording).
    #[arg(long = "bpf-stats")]
    pub bpf_stats: bool,
    /// Run a built-in BPF demo workload (a generated program on the getpid
    /// tracepoint, driven by a getpid loop) while recording all CPUs.
    /// Default duration 5 s.
    #[arg(long)]
    pub demo: bool,
    /// The command to start and profile (after --).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    pub command: Vec<String>,
}

impl RecordArgs {
    fn options(&self) -> anyhow::Result<Options> {
        let what = match (self.all_cpus, self.pid.is_empty(), self.command.is_empty()) {
            (_, false, false) => bail!("give either -p or a command, not both"),
            (true, false, _) => bail!("give either -a or -p, not both"),
            (true, true, false) => bail!("-a with a command is not supported: record the command alone or the whole system with --duration"),
            (_, false, true) => {
                if let Some(bad) = self.pid.iter().find(|&&p| p <= 0) {
                    bail!("no such process: {bad}");
                }
                What::Pids(self.pid.clone())
            }
            (false, true, false) => What::Command(self.command.clone()),
            (_, true, true) => What::SystemWide,
        };
        if self.demo && !matches!(what, What::SystemWide) {
            bail!("--demo records all CPUs; drop -p and the command");
        }
        if self.freq == 0 {
            bail!("-F must be above 0");
        }
        let event = match &self.event {
            None => None,
            Some(e) => Some(EventSpec::parse(e).ok_or_else(|| {
                anyhow!("unknown event {e:?}: use cpu-clock, task-clock, cycles, instructions, cache-references, cache-misses, branches, branch-misses, bus-cycles or ref-cycles")
            })?),
        };
        let duration = match self.duration {
            Some(d) if !(d >= 0.0 && d.is_finite()) => {
                bail!("--duration must be 0 or more seconds")
            }
            Some(d) => Some(Duration::from_secs_f64(d)),
            None if self.demo => Some(Duration::from_secs(5)),
            None => None,
        };
        Ok(Options {
            what,
            event,
            freq: self.freq,
            callchain: self.callchain,
            output: self.output.clone(),
            duration,
            data_pages: self.mmap_pages,
            capture: match self.bpf_info {
                BpfInfo::Full => Capture::Full,
                BpfInfo::Symbols => Capture::Symbols,
            },
            bpf_events: !self.no_bpf_event,
            bpf_stats: self.bpf_stats,
            demo: self.demo,
            cmdline: std::env::args().collect(),
        })
    }
}

/// Run the recording; the exit code is the command's when one was started.
pub fn run(args: &RecordArgs) -> anyhow::Result<i32> {
    capture::record(&args.options()?)
}
