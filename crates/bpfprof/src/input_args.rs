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
    /// Accepted for perf compatibility; output is always plain text.
    #[arg(long, hide = true)]
    pub stdio: bool,
}

impl InputArgs {
    /// Open the recording.
    pub fn open(&self) -> Result<perfdata::PerfFile> {
        perfdata::PerfFile::open(&self.input).with_context(|| {
            format!(
                "cannot read {} (record one with `bpfprof record`)",
                self.input.display()
            )
        })
    }

    /// Build the profile of an opened recording.
    pub fn build(&self, file: &perfdata::PerfFile, opts: ProfileOptions) -> Result<Profile> {
        Profile::build(
            file,
            &ProfileOptions {
                kallsyms: self.kallsyms.clone(),
                symfs: self.symfs.clone(),
                ..opts
            },
        )
    }
}
