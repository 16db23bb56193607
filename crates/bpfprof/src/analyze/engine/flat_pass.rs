//! The pass for flat profiles: samples counted without being put in time
//! order.
//!
//! Without call chains a sample needs only its thread, address and mode,
//! and the state its process (maps, command) or the BPF symbols were in at
//! its time. That state changes only at side-band records, some thousands
//! in a recording of a million samples. So both cores read the file once,
//! in pieces, keeping the side band and a compact copy of each sample;
//! then the side band is put in the order perf's reader delivers it (time
//! order, but for records a ring handed over late: `delivery`), and both
//! cores count the
//! samples by (thread, address, mode, last change before the sample);
//! last, the side band is replayed alone, and each count is settled as
//! soon as the replay has applied the change it saw. When threads merge
//! (no command or pid in the report), the workers find user locations
//! themselves in a timeline of every process's maps, and count by
//! location: a compiler run a thousand times is then one count per
//! address, not one per process; kernel samples in the kernel's own text
//! are counted by address while the file is read (`kernel_text`). The
//! rows are those of
//! the ordered pass (a test holds the two equal), without the cost of
//! ordering every record, which was most of the reading.

use std::collections::hash_map::Entry;
use std::sync::atomic::AtomicUsize;
use std::sync::mpsc::{channel, Sender};

use perfdata::{record_type as rt, PerfFile, RoundOrder};
use rustc_hash::FxHashMap;

use super::delivery::{self, At, Late, Rounds};
use super::early_frames::LocKey;
use super::events::{change_of, is_kernel_mode, owner, side_event, Event};
use super::history::{self, History, Seen};
use super::kernel_text::{self, TextCounts};
use super::map_timeline::MapTimeline;
use super::{Engine, LocRows};
use crate::analyze::profile::Counts;
use crate::huge_vec::HugeVec;
use crate::progress::Progress;
use crate::symbolize::{DsoId, Loc};

/// Pieces per worker, of about equal size: more than one, as a piece may
/// hold more samples than another, and a worker may share its core with
/// the symbol loader.
const PIECES_PER_WORKER: usize = 8;

/// One worker per core ([`crate::parallel::cores`]), and at least two: one
/// core still reads and counts while the other loads symbols.
fn workers() -> usize {
    crate::parallel::cores().max(2)
}

/// Count a flat profile of `file` into `e`; false when the file needs the
/// ordered pass: compressed, damaged (the ordered pass reports how), or
/// with more records in a round than perf's reader holds back.
pub(super) fn run(file: &PerfFile, e: &mut Engine) -> bool {
    let mut progress = Progress::new(e.opts.progress, file.data_size());
    let counted = count(file, e, &mut progress).is_some();
    if counted {
        progress.finish();
    }
    counted
}

