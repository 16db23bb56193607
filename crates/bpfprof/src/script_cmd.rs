//! `bpfprof script`: every sample as `perf script` prints it.

use std::io::Write;

use anyhow::{Context, Result};
use bpfprof::analyze::profile::has_callchains;
use bpfprof::analyze::ProfileOptions;

use crate::input_args::InputArgs;

#[derive(Debug, clap::Args)]
pub struct ScriptArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Only samples of these commands (comma-separated), as perf script's.
    #[arg(long = "comm", value_delimiter = ',')]
    pub comms: Vec<String>,
    /// Only samples of these process ids (comma-separated).
    #[arg(long = "pid", value_delimiter = ',')]
    pub pids: Vec<u32>,
    /// Only samples of these thread ids (comma-separated).
    #[arg(long = "tid", value_delimiter = ',')]
    pub tids: Vec<u32>,
}

pub fn run(a: &ScriptArgs) -> Result<()> {
    let file = a.input.open()?;
    let p = a.input.build(
        &file,
        ProfileOptions {
            callchains: has_callchains(&file),
            samples: true,
            progress: true,
            ..Default::default()
        },
    )?;
    for w in &p.warnings {
        eprintln!("bpfprof: warning: {w}");
    }
    let mut out = crate::export_cmd::open_output(None)?;
    let path = a.input.input.display();
    let only = bpfprof::export::script::Only {
        comms: a.comms.clone(),
        pids: a.pids.clone(),
        tids: a.tids.clone(),
    };
    let left_out = bpfprof::export::script::write(&file, &p, &only, &mut out)
        .with_context(|| format!("{path}"))?;
    out.flush().context("writing standard output")?;
    for (event, n) in left_out {
        eprintln!(
            "bpfprof: {n} samples of the tracepoint event {event} not printed: their fields are not decoded (perf script prints them)"
        );
    }
    Ok(())
}
