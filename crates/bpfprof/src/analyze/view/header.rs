//! `report --header` and `--header-only`: the recording's header and
//! feature sections as perf prints them.

use std::io::Write;

use perfdata::PerfFile;

/// The `# ========` block perf's `--header` prints before the report.
pub fn print(file: &PerfFile, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "# ========")?;
    if let Some(h) = &file.features().hostname {
        writeln!(out, "# hostname : {h}")?;
    }
    writeln!(out, "# ========")?;
    writeln!(out, "#")
}
