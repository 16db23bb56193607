//! `struct perf_event_attr`: how an event was opened. The same bytes are
//! passed to perf_event_open(2) and stored in perf.data, so this type is used
//! both to open events and to describe them in a file.

use crate::cursor::Cursor;
use crate::error::{Error, Result};

/// Bits of `perf_event_attr.sample_type`: `PERF_SAMPLE_<NAME>` of
/// include/uapi/linux/perf_event.h, which documents each (what a sample
/// carries, in this order).
#[allow(missing_docs)]
pub mod sample_type {
    pub const IP: u64 = 1 << 0;
    pub const TID: u64 = 1 << 1;
    pub const TIME: u64 = 1 << 2;
    pub const ADDR: u64 = 1 << 3;
    pub const READ: u64 = 1 << 4;
    pub const CALLCHAIN: u64 = 1 << 5;
    pub const ID: u64 = 1 << 6;
    pub const CPU: u64 = 1 << 7;
    pub const PERIOD: u64 = 1 << 8;
    pub const STREAM_ID: u64 = 1 << 9;
    pub const RAW: u64 = 1 << 10;
    pub const BRANCH_STACK: u64 = 1 << 11;
    pub const REGS_USER: u64 = 1 << 12;
    pub const STACK_USER: u64 = 1 << 13;
    pub const WEIGHT: u64 = 1 << 14;
    pub const DATA_SRC: u64 = 1 << 15;
    pub const IDENTIFIER: u64 = 1 << 16;
}

/// Bits of the flags word at offset 40 of `perf_event_attr`: its bitfields
/// (`disabled`, `inherit`, ... `build_id`) in include/uapi/linux/perf_event.h,
/// by bit number; the gaps are bits nothing here reads or sets.
#[allow(missing_docs)]
pub mod flags {
    pub const DISABLED: u64 = 1 << 0;
    pub const INHERIT: u64 = 1 << 1;
    pub const PINNED: u64 = 1 << 2;
    pub const EXCLUSIVE: u64 = 1 << 3;
    pub const EXCLUDE_USER: u64 = 1 << 4;
    pub const EXCLUDE_KERNEL: u64 = 1 << 5;
    pub const EXCLUDE_HV: u64 = 1 << 6;
    pub const EXCLUDE_IDLE: u64 = 1 << 7;
    pub const MMAP: u64 = 1 << 8;
    pub const COMM: u64 = 1 << 9;
    pub const FREQ: u64 = 1 << 10;
    pub const INHERIT_STAT: u64 = 1 << 11;
    pub const ENABLE_ON_EXEC: u64 = 1 << 12;
    pub const TASK: u64 = 1 << 13;
    pub const WATERMARK: u64 = 1 << 14;
    pub const SAMPLE_ID_ALL: u64 = 1 << 18;
    pub const EXCLUDE_HOST: u64 = 1 << 19;
    pub const EXCLUDE_GUEST: u64 = 1 << 20;
    pub const EXCLUDE_CALLCHAIN_KERNEL: u64 = 1 << 21;
    pub const EXCLUDE_CALLCHAIN_USER: u64 = 1 << 22;
    pub const MMAP2: u64 = 1 << 23;
    pub const COMM_EXEC: u64 = 1 << 24;
    pub const USE_CLOCKID: u64 = 1 << 25;
    pub const CONTEXT_SWITCH: u64 = 1 << 26;
    pub const KSYMBOL: u64 = 1 << 29;
    pub const BPF_EVENT: u64 = 1 << 30;
    pub const BUILD_ID: u64 = 1 << 34;
}

/// Bits of `perf_event_attr.read_format`: `PERF_FORMAT_<NAME>` of
/// include/uapi/linux/perf_event.h.
#[allow(missing_docs)]
pub mod read_format {
    pub const TOTAL_TIME_ENABLED: u64 = 1 << 0;
    pub const TOTAL_TIME_RUNNING: u64 = 1 << 1;
    pub const ID: u64 = 1 << 2;
    pub const GROUP: u64 = 1 << 3;
    pub const LOST: u64 = 1 << 4;
}

/// `perf_event_attr.type`: `PERF_TYPE_<NAME>` (the ones the workspace uses).
#[allow(missing_docs)]
pub mod event_type {
    pub const HARDWARE: u32 = 0;
    pub const SOFTWARE: u32 = 1;
    pub const TRACEPOINT: u32 = 2;
}

