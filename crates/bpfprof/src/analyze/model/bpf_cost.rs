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
//!   Each hook sample goes to one of the programs that ran on its path
//!   (`hook_split.rs`): those seen, in their own samples, under the same
//!   site from the same user call site, else from the same process, else
//!   at the site anywhere — then split by their run counts where the
//!   recording has the kernel's stats for each, else by their own samples
//!   there. Which programs sit at a site is learnt from their own samples
//!   (the frames above a program name its site), else from the attachments
//!   the recorder captured, else from the attach type alone;
//! - a trap whose handler runs with interrupts off (a uprobe's int3 and
//!   single-step) leaves its samples where interrupts come back on; where
//!   the trapping user address is a probed one, they are the hook's too,
//!   and counted as **deferred**.
//!
//! The evidence and the splits come from every sample of the recording;
//! a filter (`--pid`, `--comm`, `--tid`) or a breakdown (`--by`) only
//! chooses which of the settled samples to add up, so a program's parts
//! in a filtered view never exceed the whole, and a breakdown's rows add
//! up to it.
//!
//! The walk's outcome depends only on the stack, so it is worked out once
//! per stack node and reused by every row that ends there.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use super::bpf_hooks::{self, Attach, Role, SiteKey};
use super::hook_split::{Group, Scope, Seen};
use super::profile::{Counts, Filters, Profile, RowKey};
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
    /// samples (the weights of a split by samples), over the whole
    /// recording whatever the view.
    pub seen_at: BTreeMap<SiteKey, Counts>,
    /// The parts by the value of `--by` (command, process, CPU, ...), when
    /// asked for.
    pub by: BTreeMap<String, PartCounts>,
}

/// Self, called and hook of some samples.
#[derive(Debug, Clone, Copy, Default)]
pub struct PartCounts {
    pub own: Counts,
    pub called: Counts,
    pub hook: Counts,
}

impl PartCounts {
    pub fn total(&self) -> Counts {
        let mut t = self.own;
        t.merge(self.called);
        t.merge(self.hook);
        t
    }
}

/// Whose work ran a program: what `report --bpf --by` breaks its parts
/// down by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum By {
    /// The command of the task the sample interrupted.
    Comm,
    /// Its process.
    Pid,
    /// Its thread.
    Tid,
    /// The CPU.
    Cpu,
    /// task, softirq, hardirq or nmi: the innermost interrupt entry on
    /// the stack.
    Context,
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
            // "uprobe", not "uprobe uprobe": the site adds nothing there.
            Site::At((a, s)) if s.is_empty() || s == a.name() => a.name().to_string(),
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
    /// The programs seen on the same path (the same user call site or
    /// process), by their samples there.
    CallSite,
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
    /// Hook samples found where interrupts came back on after a trap
    /// (`Role::Trap`), charged to the trap's hook.
    pub deferred: Counts,
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
    /// A sample where interrupts came back on after a trap from user space.
    Trap(Attach),
}

/// A stack's outcome, with the frames that scope its hook samples: the
/// innermost user frame (0: none) and the outermost frame.
#[derive(Debug, Clone, Copy)]
struct Walked {
    out: Outcome,
    user: u32,
    root: u32,
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

