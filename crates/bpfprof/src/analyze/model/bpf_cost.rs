//! What each BPF program costs, in parts, from the recorded call chains.
//!
//! Each sample's chain is walked from the leaf outwards, through kernel
//! frames only:
//! - the leaf is in a program's code: **self**;
//! - the innermost BPF frame is a program's but not the leaf (a helper, a
//!   map operation, a kfunc): **called**, for that program; sub-programs
//!   count to their program, and a tail-called program to itself, since
//!   its frame replaces its caller's;
//! - a hook frame of `bpf_hooks.rs` comes before any program frame: the
//!   attach mechanism ran because something is attached there — **hook**.
//!   Such samples are gathered per attach site and split between the
//!   programs at that site: by their run counts where the recording has
//!   the kernel's stats for each, else by their own samples at the site.
//!   Which programs sit at a site is learnt from their own samples (the
//!   frames above a program name its site), else from the attachments
//!   the recorder captured, else from the attach type alone.
//!
//! The walk's outcome depends only on the stack, so it is worked out once
//! per stack node and reused by every row that ends there.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use super::bpf_hooks::{self, Attach, Role, SiteKey};
use super::profile::{Counts, Filters, Profile};
use crate::symbolize::{BpfSymId, SymId};

/// One program's cost.
#[derive(Debug, Clone, Default)]
pub struct ProgCost {
    /// Samples in the program's own JIT code, all sub-programs.
    pub own: Counts,
    /// Samples in kernel code the program called.
    pub called: Counts,
    /// Its share of the hook samples at its sites.
    pub hook: Counts,
    /// Its share of the hook, per site.
    pub hook_sites: BTreeMap<Site, Counts>,
    /// Sites seen above the program in its own samples, with those
    /// samples (the weights of a split by samples).
    pub seen_at: BTreeMap<SiteKey, Counts>,
}

impl ProgCost {
    pub fn total(&self) -> Counts {
        let mut t = self.own;
        t.merge(self.called);
        t.merge(self.hook);
        t
    }
}

/// Where hook samples were spent.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Site {
    /// An attach site: attach type and what it names.
    At(SiteKey),
    /// The syscall slow path, taken while a syscall tracepoint is on.
    SyscallSlowPath,
}

impl Site {
    pub fn describe(&self) -> String {
        match self {
            Site::At((a, s)) if s.is_empty() => a.name().to_string(),
            Site::At((a, s)) => format!("{} {s}", a.name()),
            Site::SyscallSlowPath => "syscall slow path".to_string(),
        }
    }
}

/// How one site's hook samples were split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SplitBy {
    /// One program: all of it.
    Alone,
    /// The kernel's run counts of the programs there.
    RunCount,
    /// The programs' own samples at the site.
    Samples,
    /// Evenly: no run counts and no samples to weigh by.
    Evenly,
}

/// The hook samples of one site and who took them.
#[derive(Debug, Clone)]
pub struct SiteShare {
    pub site: Site,
    pub counts: Counts,
    /// Empty when no program could be charged.
    pub progs: Vec<(u32, Counts)>,
    pub split_by: Option<SplitBy>,
}

/// What the kernel's run-time stats cost: the clock reads around each run.
#[derive(Debug, Clone, Copy, Default)]
pub struct StatsCost {
    pub samples: Counts,
    /// Runs of the programs over the recording.
    pub runs: u64,
}

/// The cost of every program in a profile.
#[derive(Debug, Clone, Default)]
pub struct BpfCost {
    pub progs: BTreeMap<u32, ProgCost>,
    pub sites: Vec<SiteShare>,
    /// Hook samples at sites where no program was found.
    pub unclaimed: Counts,
    /// (registration, return-address offset) → samples in what that call
    /// reached.
    pub calls: FxHashMap<(BpfSymId, u32), Counts>,
    /// Present when the recording has run counts.
    pub stats: Option<StatsCost>,
}

