//! The BPF side band: a thread watching its own BPF_EVENT-only dummy on
//! every CPU, woken at every record (watermark 1 byte), that reads a new
//! program's info the moment its load is reported, so that short-lived
//! programs still land in BPF_PROG_INFO/BPF_BTF. Nothing it sees is written
//! to the file: the stream's KSYMBOL/BPF_EVENT come from the tracking event.

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::thread::JoinHandle;

use bpfinfo::sys::Capture;
use perfdata::{bpf_event, record_type};

use super::bpf::{self, SharedBook};
use super::events::sideband_attr;
use super::ring::Ring;
use super::sys;

const SIDEBAND_PAGES: usize = 16;

pub struct Sideband {
    stop: OwnedFd,
    handle: JoinHandle<()>,
}

/// Open the side-band events on `cpus` and start the thread.
pub fn start(cpus: &[i32], book: SharedBook, capture: Capture) -> io::Result<Sideband> {
    let attr = sideband_attr();
    let mut rings = Vec::new();
    let mut fds = Vec::new();
    for &cpu in cpus {
        let fd = sys::perf_event_open(&attr, -1, cpu)?;
        rings.push(Ring::new(fd.as_fd(), SIDEBAND_PAGES)?);
        fds.push(fd);
    }
    let (stop_r, stop_w) = sys::pipe(false)?;
    let handle = std::thread::Builder::new()
        .name("bpf-sideband".into())
        .spawn(move || run(fds, rings, stop_r, book, capture))?;
    Ok(Sideband {
        stop: stop_w,
        handle,
    })
}

impl Sideband {
    /// Drain what is left and end the thread.
    pub fn stop(self) {
        let mut f = std::fs::File::from(self.stop);
        let _ = io::Write::write_all(&mut f, &[1]);
        let _ = self.handle.join();
    }
}

fn run(fds: Vec<OwnedFd>, mut rings: Vec<Ring>, stop: OwnedFd, book: SharedBook, capture: Capture) {
    let mut pfds: Vec<libc::pollfd> = std::iter::once(stop.as_raw_fd())
        .chain(fds.iter().map(|f| f.as_raw_fd()))
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let mut loads = Vec::new();
    loop {
        if sys::poll(&mut pfds, 1000).is_err() {
            break;
        }
        let stopping = pfds[0].revents != 0;
        drain(&mut rings, &book, capture, &mut loads);
        if stopping {
            // Records written between the last wake-up and the stop request.
            drain(&mut rings, &book, capture, &mut loads);
            break;
        }
    }
}

fn drain(rings: &mut [Ring], book: &SharedBook, capture: Capture, loads: &mut Vec<u32>) {
    let mut unloads = Vec::new();
    let mut lost = 0;
    for ring in rings.iter_mut() {
        ring.drain(|r| {
            let ty = u32::from_le_bytes(r[0..4].try_into().unwrap());
            if ty == record_type::BPF_EVENT && r.len() >= 16 {
                let kind = u16::from_le_bytes(r[8..10].try_into().unwrap());
                let id = u32::from_le_bytes(r[12..16].try_into().unwrap());
                match kind {
                    bpf_event::PROG_LOAD => loads.push(id),
                    bpf_event::PROG_UNLOAD => unloads.push(id),
                    _ => {}
                }
            } else if ty == record_type::LOST && r.len() >= 24 {
                lost += u64::from_le_bytes(r[16..24].try_into().unwrap());
            }
            true
        });
    }
    // Fetch right away, before looking at unloads: a program loaded and
    // unloaded in the same batch may still be readable for a moment.
    for &id in loads.iter() {
        book.lock().unwrap().loaded.insert(id);
        bpf::fetch_into(book, id, capture);
    }
    loads.clear();
    if !unloads.is_empty() || lost > 0 {
        let mut b = book.lock().unwrap();
        b.unloaded.extend(unloads);
        b.sideband_lost += lost;
    }
}
