//! Counts by location turned into the model's rows and stacks, once every
//! symbol source is loaded.

use super::early_frames::{self, EarlyFrames, LocKey};
use super::{Counted, Engine};
use crate::analyze::profile::{RowKey, SampleAt, Stacks};
use crate::symbolize::{DsoId, Frame, Loc, Symbolizer};

impl Engine {
    /// Resolve what is counted into the profile's rows, stacks, chains and
    /// BPF cost, replacing what an earlier call left there.
    pub(super) fn resolve(&mut self) {
        let Engine {
            p,
            opts,
            kallsyms_path,
            counted,
            sampling,
            ..
        } = self;
        // Counts the memo still holds belong to their rows now.
        let Counted {
            rows,
            loc_nodes,
            chains,
            bpf_offsets,
            early,
            samples,
            other_rows,
            row_cache,
            ..
        } = counted;
        for (r, c) in row_cache.drain() {
            rows.rows[r as usize].1.merge(c);
        }
        let loc_rows = &rows.rows;
        p.sym.finish_loading();
        if p.sym.kallsyms.restricted {
            let w = format!(
                "{}: kernel addresses are hidden (kptr_restrict): kernel symbols show as addresses; run as root or set kernel.kptr_restrict=0",
                kallsyms_path.display()
            );
            if !p.warnings.contains(&w) {
                p.warnings.push(w);
            }
        }
        // In address order, so that the symbol tables are walked forward
        // rather than probed at random.
        let mut order: Vec<(Loc, u32)> = loc_rows
            .iter()
            .enumerate()
            .map(|(i, r)| (r.0.loc, i as u32))
            .collect();
        sort_mostly_sorted(&mut order);
        p.rows.clear();
        p.ip_hits.clear();
        p.rows.reserve(order.len());
        let mut last: Option<(Loc, Frame)> = None;
        // Each location row's key, by row: chains refer to rows (a flat
        // profile has none, and needs no keys).
        let mut row_keys: Vec<Option<RowKey>> = match chains.is_empty() && !opts.samples {
            true => Vec::new(),
            false => vec![None; loc_rows.len()],
        };
        // The user functions of the rows resolved below, looked up first
        // on every core: the lookups only read.
        let users = match opts.callchains {
            true => Vec::new(),
            false => users_to_resolve(&order, early),
        };
        let frames = p.sym.resolve_users(&users);
        // Taken by location, so that a row the lookups skipped is resolved
        // here rather than handed another row's frame.
        let mut user_frames = users.iter().zip(frames).peekable();
        for &(loc, r) in &order {
            let (
                LocKey {
                    comm,
                    pid,
                    tid,
                    cpu,
                    ..
                },
                c,
            ) = loc_rows[r as usize];
            let frame = match (early.row(r as usize), last) {
                (Some(f), _) => f,
                (None, Some((l, f))) if l == loc => f,
                // Stacks ask again for the locations they hold.
                _ if opts.callchains => p.sym.frame(loc),
                _ => match loc {
                    Loc::User(dso, rel) => match user_frames.next_if(|(&u, _)| u == (dso, rel)) {
                        Some((_, f)) => f,
                        None => p.sym.resolve(loc),
                    },
                    _ => p.sym.resolve(loc),
                },
            };
            last = Some((loc, frame));
            let key = RowKey {
                comm,
                pid,
                tid,
                cpu,
                frame,
            };
            if let Some(k) = row_keys.get_mut(r as usize) {
                *k = Some(key);
            }
            p.rows.push((key, c));
            if opts.ip_hits {
                let addr = match loc {
                    Loc::Kernel(a) => Some(a),
                    Loc::User(dso, rel) => Some(
                        p.sym
                            .elf(dso)
                            .and_then(|e| e.offset_to_vaddr(rel))
                            .unwrap_or(rel),
                    ),
                    _ => None,
                };
                if let Some(a) = addr {
                    let h = p.ip_hits.entry((frame.sym, a)).or_default();
                    h.samples += c.samples;
                    h.period += c.period;
                }
            }
        }
        p.stacks = Stacks {
            nodes: stack_frames(&mut p.sym, loc_nodes, early),
        };
        if opts.samples {
            p.stack_locs = loc_nodes.iter().map(|n| n.1).collect();
            // Other events' rows are few and printed only: each is
            // resolved as it comes.
            let other_keys: Vec<RowKey> = other_rows
                .rows
                .iter()
                .map(|&(k, _)| RowKey {
                    comm: k.comm,
                    pid: k.pid,
                    tid: k.tid,
                    cpu: k.cpu,
                    frame: p.sym.frame(k.loc),
                })
                .collect();
            let sampling = *sampling as u16;
            p.samples = samples
                .iter()
                .filter_map(|&(attr, row, node)| {
                    let (key, loc) = match attr == sampling {
                        true => (row_keys[row as usize]?, loc_rows[row as usize].0.loc),
                        false => (
                            other_keys[row as usize],
                            other_rows.rows[row as usize].0.loc,
                        ),
                    };
                    Some(SampleAt {
                        attr,
                        key,
                        loc,
                        node,
                    })
                })
                .collect();
        }
        p.chains = chains
            .iter()
            .filter_map(|((row, node), c)| Some(((row_keys[row as usize]?, node), c)))
            .collect();
        let mut first_of: rustc_hash::FxHashMap<&str, u32> = Default::default();
        p.dso_groups = (0..p.sym.dsos.len() as u32)
            .map(|d| *first_of.entry(&p.sym.dsos[d as usize].short).or_insert(d))
            .collect();
        if p.first_time == u64::MAX {
            p.first_time = 0;
        }
        p.bpf_offsets = bpf_offsets.clone();
        if opts.callchains {
            let cost = crate::analyze::bpf_cost::BpfCost::compute(p, None);
            p.bpf_calls = cost.calls.clone();
            p.bpf_cost = Some(cost);
        }
    }
}

