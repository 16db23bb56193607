//! What a recording knows about a BPF program beyond its `bpf_prog_info`:
//! the processes that held it, where it was attached, and its maps, as
//! seen at record time. Programs loaded before the recording are the
//! normal case for daemons, and by report time their owners may be gone.
//!
//! In a file they travel as a tail of the program's BPF_PROG_INFO entry
//! (see [`tail`]).

use crate::cursor::{align8, Cursor};
use crate::error::{Error, Result};

/// A process holding the program (an fd on it, or on a link to it), as
/// `bpftool prog show` lists under `pids`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BpfOwner {
    /// The process (thread group) id.
    pub pid: u32,
    /// Its command name, as /proc/PID/comm said at record time.
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
    /// `enum bpf_attach_type` of the link (cgroup, tcx, netns, tracing).
    pub attach_type: Option<u32>,
    /// The BPF cookie the attachment passes to the program, when the kernel
    /// reports one.
    pub cookie: Option<u64>,
    /// Offset into the target: kprobe function offset, uprobe file offset.
    pub offset: Option<u64>,
}

/// A map the program uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BpfMapMeta {
    /// The map's id, unique while it exists.
    pub id: u32,
    /// `bpf_map_info.name` (may be empty).
    pub name: String,
    /// `bpf_map_type` as a number (`bpfinfo` names it).
    pub map_type: u32,
    /// Bytes of a key.
    pub key_size: u32,
    /// Bytes of a value.
    pub value_size: u32,
    /// Capacity, in entries.
    pub max_entries: u32,
    /// `BPF_F_*` creation flags.
    pub map_flags: u32,
}

/// Owners, attachments and maps of one program, captured at record time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BpfProgMeta {
    /// The program this is about.
    pub prog_id: u32,
    /// Processes holding it, by pid.
    pub owners: Vec<BpfOwner>,
    /// Where it was attached.
    pub attach: Vec<BpfAttach>,
    /// The maps it uses, by id.
    pub maps: Vec<BpfMapMeta>,
    /// CLOCK_BOOTTIME and CLOCK_REALTIME in nanoseconds, read together as
    /// the recording started: what turns `bpf_prog_info.load_time` (since
    /// boot) into a clock time and a time before the recording.
    pub clock: Option<(u64, u64)>,
}

/// The bytes bpfprof appends to a program's `perf_bpil.data`, after the
/// arrays, to carry its [`BpfProgMeta`].
///
/// Why there: perf reads `data_len` bytes of `data` whole and turns into
/// pointers only the arrays whose bit is set in `arrays`
/// (tools/perf/util/header.c `process_bpf_prog_info`, bpf-utils.c
/// `bpil_offs_to_addr`), so bytes past the last array are carried but never
/// looked at. A new feature bit would not do: perf warns about bits it does
/// not know.
///
/// Layout (little-endian, version 1):
///
/// ```text
/// u8  magic[8] = "BPFPMETA"
/// u32 version = 1
/// u32 body_len            bytes of body that follow
/// body:
///   u32 prog_id
///   u32 nr_owners,  nr × { u32 pid; str comm }
///   u32 nr_attach,  nr × { str kind; str target; u32 has (bit 0 link_id,
///                          1 attach_type, 2 cookie, 3 offset); u32 link_id;
///                          u32 attach_type; u64 cookie; u64 offset }
///   u32 nr_maps,    nr × { u32 id, map_type, key_size, value_size,
///                          max_entries, map_flags; str name }
///   optional: u64 boottime_ns, u64 realtime_ns   (the clocks at start)
/// zero padding to a multiple of 8 (perf keeps `data_len` 8-aligned)
/// str = u32 len; u8 bytes[len] (UTF-8, no NUL)
/// ```
pub mod tail {
    /// First bytes of the tail.
    pub const MAGIC: &[u8; 8] = b"BPFPMETA";
    /// The version this crate writes and reads.
    pub const VERSION: u32 = 1;
    /// Longest string written (comm is 16, paths and names are short); a
    /// longer one is cut on a character boundary.
    pub const MAX_STR: usize = 4096;
}

const HAS_LINK: u32 = 1;
const HAS_ATTACH_TYPE: u32 = 2;
const HAS_COOKIE: u32 = 4;
const HAS_OFFSET: u32 = 8;

