//! The only module of the recorder with `unsafe`: perf_event_open(2), its
//! ioctls, the ring-buffer mapping, poll(2), starting the command between
//! fork and exec, and the stop-signal handler. Everything here is a thin,
//! safe wrapper; policy lives in the other modules.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

use perfdata::EventAttr;

const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
const IOC_ENABLE: libc::c_ulong = 0x2400;
const IOC_DISABLE: libc::c_ulong = 0x2401;
const IOC_SET_OUTPUT: libc::c_ulong = 0x2405;
/// `_IOR('$', 7, __u64 *)`.
const IOC_ID: libc::c_ulong = 0x8008_2407;

fn cvt(r: libc::c_long) -> io::Result<libc::c_long> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// perf_event_open(2) with close-on-exec.
pub fn perf_event_open(attr: &EventAttr, pid: i32, cpu: i32) -> io::Result<OwnedFd> {
    let bytes = attr.to_bytes();
    // SAFETY: `bytes` is a complete perf_event_attr of the size written in its
    // `size` field; the kernel only reads it. No group fd is passed.
    let fd = cvt(unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            bytes.as_ptr(),
            pid as libc::c_long,
            cpu as libc::c_long,
            -1 as libc::c_long,
            PERF_FLAG_FD_CLOEXEC,
        )
    })?;
    // SAFETY: on success the kernel returned a new descriptor owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

fn ioctl(fd: BorrowedFd<'_>, req: libc::c_ulong, arg: libc::c_ulong) -> io::Result<()> {
    // SAFETY: the perf ioctls used here take either an integer argument or a
    // pointer that the callers below pass to a live, correctly sized value.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), req, arg) };
    cvt(r as libc::c_long).map(|_| ())
}

pub fn enable(fd: BorrowedFd<'_>) -> io::Result<()> {
    ioctl(fd, IOC_ENABLE, 0)
}

pub fn disable(fd: BorrowedFd<'_>) -> io::Result<()> {
    ioctl(fd, IOC_DISABLE, 0)
}

/// Send the records of `fd` to the ring of `target` (same CPU).
pub fn set_output(fd: BorrowedFd<'_>, target: BorrowedFd<'_>) -> io::Result<()> {
    ioctl(fd, IOC_SET_OUTPUT, target.as_raw_fd() as libc::c_ulong)
}

/// The kernel's id of an event: what SAMPLEs and trailers carry.
pub fn event_id(fd: BorrowedFd<'_>) -> io::Result<u64> {
    let mut id: u64 = 0;
    ioctl(fd, IOC_ID, &mut id as *mut u64 as libc::c_ulong)?;
    Ok(id)
}

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as usize
    } else {
        4096
    }
}

// Offsets in `struct perf_event_mmap_page` (include/uapi/linux/perf_event.h).
const OFF_DATA_HEAD: usize = 1024;
const OFF_DATA_TAIL: usize = 1032;
const OFF_DATA_OFFSET: usize = 1040;
const OFF_DATA_SIZE: usize = 1048;

/// A perf ring buffer mapped read-write (so the kernel honours our tail and
/// never overwrites unread records).
///
/// The only way to see its bytes is [`RingMap::pending`], which hands out
/// exactly the region between our tail and the head the kernel published;
/// the kernel does not write there until [`RingMap::advance`] moves the
/// tail, which needs `&mut self` and so ends those borrows first.
pub struct RingMap {
    base: *mut u8,
    map_len: usize,
    data_off: usize,
    data_size: usize,
    tail: u64,
    head: u64,
}

// SAFETY: the mapping is owned by this value and only touched through it; the
// raw pointer is not shared elsewhere.
unsafe impl Send for RingMap {}

