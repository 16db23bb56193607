//! Records of the data section (and of the kernel's ring buffer, which uses
//! the same layout): decoding from bytes and encoding back.

use crate::attr::{flags, sample_type as st, EventAttr};
use crate::cursor::{align8, c_str, Cursor};
use crate::error::{Error, Result};

/// `perf_event_header.type` values: the kernel's `PERF_RECORD_<NAME>`
/// (include/uapi/linux/perf_event.h, which gives each layout) below 64,
/// perf's own from 64 (tools/lib/perf/include/perf/event.h).
#[allow(missing_docs)]
pub mod record_type {
    pub const MMAP: u32 = 1;
    pub const LOST: u32 = 2;
    pub const COMM: u32 = 3;
    pub const EXIT: u32 = 4;
    pub const THROTTLE: u32 = 5;
    pub const UNTHROTTLE: u32 = 6;
    pub const FORK: u32 = 7;
    pub const READ: u32 = 8;
    pub const SAMPLE: u32 = 9;
    pub const MMAP2: u32 = 10;
    pub const AUX: u32 = 11;
    pub const ITRACE_START: u32 = 12;
    pub const LOST_SAMPLES: u32 = 13;
    pub const SWITCH: u32 = 14;
    pub const SWITCH_CPU_WIDE: u32 = 15;
    pub const NAMESPACES: u32 = 16;
    pub const KSYMBOL: u32 = 17;
    pub const BPF_EVENT: u32 = 18;
    pub const CGROUP: u32 = 19;
    pub const TEXT_POKE: u32 = 20;
    /// First of perf's own (user-space) record types; these carry no
    /// sample_id trailer.
    pub const USER_START: u32 = 64;
    pub const HEADER_ATTR: u32 = 64;
    pub const FINISHED_ROUND: u32 = 68;
    pub const ID_INDEX: u32 = 69;
    pub const THREAD_MAP: u32 = 73;
    pub const CPU_MAP: u32 = 74;
    pub const COMPRESSED: u32 = 81;
    /// perf >= 6.16: a u64 size before the payload.
    pub const COMPRESSED2: u32 = 83;
    pub const FINISHED_INIT: u32 = 82;
}

/// `perf_event_header.misc` bits: `PERF_RECORD_MISC_<NAME>`. The low three
/// bits (`CPUMODE_MASK`) say where a sample's ip was.
#[allow(missing_docs)]
pub mod misc {
    pub const CPUMODE_MASK: u16 = 7;
    pub const KERNEL: u16 = 1;
    pub const USER: u16 = 2;
    pub const HYPERVISOR: u16 = 3;
    pub const GUEST_KERNEL: u16 = 4;
    pub const GUEST_USER: u16 = 5;
    pub const COMM_EXEC: u16 = 1 << 13;
    pub const MMAP_BUILD_ID: u16 = 1 << 14;
}

/// `PERF_RECORD_KSYMBOL` types (`PERF_RECORD_KSYMBOL_TYPE_<NAME>`) and flags
/// (`FLAG_UNREGISTER`: the symbol goes away).
#[allow(missing_docs)]
pub mod ksym {
    pub const TYPE_UNKNOWN: u16 = 0;
    pub const TYPE_BPF: u16 = 1;
    pub const TYPE_OOL: u16 = 2;
    pub const FLAG_UNREGISTER: u16 = 1;
}

/// `PERF_RECORD_BPF_EVENT` types (`PERF_BPF_EVENT_<NAME>`).
#[allow(missing_docs)]
pub mod bpf_event {
    pub const PROG_LOAD: u16 = 1;
    pub const PROG_UNLOAD: u16 = 2;
}

/// Callchain context markers (`PERF_CONTEXT_<NAME>`): an entry at or above
/// `MAX` is not an address but says whose frames follow.
#[allow(missing_docs)]
pub mod context {
    pub const HV: u64 = -32i64 as u64;
    pub const KERNEL: u64 = -128i64 as u64;
    pub const USER: u64 = -512i64 as u64;
    pub const GUEST: u64 = -2048i64 as u64;
    pub const GUEST_KERNEL: u64 = -2176i64 as u64;
    pub const GUEST_USER: u64 = -2560i64 as u64;
    pub const MAX: u64 = -4095i64 as u64;
}

/// The `sample_id` fields every record may carry: from the trailer of a
/// non-sample record, or from the body of a SAMPLE. Absent fields are 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SampleId {
    /// Process id (TID).
    pub pid: u32,
    /// Thread id (TID).
    pub tid: u32,
    /// Timestamp (TIME), on the event's clock.
    pub time: u64,
    /// The event's id (ID or IDENTIFIER), which finds its attr.
    pub id: u64,
    /// The id of the group leader's event (STREAM_ID).
    pub stream_id: u64,
    /// The CPU (CPU).
    pub cpu: u32,
}

/// MMAP: an executable mapping (perf's synthesized kernel maps use it too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mmap<'a> {
    /// The process mapping it (-1 for the kernel).
    pub pid: u32,
    /// The thread.
    pub tid: u32,
    /// Start address.
    pub addr: u64,
    /// Length in bytes.
    pub len: u64,
    /// Offset in the file of `addr`.
    pub pgoff: u64,
    /// The file's path, without its NUL.
    pub filename: &'a [u8],
}

