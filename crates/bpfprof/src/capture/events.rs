//! Which events are opened, with which attrs, on which CPUs and tasks; and
//! why an open failed, in words a user can act on.
//!
//! The layout follows `perf record`: one sampling fd per (task, CPU) and a
//! tracking dummy on every online CPU (pid -1), because the kernel delivers
//! KSYMBOL/BPF_EVENT only to the events on the CPU where the load happens.
//! Per CPU, every fd writes into one ring (PERF_EVENT_IOC_SET_OUTPUT).

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};

use perfdata::{event_type, flags, read_format, sample_type as st, sw, AttrEntry, EventAttr};

use super::ring::Ring;
use super::sys;

/// What to profile.
#[derive(Debug, Clone)]
pub enum Target {
    SystemWide,
    /// Existing threads (all threads of the `-p` processes).
    Threads(Vec<i32>),
    /// The command we started, parked before exec.
    Child(i32),
}

impl Target {
    pub fn is_system_wide(&self) -> bool {
        matches!(self, Target::SystemWide)
    }
}

/// A sampling event by name (`-e`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventSpec {
    pub type_: u32,
    pub config: u64,
    pub name: String,
}

impl EventSpec {
    pub fn cpu_clock() -> EventSpec {
        EventSpec {
            type_: event_type::SOFTWARE,
            config: sw::CPU_CLOCK,
            name: "cpu-clock".into(),
        }
    }

    /// The events `-e` understands: the two software clocks and the generic
    /// hardware events (PERF_COUNT_HW_*).
    pub fn parse(name: &str) -> Option<EventSpec> {
        let (type_, config) = match name {
            "cpu-clock" => (event_type::SOFTWARE, sw::CPU_CLOCK),
            "task-clock" => (event_type::SOFTWARE, sw::TASK_CLOCK),
            "cycles" | "cpu-cycles" => (event_type::HARDWARE, 0),
            "instructions" => (event_type::HARDWARE, 1),
            "cache-references" => (event_type::HARDWARE, 2),
            "cache-misses" => (event_type::HARDWARE, 3),
            "branches" | "branch-instructions" => (event_type::HARDWARE, 4),
            "branch-misses" => (event_type::HARDWARE, 5),
            "bus-cycles" => (event_type::HARDWARE, 6),
            "ref-cycles" => (event_type::HARDWARE, 9),
            _ => return None,
        };
        Some(EventSpec {
            type_,
            config,
            name: name.into(),
        })
    }

    pub fn is_hardware(&self) -> bool {
        self.type_ == event_type::HARDWARE
    }
}

pub const SAMPLE_TYPE: u64 = st::IP | st::TID | st::TIME | st::CPU | st::PERIOD | st::IDENTIFIER;
/// The tracking dummy's sample_type: same trailer bits as the sampling
/// event (perf checks that all attrs agree), no PERIOD.
pub const TRACKING_SAMPLE_TYPE: u64 = st::IP | st::TID | st::TIME | st::CPU | st::IDENTIFIER;
/// The flags that make an event report task and mapping changes.
const TRACK_TASKS: u64 =
    flags::MMAP | flags::COMM | flags::TASK | flags::MMAP2 | flags::COMM_EXEC | flags::BUILD_ID;

#[derive(Debug, Clone)]
pub struct Config {
    pub event: EventSpec,
    pub freq: u64,
    /// A fixed period (`-c`): no FREQ bit, as perf record sets it.
    pub period: Option<u64>,
    /// The CPUs that sample (`-C`); the tracking dummy still runs on every
    /// online CPU, since a BPF load on any CPU is reported only there.
    pub sample_cpus: Vec<i32>,
    pub callchain: bool,
    pub bpf_events: bool,
    pub data_pages: usize,
    /// No samples while a CPU runs its idle task (`exclude_idle`, which
    /// cpu-clock honours): a live view of an idle machine then has next
    /// to nothing to do. perf record and perf top sample idle CPUs too.
    pub exclude_idle: bool,
}

/// The sampling attr, as perf record builds it.
pub fn sampling_attr(c: &Config, target: &Target) -> EventAttr {
    let mut a = EventAttr {
        type_: c.event.type_,
        config: c.event.config,
        sample_period: c.period.unwrap_or(c.freq),
        sample_type: SAMPLE_TYPE | if c.callchain { st::CALLCHAIN } else { 0 },
        read_format: read_format::ID | read_format::LOST,
        flags: flags::DISABLED
            | flags::INHERIT
            | flags::SAMPLE_ID_ALL
            | if c.period.is_some() { 0 } else { flags::FREQ },
        sample_max_stack: if c.callchain { 127 } else { 0 },
        ..Default::default()
    };
    if !target.is_system_wide() {
        // Per-task events see the task's own mmaps and forks; a system-wide
        // dummy would report every process on the machine.
        a.flags |= TRACK_TASKS;
    }
    if matches!(target, Target::Child(_)) {
        a.flags |= flags::ENABLE_ON_EXEC;
    }
    if c.exclude_idle {
        a.flags |= flags::EXCLUDE_IDLE;
    }
    a
}