impl RingMap {
    /// Map the ring of `fd`: one metadata page plus `data_pages` (a power of two).
    pub fn new(fd: BorrowedFd<'_>, data_pages: usize) -> io::Result<RingMap> {
        let page = page_size();
        let map_len = page * (data_pages + 1);
        // SAFETY: a fresh shared mapping of a perf fd; the kernel validates the
        // length. We own the result and unmap it in Drop.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = p as *mut u8;
        let mut r = RingMap {
            base,
            map_len,
            data_off: page,
            data_size: page * data_pages,
            tail: 0,
            head: 0,
        };
        let (off, size) = (r.meta(OFF_DATA_OFFSET), r.meta(OFF_DATA_SIZE));
        // Kernels since 4.1 publish the data area; older ones use the defaults above.
        if size != 0 && off as usize + size as usize <= map_len {
            r.data_off = off as usize;
            r.data_size = size as usize;
        }
        r.tail = r.meta_atomic(OFF_DATA_TAIL).load(Ordering::Relaxed);
        r.head = r.tail;
        Ok(r)
    }

    fn meta(&self, off: usize) -> u64 {
        self.meta_atomic(off).load(Ordering::Relaxed)
    }

    fn meta_atomic(&self, off: usize) -> &AtomicU64 {
        debug_assert!(off + 8 <= self.data_off);
        // SAFETY: `off` is one of the u64 fields of the metadata page, which is
        // mapped for the life of `self` and 8-byte aligned (page-aligned base).
        // The kernel accesses these fields atomically too.
        unsafe { AtomicU64::from_ptr(self.base.add(off) as *mut u64) }
    }

    /// Size of the data area in bytes.
    pub fn data_size(&self) -> usize {
        self.data_size
    }

    /// The unread bytes: up to the end of the data area, then the part that
    /// wrapped to its start. Loads the kernel's head with acquire ordering so
    /// the record bytes are visible.
    pub fn pending(&mut self) -> (&[u8], &[u8]) {
        self.head = self.meta_atomic(OFF_DATA_HEAD).load(Ordering::Acquire);
        let avail = self.head.wrapping_sub(self.tail) as usize;
        let avail = avail.min(self.data_size);
        let start = (self.tail % self.data_size as u64) as usize;
        let first = avail.min(self.data_size - start);
        // SAFETY: [start, start+first) and [0, avail-first) lie inside the data
        // area, which is mapped for the life of `self`. The kernel writes only
        // past `head` and does not reuse bytes before `tail` is moved past them,
        // which needs `&mut self` (advance), so these shared borrows are stable.
        unsafe {
            let data = self.base.add(self.data_off);
            (
                std::slice::from_raw_parts(data.add(start), first),
                std::slice::from_raw_parts(data, avail - first),
            )
        }
    }

    /// Give `n` consumed bytes back to the kernel (release ordering: our
    /// reads of them happen before the kernel may overwrite them).
    pub fn advance(&mut self, n: usize) {
        self.tail = self.tail.wrapping_add(n as u64);
        self.meta_atomic(OFF_DATA_TAIL)
            .store(self.tail, Ordering::Release);
    }
}

impl Drop for RingMap {
    fn drop(&mut self) {
        // SAFETY: `base`/`map_len` are exactly what mmap returned; no borrow of
        // the mapping outlives `self`.
        unsafe {
            libc::munmap(self.base as *mut libc::c_void, self.map_len);
        }
    }
}

/// poll(2) on `fds`; returns how many have events. EINTR counts as 0.
pub fn poll(fds: &mut [libc::pollfd], timeout_ms: i32) -> io::Result<usize> {
    // SAFETY: `fds` is a valid, writable array of the length passed.
    let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(r as usize)
}

/// A pipe with both ends close-on-exec; `nonblock` applies to both ends.
pub fn pipe(nonblock: bool) -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    let flags = libc::O_CLOEXEC | if nonblock { libc::O_NONBLOCK } else { 0 };
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), flags) } as libc::c_long)?;
    // SAFETY: pipe2 succeeded, so both are new descriptors owned by us.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// pidfd_open(2): a descriptor that polls readable when `pid` exits.
