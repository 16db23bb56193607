//! Names of `enum bpf_map_type` values.

/// The name bpftool shows for map type `t` (`enum bpf_map_type` in
/// include/uapi/linux/bpf.h, lower case without the prefix).
pub fn map_type_name(t: u32) -> Option<&'static str> {
    const NAMES: [&str; 34] = [
        "unspec",
        "hash",
        "array",
        "prog_array",
        "perf_event_array",
        "percpu_hash",
        "percpu_array",
        "stack_trace",
        "cgroup_array",
        "lru_hash",
        "lru_percpu_hash",
        "lpm_trie",
        "array_of_maps",
        "hash_of_maps",
        "devmap",
        "sockmap",
        "cpumap",
        "xskmap",
        "sockhash",
        "cgroup_storage",
        "reuseport_sockarray",
        "percpu_cgroup_storage",
        "queue",
        "stack",
        "sk_storage",
        "devmap_hash",
        "struct_ops",
        "ringbuf",
        "inode_storage",
        "task_storage",
        "bloom_filter",
        "user_ringbuf",
        "cgrp_storage",
        "arena",
    ];
    NAMES.get(t as usize).copied()
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_match_the_uapi_enum() {
        assert_eq!(super::map_type_name(1), Some("hash"));
        assert_eq!(super::map_type_name(27), Some("ringbuf"));
        assert_eq!(super::map_type_name(33), Some("arena"));
        assert_eq!(super::map_type_name(1000), None);
    }
}
