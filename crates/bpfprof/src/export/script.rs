//! `perf script`'s default output, line for line, so that the tools built
//! on it (stackcollapse-perf.pl, inferno-collapse-perf, speedscope's perf
//! importer, people's own scripts) read bpfprof's view of a recording:
//! BPF frames resolved by the recording's own program events.
//!
//! The samples' header fields (cpu, time, period) come from the records,
//! read again in time order; their threads, locations and frames from the
//! profile's ordered pass ([`ProfileOptions::samples`]), so there is one
//! set of attribution rules.
//!
//! [`ProfileOptions::samples`]: crate::analyze::ProfileOptions::samples

use std::io::Write;

use perfdata::event_type;
use perfdata::sample_type::CPU;
use perfdata::PerfFile;

use super::{for_each_sample, ExportError};
use crate::analyze::profile::Profile;
use crate::symbolize::{DsoKind, Frame, Loc};

/// A frame as perf script prints it: address, symbol (+offset), object.
struct Line<'p> {
    addr: u64,
    sym: Option<(&'p str, u64)>,
    dso: &'p str,
}

/// Which samples to print, as perf script's `--comm`, `--pid` and
/// `--tid` choose them: the command a line shows, the sample's process
/// and thread. Empty lists keep all.
#[derive(Debug, Clone, Default)]
pub struct Only {
    pub comms: Vec<String>,
    pub pids: Vec<u32>,
    pub tids: Vec<u32>,
}

impl Only {
    fn keep(&self, comm: &str, s: &perfdata::Sample) -> bool {
        (self.comms.is_empty() || self.comms.iter().any(|c| c == comm))
            && (self.pids.is_empty() || self.pids.contains(&s.pid))
            && (self.tids.is_empty() || self.tids.contains(&s.tid))
    }
}

/// Write every sample, of every event, that `only` keeps, as `perf
/// script` does; the profile must have been built with `samples`. The
/// samples of tracepoint events are left out (perf prints their decoded
/// fields, which bpfprof does not decode): their number, by event name,
/// is returned for the caller to say so.
pub fn write(
    file: &PerfFile,
    p: &Profile,
    only: &Only,
    out: &mut dyn Write,
) -> Result<Vec<(String, u64)>, ExportError> {
    let attrs = file.attrs();
    // Tracepoint samples left out, by attr.
    let mut left_out = vec![0u64; attrs.len()];
    // perf right-aligns each event's name to the longest in the file.
    let width = attrs.iter().map(|a| a.name.len()).max().unwrap_or(0);
    let mut chain: Vec<u32> = Vec::with_capacity(128);
    for_each_sample(file, p, |s, at| {
        let comm = p
            .sym
            .threads
            .comms
            .get(at.key.comm as usize)
            .map_or(":-1", String::as_str);
        if !only.keep(comm, s) {
            return Ok(());
        }
        let attr = attrs.get(at.attr as usize);
        let event = attr.map_or("", |a| a.name.as_str());
        if attr.is_some_and(|a| a.attr.type_ == event_type::TRACEPOINT) {
            left_out[at.attr as usize] += 1;
            return Ok(());
        }
        let (secs, usecs) = (s.time / 1_000_000_000, s.time % 1_000_000_000 / 1000);
        chain.clear();
        let mut node = match corrupt(s.callchain()) {
            true => 0,
            false => at.node,
        };
        while node != 0 {
            chain.push(node);
            node = p.stacks.nodes[node as usize].0;
        }
        // perf pads the command to 16 columns only when no call chain
        // follows on lines of their own (even a chain it discards).
        let chained = s.callchain.is_some();
        match chained {
            false => write!(out, "{comm:>16} ")?,
            true => write!(out, "{comm} ")?,
        }
        // Signed, as perf prints the -1 of samples with no thread.
        write!(out, "{:5} ", s.tid as i32)?;
        // The CPU only where the samples record it (`-a`, `-C`).
        let cpu = attrs
            .get(at.attr as usize)
            .is_some_and(|a| a.attr.sample_type & CPU != 0);
        if cpu {
            write!(out, "[{:03}] ", s.cpu)?;
        }
        write!(
            out,
            "{secs:5}.{usecs:06}: {:10} {event:>width$}: ",
            s.period
        )?;
        if !chained {
            let l = line(p, at.key.frame, at.loc, s.ip, None);
            print_line(out, ' ', &l)?;
            writeln!(out)?;
            return Ok(());
        }
        writeln!(out)?;
        for &n in &chain {
            let (_, frame) = p.stacks.nodes[n as usize];
            let loc = p.stack_locs[n as usize];
            let l = line(p, frame, loc, 0, Some(n));
            print_line(out, '\t', &l)?;
            writeln!(out)?;
        }
        writeln!(out)?;
        Ok(())
    })?;
    Ok(attrs
        .iter()
        .zip(left_out)
        .filter(|&(_, n)| n > 0)
        .map(|(a, n)| (a.name.clone(), n))
        .collect())
}

/// Whether perf discards a call chain: one with a context marker it does
/// not know ("It seems the callchain is corrupted. Discard all.").
fn corrupt(mut chain: impl Iterator<Item = u64>) -> bool {
    use perfdata::context::*;
    chain.any(|ip| ip >= MAX && ![HV, KERNEL, USER, GUEST_KERNEL, GUEST_USER].contains(&ip))
}

fn print_line(out: &mut dyn Write, sep: char, l: &Line) -> std::io::Result<()> {
    write!(out, "{sep}{:16x} ", l.addr)?;
    match l.sym {
        Some((name, off)) => write!(out, "{name}+{off:#x}")?,
        None => write!(out, "[unknown]")?,
    }
    write!(out, " ({})", l.dso)
}

/// How perf script shows a frame: call chain entries at their address in
/// the object (`node` given), a sample's own address as sampled.
fn line<'p>(p: &'p Profile, f: Frame, loc: Loc, ip: u64, node: Option<u32>) -> Line<'p> {
    let sym = &p.sym.syms[f.sym as usize];
    let dso = &p.sym.dsos[f.dso as usize];
    let dso_name = match dso.kind {
        DsoKind::Unknown => "[unknown]",
        _ => dso.name.as_str(),
    };
    let (addr, off) = match loc {
        Loc::Kernel(a) => (a, a.wrapping_sub(sym.start)),
        Loc::Bpf(b) => {
            let start = p.sym.bpf.syms[b as usize].addr;
            let off = match node {
                Some(n) => p.bpf_offsets.get(&n).map_or(0, |&o| o as u64),
                None => ip.wrapping_sub(start),
            };
            (start + off, off)
        }
        Loc::User(d, rel) => {
            let vaddr = p.sym.elf(d).and_then(|e| e.offset_to_vaddr(rel));
            let addr = match node {
                Some(_) => rel,
                None => ip,
            };
            (addr, vaddr.unwrap_or(rel).wrapping_sub(sym.start))
        }
        Loc::Unknown(a) => (if node.is_some() { a } else { ip }, 0),
    };
    Line {
        addr,
        sym: sym.resolved.then_some((sym.name.as_str(), off)),
        dso: dso_name,
    }
}