/// How an MMAP2 record identifies its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileId<'a> {
    /// The file's device and inode.
    Inode {
        /// Device major number.
        maj: u32,
        /// Device minor number.
        min: u32,
        /// Inode number.
        ino: u64,
        /// Inode generation, which tells a reused inode number apart.
        ino_generation: u64,
    },
    /// `misc & MMAP_BUILD_ID`: the build id (up to 20 bytes).
    BuildId(&'a [u8]),
}

/// MMAP2: a mapping, with what identifies its file and its protection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mmap2<'a> {
    /// The process mapping it (-1 for the kernel).
    pub pid: u32,
    /// The thread.
    pub tid: u32,
    /// Start address.
    pub addr: u64,
    /// Length in bytes.
    pub len: u64,
    /// Offset in the file of `addr`.
    pub pgoff: u64,
    /// Which file: inode or build id.
    pub file_id: FileId<'a>,
    /// `PROT_*` of the mapping.
    pub prot: u32,
    /// `MAP_*` of the mapping.
    pub flags: u32,
    /// The file's path, without its NUL.
    pub filename: &'a [u8],
}

/// COMM: a thread's new command name (at exec when `misc::COMM_EXEC`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Comm<'a> {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// The name, without its NUL.
    pub comm: &'a [u8],
}

/// FORK and EXIT share a layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForkExit {
    /// Process id of the child (FORK) or of the one exiting (EXIT).
    pub pid: u32,
    /// The parent's process id.
    pub ppid: u32,
    /// Thread id.
    pub tid: u32,
    /// The parent's thread id.
    pub ptid: u32,
    /// When.
    pub time: u64,
}

/// LOST: records the kernel dropped because the ring was full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lost {
    /// The event whose records were lost.
    pub id: u64,
    /// How many.
    pub lost: u64,
}

/// KSYMBOL: a kernel symbol (a BPF program's function, a trampoline)
/// registered or unregistered at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ksymbol<'a> {
    /// Start address.
    pub addr: u64,
    /// Length in bytes.
    pub len: u32,
    /// A [`ksym`] `TYPE_*`.
    pub ksym_type: u16,
    /// [`ksym`] `FLAG_*` bits.
    pub flags: u16,
    /// The symbol's name, without its NUL.
    pub name: &'a [u8],
}

impl Ksymbol<'_> {
    /// Whether the symbol goes away (its program was unloaded).
    pub fn is_unregister(&self) -> bool {
        self.flags & ksym::FLAG_UNREGISTER != 0
    }
}

/// BPF_EVENT: a BPF program loaded or unloaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BpfEvent {
    /// A [`bpf_event`] type.
    pub type_: u16,
    /// Reserved (zero).
    pub flags: u16,
    /// The program's id.
    pub id: u32,
    /// The program's tag.
    pub tag: [u8; 8],
}

/// A SAMPLE, decoded up to and including its callchain (later fields such
/// as RAW, branch stacks and registers are not decoded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample<'a> {
    /// Where the CPU was (IP).
    pub ip: u64,
    /// Process id (TID).
    pub pid: u32,
    /// Thread id (TID).
    pub tid: u32,
    /// Timestamp (TIME).
    pub time: u64,
    /// The data address of a memory event (ADDR).
    pub addr: u64,
    /// The event's id (ID or IDENTIFIER).
    pub id: u64,
    /// The group leader's event id (STREAM_ID).
    pub stream_id: u64,
    /// The CPU (CPU).
    pub cpu: u32,
    /// Events the sample stands for (PERIOD).
    pub period: u64,
    /// The callchain's u64 entries as raw little-endian bytes (no copy).
    pub callchain: Option<&'a [u8]>,
}

impl Sample<'_> {
    /// The sample id fields, as a trailer of another record holds them.
    fn sample_id(&self) -> SampleId {
        SampleId {
            pid: self.pid,
            tid: self.tid,
            time: self.time,
            id: self.id,
            stream_id: self.stream_id,
            cpu: self.cpu,
        }
    }

    /// Callchain entries, including `PERF_CONTEXT_*` markers.
    pub fn callchain(&self) -> impl Iterator<Item = u64> + '_ {
        self.callchain
            .unwrap_or(&[])
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
    }
}

