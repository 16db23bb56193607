//! Collapsed stacks (`comm;outermost;…;leaf count`), the input of
//! FlameGraph's flamegraph.pl, inferno, speedscope and many scripts.

use std::collections::BTreeMap;
use std::io::Write;

use super::{comm_name, for_each_stack, frame_name, ExportError};
use crate::analyze::profile::Profile;
use crate::analyze::table::Filters;

/// Each distinct stack once with its sample count, sorted as
/// stackcollapse-perf.pl sorts them (so equal inputs diff cleanly).
pub fn lines(p: &Profile, filters: &Filters) -> BTreeMap<String, u64> {
    let mut out: BTreeMap<String, u64> = BTreeMap::new();
    let mut line = String::with_capacity(512);
    for_each_stack(p, filters, |k, frames, c| {
        line.clear();
        line.push_str(&comm_name(p, k).replace(';', ":"));
        for f in frames {
            line.push(';');
            line.push_str(&frame_name(p, f.frame));
        }
        match out.get_mut(line.as_str()) {
            Some(n) => *n += c.samples,
            None => {
                out.insert(line.clone(), c.samples);
            }
        }
    });
    out
}

/// Write the collapsed stacks.
pub fn write(p: &Profile, filters: &Filters, out: &mut dyn Write) -> Result<(), ExportError> {
    for (stack, n) in lines(p, filters) {
        writeln!(out, "{stack} {n}")?;
    }
    Ok(())
}