fn count(file: &PerfFile, e: &mut Engine, progress: &mut Progress) -> Option<()> {
    let (merge, sampling) = (e.opts.merge_threads, e.sampling);
    let workers = workers();
    let bounds = cut(file, workers);
    let n = bounds.len() - 1;
    // Merging threads, kernel samples outside any BPF code are counted as
    // they are read (see `kernel_text`).
    let text = if merge { kernel_text::of(file) } else { None };
    let next = AtomicUsize::new(0);
    // Each reader's copies in one buffer: a huge page per piece left half
    // of each page unused (zeroed for nothing).
    let read = |reader: usize, tx: Sender<Msg>| {
        let mut out = Vec::new();
        let mut direct = text.map(TextCounts::new);
        let mut copies = HugeVec::new();
        while let Some(i) = crate::parallel::take(&next, n) {
            let (from, to) = (bounds[i], bounds[i + 1]);
            let piece = read_piece(
                file,
                from,
                to,
                sampling,
                merge,
                &mut copies,
                direct.as_mut(),
            )
            .map(|p| Piece { reader, ..p });
            out.push((i, piece));
            let _ = tx.send(Msg::Read(to - from));
        }
        (out, direct, copies)
    };
    let mut done = 0;
    let mut pieces: Vec<Option<Piece>> = (0..n).map(|_| None).collect();
    let read = on_workers(workers, read, |msg| {
        if let Msg::Read(bytes) = msg {
            done += bytes;
            progress.show(done);
        }
    });
    let mut direct = Vec::new();
    let mut copies = Vec::with_capacity(workers);
    for (out, d, c) in read {
        for (i, piece) in out {
            pieces[i] = piece;
        }
        direct.extend(d);
        copies.push(c);
    }
    // A piece that did not read to its end exactly (its start was no
    // record's) or did not decode leaves the file to the ordered pass.
    let mut pieces: Vec<Piece> = pieces.into_iter().collect::<Option<_>>()?;
    let mut order = pieces[0].order.clone();
    for piece in &pieces[1..] {
        order.then(&piece.order);
    }
    // The reader delivered some records early when its queue filled: left
    // to the ordered pass, which reads as it does.
    if order.overflows() {
        return None;
    }
    let late = match order.holds() {
        true => None,
        false => Some(late_records(&pieces, &copies)),
    };
    let mut events: Vec<(At, Event)> =
        Vec::with_capacity(pieces.iter().map(|x| x.side.len()).sum());
    for piece in &mut pieces {
        if let Some(late) = &late {
            let mut cursor = late.cursor(piece.start);
            for (at, _) in &mut piece.side {
                *at = cursor.at(at.0, at.1);
            }
        }
        events.append(&mut piece.side);
    }
    events.sort_by_key(|&(at, _)| at);
    let bpf = history::bpf_ranges(&events);
    if let Some((start, end)) = text {
        // Never seen, but then the samples counted by address were wrong.
        if bpf.iter().any(|r| r.0 < end && start < r.1) {
            return None;
        }
    }
    // Both read the whole side band, on one core each: on a recording of
    // thousands of short-lived processes, the timeline of their maps is
    // the longest step between reading and counting.
    let (history, maps) = crate::parallel::join(
        || History::of(&events, bpf),
        || MapTimeline::of(&events, |m| e.map_dso(m)),
    );
    let maps = maps?;
    let next = AtomicUsize::new(0);
    let count = |_: usize, tx: Sender<Msg>| {
        let w = Worker {
            copies: &copies,
            merge,
            history: &history,
            maps: &maps,
            late: late.as_ref(),
            tx,
        };
        w.count(&pieces, &next)
    };
    // Symbols load while the workers count.
    let tallies = on_workers(workers, count, |msg| {
        if let Msg::Dso(d) = msg {
            e.p.sym.prefetch(d);
        }
    });
    let mut tally = Tally::new(0);
    for t in tallies {
        tally.merge(t);
    }
    for d in direct {
        let kernel = |ip| Key::new(0, 0, 0, Site::Found(Loc::Kernel(ip)));
        let counts = d.into_sorted().into_iter().map(|(ip, c)| (kernel(ip), c));
        tally.merge(Tally::of(counts.collect()));
    }
    for piece in pieces {
        tally.merge(piece.totals);
    }
    // Freed here, into malloc's heaps (see `huge_vec` for why not on
    // another thread, as mappings of their own).
    drop(copies);
    replay(e, file, events, tally);
    Some(())
}

/// Where the records delivered late go: the round ends of every piece,
/// and the times and offsets of its samples and side band, in file order.
fn late_records(pieces: &[Piece], copies: &[HugeVec<Compact>]) -> Late {
    let rounds: Vec<&Rounds> = pieces.iter().map(|p| &p.rounds).collect();
    let side = pieces
        .iter()
        .flat_map(|p| p.side.iter().map(|(at, _)| (at.0, at.1)));
    let samples = pieces.iter().flat_map(|p| {
        let copies = copies[p.reader].slices(p.samples.clone());
        copies.flatten().map(|c| (c.time, c.offset(p.start)))
    });
    Late::of(
        &rounds,
        [
            Box::new(side) as Box<dyn Iterator<Item = _>>,
            Box::new(samples),
        ],
    )
}

