//! Read and write the Linux `perf.data` file format.
mod attr;
mod bpf_prog_info;
mod cursor;
mod error;
mod record;

pub use attr::{event_type, flags, read_format, sample_type, sw, AttrEntry, EventAttr, ATTR_SIZE};
pub use bpf_prog_info::{array, hex, BpfProgInfo, FuncInfo, LineInfo, BPF_PROG_INFO_SIZE};
pub use error::{Error, Result};
pub use record::{
    bpf_event, context, encode_record, ksym, misc, parse_record, record_type, AttrLookup, BpfEvent,
    Comm, FileId, ForkExit, Header, Ksymbol, Lost, Mmap, Mmap2, Record, Sample, SampleId,
};