/// The frame stacks, which mirror the location stacks node for node, so
/// that nothing is interned again (readers merge frames as they go).
///
/// A big recording's stacks have millions of nodes, and after the replay
/// one core resolved those it had not reached while the other idled: so
/// the frames already known are looked up on every core (the lookups only
/// read), and only the locations none of them knew are resolved here, in
/// node order, as they were one by one.
fn stack_frames(
    sym: &mut Symbolizer,
    loc_nodes: &[(u32, Loc)],
    early: &EarlyFrames,
) -> Vec<(u32, Frame)> {
    let mut nodes: Vec<(u32, Frame)> = vec![(0, early_frames::NONE); loc_nodes.len()];
    let known = sym.known_frames();
    crate::parallel::for_parts_mut(&mut nodes, 1 << 16, |start, part| {
        for (i, n) in (start..).zip(part) {
            let (parent, loc) = loc_nodes[i];
            let frame = early.node(i).or_else(|| known.get(loc));
            *n = (parent, frame.unwrap_or(early_frames::NONE));
        }
    });
    for (n, &(_, loc)) in nodes.iter_mut().zip(loc_nodes) {
        if n.1 == early_frames::NONE {
            n.1 = sym.frame(loc);
        }
    }
    nodes
}

/// Sort rows by location. The flat pass leaves them mostly in order, and
/// a stable sort merges the runs it finds where the unstable one would
/// start over; other passes leave them in no order, which the unstable
/// one sorts faster.
fn sort_mostly_sorted(order: &mut [(Loc, u32)]) {
    let run = order.windows(2).take_while(|w| w[0] <= w[1]).count() + 1;
    match run >= order.len() / 2 {
        true => order.sort(),
        false => order.sort_unstable(),
    }
}

/// The user locations that `resolve` resolves, in its order: those of
/// rows with no early frame, each once per run of equal locations.
fn users_to_resolve(order: &[(Loc, u32)], early: &EarlyFrames) -> Vec<(DsoId, u64)> {
    let mut prev = None;
    let fresh = |&(loc, r): &(Loc, u32)| {
        let fresh = early.row(r as usize).is_none() && prev != Some(loc);
        prev = Some(loc);
        match loc {
            Loc::User(dso, rel) if fresh => Some((dso, rel)),
            _ => None,
        }
    };
    order.iter().filter_map(fresh).collect()
}
