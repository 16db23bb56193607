//! The records written before the first sample, describing what existed
//! when the recording started: the kernel map, modules, BPF programs,
//! trampolines and dispatchers, and the processes with their executable
//! mappings. All at time 0 with a zeroed sample_id trailer, as perf does.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};

use bpfinfo::sys::Capture;
use perfdata::{
    ksym, misc, Comm, FileId, ForkExit, Ksymbol, Mmap, Mmap2, PerfFileWriter, Record, SampleId,
};

use super::bpf::{self, Kallsyms, SharedBook};
use super::buildid;

/// Which processes to describe.
#[derive(Debug, Clone)]
pub enum Processes {
    All,
    Only(Vec<i32>),
}

/// Executable files seen in mappings, for the BUILD_ID feature.
#[derive(Debug, Default)]
pub struct Dsos {
    /// filename → (cpumode, build id)
    pub by_name: BTreeMap<String, (u16, Vec<u8>)>,
    by_inode: HashMap<(u32, u32, u64), Option<Vec<u8>>>,
}

impl Dsos {
    pub fn add(&mut self, name: &str, cpumode: u16, id: Vec<u8>) {
        self.by_name
            .entry(name.to_string())
            .or_insert((cpumode, id));
    }

    /// Build id of a user file mapped by `pid`, read once per inode.
    fn user_file(&mut self, pid: i32, path: &str, dev: (u32, u32), ino: u64) -> Option<Vec<u8>> {
        let id = self
            .by_inode
            .entry((dev.0, dev.1, ino))
            .or_insert_with(|| {
                // Through the process's root, so files in other mount
                // namespaces (containers) are the ones it mapped.
                let p = PathBuf::from(format!("/proc/{pid}/root{path}"));
                buildid::of_elf(&p)
                    .ok()
                    .flatten()
                    .or_else(|| buildid::of_elf(Path::new(path)).ok().flatten())
            })
            .clone();
        if let Some(id) = &id {
            self.add(path, misc::USER, id.clone());
        }
        id
    }
}

/// Counts for the log line after synthesis.
#[derive(Debug, Default)]
pub struct Synthesized {
    pub programs: usize,
    pub images: usize,
    pub processes: usize,
    pub threads: usize,
    pub records: usize,
}

/// Writes into a file for `record`, into memory for `top` (which feeds
/// the records to the live engine).
pub struct Synth<'a, W: Write + Seek = File> {
    pub w: &'a mut PerfFileWriter<W>,
    pub book: &'a SharedBook,
    pub capture: Capture,
    pub bpf_event: bool,
    pub page_size: u64,
    pub dsos: Dsos,
    pub out: Synthesized,
    /// Things worth one line each on stderr.
    pub warnings: Vec<String>,
}

fn zero() -> SampleId {
    SampleId::default()
}