/// A decoded record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record<'a> {
    /// SAMPLE.
    Sample(Sample<'a>),
    /// MMAP.
    Mmap(Mmap<'a>),
    /// MMAP2.
    Mmap2(Mmap2<'a>),
    /// COMM.
    Comm(Comm<'a>),
    /// FORK.
    Fork(ForkExit),
    /// EXIT.
    Exit(ForkExit),
    /// LOST.
    Lost(Lost),
    /// LOST_SAMPLES: samples dropped before they reached the ring (count).
    LostSamples(u64),
    /// KSYMBOL.
    Ksymbol(Ksymbol<'a>),
    /// BPF_EVENT.
    BpfEvent(BpfEvent),
    /// perf's FINISHED_ROUND: the end of one pass over the rings, which
    /// bounds how far out of time order records can be (see `Records`).
    FinishedRound,
    /// perf's FINISHED_INIT: the records synthesized at start-up end here.
    FinishedInit,
    /// Any other type: skipped by readers, copied verbatim by writers.
    Other(u32),
}

/// Common header fields of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// A [`record_type`].
    pub type_: u32,
    /// [`misc`] bits.
    pub misc: u16,
    /// The record's size in bytes, header included.
    pub size: u16,
}

impl Header {
    /// The first 8 bytes of `b` as a header; `None` if it is shorter.
    pub fn parse(b: &[u8]) -> Option<Header> {
        Some(Header {
            type_: u32::from_le_bytes(b.get(0..4)?.try_into().ok()?),
            misc: u16::from_le_bytes(b.get(4..6)?.try_into().ok()?),
            size: u16::from_le_bytes(b.get(6..8)?.try_into().ok()?),
        })
    }
}

/// What a parser needs to know about the attr a record belongs to.
pub trait AttrLookup {
    /// The attr of a record, found through the IDENTIFIER field of
    /// SAMPLEs and trailers. Files with one attr may ignore `id`.
    fn attr_for_id(&self, id: u64) -> Option<&EventAttr>;
    /// The attr that decides where IDENTIFIER sits (all attrs of a file
    /// must agree on the id position).
    fn first(&self) -> Option<&EventAttr>;
    /// The attr that asked for the records `flag` (`flags::KSYMBOL`,
    /// `flags::BPF_EVENT`) stands for, whose trailer the kernel writes on
    /// them; `None` when none did or the lookup cannot tell.
    fn listener(&self, flag: u64) -> Option<&EventAttr> {
        self.first().filter(|a| a.flags & flag != 0)
    }
}

impl AttrLookup for EventAttr {
    fn attr_for_id(&self, _id: u64) -> Option<&EventAttr> {
        Some(self)
    }
    fn first(&self) -> Option<&EventAttr> {
        Some(self)
    }
}

/// Decode one whole record (`raw` starts at its header, `raw.len()` equals
/// its size). `offset` is its position in the file or stream, for errors.
pub fn parse_record<'a>(
    raw: &'a [u8],
    attrs: &dyn AttrLookup,
    offset: u64,
) -> Result<(Header, Record<'a>, SampleId)> {
    let h =
        Header::parse(raw).ok_or_else(|| Error::parse(offset, "record header: need 8 bytes"))?;
    let first = attrs
        .first()
        .ok_or_else(|| Error::parse(offset, "record before any event attr"))?;
    let mut body = Cursor::new(&raw[8..], offset + 8);

    if h.type_ == record_type::SAMPLE {
        let attr = sample_attr(raw, first, attrs, offset)?;
        let (s, sid) = match fixed_sample(raw, attr) {
            Some(s) => (s, s.sample_id()),
            None => parse_sample(&mut body, attr)?,
        };
        return Ok((h, Record::Sample(s), sid));
    }
    if h.type_ >= record_type::USER_START {
        let r = match h.type_ {
            record_type::FINISHED_ROUND => Record::FinishedRound,
            record_type::FINISHED_INIT => Record::FinishedInit,
            t => Record::Other(t),
        };
        return Ok((h, r, SampleId::default()));
    }
    let natural = natural_len(&h, raw, first, attrs);
    let (fields, sid) = split_trailer(&raw[..natural], first, attrs, offset)?;
    let mut c = Cursor::new(fields, offset + 8);
    let rec = match h.type_ {
        record_type::MMAP => Record::Mmap(Mmap {
            pid: c.u32("MMAP.pid")?,
            tid: c.u32("MMAP.tid")?,
            addr: c.u64("MMAP.addr")?,
            len: c.u64("MMAP.len")?,
            pgoff: c.u64("MMAP.pgoff")?,
            filename: c_str(c.rest()),
        }),
        record_type::MMAP2 => {
            let (pid, tid) = (c.u32("MMAP2.pid")?, c.u32("MMAP2.tid")?);
            let (addr, len, pgoff) = (
                c.u64("MMAP2.addr")?,
                c.u64("MMAP2.len")?,
                c.u64("MMAP2.pgoff")?,
            );
            let file_id = if h.misc & misc::MMAP_BUILD_ID != 0 {
                let size = c.u8("MMAP2.build_id_size")? as usize;
                c.skip(3, "MMAP2.reserved")?;
                let bid = c.bytes(20, "MMAP2.build_id")?;
                FileId::BuildId(&bid[..size.min(20)])
            } else {
                FileId::Inode {
                    maj: c.u32("MMAP2.maj")?,
                    min: c.u32("MMAP2.min")?,
                    ino: c.u64("MMAP2.ino")?,
                    ino_generation: c.u64("MMAP2.ino_generation")?,
                }
            };
            Record::Mmap2(Mmap2 {
                pid,
                tid,
                addr,
                len,
                pgoff,
                file_id,
                prot: c.u32("MMAP2.prot")?,
                flags: c.u32("MMAP2.flags")?,
                filename: c_str(c.rest()),
            })
        }
        record_type::COMM => Record::Comm(Comm {
            pid: c.u32("COMM.pid")?,
            tid: c.u32("COMM.tid")?,
            comm: c_str(c.rest()),
        }),
        record_type::FORK | record_type::EXIT => {
            let fe = ForkExit {
                pid: c.u32("FORK.pid")?,
                ppid: c.u32("FORK.ppid")?,
                tid: c.u32("FORK.tid")?,
                ptid: c.u32("FORK.ptid")?,
                time: c.u64("FORK.time")?,
            };
            if h.type_ == record_type::FORK {
                Record::Fork(fe)
            } else {
                Record::Exit(fe)
            }
        }
        record_type::LOST => Record::Lost(Lost {
            id: c.u64("LOST.id")?,
            lost: c.u64("LOST.lost")?,
        }),
        record_type::LOST_SAMPLES => Record::LostSamples(c.u64("LOST_SAMPLES.lost")?),
        record_type::KSYMBOL => Record::Ksymbol(Ksymbol {
            addr: c.u64("KSYMBOL.addr")?,
            len: c.u32("KSYMBOL.len")?,
            ksym_type: c.u16("KSYMBOL.ksym_type")?,
            flags: c.u16("KSYMBOL.flags")?,
            name: c_str(c.rest()),
        }),
        record_type::BPF_EVENT => Record::BpfEvent(BpfEvent {
            type_: c.u16("BPF_EVENT.type")?,
            flags: c.u16("BPF_EVENT.flags")?,
            id: c.u32("BPF_EVENT.id")?,
            tag: c.array("BPF_EVENT.tag")?,
        }),
        t => Record::Other(t),
    };
    Ok((h, rec, sid))
}

/// The length the kernel meant for a record: for KSYMBOL and BPF_EVENT it
/// is computable from the fields, and may be less than the header's size.
///
/// Why: perf_event_ksymbol_output() and perf_event_bpf_output() add each
/// listening event's trailer size to one header shared by all listeners
/// and never restore it, so when two BPF-aware recorders run at once
/// (perf beside bpfprof, or two perfs), the listener served later gets a
/// size that includes the earlier listeners' trailers. Its own trailer is
/// written right after the fields; what follows up to the header's size
/// is stale ring bytes. Read from the record's end, the sample id, time
/// and pid would be garbage (seen: 18446743568 s load times).
///
/// The trailer is the listening event's (the attr with `flags::KSYMBOL`
/// or `flags::BPF_EVENT`), which may be another size than the first
/// event's. A record whose last word names an event whose trailer ends it
/// exactly is as long as it should be (perf's synthesized records name
/// the first event, or none).
///
/// Anything else, or a KSYMBOL whose name has no NUL, keeps its size.
pub fn natural_len(h: &Header, raw: &[u8], first: &EventAttr, attrs: &dyn AttrLookup) -> usize {
    let (fields, flag) = match h.type_ {
        record_type::BPF_EVENT => (24, flags::BPF_EVENT),
        record_type::KSYMBOL => match raw.get(24..).and_then(|n| n.iter().position(|&c| c == 0)) {
            Some(n) => (24 + (n + 1).div_ceil(8) * 8, flags::KSYMBOL),
            None => return raw.len(),
        },
        _ => return raw.len(),
    };
    if fields + trailer_attr(raw, first, attrs).id_trailer_size() == raw.len() {
        return raw.len();
    }
    let listener = attrs.listener(flag).unwrap_or(first);
    (fields + listener.id_trailer_size()).min(raw.len())
}

pub(crate) fn sample_attr<'x>(
    raw: &[u8],
    first: &'x EventAttr,
    attrs: &'x dyn AttrLookup,
    offset: u64,
) -> Result<&'x EventAttr> {
    if first.sample_type & st::IDENTIFIER == 0 {
        return Ok(first);
    }
    let id = raw
        .get(8..16)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
        .ok_or_else(|| Error::parse(offset + 8, "SAMPLE: need 8 bytes for IDENTIFIER"))?;
    attrs.attr_for_id(id).ok_or_else(|| {
        Error::parse(
            offset + 8,
            format!("SAMPLE with event id {id} that no attr lists"),
        )
    })
}

