//! `PerfFile::raw_records`: records framed in file order, not decoded, with
//! `time_order_holds` telling whether sorting them by time (equal times in
//! file order) gives the order `PerfFile::records` delivers. Checked against
//! files written here record by record, and against the ordered reader as
//! the oracle. Needs no perf.
mod common;

use common::built::{
    self, attrs, attrs_without_time, le64, model_holds, seq_of, well_formed, Built, Ev, Ev::*,
    Fill, Written,
};
use common::*;
use perfdata::{
    context, encode_record, record_type as rt, sample_type as st, AttrEntry, Comm, Error,
    EventAttr, ForkExit, Mmap2, PerfFile, PerfFileWriter, Record, SampleId,
};

// ------------------------------------------------------------ building files

/// A file of `evs`, then `tail` (verbatim, inside the data section). Its
/// records are told apart by pid and period (`Fill::Distinct`): the tests
/// below check what they decode against that.
fn build_with_tail(attrs: &[AttrEntry], evs: &[Ev], tail: &[u8]) -> Built {
    built::build_parts(Fill::Distinct, attrs, &[], evs, tail)
}

fn build(attrs: &[AttrEntry], evs: &[Ev]) -> Built {
    build_with_tail(attrs, evs, &[])
}

// ------------------------------------------------------------ reading

/// More items than any file here has records: iterators are read with
/// this bound so that one that does not end fails instead of hanging.
const BOUND: usize = 10_000;

/// (offset, type, time) of every raw record, and `time_order_holds` at the
/// end. Errors fail the test.
fn raw_all(f: &PerfFile) -> (Vec<(u64, u32, u64)>, bool) {
    let mut it = f.raw_records();
    let mut v = Vec::new();
    for r in it.by_ref() {
        let r = r.unwrap();
        assert_eq!(r.raw.len(), r.header.size as usize);
        v.push((r.offset, r.header.type_, r.time));
    }
    (v, it.time_order_holds())
}

/// (offset, type) of what the reader delivers, in its order.
fn delivered(f: &PerfFile, sorted: bool) -> Vec<(u64, u32)> {
    let mut it = if sorted {
        f.records()
    } else {
        f.records_in_file_order()
    }
    .unwrap();
    let mut v = Vec::new();
    while let Some(r) = it.next().unwrap() {
        v.push((r.offset, r.header.type_));
    }
    assert!(it.warnings.is_empty(), "{:?}", it.warnings);
    v
}

/// Raw records sorted by time, equal times in file order (a stable sort),
/// without the FINISHED_ROUNDs the ordered reader consumes.
fn stable_time_sort(raw: &[(u64, u32, u64)]) -> Vec<(u64, u32)> {
    let mut v: Vec<_> = raw
        .iter()
        .filter(|r| r.1 != rt::FINISHED_ROUND)
        .copied()
        .collect();
    v.sort_by_key(|r| r.2);
    v.into_iter().map(|(o, t, _)| (o, t)).collect()
}

fn written_order(recs: &[Written]) -> Vec<(u64, u32)> {
    recs.iter().map(|r| (r.offset, r.type_)).collect()
}

// ------------------------------------------------------------ 1: a good file

