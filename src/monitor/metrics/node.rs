//! The families node_exporter already names, from the same files it reads: CPU time per mode
//! (/proc/stat), softirqs per vector (/proc/softirqs), softnet (/proc/net/softnet_stat),
//! network devices (/proc/net/dev), thermal zones and cpufreq (/sys). Labels as node_exporter
//! writes them: `cpu="0"` (a number, not the Lua exporter's `cpu="cpu0"`), `device`, `zone`
//! and `type`. Pure functions of the files' text; a file that is missing gives no family.

use super::super::procfs;
use crate::results::metrics::{Family, MetricType};

/// `node_cpu_seconds_total{cpu,mode}` from /proc/stat, ticks over `user_hz`.
pub fn cpu_seconds(stat: &str, user_hz: f64) -> Family {
    let mut f = Family::new(
        "node_cpu_seconds",
        MetricType::Counter,
        "Seconds the CPUs spent in each mode.",
    );
    for (cpu, t) in procfs::parse_stat_cpus(stat) {
        for (mode, ticks) in [
            ("idle", t.idle),
            ("iowait", t.iowait),
            ("irq", t.irq),
            ("nice", t.nice),
            ("softirq", t.softirq),
            ("steal", t.steal),
            ("system", t.system),
            ("user", t.user),
        ] {
            f.push(
                vec![("cpu", cpu.to_string()), ("mode", mode.to_string())],
                ticks as f64 / user_hz,
            );
        }
    }
    f
}

/// `node_softirqs_functions_total{cpu,type}` from /proc/softirqs: every vector's handler runs
/// per CPU (`type` as the file names it: `NET_RX`, `TIMER`, …).
pub fn softirqs(text: &str) -> Family {
    let mut f = Family::new(
        "node_softirqs_functions",
        MetricType::Counter,
        "Softirq counts per CPU.",
    );
    let mut lines = text.lines();
    let cpus = procfs::softirqs_cpus(lines.next().unwrap_or(""));
    for line in lines.take(64) {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let name = name.trim();
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            continue;
        }
        for (cpu, v) in cpus.iter().zip(rest.split_ascii_whitespace()) {
            if let Ok(v) = v.parse::<u64>() {
                f.push(
                    vec![("cpu", cpu.to_string()), ("type", name.to_string())],
                    v as f64,
                );
            }
        }
    }
    f
}

/// node_exporter's softnet families from /proc/net/softnet_stat: processed, dropped (the
/// backlog was full) and times squeezed (the NAPI budget or time ran out with work left).
/// Missing file (a `CONFIG_PROC_STRIPPED` kernel): no family at all, never zeros.
pub fn softnet(text: Option<&str>) -> Vec<Family> {
    let mut processed = Family::new(
        "node_softnet_processed",
        MetricType::Counter,
        "Number of processed packets",
    );
    let mut dropped = Family::new(
        "node_softnet_dropped",
        MetricType::Counter,
        "Number of dropped packets",
    );
    let mut squeezed = Family::new(
        "node_softnet_times_squeezed",
        MetricType::Counter,
        "Number of times processing packets ran out of quota",
    );
    for row in text.map(procfs::parse_softnet).unwrap_or_default() {
        let cpu = row.cpu.to_string();
        processed.push1("cpu", cpu.clone(), f64::from(row.processed));
        dropped.push1("cpu", cpu.clone(), f64::from(row.dropped));
        squeezed.push1("cpu", cpu, f64::from(row.time_squeeze));
    }
    vec![processed, dropped, squeezed]
}

/// The columns of /proc/net/dev in order, as node_exporter names them.
const NET_DEV: [(&str, &str); 16] = [
    (
        "node_network_receive_bytes",
        "Network device statistic receive_bytes.",
    ),
    (
        "node_network_receive_packets",
        "Network device statistic receive_packets.",
    ),
    (
        "node_network_receive_errs",
        "Network device statistic receive_errs.",
    ),
    (
        "node_network_receive_drop",
        "Network device statistic receive_drop.",
    ),
    (
        "node_network_receive_fifo",
        "Network device statistic receive_fifo.",
    ),
    (
        "node_network_receive_frame",
        "Network device statistic receive_frame.",
    ),
    (
        "node_network_receive_compressed",
        "Network device statistic receive_compressed.",
    ),
    (
        "node_network_receive_multicast",
        "Network device statistic receive_multicast.",
    ),
    (
        "node_network_transmit_bytes",
        "Network device statistic transmit_bytes.",
    ),
    (
        "node_network_transmit_packets",
        "Network device statistic transmit_packets.",
    ),
    (
        "node_network_transmit_errs",
        "Network device statistic transmit_errs.",
    ),
    (
        "node_network_transmit_drop",
        "Network device statistic transmit_drop.",
    ),
    (
        "node_network_transmit_fifo",
        "Network device statistic transmit_fifo.",
    ),
    (
        "node_network_transmit_colls",
        "Network device statistic transmit_colls.",
    ),
    (
        "node_network_transmit_carrier",
        "Network device statistic transmit_carrier.",
    ),
    (
        "node_network_transmit_compressed",
        "Network device statistic transmit_compressed.",
    ),
];

/// At most this many devices are exported (a box with thousands of VLANs stays bounded).
pub const MAX_DEVICES: usize = 256;

