//! The record stream parsed on its own thread into compact, owned events,
//! handed over in batches: reading and decoding the file costs about as
//! much as replaying and aggregating it, so the two run side by side.

use std::sync::mpsc::{Receiver, SyncSender};

use perfdata::{ksym, PerfFile, Record};

use super::memo::{Changes, SampleKey};
use super::raw_stacks::{RawNode, RawStacks};

/// What the replay needs of a record.
pub enum Event {
    Sample {
        /// Index of the sample's attr in the file.
        attr: u16,
        misc: u16,
        /// The CPU, [`NO_CPU`] when the samples do not say.
        cpu: u16,
        pid: u32,
        tid: u32,
        ip: u64,
        period: u64,
        time: u64,
        /// The leaf node of this sample's stack (0 without call chains),
        /// and how many of [`Batch::nodes`] are seen by the end of it.
        /// Between [`stream`] and [`intern_stacks`]: where the chain lies
        /// in [`Batch::chains`], as (start, length).
        stack: (u32, u32),
    },
    Comm(Box<CommEvent>),
    Fork {
        pid: u32,
        ppid: u32,
        tid: u32,
        ptid: u32,
    },
    Exit {
        pid: u32,
        tid: u32,
    },
    Mmap(Box<MmapEvent>),
    Ksymbol(Box<KsymbolEvent>),
    BpfProg {
        load: bool,
        id: u32,
        tag: [u8; 8],
        time: u64,
        pid: u32,
        tid: u32,
    },
    Lost(u64),
    LostSamples(u64),
}

/// A sample's CPU when its attr does not record one (perf prints -1).
pub const NO_CPU: u16 = u16::MAX;

// A batch holds 8192 events; a bigger sample event costs the replay of a
// big recording measurably.
const _: () = assert!(std::mem::size_of::<Event>() <= 48);

/// An attr index as events keep it: files have a handful of attrs, and
/// one past `u16` would be counted as an unnamed other event.
pub fn attr_u16(i: Option<usize>) -> u16 {
    i.map_or(0, |i| u16::try_from(i).unwrap_or(u16::MAX))
}

/// A CPU number as events keep it (perf supports at most 4096 CPUs).
pub fn cpu_u16(cpu: u32) -> u16 {
    u16::try_from(cpu).unwrap_or(NO_CPU - 1)
}

/// Rare records are boxed, so the per-sample events stay small.
pub struct CommEvent {
    pub pid: u32,
    pub tid: u32,
    pub comm: String,
}

pub struct MmapEvent {
    pub pid: u32,
    pub addr: u64,
    pub len: u64,
    pub pgoff: u64,
    pub name: String,
    pub build_id: Option<Vec<u8>>,
}

pub struct KsymbolEvent {
    pub addr: u64,
    pub len: u32,
    pub unregister: bool,
    pub name: String,
    pub time: u64,
}

#[derive(Default)]
pub struct Batch {
    pub events: Vec<Event>,
    /// Stack nodes first seen in this batch, in id order.
    pub nodes: Vec<RawNode>,
    /// The samples' call chains as recorded, one after another, until
    /// [`intern_stacks`] turns them into nodes.
    pub chains: Vec<u64>,
    /// File offset reached, for progress.
    pub offset: u64,
    /// Reader warnings, in the last batch.
    pub warnings: Vec<String>,
}

const BATCH: usize = 8192;

impl Batch {
    /// Empty it for reuse, keeping its allocations.
    pub fn clear(&mut self) {
        self.events.clear();
        self.nodes.clear();
        self.chains.clear();
        self.warnings.clear();
        self.offset = 0;
    }
}

/// Read `file` in time order and send its events; stops at the first error
/// (sent as the last item) or when the receiver is gone. Batches the
/// receiver is done with come back through `recycle`: reusing them saves
/// faulting in and unmapping tens of megabytes on a big file.
///
/// With `callchains`, each sample's chain is copied into the batch and
/// its `stack` is (start, length) there, for [`intern_stacks`]: interning
/// takes several times longer than reading, so it has a thread of its own.
pub fn stream(
    file: &PerfFile,
    callchains: bool,
    tx: SyncSender<Result<Batch, perfdata::Error>>,
    recycle: Receiver<Batch>,
) {
    let fresh = || {
        let mut b = recycle.try_recv().unwrap_or_default();
        b.clear();
        b.events.reserve(BATCH);
        b
    };
    let mut records = match file.records() {
        Ok(r) => r,
        Err(e) => {
            let _ = tx.send(Err(e));
            return;
        }
    };
    let mut batch = fresh();
    loop {
        let r = match records.next() {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(e) => {
                let _ = tx.send(Ok(std::mem::take(&mut batch)));
                let _ = tx.send(Err(e));
                return;
            }
        };
        let ev = match r.record {
            Record::Sample(s) => {
                let mut stack = (0, 0);
                if callchains {
                    let start = batch.chains.len();
                    batch.chains.extend(s.callchain());
                    stack = (start as u32, (batch.chains.len() - start) as u32);
                }
                Event::Sample {
                    attr: attr_u16(file.attr_index(s.id)),
                    misc: r.header.misc,
                    cpu: cpu_u16(s.cpu),
                    pid: s.pid,
                    tid: s.tid,
                    ip: s.ip,
                    period: s.period,
                    time: s.time,
                    stack,
                }
            }
            ref other => match side_event(other, &r.sample_id) {
                Some(ev) => ev,
                None => continue,
            },
        };
        batch.events.push(ev);
        if batch.events.len() >= BATCH {
            batch.offset = r.offset;
            if tx.send(Ok(std::mem::replace(&mut batch, fresh()))).is_err() {
                return;
            }
        }
    }
    batch.warnings = std::mem::take(&mut records.warnings);
    let _ = tx.send(Ok(batch));
}

