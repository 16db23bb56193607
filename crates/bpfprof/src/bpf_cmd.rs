//! `bpfprof bpf`: the loaded BPF programs, maps and links, as the kernel
//! describes them.
//!
//! `bpf list` is a table like `bpftool prog show` (or JSON); `bpf show`
//! takes a program as bpftool does (`ID`, `name NAME`, `tag TAG`, `pinned
//! PATH`) and shows its sub-programs with their addresses, names and
//! source files, and optionally its bytecode and machine code with source
//! lines. `bpf map` and `bpf link` list and show maps and links.

mod columns;
mod link_cmd;
mod map_cmd;
mod prog_list;
mod select;

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use bpfinfo::sys::{self, Capture};
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
    /// List loaded BPF programs: id, type, tag, name, sizes, memlock,
    /// sub-programs, maps, GPL, BTF, load time, owner, owning processes and
    /// (when statistics are on) run count and time.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show programs: their sub-programs and source files, and optionally
    /// their bytecode and machine code. Programs are named as bpftool names
    /// them: `ID`, `id ID`, `name NAME`, `tag TAG` or `pinned PATH`; every
    /// match is shown.
    Show {
        /// `ID` (from `bpfprof bpf list`), `id ID`, `name NAME`, `tag TAG`
        /// or `pinned PATH`.
        #[arg(required = true, num_args = 1..=2, value_name = "PROG")]
        prog: Vec<String>,
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
    /// BPF maps: `bpf map list`, `bpf map show ID`.
    Map {
        #[command(subcommand)]
        command: map_cmd::MapCommand,
    },
    /// BPF links: `bpf link list`, `bpf link show ID`.
    Link {
        #[command(subcommand)]
        command: link_cmd::LinkCommand,
    },
}

/// Run `bpfprof bpf ...`.
pub fn run(args: &BpfArgs) -> Result<()> {
    match &args.command {
        BpfCommand::List { json } => prog_list::list(*json),
        BpfCommand::Show {
            prog,
            xlated,
            jited,
            linum,
        } => {
            let sel = select::parse(prog, &["name", "tag", "pinned"], "bpf show")?;
            for (n, id) in select::prog_ids(&sel)?.into_iter().enumerate() {
                if n > 0 {
                    println!();
                }
                show(id, *xlated, *jited, *linum)?;
            }
            Ok(())
        }
        BpfCommand::Map { command } => map_cmd::run(command),
        BpfCommand::Link { command } => link_cmd::run(command),
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

fn show(id: u32, xlated: bool, jited: bool, linum: bool) -> Result<()> {
    let live = match sys::fetch_prog(id, Capture::Full) {
        Ok(l) => l,
        // The id names no program: never loaded, or unloaded since.
        Err(bpfinfo::Error::Gone { .. }) => {
            anyhow::bail!("no BPF program with id {id} is loaded (see `bpfprof bpf list`)")
        }
        // The error names the program already.
        Err(e @ (bpfinfo::Error::NotJited { .. } | bpfinfo::Error::AddressesHidden { .. })) => {
            return Err(e.into())
        }
        Err(e) => return Err(e).with_context(|| format!("BPF program {id}")),
    };
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
    // What bpftool prints too, and where the program is attached: what
    // runs it, next to what it costs.
    let meta = sys::prog_meta_snapshot()
        .ok()
        .and_then(|mut m| m.remove(&id))
        .unwrap_or_default();
    println!(
        "\tmemlock {}  gpl {}  pids {}",
        sys::prog_memlock(id).map_or("-".into(), |m| format!("{m}B")),
        if i.gpl_compatible { "yes" } else { "no" },
        columns::owners(&meta.owners)
    );
    for a in &meta.attach {
        match a.link_id {
            Some(l) => println!("\tattached: {} {} (link {l})", a.kind, a.target),
            None => println!("\tattached: {} {}", a.kind, a.target),
        }
    }
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
            .map(|(f, n)| format!("{f} ({})", columns::plural(*n, "line", "lines")))
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
