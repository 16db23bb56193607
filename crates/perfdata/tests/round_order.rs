//! `RoundOrder`, the check that a stable sort by time gives the order
//! `PerfFile::records` delivers, computed over parts of the data and joined
//! with `then`; and `PerfFile::record_start_near`, the guess of a record
//! boundary that such parts start at.
//!
//! Oracles: the check over the whole data (for every join), a model of
//! perf's FINISHED_ROUND rule computed from what was written, and the
//! ordered reader itself (for the whole check). Files are written here
//! record by record, as in tests/raw_records.rs. Needs no perf.
mod common;

use std::collections::BTreeSet;

use common::built::{
    self, attrs, attrs_without_time, le64, model_holds, seq_of, Built, Ev, Ev::*, Fill,
};
use common::XorShift;
use perfdata::{record_type as rt, sample_type as st, AttrEntry, PerfFile, RoundOrder};

// ------------------------------------------------------------ building files

/// A file of `head` (verbatim), the records of `evs`, then `tail`
/// (verbatim), all inside the data section. The records' payloads are full
/// of small numbers (`Fill::SmallNumbers`), as record_start_near's tests
/// want.
fn build_parts(attrs: &[AttrEntry], head: &[u8], evs: &[Ev], tail: &[u8]) -> Built {
    built::build_parts(Fill::SmallNumbers, attrs, head, evs, tail)
}

fn build(attrs: &[AttrEntry], evs: &[Ev]) -> Built {
    build_parts(attrs, &[], evs, &[])
}

// ------------------------------------------------------------ parts and joins

/// The checks of every part of some records, and the whole check.
struct Parts {
    /// `part[i][j - i]`: the check of records `i..j`, started fresh at
    /// record `i` (0 <= i <= j <= n).
    part: Vec<Vec<RoundOrder>>,
    /// `whole[k]`: the check from the beginning, after the first k records.
    whole: Vec<bool>,
    /// Whether record k is a FINISHED_ROUND.
    round_end: Vec<bool>,
}

impl Parts {
    fn n(&self) -> usize {
        self.whole.len() - 1
    }

    fn get(&self, i: usize, j: usize) -> &RoundOrder {
        &self.part[i][j - i]
    }

    /// The record that first makes the whole check fail, if one does.
    fn first_late(&self) -> Option<usize> {
        self.whole.iter().position(|h| !h).map(|k| k - 1)
    }
}

/// `RoundOrder::see` driven directly.
fn check(seq: &[(u32, u64)]) -> RoundOrder {
    let mut c = RoundOrder::default();
    for &(ty, time) in seq {
        c.see(ty, time);
    }
    c
}

fn parts_of_seq(seq: &[(u32, u64)]) -> Parts {
    let n = seq.len();
    let part: Vec<Vec<RoundOrder>> = (0..=n)
        .map(|i| {
            let mut c = RoundOrder::default();
            let mut row = vec![c.clone()];
            for &(ty, time) in &seq[i..] {
                c.see(ty, time);
                row.push(c.clone());
            }
            row
        })
        .collect();
    let whole = part[0].iter().map(|c| c.holds()).collect();
    let round_end = seq.iter().map(|r| r.0 == rt::FINISHED_ROUND).collect();
    Parts {
        part,
        whole,
        round_end,
    }
}

/// More items than any file here has records: iterators are read with
/// this bound so that one that does not end fails instead of hanging.
const BOUND: usize = 100_000;

/// Offsets of every record, from `raw_records()`.
fn record_offsets(f: &PerfFile) -> Vec<u64> {
    f.raw_records()
        .take(BOUND)
        .map(|r| r.unwrap().offset)
        .collect()
}

/// The check of the records from `a` to `b`, read to the end.
fn part_check(f: &PerfFile, a: u64, b: u64) -> RoundOrder {
    let mut it = f.raw_records_between(a, b);
    for r in it.by_ref().take(BOUND) {
        r.unwrap();
    }
    assert!(it.next().is_none(), "[{a:#x}, {b:#x}) ends");
    it.round_order().clone()
}

/// The parts of a file, split at record boundaries (offsets from
/// `raw_records()`, then the data's end).
fn parts_of_file(f: &PerfFile) -> Parts {
    // The whole check, record by record; the cuts are the record offsets
    // and the data's end.
    let mut it = f.raw_records();
    let mut cuts = Vec::new();
    let mut whole = vec![it.time_order_holds()];
    let mut round_end = Vec::new();
    while let Some(r) = it.next() {
        let r = r.unwrap();
        cuts.push(r.offset);
        round_end.push(r.header.type_ == rt::FINISHED_ROUND);
        whole.push(it.time_order_holds());
        assert_eq!(it.round_order().holds(), it.time_order_holds());
    }
    cuts.push(it.offset());
    let n = round_end.len();
    let part: Vec<Vec<RoundOrder>> = (0..=n)
        .map(|i| (i..=n).map(|j| part_check(f, cuts[i], cuts[j])).collect())
        .collect();
    for (k, &w) in whole.iter().enumerate() {
        assert_eq!(
            part[0][k].holds(),
            w,
            "a part from the data's start is the whole check ({k} records)"
        );
    }
    Parts {
        part,
        whole,
        round_end,
    }
}

fn join(parts: &[&RoundOrder]) -> RoundOrder {
    let mut j = parts[0].clone();
    for p in &parts[1..] {
        j.then(p);
    }
    j
}

/// What the joins exercised, to show that the interesting cases came up.
#[derive(Debug, Default)]
struct Seen {
    joins: u64,
    whole_false: u64,
    /// Joins of two parts where the whole check fails for a record of the
    /// later part that the later part's own check does not fault: by how
    /// many round ends of the later part come before that record (0, 1,
    /// 2 or more).
    only_the_join: [u64; 3],
    /// ... of those, the late record is the later part's first.
    right_after_the_split: u64,
}

