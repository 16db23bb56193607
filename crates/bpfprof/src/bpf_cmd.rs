//! `bpfprof bpf`: the loaded BPF programs, as the kernel describes them.
//!
//! `bpf list` is a table like `bpftool prog show` (or JSON); `bpf show ID`
//! shows one program's sub-programs with their addresses, names and source
//! files, and optionally its bytecode and machine code with source lines.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use bpfinfo::sys::{self, Capture, LiveProg};
use bpfinfo::{disassemble, listing, prog_type_name, Arch, Kallsyms, Program, Syntax};

/// Arguments of `bpfprof bpf`.
#[derive(clap::Args, Debug)]
pub struct BpfArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: BpfCommand,
}

/// The `bpfprof bpf` sub-commands.
#[derive(clap::Subcommand, Debug)]
pub enum BpfCommand {
    /// List loaded BPF programs: id, type, tag, name, sizes, sub-programs,
    /// load time, owner and (when statistics are on) run count and time.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show one program: its sub-programs and source files, and optionally
    /// its bytecode and machine code.
    Show {
        /// The program id (from `bpfprof bpf list`).
        id: u32,
        /// Print the bytecode as `bpftool prog dump xlated` does, with
        /// source lines.
        #[arg(long)]
        xlated: bool,
        /// Print the machine code of each sub-program, with source lines.
        #[arg(long)]
        jited: bool,
        /// Add file, line and column to each source line.
        #[arg(long)]
        linum: bool,
    },
}

/// Run `bpfprof bpf ...`.
pub fn run(args: &BpfArgs) -> Result<()> {
    match &args.command {
        BpfCommand::List { json } => list(*json),
        BpfCommand::Show {
            id,
            xlated,
            jited,
            linum,
        } => show(*id, *xlated, *jited, *linum),
    }
}

fn type_name(t: u32) -> String {
    prog_type_name(t).map_or_else(|| format!("type {t}"), str::to_string)
}

/// Wall-clock time of a `load_time` (nanoseconds since boot), as UTC.
fn loaded_at(load_time_ns: u64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let ago = sys::boottime_ns().saturating_sub(load_time_ns);
    bpfprof::utc::utc(now.saturating_sub(ago) / 1_000_000_000)
}

/// The name as bpftool prints it: the kernel keeps 15 bytes of a name, so
/// a name that long may be cut, and the main function's BTF name is the
/// whole one.
fn full_name(info: &perfdata::BpfProgInfo) -> String {
    if info.name.len() < 15 || info.btf_id == 0 {
        return info.name.clone();
    }
    sys::fetch_prog(info.id, Capture::Symbols)
        .ok()
        .and_then(|p| {
            Program::new(p.info, p.btf.as_deref())
                .btf_func_name(0)
                .map(str::to_string)
        })
        .unwrap_or_else(|| info.name.clone())
}