/// The tracking dummy opened on every CPU, or None when nothing needs it.
pub fn tracking_attr(c: &Config, target: &Target) -> Option<EventAttr> {
    let mut f = flags::SAMPLE_ID_ALL;
    if target.is_system_wide() {
        f |= flags::INHERIT | TRACK_TASKS;
    }
    if c.bpf_events {
        f |= flags::KSYMBOL | flags::BPF_EVENT;
    }
    if f == flags::SAMPLE_ID_ALL {
        return None;
    }
    Some(EventAttr {
        type_: event_type::SOFTWARE,
        config: sw::DUMMY,
        sample_period: 1,
        sample_type: TRACKING_SAMPLE_TYPE,
        read_format: read_format::ID | read_format::LOST,
        flags: f,
        ..Default::default()
    })
}

/// The side band's own dummy: BPF_EVENT only, woken on every byte, never
/// written to the file.
///
/// No sample_id_all, on purpose: the kernel's perf_event_bpf_output() and
/// perf_event_ksymbol_output() add each listening event's trailer size to
/// a header shared by all listeners and never restore it, so every event
/// with a trailer inflates the records of the events served after it.
pub fn sideband_attr() -> EventAttr {
    EventAttr {
        type_: event_type::SOFTWARE,
        config: sw::DUMMY,
        sample_period: 1,
        sample_type: 0,
        flags: flags::WATERMARK | flags::BPF_EVENT,
        wakeup: 1,
        ..Default::default()
    }
}

/// Why an event could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot open {event} on CPU {cpu}: permission denied.\n{hint}")]
    Permission {
        event: String,
        cpu: i32,
        hint: String,
    },
    #[error("no such process: {0}")]
    NoSuchProcess(i32),
    #[error("{event} is not supported on this machine{hint}")]
    Unsupported {
        event: String,
        hint: &'static str,
        #[source]
        source: io::Error,
    },
    #[error("cannot open {event} on CPU {cpu}")]
    Other {
        event: String,
        cpu: i32,
        #[source]
        source: io::Error,
    },
    #[error("cannot map the ring buffer of CPU {cpu} ({pages} pages){hint}")]
    Mmap {
        cpu: i32,
        pages: usize,
        hint: &'static str,
        #[source]
        source: io::Error,
    },
}

/// What to tell a user whose perf_event_open was refused.
pub fn permission_hint() -> String {
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok());
    let what = match paranoid {
        Some(p) if p >= 3 => format!(
            "perf_event_paranoid is {p}: the kernel refuses perf_event_open to anyone without CAP_PERFMON (or CAP_SYS_ADMIN)."
        ),
        Some(p) if p >= 1 => format!(
            "perf_event_paranoid is {p}: system-wide and kernel profiling need CAP_PERFMON (or paranoid <= 0)."
        ),
        Some(p) => format!("perf_event_paranoid is {p}."),
        None => "perf_event_paranoid could not be read.".into(),
    };
    let what = match super::caps::effective()
        .and_then(|eff| super::caps::lacking(eff, &[super::caps::CAP_PERFMON]))
    {
        Some(l) => format!("{what} Here {l}."),
        None => format!("{what} This process has CAP_PERFMON, so a security module (or a container) refuses it."),
    };
    format!(
        "{what}\nFix: run as root or grant CAP_PERFMON and CAP_BPF (sudo setcap cap_perfmon,cap_bpf+ep {}), or lower it with `sysctl kernel.perf_event_paranoid=-1`.",
        std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "bpfprof".into())
    )
}

fn classify(e: io::Error, ev: &EventSpec, cpu: i32, pid: i32) -> OpenError {
    match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => OpenError::Permission {
            event: ev.name.clone(),
            cpu,
            hint: permission_hint(),
        },
        Some(libc::ESRCH) => OpenError::NoSuchProcess(pid),
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV) => {
            OpenError::Unsupported {
                event: ev.name.clone(),
                hint: if ev.is_hardware() {
                    "; this machine has no hardware PMU (a VM?): use -e cpu-clock"
                } else {
                    ""
                },
                source: e,
            }
        }
        _ => OpenError::Other {
            event: ev.name.clone(),
            cpu,
            source: e,
        },
    }
}

/// The online CPUs, from /sys (e.g. "0-3,6").
pub fn online_cpus() -> io::Result<Vec<i32>> {
    let s = std::fs::read_to_string("/sys/devices/system/cpu/online")?;
    Ok(parse_cpu_list(&s))
}

