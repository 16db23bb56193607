//! Every bpf_link: BPF_LINK_GET_NEXT_ID, BPF_LINK_GET_FD_BY_ID and
//! `struct bpf_link_info`, with its target named as bpftool names it.
//!
//! Offsets are those of include/uapi/linux/bpf.h (6.x): type@0, id@4,
//! prog_id@8, then the per-type union at 16.

use std::os::fd::AsFd;

use perfdata::BpfAttach;

use super::names::Names;
use super::objinfo::{all_ids, c_text, fd_by_id, get_info, ObjBuf};
use super::Cmd;
use crate::Error;

/// Larger than any `bpf_link_info` so far (64 bytes in 6.18); the kernel
/// takes what it knows, and the zeroed rest passes its tail check.
const INFO: usize = 128;
const UNION: usize = 16;

/// One link, as `bpftool link show` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkInfo {
    /// The link id.
    pub id: u32,
    /// The program it attaches.
    pub prog_id: u32,
    /// `enum bpf_link_type`.
    pub link_type: u32,
    /// Kind and target, with `link_id` set.
    pub attach: BpfAttach,
}

/// bpftool's name for `enum bpf_link_type`.
pub fn link_type_name(t: u32) -> &'static str {
    const NAMES: [&str; 15] = [
        "unspec",
        "raw_tracepoint",
        "tracing",
        "cgroup",
        "iter",
        "netns",
        "xdp",
        "perf_event",
        "kprobe_multi",
        "struct_ops",
        "netfilter",
        "tcx",
        "uprobe_multi",
        "netkit",
        "sockmap",
    ];
    NAMES.get(t as usize).copied().unwrap_or("unknown")
}

/// Every link alive now. Links that vanish during the walk are skipped.
pub fn links() -> Result<Vec<LinkInfo>, Error> {
    let mut names = Names::default();
    links_with(&mut names)
}

pub(crate) fn links_with(names: &mut Names) -> Result<Vec<LinkInfo>, Error> {
    let mut out = Vec::new();
    for id in all_ids(Cmd::LinkGetNextId)? {
        // Gone, or refused for this one link: the others still count.
        if let Ok(Some(l)) = link_by_id(id, names) {
            out.push(l);
        }
    }
    Ok(out)
}

fn link_by_id(id: u32, names: &mut Names) -> Result<Option<LinkInfo>, Error> {
    let Some(fd) = fd_by_id(Cmd::LinkGetFdById, id)? else {
        return Ok(None);
    };
    let mut info = ObjBuf::<INFO>::new();
    // SAFETY: a zeroed bpf_link_info carries no pointer.
    unsafe { get_info(fd.as_fd(), &mut info.bytes) }?;
    let link_type = info.u32(0);
    // The second call asks for the name, where the type has one.
    let mut name = vec![0u8; 4096];
    let name_at: Option<(usize, usize)> = match link_type {
        1 | 4 => Some((UNION, UNION + 8)), // raw_tracepoint, iter
        7 if info.u32(UNION) != 6 => Some((UNION + 8, UNION + 16)), // perf_event
        12 => Some((UNION, UNION + 32)),   // uprobe_multi: path, path_size
        _ => None,
    };
    if let Some((ptr_off, len_off)) = name_at {
        let mut again = ObjBuf::<INFO>::new();
        again.put_u64(ptr_off, name.as_mut_ptr() as usize as u64);
        again.put_u32(len_off, name.len() as u32);
        // SAFETY: the one pointer set points at `name`, whose length is the
        // one written next to it, alive until the end of this function.
        if unsafe { get_info(fd.as_fd(), &mut again.bytes) }.is_ok() {
            info = again;
        } else {
            name[0] = 0;
        }
    } else {
        name[0] = 0;
    }
    let name = c_text(&name);
    let attach = describe(link_type, &info, name, names);
    Ok(Some(LinkInfo {
        id: info.u32(4),
        prog_id: info.u32(8),
        link_type,
        attach: BpfAttach {
            link_id: Some(info.u32(4)),
            ..attach
        },
    }))
}

/// Kind and target of a link from its info, in bpftool's words.
fn describe(t: u32, info: &ObjBuf<INFO>, name: String, names: &mut Names) -> BpfAttach {
    let u = |off: usize| info.u32(UNION + off);
    let u64_ = |off: usize| info.u64(UNION + off);
    let kind = link_type_name(t).to_string();
    let mut a = BpfAttach {
        kind,
        ..Default::default()
    };
    match t {
        1 => {
            a.target = name;
            a.cookie = nonzero(u64_(16));
        }
        2 => {
            // tracing: attach_type, target_obj_id (BTF object, or the
            // target program for freplace), target_btf_id, cookie.
            a.attach_type = Some(u(0));
            a.cookie = nonzero(u64_(16));
            a.target = names.btf_func(u(4), u(8));
        }
        3 => {
            a.attach_type = Some(u(8));
            a.target = names.cgroup(u64_(0));
        }
        4 => a.target = name,
        5 => {
            a.attach_type = Some(u(4));
            a.target = format!("netns ino {}", u(0));
        }
        6 => a.target = names.netdev(u(0)),
        7 => {
            // perf_event: type, then per type (uprobe: name, len, offset,
            // cookie; kprobe: name, len, offset, addr, missed, cookie;
            // tracepoint: name, len, pad, cookie; event: config, type).
            let off = u(20) as u64;
            match u(0) {
                1 | 2 => {
                    a.kind = if u(0) == 1 { "uprobe" } else { "uretprobe" }.into();
                    a.target = format!("{name}:{off:#x}");
                    a.offset = Some(off);
                    a.cookie = nonzero(u64_(24));
                }
                3 | 4 => {
                    a.kind = if u(0) == 3 { "kprobe" } else { "kretprobe" }.into();
                    a.target = if name.is_empty() {
                        format!("{:#x}", u64_(24))
                    } else {
                        format!("{name}+{off:#x}")
                    };
                    a.offset = Some(off);
                    a.cookie = nonzero(u64_(40));
                }
                5 => {
                    a.kind = "tracepoint".into();
                    a.target = names.tracepoint(&name);
                    a.cookie = nonzero(u64_(24));
                }
                _ => {
                    a.kind = "perf_event".into();
                    a.target = format!("type {} config {:#x}", u(16), u64_(8));
                    a.cookie = nonzero(u64_(24));
                }
            }
        }
        8 => a.target = format!("{} functions", u(8)),
        9 => a.target = format!("map {}", u(0)),
        10 => {
            a.target = format!(
                "pf {} hook {} prio {}",
                u(0),
                u(4),
                info.u32(UNION + 8) as i32
            )
        }
        11 | 13 => {
            a.attach_type = Some(u(4));
            a.target = names.netdev(u(0));
        }
        12 => a.target = format!("{name} ({} offsets, pid {})", u(36), u(44)),
        14 => {
            a.attach_type = Some(u(4));
            a.target = format!("map {}", u(0));
        }
        _ => a.target = format!("link type {t}"),
    }
    a
}

fn nonzero(v: u64) -> Option<u64> {
    (v != 0).then_some(v)
}
