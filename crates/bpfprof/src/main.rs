//! The `bpfprof` command line: perf's habits, thin wiring over the library.

mod report_cmd;

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
}

fn main() {
    let cli = Cli::parse();
    let r = match &cli.cmd {
        Cmd::Report(a) => report_cmd::run(a).map(|_| 0),
    };
    match r {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("bpfprof: {e:#}");
            std::process::exit(1);
        }
    }
}
