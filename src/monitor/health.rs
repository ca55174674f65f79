//! Signs of a device in trouble (docs/monitor.md): the uptime (/proc/uptime: going back is a
//! reboot), the OOM killer's count (/proc/vmstat `oom_kill`), device errors and drops
//! (/proc/net/dev), and the kernel log's warnings (/dev/kmsg, where readable). Pure parsers
//! plus the kernel log reader; every source is optional.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// Seconds since boot: the first field of /proc/uptime.
pub fn parse_uptime_s(text: &str) -> Option<f64> {
    let v: f64 = text.split_whitespace().next()?.parse().ok()?;
    v.is_finite().then_some(v)
}

/// `oom_kill` of /proc/vmstat (kills since boot; absent before 4.13).
pub fn parse_oom_kills(vmstat: &str) -> Option<u64> {
    vmstat
        .lines()
        .find_map(|l| l.strip_prefix("oom_kill "))
        .and_then(|v| v.trim().parse().ok())
}

/// Per device but `lo`: (rx_errs + tx_errs, rx_drop + tx_drop) from /proc/net/dev. The name
/// ends at the last `:` before the counters (names may be long or contain `:`).
pub fn parse_net_dev(text: &str) -> HashMap<String, (u64, u64)> {
    let mut out = HashMap::new();
    for line in text.lines().skip(2).take(1024) {
        let Some((name, rest)) = line.rsplit_once(':') else {
            continue;
        };
        let name = name.trim();
        if name == "lo" || name.is_empty() {
            continue;
        }
        let f: Vec<u64> = rest
            .split_whitespace()
            .map_while(|t| t.parse().ok())
            .collect();
        if f.len() < 12 {
            continue;
        }
        let errors = f[2].saturating_add(f[10]);
        let dropped = f[3].saturating_add(f[11]);
        out.insert(name.to_string(), (errors, dropped));
    }
    out
}

/// Errors and drops between two readings, over the devices present in both (a device that
/// appeared or went away in between adds nothing; counters that went back add nothing).
pub fn net_dev_delta(
    prev: &HashMap<String, (u64, u64)>,
    cur: &HashMap<String, (u64, u64)>,
) -> (u64, u64) {
    let (mut errors, mut dropped) = (0u64, 0u64);
    for (dev, (e, d)) in cur {
        if let Some((pe, pd)) = prev.get(dev) {
            errors = errors.saturating_add(e.saturating_sub(*pe));
            dropped = dropped.saturating_add(d.saturating_sub(*pd));
        }
    }
    (errors, dropped)
}

/// Words in a kernel line that matter under stress whatever its level.
const ALWAYS: [&str; 14] = [
    "out of memory",
    "oom-kill",
    "killed process",
    "oops",
    "bug:",
    "kernel panic",
    "call trace",
    "soft lockup",
    "hard lockup",
    "hung task",
    "watchdog",
    "throttl",
    "temperature above",
    "segfault",
];

/// Longest line kept, characters.
const MAX_LINE: usize = 300;

/// One /dev/kmsg record (`prio,seq,usec,flags[,…];message\n[ KEY=value\n…]`): its message
/// when it is the kernel's (facility 0) and a warning or worse (level ≤ 4), or names one of
/// [`ALWAYS`].
pub fn parse_kmsg_record(record: &str) -> Option<String> {
    let (header, rest) = record.split_once(';')?;
    let prio: u32 = header.split(',').next()?.trim().parse().ok()?;
    if prio >> 3 != 0 {
        return None;
    }
    let msg = rest.lines().next()?.trim_end();
    let lower = msg.to_ascii_lowercase();
    let keep = prio & 7 <= 4 || ALWAYS.iter().any(|w| lower.contains(w));
    keep.then(|| msg.chars().take(MAX_LINE).collect())
}

/// The kernel log from now on: /dev/kmsg opened non-blocking and moved to its end, so only
/// records written after the start are read.
pub struct KernelLog {
    file: Option<File>,
    buf: Vec<u8>,
    /// Why there is none (a note for the result).
    pub missing: Option<String>,
}

/// Most records read per drain, and most lines kept per drain.
const MAX_RECORDS: usize = 512;
const MAX_KEPT: usize = 16;