/// Every 2-way split of every prefix; 3-way splits of every prefix when
/// `all3`, else of the whole and of a few prefixes; 4-way splits in every
/// bracketing, all of them when `all4`, else `rng`-chosen ones. Each must
/// answer as the whole check does.
fn assert_joins(p: &Parts, ctx: &str, rng: &mut XorShift, all3: bool, all4: bool, seen: &mut Seen) {
    let n = p.n();
    let late = p.first_late();
    // Two parts, every split of every prefix.
    for e in 0..=n {
        let whole = p.whole[e];
        let mut fresh = RoundOrder::default();
        fresh.then(p.get(0, e));
        assert_eq!(fresh.holds(), whole, "{ctx}: fresh then [0, {e})");
        for s in 0..=e {
            let j = join(&[p.get(0, s), p.get(s, e)]);
            assert_eq!(j.holds(), whole, "{ctx}: [0, {s}) then [{s}, {e})");
            seen.joins += 1;
            if whole {
                continue;
            }
            seen.whole_false += 1;
            let late = late.expect("the whole check failed");
            if late >= s && p.get(s, e).holds() {
                let rounds = p.round_end[s..late].iter().filter(|&&r| r).count();
                seen.only_the_join[rounds.min(2)] += 1;
                seen.right_after_the_split += (late == s) as u64;
            }
        }
    }
    // Three parts, both bracketings.
    let mut ends: Vec<usize> = if all3 { (0..=n).collect() } else { vec![n] };
    if !all3 && n > 0 {
        ends.extend((0..3).map(|_| rng.below(n + 1)));
    }
    for &e in &ends {
        for i in 0..=e {
            for j in i..=e {
                let (a, b, c) = (p.get(0, i), p.get(i, j), p.get(j, e));
                let left = join(&[&join(&[a, b]), c]);
                let right = join(&[a, &join(&[b, c])]);
                let ctx = format!("{ctx}: [0, {i}) [{i}, {j}) [{j}, {e})");
                assert_eq!(left.holds(), p.whole[e], "{ctx}: (A then B) then C");
                assert_eq!(right.holds(), p.whole[e], "{ctx}: A then (B then C)");
                seen.joins += 2;
            }
        }
    }
    // Four parts, every bracketing.
    let mut quads = Vec::new();
    if all4 {
        for i in 0..=n {
            for j in i..=n {
                for k in j..=n {
                    quads.push((i, j, k, n));
                }
            }
        }
    } else {
        for _ in 0..40 {
            let e = rng.below(n + 1);
            let mut v = [rng.below(e + 1), rng.below(e + 1), rng.below(e + 1)];
            v.sort();
            quads.push((v[0], v[1], v[2], e));
        }
    }
    for (i, j, k, e) in quads {
        let (a, b, c, d) = (p.get(0, i), p.get(i, j), p.get(j, k), p.get(k, e));
        let ab = join(&[a, b]);
        let bc = join(&[b, c]);
        let cd = join(&[c, d]);
        let bracketings = [
            ("((A B) C) D", join(&[&join(&[&ab, c]), d])),
            ("(A (B C)) D", join(&[&join(&[a, &bc]), d])),
            ("(A B) (C D)", join(&[&ab, &cd])),
            ("A ((B C) D)", join(&[a, &join(&[&bc, d])])),
            ("A (B (C D))", join(&[a, &join(&[b, &cd])])),
        ];
        for (how, joined) in bracketings {
            assert_eq!(
                joined.holds(),
                p.whole[e],
                "{ctx}: {how} at [0, {i}) [{i}, {j}) [{j}, {k}) [{k}, {e})"
            );
            seen.joins += 1;
        }
    }
}

// ------------------------------------------------------------ the files

/// The well-formed file of common/built.rs, with FINISHED_INIT after the
/// synthesized side-band, as perf record writes it.
fn well_formed() -> Vec<Ev> {
    let mut evs = built::well_formed();
    evs.insert(2, Init);
    evs
}

/// The files of the join and oracle tests: (name, attrs, records, whether
/// the FINISHED_ROUND rule holds over the whole).
fn catalog() -> Vec<(&'static str, Vec<AttrEntry>, Vec<Ev>, bool)> {
    let wf = well_formed();
    // Late in the third round: 150 after a round end that delivered 200.
    let late_early = vec![
        S { cpu: 0, time: 100 },
        S { cpu: 1, time: 200 },
        Round, // delivers up to 0
        S { cpu: 0, time: 300 },
        Round, // delivers up to 200
        Cm { cpu: 1, time: 250 },
        S { cpu: 1, time: 150 },
        S { cpu: 0, time: 400 },
        Round,
        S { cpu: 1, time: 410 },
        D { cpu: 0, time: 405 },
        Round,
        S { cpu: 0, time: 420 },
        Fk { cpu: 1, time: 430 },
        Round,
        S { cpu: 0, time: 440 },
    ];
    // One tick older than what the second round end delivered (160).
    let mut late_middle = wf.clone();
    assert!(matches!(late_middle[20], S { cpu: 1, time: 160 }));
    late_middle[20] = S { cpu: 1, time: 159 };
    // Late among the last records: after the fourth round end (230).
    let mut late_near_end = wf.clone();
    let n = late_near_end.len();
    late_near_end.insert(n - 1, Cm { cpu: 1, time: 229 });
    // The very last record is late, and a side-band one.
    let mut late_last = wf.clone();
    late_last.push(Mm { cpu: 1, time: 1 });
    // Late twice, in different rounds.
    let mut late_twice = late_middle.clone();
    late_twice.push(S { cpu: 0, time: 3 });
    let no_rounds = vec![
        S { cpu: 1, time: 500 },
        S { cpu: 0, time: 100 },
        Cm { cpu: 0, time: 50 },
        Init,
        S { cpu: 1, time: 300 },
        D { cpu: 0, time: 10 },
        Mm { cpu: 1, time: 0 },
        S { cpu: 0, time: 5 },
        Fk { cpu: 1, time: 700 },
    ];
    let rounds_only = vec![Round; 6];
    // Rounds of 0, 1, 2 and 3 records, the rule kept.
    let round_sizes = vec![
        Round,
        S { cpu: 0, time: 10 },
        Round,
        S { cpu: 1, time: 5 },
        S { cpu: 0, time: 20 },
        Round, // delivers up to 0
        S { cpu: 1, time: 12 },
        Cm { cpu: 0, time: 10 },
        S { cpu: 0, time: 30 },
        Round, // delivers up to 10
        Round, // delivers up to 20
        S { cpu: 0, time: 30 },
        Round, // delivers up to 30
        S { cpu: 1, time: 31 },
        S { cpu: 0, time: 30 },
        Round,
        Round,
        Round,
        S { cpu: 0, time: 31 },
    ];
    // The same rounds, with records late by one in rounds of 1, 2 and 3.
    let round_sizes_late = vec![
        Round,
        S { cpu: 0, time: 10 },
        Round,
        S { cpu: 1, time: 5 },
        S { cpu: 0, time: 20 },
        Round, // delivers up to 0
        S { cpu: 1, time: 12 },
        Cm { cpu: 0, time: 9 }, // late: the next round end delivers 10
        S { cpu: 0, time: 30 },
        Round,                  // delivers up to 10
        Round,                  // delivers up to 20
        S { cpu: 0, time: 19 }, // late
        Round,                  // delivers up to 30
        S { cpu: 1, time: 31 },
        S { cpu: 0, time: 29 }, // late
        Round,
        Round,
        Round,
        D { cpu: 0, time: 30 }, // late: 31 was delivered
    ];
    let no_time = vec![
        Cm { cpu: 0, time: 500 },
        S { cpu: 1, time: 300 },
        S { cpu: 0, time: 100 },
        Round,
        Mm { cpu: 1, time: 50 },
        S { cpu: 1, time: 20 },
        Round,
        Fk { cpu: 0, time: 10 },
        Round,
        S { cpu: 0, time: 1 },
        Round,
        S { cpu: 0, time: 1 },
    ];
    let a = attrs();
    vec![
        ("well-formed", a.clone(), wf, true),
        ("late early", a.clone(), late_early, false),
        ("late in the middle", a.clone(), late_middle, false),
        ("late near the end", a.clone(), late_near_end, false),
        ("late last", a.clone(), late_last, false),
        ("late twice", a.clone(), late_twice, false),
        ("no FINISHED_ROUND", a.clone(), no_rounds, true),
        ("FINISHED_ROUND only", a.clone(), rounds_only, true),
        // (An empty data section is not one: size 0 in the header means an
        // unfinished file, read to the file's end.)
        ("FINISHED_INIT only", a.clone(), vec![Init], true),
        ("rounds of 0-3", a.clone(), round_sizes, true),
        ("rounds of 0-3, late", a.clone(), round_sizes_late, false),
        // Nothing to order by: every time reads 0, so the rule holds.
        ("no TIME", attrs_without_time(), no_time, true),
    ]
}

