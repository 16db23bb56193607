//! `bpfprof export`: a recording as collapsed stacks, a flame graph, a
//! pprof or Firefox Profiler profile, or one HTML report, for the tools
//! people already use.

use std::fs::OpenOptions;
use std::io::{BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use bpfprof::analyze::profile::has_callchains;
use bpfprof::analyze::table::Filters;
use bpfprof::analyze::ProfileOptions;
use bpfprof::export;

use crate::input_args::InputArgs;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Collapsed stacks, `comm;outermost;…;leaf count` (flamegraph.pl, inferno).
    Folded,
    /// An interactive flame graph; BPF frames in a colour of their own.
    Svg,
    /// Gzipped profile.proto (go tool pprof, Pyroscope, Parca).
    Pprof,
    /// The Firefox Profiler's format (open it at profiler.firefox.com).
    Firefox,
    /// One self-contained HTML report: summary, BPF programs, source
    /// lines, flame graph.
    Html,
}

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// What to write.
    #[arg(long, value_enum)]
    pub format: Format,
    /// Output file (created mode 0600); `-` or none: standard output.
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Only these commands (comma-separated).
    #[arg(long = "comm", alias = "comms", value_delimiter = ',')]
    pub comms: Vec<String>,
    /// Only these process ids (comma-separated).
    #[arg(long = "pid", value_delimiter = ',')]
    pub pids: Vec<u32>,
    /// Only these thread ids (comma-separated).
    #[arg(long = "tid", value_delimiter = ',')]
    pub tids: Vec<u32>,
    /// Only samples whose leaf is in these shared objects (short or full
    /// names, comma-separated).
    #[arg(long = "dso", alias = "dsos", value_delimiter = ',')]
    pub dsos: Vec<String>,
}

/// Standard output, or a new file only its owner can read: profiles
/// reveal kernel addresses and command lines.
pub fn open_output(path: Option<&Path>) -> Result<Box<dyn Write>> {
    match path {
        None => Ok(Box::new(BufWriter::new(std::io::stdout().lock()))),
        Some(p) if p == Path::new("-") => Ok(Box::new(BufWriter::new(std::io::stdout().lock()))),
        Some(p) => {
            let f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(p)
                .with_context(|| format!("cannot create {}", p.display()))?;
            Ok(Box::new(BufWriter::new(f)))
        }
    }
}

pub fn run(a: &ExportArgs) -> Result<()> {
    let file = a.input.open()?;
    // Before the work, so that an unwritable output fails at once.
    let mut out = open_output(a.output.as_deref())?;
    let callchains = has_callchains(&file);
    if !callchains {
        eprintln!(
            "bpfprof: {} has no call chains (record with -g): the export is flat, one frame per stack",
            a.input.input.display()
        );
    }
    let p = a.input.build(
        &file,
        ProfileOptions {
            callchains,
            progress: true,
            // A timeline needs every sample at its time.
            samples: a.format == Format::Firefox,
            ..Default::default()
        },
    )?;
    for w in &p.warnings {
        eprintln!("bpfprof: warning: {w}");
    }
    let filters = Filters {
        comms: a.comms.clone(),
        pids: a.pids.clone(),
        tids: a.tids.clone(),
        dsos: a.dsos.clone(),
    };
    let what = || match &a.output {
        Some(o) if o != Path::new("-") => o.display().to_string(),
        _ => "standard output".into(),
    };
    let title = format!("{} ({})", a.input.input.display(), p.event);
    match a.format {
        Format::Folded => export::folded::write(&p, &filters, &mut out),
        Format::Svg => export::svg::write(&p, &filters, &title, &mut out),
        Format::Pprof => export::pprof::write(&p, &filters, &mut out),
        Format::Html => export::html::write(&p, &filters, &title, &mut out),
        Format::Firefox => export::firefox::write(&file, &p, &filters, &title, &mut out),
    }
    // The error says whether reading or writing failed; name both files.
    .with_context(|| format!("exporting {} to {}", a.input.input.display(), what()))?;
    out.flush().with_context(|| format!("writing {}", what()))?;
    Ok(())
}