impl KernelLog {
    pub fn open(root: &Path) -> Self {
        use std::os::unix::fs::OpenOptionsExt;
        let path = root.join("dev/kmsg");
        let opened = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .and_then(|mut f| f.seek(SeekFrom::End(0)).map(|_| f));
        match opened {
            Ok(f) => Self {
                file: Some(f),
                buf: vec![0u8; 8192],
                missing: None,
            },
            Err(e) => Self {
                file: None,
                buf: Vec::new(),
                missing: Some(format!(
                    "{} not readable ({e}): no kernel warnings, oopses or OOM lines (needs root, \
                     or kernel.dmesg_restrict = 0)",
                    path.display()
                )),
            },
        }
    }

    /// The interesting lines written since the last call (at most [`MAX_KEPT`]; a note line
    /// says how many more there were).
    pub fn drain(&mut self) -> Vec<String> {
        let Some(f) = self.file.as_mut() else {
            return Vec::new();
        };
        let (mut kept, mut more) = (Vec::new(), 0usize);
        for _ in 0..MAX_RECORDS {
            match f.read(&mut self.buf) {
                Ok(0) => break,
                Ok(n) => {
                    let text = String::from_utf8_lossy(&self.buf[..n]);
                    if let Some(line) = parse_kmsg_record(&text) {
                        if kept.len() < MAX_KEPT {
                            kept.push(line);
                        } else {
                            more += 1;
                        }
                    }
                }
                // Records were overwritten before we read them: go on with the next one.
                Err(e) if e.raw_os_error() == Some(libc::EPIPE) => {}
                Err(_) => break,
            }
        }
        if more > 0 {
            kept.push(format!("(and {more} more kernel lines)"));
        }
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uptime_and_oom() {
        assert_eq!(parse_uptime_s("1006.06 1481.53\n"), Some(1006.06));
        assert_eq!(parse_uptime_s(""), None);
        let vm = "nr_free_pages 12\noom_kill 3\npgfault 9\n";
        assert_eq!(parse_oom_kills(vm), Some(3));
        assert_eq!(parse_oom_kills("nr_free_pages 12\n"), None);
    }

    #[test]
    fn net_dev_errors_and_drops_per_device() {
        let text = "Inter-|   Receive                                                |  Transmit\n \
face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    \
lo:    3193      29    0    0    0     0          0         0     3193      29    0    0    0     0       0          0\n  \
eth0: 1000 10 2 5 0 0 0 0 2000 20 1 7 0 0 0 0\n\
rb23-rtr-lan: 1 1 0 0 0 0 0 0 1 1 0 1 0 0 0 0\n";
        let m = parse_net_dev(text);
        assert_eq!(m.get("eth0"), Some(&(3, 12)));
        assert_eq!(m.get("rb23-rtr-lan"), Some(&(0, 1)));
        assert!(!m.contains_key("lo"));
        let mut later = m.clone();
        later.insert("eth0".into(), (4, 20));
        later.insert("wlan0".into(), (100, 100));
        later.remove("rb23-rtr-lan");
        assert_eq!(
            net_dev_delta(&m, &later),
            (1, 8),
            "new and gone devices add nothing"
        );
        assert_eq!(
            net_dev_delta(&later, &m),
            (0, 0),
            "counters going back add nothing"
        );
    }

    #[test]
    fn kmsg_records_keep_warnings_and_the_named_troubles() {
        assert_eq!(
            parse_kmsg_record("4,812,5140900,-;eth0: link down\n SUBSYSTEM=net\n").as_deref(),
            Some("eth0: link down")
        );
        assert_eq!(parse_kmsg_record("6,813,5140901,-;eth0: link up\n"), None);
        assert_eq!(
            parse_kmsg_record("6,814,1,-;Out of memory: Killed process 812 (hostapd)").as_deref(),
            Some("Out of memory: Killed process 812 (hostapd)")
        );
        assert!(parse_kmsg_record("6,815,1,-;CPU0: Core temperature above threshold").is_some());
        // A user-space message written to /dev/kmsg (facility 3, daemon) is not the kernel's.
        assert_eq!(parse_kmsg_record("27,816,1,-;systemd[1]: warning"), None);
        assert_eq!(parse_kmsg_record("garbage"), None);
        let long = format!("3,1,1,-;{}", "x".repeat(1000));
        assert_eq!(parse_kmsg_record(&long).map(|l| l.len()), Some(MAX_LINE));
    }

    #[test]
    fn kernel_log_without_kmsg_says_why_and_reads_nothing() {
        let mut k = KernelLog::open(Path::new("/nonexistent-rb23"));
        assert!(k.missing.as_deref().unwrap_or("").contains("dev/kmsg"));
        assert!(k.drain().is_empty());
    }
}