/// A random file: rounds of two CPUs' runs with side-band, some rounds not
/// closed, a few records late by up to a round or two, FINISHED_INIT.
fn random_events(rng: &mut XorShift) -> Vec<Ev> {
    let mut evs = Vec::new();
    let mut t = 100u64;
    let lateness = [0, 40, 100][rng.below(3)];
    for _ in 0..2 + rng.below(7) {
        let first = rng.below(2) as u32;
        for cpu in [first, 1 - first] {
            let mut ct = t + rng.below(20) as u64;
            for _ in 0..rng.below(4) {
                ct += rng.below(15) as u64;
                let mut time = ct;
                if lateness > 0 && rng.below(3) == 0 {
                    time = ct.saturating_sub(rng.below(lateness * 3) as u64);
                }
                evs.push(match rng.below(7) {
                    0 => D { cpu, time },
                    1 => Cm { cpu, time },
                    2 => Mm { cpu, time },
                    3 => Fk { cpu, time },
                    _ => S { cpu, time },
                });
            }
        }
        match rng.below(8) {
            0 => {}
            1 => evs.push(Init),
            _ => evs.push(Round),
        }
        t += 20;
    }
    // An empty data section reads as an unfinished file's.
    if evs.is_empty() {
        evs.push(Round);
    }
    evs
}

// ------------------------------------------------------------ 1: joins, on files

#[test]
fn every_split_of_every_file_joins_to_the_whole_check() {
    let mut rng = XorShift(0x5eed_0001);
    let mut seen = Seen::default();
    for (name, attrs, evs, rule) in catalog() {
        let b = build(&attrs, &evs);
        let f = PerfFile::from_bytes(b.bytes.clone()).unwrap();
        let offs = record_offsets(&f);
        assert_eq!(offs, b.recs.iter().map(|r| r.offset).collect::<Vec<_>>());
        let p = parts_of_file(&f);
        // The whole check is the rule, after every record (the model reads
        // what was written: no TIME means nothing was written as a time).
        let seq = match attrs[0].attr.sample_type & st::TIME {
            0 => b.recs.iter().map(|r| (r.type_, 0)).collect(),
            _ => seq_of(&b.recs),
        };
        for k in 0..=seq.len() {
            assert_eq!(p.whole[k], model_holds(&seq[..k]), "{name}: {k} records");
        }
        assert_eq!(p.whole[p.n()], rule, "{name}: the fixture as meant");
        assert_joins(&p, name, &mut rng, true, true, &mut seen);
    }
    eprintln!("{seen:?}");
    assert!(seen.only_the_join.iter().all(|&n| n >= 10), "{seen:?}");
    assert!(seen.right_after_the_split >= 5, "{seen:?}");
}

#[test]
fn every_split_of_random_files_joins_to_the_whole_check() {
    let mut rng = XorShift(0x5eed_0002);
    let mut seen = Seen::default();
    let (mut held, mut broken) = (0, 0);
    for round in 0..120 {
        let evs = random_events(&mut rng);
        let b = build(&attrs(), &evs);
        let f = PerfFile::from_bytes(b.bytes).unwrap();
        let p = parts_of_file(&f);
        let seq = seq_of(&b.recs);
        for k in 0..=seq.len() {
            assert_eq!(p.whole[k], model_holds(&seq[..k]), "file {round}: {k}");
        }
        match p.whole[p.n()] {
            true => held += 1,
            false => broken += 1,
        }
        let ctx = format!("random file {round} {evs:?}");
        assert_joins(&p, &ctx, &mut rng, false, false, &mut seen);
    }
    eprintln!("{held} held, {broken} broken; {seen:?}");
    assert!(held >= 20 && broken >= 20, "{held} held, {broken} broken");
    assert!(seen.only_the_join.iter().all(|&n| n >= 10), "{seen:?}");
}