/// The event of a record other than a sample; `None` for what no report
/// uses.
pub fn side_event(record: &Record<'_>, sid: &perfdata::SampleId) -> Option<Event> {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    Some(match *record {
        Record::Comm(c) => Event::Comm(Box::new(CommEvent {
            pid: c.pid,
            tid: c.tid,
            comm: text(c.comm),
        })),
        Record::Fork(f) => Event::Fork {
            pid: f.pid,
            ppid: f.ppid,
            tid: f.tid,
            ptid: f.ptid,
        },
        Record::Exit(f) => Event::Exit {
            pid: f.pid,
            tid: f.tid,
        },
        Record::Mmap(m) => Event::Mmap(Box::new(MmapEvent {
            pid: m.pid,
            addr: m.addr,
            len: m.len,
            pgoff: m.pgoff,
            name: text(m.filename),
            build_id: None,
        })),
        Record::Mmap2(m) => Event::Mmap(Box::new(MmapEvent {
            pid: m.pid,
            addr: m.addr,
            len: m.len,
            pgoff: m.pgoff,
            name: text(m.filename),
            build_id: match m.file_id {
                perfdata::FileId::BuildId(b) => Some(b.to_vec()),
                _ => None,
            },
        })),
        Record::Ksymbol(k) if k.ksym_type == ksym::TYPE_BPF || k.ksym_type == ksym::TYPE_OOL => {
            Event::Ksymbol(Box::new(KsymbolEvent {
                addr: k.addr,
                len: k.len,
                unregister: k.is_unregister(),
                name: text(k.name),
                time: sid.time,
            }))
        }
        Record::BpfEvent(b) => Event::BpfProg {
            load: b.type_ == perfdata::bpf_event::PROG_LOAD,
            id: b.id,
            tag: b.tag,
            time: sid.time,
            pid: sid.pid,
            tid: sid.tid,
        },
        Record::Lost(l) => Event::Lost(l.lost),
        Record::LostSamples(n) => Event::LostSamples(n),
        _ => return None,
    })
}

/// Intern the stacks of the batches [`stream`] made with call chains, in
/// order, and pass them on: each sample's `stack` becomes (leaf node,
/// nodes seen by the end of it), and its batch's `nodes` the nodes first
/// seen in it.
pub fn intern_stacks(
    rx: Receiver<Result<Batch, perfdata::Error>>,
    tx: SyncSender<Result<Batch, perfdata::Error>>,
) {
    let mut changes = Changes::default();
    let mut stacks = RawStacks::default();
    for msg in rx {
        let mut batch = match msg {
            Ok(b) => b,
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        };
        let Batch {
            events,
            nodes,
            chains,
            ..
        } = &mut batch;
        for ev in events.iter_mut() {
            if let Event::Sample {
                misc,
                pid,
                tid,
                ip,
                ref mut stack,
                ..
            } = *ev
            {
                let key = SampleKey {
                    tid,
                    pid,
                    ip,
                    kernel: is_kernel_mode(misc, ip),
                };
                let chain = &chains[stack.0 as usize..(stack.0 + stack.1) as usize];
                let leaf = stacks.leaf(&changes, key, chain, nodes);
                *stack = (leaf, nodes.len() as u32);
            }
            stacks.side(ev);
            note(&mut changes, ev);
        }
        if tx.send(Ok(batch)).is_err() {
            return;
        }
    }
}

/// What an event changes for the samples after it.
#[derive(Clone, Copy)]
pub enum Change {
    /// The maps or commands of a process.
    Process(u32),
    /// The BPF symbols.
    Kernel,
}

pub fn change_of(ev: &Event) -> Option<Change> {
    match ev {
        Event::Comm(c) => Some(Change::Process(c.pid)),
        Event::Fork { pid, .. } => Some(Change::Process(*pid)),
        Event::Mmap(m) => Some(Change::Process(m.pid)),
        Event::Ksymbol(_) | Event::BpfProg { .. } => Some(Change::Kernel),
        Event::Sample { .. } | Event::Exit { .. } | Event::Lost(_) | Event::LostSamples(_) => None,
    }
}

/// Record in `ch` what an event changes for the samples after it.
pub fn note(ch: &mut Changes, ev: &Event) {
    match change_of(ev) {
        Some(Change::Process(pid)) => ch.process(pid),
        Some(Change::Kernel) => ch.kernel(),
        None => {}
    }
}

/// The (thread, process) a sample's row and location depend on. Merging
/// threads, a location depends on the process, not the thread, and a
/// kernel one on neither (only on the BPF symbol events): `u32::MAX`.
pub fn owner(merge_threads: bool, kernel: bool, tid: u32, pid: u32) -> (u32, u32) {
    match (merge_threads, kernel) {
        (false, _) => (tid, pid),
        (true, false) => (pid, pid),
        (true, true) => (u32::MAX, u32::MAX),
    }
}

pub fn is_kernel_mode(misc_bits: u16, ip: u64) -> bool {
    use perfdata::misc;
    match misc_bits & misc::CPUMODE_MASK {
        misc::KERNEL | misc::GUEST_KERNEL => true,
        misc::USER | misc::GUEST_USER => false,
        _ => ip >= crate::symbolize::KERNEL_START,
    }
}