/// Run `work` on `workers` threads, handling the messages they send here,
/// and return what each returned, in order; each is told its number.
fn on_workers<T: Send>(
    workers: usize,
    work: impl Fn(usize, Sender<Msg>) -> T + Sync,
    mut on_msg: impl FnMut(Msg),
) -> Vec<T> {
    let (tx, rx) = channel();
    std::thread::scope(|s| {
        let work = &work;
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let tx = tx.clone();
                s.spawn(move || work(w, tx))
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

/// Where to cut the data into pieces: the data's start and end, and record
/// starts found near equal steps between them. Each cut is only a guess
/// (found by the look of record headers), confirmed when the piece before
/// it reads exactly up to it.
fn cut(file: &PerfFile, workers: usize) -> Vec<u64> {
    let start = file.raw_records().offset();
    let end = start + file.data_size();
    // Pieces stay under 1 GB, as samples keep their offset in 31 bits.
    let pieces = ((workers * PIECES_PER_WORKER) as u64).max((end - start) >> 30);
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
    start: u64,
    /// Its samples' copies: which reader's buffer, and where in it.
    reader: usize,
    samples: std::ops::Range<usize>,
    order: RoundOrder,
    rounds: Rounds,
    /// Totals of its samples (`counts` empty).
    totals: Tally,
}

/// A sample of the sampling event, with what counting needs, in 32 bytes:
/// a big recording holds a million of them at once.
#[derive(Clone, Copy)]
struct Compact {
    time: u64,
    ip: u64,
    /// Offset from the piece's start, and [`KERNEL_MODE`].
    rel: u32,
    period: u32,
    /// Thread and process, or what stands for them when threads merge.
    tid: u32,
    pid: u32,
}

/// The bit of [`Compact::rel`] that says the sample is in kernel mode.
const KERNEL_MODE: u32 = 1 << 31;

impl Compact {
    fn kernel(&self) -> bool {
        self.rel & KERNEL_MODE != 0
    }

    fn offset(&self, piece_start: u64) -> u64 {
        piece_start + u64::from(self.rel & !KERNEL_MODE)
    }
}

/// Read a piece; kernel samples that `direct` takes are counted there.
fn read_piece(
    file: &PerfFile,
    from: u64,
    to: u64,
    sampling: usize,
    merge: bool,
    copies: &mut HugeVec<Compact>,
    mut direct: Option<&mut TextCounts>,
) -> Option<Piece> {
    if to - from >= u64::from(KERNEL_MODE) {
        return None;
    }
    let mut side = Vec::new();
    let first = copies.len();
    let mut totals = Tally::new(file.attrs().len());
    let mut raws = file.raw_records_between(from, to);
    let mut rounds = Rounds::default();
    let mut last_id = None;
    for r in raws.by_ref() {
        let r = r.ok()?;
        match r.header.type_ {
            rt::FINISHED_ROUND => {
                rounds.round_end(r.offset);
                continue;
            }
            rt::COMPRESSED | rt::COMPRESSED2 => return None,
            t if t >= rt::USER_START => continue,
            _ => rounds.record(r.time),
        }
        if r.header.type_ != rt::SAMPLE {
            let (_, record, sid) = file.parse(&r).ok()?;
            if let Some(ev) = side_event(&record, &sid) {
                side.push((delivery::at(r.time, r.offset), ev));
            }
            continue;
        }
        let s = file.sample(&r).ok()?;
        // Samples of one event follow each other: its id, looked up once.
        let attr = match last_id {
            Some((id, attr)) if id == s.id => attr,
            _ => {
                let attr = file.attr_index(s.id).unwrap_or(0);
                last_id = Some((s.id, attr));
                attr
            }
        };
        if attr != sampling {
            totals.other[attr] += 1;
            continue;
        }
        let kernel = is_kernel_mode(r.header.misc, s.ip);
        let (tid, pid) = owner(merge, kernel, s.tid, s.pid);
        let period = s.period.max(1);
        totals.total.add(period);
        totals.first_time = totals.first_time.min(s.time);
        totals.last_time = totals.last_time.max(s.time);
        if let Some(d) = direct.as_deref_mut() {
            if kernel && d.add(s.ip, period) {
                continue;
            }
        }
        copies
            .push(Compact {
                time: r.time,
                ip: s.ip,
                rel: (r.offset - from) as u32 | if kernel { KERNEL_MODE } else { 0 },
                // Periods past 32 bits (4 s of cpu-clock) are left to the
                // ordered pass.
                period: u32::try_from(period).ok()?,
                tid,
                pid,
            })
            .ok()?;
    }
    if raws.offset() != to {
        return None;
    }
    Some(Piece {
        side,
        start: from,
        // Whose buffer `copies` is, only the caller knows.
        reader: 0,
        samples: first..copies.len(),
        order: raws.round_order().clone(),
        rounds,
        totals,
    })
}

enum Msg {
    /// A shared object that samples probably hit.
    Dso(DsoId),
    /// Bytes read.
    Read(u64),
}

/// Samples counted alike: same thread, address, mode and last change
/// seen; or, when threads merge, same location wherever it could be found
/// while counting (all but code that may be BPF). A [`Site`] packed in
/// `tag` and `addr`, so that a key takes 24 bytes: a report by thread has
/// hundreds of thousands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Key {
    seq: u32,
    /// What `addr` is: see the `TAG_` constants.
    tag: u32,
    pid: u32,
    tid: u32,
    addr: u64,
}

// Tags of found locations sort as `Loc` does, so that counts by location
// come out of the tally in location order.
const TAG_USER: u32 = 0;
const TAG_KERNEL: u32 = 1;
const TAG_FOUND_KERNEL: u32 = 2;
const TAG_FOUND_BPF: u32 = 3;
/// Plus the shared object's id.
const TAG_FOUND_USER: u32 = 4;
const TAG_FOUND_UNKNOWN: u32 = u32::MAX;

impl Key {
    fn new(seq: u32, pid: u32, tid: u32, site: Site) -> Key {
        let (tag, addr) = match site {
            Site::User(ip) => (TAG_USER, ip),
            Site::Kernel(ip) => (TAG_KERNEL, ip),
            Site::Found(Loc::Kernel(a)) => (TAG_FOUND_KERNEL, a),
            Site::Found(Loc::Bpf(b)) => (TAG_FOUND_BPF, u64::from(b)),
            Site::Found(Loc::User(dso, rel)) => (TAG_FOUND_USER + dso, rel),
            Site::Found(Loc::Unknown(a)) => (TAG_FOUND_UNKNOWN, a),
        };
        Key {
            seq,
            tag,
            pid,
            tid,
            addr,
        }
    }

    fn site(&self) -> Site {
        match self.tag {
            TAG_USER => Site::User(self.addr),
            TAG_KERNEL => Site::Kernel(self.addr),
            TAG_FOUND_KERNEL => Site::Found(Loc::Kernel(self.addr)),
            TAG_FOUND_BPF => Site::Found(Loc::Bpf(self.addr as u32)),
            TAG_FOUND_UNKNOWN => Site::Found(Loc::Unknown(self.addr)),
            t => Site::Found(Loc::User(t - TAG_FOUND_USER, self.addr)),
        }
    }
}

/// Where a count's samples went: found while counting, or an address
/// left for the replay to locate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Site {
    Found(Loc),
    Kernel(u64),
    User(u64),
}

impl Site {
    /// `loc`, if a [`Key`] can hold it (the shared object's id fits its
    /// tag; four billion binaries would not).
    fn found(loc: Loc) -> Option<Site> {
        match loc {
            Loc::User(dso, _) if dso >= TAG_FOUND_UNKNOWN - TAG_FOUND_USER => None,
            _ => Some(Site::Found(loc)),
        }
    }
}

struct Tally {
    /// Lists sorted by key, each key once in a list: one per worker.
    lists: Vec<Vec<(Key, Counts)>>,
    /// Samples of events other than the sampling one, by attr index.
    other: Vec<u64>,
    total: Counts,
    first_time: u64,
    last_time: u64,
}

impl Tally {
    fn new(attrs: usize) -> Tally {
        Tally {
            lists: Vec::new(),
            other: vec![0; attrs],
            total: Counts::default(),
            first_time: u64::MAX,
            last_time: 0,
        }
    }

    /// A tally of `counts`, sorted by key, each key once.
    fn of(counts: Vec<(Key, Counts)>) -> Tally {
        let mut t = Tally::new(0);
        t.lists.push(counts);
        t
    }

    fn merge(&mut self, o: Tally) {
        self.lists
            .extend(o.lists.into_iter().filter(|l| !l.is_empty()));
        if self.other.len() < o.other.len() {
            self.other.resize(o.other.len(), 0);
        }
        for (a, n) in self.other.iter_mut().zip(o.other) {
            *a += n;
        }
        self.total.merge(o.total);
        self.first_time = self.first_time.min(o.first_time);
        self.last_time = self.last_time.max(o.last_time);
    }

    /// Every count in key order, equal keys added up: the workers' lists
    /// joined as the replay reads them. Merging them into one list first
    /// copied ~100k counts on one core while the other waited.
    fn counts(&mut self) -> Merged {
        Merged {
            heads: std::mem::take(&mut self.lists)
                .into_iter()
                .map(|l| l.into_iter().peekable())
                .collect(),
        }
    }
}

struct Merged {
    heads: Vec<std::iter::Peekable<std::vec::IntoIter<(Key, Counts)>>>,
}

impl Iterator for Merged {
    type Item = (Key, Counts);

    fn next(&mut self) -> Option<(Key, Counts)> {
        let key = self
            .heads
            .iter_mut()
            .filter_map(|h| h.peek().map(|x| x.0))
            .min()?;
        let mut sum = Counts::default();
        for h in &mut self.heads {
            if let Some((_, c)) = h.next_if(|x| x.0 == key) {
                sum.merge(c);
            }
        }
        Some((key, sum))
    }
}

struct Worker<'a> {
    /// Each reader's sample copies.
    copies: &'a [HugeVec<Compact>],
    merge: bool,
    history: &'a History,
    maps: &'a MapTimeline,
    /// Where records delivered late go, in a file that has any.
    late: Option<&'a Late>,
    tx: Sender<Msg>,
}