/// The attr whose layout a non-sample record's trailer has: with
/// IDENTIFIER, the one its last word names (events' trailers may differ
/// in size then, as perf allows: a tracepoint records its CPU, a task's
/// cpu-clock does not), else the first.
pub(crate) fn trailer_attr<'x>(
    raw: &[u8],
    first: &'x EventAttr,
    attrs: &'x dyn AttrLookup,
) -> &'x EventAttr {
    if first.sample_type & st::IDENTIFIER == 0 || raw.len() < 16 {
        return first;
    }
    let id = u64::from_le_bytes(raw[raw.len() - 8..].try_into().unwrap());
    // Synthesized records carry id 0; perf maps that to the first attr.
    attrs.attr_for_id(id).unwrap_or(first)
}

/// Split a non-sample record into its fields and its decoded trailer.
fn split_trailer<'a>(
    raw: &'a [u8],
    first: &EventAttr,
    attrs: &dyn AttrLookup,
    offset: u64,
) -> Result<(&'a [u8], SampleId)> {
    let attr = trailer_attr(raw, first, attrs);
    let n = attr.id_trailer_size();
    if n == 0 {
        return Ok((&raw[8..], SampleId::default()));
    }
    if raw.len() < 8 + n {
        return Err(Error::parse(
            offset,
            format!(
                "record of {} bytes cannot hold its {n}-byte sample_id trailer",
                raw.len()
            ),
        ));
    }
    let split = raw.len() - n;
    let mut c = Cursor::new(&raw[split..], offset + split as u64);
    let mut sid = SampleId::default();
    let t = attr.sample_type;
    if t & st::TID != 0 {
        sid.pid = c.u32("sample_id.pid")?;
        sid.tid = c.u32("sample_id.tid")?;
    }
    if t & st::TIME != 0 {
        sid.time = c.u64("sample_id.time")?;
    }
    if t & st::ID != 0 {
        sid.id = c.u64("sample_id.id")?;
    }
    if t & st::STREAM_ID != 0 {
        sid.stream_id = c.u64("sample_id.stream_id")?;
    }
    if t & st::CPU != 0 {
        sid.cpu = c.u32("sample_id.cpu")?;
        c.u32("sample_id.res")?;
    }
    if t & st::IDENTIFIER != 0 {
        sid.id = c.u64("sample_id.identifier")?;
    }
    Ok((&raw[8..split], sid))
}