/// `PERF_COUNT_SW_*` configs for [`event_type::SOFTWARE`] (the ones the
/// workspace uses).
#[allow(missing_docs)]
pub mod sw {
    pub const CPU_CLOCK: u64 = 0;
    pub const TASK_CLOCK: u64 = 1;
    pub const DUMMY: u64 = 9;
}

/// The size we write and pass to the kernel (PERF_ATTR_SIZE_VER7). perf 6.1
/// rejects files whose attr.size exceeds its own struct (136 fails, 128 is
/// fine).
pub const ATTR_SIZE: u32 = 128;

/// `struct perf_event_attr`, every field through `sig_data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EventAttr {
    /// `type`: [`event_type`], or a PMU's type from sysfs.
    pub type_: u32,
    /// `size` as read; ignored when encoding ([`ATTR_SIZE`] is written).
    pub size: u32,
    /// Which event of the type: a `PERF_COUNT_*` number, or a tracepoint id.
    pub config: u64,
    /// `sample_period`, or `sample_freq` when [`flags::FREQ`] is set.
    pub sample_period: u64,
    /// What each sample carries: [`sample_type`] bits.
    pub sample_type: u64,
    /// What a read(2) of the event returns: [`read_format`] bits.
    pub read_format: u64,
    /// The bitfield word: [`flags`] bits.
    pub flags: u64,
    /// `wakeup_events`, or `wakeup_watermark` with [`flags::WATERMARK`].
    pub wakeup: u32,
    /// Breakpoint type (`HW_BREAKPOINT_*`); zero for other events.
    pub bp_type: u32,
    /// Extra config (`bp_addr`, `kprobe_func`, `config1` of a PMU).
    pub config1: u64,
    /// More config (`bp_len`, `kprobe_addr`, `config2` of a PMU).
    pub config2: u64,
    /// `PERF_SAMPLE_BRANCH_*` bits, for [`sample_type::BRANCH_STACK`].
    pub branch_sample_type: u64,
    /// The user registers a sample carries, for [`sample_type::REGS_USER`].
    pub sample_regs_user: u64,
    /// Bytes of user stack a sample carries, for [`sample_type::STACK_USER`].
    pub sample_stack_user: u32,
    /// The clock of sample times with [`flags::USE_CLOCKID`].
    pub clockid: i32,
    /// The registers at the interrupt a sample carries (`REGS_INTR`).
    pub sample_regs_intr: u64,
    /// AUX area wakeup watermark.
    pub aux_watermark: u32,
    /// Deepest callchain wanted; zero is the kernel's default.
    pub sample_max_stack: u16,
    /// Bytes of AUX data a sample carries (`PERF_SAMPLE_AUX`).
    pub aux_sample_size: u32,
    /// User data in the `siginfo` of a synchronous signal (`sigtrap`).
    pub sig_data: u64,
}

impl EventAttr {
    /// Whether one of the [`flags`] bits is set.
    pub fn has(&self, flag: u64) -> bool {
        self.flags & flag != 0
    }

    /// Whether non-sample records carry a `sample_id` trailer (pid, time,
    /// ...), which is what lets them be ordered with the samples.
    pub fn sample_id_all(&self) -> bool {
        self.has(flags::SAMPLE_ID_ALL)
    }

    /// Parse `size` bytes of an attr. Fields beyond `size` stay zero, as the
    /// kernel treats them.
    pub fn parse(bytes: &[u8], offset: u64) -> Result<EventAttr> {
        if bytes.len() < 64 {
            return Err(Error::parse(
                offset,
                format!(
                    "perf_event_attr of {} bytes is shorter than the first ABI (64)",
                    bytes.len()
                ),
            ));
        }
        let mut buf = [0u8; ATTR_SIZE as usize];
        let n = bytes.len().min(buf.len());
        buf[..n].copy_from_slice(&bytes[..n]);
        let mut c = Cursor::new(&buf, offset);
        let w = "perf_event_attr";
        let mut a = EventAttr {
            type_: c.u32(w)?,
            size: c.u32(w)?,
            config: c.u64(w)?,
            sample_period: c.u64(w)?,
            sample_type: c.u64(w)?,
            read_format: c.u64(w)?,
            flags: c.u64(w)?,
            wakeup: c.u32(w)?,
            bp_type: c.u32(w)?,
            config1: c.u64(w)?,
            config2: c.u64(w)?,
            branch_sample_type: c.u64(w)?,
            sample_regs_user: c.u64(w)?,
            sample_stack_user: c.u32(w)?,
            clockid: c.u32(w)? as i32,
            sample_regs_intr: c.u64(w)?,
            aux_watermark: c.u32(w)?,
            sample_max_stack: c.u16(w)?,
            ..Default::default()
        };
        c.u16(w)?;
        a.aux_sample_size = c.u32(w)?;
        c.u32(w)?;
        a.sig_data = c.u64(w)?;
        Ok(a)
    }

