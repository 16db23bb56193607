//! Perf files written here record by record, each record encoded with the
//! attr it belongs to, so that a test knows every record's offset, size,
//! type and time (tests/raw_records.rs, tests/round_order.rs).

use perfdata::{
    context, encode_record, flags, misc, record_type as rt, sample_type as st, AttrEntry, Comm,
    EventAttr, FileId, ForkExit, Mmap2, PerfFileWriter, Record, Sample, SampleId,
};

use super::fixture_attrs;

/// One record to write: samples of the cpu-clock event (attr 0) and of the
/// dummy event (attr 1, when the file has one); side-band with a
/// sample_id_all trailer; perf's own FINISHED_ROUND and FINISHED_INIT.
#[derive(Debug, Clone, Copy)]
pub enum Ev {
    S { cpu: u32, time: u64 },
    D { cpu: u32, time: u64 },
    Cm { cpu: u32, time: u64 },
    Mm { cpu: u32, time: u64 },
    Fk { cpu: u32, time: u64 },
    Round,
    Init,
}

use Ev::*;

impl Ev {
    /// The cpu and time put in the record; (0, 0) for FINISHED_ROUND and
    /// FINISHED_INIT.
    fn cpu_time(self) -> (u32, u64) {
        match self {
            S { cpu, time }
            | D { cpu, time }
            | Cm { cpu, time }
            | Mm { cpu, time }
            | Fk { cpu, time } => (cpu, time),
            Round | Init => (0, 0),
        }
    }
}

/// How the fields of record `i` other than its cpu and time are filled.
/// Both put the sample ip (and the MMAP2 address and inode) at `i`'s own
/// value.
#[derive(Debug, Clone, Copy)]
pub enum Fill {
    /// Fields that tell the records apart: pid 1000 + i, tid pid + 1,
    /// period 10_000 + i, callchain `[USER, ip]`; comm "worker", file
    /// "/usr/lib/libworker.so".
    Distinct,
    /// A payload full of small numbers, many of them in the range of
    /// record types: pid 1..=31, tids just above, periods 1..68, callchains
    /// of `i % 5` entries below 96; comms and file names of four lengths.
    SmallNumbers,
}

/// The fields of one record, as a `Fill` gives them.
struct Fields {
    pid: u32,
    tid: u32,
    period: u64,
    ip: u64,
    chain: Vec<u8>,
    comm: &'static [u8],
    file: &'static [u8],
}

impl Fill {
    fn fields(self, i: usize) -> Fields {
        let ip = 0x40_0000 + 0x10 * i as u64;
        match self {
            Fill::Distinct => {
                let pid = 1000 + i as u32;
                Fields {
                    pid,
                    tid: pid + 1,
                    period: 10_000 + i as u64,
                    ip,
                    chain: [context::USER, ip]
                        .iter()
                        .flat_map(|v| v.to_le_bytes())
                        .collect(),
                    comm: b"worker",
                    file: b"/usr/lib/libworker.so",
                }
            }
            Fill::SmallNumbers => {
                let pid = 1 + (i % 31) as u32;
                Fields {
                    pid,
                    tid: pid + (i % 4) as u32,
                    period: [1u64, 2, 3, 8, 9, 64, 68][i % 7],
                    ip,
                    chain: (0..i % 5)
                        .map(|j| match j {
                            0 => context::USER,
                            1 => ip,
                            _ => ((i + j) % 96) as u64,
                        })
                        .flat_map(|v| v.to_le_bytes())
                        .collect(),
                    comm: [&b"w"[..], b"worker", b"kworker/1:2-ev", b"sh"][i % 4],
                    file: [
                        &b"/a"[..],
                        b"/usr/lib/libworker.so",
                        b"/usr/lib/x86_64-linux-gnu/libc.so.6",
                        b"[vdso]",
                    ][i % 4],
                }
            }
        }
    }
}

/// What was written, as the test knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    pub offset: u64,
    pub size: u64,
    pub type_: u32,
    /// The time put in the record (its sample field or its trailer); 0 for
    /// FINISHED_ROUND and FINISHED_INIT.
    pub time: u64,
    /// The cpu put in the record; 0 for FINISHED_ROUND and FINISHED_INIT.
    pub cpu: u32,
    pub pid: u32,
    pub ip: u64,
}