#[test]
fn well_formed_file_raw_order_is_file_order_and_time_sort_is_the_delivered_order() {
    let b = build(&attrs(), &well_formed());
    assert!(
        model_holds(&seq_of(&b.recs)),
        "the fixture keeps the round rule"
    );
    let f = PerfFile::from_bytes(b.bytes.clone()).unwrap();

    // Every record, in file order, as written and as the file-order
    // reader sees it.
    let mut it = f.raw_records();
    assert_eq!(it.offset(), b.data.0, "starts at the data section");
    let mut raw = Vec::new();
    for (k, r) in it.by_ref().enumerate() {
        let r = r.unwrap();
        let w = &b.recs[k];
        assert_eq!((r.offset, r.header.type_), (w.offset, w.type_), "#{k}");
        assert_eq!(u64::from(r.header.size), w.size, "#{k}");
        assert_eq!(
            r.raw,
            &b.bytes[w.offset as usize..(w.offset + w.size) as usize]
        );
        // FINISHED_ROUND carries no time; everything else the time written.
        assert_eq!(r.time, w.time, "#{k} ({:?})", well_formed()[k]);
        raw.push((r.offset, r.header.type_, r.time));
    }
    assert_eq!(raw.len(), b.recs.len());
    assert_eq!(it.offset(), b.data.1, "ends at the data section's end");
    assert!(it.next().is_none(), "stays ended");
    assert!(it.time_order_holds());
    let file_order: Vec<(u64, u32)> = raw.iter().map(|r| (r.0, r.1)).collect();
    assert_eq!(file_order, delivered(&f, false));
    assert_eq!(file_order, written_order(&b.recs));

    // The oracle: the ordered reader delivers the stable time sort.
    let sorted = stable_time_sort(&raw);
    let ordered = delivered(&f, true);
    assert_eq!(sorted, ordered);
    // And the data is not trivially ordered: the time sort differs from
    // file order.
    let no_rounds: Vec<_> = file_order
        .iter()
        .filter(|r| r.1 != rt::FINISHED_ROUND)
        .copied()
        .collect();
    assert_ne!(sorted, no_rounds);
}

#[test]
fn time_order_holds_stays_true_record_by_record_on_a_good_file() {
    let b = build(&attrs(), &well_formed());
    let f = PerfFile::from_bytes(b.bytes).unwrap();
    let mut it = f.raw_records();
    assert!(it.time_order_holds(), "before any record");
    let mut n = 0;
    while let Some(r) = it.next() {
        let r = r.unwrap();
        assert_eq!(it.offset(), r.offset + u64::from(r.header.size));
        assert!(it.time_order_holds(), "after the record at {:#x}", r.offset);
        n += 1;
    }
    assert_eq!(n, b.recs.len());
}

// ------------------------------------------------------------ 2: a late record

#[test]
fn a_record_older_than_what_a_round_delivered_breaks_time_order() {
    let evs = [
        S { cpu: 0, time: 100 },
        S { cpu: 1, time: 200 },
        Round, // delivers up to 0
        S { cpu: 0, time: 300 },
        Round, // delivers up to 200: 100 and 200
        Cm { cpu: 1, time: 250 },
        S { cpu: 1, time: 150 }, // older than 200, already delivered
        S { cpu: 0, time: 400 },
        Round,
    ];
    let b = build(&attrs(), &evs);
    assert!(!model_holds(&seq_of(&b.recs)));
    let late = b.recs[6].offset;
    let f = PerfFile::from_bytes(b.bytes).unwrap();

    // It holds up to the late record, and not from it on.
    let mut it = f.raw_records();
    let mut raw = Vec::new();
    while let Some(r) = it.next() {
        let r = r.unwrap();
        raw.push((r.offset, r.header.type_, r.time));
        assert_eq!(
            it.time_order_holds(),
            r.offset < late,
            "after the record at {:#x}",
            r.offset
        );
    }
    assert_eq!(raw.len(), evs.len());
    assert!(!it.time_order_holds());

    // The oracle agrees: the ordered reader delivers 150 after 200.
    let ordered = delivered(&f, true);
    let sorted = stable_time_sort(&raw);
    assert_ne!(ordered, sorted);
    // Both hold the same records, only the order differs.
    let (mut a, mut s) = (ordered.clone(), sorted.clone());
    a.sort();
    s.sort();
    assert_eq!(a, s);
    let at = |v: &[(u64, u32)], off: u64| v.iter().position(|r| r.0 == off).unwrap();
    let r200 = b.recs[1].offset;
    assert!(at(&ordered, late) > at(&ordered, r200));
    assert!(at(&sorted, late) < at(&sorted, r200));
}

