//! Helpers shared by the integration tests: the root/perf gate, temp dirs,
//! running perf, a tiny BPF program loader, a writer-made fixture and a
//! deterministic PRNG; in `built`, files written record by record.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use perfdata::{
    flags, sample_type as st, AttrEntry, BpfProgInfo, BtfBlob, EventAttr, Features, NrCpus,
    PerfFileWriter, Record, SampleId,
};

pub mod built;

// ---------------------------------------------------------------- the gate

/// Whether a test that needs root and Linux perf can run. When it cannot,
/// testkit's gate prints why and the test returns early -- except with `CI`
/// set, where a missing prerequisite is a failure.
pub fn can_run_perf() -> bool {
    let mut missing = Vec::new();
    if !testkit::is_root() {
        missing.push("root".to_string());
    }
    match Command::new("perf").arg("--version").output() {
        Ok(o) if o.status.success() => {}
        Ok(o) => missing.push(format!("a working perf (perf --version: {})", o.status)),
        Err(e) => missing.push(format!("perf in PATH ({e})")),
    }
    testkit::require(
        missing.is_empty(),
        &format!("needs {}", missing.join(" and ")),
    )
}

// ---------------------------------------------------------------- temp dirs

pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "perfdata-test-{}-{}-{tag}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::env::var_os("PERFDATA_KEEP_TEMP").is_none() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

// ---------------------------------------------------------------- perf

pub use testkit::run;

/// `perf ARGS`, which must succeed; returns (stdout, stderr).
pub fn perf(args: &[&str]) -> (String, String) {
    let o = run(Command::new("perf").args(args));
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `perf record -o OUT ARGS`.
pub fn perf_record(out: &Path, args: &[&str]) {
    let mut a = vec!["record", "-q", "-o", out.to_str().unwrap()];
    a.extend_from_slice(args);
    perf(&a);
}

/// perf's names for record types (`perf_event__names`, tools/perf/util/event.c).
pub fn perf_type_name(t: u32) -> String {
    let n = match t {
        1 => "MMAP",
        2 => "LOST",
        3 => "COMM",
        4 => "EXIT",
        5 => "THROTTLE",
        6 => "UNTHROTTLE",
        7 => "FORK",
        8 => "READ",
        9 => "SAMPLE",
        10 => "MMAP2",
        11 => "AUX",
        12 => "ITRACE_START",
        13 => "LOST_SAMPLES",
        14 => "SWITCH",
        15 => "SWITCH_CPU_WIDE",
        16 => "NAMESPACES",
        17 => "KSYMBOL",
        18 => "BPF_EVENT",
        19 => "CGROUP",
        20 => "TEXT_POKE",
        21 => "AUX_OUTPUT_HW_ID",
        64 => "ATTR",
        65 => "EVENT_TYPE",
        66 => "TRACING_DATA",
        67 => "BUILD_ID",
        68 => "FINISHED_ROUND",
        69 => "ID_INDEX",
        70 => "AUXTRACE_INFO",
        71 => "AUXTRACE",
        72 => "AUXTRACE_ERROR",
        73 => "THREAD_MAP",
        74 => "CPU_MAP",
        75 => "STAT_CONFIG",
        76 => "STAT",
        77 => "STAT_ROUND",
        78 => "EVENT_UPDATE",
        79 => "TIME_CONV",
        80 => "HEADER_FEATURE",
        81 => "COMPRESSED",
        82 => "FINISHED_INIT",
        _ => return format!("type {t}"),
    };
    n.to_string()
}

/// The "Aggregated stats:" block of `perf report -D`: type name -> count
/// (TOTAL excluded).
pub fn perf_dump_counts(dump: &str) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    let mut lines = dump
        .lines()
        .skip_while(|l| !l.starts_with("Aggregated stats:"));
    lines
        .next()
        .expect("perf report -D prints Aggregated stats:");
    for l in lines {
        let Some((name, rest)) = l.trim().split_once(" events:") else {
            break;
        };
        let n: u64 = rest.split_whitespace().next().unwrap().parse().unwrap();
        if name != "TOTAL" {
            m.insert(name.to_string(), n);
        }
    }
    m
}

/// One record as `perf report -D` prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpRecord {
    pub offset: u64,
    pub size: u64,
    pub type_name: String,
    /// The text after `PERF_RECORD_<TYPE>`.
    pub rest: String,
    /// The time column, when printed (sample_id_all with TIME).
    pub time: Option<u64>,
    /// For samples: the `... FP chain: nr:N` entries.
    pub chain: Option<Vec<u64>>,
}

