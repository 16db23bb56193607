//! What a recording knows about a BPF program beyond its `bpf_prog_info`:
//! the processes that held it, where it was attached, and its maps, as
//! seen at record time. Programs loaded before the recording are the
//! normal case for daemons, and by report time their owners may be gone.

/// A process holding the program (an fd on it, or on a link to it), as
/// `bpftool prog show` lists under `pids`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BpfOwner {
    pub pid: u32,
    pub comm: String,
}

/// One attachment of the program.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BpfAttach {
    /// How it is attached, in bpftool's words: `tracepoint`,
    /// `raw_tracepoint`, `tracing` (fentry/fexit/tp_btf), `kprobe`,
    /// `kretprobe`, `uprobe`, `uretprobe`, `perf_event`, `cgroup`, `xdp`,
    /// `tcx`, `netfilter`, `struct_ops`, ...
    pub kind: String,
    /// What it is attached to: `syscalls:sys_enter_getppid`, `sys_enter`,
    /// `do_sys_openat2+0x0`, `/usr/bin/bash:0x1234`, a cgroup path, a
    /// netdev name, ...
    pub target: String,
    /// The bpf_link behind the attachment, when there is one.
    pub link_id: Option<u32>,
}

/// A map the program uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BpfMapMeta {
    pub id: u32,
    pub name: String,
    /// `bpf_map_type` as a number (`bpfinfo` names it).
    pub map_type: u32,
    pub key_size: u32,
    pub value_size: u32,
    pub max_entries: u32,
}

/// Owners, attachments and maps of one program, captured at record time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BpfProgMeta {
    pub prog_id: u32,
    pub owners: Vec<BpfOwner>,
    pub attach: Vec<BpfAttach>,
    pub maps: Vec<BpfMapMeta>,
}
