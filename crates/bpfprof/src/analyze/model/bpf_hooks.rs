//! The kernel code that runs a BPF program because it is attached: one
//! table for every attach type, read by the cost pass (`bpf_cost.rs`).
//!
//! A sample whose call chain, walked from the leaf outwards, meets one of
//! these frames before any BPF program frame is spent in a hook. The
//! frame's role says what the hook tells about where the program is
//! attached:
//! - a *site* names the attach point (`perf_syscall_enter`: a syscall
//!   entry tracepoint; `__bpf_trace_sched_switch`: the raw tracepoint
//!   `sched_switch`; `bpf_trampoline_<key>`: an fentry/fexit target);
//! - a *dispatch* frame is generic plumbing (`trace_call_bpf`,
//!   `bpf_trace_run2`) and the site is further out — or, for kprobes, the
//!   next frame is the probed function itself;
//! - the *syscall slow path* (`syscall_trace_enter`, `syscall_exit_work`)
//!   is taken by every syscall of every task while any syscall tracepoint
//!   is enabled, so it is charged to the programs on syscall tracepoints;
//! - *not BPF*: code in the same paths that runs for other reasons
//!   (seccomp, ptrace, audit), which stops the walk;
//! - a *trap* entry (int3, the debug single-step) whose handler runs with
//!   interrupts off: cpu-clock cannot fire there, so its samples land
//!   where interrupts come back on (`irqentry_exit_to_user_mode`) with
//!   nothing of the handler on the stack. Such a sample is the hook's only
//!   when the trapping user address is the attach type's own — the
//!   `[uprobes]` out-of-line page, or an address whose other samples went
//!   through the uprobe handlers — and stays where it is otherwise (a
//!   debugger's breakpoint).
//!
//! Rows for attach types this machine's kernel cannot run (fentry/fexit,
//! kprobes, XDP and tc dispatch, cgroup hooks, struct_ops) follow the
//! kernel sources (kernel/trace/bpf_trace.c, kernel/bpf/trampoline.c,
//! kernel/trace/trace_kprobe.c, trace_uprobe.c, net/core/dev.c,
//! kernel/bpf/cgroup.c); they are checked against real call chains only
//! where a kernel runs them.

/// How a program is attached, as far as its hook code tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Attach {
    /// A tracepoint through a perf event (`PERF_EVENT_IOC_SET_BPF` or a
    /// perf_event link): `perf_trace_<class>` → `trace_call_bpf`.
    Tracepoint,
    /// A `syscalls:sys_enter_*`/`sys_exit_*` tracepoint through a perf
    /// event: `perf_syscall_enter` → `perf_call_bpf_enter` → `trace_call_bpf`.
    SyscallTracepoint,
    /// A raw or BTF tracepoint: `__bpf_trace_<class>` → `bpf_trace_run<N>`.
    RawTracepoint,
    /// fentry/fexit/fmod_ret/LSM: the trampoline image and
    /// `__bpf_prog_enter*`/`__bpf_prog_exit*` around the program.
    Trampoline,
    /// kprobe/kretprobe: the kprobe handler → `kprobe_perf_func` →
    /// `trace_call_bpf`; the site is the probed function.
    Kprobe,
    /// kprobe.multi (fprobe): `kprobe_multi_link_handler`.
    KprobeMulti,
    /// uprobe/uretprobe: the breakpoint trap → `uprobe_dispatcher`.
    Uprobe,
    /// XDP: the driver's or the generic XDP path and the dispatcher.
    Xdp,
    /// tc/tcx classifiers on ingress or egress.
    Tc,
    /// cgroup hooks: `__cgroup_bpf_run_filter_<hook>`.
    Cgroup,
    /// struct_ops: called through its trampoline by the subsystem.
    StructOps,
    /// Programs run by `BPF_PROG_TEST_RUN`: `bpf_prog_test_run_<kind>`.
    TestRun,
    /// perf_event programs: `bpf_overflow_handler`.
    PerfEvent,
}