pub fn parse_cpu_list(s: &str) -> Vec<i32> {
    let mut v = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<i32>(), b.parse::<i32>()) {
                    v.extend(a..=b);
                }
            }
            None => v.extend(part.parse::<i32>().ok()),
        }
    }
    v
}

/// One CPU's ring and the fd that owns it.
pub struct CpuRing {
    pub cpu: i32,
    pub ring: Ring,
    pub owner: OwnedFd,
}

/// Everything opened for a recording.
pub struct Opened {
    /// The attrs for the file: sampling first, then the tracking dummy.
    pub attrs: Vec<AttrEntry>,
    pub sampling: Vec<File>,
    pub rings: Vec<CpuRing>,
    /// Whether the kernel's MMAP2 records carry build ids.
    pub mmap_build_id: bool,
}

struct Opener {
    data_pages: usize,
    /// Ring owner and its ring, per CPU index.
    owners: Vec<Option<(OwnedFd, Ring)>>,
}

impl Opener {
    /// Send `fd`'s records to the ring of its CPU; the first fd of a CPU gets
    /// the ring (it must be mapped before others can be redirected to it).
    fn attach(&mut self, idx: usize, fd: &OwnedFd, cpu: i32) -> Result<(), OpenError> {
        match &self.owners[idx] {
            Some((owner, _)) => {
                sys::set_output(fd.as_fd(), owner.as_fd()).map_err(|e| OpenError::Other {
                    event: "PERF_EVENT_IOC_SET_OUTPUT".into(),
                    cpu,
                    source: e,
                })
            }
            None => {
                let ring = Ring::new(fd.as_fd(), self.data_pages).map_err(|e| OpenError::Mmap {
                    cpu,
                    pages: self.data_pages,
                    hint: if e.raw_os_error() == Some(libc::EPERM) {
                        " (over kernel.perf_event_mlock_kb: run as root or use a smaller -m)"
                    } else {
                        ""
                    },
                    source: e,
                })?;
                let owner = fd.try_clone().map_err(|e| OpenError::Other {
                    event: "dup".into(),
                    cpu,
                    source: e,
                })?;
                self.owners[idx] = Some((owner, ring));
                Ok(())
            }
        }
    }
}

/// Open with `attr`, and without `flags::BUILD_ID` if the kernel refuses it.
/// The kernel may also have lowered its maximum sampling rate since the
/// options were decided (it does under load): then the frequency follows.
fn open_with_fallback(attr: &mut EventAttr, pid: i32, cpu: i32) -> io::Result<OwnedFd> {
    match sys::perf_event_open(attr, pid, cpu) {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) && over_the_ceiling(attr) => {
            let (freq, why) = super::caps::fit_freq(attr.sample_period, true);
            if let Some(why) = why {
                eprintln!("bpfprof: {why}");
            }
            attr.sample_period = freq;
            open_with_fallback(attr, pid, cpu)
        }
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) && attr.has(flags::BUILD_ID) => {
            attr.flags &= !flags::BUILD_ID;
            sys::perf_event_open(attr, pid, cpu)
        }
        r => r,
    }
}

/// A frequency (not a period) above the kernel's ceiling as it is now.
fn over_the_ceiling(attr: &EventAttr) -> bool {
    attr.has(flags::FREQ)
        && super::caps::max_sample_rate().is_some_and(|m| m > 0 && attr.sample_period > m)
}