    /// Encode as [`ATTR_SIZE`] bytes, ready for perf_event_open(2) or a file.
    pub fn to_bytes(&self) -> [u8; ATTR_SIZE as usize] {
        let mut b = [0u8; ATTR_SIZE as usize];
        let mut put = |off: usize, v: &[u8]| b[off..off + v.len()].copy_from_slice(v);
        put(0, &self.type_.to_le_bytes());
        put(4, &ATTR_SIZE.to_le_bytes());
        put(8, &self.config.to_le_bytes());
        put(16, &self.sample_period.to_le_bytes());
        put(24, &self.sample_type.to_le_bytes());
        put(32, &self.read_format.to_le_bytes());
        put(40, &self.flags.to_le_bytes());
        put(48, &self.wakeup.to_le_bytes());
        put(52, &self.bp_type.to_le_bytes());
        put(56, &self.config1.to_le_bytes());
        put(64, &self.config2.to_le_bytes());
        put(72, &self.branch_sample_type.to_le_bytes());
        put(80, &self.sample_regs_user.to_le_bytes());
        put(88, &self.sample_stack_user.to_le_bytes());
        put(92, &self.clockid.to_le_bytes());
        put(96, &self.sample_regs_intr.to_le_bytes());
        put(104, &self.aux_watermark.to_le_bytes());
        put(108, &self.sample_max_stack.to_le_bytes());
        put(112, &self.aux_sample_size.to_le_bytes());
        put(120, &self.sig_data.to_le_bytes());
        b
    }

    /// Size of the `sample_id` trailer that non-SAMPLE records carry when
    /// `sample_id_all` is set.
    pub fn id_trailer_size(&self) -> usize {
        if !self.sample_id_all() {
            return 0;
        }
        let st = self.sample_type;
        [
            (sample_type::TID, 8),
            (sample_type::TIME, 8),
            (sample_type::ID, 8),
            (sample_type::STREAM_ID, 8),
            (sample_type::CPU, 8),
            (sample_type::IDENTIFIER, 8),
        ]
        .iter()
        .filter(|(bit, _)| st & bit != 0)
        .map(|(_, n)| n)
        .sum()
    }

    /// A short perf-style name when the file has no EVENT_DESC.
    pub fn default_name(&self) -> String {
        match (self.type_, self.config) {
            (event_type::SOFTWARE, sw::CPU_CLOCK) => "cpu-clock".into(),
            (event_type::SOFTWARE, sw::TASK_CLOCK) => "task-clock".into(),
            (event_type::SOFTWARE, sw::DUMMY) => "dummy".into(),
            (event_type::HARDWARE, 0) => "cycles".into(),
            (event_type::HARDWARE, 1) => "instructions".into(),
            (t, c) => format!("type{t}/config{c:#x}"),
        }
    }
}

/// An attr with the event ids that refer to it (one per opened fd) and the
/// event's name (from EVENT_DESC when present).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttrEntry {
    /// How the event was opened.
    pub attr: EventAttr,
    /// The ids its records carry (`sample_type::ID`/`IDENTIFIER`).
    pub ids: Vec<u64>,
    /// The event's name: EVENT_DESC's, or [`EventAttr::default_name`].
    pub name: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attr_bytes_round_trip() {
        let a = EventAttr {
            type_: 1,
            config: 9,
            sample_period: 1,
            sample_type: 0x10087,
            read_format: 0x14,
            flags: 0x61842302,
            sample_max_stack: 127,
            ..Default::default()
        };
        let b = a.to_bytes();
        let p = EventAttr::parse(&b, 0).unwrap();
        assert_eq!(
            p,
            EventAttr {
                size: ATTR_SIZE,
                ..a
            }
        );
        // IP|TID|TIME|CPU|IDENTIFIER with sample_id_all: 8+8+8+8 = 32, as perf writes.
        assert_eq!(p.id_trailer_size(), 32);
    }
}