fn put_u32(b: &mut Vec<u8>, v: u32) {
    b.extend_from_slice(&v.to_le_bytes());
}

/// How many bytes of `s` are kept: at most [`tail::MAX_STR`], cut on a
/// character boundary.
fn kept_len(s: &str) -> usize {
    let mut n = s.len().min(tail::MAX_STR);
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    n
}

fn put_str(b: &mut Vec<u8>, s: &str) {
    let n = kept_len(s);
    put_u32(b, n as u32);
    b.extend_from_slice(&s.as_bytes()[..n]);
}

fn get_str(c: &mut Cursor<'_>, what: &str) -> Result<String> {
    let at = c.offset();
    let n = c.u32(what)? as usize;
    if n > tail::MAX_STR {
        return Err(Error::parse(
            at,
            format!(
                "{what}: string of {n} bytes, longer than the {} written",
                tail::MAX_STR
            ),
        ));
    }
    let mut s = String::from_utf8_lossy(c.bytes(n, what)?).into_owned();
    // Bytes that are not UTF-8 become U+FFFD, three bytes each, which can
    // take the text past what the writer keeps: cut it here as the writer
    // would, so that a tail read is written back as itself.
    s.truncate(kept_len(&s));
    Ok(s)
}

/// A count read from the tail, refused if `min` bytes per entry cannot fit
/// in what is left (so a hostile count never allocates).
fn get_count(c: &mut Cursor<'_>, min: usize, what: &str) -> Result<usize> {
    let at = c.offset();
    let n = c.u32(what)? as usize;
    if n.saturating_mul(min) > c.remaining() {
        return Err(Error::parse(
            at,
            format!(
                "{what}: {n} entries of at least {min} bytes cannot fit in the {} bytes left",
                c.remaining()
            ),
        ));
    }
    Ok(n)
}

impl BpfProgMeta {
    /// Encode as a tail (see [`tail`]), padded to a multiple of 8 bytes.
    pub fn encode_tail(&self) -> Vec<u8> {
        let mut body = Vec::new();
        put_u32(&mut body, self.prog_id);
        put_u32(&mut body, self.owners.len() as u32);
        for o in &self.owners {
            put_u32(&mut body, o.pid);
            put_str(&mut body, &o.comm);
        }
        put_u32(&mut body, self.attach.len() as u32);
        for a in &self.attach {
            put_str(&mut body, &a.kind);
            put_str(&mut body, &a.target);
            let has = a.link_id.map_or(0, |_| HAS_LINK)
                | a.attach_type.map_or(0, |_| HAS_ATTACH_TYPE)
                | a.cookie.map_or(0, |_| HAS_COOKIE)
                | a.offset.map_or(0, |_| HAS_OFFSET);
            put_u32(&mut body, has);
            put_u32(&mut body, a.link_id.unwrap_or(0));
            put_u32(&mut body, a.attach_type.unwrap_or(0));
            body.extend_from_slice(&a.cookie.unwrap_or(0).to_le_bytes());
            body.extend_from_slice(&a.offset.unwrap_or(0).to_le_bytes());
        }
        put_u32(&mut body, self.maps.len() as u32);
        for m in &self.maps {
            for v in [
                m.id,
                m.map_type,
                m.key_size,
                m.value_size,
                m.max_entries,
                m.map_flags,
            ] {
                put_u32(&mut body, v);
            }
            put_str(&mut body, &m.name);
        }
        // Last and optional: a reader of an older body finds none.
        if let Some((boot, real)) = self.clock {
            body.extend_from_slice(&boot.to_le_bytes());
            body.extend_from_slice(&real.to_le_bytes());
        }
        let mut out = Vec::with_capacity(16 + body.len() + 8);
        out.extend_from_slice(tail::MAGIC);
        put_u32(&mut out, tail::VERSION);
        put_u32(&mut out, body.len() as u32);
        out.extend_from_slice(&body);
        out.resize(align8(out.len()), 0);
        out
    }

    /// Whether `bytes` (what follows a program's arrays) starts a tail. Other
    /// bytes there are another writer's business and are left alone.
    pub fn is_tail(bytes: &[u8]) -> bool {
        bytes.starts_with(tail::MAGIC)
    }

