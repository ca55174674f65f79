//! Pure parsers for the router-side counters (docs/protocols/router-signals.md part A): `/proc/stat` CPU
//! lines, `/proc/softirqs` NET_RX/NET_TX, `/proc/net/softnet_stat`, `/proc/<pid>/stat`.
//! They take text and never fail: a line they do not understand is skipped.

/// One `cpuN` line of /proc/stat, in USER_HZ ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuTicks {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTicks {
    /// The counters after a /proc/stat `cpu`/`cpuN` name; None when fewer than the four every
    /// kernel has (user, nice, system, idle). Later columns missing on old kernels read 0.
    pub fn from_stat_fields<'a>(fields: impl Iterator<Item = &'a str>) -> Option<CpuTicks> {
        let v: Vec<u64> = fields.map_while(|t| t.parse().ok()).collect();
        if v.len() < 4 {
            return None;
        }
        let g = |i: usize| v.get(i).copied().unwrap_or(0);
        Some(CpuTicks {
            user: g(0),
            nice: g(1),
            system: g(2),
            idle: g(3),
            iowait: g(4),
            irq: g(5),
            softirq: g(6),
            steal: g(7),
        })
    }

    /// guest/guest_nice are already inside user/nice, so they are not added again.
    pub fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }
    pub fn idle_all(&self) -> u64 {
        self.idle + self.iowait
    }
}

/// Per-CPU tick counters keyed by CPU id (the aggregate `cpu` line is skipped).
pub fn parse_stat_cpus(text: &str) -> Vec<(u32, CpuTicks)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut it = line.split_ascii_whitespace();
        let Some(name) = it.next() else { continue };
        let Some(id) = name.strip_prefix("cpu").and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Some(ticks) = CpuTicks::from_stat_fields(it) else {
            continue;
        };
        out.push((id, ticks));
    }
    out
}

/// The CPU ids of /proc/softirqs' header line (`CPU0 CPU1 …`; offline CPUs leave gaps).
pub fn softirqs_cpus(header: &str) -> Vec<u32> {
    header
        .split_ascii_whitespace()
        .filter_map(|c| c.strip_prefix("CPU").and_then(|n| n.parse().ok()))
        .collect()
}

/// NET_RX and NET_TX handler runs per CPU column of /proc/softirqs: `(cpu ids, rx, tx)`.
pub fn parse_softirqs_net(text: &str) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
    let mut lines = text.lines();
    let cpus = softirqs_cpus(lines.next().unwrap_or(""));
    let (mut rx, mut tx) = (Vec::new(), Vec::new());
    for line in lines {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let vals: Vec<u32> = rest
            .split_ascii_whitespace()
            .take(cpus.len())
            .map_while(|t| t.parse().ok())
            .collect();
        match key.trim() {
            "NET_RX" => rx = vals,
            "NET_TX" => tx = vals,
            _ => {}
        }
    }
    (cpus, rx, tx)
}

/// One row of /proc/net/softnet_stat (hex u32 columns; any count >= 3 is accepted).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SoftnetRow {
    pub cpu: u32,
    pub processed: u32,
    pub dropped: u32,
    pub time_squeeze: u32,
}

/// Rows in file order; column 13 is the CPU id where present, else the row index.
pub fn parse_softnet(text: &str) -> Vec<SoftnetRow> {
    let mut out = Vec::new();
    for (idx, line) in text.lines().enumerate() {
        let cols: Vec<u32> = line
            .split_ascii_whitespace()
            .map_while(|t| u32::from_str_radix(t, 16).ok())
            .collect();
        if cols.len() < 3 {
            continue;
        }
        let cpu = if cols.len() >= 13 {
            cols[12]
        } else {
            idx as u32
        };
        out.push(SoftnetRow {
            cpu,
            processed: cols[0],
            dropped: cols[1],
            time_squeeze: cols[2],
        });
    }
    out
}

/// `(comm, utime + stime ticks)` from /proc/<pid>/stat; `comm` may hold spaces and `)`.
pub fn parse_pid_stat(text: &str) -> Option<(String, u64)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    if close <= open {
        return None;
    }
    let comm = text[open + 1..close].to_string();
    // Fields after ")" start at field 3 (state); utime is field 14, stime 15.
    let rest: Vec<&str> = text[close + 1..].split_ascii_whitespace().collect();
    let utime: u64 = rest.get(11)?.parse().ok()?;
    let stime: u64 = rest.get(12)?.parse().ok()?;
    Some((comm, utime + stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  11123 0 2317 54710 265 0 56 27 0 0\ncpu0 5337 0 914 27934 36 0 17 10 0 0\ncpu1 5786 0 1403 26775 228 0 38 17 0 0\nintr 195695 0 0 0\nctxt 358659\n";

    #[test]
    fn stat_per_cpu_from_spec_capture() {
        let cpus = parse_stat_cpus(STAT);
        assert_eq!(cpus.len(), 2);
        assert_eq!(cpus[1].0, 1);
        let c1 = cpus[1].1;
        assert_eq!(
            (c1.user, c1.system, c1.idle, c1.iowait, c1.softirq, c1.steal),
            (5786, 1403, 26775, 228, 38, 17)
        );
        assert_eq!(c1.total(), 5786 + 1403 + 26775 + 228 + 38 + 17);
    }

    #[test]
    fn softirqs_net_columns() {
        let t = "                    CPU0       CPU1\n          HI:          0          0\n       TIMER:       6153       6710\n      NET_TX:       1441        286\n      NET_RX:       5851       6570\n";
        let (cpus, rx, tx) = parse_softirqs_net(t);
        assert_eq!(cpus, [0, 1]);
        assert_eq!(rx, [5851, 6570]);
        assert_eq!(tx, [1441, 286]);
    }

    #[test]
    fn softnet_11_13_15_columns() {
        let t = "0000a1b2 00000001 00000003 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n\
                 00000010 00000000 00000002 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000002 00000000 00000000\n";
        let rows = parse_softnet(t);
        assert_eq!(
            rows[0],
            SoftnetRow {
                cpu: 0,
                processed: 0xa1b2,
                dropped: 1,
                time_squeeze: 3
            }
        );
        assert_eq!(rows[1].cpu, 2, "column 13 is the CPU id");
        assert!(parse_softnet("zz\n1 2\n").is_empty());
    }

    #[test]
    fn pid_stat_with_parens_in_comm() {
        let t =
            "1234 (my (odd) proc) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 1 0 100 0 0";
        assert_eq!(parse_pid_stat(t), Some(("my (odd) proc".into(), 325)));
        assert_eq!(parse_pid_stat("garbage"), None);
    }
}
