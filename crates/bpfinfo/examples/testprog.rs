//! Load the generated test program, attach it to `sys_enter_getpid`, call
//! getpid a few times and print what the kernel says about it: sub-programs,
//! the xlated listing and the machine code with source lines.
//!
//! Run as root: `cargo run -p bpfinfo --example testprog`

use bpfinfo::testprog::TestProg;
use bpfinfo::{disassemble, listing, Arch, Kallsyms, Program, Syntax};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let loaded = TestProg::builder().name("bpfprof_busy").build()?.load()?;
    let attached = loaded.attach_tracepoint("syscalls", "sys_enter_getpid")?;
    let _stats = bpfinfo::sys::enable_stats()?;
    bpfinfo::sys::getpid_syscall(10);
    drop(attached);
    let live = loaded.info()?;
    let prog = Program::new(live.info, live.btf.as_deref());
    println!("program {} run_cnt {}", prog.info().id, prog.info().run_cnt);
    for w in prog.warnings() {
        println!("warning: {w}");
    }
    for s in prog.subprogs() {
        println!(
            "sub {} {:#x} len {} {} (kernel: {})",
            s.index,
            s.addr,
            s.len,
            s.ksym_name,
            prog.kernel_ksym_name(s.index).unwrap_or_default()
        );
    }
    let kallsyms = Kallsyms::load().ok();
    print!("{}", listing(&prog, kallsyms.as_ref(), true));
    for s in prog.subprogs() {
        println!("{}:", s.ksym_name);
        let code = prog.jited_bytes(s.index).unwrap_or_default();
        for i in disassemble(
            Arch::host().unwrap_or(Arch::X86_64),
            code,
            s.addr,
            Syntax::Att,
        ) {
            if let Some(l) = prog
                .jit_lines(s.index)
                .iter()
                .find(|l| l.offset == i.offset)
            {
                println!("; {}", prog.source_lines()[l.line].text.trim());
            }
            println!("{:4x}: {}", i.offset, i.text);
        }
    }
    Ok(())
}