#[test]
fn late_by_one_round_is_still_in_order_and_equal_to_delivered_too() {
    // The boundary of the rule, both sides: 150 after a round end that
    // delivered nothing, and 200 after one that delivered 200, are in order.
    let evs = [
        S { cpu: 0, time: 100 },
        S { cpu: 0, time: 200 },
        Round, // delivers up to 0
        S { cpu: 1, time: 150 },
        S { cpu: 1, time: 300 },
        Round, // delivers up to 200
        Fk { cpu: 1, time: 200 },
        S { cpu: 0, time: 200 },
        S { cpu: 0, time: 310 },
        Round,
    ];
    let b = build(&attrs(), &evs);
    assert!(model_holds(&seq_of(&b.recs)));
    let f = PerfFile::from_bytes(b.bytes).unwrap();
    let (raw, holds) = raw_all(&f);
    assert!(holds);
    assert_eq!(stable_time_sort(&raw), delivered(&f, true));

    // One tick older than what was delivered, and it is not.
    let mut evs = evs;
    evs[7] = S { cpu: 0, time: 199 };
    let b = build(&attrs(), &evs);
    let f = PerfFile::from_bytes(b.bytes).unwrap();
    let (raw, holds) = raw_all(&f);
    assert!(!holds);
    assert_ne!(stable_time_sort(&raw), delivered(&f, true));
}

// ------------------------------------------------------------ 3: no TIME

#[test]
fn without_time_raw_order_is_file_order() {
    let evs = [
        Cm { cpu: 0, time: 500 },
        S { cpu: 1, time: 300 },
        S { cpu: 0, time: 100 },
        Round,
        Mm { cpu: 1, time: 50 },
        S { cpu: 1, time: 20 },
        Round,
        Fk { cpu: 0, time: 10 },
        S { cpu: 0, time: 1 },
    ];
    let b = build(&attrs_without_time(), &evs);
    let f = PerfFile::from_bytes(b.bytes).unwrap();
    let (raw, holds) = raw_all(&f);
    assert!(holds);
    // Nothing in the records is a time.
    assert!(raw.iter().all(|r| r.2 == 0), "{raw:?}");
    let file_order: Vec<(u64, u32)> = raw.iter().map(|r| (r.0, r.1)).collect();
    assert_eq!(file_order, written_order(&b.recs));
    // The ordered reader, with nothing to order by, delivers file order,
    // FINISHED_ROUNDs included.
    assert_eq!(delivered(&f, true), file_order);
    assert_eq!(delivered(&f, false), file_order);
}

// ------------------------------------------------------------ 4: ranges

#[test]
fn between_two_record_offsets_yields_exactly_those_records() {
    let b = build(&attrs(), &well_formed());
    let f = PerfFile::from_bytes(b.bytes.clone()).unwrap();
    let offs: Vec<u64> = f.raw_records().map(|r| r.unwrap().offset).collect();
    assert_eq!(offs, b.recs.iter().map(|r| r.offset).collect::<Vec<_>>());
    let n = offs.len();
    let range = |s: u64, e: u64| -> Vec<u64> {
        f.raw_records_between(s, e)
            .map(|r| r.unwrap().offset)
            .collect()
    };
    for i in 0..n {
        for j in i..n {
            assert_eq!(range(offs[i], offs[j]), offs[i..j], "[{i}, {j})");
        }
        // An end past the data (into the feature sections, past the file)
        // is clipped to the data's end.
        for end in [b.data.1, b.data.1 + 1, b.bytes.len() as u64, u64::MAX] {
            assert_eq!(range(offs[i], end), offs[i..], "[{i}, {end:#x})");
        }
    }
    let mut it = f.raw_records_between(offs[3], u64::MAX);
    assert_eq!(it.offset(), offs[3]);
    assert_eq!(it.by_ref().take(BOUND).count(), n - 3);
    assert_eq!(it.offset(), b.data.1);

    // The section split at record boundaries, read in parts, is the whole.
    let cuts = [offs[0], offs[5], offs[6], offs[17], offs[n - 1], u64::MAX];
    let mut parts = Vec::new();
    for w in cuts.windows(2) {
        for r in f.raw_records_between(w[0], w[1]) {
            let r = r.unwrap();
            parts.push((r.offset, r.header.type_, r.time, r.raw));
        }
    }
    let whole: Vec<_> = f
        .raw_records()
        .map(|r| r.unwrap())
        .map(|r| (r.offset, r.header.type_, r.time, r.raw))
        .collect();
    assert_eq!(parts, whole);
}

