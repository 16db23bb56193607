//! From each interval's snapshot to what one refresh shows: the BPF pane is
//! the last interval exactly, the symbols pane a decaying window as in perf
//! top (each refresh keeps 7/8 of a row's weight and adds the new samples).
//! The engine forgets its counts after each snapshot, so what lasts across
//! intervals (the window's weights, sub-programs' totals, the kernel's run
//! counters) is kept here.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashMap;
use serde::Serialize;

use super::model::{ProgCum, Snapshot, SymKey};
use crate::analyze::bpf_view::{AttachPoint, Owner, Parts, ProgHead, Shares};

/// The weight a symbol row keeps from one refresh to the next.
pub const DECAY: f64 = 7.0 / 8.0;
/// Rows lighter than this are dropped (about 20 idle refreshes after
/// their last sample).
const FORGET: f64 = 0.05;

/// One program over the last interval. The keys of `report --bpf --json`
/// where they mean the same (the head's, by sharing it; `owners`,
/// `attach`, `run_cnt`, ...), counted over the interval rather than over a
/// recording.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ProgLine {
    /// Its shares are of all samples of the interval.
    #[serde(flatten)]
    pub head: ProgHead,
    pub subprogs: Vec<SubLine>,
    pub owners: Vec<Owner>,
    pub attach: Vec<AttachPoint>,
    /// Runs and run time over the interval (kernel stats on only).
    pub run_cnt: Option<u64>,
    pub run_time_ns: Option<u64>,
    /// The kernel's counter as read at the end of the interval.
    pub run_cnt_total: Option<u64>,
    pub runs_per_s: Option<f64>,
    pub avg_ns: Option<f64>,
    /// Seconds since it was loaded.
    pub loaded_s: Option<f64>,
    pub unloaded: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SubLine {
    pub index: u32,
    pub name: String,
    /// Over the interval, and since `top` started.
    pub samples: u64,
    pub samples_total: u64,
}

/// A symbols-pane row over the decaying window.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SymLine {
    pub kernel: bool,
    pub symbol: String,
    pub dso: String,
    /// Share of the window's weight, in percent.
    pub overhead: f64,
    /// Samples in the last interval.
    pub samples: u64,
}

/// What one refresh shows.
#[derive(Debug, Clone, Default)]
pub struct Interval {
    pub secs: f64,
    pub samples: u64,
    pub lost: u64,
    pub callchains: bool,
    pub stats_on: bool,
    /// Every program seen since start, costliest first.
    pub progs: Vec<ProgLine>,
}

#[derive(Debug, Default)]
pub struct Window {
    /// The kernel's run counters of each program at the last refresh.
    stats: BTreeMap<u32, (u64, u64)>,
    /// Programs seen at an earlier refresh.
    seen: BTreeSet<u32>,
    /// Own samples per (program, sub-program) since start.
    sub_totals: FxHashMap<(u32, u32), u64>,
    /// Decayed weight and last interval's samples per symbol row.
    weights: FxHashMap<SymKey, (f64, u64)>,
}

fn delta(now: u64, before: u64) -> u64 {
    now.saturating_sub(before)
}

impl Window {
    /// Take the next interval's snapshot, `secs` long.
    pub fn advance(&mut self, now: Snapshot, secs: f64, stats_on: bool) -> Interval {
        let samples = now.samples;
        let pct = |n: u64| match samples {
            0 => 0.0,
            t => 100.0 * n as f64 / t as f64,
        };
        let mut progs: Vec<ProgLine> = Vec::with_capacity(now.progs.len());
        for p in now.progs.values() {
            let seen = self.seen.contains(&p.id);
            let runs = stats_delta(&now, &self.stats, p.id, seen, stats_on);
            let subprogs = p
                .subprogs
                .iter()
                .map(|(index, name, n)| {
                    let t = self.sub_totals.entry((p.id, *index)).or_default();
                    *t += n;
                    SubLine {
                        index: *index,
                        name: name.clone(),
                        samples: *n,
                        samples_total: *t,
                    }
                })
                .collect();
            progs.push(prog_line(p, subprogs, runs, &now, secs, stats_on, &pct));
        }
        self.seen.extend(now.progs.keys());
        let key = |l: &ProgLine| l.head.samples.total.unwrap_or(l.head.samples.own);
        progs.sort_by(|a, b| key(b).cmp(&key(a)).then(a.head.id.cmp(&b.head.id)));

        for w in self.weights.values_mut() {
            *w = (w.0 * DECAY, 0);
        }
        for (k, &d) in &now.syms {
            if d > 0 {
                let w = self.weights.entry(k.clone()).or_default();
                *w = (w.0 + d as f64, d);
            }
        }
        self.weights.retain(|_, w| w.0 >= FORGET);
        self.stats = now.stats;
        Interval {
            secs,
            samples,
            lost: now.lost,
            callchains: now.callchains,
            stats_on,
            progs,
        }
    }