pub fn pidfd_open(pid: i32) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall with integer arguments.
    let fd = cvt(unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::c_long, 0) })?;
    // SAFETY: a new descriptor owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// kill(2).
pub fn kill(pid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: plain syscall with integer arguments.
    cvt(unsafe { libc::kill(pid, sig) } as libc::c_long).map(|_| ())
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    Code(i32),
    Signal(i32),
}

impl ExitStatus {
    /// The exit code a shell would report.
    pub fn shell_code(self) -> i32 {
        match self {
            ExitStatus::Code(c) => c,
            ExitStatus::Signal(s) => 128 + s,
        }
    }
}

/// waitpid(2); `block` false returns `None` while the child runs.
pub fn waitpid(pid: i32, block: bool) -> io::Result<Option<ExitStatus>> {
    let mut status = 0;
    loop {
        let flags = if block { 0 } else { libc::WNOHANG };
        // SAFETY: `status` is a valid out-pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, flags) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if r == 0 {
            return Ok(None);
        }
        if libc::WIFEXITED(status) {
            return Ok(Some(ExitStatus::Code(libc::WEXITSTATUS(status))));
        }
        if libc::WIFSIGNALED(status) {
            return Ok(Some(ExitStatus::Signal(libc::WTERMSIG(status))));
        }
    }
}

/// A forked child parked before exec, so its events can be opened on its pid
/// (with enable_on_exec) before it runs anything of its own.
pub struct ParkedChild {
    pub pid: i32,
    go: Option<OwnedFd>,
    exec_err: OwnedFd,
}

/// Fork a child that waits for [`ParkedChild::release`] and then execs
/// `path` with `argv` and `envp`. All memory the child touches is prepared
/// here, before fork, because the child of a threaded process may only make
/// async-signal-safe calls.
pub fn fork_parked(path: &CString, argv: &[CString], envp: &[CString]) -> io::Result<ParkedChild> {
    let argv_p: Vec<*const libc::c_char> = argv
        .iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let envp_p: Vec<*const libc::c_char> = envp
        .iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let (go_r, go_w) = pipe(false)?;
    let (err_r, err_w) = pipe(false)?;
    // SAFETY: after fork the child only calls async-signal-safe functions
    // (read, sigprocmask, execve, write, _exit) on memory prepared above, and
    // never returns into Rust code.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: child side, see above. Every descriptor used is open here.
        unsafe {
            let mut b = 0u8;
            let n = libc::read(go_r.as_raw_fd(), &mut b as *mut u8 as *mut libc::c_void, 1);
            if n != 1 {
                // The recorder went away before starting us.
                libc::_exit(127);
            }
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
            libc::execve(path.as_ptr(), argv_p.as_ptr(), envp_p.as_ptr());
            let errno = *libc::__errno_location();
            let bytes = errno.to_ne_bytes();
            libc::write(err_w.as_raw_fd(), bytes.as_ptr() as *const libc::c_void, 4);
            libc::_exit(127);
        }
    }
    drop(go_r);
    drop(err_w);
    Ok(ParkedChild {
        pid,
        go: Some(go_w),
        exec_err: err_r,
    })
}