    /// Walk one stack, then find its innermost user frame and its root.
    fn walked(&mut self, leaf: u32) -> Walked {
        let out = self.walk(leaf);
        let (mut user, mut root) = (0, leaf);
        let mut node = leaf;
        while node != 0 {
            let (parent, frame) = self.p.stacks.nodes[node as usize];
            if user == 0 && matches!(self.class(frame.sym), Class::User) {
                user = node;
            }
            root = node;
            node = parent;
        }
        Walked { out, user, root }
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
                    Role::Trap(a) if undecided => return Outcome::Trap(a),
                    Role::SyscallSlowPath | Role::NotBpf | Role::Trap(_) => break,
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

/// The scope key of the syscall slow path's samples in [`Seen`].
const SLOW_PATH: u32 = u32::MAX;

/// The hook samples of one site as they are handed out.
#[derive(Default)]
struct SiteTally {
    counts: Counts,
    progs: BTreeMap<u32, Counts>,
    /// Samples split each way, to name the way most of them went.
    by: BTreeMap<u8, (u64, Option<SplitBy>)>,
}

impl BpfCost {
    /// The cost of every program, over the samples `filters` keeps (by
    /// command and process only: a program's called code is in other
    /// shared objects than its own), with its parts broken down `by` a
    /// sample's key where asked.
    pub fn compute(p: &Profile, filters: Option<&Filters>) -> BpfCost {
        Self::compute_by(p, filters, None)
    }

    /// [`BpfCost::compute`], with each program's parts also by `by`.
    pub fn compute_by(p: &Profile, filters: Option<&Filters>, by: Option<By>) -> BpfCost {
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
        let kept = |k: &RowKey| filters.as_ref().is_none_or(|f| f.keep(p, k));
        let mut walked: FxHashMap<u32, Walked> = FxHashMap::default();
        // Every stack that is not Nothing, by its entry in `p.chains`, in
        // order: the hook samples are handed out in this order.
        let mut settled: Vec<(usize, Walked)> = Vec::new();
        let mut seen = Seen::default();
        // User frames where uprobe handlers ran: a trap there was a probe's.
        let mut probed: rustc_hash::FxHashSet<u32> = Default::default();
        for (i, ((key, node), c)) in p.chains.iter().enumerate() {
            // Most stacks end in user code, where a walk stops at once:
            // the leaf's class says so without remembering the stack.
            let leaf = p.stacks.nodes[*node as usize].1;
            if *node == 0 || matches!(w.class(leaf.sym), Class::User) {
                continue;
            }
            let wk = match walked.get(node) {
                Some(&o) => o,
                None => {
                    let o = w.walked(*node);
                    walked.insert(*node, o);
                    o
                }
            };
            match wk.out {
                Outcome::Nothing => continue,
                Outcome::Own { prog, site, calls } | Outcome::Called { prog, site, calls } => {
                    if let Some(s) = site {
                        let k = w.sites[s as usize].clone();
                        if k.0 == Attach::Uprobe {
                            probed.insert(wk.user);
                        }
                        if bpf_hooks::is_syscall_site(&k) {
                            seen.note(SLOW_PATH, wk.user, wk.root, prog, c.samples);
                        }
                        seen.note(s, wk.user, wk.root, prog, c.samples);
                        let pc = cost.progs.entry(prog).or_default();
                        pc.seen_at.entry(k).or_default().merge(*c);
                    }
                    if kept(key) {
                        let own = matches!(wk.out, Outcome::Own { .. });
                        let pc = cost.progs.entry(prog).or_default();
                        let part = if own { &mut pc.own } else { &mut pc.called };
                        part.merge(*c);
                        if let Some(b) = by {
                            let e = pc.by.entry(by_value(p, b, key, *node)).or_default();
                            let part = if own { &mut e.own } else { &mut e.called };
                            part.merge(*c);
                        }
                        for &k in &w.calls[calls.0 as usize..calls.1 as usize] {
                            cost.calls.entry(k).or_default().merge(*c);
                        }
                    }
                    continue;
                }
                Outcome::Hook { site, .. } if w.sites[site as usize].0 == Attach::Uprobe => {
                    probed.insert(wk.user);
                }
                _ => {}
            }
            settled.push((i, wk));
        }
        let attached = recorded_sites(p);
        let uprobe_site = w.site((Attach::Uprobe, "uprobe".to_string()));
        let mut groups: FxHashMap<(u32, Scope), Option<Group>> = FxHashMap::default();
        let mut tallies: BTreeMap<Site, SiteTally> = BTreeMap::new();
        let mut stats = Counts::default();
        for (i, wk) in settled {
            let ((key, node), c) = &p.chains[i];
            let (site, sid) = match wk.out {
                Outcome::Hook { site, stats: s } => {
                    if s && kept(key) {
                        stats.merge(*c);
                    }
                    (Site::At(w.sites[site as usize].clone()), site)
                }
                Outcome::SlowPath => (Site::SyscallSlowPath, SLOW_PATH),
                Outcome::Trap(Attach::Uprobe) => {
                    let user = p.stacks.nodes[wk.user as usize].1;
                    let page = p.sym.dsos[user.dso as usize].name == bpf_hooks::UPROBES_PAGE;
                    if wk.user == 0 || !(page || probed.contains(&wk.user)) {
                        continue;
                    }
                    if kept(key) {
                        cost.deferred.merge(*c);
                    }
                    (Site::At(w.sites[uprobe_site as usize].clone()), uprobe_site)
                }
                _ => continue,
            };
            // The narrowest group with programs; the whole site's is made
            // once, from every program's evidence there.
            let (scope, fresh) = match seen.narrowest(sid, wk.user, wk.root) {
                Some((scope, g)) => (scope, Some(g)),
                None => (Scope::Site, None),
            };
            let group = groups
                .entry((sid, scope))
                .or_insert_with(|| fresh.or_else(|| cost.site_group(p, &attached, &site)));
            let handed = match group.as_mut() {
                Some(g) => Some((g.hand(*c), g.split_by)),
                None => None,
            };
            if !kept(key) {
                continue;
            }
            let t = tallies.entry(site.clone()).or_default();
            t.counts.merge(*c);
            let Some((shares, split_by)) = handed else {
                cost.unclaimed.merge(*c);
                t.by.entry(u8::MAX).or_default().0 += c.samples;
                continue;
            };
            let e = t.by.entry(split_by as u8).or_default();
            e.0 += c.samples;
            e.1 = Some(split_by);
            let value = by.map(|b| by_value(p, b, key, *node));
            for (prog, part) in shares {
                t.progs.entry(prog).or_default().merge(part);
                let pc = cost.progs.entry(prog).or_default();
                pc.hook.merge(part);
                pc.hook_sites.entry(site.clone()).or_default().merge(part);
                if let Some(v) = &value {
                    pc.by.entry(v.clone()).or_default().hook.merge(part);
                }
            }
        }
        for (site, t) in tallies {
            // The way most of the site's samples were split.
            let split_by = t.by.values().max_by_key(|(n, _)| *n).and_then(|(_, b)| *b);
            cost.sites.push(SiteShare {
                site,
                counts: t.counts,
                progs: t.progs.into_iter().collect(),
                split_by,
            });
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

    /// The group of a whole site: the programs there, weighed by their run
    /// counts, else by their own samples there, else evenly; `None` where
    /// no program could be found.
    fn site_group(
        &self,
        p: &Profile,
        attached: &BTreeMap<u32, Vec<SiteKey>>,
        site: &Site,
    ) -> Option<Group> {
        let progs = self.programs_at(p, attached, site);
        if progs.is_empty() {
            return None;
        }
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
                pc.map_or(0, |pc| match site {
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
        let n = progs.len();
        Some(match runs {
            Some(r) => Group::new(progs, r, SplitBy::RunCount),
            None if seen.iter().any(|&s| s > 0) => Group::new(progs, seen, SplitBy::Samples),
            None => Group::new(progs, vec![1; n], SplitBy::Evenly),
        })
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

/// The value of `by` for one sample: what a breakdown's row is named.
fn by_value(p: &Profile, by: By, key: &RowKey, node: u32) -> String {
    match by {
        By::Comm => p.sym.threads.comms[key.comm as usize].clone(),
        By::Pid => key.pid.to_string(),
        By::Tid => key.tid.to_string(),
        By::Cpu if key.cpu == u16::MAX => "-".to_string(),
        By::Cpu => key.cpu.to_string(),
        By::Context => context(p, node).to_string(),
    }
}

/// The context a stack ran in: the innermost interrupt entry among its
/// kernel frames, else a task's. The sampling interrupt itself is not on
/// the stack (a chain starts at the interrupted code).
pub fn context(p: &Profile, node: u32) -> &'static str {
    for f in p.stacks.frames(node) {
        if !p.sym.dsos[f.dso as usize].is_kernel() {
            break;
        }
        let name = &p.sym.syms[f.sym as usize].name;
        let base = name.split('.').next().unwrap_or(name);
        match base {
            "asm_exc_nmi" | "exc_nmi" | "default_do_nmi" | "nmi_handle" => return "nmi",
            "handle_softirqs" | "__do_softirq" | "do_softirq" | "run_ksoftirqd"
            | "net_rx_action" | "net_tx_action" => return "softirq",
            "asm_common_interrupt"
            | "common_interrupt"
            | "handle_irq_event"
            | "__handle_irq_event_percpu"
            | "handle_edge_irq"
            | "handle_fasteoi_irq" => return "hardirq",
            _ if base.starts_with("asm_sysvec_")
                || base.starts_with("sysvec_")
                || base.starts_with("__sysvec_") =>
            {
                return "hardirq"
            }
            _ => {}
        }
    }
    "task"
}
