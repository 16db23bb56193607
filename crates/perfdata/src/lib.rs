//! Read and write the Linux `perf.data` file format, BPF records and
//! feature sections included.
//!
//! A perf.data file is a 104-byte header pointing at the event attrs, the
//! data section (a stream of records, optionally zstd-compressed) and the
//! feature sections (metadata such as the hostname, build ids, and the
//! `bpf_prog_info` and BTF of every BPF program seen). [`PerfFile`] reads one,
//! streaming the records in time order; [`PerfFileWriter`] writes one that
//! Linux perf reads without warnings.
//!
//! ```no_run
//! # fn main() -> perfdata::Result<()> {
//! let file = perfdata::PerfFile::open("perf.data".as_ref())?;
//! let mut records = file.records()?;
//! while let Some(r) = records.next()? {
//!     if let perfdata::Record::Ksymbol(k) = r.record {
//!         println!("{:#x} {}", k.addr, String::from_utf8_lossy(k.name));
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! Nothing here is Linux-only: the crate parses bytes, so it builds and is
//! fuzzed anywhere. Every length read from a file is checked against what is
//! left before it is used.

#![warn(missing_docs)]

mod attr;
mod attrs_index;
mod bpf_prog_info;
mod bpf_prog_meta;
mod cursor;
mod decompress;
mod error;
mod features;
mod header;
mod mmap;
mod raw_records;
mod reader;
mod record;
mod records;
mod round_order;
mod writer;

pub use attr::{event_type, flags, read_format, sample_type, sw, AttrEntry, EventAttr, ATTR_SIZE};
pub use attrs_index::Attrs;
pub use bpf_prog_info::{array, hex, BpfProgInfo, FuncInfo, LineInfo, BPF_PROG_INFO_SIZE};
pub use bpf_prog_meta::{tail as bpf_meta_tail, BpfAttach, BpfMapMeta, BpfOwner, BpfProgMeta};
pub use error::{Error, Result};
pub use features::{feature, BtfBlob, BuildIdEntry, Compressed, Features, NrCpus};
pub use header::{FileHeader, Section};
pub use raw_records::{RawRecord, RawRecords};
pub use reader::PerfFile;
pub use record::{
    bpf_event, context, encode_record, ksym, misc, parse_record, record_type, AttrLookup, BpfEvent,
    Comm, FileId, ForkExit, Header, Ksymbol, Lost, Mmap, Mmap2, Record, Sample, SampleId,
};
pub use records::{RecordRef, Records};
pub use round_order::RoundOrder;
pub use writer::PerfFileWriter;
