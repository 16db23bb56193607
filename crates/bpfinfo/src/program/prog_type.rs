//! Names of `enum bpf_prog_type` values.

/// The name bpftool shows for program type `t` (`enum bpf_prog_type` in
/// include/uapi/linux/bpf.h, lower case without the prefix).
pub fn prog_type_name(t: u32) -> Option<&'static str> {
    const NAMES: [&str; 33] = [
        "unspec",
        "socket_filter",
        "kprobe",
        "sched_cls",
        "sched_act",
        "tracepoint",
        "xdp",
        "perf_event",
        "cgroup_skb",
        "cgroup_sock",
        "lwt_in",
        "lwt_out",
        "lwt_xmit",
        "sock_ops",
        "sk_skb",
        "cgroup_device",
        "sk_msg",
        "raw_tracepoint",
        "cgroup_sock_addr",
        "lwt_seg6local",
        "lirc_mode2",
        "sk_reuseport",
        "flow_dissector",
        "cgroup_sysctl",
        "raw_tracepoint_writable",
        "cgroup_sockopt",
        "tracing",
        "struct_ops",
        "ext",
        "lsm",
        "sk_lookup",
        "syscall",
        "netfilter",
    ];
    NAMES.get(t as usize).copied()
}