fn list(json: bool) -> Result<()> {
    let mut progs: Vec<LiveProg> = Vec::new();
    for (id, r) in sys::walk_progs(Capture::Summary) {
        match r {
            Ok(p) => progs.push(p),
            // Unloaded between listing and fetching: nothing to show.
            Err(bpfinfo::Error::Gone { .. }) => {}
            Err(e) if id == 0 => return Err(e).context("listing BPF programs"),
            Err(e) => eprintln!("bpfprof: BPF program {id}: {e}"),
        }
    }
    if json {
        let rows: Vec<serde_json::Value> = progs.iter().map(|p| list_json(&p.info)).collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    let header = [
        "ID",
        "TYPE",
        "TAG",
        "NAME",
        "JITED",
        "XLATED",
        "SUBS",
        "LOADED AT",
        "UID",
        "RUN_CNT",
        "RUN_TIME_NS",
    ];
    let rows: Vec<[String; 11]> = progs
        .iter()
        .map(|p| {
            let i = &p.info;
            let stats = i.run_cnt != 0 || i.run_time_ns != 0;
            [
                i.id.to_string(),
                type_name(i.prog_type),
                i.tag_hex(),
                full_name(i),
                i.jited_prog_len.to_string(),
                i.xlated_prog_len.to_string(),
                i.nr_jited_ksyms.to_string(),
                loaded_at(i.load_time),
                i.created_by_uid.to_string(),
                if stats {
                    i.run_cnt.to_string()
                } else {
                    "-".into()
                },
                if stats {
                    i.run_time_ns.to_string()
                } else {
                    "-".into()
                },
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let line = |cells: &[&str]| {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(widths).enumerate() {
            // Numbers right-aligned, text left-aligned.
            let right = matches!(i, 0 | 4 | 5 | 6 | 8 | 9 | 10);
            if right {
                s.push_str(&format!("{c:>w$}  "));
            } else {
                s.push_str(&format!("{c:<w$}  "));
            }
        }
        println!("{}", s.trim_end());
    };
    line(&header);
    for r in &rows {
        line(&r.each_ref().map(String::as_str));
    }
    if rows.is_empty() {
        println!("(no BPF programs loaded)");
    }
    Ok(())
}

fn list_json(i: &perfdata::BpfProgInfo) -> serde_json::Value {
    let stats = i.run_cnt != 0 || i.run_time_ns != 0;
    serde_json::json!({
        "id": i.id,
        "type": type_name(i.prog_type),
        "tag": i.tag_hex(),
        "name": full_name(i),
        "jited_size": i.jited_prog_len,
        "xlated_size": i.xlated_prog_len,
        "subprogs": i.nr_jited_ksyms,
        "loaded_at": loaded_at(i.load_time),
        "load_time_ns": i.load_time,
        "uid": i.created_by_uid,
        "btf_id": i.btf_id,
        "nr_map_ids": i.nr_map_ids,
        "run_cnt": stats.then_some(i.run_cnt),
        "run_time_ns": stats.then_some(i.run_time_ns),
    })
}

fn show(id: u32, xlated: bool, jited: bool, linum: bool) -> Result<()> {
    let live = sys::fetch_prog(id, Capture::Full).with_context(|| format!("BPF program {id}"))?;
    for w in &live.warnings {
        eprintln!("bpfprof: warning: BPF program {id}: {w}");
    }
    let prog = Program::new(live.info, live.btf.as_deref());
    for w in prog.warnings() {
        eprintln!("bpfprof: warning: {w}");
    }
    let i = prog.info();
    println!(
        "{}: {}  name {}  tag {}  btf_id {}",
        i.id,
        type_name(i.prog_type),
        prog.btf_func_name(0).unwrap_or(&i.name),
        i.tag_hex(),
        i.btf_id
    );
    println!(
        "\tloaded_at {}  uid {}  xlated {}B  jited {}B  maps {:?}",
        loaded_at(i.load_time),
        i.created_by_uid,
        i.xlated_prog_len,
        i.jited_prog_len,
        i.map_ids
    );
    if i.run_cnt != 0 || i.run_time_ns != 0 {
        println!("\trun_cnt {}  run_time_ns {}", i.run_cnt, i.run_time_ns);
    }

    // Source files and line_info counts per sub-program.
    let mut files: Vec<BTreeMap<&str, usize>> = vec![BTreeMap::new(); prog.subprogs().len()];
    for (li, line) in i.line_info.iter().zip(prog.source_lines()) {
        if let Some(f) = prog
            .subprog_of_xlated(li.insn_off)
            .and_then(|s| files.get_mut(s))
        {
            *f.entry(line.file.as_str()).or_default() += 1;
        }
    }
    println!("sub-programs:");
    for s in prog.subprogs() {
        let src: Vec<String> = files[s.index]
            .iter()
            .map(|(f, n)| format!("{f} ({n} lines)"))
            .collect();
        println!(
            "  {:>2}  {:#018x}  {:>6}  {:<20}  {}  {}",
            s.index,
            s.addr,
            s.len,
            s.func_name,
            prog.kernel_ksym_name(s.index).unwrap_or_default(),
            if src.is_empty() {
                "(no source lines)".to_string()
            } else {
                src.join(", ")
            }
        );
    }

    // Both listings name call targets from the running kernel's symbols,
    // as bpftool does (without them calls print as bare addresses).
    let kallsyms = (xlated || jited).then(|| Kallsyms::load().ok()).flatten();
    if xlated {
        println!();
        print!("{}", listing(&prog, kallsyms.as_ref(), linum));
    }
    if jited {
        let arch = Arch::host().context("no disassembler for this machine's architecture")?;
        for s in prog.subprogs() {
            println!();
            match prog.func_signature(s.index) {
                Some(sig) => println!("{sig}:"),
                None => println!("{}:", s.ksym_name),
            }
            let Some(code) = prog.jited_bytes(s.index) else {
                println!("\t(machine code not available)");
                continue;
            };
            let table = prog.jit_lines(s.index);
            for insn in disassemble(arch, code, s.addr, Syntax::Att) {
                for l in table.iter().filter(|l| l.offset == insn.offset) {
                    let line = &prog.source_lines()[l.line];
                    if linum {
                        println!(
                            "; {} [file:{} line_num:{} line_col:{}]",
                            line.text.trim_start(),
                            line.file,
                            line.line,
                            line.column
                        );
                    } else {
                        println!("; {}", line.text.trim_start());
                    }
                }
                match insn
                    .call_target
                    .and_then(|t| callee_name(&prog, kallsyms.as_ref(), t))
                {
                    Some(name) => println!("{:>4x}:\t{} <{name}>", insn.offset, insn.text),
                    None => println!("{:>4x}:\t{}", insn.offset, insn.text),
                }
            }
        }
    }
    Ok(())
}

/// What a JIT call at `target` calls: one of the program's own
/// sub-programs by its BTF function name (kallsyms only has the
/// `bpf_prog_<tag>_<name>` form), else the kernel symbol starting there
/// (a helper, a map operation, a kfunc, another program).
fn callee_name(prog: &Program, kallsyms: Option<&Kallsyms>, target: u64) -> Option<String> {
    if let Some(s) = prog.subprogs().iter().find(|s| s.addr == target) {
        if let Some(name) = prog.btf_func_name(s.index) {
            return Some(name.to_string());
        }
    }
    kallsyms?.name_at(target).map(str::to_string)
}