/// What a frame's function says to the walk.
#[derive(Debug, Clone, Copy)]
enum Class {
    Other,
    User,
    Prog(u32, BpfSymId),
    /// A BPF symbol of no known program (a cBPF filter, an image).
    BpfUnknown,
    Hook(Role, Option<u32>),
}

/// Where a stack's walk ended.
#[derive(Debug, Clone, Copy)]
enum Outcome {
    Nothing,
    /// `calls`: a range of [`Walker::calls`], the call sites of the
    /// program's frames above the leaf (a sub-program's caller, a helper's).
    Own {
        prog: u32,
        site: Option<u32>,
        calls: (u32, u32),
    },
    Called {
        prog: u32,
        site: Option<u32>,
        calls: (u32, u32),
    },
    Hook {
        site: u32,
        stats: bool,
    },
    SlowPath,
}

struct Walker<'p> {
    p: &'p Profile,
    classes: Vec<Option<Class>>,
    sites: Vec<SiteKey>,
    site_ids: FxHashMap<SiteKey, u32>,
    /// Call sites (registration, return-address offset) of the outcomes.
    calls: Vec<(BpfSymId, u32)>,
}

impl<'p> Walker<'p> {
    fn site(&mut self, k: SiteKey) -> u32 {
        if let Some(&i) = self.site_ids.get(&k) {
            return i;
        }
        self.sites.push(k.clone());
        self.site_ids.insert(k, self.sites.len() as u32 - 1);
        self.sites.len() as u32 - 1
    }

    fn class(&mut self, s: SymId) -> Class {
        if let Some(c) = self.classes[s as usize] {
            return c;
        }
        let p = self.p;
        let sym = &p.sym.syms[s as usize];
        let c = if let Some(b) = sym.bpf {
            let bs = &p.sym.bpf.syms[b as usize];
            match (bs.prog, bs.image) {
                (Some((id, _)), false) => Class::Prog(id, b),
                _ => self.hook_class(&bs.name).unwrap_or(Class::BpfUnknown),
            }
        } else if !p.sym.dsos[sym.dso as usize].is_kernel() {
            Class::User
        } else {
            self.hook_class(&sym.name).unwrap_or(Class::Other)
        };
        self.classes[s as usize] = Some(c);
        c
    }

    fn hook_class(&mut self, name: &str) -> Option<Class> {
        let (role, rest) = bpf_hooks::role(name)?;
        let site = match role {
            Role::Site(a, fixed) => Some(self.site(bpf_hooks::site_of(a, fixed, rest))),
            _ => None,
        };
        Some(Class::Hook(role, site))
    }