    /// The symbols pane: rows by (kernel, symbol, shared object), over the
    /// commands `keep` lets through, heaviest first.
    pub fn symbols(&self, keep: impl Fn(&SymKey) -> bool) -> Vec<SymLine> {
        let mut by: FxHashMap<(bool, &str, &str), (f64, u64)> = FxHashMap::default();
        let mut total = 0.0;
        for (k, &(w, n)) in &self.weights {
            if !keep(k) {
                continue;
            }
            total += w;
            let e = by.entry((k.kernel, &k.sym, &k.dso)).or_default();
            e.0 += w;
            e.1 += n;
        }
        let mut rows: Vec<SymLine> = by
            .into_iter()
            .map(|((kernel, sym, dso), (w, n))| SymLine {
                kernel,
                symbol: sym.to_string(),
                dso: dso.to_string(),
                overhead: if total > 0.0 { 100.0 * w / total } else { 0.0 },
                samples: n,
            })
            .collect();
        rows.sort_by(|a, b| {
            b.overhead
                .total_cmp(&a.overhead)
                .then_with(|| a.symbol.cmp(&b.symbol))
                .then_with(|| a.dso.cmp(&b.dso))
        });
        rows
    }
}

/// Runs and run time over the interval, from the kernel's counters now
/// and at the last refresh; a program first seen now ran from 0.
fn stats_delta(
    now: &Snapshot,
    before: &BTreeMap<u32, (u64, u64)>,
    id: u32,
    seen: bool,
    stats_on: bool,
) -> (Option<u64>, Option<u64>) {
    match (now.stats.get(&id).filter(|_| stats_on), before.get(&id)) {
        (Some(&(c, t)), Some(&(c0, t0))) => (Some(delta(c, c0)), Some(delta(t, t0))),
        (Some(&(c, t)), None) if !seen => (Some(c), Some(t)),
        _ => (None, None),
    }
}

fn prog_line(
    p: &ProgCum,
    subprogs: Vec<SubLine>,
    (runs, ns): (Option<u64>, Option<u64>),
    now: &Snapshot,
    secs: f64,
    stats_on: bool,
    pct: &dyn Fn(u64) -> f64,
) -> ProgLine {
    let (own, called, hook) = (p.own, p.called, p.hook);
    let total = called.zip(hook).map(|(c, h)| own + c + h);
    let stats = now.stats.get(&p.id).filter(|_| stats_on);
    ProgLine {
        head: ProgHead {
            id: p.id,
            name: p.name.clone(),
            tag: p.tag.clone(),
            prog_type: p.prog_type.clone(),
            samples: Parts {
                own,
                called,
                hook,
                total,
            },
            percent: Shares {
                own: pct(own),
                called: called.map(pct),
                hook: hook.map(pct),
                total: total.map(pct),
            },
        },
        subprogs,
        owners: p.owners.clone(),
        attach: p.attach.clone(),
        run_cnt: runs,
        run_time_ns: ns,
        run_cnt_total: stats.map(|s| s.0),
        runs_per_s: runs.filter(|_| secs > 0.0).map(|r| r as f64 / secs),
        avg_ns: runs
            .zip(ns)
            .filter(|(r, _)| *r > 0)
            .map(|(r, t)| t as f64 / r as f64),
        loaded_s: p
            .load_time_ns
            .filter(|&t| t > 0 && now.boot_ns >= t)
            .map(|t| (now.boot_ns - t) as f64 / 1e9),
        unloaded: now.unloaded.contains(&p.id),
    }
}

