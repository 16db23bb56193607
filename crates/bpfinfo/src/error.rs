//! The error type of everything that talks to the kernel.

/// What can go wrong asking the kernel about BPF programs, or loading and
/// running the generated test programs.
///
/// Each variant says what to do about it. One program failing never stops a
/// walk over the others (see [`crate::sys::walk_progs`]).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The program was unloaded between listing its id and fetching it.
    #[error("BPF program {id} is gone (unloaded between listing and fetch)")]
    Gone {
        /// The program id that no longer exists.
        id: u32,
    },
    /// The caller lacks the capabilities for `op`.
    #[error("{op}: permission denied: run as root or grant CAP_BPF and CAP_PERFMON (CAP_SYS_ADMIN on older kernels){hint}")]
    Permission {
        /// The bpf(2) command or file that was refused.
        op: &'static str,
        /// Extra context, e.g. the value of `kernel.unprivileged_bpf_disabled`.
        hint: String,
    },
    /// The program runs in the interpreter: it has no machine code or
    /// addresses to profile.
    #[error("BPF program {id} is not JIT-compiled, so it has no machine code or addresses; set net.core.bpf_jit_enable=1 and reload it")]
    NotJited {
        /// The program id.
        id: u32,
    },
    /// The kernel zeroed addresses and the JIT image because of
    /// `kernel.kptr_restrict` (no `bpf_dump_raw_ok()`).
    #[error(
        "BPF program {id}: kernel.kptr_restrict hides BPF addresses; set it to 0 or run as root"
    )]
    AddressesHidden {
        /// The program id.
        id: u32,
    },
    /// A system call failed in a way not covered above.
    #[error("{op} failed: {}", std::io::Error::from_raw_os_error(*errno))]
    Sys {
        /// The bpf(2) command or other call, e.g. `bpf(BPF_OBJ_GET_INFO_BY_FD)`.
        op: &'static str,
        /// The raw errno.
        errno: i32,
    },
    /// The verifier (or BTF checker) refused a generated program.
    #[error("{what} refused by the kernel: {}\n{log}", std::io::Error::from_raw_os_error(*errno))]
    Rejected {
        /// `BPF_PROG_LOAD` or `BPF_BTF_LOAD` and the program name.
        what: String,
        /// The raw errno.
        errno: i32,
        /// The tail of the verifier log.
        log: String,
    },
    /// A file under /sys or /proc could not be read. The OS error is the
    /// source, not part of the message: anyhow's `{:#}` prints the chain,
    /// and saying it in both printed it twice.
    #[error("{path}")]
    Io {
        /// The path that failed.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The request does not make sense for this program or machine.
    #[error("{0}")]
    Unsupported(String),
}

impl Error {
    /// The errno behind this error, if it came from a system call.
    pub fn errno(&self) -> Option<i32> {
        match self {
            Error::Sys { errno, .. } | Error::Rejected { errno, .. } => Some(*errno),
            Error::Gone { .. } => Some(libc::ENOENT),
            Error::Permission { .. } => Some(libc::EPERM),
            Error::Io { source, .. } => source.raw_os_error(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Error;

    /// Under anyhow's `{:#}` (how the binary prints errors) the path and
    /// the OS error each appear once; `{:?}` keeps the cause too.
    #[test]
    fn an_io_error_prints_each_cause_once() {
        let path = "/sys/kernel/tracing/events/no/such/id";
        let e = Error::Io {
            path: path.into(),
            source: std::fs::read_to_string(path).unwrap_err(),
        };
        let os = std::io::Error::from_raw_os_error(libc::ENOENT).to_string();
        assert_eq!(e.errno(), Some(libc::ENOENT));
        let e = anyhow::Error::new(e).context("attaching the test program");
        let all = format!("{e:#}");
        assert_eq!(all.matches(&os).count(), 1, "{all}");
        assert_eq!(all.matches(path).count(), 1, "{all}");
        assert_eq!(all, format!("attaching the test program: {path}: {os}"));
        assert!(format!("{e:?}").contains(&os));
    }
}