    /// Walk one stack, leaf first.
    fn walk(&mut self, leaf: u32) -> Outcome {
        let p = self.p;
        let mut node = leaf;
        let mut depth = 0;
        // (program, depth) of the innermost program frame.
        let mut prog: Option<(u32, u32)> = None;
        let first_call = self.calls.len() as u32;
        let mut dispatch: Option<(Attach, bool)> = None;
        let mut from_caller: Option<Attach> = None;
        let mut clock = false;
        let mut site: Option<u32> = None;
        while node != 0 {
            let (parent, frame) = p.stacks.nodes[node as usize];
            let class = self.class(frame.sym);
            if let (Some(a), Class::Other) = (from_caller, class) {
                // The function a kprobe-like hook fired in names its site.
                let name = &p.sym.syms[frame.sym as usize].name;
                site = Some(self.site((a, name.to_string())));
                break;
            }
            let undecided = prog.is_none() && dispatch.is_none();
            match class {
                Class::User => break,
                Class::Other => {
                    if undecided {
                        clock |= bpf_hooks::is_stats_clock(&p.sym.syms[frame.sym as usize].name);
                    }
                }
                Class::Prog(id, b) => {
                    match prog {
                        None if dispatch.is_none() => prog = Some((id, depth)),
                        Some((same, _)) if same == id => {}
                        _ => break,
                    }
                    if depth > 0 {
                        if let Some(&off) = p.bpf_offsets.get(&node) {
                            self.calls.push((b, off));
                        }
                    }
                }
                Class::BpfUnknown => break,
                Class::Hook(role, s) => match role {
                    Role::Dispatch(a) | Role::DispatchFromCaller(a) => {
                        if dispatch.is_none() {
                            let runs =
                                bpf_hooks::runs_program(&p.sym.syms[frame.sym as usize].name);
                            dispatch = Some((a, runs));
                        }
                        if let Role::DispatchFromCaller(a) = role {
                            from_caller = Some(a);
                        }
                    }
                    Role::Site(a, _) => {
                        site = s;
                        if undecided {
                            dispatch = Some((a, false));
                        }
                        break;
                    }
                    Role::SyscallSlowPath if undecided => return Outcome::SlowPath,
                    Role::SyscallSlowPath | Role::NotBpf => break,
                },
            }
            node = parent;
            depth += 1;
        }
        let calls = (first_call, self.calls.len() as u32);
        match (prog, dispatch) {
            (Some((prog, 0)), _) => Outcome::Own { prog, site, calls },
            (Some((prog, _)), _) => Outcome::Called { prog, site, calls },
            (None, Some((a, runs))) => Outcome::Hook {
                site: site.unwrap_or_else(|| self.site((a, String::new()))),
                stats: clock && runs,
            },
            (None, None) => Outcome::Nothing,
        }
    }
}

impl BpfCost {
    /// The cost of every program, over the samples `filters` keeps (by
    /// command and process only: a program's called code is in other
    /// shared objects than its own).
    pub fn compute(p: &Profile, filters: Option<&Filters>) -> BpfCost {
        let mut w = Walker {
            p,
            classes: vec![None; p.sym.syms.len()],
            sites: Vec::new(),
            site_ids: FxHashMap::default(),
            calls: Vec::new(),
        };
        let mut cost = BpfCost::default();
        if p.sym.bpf.syms.is_empty() {
            return cost;
        }
        let filters = filters.map(|f| Filters {
            dsos: Vec::new(),
            ..f.clone()
        });
        let mut outcomes: FxHashMap<u32, Outcome> = FxHashMap::default();
        let mut hook_at: FxHashMap<u32, Counts> = FxHashMap::default();
        let mut slow = Counts::default();
        let mut stats = Counts::default();
        let mut learned: Vec<(u32, u32, Counts)> = Vec::new();
        for ((key, node), c) in &p.chains {
            if filters.as_ref().is_some_and(|f| !f.keep(p, key)) {
                continue;
            }
            // Most stacks end in user code, where a walk stops at once:
            // the leaf's class says so without remembering the stack.
            let leaf = p.stacks.nodes[*node as usize].1;
            if *node == 0 || matches!(w.class(leaf.sym), Class::User) {
                continue;
            }
            let out = match outcomes.get(node) {
                Some(&o) => o,
                None => {
                    let o = w.walk(*node);
                    outcomes.insert(*node, o);
                    o
                }
            };
            match out {
                Outcome::Nothing => {}
                Outcome::Own { prog, site, calls } | Outcome::Called { prog, site, calls } => {
                    let pc = cost.progs.entry(prog).or_default();
                    match out {
                        Outcome::Own { .. } => pc.own.merge(*c),
                        _ => pc.called.merge(*c),
                    }
                    if let Some(s) = site {
                        learned.push((prog, s, *c));
                    }
                    for &k in &w.calls[calls.0 as usize..calls.1 as usize] {
                        cost.calls.entry(k).or_default().merge(*c);
                    }
                }
                Outcome::Hook { site, stats: s } => {
                    hook_at.entry(site).or_default().merge(*c);
                    if s {
                        stats.merge(*c);
                    }
                }
                Outcome::SlowPath => slow.merge(*c),
            }
        }
        for (prog, s, c) in learned {
            let k = w.sites[s as usize].clone();
            cost.progs
                .entry(prog)
                .or_default()
                .seen_at
                .entry(k)
                .or_default()
                .merge(c);
        }
        let mut hooks: Vec<(Site, Counts)> = hook_at
            .into_iter()
            .map(|(s, c)| (Site::At(w.sites[s as usize].clone()), c))
            .collect();
        if slow.samples > 0 {
            hooks.push((Site::SyscallSlowPath, slow));
        }
        hooks.sort_by(|a, b| a.0.cmp(&b.0));
        let attached = recorded_sites(p);
        for (site, c) in hooks {
            cost.charge(p, &attached, site, c);
        }
        let runs: u64 = p
            .progs
            .values()
            .filter_map(|r| r.info.as_ref())
            .map(|i| i.run_cnt)
            .sum();
        if runs > 0 {
            cost.stats = Some(StatsCost {
                samples: stats,
                runs,
            });
        }
        cost
    }