impl Attach {
    /// The word reports use.
    pub fn name(self) -> &'static str {
        match self {
            Attach::Tracepoint => "tracepoint",
            Attach::SyscallTracepoint => "syscall tracepoint",
            Attach::RawTracepoint => "raw tracepoint",
            Attach::Trampoline => "trampoline",
            Attach::Kprobe => "kprobe",
            Attach::KprobeMulti => "kprobe.multi",
            Attach::Uprobe => "uprobe",
            Attach::Xdp => "xdp",
            Attach::Tc => "tc",
            Attach::Cgroup => "cgroup",
            Attach::StructOps => "struct_ops",
            Attach::TestRun => "test run",
            Attach::PerfEvent => "perf_event",
        }
    }
}

/// What a hook frame says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Generic plumbing of an attach type; the site is further out.
    Dispatch(Attach),
    /// Plumbing whose caller is the attach point itself (kprobes: the
    /// probed function).
    DispatchFromCaller(Attach),
    /// Names the attach point: by the text after the table's prefix, or
    /// by a fixed word.
    Site(Attach, Option<&'static str>),
    /// The syscall slow path taken while a syscall tracepoint is enabled.
    SyscallSlowPath,
    /// Code on the same paths that runs for reasons other than BPF.
    NotBpf,
    /// A trap from user space whose handler runs with interrupts off (see
    /// the module's doc): the hook's if the user address is this attach
    /// type's.
    Trap(Attach),
}

struct HookFrame {
    /// A function name, or a prefix of names when it ends with `*`.
    name: &'static str,
    role: Role,
}

const fn f(name: &'static str, role: Role) -> HookFrame {
    HookFrame { name, role }
}

use Attach::*;
use Role::*;