#[test]
fn between_with_an_end_before_the_data_is_empty_not_a_panic() {
    let b = build(&attrs(), &well_formed());
    let f = PerfFile::from_bytes(b.bytes).unwrap();
    let first = b.recs[0].offset;
    assert!(first > 0);
    // An empty range anywhere, and ranges ending before the data starts
    // (a caller's zero-initialised split point, say).
    assert_eq!(
        f.raw_records_between(b.recs[4].offset, b.recs[4].offset)
            .take(BOUND)
            .count(),
        0
    );
    assert_eq!(
        f.raw_records_between(b.recs[4].offset, b.recs[2].offset)
            .take(BOUND)
            .count(),
        0
    );
    for (s, e) in [(0, 0), (first, first - 1), (first, 8), (u64::MAX, 0)] {
        let r = std::panic::catch_unwind(|| f.raw_records_between(s, e).take(BOUND).count());
        assert_eq!(r.ok(), Some(0), "raw_records_between({s:#x}, {e:#x})");
    }
}

#[test]
fn a_mapped_file_reads_the_same_across_released_pages() {
    // Well over 16 MiB of records, so that the pages behind the iterator
    // are released a few times: every record (and the bytes of records
    // handed out long before) must still read as written.
    let per_run = 1000u64;
    let mut evs = Vec::new();
    for round in 0..220u64 {
        let t = 1_000_000 + round * 10 * per_run;
        for k in 0..per_run {
            evs.push(S {
                cpu: 1,
                time: t + 2 * k + 1,
            });
        }
        for k in 0..per_run {
            evs.push(S {
                cpu: 0,
                time: t + 2 * k,
            });
        }
        evs.push(Round);
    }
    let b = build(&attrs(), &evs);
    assert!(b.data.1 - b.data.0 > 32 << 20, "{:#x}", b.data.1 - b.data.0);
    let dir = TempDir::new("raw-records-big");
    let p = dir.path("big.data");
    std::fs::write(&p, &b.bytes).unwrap();
    let f = PerfFile::open(&p).unwrap();
    let expect = |r: &Written| &b.bytes[r.offset as usize..(r.offset + r.size) as usize];

    let mut it = f.raw_records();
    let mut held = Vec::new();
    let mut n = 0;
    for r in it.by_ref() {
        let r = r.unwrap();
        let w = &b.recs[n];
        assert_eq!(
            (r.offset, r.header.type_, r.time),
            (w.offset, w.type_, w.time)
        );
        assert!(r.raw == expect(w), "record {n} at {:#x}", r.offset);
        if n % 50_000 == 0 {
            held.push((n, r));
        }
        n += 1;
    }
    assert_eq!(n, b.recs.len());
    assert!(it.time_order_holds());
    assert!(held.len() >= 5);
    for (k, r) in &held {
        assert!(r.raw == expect(&b.recs[*k]), "held record {k}");
        assert_eq!(f.parse(r).unwrap().2.time, b.recs[*k].time);
    }

    // A reader of the second half only, as a thread would.
    let mid = b.recs.len() / 2;
    let mut got = 0;
    for (k, r) in f
        .raw_records_between(b.recs[mid].offset, u64::MAX)
        .enumerate()
    {
        let r = r.unwrap();
        let w = &b.recs[mid + k];
        assert_eq!(r.offset, w.offset);
        assert!(r.raw == expect(w), "record {} at {:#x}", mid + k, r.offset);
        got += 1;
    }
    assert_eq!(got, b.recs.len() - mid);
}

// ------------------------------------------------------------ 5: framing damage

/// Read everything, bounded; returns the records before the error, the
/// error, and asserts that nothing follows it.
fn read_to_error(f: &PerfFile, ctx: &str) -> (Vec<u64>, Error) {
    let mut it = f.raw_records();
    let mut ok = Vec::new();
    let bound = f.data_size() as usize / 8 + 2;
    for _ in 0..bound {
        match it.next() {
            Some(Ok(r)) => ok.push(r.offset),
            Some(Err(e)) => {
                for _ in 0..3 {
                    assert!(it.next().is_none(), "{ctx}: something after the error");
                }
                return (ok, e);
            }
            None => panic!("{ctx}: no error"),
        }
    }
    panic!("{ctx}: the iterator does not end");
}