impl Worker<'_> {
    /// Count the samples of the pieces it takes.
    fn count(&self, pieces: &[Piece], next: &AtomicUsize) -> Tally {
        let mut counts: FxHashMap<Key, Counts> = FxHashMap::default();
        let mut sent: Vec<bool> = Vec::new();
        let mut cache = vec![EMPTY; SLOTS];
        while let Some(i) = crate::parallel::take(next, pieces.len()) {
            let piece = &pieces[i];
            let copies = self.copies[piece.reader].slices(piece.samples.clone());
            let mut late = self.late.map(|l| l.cursor(piece.start));
            for c in copies.flatten() {
                let offset = c.offset(piece.start);
                let at = match late.as_mut() {
                    Some(l) => l.at(c.time, offset),
                    None => delivery::at(c.time, offset),
                };
                let (kernel, period) = (c.kernel(), u64::from(c.period));
                let slot = &mut cache[slot_of(c.pid, c.tid, c.ip)];
                if slot.counts.samples > 0
                    && slot.ip == c.ip
                    && slot.pid == c.pid
                    && slot.tid == c.tid
                    && slot.kernel == kernel
                    && slot.seen.holds_at(at)
                {
                    slot.counts.add(period);
                    continue;
                }
                let bpf = kernel && self.history.may_be_bpf(c.ip);
                let (seen, site) = match (self.merge, kernel, bpf) {
                    // Merging threads, a location is all a count needs,
                    // and only BPF code makes a kernel one depend on the
                    // time.
                    (true, true, false) => (Seen::ALWAYS, Site::Found(Loc::Kernel(c.ip))),
                    (true, false, _) => {
                        let (loc, from, until) = self.maps.locate(c.pid, c.ip, at);
                        match Site::found(loc) {
                            Some(site) => (
                                Seen {
                                    seq: 0,
                                    from,
                                    until,
                                },
                                site,
                            ),
                            None => (self.history.last(c.pid, false, at), Site::User(c.ip)),
                        }
                    }
                    (_, true, _) => (self.history.last(c.pid, bpf, at), Site::Kernel(c.ip)),
                    (false, false, _) => (self.history.last(c.pid, false, at), Site::User(c.ip)),
                };
                let new = Slot {
                    ip: c.ip,
                    pid: c.pid,
                    tid: c.tid,
                    kernel,
                    seen,
                    site,
                    counts: Counts { samples: 1, period },
                };
                let old = std::mem::replace(slot, new);
                self.store(&mut counts, &mut sent, old);
            }
        }
        for slot in cache {
            self.store(&mut counts, &mut sent, slot);
        }
        // Sorted here, on this core, for the replay.
        let mut counts: Vec<(Key, Counts)> = counts.into_iter().collect();
        counts.sort_unstable_by_key(|&(k, _)| k);
        Tally::of(counts)
    }

    /// Add what a cache slot counted to the counts; the first count of a
    /// user address has its binary's symbols loaded.
    fn store(&self, counts: &mut FxHashMap<Key, Counts>, sent: &mut Vec<bool>, slot: Slot) {
        if slot.counts.samples == 0 {
            return;
        }
        // Counts by location stand for every thread and process.
        let (pid, tid) = match slot.site {
            Site::Found(_) => (0, 0),
            _ => (slot.pid, slot.tid),
        };
        let key = Key::new(slot.seen.seq, pid, tid, slot.site);
        match counts.entry(key) {
            Entry::Occupied(e) => e.into_mut().merge(slot.counts),
            Entry::Vacant(e) => {
                e.insert(slot.counts);
                let dso = match slot.site {
                    Site::Found(Loc::User(dso, _)) => Some(dso),
                    Site::User(ip) => self.maps.any_dso(slot.pid, ip),
                    _ => None,
                };
                if let Some(dso) = dso {
                    let i = dso as usize;
                    if sent.len() <= i {
                        sent.resize(i + 1, false);
                    }
                    if !std::mem::replace(&mut sent[i], true) {
                        let _ = self.tx.send(Msg::Dso(dso));
                    }
                }
            }
        }
    }
}