/// The check `raw_records_between` ends with is the check of its records,
/// wherever it starts: the same as `see` over them.
#[test]
fn a_part_read_from_the_file_is_see_over_its_records() {
    let b = build(&attrs(), &well_formed());
    let f = PerfFile::from_bytes(b.bytes.clone()).unwrap();
    let seq = seq_of(&b.recs);
    let n = seq.len();
    let cut = |k: usize| b.recs.get(k).map_or(b.data.1, |r| r.offset);
    let later = check(&seq[n - 3..]);
    for i in 0..=n {
        for j in i..=n {
            let from_file = part_check(&f, cut(i), cut(j));
            let direct = check(&seq[i..j]);
            // Joined after the same check, and followed by the same one,
            // the two answer alike.
            for k in 0..=i {
                let before = check(&seq[..k]);
                let mut x = before.clone();
                x.then(&from_file);
                let mut y = before;
                y.then(&direct);
                assert_eq!(x.holds(), y.holds(), "[{k}..{i}) [{i}, {j})");
                x.then(&later);
                y.then(&later);
                assert_eq!(x.holds(), y.holds(), "[{k}..{i}) [{i}, {j}) + last 3");
            }
        }
    }
}

// ------------------------------------------------------------ 1: joins, see directly

/// Random (type, time) sequences: kernel types (some above 31, which the
/// check treats as any other below 64), perf's own types with times that
/// must not count, FINISHED_ROUND at varying rates, times in order, a
/// little or a lot out of it, in a narrow range (many equal), with 0 and
/// u64::MAX now and then.
fn random_seq(rng: &mut XorShift) -> Vec<(u32, u64)> {
    let len = rng.below(36);
    let style = rng.below(5);
    let round_pct = [5, 15, 30, 50][rng.below(4)];
    let kernel = [rt::SAMPLE, rt::COMM, rt::MMAP2, rt::FORK, 1, 31, 40, 63];
    let perf_own = [
        rt::FINISHED_INIT,
        rt::HEADER_ATTR,
        rt::THREAD_MAP,
        rt::COMPRESSED,
        95,
        1000,
    ];
    let mut t = 1000u64;
    let mut v = Vec::with_capacity(len);
    for _ in 0..len {
        let r = rng.below(100);
        if r < round_pct {
            v.push((rt::FINISHED_ROUND, 0));
            continue;
        }
        if r < round_pct + 6 {
            let ty = perf_own[rng.below(perf_own.len())];
            let time = [0, 1, u64::MAX, rng.next_u64()][rng.below(4)];
            v.push((ty, time));
            continue;
        }
        let ty = kernel[rng.below(kernel.len())];
        t += rng.below(10) as u64;
        let mut time = match style {
            0 => t,
            1 => t.saturating_sub(rng.below(12) as u64),
            2 => t.saturating_sub(rng.below(60) as u64),
            3 => 1000 + rng.below(3) as u64,
            _ => rng.below(2000) as u64,
        };
        match rng.below(60) {
            0 => time = 0,
            1 => time = u64::MAX,
            _ => {}
        }
        v.push((ty, time));
    }
    v
}

#[test]
fn joins_of_see_over_random_sequences_answer_as_the_whole() {
    let mut rng = XorShift(0x5eed_0003);
    let mut seen = Seen::default();
    let (mut held, mut broken) = (0, 0);
    for round in 0..1500 {
        let seq = random_seq(&mut rng);
        let p = parts_of_seq(&seq);
        for k in 0..=seq.len() {
            assert_eq!(
                p.whole[k],
                model_holds(&seq[..k]),
                "sequence {round} {seq:?}, {k} records"
            );
        }
        match p.whole[p.n()] {
            true => held += 1,
            false => broken += 1,
        }
        let ctx = format!("sequence {round} {seq:?}");
        assert_joins(
            &p,
            &ctx,
            &mut rng,
            round % 10 == 0,
            round % 50 == 0,
            &mut seen,
        );
    }
    eprintln!("{held} held, {broken} broken; {seen:?}");
    assert!(held >= 300 && broken >= 300, "{held} held, {broken} broken");
    assert!(seen.only_the_join.iter().all(|&n| n >= 100), "{seen:?}");
    assert!(seen.right_after_the_split >= 100, "{seen:?}");
}

/// Hand-made splits where only the join can see the late record: the part
/// after the split, alone, holds.
#[test]
fn a_late_record_just_after_a_split_is_seen_by_the_join() {
    const R: (u32, u64) = (rt::FINISHED_ROUND, 0);
    let s = |time| (rt::SAMPLE, time);
    let init = (rt::FINISHED_INIT, 0);
    // (before the split, after it, whether the whole holds)
    type Case = (Vec<(u32, u64)>, Vec<(u32, u64)>, bool);
    let cases: Vec<Case> = vec![
        // The later part's first record, before any round end of its own.
        (vec![s(100), s(200), R, s(300), R], vec![s(150)], false),
        (vec![s(100), s(200), R, s(300), R], vec![s(200)], true),
        (
            vec![s(100), s(200), R, s(300), R],
            vec![s(199), R, R],
            false,
        ),
        // After one round end of the later part.
        (vec![s(100), R, s(200)], vec![R, s(99)], false),
        (vec![s(100), R, s(200)], vec![R, s(100)], true),
        // After two: judged by what came before the part.
        (vec![s(500)], vec![R, R, s(100)], false),
        (vec![s(500)], vec![R, R, s(500)], true),
        (vec![s(500)], vec![R, s(100), R, s(200)], false),
        (vec![s(500), R], vec![s(100), R, s(600), R, s(550)], true),
        (vec![s(500), R], vec![s(100), R, s(600), R, s(499)], false),
        // After many, with the newest before the split far back.
        (
            vec![s(1000), R, s(10)],
            vec![R, s(5), R, R, R, s(999)],
            false,
        ),
        (
            vec![s(1000), R, s(10)],
            vec![R, s(1000), R, s(1001), R, s(1001)],
            true,
        ),
        // Equal to what was delivered is in order; perf's own types and
        // their times do not count.
        (vec![s(200), R], vec![R, s(200)], true),
        (vec![s(200), R], vec![R, s(199)], false),
        (
            vec![s(200), init, R],
            vec![init, R, (rt::FINISHED_INIT, 1), s(200)],
            true,
        ),
        (
            vec![(rt::FINISHED_INIT, u64::MAX), R, R],
            vec![R, s(0)],
            true,
        ),
        // The split right after a round end, and right before one.
        (vec![s(300), R, R], vec![s(299)], false),
        (vec![s(300), R], vec![R, s(299)], false),
        (vec![s(300)], vec![R, s(10), s(299), R], true),
        // u64::MAX delivered: only u64::MAX is in order after it.
        (
            vec![s(u64::MAX), R, R],
            vec![s(u64::MAX), s(u64::MAX - 1)],
            false,
        ),
        (
            vec![s(u64::MAX), R, R],
            vec![s(u64::MAX), R, R, s(u64::MAX)],
            true,
        ),
    ];
    for (before, after, holds) in cases {
        let whole: Vec<_> = before.iter().chain(&after).copied().collect();
        assert_eq!(model_holds(&whole), holds, "the case as meant: {whole:?}");
        assert_eq!(check(&whole).holds(), holds, "the whole check: {whole:?}");
        let (a, b) = (check(&before), check(&after));
        assert!(a.holds() && b.holds(), "each part alone holds: {whole:?}");
        assert_eq!(join(&[&a, &b]).holds(), holds, "joined: {whole:?}");
        // Every other split, and every 3-way one, too.
        let p = parts_of_seq(&whole);
        let mut seen = Seen::default();
        assert_joins(
            &p,
            &format!("{whole:?}"),
            &mut XorShift(7),
            true,
            true,
            &mut seen,
        );
    }
}