impl ParkedChild {
    /// Let the child exec. Returns the errno if exec failed.
    pub fn release(&mut self) -> io::Result<Option<i32>> {
        let go = self.go.take().expect("released twice");
        let mut f = std::fs::File::from(go);
        std::io::Write::write_all(&mut f, &[1])?;
        drop(f);
        // The error pipe closes on a successful exec (CLOEXEC) or carries errno.
        let mut buf = [0u8; 4];
        let mut got = 0;
        let mut r = std::fs::File::from(self.exec_err.try_clone()?);
        loop {
            match std::io::Read::read(&mut r, &mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => {
                    got += n;
                    if got == 4 {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok((got == 4).then(|| i32::from_ne_bytes(buf)))
    }
}

static STOP: AtomicBool = AtomicBool::new(false);
static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);
static WAKE_FD: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_stop_signal(sig: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
    STOP_SIGNAL.store(sig, Ordering::SeqCst);
    let fd = WAKE_FD.load(Ordering::SeqCst);
    if fd >= 0 {
        let b = 1u8;
        // SAFETY: write(2) is async-signal-safe; `fd` is the non-blocking
        // write end of the wake pipe, kept open for the life of the process
        // (see install_stop_handlers); a full pipe just fails with EAGAIN.
        unsafe {
            libc::write(fd, &b as *const u8 as *const libc::c_void, 1);
        }
    }
}

/// Make SIGINT and SIGTERM set a flag and write a byte to `wake` (so a
/// poll that includes the pipe's read end returns). The write end is leaked
/// on purpose: the handler may run at any time until exit.
pub fn install_stop_handlers(wake: OwnedFd) -> io::Result<()> {
    use std::os::fd::IntoRawFd;
    WAKE_FD.store(wake.into_raw_fd(), Ordering::SeqCst);
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction is a valid starting point; the handler only
        // touches atomics and calls write(2), both async-signal-safe.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_stop_signal as *const () as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            sa.sa_flags = 0;
            if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// Let a closed pipe end the process quietly (`bpfprof report | head`), as
/// it does C tools, instead of Rust's default of ignoring SIGPIPE so that
/// every later print fails.
pub fn default_sigpipe() {
    // SAFETY: restoring a signal's default disposition has no preconditions
    // and runs before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Have glibc's malloc serve big blocks from its heap rather than from a
/// fresh mmap each. A report allocates and frees tables of megabytes over
/// and over; with glibc's default each one is mapped, faulted in page by
/// page and unmapped again: a quarter of the reporting thread's time on a
/// big file went to page faults and unmapping. With the heap, freed blocks
/// are reused. Measured on the 105 MB benchmark file (two A/B runs of 8):
/// flat report CPU -6%, wall -4%, peak RSS +2-9 MB; with call graphs CPU
/// -2.5%, wall unchanged, peak RSS +25 MB (178 MB, perf: 334). A no-op
/// elsewhere than glibc.
pub fn keep_big_blocks_in_heap() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only sets a malloc parameter; it runs before any
    // other thread exists, and a refusal (0) leaves the default.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 64 << 20);
    }
}

/// Whether a stop signal arrived, and which.
pub fn stop_requested() -> Option<i32> {
    STOP.load(Ordering::SeqCst)
        .then(|| STOP_SIGNAL.load(Ordering::SeqCst))
}

/// Host name, kernel release and machine from uname(2).
pub fn uname() -> (String, String, String) {
    // SAFETY: a zeroed utsname is valid; uname fills it with NUL-terminated strings.
    let u = unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        libc::uname(&mut u);
        u
    };
    let s = |f: &[libc::c_char]| {
        let b: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&b).into_owned()
    };
    (s(&u.nodename), s(&u.release), s(&u.machine))
}

/// CPU time (user, system) this process used so far, in microseconds.
pub fn self_cpu_time_us() -> (u64, u64) {
    // SAFETY: a zeroed rusage is valid; getrusage fills it.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    (us(ru.ru_utime), us(ru.ru_stime))
}

/// Nanoseconds on CLOCK_MONOTONIC, the clock perf samples are stamped with
/// by default (perf_clock is local_clock; close to it on x86-64).
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// The width of the terminal standard output is, if it is one and says.
pub fn stdout_columns() -> Option<u16> {
    let mut ws = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one `winsize` through the pointer, which
    // points at a live, writable one.
    let r = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) };
    (r == 0 && ws.ws_col > 0).then_some(ws.ws_col)
}

/// Nanoseconds on `clock` (0 if the kernel has no such clock).
pub fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; an unknown clock is an error
    // return that leaves it zero.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
