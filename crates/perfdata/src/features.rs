//! Feature sections: the metadata perf stores after the data section, one
//! per bit of the header's feature bitmap.

use crate::attr::{AttrEntry, EventAttr};
use crate::bpf_prog_info::BpfProgInfo;
use crate::bpf_prog_meta::BpfProgMeta;
use crate::cursor::{c_str, Cursor};
use crate::error::{Error, Result};

/// Feature bit numbers (`HEADER_<NAME>` in tools/perf/util/header.h, which
/// `perf report --header` prints by name).
#[allow(missing_docs)]
pub mod feature {
    pub const TRACING_DATA: u32 = 1;
    pub const BUILD_ID: u32 = 2;
    pub const HOSTNAME: u32 = 3;
    pub const OSRELEASE: u32 = 4;
    pub const VERSION: u32 = 5;
    pub const ARCH: u32 = 6;
    pub const NRCPUS: u32 = 7;
    pub const CPUDESC: u32 = 8;
    pub const CPUID: u32 = 9;
    pub const TOTAL_MEM: u32 = 10;
    pub const CMDLINE: u32 = 11;
    pub const EVENT_DESC: u32 = 12;
    pub const CPU_TOPOLOGY: u32 = 13;
    pub const NUMA_TOPOLOGY: u32 = 14;
    pub const BRANCH_STACK: u32 = 15;
    pub const PMU_MAPPINGS: u32 = 16;
    pub const GROUP_DESC: u32 = 17;
    pub const AUXTRACE: u32 = 18;
    pub const STAT: u32 = 19;
    pub const CACHE: u32 = 20;
    pub const SAMPLE_TIME: u32 = 21;
    pub const MEM_TOPOLOGY: u32 = 22;
    pub const CLOCKID: u32 = 23;
    pub const DIR_FORMAT: u32 = 24;
    pub const BPF_PROG_INFO: u32 = 25;
    pub const BPF_BTF: u32 = 26;
    pub const COMPRESSED: u32 = 27;
    pub const CPU_PMU_CAPS: u32 = 28;
    pub const CLOCK_DATA: u32 = 29;
    pub const HYBRID_TOPOLOGY: u32 = 30;
    pub const PMU_CAPS: u32 = 31;
}

/// HEADER_NRCPUS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NrCpus {
    /// CPUs the system could bring up (`nr_cpus_avail`).
    pub available: u32,
    /// CPUs online at record time.
    pub online: u32,
}

/// One HEADER_BUILD_ID entry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BuildIdEntry {
    /// The cpumode (`misc & 7`) of the DSO: kernel or user.
    pub misc: u16,
    /// The machine the DSO belongs to: -1 (perf's `HOST_KERNEL_ID`) for the
    /// host, a guest's pid otherwise.
    pub pid: i32,
    /// The build id's bytes: at most 20 (a SHA-1), perf's padding cut off.
    pub build_id: Vec<u8>,
    /// The DSO's path as recorded (`[kernel.kallsyms]` for the kernel).
    pub filename: String,
}

/// One HEADER_BPF_BTF entry: a raw BTF blob by BTF object id.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BtfBlob {
    /// The kernel's BTF object id, which `bpf_prog_info.btf_id` names.
    pub id: u32,
    /// The raw BTF (header, types, strings), as BPF_BTF_GET_INFO gives it.
    pub data: Vec<u8>,
}

/// HEADER_COMPRESSED.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Compressed {
    /// The section's format version.
    pub version: u32,
    /// 1 = zstd.
    pub type_: u32,
    /// The compression level used.
    pub level: u32,
    /// The compression ratio achieved, for show.
    pub ratio: u32,
    /// The ring buffer size, which bounds a decompressed chunk.
    pub mmap_len: u32,
}