#[test]
fn a_joined_check_keeps_joining() {
    // Checks of consecutive pieces, joined in a running check one piece at
    // a time and in a balanced tree, answer as the whole after each piece.
    let mut rng = XorShift(0x5eed_0004);
    for round in 0..300 {
        let mut seq = Vec::new();
        let mut cuts = vec![0];
        for _ in 0..1 + rng.below(12) {
            seq.extend(random_seq(&mut rng).into_iter().take(rng.below(8)));
            cuts.push(seq.len());
        }
        let pieces: Vec<RoundOrder> = cuts.windows(2).map(|w| check(&seq[w[0]..w[1]])).collect();
        let mut running = RoundOrder::default();
        for (k, piece) in pieces.iter().enumerate() {
            running.then(piece);
            let upto = cuts[k + 1];
            assert_eq!(
                running.holds(),
                check(&seq[..upto]).holds(),
                "sequence {round}: {k} pieces of {seq:?} at {cuts:?}"
            );
        }
        fn tree(p: &[RoundOrder]) -> RoundOrder {
            match p.len() {
                0 => RoundOrder::default(),
                1 => p[0].clone(),
                n => join(&[&tree(&p[..n / 2]), &tree(&p[n / 2..])]),
            }
        }
        assert_eq!(
            tree(&pieces).holds(),
            check(&seq).holds(),
            "sequence {round}: tree of {seq:?} at {cuts:?}"
        );
        // Empty checks joined anywhere change nothing.
        let mut with_empty = RoundOrder::default();
        for piece in &pieces {
            with_empty.then(&RoundOrder::default());
            with_empty.then(piece);
            with_empty.then(&RoundOrder::default());
        }
        assert_eq!(with_empty.holds(), check(&seq).holds());
    }
}

/// The queue limit (perfdata's `MAX_QUEUED`, 1 << 21, not public): the
/// records of a round and of the round before must stay below it. Only
/// `see` can drive this many records cheaply (such a file would be over
/// 100 MB). Parts split inside the big rounds must count across the join,
/// also what a part with round ends of its own leaves counted for the part
/// after it.
#[test]
fn rounds_too_big_to_queue_are_judged_alike_across_joins() {
    const LIMIT: usize = 1 << 21;
    let (n1, n2) = (LIMIT / 2, LIMIT / 2 - 1);
    let r = (rt::FINISHED_ROUND, 0);
    let s = |time: usize| (rt::SAMPLE, time as u64);
    for extra in [0, 1] {
        let mut seq = vec![r, s(1), r, s(2), r];
        let big1 = seq.len();
        seq.extend((0..n1).map(|k| s(10 + k)));
        let r1 = seq.len();
        seq.push(r);
        let big2 = seq.len();
        seq.extend((0..n2 + extra).map(|k| s(10 + n1 + k)));
        let r2 = seq.len();
        seq.push(r);
        seq.push((rt::SAMPLE, u64::MAX));
        let n = seq.len();
        let whole = check(&seq).holds();
        assert_eq!(
            whole,
            extra == 0,
            "{} records in two rounds",
            n1 + n2 + extra
        );
        assert!(
            model_holds(&seq),
            "in time order: only the queue limit counts"
        );
        let mid1 = big1 + n1 / 2;
        let mid2 = big2 + n2 / 2;
        let cuts = [0, 1, 3, big1, mid1, r1, r1 + 1, mid2, r2, r2 + 1, n];
        for &c in &cuts {
            let j = join(&[&check(&seq[..c]), &check(&seq[c..])]);
            assert_eq!(j.holds(), whole, "extra {extra}: split at {c}");
        }
        // The middle part has round ends of its own and ends inside a big
        // round: what it counted of that round and the one before carries
        // over to the last part.
        for (a, b) in [
            (1, mid2),
            (3, big2 + 1),
            (1, r1 + 1),
            (mid1, mid2),
            (r1 + 1, r2),
        ] {
            let (x, y, z) = (check(&seq[..a]), check(&seq[a..b]), check(&seq[b..]));
            assert!(
                x.holds() && y.holds(),
                "({a}, {b}): the first two parts hold"
            );
            assert_eq!(join(&[&join(&[&x, &y]), &z]).holds(), whole, "({a}, {b})");
            assert_eq!(join(&[&x, &join(&[&y, &z])]).holds(), whole, "({a}, {b})");
        }
    }
}

// ------------------------------------------------------------ 2: holds, against the reader

/// Records of kernel types (below 64), in the order `records()` delivers
/// them.
fn delivered(f: &PerfFile) -> Vec<(u64, u32)> {
    let mut it = f.records().unwrap();
    let mut v = Vec::new();
    while let Some(r) = it.next().unwrap() {
        if r.header.type_ < rt::USER_START {
            v.push((r.offset, r.header.type_));
        }
    }
    assert!(it.warnings.is_empty(), "{:?}", it.warnings);
    v
}

/// Raw records of kernel types, stably sorted by time.
fn stable_time_sort(f: &PerfFile) -> Vec<(u64, u32)> {
    let mut v: Vec<(u64, u32, u64)> = f
        .raw_records()
        .take(BOUND)
        .map(|r| r.unwrap())
        .filter(|r| r.header.type_ < rt::USER_START)
        .map(|r| (r.offset, r.header.type_, r.time))
        .collect();
    v.sort_by_key(|r| r.2);
    v.into_iter().map(|(o, t, _)| (o, t)).collect()
}

