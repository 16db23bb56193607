//! `--sort srcline`: samples by source line — BPF programs' lines from
//! their BTF line info, user code's from DWARF — made from the profile's
//! per-address counts (`ip_hits`, `bpf_hits`), since a row key holds a
//! function, not an address.

use std::io::Write;

use super::render::ReportOptions;
use crate::analyze::profile::Profile;

/// The table by source line, as perf's `--sort srcline` prints it.
pub fn stdio(
    _p: &Profile,
    _o: &ReportOptions,
    _width: Option<usize>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    writeln!(out, "# --sort srcline is not built yet")
}

/// The same rows as JSON.
pub fn json(_p: &Profile, _o: &ReportOptions, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "{{\"rows\": []}}")
}
