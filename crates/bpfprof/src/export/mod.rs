//! Exports of a profile to the formats other tools read: collapsed
//! stacks, flame graphs, pprof, the Firefox Profiler and one HTML file.
//!
//! Every format is fed the same way: [`for_each_stack`] walks the
//! profile's stacks (or, without call chains, its rows) once, outermost
//! frame first, and each format keeps what it needs. BPF frames keep
//! their names (`bpf_prog_<tag>_<func>`) everywhere; [`BpfFrames`] adds
//! what only bpfprof knows about them (program id, tag, sub-program,
//! source line).

mod bpf_frames;
pub mod firefox;
pub mod folded;
pub mod html;
pub mod pprof;
mod pprof_proto;
pub mod script;
pub mod svg;

pub use bpf_frames::{BpfFrame, BpfFrames};

use std::borrow::Cow;

use crate::analyze::profile::{Counts, Profile, RowKey, SampleAt};
use crate::analyze::table::Filters;
use crate::symbolize::{CommId, DsoKind, Frame};

/// What an export can fail on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    #[error("writing the export: {0}")]
    Io(#[from] std::io::Error),
    #[error("reading the recording: {0}")]
    Read(#[from] perfdata::Error),
}

/// One frame of a stack: its resolved frame, and the stack node it came
/// from (0 in a flat profile), which locates it to the instruction.
#[derive(Debug, Clone, Copy)]
pub struct StackFrame {
    pub frame: Frame,
    pub node: u32,
}

/// Call each stack the filters keep with its row key (thread and leaf),
/// its frames outermost first and its counts. Without call chains each
/// row is a stack of one frame. Stacks may repeat (a key per location
/// stack): formats merge as they go.
pub fn for_each_stack(
    p: &Profile,
    filters: &Filters,
    mut f: impl FnMut(&RowKey, &[StackFrame], Counts),
) {
    let mut frames: Vec<StackFrame> = Vec::with_capacity(64);
    if p.chains.is_empty() {
        for (k, c) in &p.rows {
            if filters.keep(p, k) {
                let one = [StackFrame {
                    frame: k.frame,
                    node: 0,
                }];
                f(k, &one, *c);
            }
        }
        return;
    }
    for ((k, leaf), c) in &p.chains {
        if !filters.keep(p, k) {
            continue;
        }
        frames.clear();
        let mut node = *leaf;
        while node != 0 {
            let (parent, frame) = p.stacks.nodes[node as usize];
            frames.push(StackFrame { frame, node });
            node = parent;
        }
        if frames.is_empty() {
            // A sample without a chain: its own frame is all there is.
            frames.push(StackFrame {
                frame: k.frame,
                node: 0,
            });
        }
        frames.reverse();
        f(k, &frames, *c);
    }
}

/// A frame's name as flame graph tools show it: the symbol, or for code
/// without one `[object]` (as stackcollapse-perf.pl names it), with `;`
/// (the folded format's separator) turned into `:`.
pub fn frame_name(p: &Profile, f: Frame) -> Cow<'_, str> {
    let sym = &p.sym.syms[f.sym as usize];
    let name: Cow<str> = match sym.resolved {
        true => Cow::Borrowed(sym.name.as_str()),
        false => {
            let d = &p.sym.dsos[f.dso as usize];
            match d.kind {
                DsoKind::Unknown => Cow::Borrowed("[unknown]"),
                _ => Cow::Owned(format!("[{}]", d.short)),
            }
        }
    };
    match name.contains(';') {
        true => Cow::Owned(name.replace(';', ":")),
        false => name,
    }
}

/// The command of a row, as the first frame of a folded stack.
pub fn comm_name<'p>(p: &'p Profile, k: &RowKey) -> &'p str {
    comm_text(p, k.comm)
}

/// A command's name, `[unknown]` for none.
pub fn comm_text(p: &Profile, c: CommId) -> &str {
    p.sym
        .threads
        .comms
        .get(c as usize)
        .map_or("[unknown]", String::as_str)
}

/// Whether a frame is BPF code (a program, trampoline or dispatcher).
pub fn is_bpf(p: &Profile, f: Frame) -> bool {
    p.sym.dsos[f.dso as usize].kind == DsoKind::Bpf
}

/// Call each sample, of every event, in time order with its record (for
/// what the profile does not keep: cpu, time, period, the raw chain) and
/// where the ordered pass settled it ([`SampleAt::attr`] says which
/// event). The profile must have been built from `file` with `samples`:
/// both walk the records in one order.
pub fn for_each_sample(
    file: &perfdata::PerfFile,
    p: &Profile,
    mut f: impl FnMut(&perfdata::Sample, &SampleAt) -> Result<(), ExportError>,
) -> Result<(), ExportError> {
    let mut records = file.records()?;
    let mut settled = p.samples.iter();
    while let Some(r) = records.next()? {
        let perfdata::Record::Sample(s) = r.record else {
            continue;
        };
        let Some(at) = settled.next() else { break };
        f(&s, at)?;
    }
    Ok(())
}