/// `holds()` is true exactly when the stable time sort is the delivered
/// order. One way is the promise. The other holds too when no round is too
/// big to queue: a record older than what a round end delivered comes
/// after a record of that newer time, which the time sort puts after it.
#[test]
fn holds_is_exactly_when_the_time_sort_is_the_delivered_order() {
    let mut rng = XorShift(0x5eed_0005);
    let mut files: Vec<(String, Vec<AttrEntry>, Vec<Ev>)> = catalog()
        .into_iter()
        .map(|(name, a, evs, _)| (name.to_string(), a, evs))
        .collect();
    for k in 0..300 {
        files.push((format!("random file {k}"), attrs(), random_events(&mut rng)));
    }
    let (mut held, mut broken) = (0, 0);
    for (name, attrs, evs) in files {
        let b = build(&attrs, &evs);
        let f = PerfFile::from_bytes(b.bytes).unwrap();
        let mut it = f.raw_records();
        for r in it.by_ref().take(BOUND) {
            r.unwrap();
        }
        let holds = it.round_order().holds();
        let sorted = stable_time_sort(&f);
        let order = delivered(&f);
        assert_eq!(
            holds,
            sorted == order,
            "{name} {evs:?}:\n time sort {sorted:?}\n delivered {order:?}"
        );
        match holds {
            true => held += 1,
            false => broken += 1,
        }
        // Both are the same records, whatever the order.
        let (mut s, mut o) = (sorted, order);
        s.sort();
        o.sort();
        assert_eq!(s, o, "{name}");
    }
    assert!(held >= 50 && broken >= 50, "{held} held, {broken} broken");
}

// ------------------------------------------------------------ 3: record_start_near

/// `record_start_near` as documented, transliterated: the first place at or
/// after `offset` (and the data's start), 8-aligned from the data's start,
/// within 1 MB of where the search starts, from which 64 headers in a row
/// are plausible (size a multiple of 8, at least 8, within the data; type
/// 1..=31 or 64..=95), or fewer that end exactly at the data's end.
fn model_start_near(bytes: &[u8], (first, end): (u64, u64), offset: u64) -> Option<u64> {
    let plausible = |p: u64| -> Option<u64> {
        if p + 8 > end {
            return None;
        }
        let p8 = p as usize;
        let ty = u32::from_le_bytes(bytes[p8..p8 + 4].try_into().unwrap());
        let size = u64::from(u16::from_le_bytes(
            bytes[p8 + 6..p8 + 8].try_into().unwrap(),
        ));
        let ok = size >= 8 && size % 8 == 0 && p + size <= end && matches!(ty, 1..=31 | 64..=95);
        ok.then_some(size)
    };
    let from = u128::from(offset.max(first));
    let at = from + (8 - (from - u128::from(first)) % 8) % 8;
    let stop = u128::from(end).min(at + (1 << 20));
    let mut p = at;
    while p < stop {
        let (mut next, mut run) = (p as u64, 0);
        while run < 64 && next < end {
            match plausible(next) {
                Some(size) => next += size,
                None => break,
            }
            run += 1;
        }
        if run == 64 || next == end {
            return Some(p as u64);
        }
        p += 8;
    }
    None
}

/// Whether the 8 bytes at `p` would pass for a record header.
fn looks_like_a_header(bytes: &[u8], end: u64, p: u64) -> bool {
    if p + 8 > end {
        return false;
    }
    let p8 = p as usize;
    let ty = u32::from_le_bytes(bytes[p8..p8 + 4].try_into().unwrap());
    let size = u64::from(u16::from_le_bytes(
        bytes[p8 + 6..p8 + 8].try_into().unwrap(),
    ));
    size >= 8 && size % 8 == 0 && p + size <= end && matches!(ty, 1..=31 | 64..=95)
}

/// Thousands of records: rounds of two CPUs' runs, side-band of several
/// sizes, callchains of 0 to 4 entries.
fn big_events() -> Vec<Ev> {
    let mut evs = vec![Cm { cpu: 0, time: 0 }, Mm { cpu: 0, time: 0 }, Init];
    for r in 0..500u64 {
        let base = 1000 + 100 * r;
        for cpu in [1u32, 0] {
            for k in 0..(3 + (r + u64::from(cpu)) % 9) {
                let time = base + 2 * k + u64::from(cpu);
                evs.push(match (r + k) % 11 {
                    0 => Cm { cpu, time },
                    1 => Mm { cpu, time },
                    2 => Fk { cpu, time },
                    3 | 4 => D { cpu, time },
                    _ => S { cpu, time },
                });
            }
        }
        evs.push(Round);
    }
    evs
}