/// The feature sections this crate decodes. Sections it does not know are
/// listed in `other` by bit number and otherwise skipped.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Features {
    /// HOSTNAME: the machine's name (`uname -n`).
    pub hostname: Option<String>,
    /// OSRELEASE: the kernel release (`uname -r`).
    pub osrelease: Option<String>,
    /// VERSION: the recorder's version (perf's, or bpfprof's).
    pub version: Option<String>,
    /// ARCH: the machine (`uname -m`).
    pub arch: Option<String>,
    /// NRCPUS.
    pub nrcpus: Option<NrCpus>,
    /// CPUDESC: the CPU model name.
    pub cpudesc: Option<String>,
    /// CPUID: the CPU's vendor, family, model and stepping.
    pub cpuid: Option<String>,
    /// Kilobytes.
    pub total_mem: Option<u64>,
    /// CMDLINE: the recorder's command line, one argument a string.
    pub cmdline: Option<Vec<String>>,
    /// Decoded from a file only; a writer derives it from its attrs.
    pub event_desc: Vec<AttrEntry>,
    /// BUILD_ID: the build ids of the DSOs that samples hit.
    pub build_ids: Vec<BuildIdEntry>,
    /// First and last sample time.
    pub sample_time: Option<(u64, u64)>,
    /// BPF_PROG_INFO: the programs seen, with their arrays as captured.
    pub bpf_prog_info: Option<Vec<BpfProgInfo>>,
    /// BPF_BTF: the BTF of those programs.
    pub bpf_btf: Option<Vec<BtfBlob>>,
    /// Owners, attachments and maps per program, where the recorder
    /// captured them (bpfprof does; perf does not). Written as a tail of
    /// each program's `bpf_prog_info` entry, so only programs listed in
    /// `bpf_prog_info` keep theirs.
    pub bpf_prog_meta: Vec<BpfProgMeta>,
    /// COMPRESSED: present when the data section holds zstd records.
    pub compressed: Option<Compressed>,
    /// Bits of present sections this crate does not decode.
    pub other: Vec<u32>,
    /// Sections that were present but could not be decoded. Reading goes
    /// on without them, as perf does.
    pub warnings: Vec<String>,
}

fn string(c: &mut Cursor<'_>, what: &str) -> Result<String> {
    let len = c.u32(what)? as usize;
    let b = c.bytes(len, what)?;
    Ok(String::from_utf8_lossy(c_str(b)).into_owned())
}

/// Bound a count read from the file by what the section could possibly
/// hold, so a hostile count cannot make us allocate.
fn count(c: &mut Cursor<'_>, min_entry: usize, what: &str) -> Result<usize> {
    let off = c.offset();
    let n = c.u32(what)? as usize;
    if n.saturating_mul(min_entry) > c.remaining() {
        return Err(Error::parse(
            off,
            format!(
                "{what}: {n} entries cannot fit in the {} bytes left",
                c.remaining()
            ),
        ));
    }
    Ok(n)
}

