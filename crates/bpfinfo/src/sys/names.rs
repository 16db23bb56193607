//! Names for the ids a link or a perf-event attachment reports: tracepoint
//! categories, network devices, cgroup paths and BTF functions. Each source
//! is read at most once per snapshot, and only when an attachment needs it.

use std::collections::HashMap;
use std::path::Path;

/// Caches for one snapshot.
#[derive(Default)]
pub(crate) struct Names {
    events_dir: Option<Option<std::path::PathBuf>>,
    tracepoints: HashMap<String, String>,
    netdevs: Option<HashMap<u32, String>>,
    cgroups: Option<HashMap<u64, String>>,
    vmlinux: Option<Option<crate::Btf>>,
    vmlinux_btf_id: Option<Option<u32>>,
}

impl Names {
    /// `category:name` for tracepoint `name`, as `perf list` and bpftool's
    /// attach syntax write it; the bare name when tracefs has no such event.
    pub(crate) fn tracepoint(&mut self, name: &str) -> String {
        if name.is_empty() || name.contains(':') {
            return name.to_string();
        }
        if let Some(t) = self.tracepoints.get(name) {
            return t.clone();
        }
        let dir = self
            .events_dir
            .get_or_insert_with(|| {
                [
                    "/sys/kernel/tracing/events",
                    "/sys/kernel/debug/tracing/events",
                ]
                .iter()
                .map(std::path::PathBuf::from)
                .find(|p| p.is_dir())
            })
            .clone();
        let found = dir.and_then(|d| {
            let rd = std::fs::read_dir(&d).ok()?;
            rd.filter_map(|e| e.ok())
                .find(|e| e.path().join(name).is_dir())
                .map(|e| format!("{}:{name}", e.file_name().to_string_lossy()))
        });
        let t = found.unwrap_or_else(|| name.to_string());
        self.tracepoints.insert(name.to_string(), t.clone());
        t
    }

    /// The network device with `ifindex` (as if_indextoname, from sysfs).
    pub(crate) fn netdev(&mut self, ifindex: u32) -> String {
        let map = self.netdevs.get_or_insert_with(|| {
            let mut m = HashMap::new();
            if let Ok(rd) = std::fs::read_dir("/sys/class/net") {
                for e in rd.flatten() {
                    let idx = std::fs::read_to_string(e.path().join("ifindex"));
                    if let Some(i) = idx.ok().and_then(|s| s.trim().parse().ok()) {
                        m.insert(i, e.file_name().to_string_lossy().into_owned());
                    }
                }
            }
            m
        });
        map.get(&ifindex)
            .cloned()
            .unwrap_or_else(|| format!("ifindex {ifindex}"))
    }

    /// The cgroup v2 path whose inode is `id` (what the kernel reports as
    /// cgroup id), else `cgroup id N`.
    pub(crate) fn cgroup(&mut self, id: u64) -> String {
        let map = self.cgroups.get_or_insert_with(|| {
            let mut m = HashMap::new();
            walk_cgroups(Path::new("/sys/fs/cgroup"), 0, &mut m);
            m
        });
        map.get(&id)
            .cloned()
            .unwrap_or_else(|| format!("cgroup id {id}"))
    }

    /// The function a tracing link attaches to: its BTF FUNC name when the
    /// BTF object is vmlinux, else the ids.
    pub(crate) fn btf_func(&mut self, obj_id: u32, type_id: u32) -> String {
        let vmlinux_id = *self
            .vmlinux_btf_id
            .get_or_insert_with(super::objinfo::vmlinux_btf_id);
        if vmlinux_id == Some(obj_id) {
            let btf = self.vmlinux.get_or_insert_with(|| {
                let raw = std::fs::read("/sys/kernel/btf/vmlinux").ok()?;
                crate::Btf::parse(&raw).ok()
            });
            if let Some(name) = btf.as_ref().and_then(|b| b.func_name(type_id)) {
                return name.to_string();
            }
        }
        format!("btf_obj {obj_id} type {type_id}")
    }
}

/// Depth-first over cgroupfs, bounded in depth so a strange mount cannot
/// keep us walking.
fn walk_cgroups(dir: &Path, depth: usize, m: &mut HashMap<u64, String>) {
    use std::os::unix::fs::MetadataExt;
    if depth > 32 {
        return;
    }
    if let Ok(md) = std::fs::metadata(dir) {
        m.insert(md.ino(), dir.to_string_lossy().into_owned());
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            walk_cgroups(&e.path(), depth + 1, m);
        }
    }
}