#[test]
fn record_start_near_finds_the_next_record_of_a_well_formed_file() {
    let b = build(&attrs(), &big_events());
    let f = PerfFile::from_bytes(b.bytes.clone()).unwrap();
    let (first, end) = b.data;
    let offs = record_offsets(&f);
    assert!(offs.len() > 5000, "{}", offs.len());
    let starts: BTreeSet<u64> = offs.iter().copied().collect();
    let next_start = |o: u64| starts.range(o..).next().copied();

    // Why the answer must be the first record start at or after the offset:
    // every record's header is plausible, so from the first start the run
    // of real records qualifies (the answer is no later); and on this file
    // no 8-aligned word inside a record passes for a header at all (the
    // payload's small numbers leave the size bytes 0), so no earlier place
    // qualifies. Both are checked here rather than assumed.
    for r in &b.recs {
        assert!(looks_like_a_header(&b.bytes, end, r.offset), "{r:?}");
        assert_eq!(r.offset % 8, first % 8);
    }
    for p in (first..end).step_by(8) {
        if !starts.contains(&p) {
            assert!(
                !looks_like_a_header(&b.bytes, end, p),
                "a false header at {p:#x}"
            );
        }
    }

    let mut offsets: Vec<u64> = Vec::new();
    // Every 8 bytes over a stretch from before the data, every byte over a
    // shorter one (unaligned offsets), every 8 over the last 8 KB.
    offsets.extend((first.saturating_sub(128)..first + 40_000).step_by(8));
    offsets.extend(first + 100_000..first + 102_000);
    offsets.extend((end - 8192..end).step_by(8));
    offsets.extend(0..16);
    let mut rng = XorShift(0x5eed_0006);
    offsets.extend((0..3000).map(|_| rng.next_u64() % (end + 64)));
    for &o in &offsets {
        let got = f.record_start_near(o);
        assert_eq!(got, next_start(o), "record_start_near({o:#x})");
        assert_eq!(
            got,
            model_start_near(&b.bytes, b.data, o),
            "model at {o:#x}"
        );
    }

    // Inside the last records: the answer's run of records (fewer than 64)
    // ends exactly at the data's end; inside the last record there is none.
    let n = offs.len();
    for k in n - 70..n {
        let (start, size) = (b.recs[k].offset, b.recs[k].size);
        for o in [start + 1, start + 8, start + size / 2, start + size - 1] {
            let got = f.record_start_near(o);
            assert_eq!(got, next_start(o), "record {k}, offset {o:#x}");
            let Some(s) = got else {
                assert_eq!(k, n - 1, "only after the last record's start is there none");
                continue;
            };
            let mut it = f.raw_records_between(s, u64::MAX);
            let mut run = 0;
            for r in it.by_ref().take(BOUND) {
                r.unwrap();
                run += 1;
            }
            assert_eq!(
                it.offset(),
                end,
                "the run from {s:#x} ends at the data's end"
            );
            assert_eq!(run, n - 1 - k);
        }
    }

    // At and past the data's end: none.
    for o in [
        end,
        end + 1,
        end + 7,
        end + 8,
        end + 4096,
        b.bytes.len() as u64,
    ] {
        assert_eq!(f.record_start_near(o), None, "{o:#x}");
    }
    for o in [u64::MAX / 2, 1 << 62, u64::MAX - 8 * 1024 * 1024] {
        assert_eq!(f.record_start_near(o), None, "{o:#x}");
    }
}

/// An offset near `u64::MAX` is past the data's end like any other.
#[test]
fn record_start_near_past_the_data_end_near_u64_max_is_none() {
    let b = build(&attrs(), &well_formed());
    let f = PerfFile::from_bytes(b.bytes).unwrap();
    for o in [u64::MAX - 7, u64::MAX - 1, u64::MAX] {
        let r = std::panic::catch_unwind(|| f.record_start_near(o));
        assert_eq!(r.ok(), Some(None), "record_start_near({o:#x})");
    }
}

/// The answer is a guess, as documented: a word inside a record that
/// passes for a header whose size lands on the next record start is
/// taken for a record start. Realistic values do it: a sample time of
/// 0x0030_0000_0000_0009 (156 days after boot, low 32 bits 9) in a sample
/// 80 bytes long reads as a SAMPLE header of 48 bytes, which ends where the
/// next record starts. The guess is never later than the true next start,
/// and reading from a known record up to it shows it wrong.
#[test]
fn record_start_near_can_take_a_word_inside_a_record_for_a_start() {
    let base = 0x0030_0000_0001_0000u64;
    let mut evs: Vec<Ev> = (0..200)
        .map(|k| S {
            cpu: k % 2,
            time: base + 1000 * u64::from(k),
        })
        .collect();
    evs.push(Round);
    // Record 102 has a callchain of 2 (102 % 5), so 80 bytes: its time
    // word is at +32, 48 bytes before the next record.
    let k = 102;
    evs[k] = S {
        cpu: 0,
        time: 0x0030_0000_0000_0009,
    };
    let b = build(&attrs(), &evs);
    assert_eq!(b.recs[k].size, 80);
    let f = PerfFile::from_bytes(b.bytes.clone()).unwrap();
    let starts: BTreeSet<u64> = record_offsets(&f).into_iter().collect();
    let time_word = b.recs[k].offset + 32;
    assert_eq!(le64(&b.bytes, time_word as usize), 0x0030_0000_0000_0009);
    for o in b.recs[k].offset + 1..=time_word {
        let got = f.record_start_near(o);
        assert_eq!(got, model_start_near(&b.bytes, b.data, o));
        assert_eq!(got, Some(time_word), "from {o:#x}");
        assert!(!starts.contains(&time_word));
        // Never past the true next start.
        assert!(got.unwrap() <= *starts.range(o..).next().unwrap());
    }
    // Reading from a known record start past the guess shows it wrong.
    let walk: Vec<u64> = f
        .raw_records_between(b.recs[k - 1].offset, b.recs[k + 2].offset)
        .map(|r| r.unwrap().offset)
        .collect();
    assert!(!walk.contains(&time_word));
    // Anywhere else, it is the next start.
    for o in (b.data.0..b.data.1).step_by(8) {
        if !(b.recs[k].offset + 1..=time_word).contains(&o) {
            assert_eq!(f.record_start_near(o), starts.range(o..).next().copied());
        }
    }
}

/// Records are 8-aligned from the data's start, which the writer puts
/// 8-aligned in the file too; moved 4 bytes back (over the end of the attr
/// section), the file's grid and the data's differ, and the data's counts.
#[test]
fn record_start_near_keeps_to_the_grid_of_the_data_start() {
    let evs: Vec<Ev> = (0..150)
        .map(|k| match k % 9 {
            8 => Round,
            _ => S {
                cpu: k % 2,
                time: 100 + u64::from(k),
            },
        })
        .collect();
    let b = build_parts(&attrs(), &[0; 4], &evs, &[]);
    let mut bytes = b.bytes.clone();
    let (start, end) = b.data;
    bytes[40..48].copy_from_slice(&(start - 4).to_le_bytes());
    bytes[48..56].copy_from_slice(&(end - start + 4).to_le_bytes());
    let f = PerfFile::from_bytes(bytes.clone()).unwrap();
    let data = (start - 4, end);
    // The first 8 bytes (the attr section's last 4, then 4 zeros) are no
    // header, so `raw_records` cannot frame this data: the starts are what
    // was written.
    let starts: BTreeSet<u64> = b.recs.iter().map(|r| r.offset).collect();
    assert!(starts.iter().all(|&o| o % 8 == 4 && (o - data.0) % 8 == 0));
    let mut rng = XorShift(0x5eed_0008);
    let mut offsets: Vec<u64> = (data.0 - 16..data.0 + 3000).collect();
    offsets.extend((0..500).map(|_| data.0 + rng.next_u64() % (end - data.0 + 16)));
    for o in offsets {
        let got = f.record_start_near(o);
        assert_eq!(got, starts.range(o..).next().copied(), "offset {o:#x}");
        assert_eq!(
            got,
            model_start_near(&bytes, data, o),
            "model, offset {o:#x}"
        );
    }
}