pub struct Built {
    pub bytes: Vec<u8>,
    pub recs: Vec<Written>,
    /// Data section start and end, from the header bytes (@40, @48).
    pub data: (u64, u64),
}

pub fn le64(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}

/// Encode record `i` of a file, `ev` with the fields `f`, with the attr it
/// belongs to.
fn encode(attrs: &[AttrEntry], i: usize, ev: Ev, f: &Fields) -> Vec<u8> {
    let sample = |attr: u64, cpu: u32, time: u64| {
        Record::Sample(Sample {
            ip: f.ip,
            pid: f.pid,
            tid: f.tid,
            time,
            addr: 0,
            // cpu-clock ids are 11, 12; dummy ids 13, 14: one per CPU.
            id: 11 + 2 * attr + cpu as u64,
            stream_id: 0,
            cpu,
            period: f.period,
            callchain: Some(&f.chain),
        })
    };
    let sid = |cpu: u32, time: u64| SampleId {
        pid: f.pid,
        tid: f.tid,
        time,
        id: 13 + cpu as u64,
        stream_id: 0,
        cpu,
    };
    let none = SampleId::default();
    // (record, misc, trailer, attr)
    let (r, m, id, attr) = match ev {
        S { cpu, time } => (sample(0, cpu, time), misc::USER, none, 0),
        D { cpu, time } => (sample(1, cpu, time), misc::USER, none, 1),
        Cm { cpu, time } => {
            let r = Record::Comm(Comm {
                pid: f.pid,
                tid: f.tid,
                comm: f.comm,
            });
            (r, misc::COMM_EXEC, sid(cpu, time), 0)
        }
        Mm { cpu, time } => {
            let r = Record::Mmap2(Mmap2 {
                pid: f.pid,
                tid: f.tid,
                addr: 0x7f00_0000_0000 + 0x1000 * i as u64,
                len: 0x2000,
                pgoff: 0,
                file_id: FileId::Inode {
                    maj: 8,
                    min: 1,
                    ino: 500 + i as u64,
                    ino_generation: 0,
                },
                prot: 5,
                flags: 2,
                filename: f.file,
            });
            (r, misc::USER, sid(cpu, time), 0)
        }
        Fk { cpu, time } => {
            let r = Record::Fork(ForkExit {
                pid: f.pid,
                ppid: 1,
                tid: f.tid,
                ptid: 1,
                time,
            });
            (r, 0, sid(cpu, time), 0)
        }
        Round => (Record::FinishedRound, 0, none, 0),
        Init => (Record::FinishedInit, 0, none, 0),
    };
    let mut buf = Vec::new();
    encode_record(&r, m, &id, &attrs[attr].attr, &mut buf);
    buf
}

/// Write `head` (verbatim), the records of `evs` with their fields filled
/// as `fill` says, then `tail` (verbatim), all inside the data section.
pub fn build_parts(fill: Fill, attrs: &[AttrEntry], head: &[u8], evs: &[Ev], tail: &[u8]) -> Built {
    let mut w = PerfFileWriter::new(std::io::Cursor::new(Vec::new()), attrs).unwrap();
    w.write_raw(head).unwrap();
    let mut recs = Vec::new();
    let mut at = head.len() as u64;
    for (i, &ev) in evs.iter().enumerate() {
        let f = fill.fields(i);
        let buf = encode(attrs, i, ev, &f);
        let type_ = u32::from_le_bytes(buf[..4].try_into().unwrap());
        let size = u16::from_le_bytes(buf[6..8].try_into().unwrap()) as u64;
        assert_eq!(size, buf.len() as u64, "the encoder frames the record");
        w.write_raw(&buf).unwrap();
        let (cpu, time) = ev.cpu_time();
        recs.push(Written {
            offset: at,
            size,
            type_,
            time,
            cpu,
            pid: f.pid,
            ip: f.ip,
        });
        at += size;
    }
    w.write_raw(tail).unwrap();
    let bytes = w.finish(&Default::default()).unwrap().into_inner();
    let (start, size) = (le64(&bytes, 40), le64(&bytes, 48));
    assert_eq!(size, at + tail.len() as u64);
    for r in &mut recs {
        r.offset += start;
    }
    Built {
        bytes,
        recs,
        data: (start, start + size),
    }
}

