//! Who shares a hook's samples, and each sample's program.
//!
//! Hook code runs once per run of every program attached there, so its
//! samples belong to the programs that ran on that path. The most exact
//! evidence of which programs those are is in the recording itself: the
//! programs whose own samples came from the same user call site (a
//! syscall's wrapper runs one syscall, so only the programs on that
//! syscall's tracepoint), else from the same process, else at the same
//! attach site anywhere. A hook sample is split between the programs of
//! the narrowest such *group* that has any.
//!
//! Groups and their weights are learnt from the whole recording, never
//! from a filtered view, and each sample goes to exactly one program of its
//! group, in turn, so that every program keeps its share of the group
//! (the unit with the largest shortfall goes next). A view of some of the
//! samples (`--pid`, `--by`) is then a sum over the same assignments: it
//! never exceeds the whole, and the parts over a partition add up to it.

use rustc_hash::FxHashMap;

use super::bpf_cost::SplitBy;
use super::profile::Counts;

/// How narrow a group is: the samples' innermost user frame (a stack
/// node), their outermost frame (one process, in one state of its
/// mappings), or the whole site.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    CallSite(u32),
    Process(u32),
    Site,
}

/// The programs of one group, with their weights.
#[derive(Debug, Clone)]
pub struct Group {
    pub progs: Vec<u32>,
    weights: Vec<u64>,
    pub split_by: SplitBy,
    /// Units handed to each program so far, and in all.
    given: Vec<u64>,
    handed: u64,
}

impl Group {
    /// `progs` must not be empty; weights of zero everywhere mean evenly.
    pub fn new(progs: Vec<u32>, weights: Vec<u64>, split_by: SplitBy) -> Group {
        let weights = if weights.iter().all(|&w| w == 0) {
            vec![1; progs.len()]
        } else {
            weights
        };
        let split_by = if progs.len() == 1 {
            SplitBy::Alone
        } else {
            split_by
        };
        Group {
            given: vec![0; progs.len()],
            progs,
            weights,
            split_by,
            handed: 0,
        }
    }

    /// The next `c.samples` samples of this group, by program (programs
    /// with none are left out). Periods follow the samples: each program
    /// gets the period of its share of the entry's samples, the last one
    /// the remainder, so the entry's period is kept exactly.
    pub fn hand(&mut self, c: Counts) -> Vec<(u32, Counts)> {
        if self.progs.len() == 1 {
            self.handed += c.samples;
            self.given[0] += c.samples;
            return vec![(self.progs[0], c)];
        }
        let sum: u128 = self.weights.iter().map(|&w| w as u128).sum();
        let mut got = vec![0u64; self.progs.len()];
        for _ in 0..c.samples {
            self.handed += 1;
            // Shortfall of program i, scaled by `sum`: what it is due after
            // `handed` units less what it has.
            let due = |i: usize| {
                self.handed as i128 * self.weights[i] as i128
                    - (self.given[i] as u128 * sum) as i128
            };
            let next = (0..self.progs.len())
                .max_by(|&a, &b| due(a).cmp(&due(b)).then(b.cmp(&a)))
                .unwrap_or(0);
            self.given[next] += 1;
            got[next] += 1;
        }
        let mut out = Vec::new();
        let mut period_left = c.period;
        let last = got.iter().rposition(|&g| g > 0);
        for (i, &g) in got.iter().enumerate() {
            if g == 0 {
                continue;
            }
            let period = if Some(i) == last {
                period_left
            } else {
                (c.period as u128 * g as u128 / c.samples as u128) as u64
            };
            period_left -= period;
            out.push((self.progs[i], Counts { samples: g, period }));
        }
        out
    }
}

/// Programs seen at each (site, scope), with their samples there: the
/// groups' evidence, gathered from the programs' own and called samples.
#[derive(Debug, Default)]
pub struct Seen {
    at: FxHashMap<(u32, Scope), FxHashMap<u32, u64>>,
}

impl Seen {
    /// Program `prog`'s samples `n` at `site`, from a stack whose innermost
    /// user frame is `user` (0: none) and outermost frame `root`.
    pub fn note(&mut self, site: u32, user: u32, root: u32, prog: u32, n: u64) {
        if user != 0 {
            *self
                .at
                .entry((site, Scope::CallSite(user)))
                .or_default()
                .entry(prog)
                .or_default() += n;
        }
        *self
            .at
            .entry((site, Scope::Process(root)))
            .or_default()
            .entry(prog)
            .or_default() += n;
    }

    /// The narrowest group below the whole site with programs in it.
    pub fn narrowest(&self, site: u32, user: u32, root: u32) -> Option<(Scope, Group)> {
        let scopes = [Scope::CallSite(user), Scope::Process(root)];
        scopes
            .into_iter()
            .filter(|s| *s != Scope::CallSite(0))
            .find_map(|s| {
                let progs = self.at.get(&(site, s))?;
                let mut v: Vec<(u32, u64)> = progs.iter().map(|(&p, &n)| (p, n)).collect();
                v.sort_unstable();
                let (ids, weights) = v.into_iter().unzip();
                Some((s, Group::new(ids, weights, SplitBy::CallSite)))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(samples: u64, period: u64) -> Counts {
        Counts { samples, period }
    }

    #[test]
    fn one_sample_at_a_time_keeps_each_programs_share() {
        let mut g = Group::new(vec![7, 9], vec![3, 1], SplitBy::Samples);
        let mut by = FxHashMap::<u32, u64>::default();
        for _ in 0..400 {
            for (p, x) in g.hand(c(1, 10)) {
                *by.entry(p).or_default() += x.samples;
            }
        }
        assert_eq!((by[&7], by[&9]), (300, 100));
    }

    #[test]
    fn an_entry_keeps_its_period_and_every_unit_goes_somewhere() {
        let mut g = Group::new(vec![1, 2, 3], vec![1, 1, 1], SplitBy::Samples);
        let parts = g.hand(c(7, 7001));
        assert_eq!(parts.iter().map(|p| p.1.samples).sum::<u64>(), 7);
        assert_eq!(parts.iter().map(|p| p.1.period).sum::<u64>(), 7001);
        let most = parts.iter().map(|p| p.1.samples).max().unwrap();
        let least = parts.iter().map(|p| p.1.samples).min().unwrap();
        assert!(most - least <= 1, "{parts:?}");
    }

    #[test]
    fn the_narrowest_group_with_programs_wins() {
        let mut s = Seen::default();
        s.note(0, 11, 100, 5, 40);
        s.note(0, 12, 100, 6, 10);
        let (scope, g) = s.narrowest(0, 11, 100).unwrap();
        assert_eq!((scope, g.progs), (Scope::CallSite(11), vec![5]));
        let (scope, g) = s.narrowest(0, 13, 100).unwrap();
        assert_eq!((scope, g.progs), (Scope::Process(100), vec![5, 6]));
        assert!(s.narrowest(0, 13, 200).is_none());
        assert!(s.narrowest(1, 11, 100).is_none());
    }
}
