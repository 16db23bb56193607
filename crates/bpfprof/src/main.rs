//! The `bpfprof` command line: perf's habits, thin wiring over the library.

mod annotate_cmd;
mod bpf_cmd;
mod export_cmd;
mod input_args;
mod record_cmd;
mod report_cmd;
mod script_cmd;
mod top_cmd;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "bpfprof",
    version,
    about = "A Linux profiler in which BPF programs are first-class code"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Show where the CPU went in a recording (bpfprof's or Linux perf's).
    Report(report_cmd::ReportArgs),
    /// List and inspect loaded BPF programs, maps and links (like bpftool prog/map/link).
    Bpf(bpf_cmd::BpfArgs),
    /// Show where inside a BPF program (or kernel/user function) the time goes.
    Annotate(annotate_cmd::AnnotateArgs),
    /// Record a profile (all CPUs, processes or a command), BPF programs included.
    Record(record_cmd::RecordArgs),
    /// Write a recording as collapsed stacks, a flame graph, pprof or a Firefox profile.
    Export(export_cmd::ExportArgs),
    /// Print every sample as `perf script` does, BPF frames resolved.
    Script(script_cmd::ScriptArgs),
    /// Live view, refreshed every second: BPF programs' costs and the hottest symbols.
    Top(top_cmd::TopArgs),
}

fn main() {
    bpfprof::capture::sys::default_sigpipe();
    let cli = Cli::parse();
    // Huge-page heaps speed up flat reports; with call chains they made
    // reports slower and less steady (README → Performance).
    if matches!(&cli.cmd, Cmd::Report(a) if !a.callchains(false)) {
        bpfprof::capture::sys::rerun_with_huge_heaps();
    }
    if matches!(
        cli.cmd,
        Cmd::Report(_) | Cmd::Annotate(_) | Cmd::Export(_) | Cmd::Script(_)
    ) {
        bpfprof::capture::sys::keep_big_blocks_in_heap();
    }
    let r = match &cli.cmd {
        Cmd::Report(a) => report_cmd::run(a).map(|_| 0),
        Cmd::Annotate(a) => annotate_cmd::run(a).map(|_| 0),
        Cmd::Bpf(a) => bpf_cmd::run(a).map(|_| 0),
        Cmd::Record(a) => record_cmd::run(a),
        Cmd::Export(a) => export_cmd::run(a).map(|_| 0),
        Cmd::Script(a) => script_cmd::run(a).map(|_| 0),
        Cmd::Top(a) => top_cmd::run(a),
    };
    match r {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("bpfprof: {e:#}");
            std::process::exit(1);
        }
    }
}
