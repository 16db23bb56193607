//! The pass for flat profiles: samples counted without being put in time
//! order.
//!
//! Without call chains a sample needs only its thread, address and mode,
//! and the state its process (maps, command) or the BPF symbols were in at
//! its time. That state changes only at side-band records, some thousands
//! in a recording of a million samples. So both cores read the file once,
//! in pieces, keeping the side band and counting the samples by thread,
//! address and mode, with the first and last time of each count. Then the
//! side band is put in time order, and both cores settle their counts by
//! (thread, address, mode, last change before the samples): a count whose
//! samples fell between the same two changes that matter to it is settled
//! whole, and the few that straddle one are counted again from the file,
//! sample by sample. Last, the side band is replayed alone, and each count
//! is settled as soon as the replay has applied the change it saw. When
//! threads merge (no command or pid in the report), the workers find user
//! locations themselves in a timeline of every process's maps, and count
//! by location: a compiler run a thousand times is then one count per
//! address, not one per process. The rows are those of the ordered pass
//! (a test holds the two equal), without the cost of ordering every
//! record, which was most of the reading.

mod counting;
mod history;
mod keys;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Sender};

use perfdata::{record_type as rt, PerfFile, RawRecord, RoundOrder};

use super::events::{change_of, is_kernel_mode, owner, side_event, Event};
use super::map_timeline::{At, MapTimeline};
use super::profile::{LocRows, Pass, Profile, ProfileOptions};
use crate::progress::Progress;
use crate::symbolize::{DsoId, Loc};
use counting::{KeyCounts, RawCounts, Who, Worker};
use history::History;
use keys::{Site, Tally};

/// Pieces per worker, of about equal size: more than one, as a piece may
/// hold more samples than another, and a worker may share its core with
/// the symbol loader.
const PIECES_PER_WORKER: usize = 8;

/// One worker per core ([`crate::parallel::cores`]), and at least two: one
/// core still reads and counts while the other loads symbols.
fn workers() -> usize {
    crate::parallel::cores().max(2)
}

/// What one worker read: its pieces (index and what each held), and the
/// raw counts of all their samples.
type Read = (Vec<(usize, Piece)>, RawCounts);

/// Run the pass; `None` when the file needs the ordered pass: compressed,
/// damaged (the ordered pass reports how), or in an order perf's rounds
/// would rearrange.
pub(super) fn run(
    file: &PerfFile,
    p: &mut Profile,
    opts: &ProfileOptions,
    sampling: usize,
    progress: &mut Progress,
) -> Option<Pass> {
    let workers = workers();
    let bounds = cut(file, workers);
    let n = bounds.len() - 1;
    let merge = opts.merge_threads;
    let next = AtomicUsize::new(0);
    let read = |tx: Sender<Msg>| -> Option<Read> {
        let mut raw = RawCounts::new();
        let mut pieces = Vec::new();
        while let Some(i) = take(&next, n) {
            let (from, to) = (bounds[i], bounds[i + 1]);
            // A piece that did not read to its end exactly (its start was
            // no record's) or did not decode leaves the file to the
            // ordered pass.
            raw.piece(i);
            pieces.push((i, read_piece(file, from, to, sampling, merge, &mut raw)?));
            let _ = tx.send(Msg::Read(to - from));
        }
        Some((pieces, raw))
    };
    let mut done = 0;
    let read = on_workers(workers, read, |msg| {
        if let Msg::Read(bytes) = msg {
            done += bytes;
            progress.show(done);
        }
    });
    let mut read: Vec<Read> = read.into_iter().collect::<Option<_>>()?;
    let mut pieces: Vec<Option<Piece>> = (0..n).map(|_| None).collect();
    let mut raws = Vec::with_capacity(read.len());
    for (mine, raw) in read.drain(..) {
        let indices: Vec<usize> = mine.iter().map(|&(i, _)| i).collect();
        for (i, piece) in mine {
            pieces[i] = Some(piece);
        }
        raws.push((indices, raw));
    }
    let mut pieces: Vec<Piece> = pieces.into_iter().collect::<Option<_>>()?;
    let mut order = pieces[0].order.clone();
    for piece in &pieces[1..] {
        order.then(&piece.order);
    }
    if !order.holds() {
        return None;
    }
    // Pieces in file order, each in file order: sorting by time alone
    // (stable) puts equal times in file order.
    let mut events: Vec<(At, Event)> =
        Vec::with_capacity(pieces.iter().map(|x| x.side.len()).sum());
    for piece in &mut pieces {
        events.append(&mut piece.side);
    }
    events.sort_by_key(|&((time, _), _)| time);
    let history = History::of(&events);
    let maps = MapTimeline::of(&events, |m| p.map_dso(m));
    // Each worker settles a reader's counts, taken whole.
    let raws: Vec<_> = raws
        .into_iter()
        .map(|r| std::sync::Mutex::new(Some(r)))
        .collect();
    let next = AtomicUsize::new(0);
    let settle = |tx: Sender<Msg>| {
        let w = Worker {
            merge,
            history: &history,
            maps: &maps,
            tx,
        };
        let mut keys = KeyCounts::default();
        while let Some(i) = take(&next, raws.len()) {
            let Some((indices, counts)) = raws[i].lock().ok().and_then(|mut r| r.take()) else {
                continue;
            };
            let straddle = w.settle(counts.finish(), &mut keys);
            for &i in indices.iter().filter(|&&i| straddle.in_piece(i)) {
                let (from, to) = (bounds[i], bounds[i + 1]);
                recount(file, from, to, sampling, merge, |who, at, period| {
                    if straddle.who.contains(who) {
                        w.one(&mut keys, who, at, period);
                    }
                });
            }
        }
        w.tally(keys)
    };
    // Symbols load while the workers settle.
    let tallies = on_workers(workers, settle, |msg| {
        if let Msg::Dso(d) = msg {
            p.sym.prefetch(d);
        }
    });
    let mut tally = Tally::new(0);
    for t in tallies {
        tally.merge(t);
    }
    for piece in pieces {
        tally.merge(piece.totals);
    }
    Some(replay(p, opts, file, events, tally))
}

