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
    after_help = "Examples:\n  bpfprof record -a -g --duration 10\n  bpfprof record -a -g -- sleep 3\n  bpfprof record -F 999 -p 1234,5678\n  bpfprof record -c 100000 -C 0,2-3 --duration 5\n  bpfprof record -g -- ./my-program arg\n  bpfprof record --demo"
)]
pub struct RecordArgs {
    /// Profile all CPUs: alone, until --duration or Ctrl-C; with a command,
    /// for the command's lifetime (the default when no command, -p or -t).
    #[arg(short = 'a', long = "all-cpus")]
    pub all_cpus: bool,
    /// Profile existing processes (all their threads), comma-separated.
    #[arg(short = 'p', long = "pid", value_delimiter = ',')]
    pub pid: Vec<i32>,
    /// Profile existing threads only (not the rest of their process),
    /// comma-separated.
    #[arg(short = 't', long = "tid", value_delimiter = ',')]
    pub tid: Vec<i32>,
    /// Sample only these CPUs (a list like 0,2-3); implies -a.
    #[arg(short = 'C', long = "cpu", value_name = "CPUS")]
    pub cpu: Option<String>,
    /// Samples per second per CPU (default 4000; -c overrides it, as in perf).
    #[arg(short = 'F', long = "freq")]
    pub freq: Option<u64>,
    /// Sample every COUNT events (a fixed period) instead of a frequency.
    #[arg(short = 'c', long = "count", value_name = "COUNT")]
    pub count: Option<u64>,
    /// Record call chains (kernel and user, frame pointers).
    #[arg(short = 'g')]
    pub callchain: bool,
    /// Record call chains this way: only `fp` (frame pointers) is built.
    #[arg(long = "call-graph", value_name = "MODE")]
    pub call_graph: Option<String>,
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
    /// Compress the data section with zstd at this level (1-22; -z alone
    /// is 1), as perf record -z does.
    #[arg(
        short = 'z',
        long = "compression-level",
        value_name = "LEVEL",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "1"
    )]
    pub compression_level: Option<u32>,
    /// Print no messages but errors.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
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
    /// The command to start and profile: the words after `--`, or from the
    /// first word that is not an option. No allow_hyphen_values: with it,
    /// an option clap does not know (`-c` before it was built) became the
    /// command instead of an error.
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `-C 0,2-3`: strictly parsed, unlike /sys's list (a typo must not
/// silently sample fewer CPUs).
fn parse_cpus(s: &str) -> anyhow::Result<Vec<i32>> {
    let bad = || anyhow!("-C {s:?}: expected a CPU list like 0,2-3");
    let mut v = Vec::new();
    for part in s.split(',') {
        let num = |x: &str| x.trim().parse::<i32>().ok().filter(|&n| n >= 0);
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a).ok_or_else(bad)?, num(b).ok_or_else(bad)?);
                if a > b {
                    return Err(bad());
                }
                v.extend(a..=b);
            }
            None => v.push(num(part).ok_or_else(bad)?),
        }
    }
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

