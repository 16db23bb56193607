//! What `report` and `annotate` share: the recording to read and where
//! symbols come from.

use std::path::PathBuf;

use anyhow::{Context, Result};
use bpfprof::analyze::{Profile, ProfileOptions};

#[derive(Debug, clap::Args)]
pub struct InputArgs {
    /// Input file.
    #[arg(short = 'i', long = "input", default_value = "perf.data")]
    pub input: PathBuf,
    /// Kernel symbols from this file instead of /proc/kallsyms.
    #[arg(long)]
    pub kallsyms: Option<PathBuf>,
    /// Look for binaries under this directory.
    #[arg(long)]
    pub symfs: Option<PathBuf>,
    /// Plain text even on a terminal, where `report` otherwise opens its
    /// interface (as perf report does); other commands always print text.
    #[arg(long)]
    pub stdio: bool,
}

impl InputArgs {
    /// Open the recording.
    pub fn open(&self) -> Result<perfdata::PerfFile> {
        match perfdata::PerfFile::open(&self.input) {
            Ok(f) => Ok(f),
            // The first thing a newcomer sees: what is missing and the two
            // ways out, in one line, without the OS error's words.
            Err(perfdata::Error::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                anyhow::bail!(
                    "{}: no such file; record one with `bpfprof record`, or name another with -i FILE",
                    self.input.display()
                )
            }
            // The error names the file (and the OS error is its source).
            Err(e) => Err(e).context("cannot read the recording"),
        }
    }

    /// Build the profile of an opened recording.
    pub fn build(&self, file: &perfdata::PerfFile, opts: ProfileOptions) -> Result<Profile> {
        bpfprof::analyze::build(
            file,
            &ProfileOptions {
                kallsyms: self.kallsyms.clone(),
                symfs: self.symfs.clone(),
                ..opts
            },
        )
    }
}