/// Run `work` on `workers` threads, handling the messages they send here,
/// and return what each returned.
fn on_workers<T: Send>(
    workers: usize,
    work: impl Fn(Sender<Msg>) -> T + Sync,
    mut on_msg: impl FnMut(Msg),
) -> Vec<T> {
    let (tx, rx) = channel();
    std::thread::scope(|s| {
        let work = &work;
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                let tx = tx.clone();
                s.spawn(move || work(tx))
            })
            .collect();
        drop(tx);
        rx.into_iter().for_each(&mut on_msg);
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

/// The next of `n` pieces for whichever worker asks.
fn take(next: &AtomicUsize, n: usize) -> Option<usize> {
    let i = next.fetch_add(1, Ordering::Relaxed);
    (i < n).then_some(i)
}

/// Where to cut the data into pieces: the data's start and end, and record
/// starts found near equal steps between them. Each cut is only a guess
/// (found by the look of record headers), confirmed when the piece before
/// it reads exactly up to it.
fn cut(file: &PerfFile, workers: usize) -> Vec<u64> {
    let start = file.raw_records().offset();
    let end = start + file.data_size();
    let pieces = (workers * PIECES_PER_WORKER) as u64;
    let step = (end - start) / pieces;
    let mut bounds = vec![start];
    for i in 1..pieces {
        if let Some(at) = file.record_start_near(start + i * step) {
            if at > bounds[bounds.len() - 1] && at < end {
                bounds.push(at);
            }
        }
    }
    bounds.push(end);
    bounds
}

/// What a piece holds, read once.
struct Piece {
    /// The side band, decoded while its pages are mapped.
    side: Vec<(At, Event)>,
    order: RoundOrder,
    /// Totals of its samples (`counts` empty).
    totals: Tally,
}

/// A sample of the sampling event: whose, when, and its period; `None`
/// for another event's, counted in `totals`. Read the same way when a
/// piece is read again, so that a recount sees the same samples.
fn sample_of(
    file: &PerfFile,
    r: &RawRecord<'_>,
    sampling: usize,
    merge: bool,
    last_id: &mut Option<(u64, usize)>,
    totals: &mut Tally,
) -> perfdata::Result<Option<(Who, At, u64)>> {
    let s = file.sample(r)?;
    // Samples of one event follow each other: its id, asked once.
    let attr = match *last_id {
        Some((id, attr)) if id == s.id => attr,
        _ => {
            let attr = file.attr_index(s.id).unwrap_or(0);
            *last_id = Some((s.id, attr));
            attr
        }
    };
    if attr != sampling {
        if let Some(n) = totals.other.get_mut(attr) {
            *n += 1;
        }
        return Ok(None);
    }
    let kernel = is_kernel_mode(r.header.misc, s.ip);
    let (tid, pid) = owner(merge, kernel, s.tid, s.pid);
    let period = s.period.max(1);
    totals.total.add(period);
    totals.first_time = totals.first_time.min(s.time);
    totals.last_time = totals.last_time.max(s.time);
    let who = Who {
        pid,
        tid,
        ip: s.ip,
        kernel,
    };
    Ok(Some((who, (r.time, r.offset), period)))
}

fn read_piece(
    file: &PerfFile,
    from: u64,
    to: u64,
    sampling: usize,
    merge: bool,
    raw: &mut RawCounts,
) -> Option<Piece> {
    let mut side = Vec::new();
    let mut totals = Tally::new(file.attrs().len());
    let mut raws = file.raw_records_between(from, to);
    let mut last_id = None;
    for r in raws.by_ref() {
        let r = r.ok()?;
        match r.header.type_ {
            rt::SAMPLE => {}
            rt::COMPRESSED | rt::COMPRESSED2 => return None,
            t if t >= rt::USER_START => continue,
            _ => {
                let (_, record, sid) = file.parse(&r).ok()?;
                if let Some(ev) = side_event(&record, &sid) {
                    side.push(((r.time, r.offset), ev));
                }
                continue;
            }
        }
        if let Some((who, at, period)) =
            sample_of(file, &r, sampling, merge, &mut last_id, &mut totals).ok()?
        {
            raw.add(who, at.0, period);
        }
    }
    if raws.offset() != to {
        return None;
    }
    Some(Piece {
        side,
        order: raws.round_order().clone(),
        totals,
    })
}

/// Read a piece again, handing each sample of the sampling event to
/// `each`: for the counts that straddle a change. The piece read whole
/// the first time, so it does again.
fn recount(
    file: &PerfFile,
    from: u64,
    to: u64,
    sampling: usize,
    merge: bool,
    mut each: impl FnMut(&Who, At, u64),
) {
    let mut totals = Tally::new(file.attrs().len());
    let mut last_id = None;
    for r in file.raw_records_between(from, to).flatten() {
        if r.header.type_ != rt::SAMPLE {
            continue;
        }
        if let Ok(Some((who, at, period))) =
            sample_of(file, &r, sampling, merge, &mut last_id, &mut totals)
        {
            each(&who, at, period);
        }
    }
}

enum Msg {
    /// A shared object that samples probably hit.
    Dso(DsoId),
    /// Bytes read.
    Read(u64),
}

/// Replay the side band, settling each count once the replay has applied
/// the last change it saw.
fn replay(
    p: &mut Profile,
    opts: &ProfileOptions,
    file: &PerfFile,
    events: Vec<(At, Event)>,
    mut tally: Tally,
) -> Pass {
    p.total.merge(tally.total);
    p.first_time = p.first_time.min(tally.first_time);
    p.last_time = p.last_time.max(tally.last_time);
    for (attr, &n) in tally.other.iter().enumerate().filter(|(_, &n)| n > 0) {
        *p.other_events
            .entry(file.attrs()[attr].name.clone())
            .or_default() += n;
    }
    let mut rows = LocRows::default();
    let mut next = tally.counts().peekable();
    let mut settle = |p: &mut Profile, seq: u32| {
        while let Some((k, c)) = next.next_if(|(k, _)| k.seq <= seq) {
            match k.site() {
                // Each location once, and none that a BPF event could
                // change: no other count lands on its row.
                Site::Found(loc) if opts.merge_threads => rows.push_unique((0, 0, 0, loc), c),
                Site::Found(loc) => {
                    p.count_at(&mut rows, opts, (k.pid, k.tid, 0), loc, c);
                }
                Site::Kernel(ip) => {
                    p.settle(&mut rows, opts, (k.pid, k.tid, ip, true), c);
                }
                Site::User(ip) => {
                    p.settle(&mut rows, opts, (k.pid, k.tid, ip, false), c);
                }
            }
        }
    };
    settle(p, 0);
    let mut seq = 0;
    for (_, ev) in &events {
        p.apply(ev);
        if change_of(ev).is_some() {
            seq += 1;
            settle(p, seq);
        }
    }
    settle(p, u32::MAX);
    Pass {
        rows,
        loc_nodes: vec![(0, Loc::Unknown(0))],
        ..Pass::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use perfdata::Record;

    /// A file of `n` user samples of two processes, one of which maps its
    /// binary halfway through, in rounds of 10 records.
    fn synthetic(n: u64) -> PerfFile {
        synthetic_mapping_at(n, None)
    }

    /// The same, with the map stamped `map_time` instead of its place's.
    fn synthetic_mapping_at(n: u64, map_time: Option<u64>) -> PerfFile {
        use perfdata::{sample_type as st, AttrEntry, EventAttr, PerfFileWriter, Sample, SampleId};
        let attr = EventAttr {
            type_: perfdata::event_type::SOFTWARE,
            sample_type: st::IP | st::TID | st::TIME | st::PERIOD,
            flags: perfdata::flags::SAMPLE_ID_ALL,
            ..Default::default()
        };
        let attrs = [AttrEntry {
            attr,
            ids: vec![],
            name: "cpu-clock".into(),
        }];
        let cursor = std::io::Cursor::new(Vec::new());
        let mut w = PerfFileWriter::new(cursor, &attrs).unwrap();
        let sid = |pid: u32, time: u64| SampleId {
            pid,
            tid: pid,
            time,
            ..Default::default()
        };
        let mmap = |pid: u32, name: &'static [u8]| {
            Record::Mmap(perfdata::Mmap {
                pid,
                tid: pid,
                addr: 0x40_0000,
                len: 0x1000,
                pgoff: 0,
                filename: name,
            })
        };
        w.write(&mmap(7, b"/bin/a"), perfdata::misc::USER, &sid(7, 1))
            .unwrap();
        for i in 0..n {
            let pid = 7 + (i % 2) as u32;
            let time = 10 + i;
            if i == n / 2 {
                let t = map_time.unwrap_or(time);
                w.write(&mmap(8, b"/bin/b"), perfdata::misc::USER, &sid(8, t))
                    .unwrap();
            }
            let s = Sample {
                ip: 0x40_0010 + 8 * (i % 5),
                pid,
                tid: pid,
                time,
                addr: 0,
                id: 0,
                stream_id: 0,
                cpu: 0,
                period: 1000,
                callchain: None,
            };
            w.write(&Record::Sample(s), perfdata::misc::USER, &sid(pid, time))
                .unwrap();
            if i % 10 == 9 {
                w.finished_round().unwrap();
            }
        }
        let bytes = w.finish(&Default::default()).unwrap().into_inner();
        PerfFile::from_bytes(bytes).unwrap()
    }

    #[test]
    fn a_piece_that_starts_inside_a_record_is_refused() {
        let f = synthetic(200);
        let offsets: Vec<u64> = f.raw_records().map(|r| r.unwrap().offset).collect();
        let end = f.raw_records().offset() + f.data_size();
        let read = |from| {
            let mut raw = RawCounts::new();
            read_piece(&f, from, end, 0, true, &mut raw).map(|p| (p, raw.finish()))
        };
        let (whole, raw) = read(offsets[0]).expect("the whole data");
        assert_eq!(whole.totals.total.samples, 200);
        assert_eq!(raw.iter().map(|(_, s)| s.counts.samples).sum::<u64>(), 200);
        assert_eq!(whole.side.len(), 2);
        let from = offsets[50];
        let (_, raw) = read(from).expect("from a record");
        let after = f
            .raw_records()
            .map(|r| r.unwrap())
            .filter(|r| r.offset >= from && r.header.type_ == rt::SAMPLE)
            .count() as u64;
        assert!(after < 200);
        assert_eq!(
            raw.iter().map(|(_, s)| s.counts.samples).sum::<u64>(),
            after
        );
        for wrong in [from + 8, from + 16] {
            assert!(read(wrong).is_none(), "{wrong}");
        }
    }

    #[test]
    fn flat_and_ordered_passes_agree_on_a_map_that_changes() {
        let f = synthetic(400);
        let build = |ordered| {
            let opts = ProfileOptions {
                ordered,
                merge_threads: true,
                ..ProfileOptions::default()
            };
            let p = Profile::build(&f, &opts).unwrap();
            assert_eq!(p.ordered_pass, ordered);
            let mut rows: Vec<(String, String, u64)> = p
                .rows
                .iter()
                .map(|(k, c)| {
                    let dso = p.sym.dsos[k.frame.dso as usize].name.clone();
                    (
                        dso,
                        p.sym.syms[k.frame.sym as usize].name.clone(),
                        c.samples,
                    )
                })
                .collect();
            rows.sort();
            (rows, p.total)
        };
        let (flat, total) = build(false);
        assert_eq!(total.samples, 400);
        // Before its map, process 8's samples are in no binary.
        assert!(flat.iter().any(|r| r.0 == "/bin/b"));
        assert!(flat.iter().any(|r| !r.0.starts_with("/bin")));
        assert_eq!(flat, build(true).0);
    }

    #[test]
    fn a_file_out_of_round_order_takes_the_ordered_pass() {
        // Stamped before rounds already delivered: perf's reader delivers
        // it late, which no sort by time reproduces.
        let f = synthetic_mapping_at(400, Some(5));
        let opts = ProfileOptions {
            merge_threads: true,
            ..ProfileOptions::default()
        };
        let p = Profile::build(&f, &opts).unwrap();
        assert!(p.ordered_pass);
        assert_eq!(p.total.samples, 400);
        // In order, the same map takes the flat pass.
        let p = Profile::build(&synthetic_mapping_at(400, None), &opts).unwrap();
        assert!(!p.ordered_pass);
    }
}
