//! The profile model, the bottom layer: what the engine builds and every
//! view reads. Nothing here reads a file or prints.
//!
//! - [`profile`]: [`profile::Profile`] — rows by (thread, frame), the stack
//!   tree and each sample's place in it, BPF programs as the recording
//!   knows them, per-instruction hits — and the [`profile::Filters`] that
//!   select samples;
//! - [`bpf_cost`]: what each BPF program cost, in parts (its own code,
//!   what it called, the hook that ran it), computed from the stacks;
//! - [`bpf_hooks`]: the table of kernel frames that run programs, by
//!   attach type, that the cost walk consults;
//! - [`hook_split`]: which programs share a hook's samples, and each
//!   sample's program.

pub mod bpf_cost;
pub mod bpf_hooks;
pub mod hook_split;
pub mod profile;