fn assert_names_offset(e: &Error, off: u64, ctx: &str) {
    let s = e.to_string();
    assert!(s.contains(&format!("offset {off:#x}")), "{ctx}: {s}");
    assert!(
        matches!(e, Error::Parse { offset, .. } if *offset == off),
        "{ctx}: {e:?}"
    );
}

#[test]
fn a_size_below_8_is_one_error_at_its_offset_then_the_end() {
    let b = build(&attrs(), &well_formed());
    let n = b.recs.len();
    for k in [0, 1, 10, 17, n - 1] {
        for size in [0u16, 1, 7] {
            let ctx = format!("record {k} size {size}");
            let off = b.recs[k].offset;
            let mut m = b.bytes.clone();
            m[off as usize + 6..off as usize + 8].copy_from_slice(&size.to_le_bytes());
            let f = PerfFile::from_bytes(m).unwrap();
            let (ok, e) = read_to_error(&f, &ctx);
            let before: Vec<u64> = b.recs[..k].iter().map(|r| r.offset).collect();
            assert_eq!(ok, before, "{ctx}");
            assert_names_offset(&e, off, &ctx);
        }
    }
}

#[test]
fn a_size_past_the_data_end_is_one_error_at_its_offset_then_the_end() {
    let b = build(&attrs(), &well_formed());
    assert!(b.data.1 - b.data.0 < 0xfff0, "small enough for a u16 size");
    let n = b.recs.len();
    for k in [0, 3, 10, n - 1] {
        let off = b.recs[k].offset;
        let left = b.data.1 - off;
        // One byte too many, and the most a header can claim.
        for size in [left + 1, 0xffff] {
            let ctx = format!("record {k} size {size}");
            let mut m = b.bytes.clone();
            m[off as usize + 6..off as usize + 8].copy_from_slice(&(size as u16).to_le_bytes());
            let f = PerfFile::from_bytes(m).unwrap();
            let (ok, e) = read_to_error(&f, &ctx);
            let before: Vec<u64> = b.recs[..k].iter().map(|r| r.offset).collect();
            assert_eq!(ok, before, "{ctx}");
            assert_names_offset(&e, off, &ctx);
        }
    }
    // A size that takes exactly what is left is a record, not damage.
    let off = b.recs[n - 1].offset;
    let f = PerfFile::from_bytes(b.bytes.clone()).unwrap();
    assert_eq!(
        f.raw_records().take(BOUND).last().unwrap().unwrap().offset,
        off
    );
}

#[test]
fn stray_bytes_at_the_data_end_are_one_error_after_every_record() {
    let evs = &well_formed()[..12];
    for stray in 1..=7usize {
        let tail: Vec<u8> = (0..stray as u8).map(|i| 0xa0 + i).collect();
        let b = build_with_tail(&attrs(), evs, &tail);
        let ctx = format!("{stray} stray bytes");
        let f = PerfFile::from_bytes(b.bytes).unwrap();
        let (ok, e) = read_to_error(&f, &ctx);
        assert_eq!(ok, b.recs.iter().map(|r| r.offset).collect::<Vec<_>>());
        assert_names_offset(&e, b.data.1 - stray as u64, &ctx);
    }
    // The same in a range that ends at the data's end.
    let b = build_with_tail(&attrs(), evs, &[0; 3]);
    let f = PerfFile::from_bytes(b.bytes).unwrap();
    let got: Vec<_> = f
        .raw_records_between(b.recs[10].offset, u64::MAX)
        .take(BOUND)
        .map(|r| r.map(|r| r.offset).map_err(|e| e.to_string()))
        .collect();
    assert_eq!(got.len(), 3, "{got:?}");
    assert_eq!(got[0], Ok(b.recs[10].offset));
    assert_eq!(got[1], Ok(b.recs[11].offset));
    let e = got[2].as_ref().unwrap_err();
    assert!(e.contains(&format!("offset {:#x}", b.data.1 - 3)), "{e}");
}