/// Two events as `perf record -a -g` opens them: cpu-clock samples with
/// callchains, and a dummy event for side-band; both with sample_id_all.
/// Samples of the two place TIME at the same offset, but differ in layout.
pub fn attrs() -> Vec<AttrEntry> {
    fixture_attrs()
}

/// One event with no TIME anywhere (samples nor trailers).
pub fn attrs_without_time() -> Vec<AttrEntry> {
    vec![AttrEntry {
        attr: EventAttr {
            type_: 1,
            sample_period: 1000,
            sample_type: st::IP | st::TID | st::CPU | st::PERIOD | st::CALLCHAIN | st::IDENTIFIER,
            flags: flags::SAMPLE_ID_ALL | flags::DISABLED,
            ..Default::default()
        },
        ids: vec![11, 12],
        name: "cpu-clock".into(),
    }]
}

/// Two CPUs' runs per round, each run in time order, the runs out of order
/// against each other; side-band interleaved, equal timestamps between a
/// sample and side-band (and between samples of two CPUs), records of a
/// round older than the round before's newest (allowed: only what was
/// delivered counts), and one exactly equal to what was delivered.
pub fn well_formed() -> Vec<Ev> {
    vec![
        // Synthesized side-band at time 0.
        Cm { cpu: 0, time: 0 },
        Mm { cpu: 0, time: 0 },
        // Round 1: CPU 1's run, then CPU 0's.
        S { cpu: 1, time: 110 },
        Cm { cpu: 1, time: 120 },
        S { cpu: 1, time: 140 },
        D { cpu: 1, time: 150 },
        Mm { cpu: 0, time: 130 },
        S { cpu: 0, time: 100 },
        S { cpu: 0, time: 130 },
        S { cpu: 0, time: 160 },
        Round, // delivers up to 0
        // Round 2: older than round 1's newest (160), but nothing past 0
        // was delivered yet.
        S { cpu: 0, time: 150 },
        S { cpu: 0, time: 200 },
        Fk { cpu: 0, time: 200 },
        D { cpu: 0, time: 205 },
        S { cpu: 1, time: 155 },
        S { cpu: 1, time: 170 },
        S { cpu: 1, time: 210 },
        Round, // delivers up to 160
        // Round 3: a record at exactly 160, what was delivered, is still
        // in order (it sorts after the earlier 160).
        S { cpu: 1, time: 160 },
        S { cpu: 1, time: 230 },
        Cm { cpu: 0, time: 205 },
        S { cpu: 0, time: 205 },
        S { cpu: 0, time: 220 },
        Mm { cpu: 0, time: 230 },
        S { cpu: 0, time: 230 },
        Round, // delivers up to 210
        // Round 4, then records with no round end.
        S { cpu: 0, time: 240 },
        S { cpu: 1, time: 215 },
        Round, // delivers up to 230
        S { cpu: 1, time: 250 },
        S { cpu: 0, time: 245 },
        Fk { cpu: 0, time: 245 },
    ]
}

// ------------------------------------------------------------ the rule, modelled

/// perf's FINISHED_ROUND rule over (type, time) in file order, written from
/// its statement, independently of `RoundOrder`: a record after the k-th
/// FINISHED_ROUND must not be older than the newest record before the
/// (k-1)-th (what the k-th round end delivered). Records of perf's own
/// types (64 and up) are not judged. (The queue limit is not modelled: no
/// file written here comes near it.)
pub fn model_holds(seq: &[(u32, u64)]) -> bool {
    let mut newest_at_round_end = vec![0u64];
    let mut newest = 0;
    for &(ty, time) in seq {
        if ty == rt::FINISHED_ROUND {
            newest_at_round_end.push(newest);
            continue;
        }
        if ty >= rt::USER_START {
            continue;
        }
        let k = newest_at_round_end.len() - 1;
        let delivered = if k >= 1 {
            newest_at_round_end[k - 1]
        } else {
            0
        };
        if time < delivered {
            return false;
        }
        newest = newest.max(time);
    }
    true
}

/// (type, time) of what was written, in file order.
pub fn seq_of(recs: &[Written]) -> Vec<(u32, u64)> {
    recs.iter().map(|r| (r.type_, r.time)).collect()
}