/// Parse every record line of `perf report -D`:
/// `[cpu] [time] 0xOFFSET [0xSIZE]: PERF_RECORD_TYPE...`.
pub fn perf_dump_records(dump: &str) -> Vec<DumpRecord> {
    let mut out: Vec<DumpRecord> = Vec::new();
    let mut in_chain = false;
    for l in dump.lines() {
        if let Some(nr) = l.strip_prefix("... FP chain: nr:") {
            let r = out.last_mut().expect("a chain follows a sample");
            r.chain = Some(Vec::with_capacity(nr.trim().parse().unwrap()));
            in_chain = true;
            continue;
        }
        if in_chain {
            if let Some(e) = l.strip_prefix(".....") {
                let v = e.split(':').nth(1).unwrap().trim();
                let v = u64::from_str_radix(v, 16).unwrap();
                out.last_mut().unwrap().chain.as_mut().unwrap().push(v);
                continue;
            }
            in_chain = false;
        }
        let Some(p) = l.find(" [0x") else { continue };
        let Some(colon) = l[p..].find("]: PERF_RECORD_") else {
            continue;
        };
        let head: Vec<&str> = l[..p].split_whitespace().collect();
        let Some(off) = head.last().and_then(|s| s.strip_prefix("0x")) else {
            continue;
        };
        let Ok(offset) = u64::from_str_radix(off, 16) else {
            continue;
        };
        let size = u64::from_str_radix(&l[p + 4..p + colon], 16).unwrap();
        let after = &l[p + colon + "]: PERF_RECORD_".len()..];
        let end = after
            .find(|c: char| !(c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit()))
            .unwrap_or(after.len());
        let time = if head.len() >= 2 {
            head[head.len() - 2].parse().ok()
        } else {
            None
        };
        out.push(DumpRecord {
            offset,
            size,
            type_name: after[..end].to_string(),
            rest: after[end..].to_string(),
            time,
            chain: None,
        });
    }
    out
}

// ---------------------------------------------------------------- BPF

const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_OBJ_GET_INFO_BY_FD: libc::c_long = 15;

fn sys_bpf(cmd: libc::c_long, attr: &mut [u8]) -> libc::c_long {
    // SAFETY: the kernel reads and writes at most `attr.len()` bytes of
    // `attr`, a live exclusive buffer; the addresses inside it are set by
    // this module's two callers (the function is private) to buffers that
    // outlive the call, with the lengths they have.
    unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr.as_mut_ptr(),
            attr.len() as libc::c_uint,
        )
    }
}

/// A loaded BPF program, unloaded when dropped. What the kernel says about
/// it (`BPF_OBJ_GET_INFO_BY_FD`) is the oracle for id, tag and address.
#[derive(Debug)]
pub struct BpfProg {
    pub fd: i32,
    pub id: u32,
    pub tag: [u8; 8],
    pub name: String,
    pub jited_ksym: u64,
    pub jited_len: u32,
}

impl BpfProg {
    /// Load `r0 = 0; exit` as a SOCKET_FILTER named `name` (< 16 bytes).
    pub fn load(name: &str) -> std::io::Result<BpfProg> {
        // BPF_ALU64|BPF_MOV|BPF_K r0, 0 ; BPF_JMP|BPF_EXIT
        let insns: [u8; 16] = [0xb7, 0, 0, 0, 0, 0, 0, 0, 0x95, 0, 0, 0, 0, 0, 0, 0];
        let license = b"GPL\0";
        let mut attr = [0u8; 80];
        attr[0..4].copy_from_slice(&1u32.to_le_bytes()); // BPF_PROG_TYPE_SOCKET_FILTER
        attr[4..8].copy_from_slice(&2u32.to_le_bytes());
        attr[8..16].copy_from_slice(&(insns.as_ptr() as u64).to_le_bytes());
        attr[16..24].copy_from_slice(&(license.as_ptr() as u64).to_le_bytes());
        let n = name.len().min(15);
        attr[48..48 + n].copy_from_slice(&name.as_bytes()[..n]);
        let fd = sys_bpf(BPF_PROG_LOAD, &mut attr);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let fd = fd as i32;
        let mut ksym = 0u64;
        let mut flen = 0u32;
        let mut info = [0u8; 232];
        info[104..108].copy_from_slice(&1u32.to_le_bytes()); // nr_jited_ksyms
        info[108..112].copy_from_slice(&1u32.to_le_bytes()); // nr_jited_func_lens
        info[112..120].copy_from_slice(&(&mut ksym as *mut u64 as u64).to_le_bytes());
        info[120..128].copy_from_slice(&(&mut flen as *mut u32 as u64).to_le_bytes());
        let mut ga = [0u8; 16];
        ga[0..4].copy_from_slice(&(fd as u32).to_le_bytes());
        ga[4..8].copy_from_slice(&(info.len() as u32).to_le_bytes());
        ga[8..16].copy_from_slice(&(info.as_mut_ptr() as u64).to_le_bytes());
        if sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &mut ga) < 0 {
            let e = std::io::Error::last_os_error();
            // SAFETY: `fd` is the program just loaded, owned here and
            // closed once, before returning without it.
            unsafe { libc::close(fd) };
            return Err(e);
        }
        Ok(BpfProg {
            fd,
            id: u32::from_le_bytes(info[4..8].try_into().unwrap()),
            tag: info[8..16].try_into().unwrap(),
            name: name[..n].to_string(),
            jited_ksym: ksym,
            jited_len: flen,
        })
    }

    pub fn tag_hex(&self) -> String {
        self.tag.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The kernel's KSYMBOL name: `bpf_prog_<tag>_<name>` (no BTF).
    pub fn ksym_name(&self) -> String {
        format!("bpf_prog_{}_{}", self.tag_hex(), self.name)
    }
}