/// A program for the UI's and the outputs' tests: these samples, as
/// shares of 100.
#[cfg(test)]
pub fn example(id: u32, name: &str, samples: Parts) -> ProgLine {
    let pct = |n: u64| n as f64;
    ProgLine {
        head: ProgHead {
            id,
            name: name.into(),
            samples,
            percent: Shares {
                own: pct(samples.own),
                called: samples.called.map(pct),
                hook: samples.hook.map(pct),
                total: samples.total.map(pct),
            },
            ..Default::default()
        },
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prog(id: u32, own: u64, called: u64, hook: u64) -> ProgCum {
        ProgCum {
            id,
            name: format!("p{id}"),
            own,
            called: Some(called),
            hook: Some(hook),
            ..Default::default()
        }
    }

    fn sym(name: &str, comm: &str) -> SymKey {
        SymKey {
            kernel: true,
            sym: name.into(),
            dso: "[kernel.kallsyms]".into(),
            comm: comm.into(),
        }
    }

    fn snap(samples: u64, progs: &[ProgCum], syms: &[(SymKey, u64)]) -> Snapshot {
        Snapshot {
            samples,
            callchains: true,
            progs: progs.iter().map(|p| (p.id, p.clone())).collect(),
            syms: syms.iter().cloned().collect(),
            ..Default::default()
        }
    }

    #[test]
    fn programs_show_the_last_interval_only() {
        let mut w = Window::default();
        let first = w.advance(snap(100, &[prog(1, 10, 5, 5)], &[]), 1.0, false);
        assert_eq!(first.progs[0].head.samples.total, Some(20));
        assert_eq!(first.progs[0].head.percent.total, Some(20.0));
        // 300 samples in the second interval, 30 + 10 + 20 of them in prog 1.
        let second = w.advance(
            snap(300, &[prog(1, 30, 10, 20), prog(2, 90, 0, 0)], &[]),
            1.0,
            false,
        );
        let p1 = second.progs.iter().find(|p| p.head.id == 1).unwrap();
        assert_eq!(p1.head.samples.own, 30);
        assert_eq!(p1.head.samples.called, Some(10));
        assert_eq!(p1.head.samples.hook, Some(20));
        assert_eq!(p1.head.samples.total, Some(60));
        assert!((p1.head.percent.total.unwrap() - 20.0).abs() < 1e-9);
        // The costlier program comes first.
        assert_eq!(second.progs[0].head.id, 2);
        assert_eq!(second.samples, 300);
    }

    #[test]
    fn run_stats_are_per_interval_and_per_second() {
        let mut w = Window::default();
        let mut a = snap(10, &[prog(1, 0, 0, 0)], &[]);
        a.stats.insert(1, (1000, 50_000));
        w.advance(a, 1.0, true);
        let mut b = snap(10, &[prog(1, 0, 0, 0)], &[]);
        b.stats.insert(1, (1500, 100_000));
        let i = w.advance(b, 0.5, true);
        let p = &i.progs[0];
        assert_eq!(p.run_cnt, Some(500));
        assert_eq!(p.run_cnt_total, Some(1500));
        assert_eq!(p.runs_per_s, Some(1000.0));
        assert_eq!(p.avg_ns, Some(100.0));
        // Stats off: nothing is made up.
        let mut c = snap(10, &[prog(1, 0, 0, 0)], &[]);
        c.stats.insert(1, (1600, 110_000));
        let off = w.advance(c, 1.0, false);
        assert_eq!(off.progs[0].run_cnt, None);
        assert_eq!(off.progs[0].avg_ns, None);
    }

    #[test]
    fn symbols_decay_by_seven_eighths() {
        let mut w = Window::default();
        w.advance(snap(80, &[], &[(sym("a", "x"), 80)]), 1.0, false);
        // No new samples in `a`; 10 in `b`.
        w.advance(snap(10, &[], &[(sym("b", "y"), 10)]), 1.0, false);
        let rows = w.symbols(|_| true);
        assert_eq!(rows[0].symbol, "a");
        // a: 80 * 7/8 = 70, b: 10, so 87.5% and 12.5%.
        assert!((rows[0].overhead - 87.5).abs() < 1e-9);
        assert!((rows[1].overhead - 12.5).abs() < 1e-9);
        assert_eq!(rows[0].samples, 0);
        assert_eq!(rows[1].samples, 10);
        // Filtering on the command keeps the shares among what is shown.
        let only_y = w.symbols(|k| k.comm == "y");
        assert_eq!(only_y.len(), 1);
        assert!((only_y[0].overhead - 100.0).abs() < 1e-9);
    }

    #[test]
    fn rows_of_one_symbol_from_several_commands_merge() {
        let mut w = Window::default();
        w.advance(
            snap(30, &[], &[(sym("a", "x"), 10), (sym("a", "y"), 20)]),
            1.0,
            false,
        );
        let rows = w.symbols(|_| true);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].samples, 30);
    }

    #[test]
    fn sub_programs_add_up_since_start() {
        let mut w = Window::default();
        let mut p = prog(1, 3, 0, 0);
        p.subprogs = vec![(0, "main".into(), 3)];
        w.advance(snap(10, &[p.clone()], &[]), 1.0, false);
        p.subprogs[0].2 = 4;
        let i = w.advance(snap(10, &[p], &[]), 1.0, false);
        assert_eq!(i.progs[0].subprogs[0].samples, 4);
        assert_eq!(i.progs[0].subprogs[0].samples_total, 7);
    }

    #[test]
    fn unloaded_programs_stay_and_are_marked() {
        let mut w = Window::default();
        w.advance(snap(10, &[prog(7, 5, 0, 0)], &[]), 1.0, false);
        let mut s = snap(10, &[prog(7, 0, 0, 0)], &[]);
        s.unloaded.push(7);
        let i = w.advance(s, 1.0, false);
        assert!(i.progs[0].unloaded);
        assert_eq!(i.progs[0].head.samples.own, 0);
    }
}