/// An exact name wins over any prefix, and prefixes are tried in table
/// order: `perf_trace_buf_alloc` is plumbing though it starts like the
/// site prefix `perf_trace_`, which comes last.
static HOOK_FRAMES: &[HookFrame] = &[
    // Perf-event attachments (tracepoints, kprobes, uprobes) all run
    // programs through trace_call_bpf, then deliver the event to perf.
    f("trace_call_bpf", Dispatch(Tracepoint)),
    f("perf_trace_run_bpf_submit", Dispatch(Tracepoint)),
    f("perf_trace_buf_alloc", Dispatch(Tracepoint)),
    f("perf_trace_buf_update", Dispatch(Tracepoint)),
    f("perf_tp_event", Dispatch(Tracepoint)),
    f("perf_tp_event_match", Dispatch(Tracepoint)),
    f("perf_swevent_event", Dispatch(Tracepoint)),
    f("perf_swevent_get_recursion_context", Dispatch(Tracepoint)),
    f("perf_swevent_put_recursion_context", Dispatch(Tracepoint)),
    f("perf_call_bpf_enter", Dispatch(SyscallTracepoint)),
    f("perf_call_bpf_exit", Dispatch(SyscallTracepoint)),
    f(
        "perf_syscall_enter",
        Site(SyscallTracepoint, Some("sys_enter")),
    ),
    f(
        "perf_syscall_exit",
        Site(SyscallTracepoint, Some("sys_exit")),
    ),
    // Raw and BTF tracepoints.
    f("__bpf_trace_run", Dispatch(RawTracepoint)),
    // Trampolines (fentry/fexit/LSM): the image is a [bpf] symbol.
    f("bpf_trampoline_*", Site(Trampoline, None)),
    f("__bpf_prog_enter*", Dispatch(Trampoline)),
    f("__bpf_prog_exit*", Dispatch(Trampoline)),
    f("__bpf_tramp_enter", Dispatch(Trampoline)),
    f("__bpf_tramp_exit", Dispatch(Trampoline)),
    // kprobes, through ftrace or int3.
    f("kprobe_perf_func", DispatchFromCaller(Kprobe)),
    f("kretprobe_perf_func", DispatchFromCaller(Kprobe)),
    f("kprobe_dispatcher", DispatchFromCaller(Kprobe)),
    f("kretprobe_dispatcher", DispatchFromCaller(Kprobe)),
    f("kprobe_ftrace_handler", DispatchFromCaller(Kprobe)),
    f("pre_handler_kretprobe", DispatchFromCaller(Kprobe)),
    f("kretprobe_trampoline_handler", DispatchFromCaller(Kprobe)),
    f("__kretprobe_trampoline_handler", DispatchFromCaller(Kprobe)),
    f("kprobe_int3_handler", DispatchFromCaller(Kprobe)),
    f("optimized_callback", DispatchFromCaller(Kprobe)),
    f("aggr_pre_handler", DispatchFromCaller(Kprobe)),
    f("kprobe_multi_link_handler", DispatchFromCaller(KprobeMulti)),
    f(
        "kprobe_multi_link_exit_handler",
        DispatchFromCaller(KprobeMulti),
    ),
    f(
        "kprobe_multi_link_prog_run",
        DispatchFromCaller(KprobeMulti),
    ),
    f("fprobe_handler", DispatchFromCaller(KprobeMulti)),
    f("fprobe_entry", DispatchFromCaller(KprobeMulti)),
    f("fprobe_return", DispatchFromCaller(KprobeMulti)),
    // uprobes: the trap, then the handler chain.
    f("uprobe_dispatcher", Site(Uprobe, Some("uprobe"))),
    f("uretprobe_dispatcher", Site(Uprobe, Some("uretprobe"))),
    f("__uprobe_perf_func", Dispatch(Uprobe)),
    f("uprobe_perf_func", Dispatch(Uprobe)),
    f("uretprobe_perf_func", Dispatch(Uprobe)),
    f(
        "uprobe_multi_link_handler",
        Site(Uprobe, Some("uprobe.multi")),
    ),
    f(
        "uprobe_multi_link_ret_handler",
        Site(Uprobe, Some("uprobe.multi")),
    ),
    f("uprobe_prog_run", Dispatch(Uprobe)),
    f("handler_chain", Dispatch(Uprobe)),
    f("handle_swbp", Site(Uprobe, Some("uprobe"))),
    f("handle_uretprobe_chain", Site(Uprobe, Some("uretprobe"))),
    f("uprobe_handle_trampoline", Site(Uprobe, Some("uretprobe"))),
    f("uprobe_notify_resume", Site(Uprobe, Some("uprobe"))),
    // The breakpoint and the single-step of the probed instruction's
    // out-of-line copy, entered from user space.
    f("asm_exc_int3", Trap(Uprobe)),
    f("exc_int3", Trap(Uprobe)),
    f("do_int3_user", Trap(Uprobe)),
    f("asm_exc_debug", Trap(Uprobe)),
    f("exc_debug_user", Trap(Uprobe)),
    f("noist_exc_debug", Trap(Uprobe)),
    // XDP: native (the driver calls the dispatcher) and generic.
    f("bpf_dispatcher_xdp*", Site(Xdp, Some("xdp"))),
    f("bpf_prog_run_generic_xdp", Site(Xdp, Some("xdp"))),
    f("netif_receive_generic_xdp", Site(Xdp, Some("xdp"))),
    f("do_xdp_generic", Site(Xdp, Some("xdp"))),
    f("veth_xdp_rcv_skb", Site(Xdp, Some("xdp"))),
    f("veth_xdp_rcv_one", Site(Xdp, Some("xdp"))),
    // tc and tcx.
    f("cls_bpf_classify", Dispatch(Tc)),
    f("tcf_classify", Dispatch(Tc)),
    f("tcx_run", Dispatch(Tc)),
    f("sch_handle_ingress", Site(Tc, Some("ingress"))),
    f("sch_handle_egress", Site(Tc, Some("egress"))),
    // cgroup hooks.
    f("bpf_prog_run_array_cg", Dispatch(Cgroup)),
    f("__cgroup_bpf_run_lsm_*", Site(Cgroup, None)),
    f("__cgroup_bpf_run_filter_*", Site(Cgroup, None)),
    // struct_ops programs are called through trampolines by the kernel
    // subsystem they implement.
    f("bpf_struct_ops_*", Dispatch(StructOps)),
    // BPF_PROG_TEST_RUN.
    f("bpf_prog_test_run", Dispatch(TestRun)),
    f("bpf_test_run", Dispatch(TestRun)),
    f("bpf_test_timer_*", Dispatch(TestRun)),
    f("bpf_prog_test_run_*", Site(TestRun, None)),
    // perf_event programs.
    f("bpf_overflow_handler", Site(PerfEvent, Some("perf_event"))),
    // The syscall slow path.
    f("syscall_trace_enter", SyscallSlowPath),
    f("syscall_exit_work", SyscallSlowPath),
    // Same paths, other reasons.
    f("__secure_computing", NotBpf),
    f("__seccomp_filter", NotBpf),
    f("ptrace_report_syscall*", NotBpf),
    f("__audit_*", NotBpf),
    f("audit_*", NotBpf),
    // Site prefixes last: they would match the plumbing above.
    f("__bpf_trace_*", Site(RawTracepoint, None)),
    f("bpf_trace_run*", Dispatch(RawTracepoint)),
    f("perf_trace_*", Site(Tracepoint, None)),
];