/// `node_network_{receive,transmit}_*_total{device}` from /proc/net/dev (`lo` included, as
/// node_exporter does).
pub fn net_dev(text: &str) -> Vec<Family> {
    let mut fams: Vec<Family> = NET_DEV
        .iter()
        .map(|(n, h)| Family::new(n, MetricType::Counter, h))
        .collect();
    for line in text.lines().skip(2).take(MAX_DEVICES) {
        let Some((dev, rest)) = line.split_once(':') else {
            continue;
        };
        let dev = dev.trim();
        let cols: Vec<u64> = rest
            .split_ascii_whitespace()
            .map_while(|t| t.parse().ok())
            .collect();
        if dev.is_empty() || cols.len() < NET_DEV.len() {
            continue;
        }
        for (f, v) in fams.iter_mut().zip(cols) {
            f.push1("device", dev, v as f64);
        }
    }
    fams
}

/// `node_thermal_zone_temp{zone,type}` in °C: `(zone number, type, millidegrees text)`.
pub fn thermal_zones(zones: &[(String, String, String)]) -> Family {
    let mut f = Family::new(
        "node_thermal_zone_temp",
        MetricType::Gauge,
        "Zone temperature in Celsius",
    );
    for (zone, kind, milli) in zones {
        if let Ok(m) = milli.trim().parse::<i64>() {
            f.push(
                vec![("zone", zone.clone()), ("type", kind.trim().to_string())],
                m as f64 / 1000.0,
            );
        }
    }
    f
}

/// `node_cpu_scaling_frequency_hertz{cpu}`: `(cpu, scaling_cur_freq text in kHz)`.
pub fn scaling_frequency(cpus: &[(u32, String)]) -> Family {
    let mut f = Family::new(
        "node_cpu_scaling_frequency_hertz",
        MetricType::Gauge,
        "Current scaled CPU thread frequency in hertz.",
    );
    for (cpu, khz) in cpus {
        if let Ok(k) = khz.trim().parse::<u64>() {
            f.push1("cpu", cpu.to_string(), k as f64 * 1000.0);
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::metrics::Sample;

    fn value(f: &Family, labels: &[(&str, &str)]) -> Option<f64> {
        f.samples
            .iter()
            .find(|s: &&Sample| {
                labels
                    .iter()
                    .all(|(k, v)| s.labels.iter().any(|(a, b)| a == k && b == v))
            })
            .map(|s| s.value)
    }

    #[test]
    fn cpu_seconds_per_mode() {
        let stat = "cpu  10 0 20 300 0 0 5 0 0 0\ncpu0 1000 2 300 40000 5 6 700 8 0 0\nintr 1 2\n";
        let f = cpu_seconds(stat, 100.0);
        assert_eq!(f.samples.len(), 8, "the aggregate line is not a cpu");
        assert_eq!(value(&f, &[("cpu", "0"), ("mode", "softirq")]), Some(7.0));
        assert_eq!(value(&f, &[("cpu", "0"), ("mode", "idle")]), Some(400.0));
    }

    #[test]
    fn softirqs_every_vector() {
        // An MT7621's /proc/softirqs (4 threads), cut to three vectors.
        let text = "                    CPU0       CPU1       CPU2       CPU3       \n\
          HI:          0          0          0          0\n\
      NET_TX:       1201        300         17          4\n\
      NET_RX:    9123456     812345      23456       3456\n";
        let f = softirqs(text);
        assert_eq!(f.samples.len(), 12);
        assert_eq!(
            value(&f, &[("cpu", "0"), ("type", "NET_RX")]),
            Some(9123456.0)
        );
        assert_eq!(value(&f, &[("cpu", "3"), ("type", "NET_TX")]), Some(4.0));
    }

    #[test]
    fn softnet_present_and_missing() {
        let text = "0000a8c3 00000002 0000001f 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n\
00000010 00000000 00000001 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000001\n";
        let f = softnet(Some(text));
        assert_eq!(value(&f[0], &[("cpu", "0")]), Some(43203.0));
        assert_eq!(value(&f[1], &[("cpu", "0")]), Some(2.0));
        assert_eq!(value(&f[2], &[("cpu", "0")]), Some(31.0));
        assert_eq!(value(&f[2], &[("cpu", "1")]), Some(1.0));
        // A stripped /proc: the families have no sample, so nothing is exported.
        assert!(softnet(None).iter().all(|f| f.samples.is_empty()));
    }

    #[test]
    fn net_dev_columns() {
        let text = "Inter-|   Receive                                                |  Transmit\n \
face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n\
    lo:    1000      10    0    0    0     0          0         0     1000      10    0    0    0     0       0          0\n\
  eth0: 123456789  98765    1    2    0     0          0         3 987654321  87654    0    4    0     0       0          0\n";
        let f = net_dev(text);
        let by = |n: &str| f.iter().find(|x| x.name == n).unwrap();
        assert_eq!(
            value(by("node_network_receive_bytes"), &[("device", "eth0")]),
            Some(123456789.0)
        );
        assert_eq!(
            value(by("node_network_receive_drop"), &[("device", "eth0")]),
            Some(2.0)
        );
        assert_eq!(
            value(by("node_network_transmit_drop"), &[("device", "eth0")]),
            Some(4.0)
        );
        assert_eq!(
            value(by("node_network_transmit_packets"), &[("device", "lo")]),
            Some(10.0)
        );
    }

    #[test]
    fn thermal_and_frequency() {
        let t = thermal_zones(&[
            ("0".into(), "cpu-thermal\n".into(), "48250\n".into()),
            ("1".into(), "wifi".into(), "N/A".into()),
        ]);
        assert_eq!(t.samples.len(), 1);
        assert_eq!(
            value(&t, &[("zone", "0"), ("type", "cpu-thermal")]),
            Some(48.25)
        );
        let f = scaling_frequency(&[(0, "880000\n".into())]);
        assert_eq!(value(&f, &[("cpu", "0")]), Some(880e6));
    }
}