impl Features {
    /// Decode section `bit` from its body. Errors are returned to the
    /// caller, which records them as warnings.
    pub(crate) fn decode(&mut self, bit: u32, body: &[u8], offset: u64) -> Result<()> {
        let mut c = Cursor::new(body, offset);
        use feature as f;
        match bit {
            f::HOSTNAME => self.hostname = Some(string(&mut c, "HOSTNAME")?),
            f::OSRELEASE => self.osrelease = Some(string(&mut c, "OSRELEASE")?),
            f::VERSION => self.version = Some(string(&mut c, "VERSION")?),
            f::ARCH => self.arch = Some(string(&mut c, "ARCH")?),
            f::CPUDESC => self.cpudesc = Some(string(&mut c, "CPUDESC")?),
            f::CPUID => self.cpuid = Some(string(&mut c, "CPUID")?),
            f::NRCPUS => {
                self.nrcpus = Some(NrCpus {
                    available: c.u32("NRCPUS")?,
                    online: c.u32("NRCPUS")?,
                })
            }
            f::TOTAL_MEM => self.total_mem = Some(c.u64("TOTAL_MEM")?),
            f::CMDLINE => {
                let n = count(&mut c, 4, "CMDLINE")?;
                let mut v = Vec::with_capacity(n);
                for _ in 0..n {
                    v.push(string(&mut c, "CMDLINE")?);
                }
                self.cmdline = Some(v);
            }
            f::EVENT_DESC => {
                let n = count(&mut c, 8, "EVENT_DESC")?;
                let attr_size = c.u32("EVENT_DESC.attr_size")? as usize;
                for _ in 0..n {
                    let at = c.offset();
                    let attr = EventAttr::parse(c.bytes(attr_size, "EVENT_DESC.attr")?, at)?;
                    let nr_ids = c.u32("EVENT_DESC.nr_ids")? as usize;
                    let name = string(&mut c, "EVENT_DESC.name")?;
                    if nr_ids.saturating_mul(8) > c.remaining() {
                        return Err(Error::parse(
                            c.offset(),
                            format!("EVENT_DESC: {nr_ids} ids do not fit"),
                        ));
                    }
                    let ids = (0..nr_ids)
                        .map(|_| c.u64("EVENT_DESC.id"))
                        .collect::<Result<_>>()?;
                    self.event_desc.push(AttrEntry { attr, ids, name });
                }
            }
            f::BUILD_ID => {
                while c.remaining() > 0 {
                    let at = c.offset();
                    let _ty = c.u32("BUILD_ID.header")?;
                    let misc = c.u16("BUILD_ID.misc")?;
                    let size = c.u16("BUILD_ID.size")? as usize;
                    if size < 8 + 4 + 24 {
                        return Err(Error::parse(at, format!("BUILD_ID entry of {size} bytes")));
                    }
                    let mut e = Cursor::new(c.bytes(size - 8, "BUILD_ID entry")?, at + 8);
                    let pid = e.u32("BUILD_ID.pid")? as i32;
                    let bid: [u8; 24] = e.array("BUILD_ID.build_id")?;
                    // PERF_RECORD_MISC_BUILD_ID_SIZE: byte 20 holds the length.
                    let len = if misc & (1 << 15) != 0 {
                        (bid[20] as usize).min(20)
                    } else {
                        20
                    };
                    self.build_ids.push(BuildIdEntry {
                        misc: misc & 7,
                        pid,
                        build_id: bid[..len].to_vec(),
                        filename: String::from_utf8_lossy(c_str(e.rest())).into_owned(),
                    });
                }
            }
            f::SAMPLE_TIME => {
                self.sample_time = Some((c.u64("SAMPLE_TIME")?, c.u64("SAMPLE_TIME")?))
            }
            f::BPF_PROG_INFO => {
                let n = count(&mut c, 16, "BPF_PROG_INFO")?;
                let mut v = Vec::with_capacity(n);
                for _ in 0..n {
                    let (p, tail) = BpfProgInfo::read_bpil_tail(&mut c)?;
                    // A damaged tail costs only the program's owners,
                    // attachments and maps, never its info or the file.
                    if let Some((bytes, at)) = tail {
                        match BpfProgMeta::decode_tail(bytes, at) {
                            Ok(m) if m.prog_id == p.id => self.bpf_prog_meta.push(m),
                            Ok(m) => self.warnings.push(format!(
                                "offset {at:#x}: BPF_PROG_INFO entry of prog {} carries owners/attachments of prog {}; ignored",
                                p.id, m.prog_id
                            )),
                            Err(e) => self.warnings.push(format!(
                                "owners, attachments and maps of BPF prog {} not read: {e}",
                                p.id
                            )),
                        }
                    }
                    v.push(p);
                }
                self.bpf_prog_info = Some(v);
            }
            f::BPF_BTF => {
                let n = count(&mut c, 8, "BPF_BTF")?;
                let mut v = Vec::with_capacity(n);
                for _ in 0..n {
                    let id = c.u32("BPF_BTF.id")?;
                    let size = c.u32("BPF_BTF.size")? as usize;
                    v.push(BtfBlob {
                        id,
                        data: c.bytes(size, "BPF_BTF.data")?.to_vec(),
                    });
                }
                self.bpf_btf = Some(v);
            }
            f::COMPRESSED => {
                self.compressed = Some(Compressed {
                    version: c.u32("COMPRESSED")?,
                    type_: c.u32("COMPRESSED")?,
                    level: c.u32("COMPRESSED")?,
                    ratio: c.u32("COMPRESSED")?,
                    mmap_len: c.u32("COMPRESSED")?,
                })
            }
            other => self.other.push(other),
        }
        Ok(())
    }