fn parse_sample<'a>(c: &mut Cursor<'a>, attr: &EventAttr) -> Result<(Sample<'a>, SampleId)> {
    let t = attr.sample_type;
    let mut s = Sample {
        ip: 0,
        pid: 0,
        tid: 0,
        time: 0,
        addr: 0,
        id: 0,
        stream_id: 0,
        cpu: 0,
        period: 0,
        callchain: None,
    };
    if t & st::IDENTIFIER != 0 {
        s.id = c.u64("SAMPLE.identifier")?;
    }
    if t & st::IP != 0 {
        s.ip = c.u64("SAMPLE.ip")?;
    }
    if t & st::TID != 0 {
        s.pid = c.u32("SAMPLE.pid")?;
        s.tid = c.u32("SAMPLE.tid")?;
    }
    if t & st::TIME != 0 {
        s.time = c.u64("SAMPLE.time")?;
    }
    if t & st::ADDR != 0 {
        s.addr = c.u64("SAMPLE.addr")?;
    }
    if t & st::ID != 0 {
        s.id = c.u64("SAMPLE.id")?;
    }
    if t & st::STREAM_ID != 0 {
        s.stream_id = c.u64("SAMPLE.stream_id")?;
    }
    if t & st::CPU != 0 {
        s.cpu = c.u32("SAMPLE.cpu")?;
        c.u32("SAMPLE.res")?;
    }
    if t & st::PERIOD != 0 {
        s.period = c.u64("SAMPLE.period")?;
    }
    if t & st::READ != 0 {
        skip_read_values(c, attr.read_format)?;
    }
    if t & st::CALLCHAIN != 0 {
        let nr = c.u64("SAMPLE.callchain.nr")?;
        let bytes = nr
            .checked_mul(8)
            .filter(|&n| n <= c.remaining() as u64)
            .ok_or_else(|| {
                Error::parse(
                    c.offset(),
                    format!("SAMPLE.callchain: {nr} entries do not fit in the record"),
                )
            })?;
        s.callchain = Some(c.bytes(bytes as usize, "SAMPLE.callchain")?);
    }
    let sid = s.sample_id();
    Ok((s, sid))
}

/// The sample fields of 8 bytes each that come before any of variable
/// size, in the order the kernel writes them.
const FIXED_FIELDS: u64 = st::IDENTIFIER
    | st::IP
    | st::TID
    | st::TIME
    | st::ADDR
    | st::ID
    | st::STREAM_ID
    | st::CPU
    | st::PERIOD;

/// A SAMPLE of `attr` decoded as [`parse_sample`] decodes it, with its
/// fixed fields read at their offsets; `None` where this does not apply
/// (READ values before the call chain) or the record is short, so that the
/// cursor reports what is wrong.
///
/// Always inlined: returned through memory, the 80-byte `Sample` was read
/// back in 16-byte loads from 8-byte stores, a store-forwarding stall that
/// was a fifth of the flat report's reading loop in a profile.
#[inline(always)]
pub(crate) fn fixed_sample<'a>(raw: &'a [u8], attr: &EventAttr) -> Option<Sample<'a>> {
    let t = attr.sample_type;
    if t & st::READ != 0 {
        return None;
    }
    let body = raw.get(8..)?;
    let n = 8 * (t & FIXED_FIELDS).count_ones() as usize;
    let (fixed, rest) = (body.get(..n)?, &body[n..]);
    let mut words = fixed
        .chunks_exact(8)
        .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")));
    let mut field = |bit: u64| match t & bit {
        0 => None,
        _ => words.next(),
    };
    let identifier = field(st::IDENTIFIER);
    let ip = field(st::IP).unwrap_or(0);
    let pid_tid = field(st::TID).unwrap_or(0);
    let time = field(st::TIME).unwrap_or(0);
    let addr = field(st::ADDR).unwrap_or(0);
    let id = field(st::ID).or(identifier).unwrap_or(0);
    let stream_id = field(st::STREAM_ID).unwrap_or(0);
    let cpu = field(st::CPU).unwrap_or(0);
    let period = field(st::PERIOD).unwrap_or(0);
    let callchain = match t & st::CALLCHAIN {
        0 => None,
        _ => {
            let nr = u64::from_le_bytes(rest.get(..8)?.try_into().ok()?);
            let bytes = usize::try_from(nr.checked_mul(8)?).ok()?;
            Some(rest.get(8..)?.get(..bytes)?)
        }
    };
    // The kernel writes pid then tid, cpu then a reserved word, each 4
    // bytes, little-endian in the file.
    Some(Sample {
        ip,
        pid: pid_tid as u32,
        tid: (pid_tid >> 32) as u32,
        time,
        addr,
        id,
        stream_id,
        cpu: cpu as u32,
        period,
        callchain,
    })
}