impl<W: Write + Seek> Synth<'_, W> {
    fn put(&mut self, rec: &Record<'_>, misc: u16) -> perfdata::Result<()> {
        self.out.records += 1;
        self.w.write(rec, misc, &zero())
    }

    /// Kernel, modules, BPF programs, images, processes, FINISHED_INIT.
    pub fn run(&mut self, procs: &Processes, bpf_programs: bool) -> perfdata::Result<()> {
        if bpf_programs {
            self.walk_programs();
        }
        // Read after the walk, so every program just read has its kernel name.
        let kallsyms = Kallsyms::read().unwrap_or_else(|e| {
            self.warnings.push(format!(
                "/proc/kallsyms: {e}: kernel samples will not be symbolized"
            ));
            Kallsyms::default()
        });
        self.kernel(&kallsyms)?;
        self.modules()?;
        if bpf_programs {
            self.programs(&kallsyms)?;
            self.images(&kallsyms)?;
        }
        self.processes(procs)?;
        self.put(&Record::FinishedInit, 0)
    }

    fn kernel(&mut self, k: &Kallsyms) -> perfdata::Result<()> {
        let Some(text) = k.text else {
            self.warnings.push(
                "no _text in /proc/kallsyms (kptr_restrict?): kernel addresses will not resolve"
                    .into(),
            );
            return Ok(());
        };
        let end = k.etext.filter(|&e| e > text).unwrap_or(text + (64 << 20));
        self.put(
            &Record::Mmap(Mmap {
                pid: u32::MAX,
                tid: 0,
                addr: text,
                len: end - text,
                pgoff: text,
                filename: b"[kernel.kallsyms]_text",
            }),
            misc::KERNEL,
        )?;
        if let Some(id) = buildid::of_kernel() {
            self.dsos.add("[kernel.kallsyms]", misc::KERNEL, id);
        }
        Ok(())
    }

    fn modules(&mut self) -> perfdata::Result<()> {
        let Ok(list) = std::fs::read_to_string("/proc/modules") else {
            return Ok(()); // built without modules
        };
        let paths = module_paths();
        for line in list.lines() {
            let f: Vec<&str> = line.split_ascii_whitespace().collect();
            if f.len() < 6 {
                continue;
            }
            let (name, size) = (f[0], f[1].parse::<u64>().unwrap_or(0));
            let Some(addr) = f[5]
                .strip_prefix("0x")
                .and_then(|a| u64::from_str_radix(a, 16).ok())
                .filter(|&a| a != 0)
            else {
                continue;
            };
            let file = paths
                .get(&name.replace('-', "_"))
                .cloned()
                .unwrap_or_else(|| format!("[{name}]"));
            self.put(
                &Record::Mmap(Mmap {
                    pid: u32::MAX,
                    tid: 0,
                    addr,
                    len: size,
                    pgoff: 0,
                    filename: file.as_bytes(),
                }),
                misc::KERNEL,
            )?;
            if let Some(id) = buildid::of_module(name) {
                self.dsos.add(&file, misc::KERNEL, id);
            }
        }
        Ok(())
    }

    /// Read every loaded program. One that fails is noted and skipped; only
    /// a failure to list programs at all ends the walk.
    fn walk_programs(&mut self) {
        for (id, r) in bpfinfo::sys::walk_progs(self.capture) {
            let mut book = self.book.lock().unwrap();
            match r {
                Ok(p) => {
                    if let Some(why) = bpf::unplaceable(&p.info) {
                        book.fail(id, why);
                        continue;
                    }
                    book.start_stats
                        .insert(id, (p.info.run_cnt, p.info.run_time_ns));
                    book.preexisting.insert(id);
                    book.insert(p);
                }
                Err(e) if id == 0 => {
                    let e = super::caps::bpf_listing_refused(&e).unwrap_or_else(|| e.to_string());
                    self.warnings.push(format!(
                        "cannot list BPF programs ({e}): programs loaded before the recording will be [unknown]"
                    ));
                    break;
                }
                Err(e) => book.fail(id, bpf::describe(&e)),
            }
        }
    }

    fn programs(&mut self, k: &Kallsyms) -> perfdata::Result<()> {
        let book = self.book.clone();
        let book = book.lock().unwrap();
        let mut result = Ok(());
        for id in &book.preexisting {
            let info = &book.progs[id];
            let btf = book.btf.get(&info.btf_id).map(|b| b.as_slice());
            bpf::program_records(info, btf, k, self.bpf_event, |r| {
                if result.is_ok() {
                    result = self.put(r, misc::KERNEL);
                }
            });
            self.out.programs += 1;
        }
        result
    }

    fn images(&mut self, k: &Kallsyms) -> perfdata::Result<()> {
        for (addr, len, name) in k.images(self.page_size) {
            self.put(
                &Record::Ksymbol(Ksymbol {
                    addr,
                    len: len as u32,
                    ksym_type: ksym::TYPE_BPF,
                    flags: 0,
                    name: name.as_bytes(),
                }),
                misc::KERNEL,
            )?;
            self.out.images += 1;
        }
        Ok(())
    }

    fn processes(&mut self, which: &Processes) -> perfdata::Result<()> {
        let pids: Vec<i32> = match which {
            Processes::Only(p) => p.clone(),
            Processes::All => numeric_dir("/proc"),
        };
        for pid in pids {
            // A process may exit at any point here: skip what vanished.
            let Some(st) = Status::read(pid, pid) else {
                continue;
            };
            if st.tgid != pid {
                continue;
            }
            let mut tids = numeric_dir(&format!("/proc/{pid}/task"));
            tids.sort();
            if tids.is_empty() {
                tids.push(pid);
            }
            for tid in tids {
                let comm = if tid == pid {
                    st.comm.clone()
                } else {
                    match Status::read(pid, tid) {
                        Some(t) => t.comm,
                        None => continue,
                    }
                };
                let parent = if tid == pid { st.ppid } else { pid } as u32;
                self.put(
                    &Record::Fork(ForkExit {
                        pid: pid as u32,
                        ppid: parent,
                        tid: tid as u32,
                        ptid: parent,
                        time: 0,
                    }),
                    0,
                )?;
                self.put(
                    &Record::Comm(Comm {
                        pid: pid as u32,
                        tid: tid as u32,
                        comm: comm.as_bytes(),
                    }),
                    0,
                )?;
                self.out.threads += 1;
            }
            self.maps(pid)?;
            self.out.processes += 1;
        }
        Ok(())
    }

    fn maps(&mut self, pid: i32) -> perfdata::Result<()> {
        let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
            return Ok(());
        };
        for line in maps.lines() {
            let Some(m) = MapLine::parse(line) else {
                continue;
            };
            if !m.perms.contains('x') {
                continue;
            }
            let name = if m.path.is_empty() { "//anon" } else { m.path };
            if m.path.starts_with('/') {
                self.dsos.user_file(pid, m.path, m.dev, m.ino);
            }
            let prot = (m.perms.contains('r') as u32 * libc::PROT_READ as u32)
                | (m.perms.contains('w') as u32 * libc::PROT_WRITE as u32)
                | libc::PROT_EXEC as u32;
            let flags = if m.perms.ends_with('s') {
                libc::MAP_SHARED
            } else {
                libc::MAP_PRIVATE
            } as u32;
            self.put(
                &Record::Mmap2(Mmap2 {
                    pid: pid as u32,
                    tid: pid as u32,
                    addr: m.start,
                    len: m.end - m.start,
                    pgoff: m.offset,
                    file_id: FileId::Inode {
                        maj: m.dev.0,
                        min: m.dev.1,
                        ino: m.ino,
                        ino_generation: 0,
                    },
                    prot,
                    flags,
                    filename: name.as_bytes(),
                }),
                misc::USER,
            )?;
        }
        Ok(())
    }
}

