//! ctime(3) of a file time, in the local time zone as perf prints
//! "captured on": the zone's rules come from libc (TZ, /etc/localtime),
//! which is why this is an FFI module.

/// A time broken down in the local zone (the fields of `struct tm` perf's
/// formats read).
struct Local {
    year: i64,
    /// 0 = January.
    mon: usize,
    mday: i32,
    /// 0 = Sunday.
    wday: usize,
    hour: i32,
    min: i32,
    sec: i32,
}

fn local(secs: i64) -> Option<Local> {
    let t: libc::time_t = secs;
    // SAFETY: an all-zero `struct tm` is a valid value (integers and, on
    // glibc, a null zone pointer), and it is only read after localtime_r
    // filled it.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers point at live locals of the right types;
    // localtime_r is the reentrant form and keeps no pointer to them.
    let r = unsafe { libc::localtime_r(&t, &mut tm) };
    if r.is_null() {
        return None;
    }
    Some(Local {
        year: i64::from(tm.tm_year) + 1900,
        mon: usize::try_from(tm.tm_mon).ok()?,
        mday: tm.tm_mday,
        wday: usize::try_from(tm.tm_wday).ok()?,
        hour: tm.tm_hour,
        min: tm.tm_min,
        sec: tm.tm_sec,
    })
}

/// `Tue Dec  1 22:50:50 2026`, without ctime's newline; `None` if libc
/// cannot convert the time.
pub(super) fn ctime(secs: i64) -> Option<String> {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let t = local(secs)?;
    Some(format!(
        "{} {}{:3} {:02}:{:02}:{:02} {}",
        DAYS.get(t.wday)?,
        MONTHS.get(t.mon)?,
        t.mday,
        t.hour,
        t.min,
        t.sec,
        t.year
    ))
}

/// strftime's `%F %T`: `2026-12-01 22:50:50`.
pub(super) fn date_time(secs: i64) -> Option<String> {
    let t = local(secs)?;
    Some(format!(
        "{}-{:02}-{:02} {:02}:{:02}:{:02}",
        t.year,
        t.mon + 1,
        t.mday,
        t.hour,
        t.min,
        t.sec
    ))
}

#[cfg(test)]
mod tests {
    /// Against date(1) in the same zone as this process: `date -d @SECS
    /// '+%a %b %e %H:%M:%S %Y'` is ctime's layout.
    #[test]
    fn agrees_with_date_1() {
        for secs in [0i64, 951_782_400, 1_764_629_450] {
            let out = std::process::Command::new("date")
                .arg("-d")
                .arg(format!("@{secs}"))
                .arg("+%a %b %e %H:%M:%S %Y")
                .output()
                .expect("date(1) (coreutils) runs");
            let want = String::from_utf8_lossy(&out.stdout).trim_end().to_string();
            assert_eq!(super::ctime(secs).as_deref(), Some(want.as_str()));
            let out = std::process::Command::new("date")
                .arg("-d")
                .arg(format!("@{secs}"))
                .arg("+%F %T")
                .output()
                .expect("date(1) (coreutils) runs");
            let want = String::from_utf8_lossy(&out.stdout).trim_end().to_string();
            assert_eq!(super::date_time(secs).as_deref(), Some(want.as_str()));
        }
    }
}
