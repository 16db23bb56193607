//! Test BPF programs generated in Rust, with no compiler: bytecode, a
//! hand-built BTF, func_info and line_info with known source text, a
//! bpf-to-bpf call and a bounded loop in the callee (so samples land in a
//! sub-program).
//!
//! ```no_run
//! use bpfinfo::testprog::TestProg;
//! let prog = TestProg::builder().name("bpfprof_busy").loop_iters(2000).build()?;
//! let loaded = prog.load()?;
//! let _attached = loaded.attach_tracepoint("syscalls", "sys_enter_getpid")?;
//! // every getpid() now runs the program
//! # Ok::<(), bpfinfo::Error>(())
//! ```

mod source;
#[cfg(target_os = "linux")]
mod tracefs;

pub use source::ExpectedLine;

#[cfg(target_os = "linux")]
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

#[cfg(target_os = "linux")]
pub use crate::sys::TestRunResult;
#[cfg(target_os = "linux")]
use crate::sys::{self, Capture, LiveProg};
use crate::Error;
use perfdata::{FuncInfo, LineInfo};

fn le32(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().expect("4 bytes"))
}

/// The program type to load as; it decides how the program can be run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TestProgKind {
    /// BPF_PROG_TYPE_TRACEPOINT: runs when attached with
    /// [`LoadedProg::attach_tracepoint`].
    #[default]
    Tracepoint,
    /// BPF_PROG_TYPE_SOCKET_FILTER: runs with [`LoadedProg::test_run`].
    SocketFilter,
}

impl TestProgKind {
    fn prog_type(self) -> u32 {
        match self {
            TestProgKind::Tracepoint => 5,
            TestProgKind::SocketFilter => 1,
        }
    }
}

/// The verifier walks every iteration of the loop; this keeps it well under
/// its one-million-instruction budget.
pub const MAX_LOOP_ITERS: u32 = 100_000;

/// Options for a [`TestProg`].
#[derive(Debug, Clone)]
pub struct TestProgBuilder {
    name: String,
    loop_iters: u32,
    seed: u32,
    kind: TestProgKind,
}

impl TestProgBuilder {
    /// The main function's name (a C identifier); the kernel keeps the first
    /// 15 bytes as the program name. Default `bpfprof_busy`.
    pub fn name(mut self, name: &str) -> Self {
        self.name = name.to_string();
        self
    }

    /// How many times the sub-program's loop runs per call (at most
    /// [`MAX_LOOP_ITERS`]); larger loops are slower to load. Default 2000.
    pub fn loop_iters(mut self, n: u32) -> Self {
        self.loop_iters = n;
        self
    }

    /// A number folded into the code (the loop's start value), so programs
    /// with the same name still differ in tag. Default 0.
    pub fn seed(mut self, seed: u32) -> Self {
        self.seed = seed;
        self
    }

    /// The program type. Default [`TestProgKind::Tracepoint`].
    pub fn kind(mut self, kind: TestProgKind) -> Self {
        self.kind = kind;
        self
    }

    /// Generate the program (nothing is loaded yet).
    pub fn build(self) -> Result<TestProg, Error> {
        let ident = !self.name.is_empty()
            && self.name.len() <= 64
            && !self.name.starts_with(|c: char| c.is_ascii_digit())
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ident || self.name == source::SUBPROG {
            return Err(Error::Unsupported(format!(
                "test program name {:?} must be a C identifier of at most 64 bytes, not {:?}",
                self.name,
                source::SUBPROG
            )));
        }
        if self.loop_iters > MAX_LOOP_ITERS || self.loop_iters > i32::MAX as u32 {
            return Err(Error::Unsupported(format!(
                "loop_iters {} is above {MAX_LOOP_ITERS}, past what the verifier walks quickly",
                self.loop_iters
            )));
        }
        let generated = source::generate(&self.name, self.loop_iters, self.seed);
        Ok(TestProg {
            name: self.name,
            kind: self.kind,
            generated,
        })
    }
}

/// A generated program, ready to load.
pub struct TestProg {
    name: String,
    kind: TestProgKind,
    generated: source::Generated,
}