impl RecordArgs {
    fn options(&self) -> anyhow::Result<Options> {
        if let Some(mode) = &self.call_graph {
            match mode.split(',').next().unwrap_or("") {
                "fp" => {}
                "dwarf" => bail!(
                    "--call-graph dwarf is not built yet: bpfprof unwinds with frame pointers only; use --call-graph fp (or -g) and build the program with -fno-omit-frame-pointer"
                ),
                "lbr" => bail!("--call-graph lbr is not built: use --call-graph fp (or -g)"),
                other => bail!("--call-graph {other:?}: use fp (frame pointers)"),
            }
        }
        let cpus = self.cpu.as_deref().map(parse_cpus).transpose()?;
        let system_wide = self.all_cpus || cpus.is_some();
        let targets = [!self.pid.is_empty(), !self.tid.is_empty()];
        if targets.iter().filter(|&&t| t).count() > 1 {
            bail!("give either -p or -t, not both");
        }
        let has_task = targets.iter().any(|&t| t);
        if has_task && !self.command.is_empty() {
            bail!("give either -p/-t or a command, not both");
        }
        if has_task && system_wide {
            bail!("give either -a/-C or -p/-t, not both");
        }
        let positive = |list: &[i32]| -> anyhow::Result<()> {
            match list.iter().find(|&&p| p <= 0) {
                Some(bad) => bail!("no such process: {bad}"),
                None => Ok(()),
            }
        };
        let what = if !self.pid.is_empty() {
            positive(&self.pid)?;
            What::Pids(self.pid.clone())
        } else if !self.tid.is_empty() {
            positive(&self.tid)?;
            What::Tids(self.tid.clone())
        } else if !self.command.is_empty() {
            What::Command {
                argv: self.command.clone(),
                system_wide,
            }
        } else {
            What::SystemWide
        };
        if self.demo && !matches!(what, What::SystemWide) {
            bail!("--demo records all CPUs; drop -p, -t and the command");
        }
        let freq = self.freq.unwrap_or(4000);
        if freq == 0 {
            bail!("-F must be above 0");
        }
        let freq = if self.count.is_some() {
            freq
        } else {
            let (fit, why) = bpfprof::capture::caps::fit_freq(freq, self.freq.is_some());
            if let (Some(why), false) = (why, self.quiet) {
                eprintln!("bpfprof: {why}");
            }
            fit
        };
        if self.count == Some(0) {
            bail!("-c must be above 0");
        }
        if let Some(l) = self.compression_level {
            if !(1..=22).contains(&l) {
                bail!("-z/--compression-level {l}: zstd levels are 1 to 22");
            }
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
            freq,
            period: self.count,
            cpus,
            callchain: self.callchain || self.call_graph.is_some(),
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
            compression: self.compression_level,
            quiet: self.quiet,
            cmdline: std::env::args().collect(),
        })
    }
}

/// Run the recording; the exit code is the command's when one was started.
pub fn run(args: &RecordArgs) -> anyhow::Result<i32> {
    capture::record(&args.options()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, clap::Parser)]
    struct Cli {
        #[command(flatten)]
        r: RecordArgs,
    }

    fn parse(args: &[&str]) -> Result<RecordArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("record").chain(args.iter().copied())).map(|c| c.r)
    }

    #[test]
    fn options_before_the_command_are_options() {
        let a = parse(&["-c", "10000", "-C", "0,2-3", "-q", "-z", "--", "ls", "-l"]).unwrap();
        assert_eq!(a.count, Some(10000));
        assert_eq!(a.cpu.as_deref(), Some("0,2-3"));
        assert!(a.quiet);
        assert_eq!(a.compression_level, Some(1));
        assert_eq!(a.command, ["ls", "-l"]);
        // The first word that is no option starts the command, whose own
        // options stay its own.
        let a = parse(&["-a", "sleep", "-x", "3"]).unwrap();
        assert!(a.all_cpus);
        assert_eq!(a.command, ["sleep", "-x", "3"]);
        let a = parse(&["--compression-level=7", "-t", "5,6"]).unwrap();
        assert_eq!(a.compression_level, Some(7));
        assert_eq!(a.tid, [5, 6]);
    }

    #[test]
    fn an_unknown_option_is_an_error_naming_it_with_exit_2() {
        let e = parse(&["--frq", "99", "--", "true"]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let msg = e.to_string();
        assert!(msg.contains("--frq") && msg.contains("--freq"), "{msg}");
    }

    #[test]
    fn cpu_lists_are_strict() {
        assert_eq!(parse_cpus("0,2-3").unwrap(), [0, 2, 3]);
        assert_eq!(parse_cpus("1").unwrap(), [1]);
        for bad in ["", "a", "3-1", "0,,1", "-1"] {
            assert!(parse_cpus(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn dwarf_call_graphs_are_refused_in_words() {
        let a = parse(&["--call-graph", "dwarf", "true"]).unwrap();
        let e = a.options().unwrap_err().to_string();
        assert!(e.contains("dwarf") && e.contains("fp"), "{e}");
        let a = parse(&["--call-graph", "fp", "true"]).unwrap();
        assert!(a.options().unwrap().callchain);
    }
}
