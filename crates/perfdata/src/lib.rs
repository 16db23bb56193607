//! Read and write the Linux `perf.data` file format.
mod bpf_prog_info;
mod cursor;
mod error;

pub use bpf_prog_info::{array, hex, BpfProgInfo, FuncInfo, LineInfo, BPF_PROG_INFO_SIZE};
pub use error::{Error, Result};