/// The search ends 1 MB after where it starts.
#[test]
fn record_start_near_looks_no_further_than_a_megabyte() {
    let mb = 1u64 << 20;
    let head = vec![0u8; (mb + 4096) as usize];
    let evs: Vec<Ev> = (0..100)
        .map(|k| S {
            cpu: k % 2,
            time: 100 + u64::from(k),
        })
        .collect();
    let b = build_parts(&attrs(), &head, &evs, &[]);
    let f = PerfFile::from_bytes(b.bytes.clone()).unwrap();
    let real = b.recs[0].offset;
    assert_eq!(real, b.data.0 + head.len() as u64);
    assert_eq!(f.record_start_near(b.data.0), None, "a megabyte of zeros");
    assert_eq!(f.record_start_near(real - mb - 8), None);
    assert_eq!(f.record_start_near(real - mb + 8), Some(real));
    assert_eq!(f.record_start_near(real - 4000), Some(real));
    assert_eq!(f.record_start_near(real), Some(real));
    for o in [b.data.0, real - mb - 8, real - mb, real - mb + 8, real - 1] {
        assert_eq!(
            f.record_start_near(o),
            model_start_near(&b.bytes, b.data, o)
        );
    }
}

/// Garbage data sections: an answer or none, never a panic, and the
/// answer the documented rule gives. A few MB each; the scans are bounded
/// by the 1 MB window.
#[test]
fn record_start_near_on_garbage_answers_as_documented_and_does_not_panic() {
    let mut rng = XorShift(0x5eed_0007);
    let size = 3 << 20;
    let word = |ty: u32, misc: u16, size: u16| -> [u8; 8] {
        let mut w = [0u8; 8];
        w[..4].copy_from_slice(&ty.to_le_bytes());
        w[4..6].copy_from_slice(&misc.to_le_bytes());
        w[6..].copy_from_slice(&size.to_le_bytes());
        w
    };
    let mut garbage: Vec<(&str, Vec<u8>)> = Vec::new();
    garbage.push((
        "random bytes",
        (0..size).map(|_| rng.next_u64() as u8).collect(),
    ));
    garbage.push(("zeros", vec![0; size]));
    // Plausible headers of sizes 8..32, one word in 40 not one.
    let mut soup = Vec::with_capacity(size);
    while soup.len() < size {
        let w = match rng.below(40) {
            0 => rng.next_u64().to_le_bytes(),
            _ => {
                let ty = [1, 9, 31, 64, 68, 95][rng.below(6)];
                word(ty, rng.next_u64() as u16, 8 * (1 + rng.below(4) as u16))
            }
        };
        soup.extend_from_slice(&w);
    }
    garbage.push(("header soup", soup));
    // Every word a header of 8 bytes: every place qualifies.
    garbage.push(("all headers", word(9, 0, 8).repeat(size / 8)));
    // Runs of 63 headers, then a word that is not one: no place qualifies,
    // and each tries 63 headers or fewer (the slow case).
    let mut runs = Vec::with_capacity(size);
    while runs.len() < size {
        for _ in 0..63 {
            runs.extend_from_slice(&word(9, 0, 8));
        }
        runs.extend_from_slice(&word(200, 0, 8));
    }
    garbage.push(("runs of 63", runs));
    // Headers of 12 bytes, chained but off the 8-byte grid.
    garbage.push((
        "sizes off the grid",
        [&word(9, 0, 12)[..], &[0; 4]].concat().repeat(size / 12),
    ));
    // Sizes that jump far, some past the end.
    garbage.push((
        "big sizes",
        (0..size / 8)
            .flat_map(|_| word(9, 0, 0xfff8 - 8 * rng.below(4) as u16))
            .collect(),
    ));
    for (name, g) in &garbage {
        let slow = matches!(*name, "runs of 63" | "big sizes");
        let tails: &[usize] = if slow { &[0] } else { &[0, 3] };
        for &tail in tails {
            let mut g = g.clone();
            g.truncate(g.len() - tail);
            let b = build_parts(&attrs(), &g, &[], &[]);
            let f = PerfFile::from_bytes(b.bytes.clone()).unwrap();
            let (first, end) = b.data;
            // The slow cases (every place tries many headers) a few times,
            // the others more.
            let mut offsets = vec![first + 4, end - 9, end - 1, end, end + 1, u64::MAX / 2];
            if !slow {
                offsets.extend([0, first, b.bytes.len() as u64]);
                offsets.extend((0..5).map(|_| first + rng.next_u64() % (end - first)));
            }
            for o in offsets {
                let got = f.record_start_near(o);
                let ctx = format!("{name} less {tail}, offset {o:#x}");
                assert_eq!(got, model_start_near(&b.bytes, b.data, o), "{ctx}");
                if let Some(s) = got {
                    assert!(s >= o && s >= first && s < end, "{ctx}: {s:#x}");
                    assert_eq!((s - first) % 8, 0, "{ctx}: {s:#x}");
                }
            }
        }
    }
}

/// A round of more records than the reader queues (2^21, `MAX_QUEUED`)
/// overflows, alone or joined from parts; a late record breaks the order
/// without overflowing (the flat pass places those, not early deliveries).
#[test]
fn an_overfull_round_overflows_and_a_late_record_does_not() {
    let full: Vec<(u32, u64)> = (0..(1u64 << 21) + 1).map(|t| (rt::SAMPLE, t)).collect();
    let c = check(&full);
    assert!(!c.holds() && c.overflows());
    let (a, b) = full.split_at(1 << 20);
    let mut joined = check(a);
    joined.then(&check(b));
    assert!(!joined.holds() && joined.overflows());
    let late = [
        (rt::SAMPLE, 10),
        (rt::FINISHED_ROUND, 0),
        (rt::SAMPLE, 20),
        (rt::FINISHED_ROUND, 0),
        (rt::SAMPLE, 5),
    ];
    let c = check(&late);
    assert!(!c.holds() && !c.overflows());
}
