//! The rest of the router (docs/protocols/router-signals.md §A5, §A11–§A13): device interrupts per CPU from
//! /proc/interrupts, cpufreq, MemAvailable, /proc/net/wireless. Pure parsers plus small readers;
//! every file is optional (a missing file is a missing series, noted once by the sampler).

use crate::results::monitor::WirelessSample;
use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Files read every sample, opened once and re-read from offset 0 (docs/protocols/router-signals.md §0:
/// a seq_file or sysfs attribute regenerates on each read), with one reused buffer: no
/// open/stat/close per sample. A file that cannot be opened is remembered as missing.
pub struct ProcFiles {
    root: PathBuf,
    open: HashMap<String, Option<File>>,
    buf: String,
}

/// Most bytes read from one file (a /proc/interrupts of a many-core box is tens of KiB).
const MAX_FILE: u64 = 1 << 20;

/// Reads `path` into `buf` with plain reads (no size probe), at most [`MAX_FILE`] bytes.
pub fn read_into(path: &Path, buf: &mut String) -> Option<()> {
    buf.clear();
    File::open(path)
        .ok()?
        .take(MAX_FILE)
        .read_to_string(buf)
        .ok()
        .map(|_| ())
}

impl ProcFiles {
    pub fn new(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            open: HashMap::new(),
            buf: String::with_capacity(16 * 1024),
        }
    }

    /// The current contents of `rel` (relative to the root), or `None` if it does not exist.
    pub fn read(&mut self, rel: &str) -> Option<&str> {
        if !self.open.contains_key(rel) {
            if self.open.len() >= 256 {
                return None;
            }
            let f = File::open(self.root.join(rel)).ok();
            self.open.insert(rel.to_string(), f);
        }
        let f = self.open.get_mut(rel)?.as_mut()?;
        self.buf.clear();
        f.seek(SeekFrom::Start(0)).ok()?;
        f.take(MAX_FILE).read_to_string(&mut self.buf).ok()?;
        Some(&self.buf)
    }
}

/// Per CPU, the sum of the numbered (device) IRQ rows of /proc/interrupts; arch rows (`LOC`,
/// `TLB`, `IPI0`, `ERR`…) are left out. Returns (CPU ids of the header, sums). u32 counters
/// per row, summed in u64: take deltas with `saturating_sub`.
pub fn parse_interrupts(text: &str) -> (Vec<u32>, Vec<u64>) {
    let mut lines = text.lines();
    let cpus: Vec<u32> = lines
        .next()
        .map(|h| {
            h.split_whitespace()
                .filter_map(|c| c.strip_prefix("CPU").and_then(|n| n.parse().ok()))
                .collect()
        })
        .unwrap_or_default();
    let mut sums = vec![0u64; cpus.len()];
    for line in lines.take(4096) {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        if key.trim().parse::<u32>().is_err() {
            continue;
        }
        for (i, tok) in rest.split_whitespace().take(cpus.len()).enumerate() {
            match tok.parse::<u64>() {
                Ok(v) => sums[i] += v,
                Err(_) => break,
            }
        }
    }
    (cpus, sums)
}

/// `scaling_cur_freq` (kHz) of each CPU, in MHz; empty when any is missing (fixed clock).
pub fn cpu_freq_mhz(files: &mut ProcFiles, cpus: &[u32]) -> Vec<f64> {
    let mut out = Vec::with_capacity(cpus.len());
    for c in cpus.iter().take(256) {
        let rel = format!("sys/devices/system/cpu/cpu{c}/cpufreq/scaling_cur_freq");
        match files.read(&rel).and_then(|t| t.trim().parse::<f64>().ok()) {
            Some(khz) => out.push(khz / 1000.0),
            None => return Vec::new(),
        }
    }
    out
}

/// `MemAvailable` (kernel ≥ 3.14), KiB.
pub fn parse_mem_available_kib(meminfo: &str) -> Option<u64> {
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// /proc/net/wireless: two header lines, then `iface: status link. level. noise. nwid crypt
/// frag retry misc beacon` (the dots mark updated values).
pub fn parse_wireless(text: &str) -> Vec<WirelessSample> {
    let num = |t: &str| t.trim_end_matches('.').parse::<f64>().ok();
    text.lines()
        .skip(2)
        .take(64)
        .filter_map(|l| {
            let (dev, rest) = l.split_once(':')?;
            let f: Vec<&str> = rest.split_whitespace().collect();
            if f.len() < 9 {
                return None;
            }
            let discarded = f[4..9].iter().filter_map(|t| t.parse::<u64>().ok()).sum();
            Some(WirelessSample {
                dev: dev.trim().to_string(),
                link_quality: num(f[1])?,
                signal_dbm: num(f[2])?,
                discarded_packets: discarded,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// /proc/interrupts of a 2-core MT7621-like box (trimmed), with arch rows.
    const INTERRUPTS: &str = "           CPU0       CPU1       \n\
  8:     123456      54321  MIPS GIC Local   1  timer\n\
 20:      90000          0  MIPS GIC  10 Level     1e100000.ethernet\n\
 23:         12      70000  MIPS GIC  31 Level     mt7615e\n\
IPI0:     1000       2000  ipi call\n\
LOC:      5000       6000  Local timer interrupts\n\
ERR:          0\n";

    #[test]
    fn interrupts_numbered_rows_only() {
        let (cpus, sums) = parse_interrupts(INTERRUPTS);
        assert_eq!(cpus, [0, 1]);
        assert_eq!(sums, [123_456 + 90_000 + 12, 54_321 + 70_000]);
        assert_eq!(parse_interrupts(""), (vec![], vec![]));
    }

    #[test]
    fn meminfo_and_wireless() {
        let m = "MemTotal:         249216 kB\nMemFree:           91520 kB\nMemAvailable:     156044 kB\n";
        assert_eq!(parse_mem_available_kib(m), Some(156_044));
        assert_eq!(parse_mem_available_kib("MemTotal: 1 kB\n"), None);
        let w = "Inter-| sta-|   Quality        |   Discarded packets               | Missed | WE\n \
face | tus | link level noise |  nwid  crypt   frag  retry   misc | beacon | 22\n \
wlan0: 0000   70.  -40.  -256        0      0      0     12      3        0\n";
        assert_eq!(
            parse_wireless(w),
            vec![WirelessSample {
                dev: "wlan0".into(),
                link_quality: 70.0,
                signal_dbm: -40.0,
                discarded_packets: 15,
            }]
        );
    }

    #[test]
    fn cpufreq_missing_is_empty() {
        let root = std::env::temp_dir().join(format!("rb-freq-{}", std::process::id()));
        let d = root.join("sys/devices/system/cpu/cpu0/cpufreq");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("scaling_cur_freq"), "880000\n").unwrap();
        let mut f = ProcFiles::new(&root);
        assert_eq!(cpu_freq_mhz(&mut f, &[0]), [880.0]);
        assert!(cpu_freq_mhz(&mut f, &[0, 1]).is_empty(), "cpu1 has none");
        // Re-read from the open file: a new value shows.
        std::fs::write(d.join("scaling_cur_freq"), "1200000\n").unwrap();
        assert_eq!(cpu_freq_mhz(&mut f, &[0]), [1200.0]);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
