//! Every map, as `bpftool map show` lists it: BPF_MAP_GET_NEXT_ID, then
//! `struct bpf_map_info` and the fdinfo values (memlock, frozen) of each.

use std::os::fd::AsFd;

use perfdata::BpfMapMeta;

use super::objinfo::{all_ids, c_text, fd_by_id, get_info, ObjBuf};
use super::Cmd;
use crate::Error;

/// One map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapInfo {
    /// Id, name, type, key/value sizes, max entries, flags.
    pub meta: BpfMapMeta,
    /// The map's BTF object (0: none).
    pub btf_id: u32,
    /// Bytes charged for it (fdinfo `memlock`), when the kernel says.
    pub memlock: Option<u64>,
    /// Whether user space can no longer write it (BPF_MAP_FREEZE).
    pub frozen: bool,
}

/// Every map loaded now, ascending by id; maps that vanish during the walk
/// are left out.
pub fn maps() -> Result<Vec<MapInfo>, Error> {
    let mut out = Vec::new();
    for id in all_ids(Cmd::MapGetNextId)? {
        if let Ok(Some(m)) = map_info(id) {
            out.push(m);
        }
    }
    Ok(out)
}

/// Map `id`, or None when no map has that id.
pub fn map_info(id: u32) -> Result<Option<MapInfo>, Error> {
    let Some(fd) = fd_by_id(Cmd::MapGetFdById, id)? else {
        return Ok(None);
    };
    // struct bpf_map_info: type@0 id@4 key_size@8 value_size@12
    // max_entries@16 map_flags@20 name[16]@24 ifindex@40 ... btf_id@64.
    let mut info = ObjBuf::<128>::new();
    // SAFETY: a zeroed bpf_map_info carries no pointer (hash stays 0).
    unsafe { get_info(fd.as_fd(), &mut info.bytes) }?;
    let fdinfo = super::pinned::fdinfo(fd.as_fd());
    Ok(Some(MapInfo {
        meta: BpfMapMeta {
            id: info.u32(4),
            name: c_text(&info.bytes[24..40]),
            map_type: info.u32(0),
            key_size: info.u32(8),
            value_size: info.u32(12),
            max_entries: info.u32(16),
            map_flags: info.u32(20),
        },
        btf_id: info.u32(64),
        memlock: fdinfo.get("memlock").and_then(|v| v.parse().ok()),
        frozen: fdinfo.get("frozen").is_some_and(|v| v != "0"),
    }))
}