    /// Split one site's hook samples between the programs there.
    fn charge(
        &mut self,
        p: &Profile,
        attached: &BTreeMap<u32, Vec<SiteKey>>,
        site: Site,
        c: Counts,
    ) {
        let progs = self.programs_at(p, attached, &site);
        let runs: Option<Vec<u64>> = progs
            .iter()
            .map(|id| {
                let info = p.progs.get(id)?.info.as_ref()?;
                (info.run_cnt > 0).then_some(info.run_cnt)
            })
            .collect();
        let seen: Vec<u64> = progs
            .iter()
            .map(|id| {
                let pc = self.progs.get(id);
                pc.map_or(0, |pc| match &site {
                    Site::At(k) => pc.seen_at.get(k).map_or(0, |c| c.samples),
                    Site::SyscallSlowPath => pc
                        .seen_at
                        .iter()
                        .filter(|(k, _)| bpf_hooks::is_syscall_site(k))
                        .map(|(_, c)| c.samples)
                        .sum(),
                })
            })
            .collect();
        let (weights, by) = match (progs.len(), runs) {
            (0, _) => {
                self.unclaimed.merge(c);
                self.sites.push(SiteShare {
                    site,
                    counts: c,
                    progs: Vec::new(),
                    split_by: None,
                });
                return;
            }
            (1, _) => (vec![1], SplitBy::Alone),
            (_, Some(r)) => (r, SplitBy::RunCount),
            _ if seen.iter().any(|&s| s > 0) => (seen, SplitBy::Samples),
            _ => (vec![1; progs.len()], SplitBy::Evenly),
        };
        let samples = split(c.samples, &weights);
        let period = split(c.period, &weights);
        let mut shares = Vec::new();
        for ((&id, s), per) in progs.iter().zip(samples).zip(period) {
            let part = Counts {
                samples: s,
                period: per,
            };
            let pc = self.progs.entry(id).or_default();
            pc.hook.merge(part);
            pc.hook_sites.entry(site.clone()).or_default().merge(part);
            shares.push((id, part));
        }
        self.sites.push(SiteShare {
            site,
            counts: c,
            progs: shares,
            split_by: Some(by),
        });
    }