impl std::fmt::Debug for TestProg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestProg")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl TestProg {
    /// Start building a program.
    pub fn builder() -> TestProgBuilder {
        TestProgBuilder {
            name: "bpfprof_busy".to_string(),
            loop_iters: 2000,
            seed: 0,
            kind: TestProgKind::default(),
        }
    }

    /// The main function's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The bytecode (8-byte instructions, before the verifier rewrites it).
    pub fn insns(&self) -> &[u8] {
        &self.generated.insns
    }

    /// The raw BTF blob loaded with the program.
    pub fn btf(&self) -> &[u8] {
        &self.generated.btf
    }

    /// The whole source file the line texts come from.
    pub fn source_text(&self) -> &str {
        &self.generated.source
    }

    /// The file name recorded in line_info.
    pub fn file_name(&self) -> &str {
        &self.generated.file
    }

    /// The line_info entries, in instruction order.
    pub fn expected_source_lines(&self) -> &[ExpectedLine] {
        &self.generated.lines
    }

    /// The `bpf_func_info` records loaded with the program.
    pub fn func_info(&self) -> Vec<FuncInfo> {
        self.generated
            .func_info
            .chunks_exact(8)
            .map(|r| FuncInfo {
                insn_off: le32(r, 0),
                type_id: le32(r, 4),
            })
            .collect()
    }

    /// The `bpf_line_info` records loaded with the program.
    pub fn line_info(&self) -> Vec<LineInfo> {
        self.generated
            .line_info
            .chunks_exact(16)
            .map(|r| LineInfo {
                insn_off: le32(r, 0),
                file_name_off: le32(r, 4),
                line_off: le32(r, 8),
                line_col: le32(r, 12),
            })
            .collect()
    }

    /// The BTF FUNC names of the sub-programs, in order (main first).
    pub fn expected_func_names(&self) -> &[String] {
        &self.generated.funcs
    }

    /// Load BTF and program. Fails with the verifier log in
    /// [`Error::Rejected`], or [`Error::Permission`].
    #[cfg(target_os = "linux")]
    pub fn load(&self) -> Result<LoadedProg, Error> {
        let g = &self.generated;
        // The program holds its own reference to the BTF object, so the
        // BTF descriptor can be closed right after the load.
        let btf = sys::load::btf_load(&g.btf, &self.name)?;
        let fd = sys::load::prog_load(&sys::load::ProgLoad {
            prog_type: self.kind.prog_type(),
            insns: &g.insns,
            name: &self.name,
            btf_fd: btf.as_fd(),
            func_info: &g.func_info,
            line_info: &g.line_info,
        })?;
        let id = sys::fetch::prog_scalars(fd.as_fd())?.id;
        Ok(LoadedProg {
            fd,
            id,
            kind: self.kind,
        })
    }
}

/// A loaded test program. Dropping it closes its descriptor, which unloads
/// the program unless something else (an attachment) still holds it.
#[cfg(target_os = "linux")]
#[derive(Debug)]
pub struct LoadedProg {
    fd: OwnedFd,
    id: u32,
    kind: TestProgKind,
}

#[cfg(target_os = "linux")]
impl LoadedProg {
    /// The kernel's program id.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The program descriptor.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Everything about the program, as [`sys::fetch_prog`] with
    /// [`Capture::Full`] gives it.
    pub fn info(&self) -> Result<LiveProg, Error> {
        sys::fetch_prog_fd(self.fd.as_fd(), Capture::Full)
    }

    /// Attach to tracepoint `category:name` (e.g. `syscalls`,
    /// `sys_enter_getpid`), mounting tracefs if needed. The program runs on
    /// every CPU until the [`Attachment`] is dropped.
    pub fn attach_tracepoint(&self, category: &str, name: &str) -> Result<Attachment, Error> {
        if self.kind != TestProgKind::Tracepoint {
            return Err(Error::Unsupported(format!(
                "program {} is a {:?} program; build it with TestProgKind::Tracepoint to attach it",
                self.id, self.kind
            )));
        }
        let tp = tracefs::tracepoint_id(category, name)?;
        // A tracepoint's BPF programs live in one array shared by all CPUs
        // (trace_call_bpf runs it wherever the tracepoint fires), and the
        // same program cannot be in it twice: one event, on CPU 0, is how
        // libbpf attaches too.
        let event = sys::perf::attach_tracepoint(tp, 0, self.fd.as_fd())?;
        Ok(Attachment {
            _events: vec![event],
        })
    }

    /// Run the program `repeat` times on a 64-byte packet with
    /// BPF_PROG_TEST_RUN (needs [`TestProgKind::SocketFilter`]).
    pub fn test_run(&self, repeat: u32) -> Result<TestRunResult, Error> {
        if self.kind != TestProgKind::SocketFilter {
            return Err(Error::Unsupported(format!(
                "program {} is a {:?} program; BPF_PROG_TEST_RUN needs TestProgKind::SocketFilter",
                self.id, self.kind
            )));
        }
        let mut packet = [0u8; 64];
        packet[12..14].copy_from_slice(&0x0800u16.to_be_bytes()); // IPv4 ethertype
        sys::load::test_run(self.fd.as_fd(), &packet, repeat)
    }
}

/// Call getpid(2) `times` times (not through a libc cache), to run programs
/// attached to `syscalls:sys_enter_getpid`.
#[cfg(target_os = "linux")]
pub fn call_getpid(times: u64) {
    sys::getpid_syscall(times)
}

/// A program attached to a tracepoint; dropping it detaches.
#[cfg(target_os = "linux")]
#[derive(Debug)]
pub struct Attachment {
    _events: Vec<OwnedFd>,
}
