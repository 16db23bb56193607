use std::path::PathBuf;

/// Everything that can go wrong reading or writing a perf.data file.
///
/// Parse errors carry the byte offset in the file (or in the decompressed
/// data stream, which is said) and what was expected there, so that a user
/// can look at the bytes with `xxd -s OFFSET`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The OS error is the source, not part of the text: callers print the
    /// chain (`{:#}` in anyhow), and saying it in both printed it twice.
    #[error("{}", path.display())]
    Io {
        /// The file read or written.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The bytes are not what the format says should be there.
    #[error("{}offset {offset:#x}: {what}", path_prefix(.path))]
    Parse {
        /// The file, once known (see [`Error::with_path`]).
        path: Option<PathBuf>,
        /// Where in the file (or the decompressed stream) it went wrong.
        offset: u64,
        /// What was expected there and what was found.
        what: String,
    },
    /// The file does not start with perf.data's magic.
    #[error("{}not a perf.data file (magic {magic:02x?}, expected \"PERFILE2\")", path_prefix(.path))]
    NotPerfData {
        /// The file, once known.
        path: Option<PathBuf>,
        /// Its first bytes, as found.
        magic: Vec<u8>,
    },
    /// Something this crate does not read or write: a big-endian or
    /// pipe-mode file, events of different `sample_id` layouts in one file,
    /// a record too big for perf's 64 KiB.
    #[error("{}{what}", path_prefix(.path))]
    Unsupported {
        /// The file, once known.
        path: Option<PathBuf>,
        /// What is not supported, and what to do instead.
        what: String,
    },
}

fn path_prefix(path: &Option<PathBuf>) -> String {
    match path {
        Some(p) => format!("{}: ", p.display()),
        None => String::new(),
    }
}

impl Error {
    pub(crate) fn parse(offset: u64, what: impl Into<String>) -> Self {
        Error::Parse {
            path: None,
            offset,
            what: what.into(),
        }
    }

    /// Attach the file name to an error raised while parsing bytes.
    pub fn with_path(self, p: &std::path::Path) -> Self {
        match self {
            Error::Parse {
                path: None,
                offset,
                what,
            } => Error::Parse {
                path: Some(p.to_path_buf()),
                offset,
                what,
            },
            Error::NotPerfData { path: None, magic } => Error::NotPerfData {
                path: Some(p.to_path_buf()),
                magic,
            },
            Error::Unsupported { path: None, what } => Error::Unsupported {
                path: Some(p.to_path_buf()),
                what,
            },
            other => other,
        }
    }
}

/// A result of this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
