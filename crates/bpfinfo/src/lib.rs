//! BPF program introspection for profilers.
//!
//! A BPF program is code like any other: it has functions (the main program
//! and its bpf-to-bpf sub-programs), machine code at kernel addresses,
//! bytecode, and source lines through BTF. This crate gets all of that from
//! the kernel ([`sys`], Linux only) into perf's in-memory form
//! [`perfdata::BpfProgInfo`], and answers questions about it whether it
//! came from the kernel or from a perf.data file:
//!
//! - [`Program`]: sub-programs with names, addresses and JIT bytes; line
//!   tables from JIT offsets and xlated instructions to [`SourceLine`]s.
//! - [`sys::prog_meta_snapshot`]: who holds each program, where it is
//!   attached and which maps it uses (as bpftool's `pids`, `link show`,
//!   `perf show` and `map show` say).
//! - [`btf`]: a bounds-checked reader for raw BTF blobs.
//! - [`disasm`]: x86-64 and arm64 disassembly of JIT images.
//! - [`xlated`]: bytecode in the kernel's syntax, as bpftool prints it.
//! - [`testprog`]: test programs generated in Rust (no clang), to load,
//!   attach to a tracepoint or run.
//!
//! ```no_run
//! # #[cfg(target_os = "linux")] {
//! use bpfinfo::{sys, Program};
//! for (id, prog) in sys::walk_progs(sys::Capture::Full) {
//!     match prog {
//!         Ok(live) => {
//!             let prog = Program::new(live.info, live.btf.as_deref());
//!             for sub in prog.subprogs() {
//!                 println!("{id} {:#x} {} {}", sub.addr, sub.len, sub.ksym_name);
//!             }
//!         }
//!         Err(e) => eprintln!("{id}: {e}"),
//!     }
//! }
//! # }
//! ```

#![warn(missing_docs)]

pub mod btf;
pub mod disasm;
mod error;
mod kallsyms;
pub mod program;
// Beside prog_type.rs, declared here so that program.rs stays as it is.
#[path = "program/map_type.rs"]
mod map_type;
#[cfg(target_os = "linux")]
pub mod sys;
pub mod testprog;
pub mod xlated;

pub use btf::{Btf, BtfError};
pub use disasm::{disassemble, Arch, Insn, Syntax};
pub use error::Error;
pub use kallsyms::Kallsyms;
pub use map_type::map_type_name;
pub use program::{prog_type_name, JitLine, Program, SourceLine, SubProg};
pub use xlated::{format_insns, format_program, listing, XlatedInsn};
