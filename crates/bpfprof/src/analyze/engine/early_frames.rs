//! Frames resolved while the replay waits for the reader.
//!
//! The replay turns addresses into locations; the frames (symbols) of those
//! locations were all resolved after the pass, on one core, while the
//! other had nothing left to do. Once a location's symbols are loaded its
//! frame can no longer change, so the replay resolves what it can whenever
//! no batch of records is ready, and the pass after it only finishes the
//! rest.

use crate::analyze::profile::Counts;
use crate::symbolize::{CommId, Frame, Loc, Symbolizer};

/// How many locations one step resolves before looking for a batch again.
const STEP: usize = 1024;

/// The frame of a location not resolved yet.
pub const NONE: Frame = Frame {
    dso: u32::MAX,
    sym: u32::MAX,
};

/// Frames of location-stack nodes and of location rows, by index, as far
/// as resolved.
#[derive(Default)]
pub struct EarlyFrames {
    nodes: Vec<Frame>,
    rows: Vec<Frame>,
}

/// A location row's key. With threads merged, command, pid and tid are
/// 0; without [`crate::analyze::ProfileOptions::cpus`], so is the CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LocKey {
    pub comm: CommId,
    pub pid: u32,
    pub tid: u32,
    pub cpu: u16,
    pub loc: Loc,
}

impl LocKey {
    /// The key of a location with threads merged.
    pub fn merged(loc: Loc) -> LocKey {
        LocKey {
            comm: 0,
            pid: 0,
            tid: 0,
            cpu: 0,
            loc,
        }
    }
}

impl EarlyFrames {
    /// Resolve up to [`STEP`] more locations whose symbols are loaded;
    /// false when there was nothing to do. With `stacks`, frames are also
    /// remembered by the symbolizer (stack nodes and rows share locations).
    pub fn step(
        &mut self,
        sym: &mut Symbolizer,
        nodes: &[(u32, Loc)],
        rows: &[(LocKey, Counts)],
        stacks: bool,
    ) -> bool {
        sym.take_loaded();
        let mut left = STEP;
        let mut one = |loc: Loc| match sym.can_resolve(loc) {
            false => NONE,
            true if stacks => sym.frame(loc),
            true => sym.resolve(loc),
        };
        while left > 0 && self.nodes.len() < nodes.len() {
            self.nodes.push(one(nodes[self.nodes.len()].1));
            left -= 1;
        }
        while left > 0 && self.rows.len() < rows.len() {
            self.rows.push(one(rows[self.rows.len()].0.loc));
            left -= 1;
        }
        left < STEP
    }

    pub fn node(&self, i: usize) -> Option<Frame> {
        self.nodes.get(i).copied().filter(|f| *f != NONE)
    }

    pub fn row(&self, i: usize) -> Option<Frame> {
        self.rows.get(i).copied().filter(|f| *f != NONE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbolize::BpfSymbols;

    #[test]
    fn frames_resolved_early_are_the_frames_resolved_late_and_bpf_waits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kallsyms");
        std::fs::write(
            &path,
            "ffffffff81000000 T _text\nffffffff81000100 t do_thing\nffffffff81000200 t other\n",
        )
        .unwrap();
        let mut bpf = BpfSymbols::default();
        bpf.register(0xffffffffc0000000, 0x100, "bpf_prog_1234_x", 1);
        let mut early_sym = Symbolizer::new(path.clone(), bpf);
        let b = early_sym.bpf.lookup(0xffffffffc0000010).unwrap();
        let nodes = [
            (0, Loc::Kernel(0xffffffff81000110)),
            (1, Loc::Bpf(b)),
            (1, Loc::Kernel(0xffffffff81000210)),
        ];
        let mut early = EarlyFrames::default();
        // Kernel locations wait for kallsyms.
        early_sym.finish_loading();
        assert!(early.step(&mut early_sym, &nodes, &[], true));
        assert!(
            early.node(1).is_none(),
            "a BPF frame waits for the pass to end"
        );
        let mut late_sym = Symbolizer::new(path, BpfSymbols::default());
        late_sym.finish_loading();
        for i in [0, 2] {
            let (e, l) = (early.node(i).unwrap(), late_sym.frame(nodes[i].1));
            assert_eq!(
                early_sym.syms[e.sym as usize].name,
                late_sym.syms[l.sym as usize].name
            );
        }
        assert!(
            !early.step(&mut early_sym, &nodes, &[], true),
            "nothing left"
        );
    }
}