    /// The programs at a site: those seen there, else those recorded as
    /// attached there, else those seen or recorded at a site of the same
    /// attach type (a hook sample whose site the chain did not show), else
    /// those whose program type implies that attach type.
    fn programs_at(
        &self,
        p: &Profile,
        attached: &BTreeMap<u32, Vec<SiteKey>>,
        site: &Site,
    ) -> Vec<u32> {
        let fits = |k: &SiteKey| match site {
            Site::At(s) => k == s,
            Site::SyscallSlowPath => bpf_hooks::is_syscall_site(k),
        };
        let kind = match site {
            Site::At((a, _)) => Some(*a),
            Site::SyscallSlowPath => None,
        };
        let same_kind = |k: &SiteKey| Some(k.0) == kind;
        let seen = |f: &dyn Fn(&SiteKey) -> bool| -> Vec<u32> {
            let at = self.progs.iter().filter(|(_, pc)| pc.seen_at.keys().any(f));
            at.map(|(&id, _)| id).collect()
        };
        let recorded = |f: &dyn Fn(&SiteKey) -> bool| -> Vec<u32> {
            let at = attached.iter().filter(|(_, ks)| ks.iter().any(f));
            at.map(|(&id, _)| id).collect()
        };
        let mut of_kind = seen(&same_kind);
        of_kind.extend(recorded(&same_kind));
        of_kind.sort_unstable();
        of_kind.dedup();
        let by_type = || -> Vec<u32> {
            let implied = |r: &super::profile::ProgRecord| {
                let a = r
                    .info
                    .as_ref()
                    .and_then(|i| bpf_hooks::attach_of_prog_type(i.prog_type));
                // A tracepoint program is what a syscall tracepoint runs.
                a.is_some_and(|a| {
                    Some(a) == kind
                        || (a, kind) == (Attach::Tracepoint, Some(Attach::SyscallTracepoint))
                })
            };
            p.progs
                .iter()
                .filter(|(_, r)| implied(r))
                .map(|(&id, _)| id)
                .collect()
        };
        [seen(&fits), recorded(&fits), of_kind]
            .into_iter()
            .find(|t| !t.is_empty())
            .unwrap_or_else(by_type)
    }
}

/// The sites each program's recorded attachments stand for.
fn recorded_sites(p: &Profile) -> BTreeMap<u32, Vec<SiteKey>> {
    let mut out: BTreeMap<u32, Vec<SiteKey>> = BTreeMap::new();
    for (&id, r) in &p.progs {
        let mut ks: Vec<SiteKey> = r
            .meta
            .iter()
            .flat_map(|m| &m.attach)
            .filter_map(|a| bpf_hooks::site_of_attachment(&a.kind, &a.target))
            .collect();
        // A trampoline's key is its target's BTF object and type ids.
        if let Some(i) = r.info.as_ref().filter(|i| i.attach_btf_id != 0) {
            let key = (i.attach_btf_obj_id as u64) << 32 | i.attach_btf_id as u64;
            ks.push((Attach::Trampoline, key.to_string()));
        }
        if !ks.is_empty() {
            out.insert(id, ks);
        }
    }
    out
}

/// `total` split by `weights` in whole units, largest remainders first,
/// so that the parts add up to the total exactly.
fn split(total: u64, weights: &[u64]) -> Vec<u64> {
    let sum: u128 = weights.iter().map(|&w| w as u128).sum();
    if sum == 0 {
        return split(total, &vec![1; weights.len()]);
    }
    let exact: Vec<(u64, u128)> = weights
        .iter()
        .map(|&w| {
            let x = total as u128 * w as u128;
            ((x / sum) as u64, x % sum)
        })
        .collect();
    let mut parts: Vec<u64> = exact.iter().map(|e| e.0).collect();
    let mut left = total - parts.iter().sum::<u64>();
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| exact[b].1.cmp(&exact[a].1).then(a.cmp(&b)));
    for i in order {
        if left == 0 {
            break;
        }
        parts[i] += 1;
        left -= 1;
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn a_split_adds_up_and_follows_the_weights() {
        assert_eq!(split(10, &[1, 1]), vec![5, 5]);
        assert_eq!(split(10, &[3, 1]), vec![8, 2]);
        assert_eq!(split(1, &[1, 1, 1]), vec![1, 0, 0]);
        assert_eq!(split(7, &[0, 0]), vec![4, 3]);
        assert_eq!(
            split(u64::MAX, &[u64::MAX, 1]).iter().sum::<u64>(),
            u64::MAX
        );
    }
}
