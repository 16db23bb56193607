//! `bpfprof record`: sampling with perf_event_open on every CPU, BPF
//! tracking (KSYMBOL/BPF_EVENT in the stream, program info fetched by a
//! side-band thread), synthesis of what existed at start, and a perf.data
//! that Linux perf reads.
//!
//! `sys` holds all the unsafe code; `ring` reads records out of the mmap
//! rings; `events` opens them; `synthesize` and `bpf` describe the state at
//! start; `sideband` follows BPF loads; `prog_meta` captures programs'
//! owners, attachments and maps; `stats` measures their run time; `output`
//! checks and rotates the file; `session` runs the recording.

pub mod bpf;
pub mod buildid;
pub mod caps;
pub mod demo;
pub mod events;
pub mod features;
mod output;
pub mod prog_meta;
pub mod ring;
pub mod session;
pub mod sideband;
mod stats;
pub mod synthesize;
pub mod sys;

pub use session::{record, Options, What};
