//! `bpfprof annotate`: where inside a function (BPF, kernel or user) the
//! time goes.

use std::io::{IsTerminal, Write};

use crate::input_args::InputArgs;
use anyhow::{bail, Context, Result};
use bpfprof::analyze::annotate::{self, AnnotateOptions, Selection, Target};
use bpfprof::analyze::annotate_render::{self, RenderOptions};
use bpfprof::analyze::ProfileOptions;

#[derive(Debug, clap::Args)]
pub struct AnnotateArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// A symbol: `bpf_prog_<tag>_<func>`, a BPF function name, or a kernel
    /// or user function. Without it (and without --prog), the 5 hottest BPF
    /// programs are annotated.
    pub symbol: Option<String>,
    /// Annotate every sub-program of BPF program ID that got samples.
    #[arg(long, conflicts_with = "symbol")]
    pub prog: Option<u32>,
    /// Per C source line: the summed share of its instructions.
    #[arg(long)]
    pub source: bool,
    /// The verified BPF bytecode with source lines and carried shares.
    #[arg(long, conflicts_with = "source")]
    pub xlated: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// How many BPF programs to annotate when none is named.
    #[arg(long, default_value_t = 5)]
    pub top: usize,
    /// Color hot instructions even when stdout is not a terminal.
    #[arg(long)]
    pub color: bool,
}

pub fn run(a: &AnnotateArgs) -> Result<()> {
    // Samples in the helpers and map operations a BPF program calls are
    // charged to its call sites from the call chains, so a file recorded
    // with -g gets the (slower) pass that reads them; without, as before.
    let file = a.input.open()?;
    let callchains = bpfprof::analyze::profile::has_callchains(&file);
    let profile = a.input.build(
        &file,
        ProfileOptions {
            ip_hits: true,
            callchains,
            progress: !a.json,
            ..Default::default()
        },
    )?;
    if profile.total.samples == 0 {
        bail!(
            "{} has no samples: nothing to annotate",
            a.input.input.display()
        );
    }
    let sel = match (&a.symbol, a.prog) {
        (Some(s), _) => Selection::Symbol(s.clone()),
        (None, Some(id)) => Selection::Prog(id),
        (None, None) => Selection::TopBpf(a.top),
    };
    let targets = annotate::annotate(
        &profile,
        &sel,
        file.features().arch.as_deref(),
        &AnnotateOptions {
            xlated: a.xlated,
            kcore: annotate::default_kcore().to_path_buf(),
            callchains,
        },
    );
    let stdout = std::io::stdout();
    let color = a.color || stdout.is_terminal();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let r = if a.json {
        annotate_render::json(&targets, &mut out)
    } else {
        annotate_render::stdio(
            &targets,
            &RenderOptions {
                source_only: a.source,
                xlated: a.xlated,
                color,
            },
            &mut out,
        )
    };
    match r.and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        r => r.context("writing the annotation")?,
    }
    if targets.iter().all(|t| matches!(t, Target::Unavailable(_))) {
        bail!("nothing could be annotated (see above)");
    }
    Ok(())
}