    /// Decode a tail; `offset` is where `bytes` starts in the file, for
    /// errors. Bytes after the body (padding, later additions) are ignored.
    pub fn decode_tail(bytes: &[u8], offset: u64) -> Result<BpfProgMeta> {
        let mut c = Cursor::new(bytes, offset);
        let magic: [u8; 8] = c.array("bpfprof meta tail magic")?;
        if &magic != tail::MAGIC {
            return Err(Error::parse(
                offset,
                format!("bpfprof meta tail: magic {magic:02x?}, expected \"BPFPMETA\""),
            ));
        }
        let at = c.offset();
        let version = c.u32("bpfprof meta tail version")?;
        if version != tail::VERSION {
            return Err(Error::parse(
                at,
                format!(
                    "bpfprof meta tail version {version}: this build reads version {}; a newer bpfprof wrote it",
                    tail::VERSION
                ),
            ));
        }
        let len = c.u32("bpfprof meta tail body_len")? as usize;
        let body_at = c.offset();
        let mut c = Cursor::new(c.bytes(len, "bpfprof meta tail body")?, body_at);
        let mut m = BpfProgMeta {
            prog_id: c.u32("bpfprof meta prog_id")?,
            ..Default::default()
        };
        let n = get_count(&mut c, 8, "bpfprof meta owners")?;
        m.owners.reserve(n);
        for _ in 0..n {
            m.owners.push(BpfOwner {
                pid: c.u32("owner pid")?,
                comm: get_str(&mut c, "owner comm")?,
            });
        }
        let n = get_count(&mut c, 36, "bpfprof meta attachments")?;
        m.attach.reserve(n);
        for _ in 0..n {
            let kind = get_str(&mut c, "attach kind")?;
            let target = get_str(&mut c, "attach target")?;
            let has = c.u32("attach flags")?;
            let link_id = c.u32("attach link_id")?;
            let attach_type = c.u32("attach attach_type")?;
            let cookie = c.u64("attach cookie")?;
            let off = c.u64("attach offset")?;
            let opt = |bit: u32| has & bit != 0;
            m.attach.push(BpfAttach {
                kind,
                target,
                link_id: opt(HAS_LINK).then_some(link_id),
                attach_type: opt(HAS_ATTACH_TYPE).then_some(attach_type),
                cookie: opt(HAS_COOKIE).then_some(cookie),
                offset: opt(HAS_OFFSET).then_some(off),
            });
        }
        let n = get_count(&mut c, 28, "bpfprof meta maps")?;
        m.maps.reserve(n);
        for _ in 0..n {
            let mut v = [0u32; 6];
            for x in &mut v {
                *x = c.u32("map field")?;
            }
            m.maps.push(BpfMapMeta {
                id: v[0],
                map_type: v[1],
                key_size: v[2],
                value_size: v[3],
                max_entries: v[4],
                map_flags: v[5],
                name: get_str(&mut c, "map name")?,
            });
        }
        if c.remaining() >= 16 {
            m.clock = Some((c.u64("clock boottime")?, c.u64("clock realtime")?));
        }
        Ok(m)
    }

    /// Add what `other` knows about the same program: owners by pid,
    /// attachments by (kind, target, link), maps by id (the later copy wins).
    pub fn merge(&mut self, other: &BpfProgMeta) {
        for o in &other.owners {
            match self.owners.iter_mut().find(|x| x.pid == o.pid) {
                Some(x) if x.comm.is_empty() => x.comm = o.comm.clone(),
                Some(_) => {}
                None => self.owners.push(o.clone()),
            }
        }
        for a in &other.attach {
            let same =
                |x: &BpfAttach| x.kind == a.kind && x.target == a.target && x.link_id == a.link_id;
            if !self.attach.iter().any(same) {
                self.attach.push(a.clone());
            }
        }
        for m in &other.maps {
            match self.maps.iter_mut().find(|x| x.id == m.id) {
                Some(x) => *x = m.clone(),
                None => self.maps.push(m.clone()),
            }
        }
        self.owners.sort_by_key(|o| o.pid);
        self.maps.sort_by_key(|m| m.id);
    }
}