    /// The bodies to write, by bit, ascending. `attrs` gives EVENT_DESC.
    pub(crate) fn encode(&self, attrs: &[AttrEntry]) -> Vec<(u32, Vec<u8>)> {
        use feature as f;
        let mut out = Vec::new();
        let mut s = |bit: u32, v: &Option<String>| {
            if let Some(v) = v {
                let mut b = Vec::new();
                put_string(&mut b, v);
                out.push((bit, b));
            }
        };
        s(f::HOSTNAME, &self.hostname);
        s(f::OSRELEASE, &self.osrelease);
        s(f::VERSION, &self.version);
        s(f::ARCH, &self.arch);
        if let Some(n) = self.nrcpus {
            out.push((
                f::NRCPUS,
                [n.available.to_le_bytes(), n.online.to_le_bytes()].concat(),
            ));
        }
        if let Some(d) = &self.cpudesc {
            let mut b = Vec::new();
            put_string(&mut b, d);
            out.push((f::CPUDESC, b));
        }
        if let Some(d) = &self.cpuid {
            let mut b = Vec::new();
            put_string(&mut b, d);
            out.push((f::CPUID, b));
        }
        if let Some(m) = self.total_mem {
            out.push((f::TOTAL_MEM, m.to_le_bytes().to_vec()));
        }
        if let Some(cmd) = &self.cmdline {
            let mut b = (cmd.len() as u32).to_le_bytes().to_vec();
            for a in cmd {
                put_string(&mut b, a);
            }
            out.push((f::CMDLINE, b));
        }
        if !attrs.is_empty() {
            let mut b = (attrs.len() as u32).to_le_bytes().to_vec();
            b.extend_from_slice(&crate::attr::ATTR_SIZE.to_le_bytes());
            for a in attrs {
                b.extend_from_slice(&a.attr.to_bytes());
                b.extend_from_slice(&(a.ids.len() as u32).to_le_bytes());
                put_string(&mut b, &a.name);
                for id in &a.ids {
                    b.extend_from_slice(&id.to_le_bytes());
                }
            }
            out.push((f::EVENT_DESC, b));
        }
        if !self.build_ids.is_empty() {
            let mut b = Vec::new();
            for e in &self.build_ids {
                let name_len = (e.filename.len() + 1).div_ceil(64) * 64;
                let size = 8 + 4 + 24 + name_len;
                b.extend_from_slice(&0u32.to_le_bytes());
                b.extend_from_slice(&(e.misc | (1 << 15)).to_le_bytes());
                b.extend_from_slice(&(size as u16).to_le_bytes());
                b.extend_from_slice(&e.pid.to_le_bytes());
                let mut bid = [0u8; 24];
                let n = e.build_id.len().min(20);
                bid[..n].copy_from_slice(&e.build_id[..n]);
                bid[20] = n as u8;
                b.extend_from_slice(&bid);
                let start = b.len();
                b.extend_from_slice(e.filename.as_bytes());
                b.resize(start + name_len, 0);
            }
            out.push((f::BUILD_ID, b));
        }
        if let Some((a, z)) = self.sample_time {
            out.push((f::SAMPLE_TIME, [a.to_le_bytes(), z.to_le_bytes()].concat()));
        }
        if let Some(v) = &self.bpf_prog_info {
            // Each program's owners, attachments and maps ride in its own
            // entry (see bpf_prog_meta::tail); a program without an entry
            // (its info could not be read) has nowhere to keep them.
            let meta: std::collections::HashMap<u32, &BpfProgMeta> =
                self.bpf_prog_meta.iter().map(|m| (m.prog_id, m)).collect();
            let mut b = (v.len() as u32).to_le_bytes().to_vec();
            for p in v {
                let tail = meta.get(&p.id).map(|m| m.encode_tail());
                p.write_bpil_with_tail(&mut b, tail.as_deref().unwrap_or(&[]));
            }
            out.push((f::BPF_PROG_INFO, b));
        }
        if let Some(v) = &self.bpf_btf {
            let mut b = (v.len() as u32).to_le_bytes().to_vec();
            for e in v {
                b.extend_from_slice(&e.id.to_le_bytes());
                b.extend_from_slice(&(e.data.len() as u32).to_le_bytes());
                b.extend_from_slice(&e.data);
            }
            out.push((f::BPF_BTF, b));
        }
        out.sort_by_key(|(bit, _)| *bit);
        out
    }
}

/// `perf_header_string`: u32 length (strlen+1 rounded up to 64), bytes, NULs.
fn put_string(b: &mut Vec<u8>, s: &str) {
    let len = (s.len() + 1).div_ceil(64) * 64;
    b.extend_from_slice(&(len as u32).to_le_bytes());
    let start = b.len();
    b.extend_from_slice(s.as_bytes());
    b.resize(start + len, 0);
}
