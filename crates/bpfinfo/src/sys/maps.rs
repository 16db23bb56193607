//! A program's maps: the ids from its `bpf_prog_info`, then
//! BPF_MAP_GET_FD_BY_ID and `struct bpf_map_info` for each.

use std::os::fd::AsFd;

use perfdata::BpfMapMeta;

use super::attr::InfoBuf;
use super::objinfo::{c_text, fd_by_id, get_info, ObjBuf};
use super::Cmd;
use crate::Error;

// struct bpf_prog_info: nr_map_ids@52, map_ids@56.
const NR_MAP_IDS: usize = 52;
const MAP_IDS: usize = 56;

/// The ids of the maps program `prog_id` uses, or None when it is gone.
pub fn prog_map_ids(prog_id: u32) -> Result<Option<Vec<u32>>, Error> {
    let fd = match super::prog_fd_by_id(prog_id) {
        Ok(fd) => fd,
        Err(Error::Gone { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut first = InfoBuf::new();
    // SAFETY: a zeroed bpf_prog_info carries no pointer.
    unsafe { get_info(fd.as_fd(), &mut first.bytes) }?;
    let n = first.get_u32(NR_MAP_IDS);
    if n == 0 {
        return Ok(Some(Vec::new()));
    }
    // A program holds at most 64 maps (MAX_USED_MAPS); more is a corrupt
    // answer, not a reason to allocate.
    let n = n.min(1024);
    let mut ids = vec![0u32; n as usize];
    let mut again = InfoBuf::new();
    again.put_u32(NR_MAP_IDS, n);
    again.put_u64(MAP_IDS, ids.as_mut_ptr() as usize as u64);
    // SAFETY: map_ids points at `ids`, n u32s long as nr_map_ids says, alive
    // until the end of this function.
    unsafe { get_info(fd.as_fd(), &mut again.bytes) }?;
    ids.truncate(again.get_u32(NR_MAP_IDS).min(n) as usize);
    Ok(Some(ids))
}

/// Map `id`'s `bpf_map_info`, or None when it is gone.
pub fn map_meta(id: u32) -> Result<Option<BpfMapMeta>, Error> {
    let Some(fd) = fd_by_id(Cmd::MapGetFdById, id)? else {
        return Ok(None);
    };
    // struct bpf_map_info: type@0 id@4 key_size@8 value_size@12
    // max_entries@16 map_flags@20 name[16]@24 ... (100 bytes in 6.18).
    let mut info = ObjBuf::<128>::new();
    // SAFETY: a zeroed bpf_map_info carries no pointer (hash stays 0).
    unsafe { get_info(fd.as_fd(), &mut info.bytes) }?;
    Ok(Some(BpfMapMeta {
        id: info.u32(4),
        name: c_text(&info.bytes[24..40]),
        map_type: info.u32(0),
        key_size: info.u32(8),
        value_size: info.u32(12),
        max_entries: info.u32(16),
        map_flags: info.u32(20),
    }))
}