fn skip_read_values(c: &mut Cursor<'_>, rf: u64) -> Result<()> {
    use crate::attr::read_format as r;
    let per_value = 8 + 8 * ((rf & r::ID != 0) as usize + (rf & r::LOST != 0) as usize);
    let times = 8
        * ((rf & r::TOTAL_TIME_ENABLED != 0) as usize + (rf & r::TOTAL_TIME_RUNNING != 0) as usize);
    if rf & r::GROUP != 0 {
        let nr = c.u64("SAMPLE.read.nr")?;
        c.skip(times, "SAMPLE.read.times")?;
        let n = nr
            .checked_mul(per_value as u64)
            .filter(|&n| n <= c.remaining() as u64)
            .ok_or_else(|| {
                Error::parse(c.offset(), format!("SAMPLE.read: {nr} values do not fit"))
            })?;
        c.skip(n as usize, "SAMPLE.read.values")
    } else {
        c.skip(per_value + times, "SAMPLE.read")
    }
}

/// Encode `rec` as a complete record into `out` (appending). Non-sample
/// records get the `sample_id` trailer that `attr` calls for, filled from
/// `sid`; perf-internal records get none.
pub fn encode_record(
    rec: &Record<'_>,
    misc: u16,
    sid: &SampleId,
    attr: &EventAttr,
    out: &mut Vec<u8>,
) {
    let start = out.len();
    let (ty, trailer) = match rec {
        Record::Sample(_) => (record_type::SAMPLE, false),
        Record::Mmap(_) => (record_type::MMAP, true),
        Record::Mmap2(_) => (record_type::MMAP2, true),
        Record::Comm(_) => (record_type::COMM, true),
        Record::Fork(_) => (record_type::FORK, true),
        Record::Exit(_) => (record_type::EXIT, true),
        Record::Lost(_) => (record_type::LOST, true),
        Record::LostSamples(_) => (record_type::LOST_SAMPLES, true),
        Record::Ksymbol(_) => (record_type::KSYMBOL, true),
        Record::BpfEvent(_) => (record_type::BPF_EVENT, true),
        Record::FinishedRound => (record_type::FINISHED_ROUND, false),
        Record::FinishedInit => (record_type::FINISHED_INIT, false),
        Record::Other(t) => (*t, false),
    };
    out.extend_from_slice(&ty.to_le_bytes());
    out.extend_from_slice(&misc.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    let put32 = |o: &mut Vec<u8>, v: u32| o.extend_from_slice(&v.to_le_bytes());
    let put64 = |o: &mut Vec<u8>, v: u64| o.extend_from_slice(&v.to_le_bytes());
    let put_str = |o: &mut Vec<u8>, s: &[u8]| {
        o.extend_from_slice(s);
        o.resize(o.len() + align8(s.len() + 1) - s.len(), 0);
    };
    match rec {
        Record::Sample(s) => encode_sample(s, attr, out),
        Record::Mmap(m) => {
            put32(out, m.pid);
            put32(out, m.tid);
            put64(out, m.addr);
            put64(out, m.len);
            put64(out, m.pgoff);
            put_str(out, m.filename);
        }
        Record::Mmap2(m) => {
            put32(out, m.pid);
            put32(out, m.tid);
            put64(out, m.addr);
            put64(out, m.len);
            put64(out, m.pgoff);
            match m.file_id {
                FileId::Inode {
                    maj,
                    min,
                    ino,
                    ino_generation,
                } => {
                    put32(out, maj);
                    put32(out, min);
                    put64(out, ino);
                    put64(out, ino_generation);
                }
                FileId::BuildId(b) => {
                    let n = b.len().min(20);
                    out.push(n as u8);
                    out.extend_from_slice(&[0, 0, 0]);
                    out.extend_from_slice(&b[..n]);
                    out.resize(out.len() + 20 - n, 0);
                }
            }
            put32(out, m.prot);
            put32(out, m.flags);
            put_str(out, m.filename);
        }
        Record::Comm(c) => {
            put32(out, c.pid);
            put32(out, c.tid);
            put_str(out, c.comm);
        }
        Record::Fork(f) | Record::Exit(f) => {
            put32(out, f.pid);
            put32(out, f.ppid);
            put32(out, f.tid);
            put32(out, f.ptid);
            put64(out, f.time);
        }
        Record::Lost(l) => {
            put64(out, l.id);
            put64(out, l.lost);
        }
        Record::LostSamples(n) => put64(out, *n),
        Record::Ksymbol(k) => {
            put64(out, k.addr);
            put32(out, k.len);
            out.extend_from_slice(&k.ksym_type.to_le_bytes());
            out.extend_from_slice(&k.flags.to_le_bytes());
            put_str(out, k.name);
        }
        Record::BpfEvent(b) => {
            out.extend_from_slice(&b.type_.to_le_bytes());
            out.extend_from_slice(&b.flags.to_le_bytes());
            put32(out, b.id);
            out.extend_from_slice(&b.tag);
        }
        Record::FinishedRound | Record::FinishedInit | Record::Other(_) => {}
    }
    if trailer && attr.sample_id_all() {
        encode_sample_id(sid, attr.sample_type, out);
    }
    let size = (out.len() - start) as u16;
    out[start + 6..start + 8].copy_from_slice(&size.to_le_bytes());
}

fn encode_sample_id(sid: &SampleId, t: u64, out: &mut Vec<u8>) {
    if t & st::TID != 0 {
        out.extend_from_slice(&sid.pid.to_le_bytes());
        out.extend_from_slice(&sid.tid.to_le_bytes());
    }
    if t & st::TIME != 0 {
        out.extend_from_slice(&sid.time.to_le_bytes());
    }
    if t & st::ID != 0 {
        out.extend_from_slice(&sid.id.to_le_bytes());
    }
    if t & st::STREAM_ID != 0 {
        out.extend_from_slice(&sid.stream_id.to_le_bytes());
    }
    if t & st::CPU != 0 {
        out.extend_from_slice(&sid.cpu.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
    }
    if t & st::IDENTIFIER != 0 {
        out.extend_from_slice(&sid.id.to_le_bytes());
    }
}

fn encode_sample(s: &Sample<'_>, attr: &EventAttr, out: &mut Vec<u8>) {
    let t = attr.sample_type;
    let mut p = |bit: u64, v: &[u8]| {
        if t & bit != 0 {
            out.extend_from_slice(v)
        }
    };
    p(st::IDENTIFIER, &s.id.to_le_bytes());
    p(st::IP, &s.ip.to_le_bytes());
    p(
        st::TID,
        &[s.pid.to_le_bytes(), s.tid.to_le_bytes()].concat(),
    );
    p(st::TIME, &s.time.to_le_bytes());
    p(st::ADDR, &s.addr.to_le_bytes());
    p(st::ID, &s.id.to_le_bytes());
    p(st::STREAM_ID, &s.stream_id.to_le_bytes());
    p(st::CPU, &[s.cpu.to_le_bytes(), [0; 4]].concat());
    p(st::PERIOD, &s.period.to_le_bytes());
    if t & st::CALLCHAIN != 0 {
        let cc = s.callchain.unwrap_or(&[]);
        out.extend_from_slice(&((cc.len() / 8) as u64).to_le_bytes());
        out.extend_from_slice(&cc[..cc.len() / 8 * 8]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::flags;

    /// The fixed-offset decoder against the cursor's, on random sample
    /// types (READ included, which it leaves to the cursor), values, call
    /// chain lengths (some absurd) and cuts: whatever it decodes, the
    /// cursor decodes the same, and it declines only what it must.
    #[test]
    fn fixed_offsets_decode_as_the_cursor_does() {
        let bits = [
            st::IDENTIFIER,
            st::IP,
            st::TID,
            st::TIME,
            st::ADDR,
            st::ID,
            st::STREAM_ID,
            st::CPU,
            st::PERIOD,
            st::READ,
            st::CALLCHAIN,
        ];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut fast, mut declined) = (0, 0);
        for _ in 0..20_000 {
            let t = bits
                .iter()
                .filter(|_| next() % 2 == 1)
                .fold(0, |a, b| a | b);
            let attr = EventAttr {
                sample_type: t,
                read_format: next() % 16,
                ..Default::default()
            };
            let mut raw = vec![0u8; 8];
            let words = (t & FIXED_FIELDS).count_ones() + 3 * u32::from(t & st::READ != 0);
            for _ in 0..words {
                raw.extend(next().to_le_bytes());
            }
            if t & st::CALLCHAIN != 0 {
                let nr = match next() % 8 {
                    0 => 1 << 61,
                    1 => 1 << 40,
                    n => n,
                };
                raw.extend(nr.to_le_bytes());
                for _ in 0..nr.min(8) {
                    raw.extend(next().to_le_bytes());
                }
            }
            if next() % 4 == 0 {
                raw.truncate(8 + (next() as usize) % (raw.len() - 7));
            }
            let slow = parse_sample(&mut Cursor::new(&raw[8..], 8), &attr)
                .ok()
                .map(|(s, sid)| {
                    assert_eq!(sid, s.sample_id());
                    s
                });
            match fixed_sample(&raw, &attr) {
                Some(quick) => {
                    assert_eq!(Some(quick), slow, "type {t:#x}, {} bytes", raw.len());
                    fast += 1;
                }
                None => {
                    assert!(
                        slow.is_none() || t & st::READ != 0,
                        "declined a good sample: type {t:#x}"
                    );
                    declined += 1;
                }
            }
        }
        assert!(
            fast > 5_000 && declined > 5_000,
            "{fast} fast, {declined} declined"
        );
    }

    fn attr() -> EventAttr {
        EventAttr {
            sample_type: st::IP
                | st::TID
                | st::TIME
                | st::CPU
                | st::PERIOD
                | st::CALLCHAIN
                | st::IDENTIFIER,
            flags: flags::SAMPLE_ID_ALL,
            ..Default::default()
        }
    }

    #[test]
    fn ksymbol_matches_the_kernel_layout() {
        let a = attr();
        let k = Record::Ksymbol(Ksymbol {
            addr: 0xffffffffc0001000,
            len: 0x5a,
            ksym_type: ksym::TYPE_BPF,
            flags: 0,
            name: b"bpf_prog_6e278343dfe6e3bb_work",
        });
        let sid = SampleId {
            pid: 1,
            tid: 2,
            time: 3,
            id: 4,
            cpu: 1,
            ..Default::default()
        };
        let mut out = Vec::new();
        encode_record(&k, 0, &sid, &a, &mut out);
        // 24 header+fields, 32 for the padded name, 32 trailer: the 0x58 perf shows.
        assert_eq!(out.len(), 0x58);
        let (_, r, s) = parse_record(&out, &a, 0).unwrap();
        assert_eq!(r, k);
        assert_eq!(s, sid);
    }

    /// The layout of the over-long records seen in a perf.data that perf
    /// wrote beside `bpfprof record -a` (kernel 6.18): a KSYMBOL of 0x78
    /// bytes for a name that needs 0x58, and a BPF_EVENT of 0x58 for 0x38,
    /// the 32 extra bytes being the other listener's trailer size, left
    /// after ours as stale ring bytes.
    #[test]
    fn over_long_ksymbol_and_bpf_event_keep_their_true_trailer() {
        let a = attr();
        let sid = SampleId {
            pid: 4242,
            tid: 4243,
            time: 4_542_037_224_724,
            id: 4,
            cpu: 1,
            ..Default::default()
        };
        let k = Record::Ksymbol(Ksymbol {
            addr: 0xffffffffc0000648,
            len: 23,
            ksym_type: ksym::TYPE_BPF,
            flags: 0,
            name: b"bpf_prog_62efe59b7d4f5ea1",
        });
        let e = Record::BpfEvent(BpfEvent {
            type_: bpf_event::PROG_LOAD,
            flags: 0,
            id: 2022,
            tag: *b"\x62\xef\xe5\x9b\x74\x4d\xcd\xc6",
        });
        for (rec, natural) in [(k, 0x58), (e, 0x38)] {
            let mut out = Vec::new();
            encode_record(&rec, 0, &sid, &a, &mut out);
            assert_eq!(out.len(), natural);
            // Stale bytes: what an earlier record left in the ring.
            out.extend((0..32u8).map(|i| i.wrapping_mul(37) | 0x80));
            let n = out.len() as u16;
            out[6..8].copy_from_slice(&n.to_le_bytes());
            let (h, r, s) = parse_record(&out, &a, 0).unwrap();
            assert_eq!(h.size as usize, natural + 32);
            assert_eq!(r, rec);
            assert_eq!(s, sid, "the trailer at the natural end");
            assert_eq!(natural_len(&h, &out, &a, &a), natural);
        }
    }

    /// Two events, the listener's trailer bigger than the first event's
    /// (it records its CPU, the first does not): the over-long record's
    /// trailer is the listener's, found where its size puts it, even when
    /// the stale last word names the first event.
    #[test]
    fn an_over_long_record_keeps_the_trailer_of_its_listener() {
        struct Two(EventAttr, EventAttr);
        impl AttrLookup for Two {
            fn attr_for_id(&self, id: u64) -> Option<&EventAttr> {
                match id {
                    1 => Some(&self.0),
                    2 => Some(&self.1),
                    _ => None,
                }
            }
            fn first(&self) -> Option<&EventAttr> {
                Some(&self.0)
            }
            fn listener(&self, flag: u64) -> Option<&EventAttr> {
                [&self.0, &self.1].into_iter().find(|a| a.flags & flag != 0)
            }
        }
        let first = EventAttr {
            sample_type: st::IP | st::TID | st::TIME | st::IDENTIFIER,
            flags: flags::SAMPLE_ID_ALL,
            ..Default::default()
        };
        let listener = EventAttr {
            sample_type: first.sample_type | st::CPU,
            flags: flags::SAMPLE_ID_ALL | flags::KSYMBOL | flags::BPF_EVENT,
            ..first
        };
        assert_eq!(
            (first.id_trailer_size(), listener.id_trailer_size()),
            (24, 32)
        );
        let sid = SampleId {
            pid: 7,
            tid: 8,
            time: 9_000,
            cpu: 1,
            id: 2,
            ..Default::default()
        };
        let rec = Record::BpfEvent(BpfEvent {
            type_: bpf_event::PROG_LOAD,
            flags: 0,
            id: 77,
            tag: [1; 8],
        });
        let mut out = Vec::new();
        encode_record(&rec, 0, &sid, &listener, &mut out);
        let natural = out.len();
        assert_eq!(natural, 24 + 32);
        let two = Two(first, listener);
        let (h, _, _) = parse_record(&out, &two, 0).unwrap();
        assert_eq!(
            natural_len(&h, &out, &two.0, &two),
            natural,
            "as it should be"
        );
        // Stale bytes whose last word names the first event.
        out.extend([0xaa; 16]);
        out.extend(1u64.to_le_bytes());
        let n = out.len() as u16;
        out[6..8].copy_from_slice(&n.to_le_bytes());
        let (h, r, s) = parse_record(&out, &two, 0).unwrap();
        assert_eq!(natural_len(&h, &out, &two.0, &two), natural);
        assert_eq!(r, rec);
        assert_eq!(s, sid, "the listener's trailer at the natural end");
    }

    #[test]
    fn sample_with_callchain_round_trips_and_truncations_fail() {
        let a = attr();
        let cc: Vec<u8> = [context::KERNEL, 0xffffffff81000010, context::USER, 0x401000]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let s = Sample {
            ip: 0xffffffff81000010,
            pid: 10,
            tid: 11,
            time: 12,
            addr: 0,
            id: 7,
            stream_id: 0,
            cpu: 1,
            period: 250000,
            callchain: Some(&cc),
        };
        let mut out = Vec::new();
        encode_record(
            &Record::Sample(s),
            misc::KERNEL,
            &SampleId::default(),
            &a,
            &mut out,
        );
        let (h, r, _) = parse_record(&out, &a, 0).unwrap();
        assert_eq!(h.size as usize, out.len());
        let Record::Sample(p) = r else {
            panic!("not a sample")
        };
        assert_eq!(p.callchain().collect::<Vec<_>>()[3], 0x401000);
        assert_eq!(p, s);
        for cut in 8..out.len() {
            assert!(parse_record(&out[..cut], &a, 0).is_err(), "cut {cut}");
        }
    }
}