/// The attach point a hook frame names: attach type and discriminator
/// (tracepoint class, probed function, trampoline key, cgroup hook...).
pub type SiteKey = (Attach, String);

/// The role of a kernel function, by name; `None` for code that says
/// nothing about BPF. Compiler suffixes (`.isra.0`, `.constprop.0`,
/// `.cold`) are ignored.
pub fn role(name: &str) -> Option<(Role, &str)> {
    let base = name.split('.').next().unwrap_or(name);
    let exact = HOOK_FRAMES
        .iter()
        .find(|h| !h.name.ends_with('*') && h.name == base);
    let hit = exact.or_else(|| {
        HOOK_FRAMES.iter().find(|h| {
            h.name
                .strip_suffix('*')
                .is_some_and(|p| base.starts_with(p))
        })
    })?;
    let rest = match hit.name.strip_suffix('*') {
        Some(p) => &base[p.len()..],
        None => "",
    };
    Some((hit.role, rest))
}

/// The site a `Site` frame names.
pub fn site_of(attach: Attach, fixed: Option<&'static str>, rest: &str) -> SiteKey {
    (attach, fixed.unwrap_or(rest).to_string())
}

/// The name of the user mapping that holds uprobes' out-of-line copies
/// of probed instructions (and the uretprobe trampoline).
pub const UPROBES_PAGE: &str = "[uprobes]";

/// Whether programs at this site run on a syscall tracepoint, and so
/// share the cost of the syscall slow path.
pub fn is_syscall_site(k: &SiteKey) -> bool {
    k.0 == SyscallTracepoint
        || (matches!(k.0, Tracepoint | RawTracepoint)
            && matches!(k.1.as_str(), "sys_enter" | "sys_exit"))
}

/// Functions that read the clock for the kernel's run-time stats
/// (`bpf_stats_enabled`): `__bpf_prog_run` and the trampolines call
/// `sched_clock()` around every run.
pub fn is_stats_clock(name: &str) -> bool {
    let base = name.split('.').next().unwrap_or(name);
    matches!(
        base,
        "sched_clock"
            | "sched_clock_noinstr"
            | "native_sched_clock"
            | "local_clock"
            | "local_clock_noinstr"
            | "kvm_sched_clock_read"
            | "kvm_clock_read"
            | "kvm_clock_get_cycles"
            | "pvclock_clocksource_read"
            | "pvclock_clocksource_read_nowd"
            | "paravirt_sched_clock"
            | "read_tsc"
            | "bpf_prog_start_time"
            | "update_prog_stats"
    )
}

/// Whether a dispatch frame is the one that runs the program, so that a
/// clock read right under it is the stats' and not perf's own.
pub fn runs_program(name: &str) -> bool {
    let base = name.split('.').next().unwrap_or(name);
    matches!(
        base,
        "trace_call_bpf"
            | "__bpf_trace_run"
            | "bpf_test_run"
            | "bpf_prog_run_generic_xdp"
            | "cls_bpf_classify"
            | "tcx_run"
            | "bpf_prog_run_array_cg"
            | "kprobe_multi_link_prog_run"
            | "uprobe_prog_run"
    ) || base.starts_with("bpf_trace_run")
        || base.starts_with("__bpf_prog_enter")
        || base.starts_with("__bpf_prog_exit")
}