impl Drop for BpfProg {
    fn drop(&mut self) {
        // SAFETY: the fd is this value's own (from `load`), closed only here.
        unsafe { libc::close(self.fd) };
    }
}

// ---------------------------------------------------------------- fixture

/// sample_type of the fixture's sampling event, as perf -g -a sets it.
pub const FIXTURE_SAMPLE_TYPE: u64 =
    st::IP | st::TID | st::TIME | st::CPU | st::PERIOD | st::CALLCHAIN | st::IDENTIFIER;

pub fn fixture_attrs() -> Vec<AttrEntry> {
    let cpu_clock = EventAttr {
        type_: 1,
        config: 0,
        sample_period: 999,
        sample_type: FIXTURE_SAMPLE_TYPE,
        read_format: 0x14,
        flags: flags::FREQ | flags::SAMPLE_ID_ALL | flags::DISABLED | flags::INHERIT,
        ..Default::default()
    };
    let dummy = EventAttr {
        type_: 1,
        config: 9,
        sample_period: 1,
        sample_type: st::IP | st::TID | st::TIME | st::CPU | st::IDENTIFIER,
        read_format: 0x14,
        flags: 0x61842302,
        ..Default::default()
    };
    vec![
        AttrEntry {
            attr: cpu_clock,
            ids: vec![11, 12],
            name: "cpu-clock".into(),
        },
        AttrEntry {
            attr: dummy,
            ids: vec![13, 14],
            name: "dummy:HG".into(),
        },
    ]
}

pub fn fixture_prog_info() -> BpfProgInfo {
    use perfdata::{array, FuncInfo, LineInfo};
    BpfProgInfo {
        prog_type: 5,
        id: 128,
        tag: *b"\x6e\x27\x83\x43\xdf\xe6\xe3\xbb",
        name: "busy_getpid".into(),
        btf_id: 7,
        arrays: (1 << array::JITED_INSNS)
            | (1 << array::JITED_KSYMS)
            | (1 << array::JITED_FUNC_LENS)
            | (1 << array::FUNC_INFO)
            | (1 << array::LINE_INFO)
            | (1 << array::JITED_LINE_INFO)
            | (1 << array::PROG_TAGS),
        jited_insns: (0..98).collect(),
        jited_ksyms: vec![0xffff_ffff_c000_1000, 0xffff_ffff_c000_1040],
        jited_func_lens: vec![0x40, 0x22],
        func_info: vec![
            FuncInfo {
                insn_off: 0,
                type_id: 3,
            },
            FuncInfo {
                insn_off: 5,
                type_id: 4,
            },
        ],
        line_info: vec![LineInfo {
            insn_off: 0,
            file_name_off: 1,
            line_off: 10,
            line_col: (6 << 10) | 37,
        }],
        jited_line_info: vec![0xffff_ffff_c000_1000],
        prog_tags: vec![[9; 8], [10; 8]],
        ..Default::default()
    }
}

pub fn fixture_features() -> Features {
    // A BTF header (magic 0xEB9F, version 1, hdr_len 24) and 8 bytes of body.
    let mut btf = vec![0x9f, 0xeb, 1, 0];
    for v in [24u32, 0, 0, 0, 8] {
        btf.extend_from_slice(&v.to_le_bytes());
    }
    btf.extend_from_slice(b"\0busy.c\0");
    Features {
        hostname: Some("fixture-host".into()),
        osrelease: Some("6.18.0-test".into()),
        version: Some("6.1.192".into()),
        arch: Some("x86_64".into()),
        nrcpus: Some(NrCpus {
            available: 2,
            online: 2,
        }),
        cmdline: Some(vec!["perf".into(), "record".into(), "-a".into()]),
        sample_time: Some((1000, 5000)),
        bpf_prog_info: Some(vec![fixture_prog_info()]),
        bpf_btf: Some(vec![BtfBlob { id: 7, data: btf }]),
        ..Default::default()
    }
}