/// Slots of a worker's cache of recent counts: most samples repeat an
/// address hit a moment ago, and a small table in front of the big one
/// keeps them in the CPU cache.
const SLOTS: usize = 1 << 12;

/// Counts of samples like the last one that fell in this slot, not yet in
/// the tally.
#[derive(Clone, Copy)]
struct Slot {
    ip: u64,
    pid: u32,
    tid: u32,
    kernel: bool,
    seen: Seen,
    site: Site,
    /// Empty while 0 samples.
    counts: Counts,
}

const EMPTY: Slot = Slot {
    ip: 0,
    pid: 0,
    tid: 0,
    kernel: false,
    seen: Seen::ALWAYS,
    site: Site::User(0),
    counts: Counts {
        samples: 0,
        period: 0,
    },
};

fn slot_of(pid: u32, tid: u32, ip: u64) -> usize {
    let h = (ip ^ (u64::from(tid) << 40) ^ u64::from(pid)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> (64 - SLOTS.trailing_zeros())) as usize
}

/// Replay the side band, settling each count once the replay has applied
/// the last change it saw.
fn replay(e: &mut Engine, file: &PerfFile, events: Vec<(At, Event)>, mut tally: Tally) {
    let p = &mut e.p;
    p.total.merge(tally.total);
    p.first_time = p.first_time.min(tally.first_time);
    p.last_time = p.last_time.max(tally.last_time);
    for (attr, &n) in tally.other.iter().enumerate().filter(|(_, &n)| n > 0) {
        *p.other_events
            .entry(file.attrs()[attr].name.clone())
            .or_default() += n;
    }
    // At most a row per count: room for them at once.
    e.counted.rows = LocRows::default();
    e.counted
        .rows
        .rows
        .reserve(tally.lists.iter().map(Vec::len).sum());
    let merge = e.opts.merge_threads;
    // Each user address found on the map timeline, nothing settled below
    // asks where one is: the replay need not keep every process's maps.
    let user = |(k, _): &(Key, Counts)| matches!(k.site(), Site::User(_));
    if !tally.lists.iter().flatten().any(user) {
        e.p.sym.threads.forget_maps();
    }
    let mut next = tally.counts().peekable();
    let mut settle = |e: &mut Engine, seq: u32| {
        while let Some((k, c)) = next.next_if(|(k, _)| k.seq <= seq) {
            match k.site() {
                // Each location once, and none that a BPF event could
                // change: no other count lands on its row.
                Site::Found(loc) if merge => e.counted.rows.push_unique(LocKey::merged(loc), c),
                Site::Found(loc) => {
                    e.count_at((k.pid, k.tid, 0, 0), loc, c);
                }
                Site::Kernel(ip) => {
                    e.settle((k.pid, k.tid, ip, true), c);
                }
                Site::User(ip) => {
                    e.settle((k.pid, k.tid, ip, false), c);
                }
            }
        }
    };
    settle(e, 0);
    for (_, ev) in &events {
        e.side(ev);
        if change_of(ev).is_some() {
            settle(e, e.counted.changes.now());
        }
    }
    settle(e, u32::MAX);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::{Profile, ProfileOptions};
    use perfdata::Record;

    #[test]
    fn keys_hold_every_site_and_sort_found_ones_as_locations_sort() {
        let locs = [
            Loc::Kernel(0xffff_ffff_8100_0000),
            Loc::Bpf(7),
            Loc::User(0, 0x10),
            Loc::User(3, 0x10),
            Loc::User(3, 0x20),
            Loc::User(TAG_FOUND_UNKNOWN - TAG_FOUND_USER - 1, 0),
            Loc::Unknown(0x1234),
        ];
        for w in locs.windows(2) {
            assert!(w[0] < w[1], "the list is in location order");
        }
        let keys: Vec<Key> = locs
            .iter()
            .map(|&l| Key::new(0, 0, 0, Site::found(l).expect("fits")))
            .collect();
        for (k, &l) in keys.iter().zip(&locs) {
            assert_eq!(k.site(), Site::Found(l));
        }
        for w in keys.windows(2) {
            assert!(w[0] < w[1], "{:?} !< {:?}", w[0], w[1]);
        }
        for raw in [Site::User(5), Site::Kernel(5)] {
            assert_eq!(Key::new(3, 1, 2, raw).site(), raw);
        }
        // A shared object id past what a tag holds is left to the replay.
        assert_eq!(
            Site::found(Loc::User(TAG_FOUND_UNKNOWN - TAG_FOUND_USER, 0)),
            None
        );
        assert_eq!(std::mem::size_of::<Key>(), 24);
    }

    #[test]
    fn tallies_merge_sorted_and_add_equal_keys() {
        let key = |seq, ip| Key::new(seq, 1, 1, Site::User(ip));
        let c = |n| Counts {
            samples: n,
            period: 10 * n,
        };
        let tally = |counts| Tally {
            other: vec![1, 2],
            total: c(1),
            first_time: 5,
            last_time: 6,
            ..Tally::of(counts)
        };
        let mut a = tally(vec![
            (key(0, 1), c(1)),
            (key(0, 3), c(2)),
            (key(2, 1), c(3)),
        ]);
        let b = Tally {
            first_time: 2,
            last_time: 9,
            ..tally(vec![
                (key(0, 2), c(4)),
                (key(0, 3), c(5)),
                (key(3, 0), c(6)),
            ])
        };
        a.merge(b);
        a.merge(tally(vec![(key(0, 3), c(1))]));
        a.merge(Tally::new(0));
        let want = vec![
            (key(0, 1), c(1)),
            (key(0, 2), c(4)),
            (key(0, 3), c(8)),
            (key(2, 1), c(3)),
            (key(3, 0), c(6)),
        ];
        assert_eq!(a.counts().collect::<Vec<_>>(), want);
        assert_eq!(
            (a.other, a.total, a.first_time, a.last_time),
            (vec![3, 6], c(3), 2, 9)
        );
    }

    /// A file of `n` user samples of two processes, one of which maps its
    /// binary halfway through, in rounds of 10 records.
    fn synthetic(n: u64) -> PerfFile {
        synthetic_mapping_at(n, None)
    }

    type Writer = perfdata::PerfFileWriter<std::io::Cursor<Vec<u8>>>;

    /// A writer of a cpu-clock file whose samples carry IP, TID, TIME and
    /// PERIOD.
    fn cpu_clock_writer() -> Writer {
        use perfdata::{sample_type as st, AttrEntry, EventAttr};
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
        perfdata::PerfFileWriter::new(std::io::Cursor::new(Vec::new()), &attrs).unwrap()
    }

    /// A sample of `cpu_clock_writer`'s event: a thread that is its own
    /// process, period 1000.
    fn sample(pid: u32, ip: u64, time: u64) -> Record<'static> {
        Record::Sample(perfdata::Sample {
            ip,
            pid,
            tid: pid,
            time,
            addr: 0,
            id: 0,
            stream_id: 0,
            cpu: 0,
            period: 1000,
            callchain: None,
        })
    }

    fn sid(pid: u32, time: u64) -> perfdata::SampleId {
        perfdata::SampleId {
            pid,
            tid: pid,
            time,
            ..Default::default()
        }
    }

    /// The same, with the map stamped `map_time` instead of its place's.
    fn synthetic_mapping_at(n: u64, map_time: Option<u64>) -> PerfFile {
        let mut w = cpu_clock_writer();
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
            let s = sample(pid, 0x40_0010 + 8 * (i % 5), time);
            w.write(&s, perfdata::misc::USER, &sid(pid, time)).unwrap();
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
        let mut copies = HugeVec::new();
        let whole =
            read_piece(&f, offsets[0], end, 0, true, &mut copies, None).expect("the whole data");
        assert_eq!(whole.totals.total.samples, 200);
        assert_eq!(whole.side.len(), 2);
        assert_eq!(whole.samples, 0..200);
        let from = offsets[50];
        let piece = read_piece(&f, from, end, 0, true, &mut copies, None).expect("from a record");
        let theirs: Vec<&Compact> = copies.slices(piece.samples.clone()).flatten().collect();
        assert!(!theirs.is_empty() && theirs.iter().all(|c| c.offset(piece.start) >= from));
        for wrong in [from + 8, from + 16] {
            let refused = read_piece(&f, wrong, end, 0, true, &mut copies, None);
            assert!(refused.is_none(), "{wrong}");
        }
    }

    /// The rows of a flat report of `f` by the flat or the ordered pass:
    /// (pid, DSO, symbol, samples), sorted; and the total.
    fn rows_of(
        f: &PerfFile,
        ordered: bool,
        merge_threads: bool,
    ) -> (Vec<(u32, String, String, u64)>, Counts) {
        let opts = ProfileOptions {
            ordered,
            merge_threads,
            ..ProfileOptions::default()
        };
        let p = crate::analyze::build(f, &opts).unwrap();
        assert_eq!(p.ordered_pass, ordered);
        let mut rows: Vec<_> = p
            .rows
            .iter()
            .map(|(k, c)| {
                let dso = p.sym.dsos[k.frame.dso as usize].name.clone();
                let sym = p.sym.syms[k.frame.sym as usize].name.clone();
                (k.pid, dso, sym, c.samples)
            })
            .collect();
        rows.sort();
        (rows, p.total)
    }

    #[test]
    fn flat_and_ordered_passes_agree_on_a_map_that_changes() {
        let f = synthetic(400);
        let (flat, total) = rows_of(&f, false, true);
        assert_eq!(total.samples, 400);
        // Before its map, process 8's samples are in no binary.
        assert!(flat.iter().any(|r| r.1 == "/bin/b"));
        assert!(flat.iter().any(|r| !r.1.starts_with("/bin")));
        assert_eq!(flat, rows_of(&f, true, true).0);
    }

    #[test]
    fn a_record_delivered_late_is_counted_where_perf_delivers_it() {
        // Stamped before rounds already delivered: perf's reader delivers
        // the map after samples stamped later, which are then in no
        // binary; a sort by time would have put it first.
        let f = synthetic_mapping_at(400, Some(5));
        for merge_threads in [true, false] {
            let (flat, total) = rows_of(&f, false, merge_threads);
            assert_eq!(total.samples, 400);
            assert!(flat.iter().any(|r| r.1 == "/bin/b"));
            assert!(flat.iter().any(|r| !r.1.starts_with("/bin")));
            assert_eq!(
                flat,
                rows_of(&f, true, merge_threads).0,
                "merge {merge_threads}"
            );
        }
    }

    #[test]
    fn a_later_map_does_not_give_its_shared_object_a_build_id() {
        // The same binary mapped twice, first with no build id, then with
        // one that is not the file's (perf 6.1 writes such maps): the
        // build id its symbols are checked against is the first map's,
        // in both passes, wherever the ordered one loaded them.
        let mut w = cpu_clock_writer();
        let exe = std::env::current_exe().unwrap();
        let name = exe.to_str().unwrap().as_bytes().to_vec();
        let wrong = [0xab; 20];
        for (pid, id) in [
            (
                7,
                perfdata::FileId::Inode {
                    maj: 0,
                    min: 0,
                    ino: 1,
                    ino_generation: 0,
                },
            ),
            (8, perfdata::FileId::BuildId(&wrong)),
        ] {
            let m = Record::Mmap2(perfdata::Mmap2 {
                pid,
                tid: pid,
                addr: 0x40_0000,
                len: 0x1000,
                pgoff: 0,
                file_id: id,
                prot: 5,
                flags: 2,
                filename: &name,
            });
            let misc = match id {
                perfdata::FileId::BuildId(_) => {
                    perfdata::misc::USER | perfdata::misc::MMAP_BUILD_ID
                }
                _ => perfdata::misc::USER,
            };
            w.write(&m, misc, &sid(pid, u64::from(pid))).unwrap();
            let s = sample(pid, 0x40_0010, 10 + u64::from(pid));
            w.write(&s, perfdata::misc::USER, &sid(pid, 10 + u64::from(pid)))
                .unwrap();
        }
        let f = PerfFile::from_bytes(w.finish(&Default::default()).unwrap().into_inner()).unwrap();
        for ordered in [false, true] {
            let opts = ProfileOptions {
                ordered,
                ..ProfileOptions::default()
            };
            let p = crate::analyze::build(&f, &opts).unwrap();
            let d = p
                .sym
                .dsos
                .iter()
                .find(|d| d.name.as_bytes() == name)
                .unwrap();
            assert_eq!(d.build_id, None, "ordered {ordered}");
        }
    }

    /// Kernel samples in the kernel's text (perf's `[kernel.kallsyms]_text`
    /// map), half of them at one address, and, if `bpf_in_text`, a BPF
    /// symbol registered inside that text.
    fn kernel_file(bpf_in_text: bool) -> PerfFile {
        let mut w = cpu_clock_writer();
        let text = Record::Mmap(perfdata::Mmap {
            pid: u32::MAX,
            tid: 0,
            addr: 0xffff_ffff_8100_0000,
            len: 0x10_0000,
            pgoff: 0xffff_ffff_8100_0000,
            filename: b"[kernel.kallsyms]_text",
        });
        w.write(&text, perfdata::misc::KERNEL, &sid(u32::MAX, 0))
            .unwrap();
        for i in 0..300u64 {
            if bpf_in_text && i == 150 {
                let k = Record::Ksymbol(perfdata::Ksymbol {
                    addr: 0xffff_ffff_8100_0100,
                    len: 0x100,
                    ksym_type: 1,
                    flags: 0,
                    name: b"bpf_prog_0123456789abcdef_f",
                });
                w.write(&k, perfdata::misc::KERNEL, &sid(0, 10 + i))
                    .unwrap();
            }
            let ip = match i % 2 {
                0 => 0xffff_ffff_8100_0180,
                _ => 0xffff_ffff_8100_0000 + 0x1000 * (i % 7),
            };
            let s = sample(7, ip, 10 + i);
            w.write(&s, perfdata::misc::KERNEL, &sid(7, 10 + i))
                .unwrap();
        }
        let bytes = w.finish(&Default::default()).unwrap().into_inner();
        PerfFile::from_bytes(bytes).unwrap()
    }

    /// Kernel samples counted by address as they are read, and the file
    /// left to the ordered pass when a BPF symbol ever sat in the text.
    #[test]
    fn kernel_text_samples_are_counted_as_read_unless_bpf_was_there() {
        let rows = |p: &Profile| {
            let mut v: Vec<(u64, String, u64)> = p
                .rows
                .iter()
                .map(|(k, c)| {
                    let s = &p.sym.syms[k.frame.sym as usize];
                    (s.start, s.name.clone(), c.samples)
                })
                .collect();
            v.sort();
            v
        };
        for bpf_in_text in [false, true] {
            let f = kernel_file(bpf_in_text);
            assert_eq!(
                kernel_text::of(&f),
                Some((0xffff_ffff_8100_0000, 0xffff_ffff_8110_0000))
            );
            let build = |ordered| {
                let opts = ProfileOptions {
                    ordered,
                    merge_threads: true,
                    ..ProfileOptions::default()
                };
                crate::analyze::build(&f, &opts).unwrap()
            };
            let (flat, ordered) = (build(false), build(true));
            assert_eq!(flat.ordered_pass, bpf_in_text);
            assert_eq!(flat.total.samples, 300);
            assert_eq!(rows(&flat), rows(&ordered));
            // The samples at +0x180 after the KSYMBOL (every other one of
            // the last 150) are the BPF function's; none without it.
            let bpf: u64 = rows(&flat)
                .iter()
                .filter(|r| r.1 == "bpf_prog_0123456789abcdef_f")
                .map(|r| r.2)
                .sum();
            let want = if bpf_in_text { 75 } else { 0 };
            assert_eq!(bpf, want, "{:?}", rows(&flat));
        }
    }
}