/// The site a program's recorded attachment stands for, so that hook
/// samples can be charged to programs that got no samples of their own.
/// `kind` and `target` are as the recorder stored them (bpftool's words).
pub fn site_of_attachment(kind: &str, target: &str) -> Option<SiteKey> {
    let name = |t: &str| t.rsplit(':').next().unwrap_or(t).to_string();
    match kind {
        "tracepoint" | "perf_event" | "tracepoint_perf" => {
            let tp = name(target);
            if tp.starts_with("sys_enter_") {
                Some((SyscallTracepoint, "sys_enter".into()))
            } else if tp.starts_with("sys_exit_") {
                Some((SyscallTracepoint, "sys_exit".into()))
            } else {
                Some((Tracepoint, tp))
            }
        }
        "raw_tracepoint" | "raw_tp" | "tp_btf" => Some((RawTracepoint, name(target))),
        "kprobe" | "kretprobe" => {
            let func = target.split('+').next().unwrap_or(target);
            Some((Kprobe, func.to_string()))
        }
        "uprobe" => Some((Uprobe, "uprobe".into())),
        "uretprobe" => Some((Uprobe, "uretprobe".into())),
        "xdp" => Some((Xdp, "xdp".into())),
        _ => None,
    }
}

/// The attach type hook code implies for a program type, when a site
/// must be guessed from the program alone (`bpf_prog_type` numbers).
pub fn attach_of_prog_type(prog_type: u32) -> Option<Attach> {
    Some(match prog_type {
        5 => Tracepoint,
        17 | 24 => RawTracepoint,
        26 | 29 => Trampoline,
        2 => Kprobe,
        6 => Xdp,
        3 | 4 => Tc,
        7 => PerfEvent,
        27 => StructOps,
        8 | 9 | 18 | 20 | 23 | 25 | 30 => Cgroup,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_names_win_over_prefixes() {
        assert_eq!(
            role("perf_trace_buf_alloc").map(|r| r.0),
            Some(Dispatch(Tracepoint))
        );
        assert_eq!(
            role("perf_trace_sched_switch"),
            Some((Site(Tracepoint, None), "sched_switch"))
        );
        assert_eq!(
            role("__bpf_trace_run").map(|r| r.0),
            Some(Dispatch(RawTracepoint))
        );
        assert_eq!(
            role("__bpf_trace_sys_enter"),
            Some((Site(RawTracepoint, None), "sys_enter"))
        );
        assert_eq!(
            role("bpf_trace_run2").map(|r| r.0),
            Some(Dispatch(RawTracepoint))
        );
        assert_eq!(
            role("bpf_prog_test_run").map(|r| r.0),
            Some(Dispatch(TestRun))
        );
        assert_eq!(
            role("bpf_prog_test_run_skb"),
            Some((Site(TestRun, None), "skb"))
        );
    }

    #[test]
    fn compiler_suffixes_are_ignored_and_others_say_nothing() {
        assert_eq!(
            role("syscall_exit_work.isra.0").map(|r| r.0),
            Some(SyscallSlowPath)
        );
        assert_eq!(role("do_syscall_64"), None);
        assert_eq!(role("htab_map_update_elem"), None);
        assert_eq!(role("exc_debug_user").map(|r| r.0), Some(Trap(Uprobe)));
        // Where the deferred samples land says nothing by itself.
        assert_eq!(role("irqentry_exit_to_user_mode"), None);
    }

    #[test]
    fn attachments_name_the_sites_their_hooks_do() {
        assert_eq!(
            site_of_attachment("tracepoint", "syscalls:sys_enter_getppid"),
            Some((SyscallTracepoint, "sys_enter".into()))
        );
        let perf = role("perf_syscall_enter").unwrap();
        let Site(a, fixed) = perf.0 else { panic!() };
        assert_eq!(
            site_of(a, fixed, perf.1),
            site_of_attachment("tracepoint", "syscalls:sys_enter_getppid").unwrap()
        );
        let raw = role("__bpf_trace_sys_enter").unwrap();
        let Site(a, fixed) = raw.0 else { panic!() };
        assert_eq!(
            Some(site_of(a, fixed, raw.1)),
            site_of_attachment("raw_tracepoint", "sys_enter")
        );
        assert!(is_syscall_site(&(RawTracepoint, "sys_enter".into())));
        assert!(!is_syscall_site(&(RawTracepoint, "sched_switch".into())));
    }
}
