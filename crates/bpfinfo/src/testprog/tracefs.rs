//! Finding tracepoint ids in tracefs, mounting it when it is missing.

use std::path::Path;

use crate::sys::perf::mount_tracefs;
use crate::Error;

const ROOTS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// The id of tracepoint `category:name`, from `events/<category>/<name>/id`.
pub(super) fn tracepoint_id(category: &str, name: &str) -> Result<u64, Error> {
    let read = || {
        ROOTS.iter().find_map(|root| {
            let p = format!("{root}/events/{category}/{name}/id");
            std::fs::read_to_string(&p).ok().map(|s| (p, s))
        })
    };
    let found = match read() {
        Some(f) => f,
        None => {
            if !Path::new("/sys/kernel/tracing/events").exists() {
                mount_tracefs()?;
            }
            read().ok_or_else(|| Error::Io {
                path: format!("/sys/kernel/tracing/events/{category}/{name}/id"),
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "no such tracepoint (is tracefs mounted and the event compiled in?)",
                ),
            })?
        }
    };
    found.1.trim().parse().map_err(|_| Error::Io {
        path: found.0,
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, "not a number"),
    })
}