/// Numeric entries of a /proc directory.
fn numeric_dir(dir: &str) -> Vec<i32> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .collect()
}

struct Status {
    comm: String,
    tgid: i32,
    ppid: i32,
}

impl Status {
    fn read(pid: i32, tid: i32) -> Option<Status> {
        let s = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status"))
            .or_else(|_| std::fs::read_to_string(format!("/proc/{tid}/status")))
            .ok()?;
        let mut st = Status {
            comm: String::new(),
            tgid: tid,
            ppid: 0,
        };
        for line in s.lines() {
            if let Some(v) = line.strip_prefix("Name:") {
                st.comm = v.trim().to_string();
            } else if let Some(v) = line.strip_prefix("Tgid:") {
                st.tgid = v.trim().parse().ok()?;
            } else if let Some(v) = line.strip_prefix("PPid:") {
                st.ppid = v.trim().parse().ok()?;
                break;
            }
        }
        // `Name:` escapes some bytes; comm is the raw name.
        if let Ok(c) = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm")) {
            st.comm = c.trim_end_matches('\n').to_string();
        }
        Some(st)
    }
}

/// One line of /proc/PID/maps.
#[derive(Debug, PartialEq, Eq)]
struct MapLine<'a> {
    start: u64,
    end: u64,
    perms: &'a str,
    offset: u64,
    dev: (u32, u32),
    ino: u64,
    path: &'a str,
}

impl<'a> MapLine<'a> {
    fn parse(line: &'a str) -> Option<MapLine<'a>> {
        let mut rest = line;
        let mut field = || {
            let r = rest.trim_start();
            let end = r.find(' ').unwrap_or(r.len());
            let (f, tail) = r.split_at(end);
            rest = tail;
            f
        };
        let range = field();
        let perms = field();
        let offset = field();
        let dev = field();
        let ino = field();
        let path = rest.trim();
        let (s, e) = range.split_once('-')?;
        let (maj, min) = dev.split_once(':')?;
        let path = path.strip_suffix(" (deleted)").unwrap_or(path);
        Some(MapLine {
            start: u64::from_str_radix(s, 16).ok()?,
            end: u64::from_str_radix(e, 16).ok()?,
            perms,
            offset: u64::from_str_radix(offset, 16).ok()?,
            dev: (
                u32::from_str_radix(maj, 16).ok()?,
                u32::from_str_radix(min, 16).ok()?,
            ),
            ino: ino.parse().ok()?,
            path,
        })
    }
}

/// Module name → path of its .ko, from modules.dep (as perf names modules).
fn module_paths() -> HashMap<String, String> {
    let (_, release, _) = super::sys::uname();
    let base = format!("/lib/modules/{release}");
    let mut m = HashMap::new();
    let Ok(dep) = std::fs::read_to_string(format!("{base}/modules.dep")) else {
        return m;
    };
    for line in dep.lines() {
        let Some((path, _)) = line.split_once(':') else {
            continue;
        };
        let file = path.rsplit('/').next().unwrap_or(path);
        let name = file.split('.').next().unwrap_or(file).replace('-', "_");
        let full = if path.starts_with('/') {
            path.to_string()
        } else {
            format!("{base}/{path}")
        };
        m.insert(name, full);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines() {
        let l = MapLine::parse(
            "55862216f000-558622174000 r-xp 00002000 fe:00 247030                     /usr/bin/my cat",
        )
        .unwrap();
        assert_eq!(l.start, 0x55862216f000);
        assert_eq!(l.end, 0x558622174000);
        assert_eq!(l.perms, "r-xp");
        assert_eq!(l.offset, 0x2000);
        assert_eq!(l.dev, (0xfe, 0));
        assert_eq!(l.ino, 247030);
        assert_eq!(l.path, "/usr/bin/my cat");
        let anon = MapLine::parse("7ffd1000-7ffd3000 r-xp 00000000 00:00 0 ").unwrap();
        assert_eq!(anon.path, "");
    }
}