#[test]
fn framing_errors_name_the_file_when_it_has_one() {
    let b = build(&attrs(), &well_formed());
    let off = b.recs[5].offset;
    let mut m = b.bytes.clone();
    m[off as usize + 6..off as usize + 8].copy_from_slice(&3u16.to_le_bytes());
    let dir = TempDir::new("raw-records");
    let p = dir.path("damaged.data");
    std::fs::write(&p, &m).unwrap();
    let f = PerfFile::open(&p).unwrap();
    let (ok, e) = read_to_error(&f, "from a path");
    assert_eq!(ok.len(), 5);
    let s = e.to_string();
    assert!(s.contains(&p.display().to_string()), "{s}");
    assert!(s.contains(&format!("offset {off:#x}")), "{s}");
}

// ------------------------------------------------------------ 6: parse

#[test]
fn parse_of_a_raw_record_decodes_as_the_ordered_reader_does() {
    let evs = well_formed();
    let b = build(&attrs(), &evs);
    let f = PerfFile::from_bytes(b.bytes.clone()).unwrap();
    let raw: Vec<_> = f.raw_records().map(|r| r.unwrap()).collect();
    let mut it = f.records().unwrap();
    let (mut samples, mut side) = (0, 0);
    while let Some(r) = it.next().unwrap() {
        let k = raw.iter().position(|x| x.offset == r.offset).unwrap();
        let (h, rec, sid) = f.parse(&raw[k]).unwrap();
        assert_eq!(h, r.header, "at {:#x}", r.offset);
        assert_eq!(rec, r.record, "at {:#x}", r.offset);
        assert_eq!(sid, r.sample_id, "at {:#x}", r.offset);
        assert_eq!(raw[k].raw, r.raw);
        // And what was decoded is what was written.
        let w = &b.recs[k];
        match rec {
            Record::Sample(s) => {
                samples += 1;
                assert_eq!((s.time, s.cpu, s.pid, s.ip), (w.time, w.cpu, w.pid, w.ip));
                let attr = if matches!(evs[k], D { .. }) { 1 } else { 0 };
                assert_eq!(f.attr_index(s.id), Some(attr));
                assert_eq!(s.id, 11 + 2 * attr as u64 + w.cpu as u64);
                if attr == 0 {
                    assert_eq!(s.period, 10_000 + k as u64);
                    assert_eq!(s.callchain().collect::<Vec<_>>(), [context::USER, w.ip]);
                } else {
                    assert_eq!(s.callchain, None, "the dummy event has no callchain");
                }
                assert_eq!(sid.time, w.time);
            }
            Record::Comm(Comm { pid, comm, .. }) => {
                side += 1;
                assert_eq!((pid, comm), (w.pid, &b"worker"[..]));
                assert_eq!((sid.time, sid.cpu), (w.time, w.cpu));
            }
            Record::Mmap2(Mmap2 { pid, .. }) | Record::Fork(ForkExit { pid, .. }) => {
                side += 1;
                assert_eq!(pid, w.pid);
                assert_eq!((sid.time, sid.cpu), (w.time, w.cpu));
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    let written_samples = evs
        .iter()
        .filter(|e| matches!(e, S { .. } | D { .. }))
        .count();
    assert_eq!(samples, written_samples);
    assert_eq!(
        side,
        evs.len() - written_samples - 4,
        "all but the 4 rounds"
    );
    // `sample` decodes samples as `parse` does, and refuses the rest.
    for r in &raw {
        match f.parse(r).unwrap().1 {
            Record::Sample(s) => assert_eq!(f.sample(r).unwrap(), s, "at {:#x}", r.offset),
            _ => assert!(f.sample(r).is_err(), "at {:#x}", r.offset),
        }
    }
    // FINISHED_ROUND parses as itself.
    let round = raw
        .iter()
        .find(|r| r.header.type_ == rt::FINISHED_ROUND)
        .unwrap();
    assert_eq!(f.parse(round).unwrap().1, Record::FinishedRound);
}

#[test]
fn parse_of_a_damaged_body_is_an_error_at_its_offset() {
    // Framing intact, body too short for its trailer: the iterator goes
    // on, parse says where.
    let attrs = attrs();
    let mut w = PerfFileWriter::new(std::io::Cursor::new(Vec::new()), &attrs).unwrap();
    let mut short = Vec::new();
    encode_record(
        &Record::Other(rt::COMM),
        0,
        &SampleId::default(),
        &EventAttr::default(),
        &mut short,
    );
    assert_eq!(short.len(), 8, "a bare header, no trailer");
    w.write_raw(&short).unwrap();
    w.finished_round().unwrap();
    let bytes = w.finish(&Default::default()).unwrap().into_inner();
    let data = le64(&bytes, 40);
    let f = PerfFile::from_bytes(bytes).unwrap();
    let raw: Vec<_> = f.raw_records().map(|r| r.unwrap()).collect();
    assert_eq!(raw.len(), 2);
    let e = f.parse(&raw[0]).unwrap_err();
    assert_names_offset(&e, data, "short COMM");
    // Asked for a sample, it is the same error.
    let e = f.sample(&raw[0]).unwrap_err();
    assert_names_offset(&e, data, "short COMM as a sample");
}

// ------------------------------------------------------------ the promise's edges

/// `time_order_holds` promises: sorted by time, equal times in file order,
/// the records are in the order `records()` delivers them. perf record
/// writes FINISHED_INIT after its synthesized side-band (time 0); the
/// ordered reader delivers it at once, before that queued side-band, while
/// a time sort (FINISHED_INIT has no time: 0) puts it after. So perf's own
/// record types are outside the promise, as documented; the rest holds.
#[test]
fn holds_implies_the_time_sort_is_the_delivered_order_with_finished_init() {
    let evs = [
        Cm { cpu: 0, time: 0 },
        Mm { cpu: 0, time: 0 },
        Init,
        S { cpu: 0, time: 100 },
        S { cpu: 1, time: 90 },
        Round,
        S { cpu: 0, time: 200 },
        Round,
    ];
    let b = build(&attrs(), &evs);
    assert!(model_holds(&seq_of(&b.recs)));
    let f = PerfFile::from_bytes(b.bytes).unwrap();
    let (raw, holds) = raw_all(&f);
    // perf's own record types are outside the promise (documented).
    let kernel_types = |v: Vec<(u64, u32)>| -> Vec<(u64, u32)> {
        v.into_iter().filter(|r| r.1 < rt::USER_START).collect()
    };
    let sorted = kernel_types(stable_time_sort(&raw));
    let ordered = kernel_types(delivered(&f, true));
    assert!(holds);
    assert!(
        sorted == ordered,
        "time_order_holds() is true, but\n time sort {sorted:?}\n delivered {ordered:?}"
    );
}

/// The ordered reader sorts only when the first attr has TIME; a file whose
/// second event has TIME is delivered in file order, while raw records
/// carry that event's sample times.
#[test]
fn holds_implies_the_time_sort_is_the_delivered_order_when_only_a_later_attr_has_time() {
    let no_time = EventAttr {
        type_: 1,
        sample_type: st::IP | st::TID | st::IDENTIFIER,
        ..Default::default()
    };
    let with_time = EventAttr {
        sample_type: st::IP | st::TID | st::TIME | st::IDENTIFIER,
        config: 9,
        ..no_time
    };
    let attrs = vec![
        AttrEntry {
            attr: no_time,
            ids: vec![11, 12],
            name: "a".into(),
        },
        AttrEntry {
            attr: with_time,
            ids: vec![13, 14],
            name: "b".into(),
        },
    ];
    let evs = [D { cpu: 0, time: 200 }, D { cpu: 1, time: 100 }, Round];
    let b = build(&attrs, &evs);
    let f = PerfFile::from_bytes(b.bytes).unwrap();
    let (raw, holds) = raw_all(&f);
    let sorted = stable_time_sort(&raw);
    let ordered = delivered(&f, true)
        .into_iter()
        .filter(|r| r.1 != rt::FINISHED_ROUND)
        .collect::<Vec<_>>();
    assert!(
        !holds || sorted == ordered,
        "time_order_holds() is true, but\n time sort {sorted:?}\n delivered {ordered:?}"
    );
}