pub const FIXTURE_RECORDS: usize = 12;

/// A small file written by the writer: MMAP, COMM, MMAP2, 2 KSYMBOL,
/// BPF_EVENT, FINISHED_ROUND, 3 SAMPLEs with callchains (one in BPF code),
/// KSYMBOL unregister, FINISHED_ROUND. No perf needed.
pub fn fixture_bytes() -> Vec<u8> {
    use perfdata::{Comm, FileId, Ksymbol, Mmap, Mmap2, Sample};
    let attrs = fixture_attrs();
    let mut w = PerfFileWriter::new(std::io::Cursor::new(Vec::new()), &attrs).unwrap();
    let sid = |time: u64, id: u64| SampleId {
        pid: 42,
        tid: 43,
        time,
        id,
        cpu: 1,
        ..Default::default()
    };
    w.write(
        &Record::Mmap(Mmap {
            pid: u32::MAX,
            tid: 0,
            addr: 0xffff_ffff_8100_0000,
            len: 0x127_7288,
            pgoff: 0xffff_ffff_8100_0000,
            filename: b"[kernel.kallsyms]_text",
        }),
        1,
        &SampleId::default(),
    )
    .unwrap();
    w.write(
        &Record::Comm(Comm {
            pid: 42,
            tid: 43,
            comm: b"busy",
        }),
        0,
        &sid(0, 0),
    )
    .unwrap();
    w.write(
        &Record::Mmap2(Mmap2 {
            pid: 42,
            tid: 43,
            addr: 0x40_0000,
            len: 0x1000,
            pgoff: 0,
            file_id: FileId::Inode {
                maj: 8,
                min: 1,
                ino: 1234,
                ino_generation: 0,
            },
            prot: 5,
            flags: 2,
            filename: b"/usr/bin/busy",
        }),
        2,
        &sid(0, 0),
    )
    .unwrap();
    let p = fixture_prog_info();
    for (i, name) in [
        &b"bpf_prog_6e278343dfe6e3bb_busy_getpid"[..],
        b"bpf_prog_0a0a0a0a0a0a0a0a_work",
    ]
    .iter()
    .enumerate()
    {
        w.write(
            &Record::Ksymbol(Ksymbol {
                addr: p.jited_ksyms[i],
                len: p.jited_func_lens[i],
                ksym_type: 1,
                flags: 0,
                name,
            }),
            0,
            &sid(0, 0),
        )
        .unwrap();
    }
    w.write(
        &Record::BpfEvent(perfdata::BpfEvent {
            type_: 1,
            flags: 0,
            id: p.id,
            tag: p.tag,
        }),
        0,
        &sid(0, 0),
    )
    .unwrap();
    w.finished_round().unwrap();
    let chains: [&[u64]; 3] = [
        &[
            perfdata::context::KERNEL,
            0xffff_ffff_c000_1048,
            0xffff_ffff_c000_1010,
            0xffff_ffff_8100_0100,
        ],
        &[perfdata::context::USER, 0x40_0100, 0x40_0200],
        &[
            perfdata::context::KERNEL,
            0xffff_ffff_8100_0200,
            perfdata::context::USER,
            0x40_0300,
        ],
    ];
    for (i, cc) in chains.iter().enumerate() {
        let bytes: Vec<u8> = cc.iter().flat_map(|v| v.to_le_bytes()).collect();
        let s = Sample {
            ip: cc[1],
            pid: 42,
            tid: 43,
            // Out of order inside the round, as two CPUs' rings are.
            time: [3000, 1000, 2000][i],
            addr: 0,
            id: 11 + (i as u64 % 2),
            stream_id: 0,
            cpu: (i % 2) as u32,
            period: 1_001_001,
            callchain: Some(&bytes),
        };
        let misc = if cc[0] == perfdata::context::USER {
            2
        } else {
            1
        };
        w.write(&Record::Sample(s), misc, &SampleId::default())
            .unwrap();
    }
    w.write(
        &Record::Ksymbol(Ksymbol {
            addr: p.jited_ksyms[1],
            len: p.jited_func_lens[1],
            ksym_type: 1,
            flags: 1,
            name: b"bpf_prog_0a0a0a0a0a0a0a0a_work",
        }),
        0,
        &sid(4000, 13),
    )
    .unwrap();
    w.finished_round().unwrap();
    w.finish(&fixture_features()).unwrap().into_inner()
}

// ---------------------------------------------------------------- PRNG

/// xorshift64*: deterministic, no dependency.
pub struct XorShift(pub u64);

impl XorShift {
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}