/// Open the tracking dummies and sampling events and map one ring per CPU.
/// Sampling events start disabled (or enable on exec); the caller enables
/// them after synthesis.
pub fn open(cfg: &Config, target: &Target, cpus: &[i32]) -> Result<Opened, OpenError> {
    let mut op = Opener {
        data_pages: cfg.data_pages,
        owners: (0..cpus.len()).map(|_| None).collect(),
    };
    let dummy_spec = EventSpec {
        type_: event_type::SOFTWARE,
        config: sw::DUMMY,
        name: "dummy:HG".into(),
    };
    let mut attrs = Vec::new();

    let mut sattr = sampling_attr(cfg, target);
    let mut sampling = Vec::new();
    let mut sids = Vec::new();
    let tasks: Vec<i32> = match target {
        Target::SystemWide => vec![-1],
        Target::Threads(t) => t.clone(),
        Target::Child(pid) => vec![*pid],
    };
    // The sampling event first: it is what fails for lack of a PMU or of
    // permission, with the clearest message.
    let mut opened_any_task = false;
    for &tid in &tasks {
        let mut fds = Vec::new();
        let mut gone = false;
        for (i, &cpu) in cpus.iter().enumerate() {
            if !cfg.sample_cpus.contains(&cpu) {
                continue;
            }
            match open_with_fallback(&mut sattr, tid, cpu) {
                Ok(fd) => fds.push((i, fd)),
                // A thread of a -p process may exit while we open.
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) && tasks.len() > 1 => {
                    gone = true;
                    break;
                }
                Err(e) => return Err(classify(e, &cfg.event, cpu, tid)),
            }
        }
        if gone {
            continue;
        }
        opened_any_task = true;
        for (i, fd) in fds {
            sids.push(
                sys::event_id(fd.as_fd()).map_err(|e| classify(e, &cfg.event, cpus[i], tid))?,
            );
            sampling.push((i, fd));
        }
    }
    if !opened_any_task {
        return Err(OpenError::NoSuchProcess(tasks[0]));
    }

    // Ring owners: the tracking dummy when there is one (it never hangs up
    // when a task exits), else the first sampling fd of each CPU.
    let mut tracking_ids = Vec::new();
    let tattr = tracking_attr(cfg, target);
    let mut tattr_final = None;
    if let Some(mut ta) = tattr {
        for (i, &cpu) in cpus.iter().enumerate() {
            let fd = open_with_fallback(&mut ta, -1, cpu)
                .map_err(|e| classify(e, &dummy_spec, cpu, -1))?;
            tracking_ids
                .push(sys::event_id(fd.as_fd()).map_err(|e| classify(e, &dummy_spec, cpu, -1))?);
            op.attach(i, &fd, cpu)?;
        }
        tattr_final = Some(ta);
    }
    for (i, fd) in &sampling {
        op.attach(*i, fd, cpus[*i])?;
    }

    attrs.push(AttrEntry {
        attr: sattr,
        ids: sids,
        name: cfg.event.name.clone(),
    });
    if let Some(ta) = tattr_final {
        attrs.push(AttrEntry {
            attr: ta,
            ids: tracking_ids,
            name: dummy_spec.name.clone(),
        });
    }

    let rings = op
        .owners
        .into_iter()
        .enumerate()
        .filter_map(|(i, o)| {
            o.map(|(owner, ring)| CpuRing {
                cpu: cpus[i],
                ring,
                owner,
            })
        })
        .collect();
    let mmap_build_id = attrs
        .iter()
        .any(|a: &AttrEntry| a.attr.has(flags::MMAP2) && a.attr.has(flags::BUILD_ID));
    Ok(Opened {
        mmap_build_id,
        attrs,
        sampling: sampling.into_iter().map(|(_, fd)| File::from(fd)).collect(),
        rings,
    })
}

impl Opened {
    pub fn enable_sampling(&self) -> io::Result<()> {
        for f in &self.sampling {
            sys::enable(f.as_fd())?;
        }
        Ok(())
    }

    pub fn disable_sampling(&self) {
        for f in &self.sampling {
            let _ = sys::disable(f.as_fd());
        }
    }

    /// Per sampling fd: (id, lost) from read_format ID|LOST.
    pub fn lost_counts(&self) -> Vec<(u64, u64)> {
        use std::io::Read;
        let mut v = Vec::new();
        for mut f in &self.sampling {
            let mut b = [0u8; 24];
            if let Ok(24) = f.read(&mut b) {
                let id = u64::from_le_bytes(b[8..16].try_into().unwrap());
                let lost = u64::from_le_bytes(b[16..24].try_into().unwrap());
                v.push((id, lost));
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attrs_match_what_perf_record_sets() {
        let cfg = Config {
            event: EventSpec::cpu_clock(),
            freq: 4000,
            period: None,
            sample_cpus: vec![0],
            callchain: false,
            bpf_events: true,
            data_pages: 128,
            exclude_idle: false,
        };
        let s = sampling_attr(&cfg, &Target::SystemWide);
        // perf 6.1 `record -a`: cpu-clock sample_type 0x10187, dummy 0x10087.
        assert_eq!(s.sample_type, 0x10187);
        let t = tracking_attr(&cfg, &Target::SystemWide).unwrap();
        assert_eq!(t.sample_type, 0x10087);
        // perf's dummy flags 0x61842302, plus build ids in MMAP2.
        assert_eq!(t.flags & !flags::BUILD_ID, 0x61842302);
        assert_eq!(s.id_trailer_size(), t.id_trailer_size());
        // perf record -c 10000: a period, the FREQ bit clear.
        let c = sampling_attr(
            &Config {
                period: Some(10000),
                ..cfg
            },
            &Target::SystemWide,
        );
        assert_eq!((c.sample_period, c.has(flags::FREQ)), (10000, false));
        assert!(s.has(flags::FREQ));
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-3,6\n"), vec![0, 1, 2, 3, 6]);
        assert_eq!(parse_cpu_list("0"), vec![0]);
    }
}
