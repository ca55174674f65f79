//! The router's view of one browser client: which device the route to it leaves by, that
//! device's queue (qdisc backlog, BQL, drops), the CPU, the client as a Wi-Fi station, and the
//! verdict of where the queue built. Digests of monitor samples for the page; pure but for
//! reading the routing and neighbour tables.

use crate::results::monitor::MonitorSample;
use crate::results::web::WebStation;
use serde::Serialize;
use std::net::IpAddr;
use std::path::Path;

/// One monitor interval as the page shows it.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct RouterPoint {
    pub t_s: f64,
    pub cpu_max_pct: Option<f64>,
    pub softirq_max_pct: Option<f64>,
    /// The queue toward the client: its device's root qdisc backlog (highest in the interval).
    pub queue_bytes: u64,
    pub queue_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bql_bytes: Option<u64>,
    pub drops: u64,
    /// The fullest queue of any device this interval: (device, ms at its shaped rate, bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fullest: Option<(String, Option<f64>, u64)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub station: Option<crate::results::wifi::StationSample>,
}

/// A /proc/net/route address word: the kernel prints the network-order bytes as a host-order
/// integer, so the address is that integer's bytes in this machine's order.
fn route_word(s: &str) -> Option<u32> {
    u32::from_str_radix(s, 16)
        .ok()
        .map(|x| u32::from_be_bytes(x.to_ne_bytes()))
}

/// The device of the longest-prefix route to `ip` in /proc/net/route or /proc/net/ipv6_route
/// (under `root`), as the kernel would pick it (metrics and policy routing aside).
pub fn route_device(root: &Path, ip: IpAddr) -> Option<String> {
    match crate::net::addr::canonical_ip(ip) {
        IpAddr::V4(v4) => {
            let text = std::fs::read_to_string(root.join("proc/net/route")).ok()?;
            let want = u32::from(v4);
            let mut best: Option<(u32, String)> = None;
            for l in text.lines().skip(1).take(10_000) {
                let w: Vec<&str> = l.split_whitespace().collect();
                let (Some(dev), Some(dst), Some(mask)) = (w.first(), w.get(1), w.get(7)) else {
                    continue;
                };
                let (Some(dst), Some(mask)) = (route_word(dst), route_word(mask)) else {
                    continue;
                };
                if want & mask == dst & mask
                    && best
                        .as_ref()
                        .is_none_or(|(m, _)| mask.count_ones() > m.count_ones())
                {
                    best = Some((mask, dev.to_string()));
                }
            }
            best.map(|(_, d)| d)
        }
        IpAddr::V6(v6) => {
            let text = std::fs::read_to_string(root.join("proc/net/ipv6_route")).ok()?;
            let want = u128::from(v6);
            let mut best: Option<(u32, String)> = None;
            for l in text.lines().take(10_000) {
                let w: Vec<&str> = l.split_whitespace().collect();
                let (Some(dst), Some(len), Some(dev)) = (w.first(), w.get(1), w.get(9)) else {
                    continue;
                };
                let (Ok(dst), Ok(len)) =
                    (u128::from_str_radix(dst, 16), u32::from_str_radix(len, 16))
                else {
                    continue;
                };
                if len > 128 || *dev == "lo" {
                    continue;
                }
                let mask = if len == 0 {
                    0
                } else {
                    u128::MAX << (128 - len)
                };
                if want & mask == dst & mask && best.as_ref().is_none_or(|(b, _)| len > *b) {
                    best = Some((len, dev.to_string()));
                }
            }
            best.map(|(_, d)| d)
        }
    }
}

/// The client's MAC from the neighbour table (IPv4), to find it among the Wi-Fi stations.
pub fn client_mac(root: &Path, ip: IpAddr) -> Option<String> {
    let IpAddr::V4(v4) = crate::net::addr::canonical_ip(ip) else {
        return None;
    };
    let text = std::fs::read_to_string(root.join("proc/net/arp")).ok()?;
    let want = v4.to_string();
    crate::monitor::wifi::parse_arp(&text)
        .into_iter()
        .find(|(_, ip)| *ip == want)
        .map(|(mac, _)| mac)
}

/// One sample's digest for the client on `dev` (with Wi-Fi MAC `mac`).
pub fn point(s: &MonitorSample, dev: Option<&str>, mac: Option<&str>) -> RouterPoint {
    let max = |v: &[f64]| v.iter().copied().reduce(f64::max);
    let q = dev.and_then(|d| s.queues.iter().find(|q| q.dev == d));
    let fullest = s
        .queues
        .iter()
        .filter(|q| q.backlog_bytes_max.unwrap_or(0) > 0)
        .max_by(|a, b| {
            let key = |q: &crate::results::monitor::QueueSample| {
                q.backlog_ms_max
                    .unwrap_or(q.backlog_bytes_max.unwrap_or(0) as f64 / 1e6)
            };
            key(a).total_cmp(&key(b))
        })
        .map(|q| {
            (
                q.dev.clone(),
                q.backlog_ms_max,
                q.backlog_bytes_max.unwrap_or(0),
            )
        });
    RouterPoint {
        t_s: s.t_s,
        cpu_max_pct: max(&s.cpu_busy_pct),
        softirq_max_pct: max(&s.cpu_softirq_pct),
        queue_bytes: q.and_then(|q| q.backlog_bytes_max).unwrap_or(0),
        queue_ms: q.and_then(|q| q.backlog_ms_max),
        bql_bytes: q.and_then(|q| q.bql_inflight_max_bytes),
        drops: q.and_then(|q| q.drops).unwrap_or(0),
        fullest,
        station: mac.and_then(|m| s.stations.iter().find(|st| st.mac == m).cloned()),
    }
}

/// A queue under this many ms (or bytes, where its rate is unknown) is no queue.
const QUEUE_MS: f64 = 5.0;
const QUEUE_BYTES: u64 = 15_000;

fn p95(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    crate::stats::percentile(&v, 95.0)
}

/// Where the queue built over the points after `from_s`, in words.
pub fn verdict(points: &[RouterPoint], from_s: f64, dev: Option<&str>) -> String {
    let loaded: Vec<&RouterPoint> = points.iter().filter(|p| p.t_s > from_s).collect();
    if loaded.is_empty() {
        return "waiting for the load…".into();
    }
    // The fullest device over the load, by its p95.
    let mut devs: Vec<(String, Vec<f64>, Vec<f64>)> = Vec::new();
    for p in &loaded {
        if let Some((d, ms, b)) = &p.fullest {
            let i = match devs.iter().position(|(x, _, _)| x == d) {
                Some(i) => i,
                None => {
                    devs.push((d.clone(), Vec::new(), Vec::new()));
                    devs.len() - 1
                }
            };
            devs[i].1.extend(*ms);
            devs[i].2.push(*b as f64);
        }
    }
    let n = loaded.len();
    let mut best: Option<(String, Option<f64>, f64)> = None;
    for (d, ms, mut bytes) in devs {
        // Intervals where the device held nothing count as empty.
        bytes.resize(n.max(bytes.len()), 0.0);
        let ms = (!ms.is_empty()).then(|| {
            let mut v = ms;
            v.resize(n.max(v.len()), 0.0);
            p95(v).unwrap_or(0.0)
        });
        let b = p95(bytes).unwrap_or(0.0);
        let key = ms.unwrap_or(b / 1e6);
        if best
            .as_ref()
            .is_none_or(|(_, m, bb)| key > m.unwrap_or(bb / 1e6))
        {
            best = Some((d, ms, b));
        }
    }
    let cpu = p95(loaded.iter().filter_map(|p| p.cpu_max_pct).collect());
    let cpu_note = match cpu {
        Some(c) if c >= 90.0 => {
            format!("; the router's busiest core was at {c:.0} % (p95): its CPU limits this test")
        }
        _ => String::new(),
    };
    match best {
        Some((d, ms, b))
            if ms.is_some_and(|m| m >= QUEUE_MS) || (ms.is_none() && b >= QUEUE_BYTES as f64) =>
        {
            let toward = if Some(d.as_str()) == dev {
                " (toward you)"
            } else {
                ""
            };
            let size = match ms {
                Some(m) => format!("{m:.1} ms ({:.0} kB) at p95", b / 1e3),
                None => format!("{:.0} kB at p95", b / 1e3),
            };
            format!("the queue built here: in the qdisc of {d}{toward}, {size}{cpu_note}")
        }
        _ => format!(
            "no queue built in this router's qdiscs: a delay under load built elsewhere (the Wi-Fi \
             driver, your device, or a queue the monitor cannot see){cpu_note}"
        ),
    }
}

/// The client's station over the points after `from_s` (medians, retries summed).
pub fn station(points: &[RouterPoint], from_s: f64) -> Option<WebStation> {
    let st: Vec<&crate::results::wifi::StationSample> = points
        .iter()
        .filter(|p| p.t_s > from_s)
        .filter_map(|p| p.station.as_ref())
        .collect();
    let first = st.first()?;
    let med = |v: Vec<f64>| {
        let v = crate::stats::sorted_finite(v);
        crate::stats::median(&v)
    };
    Some(WebStation {
        mac: first.mac.clone(),
        dev: first.dev.clone(),
        signal_dbm: med(st
            .iter()
            .filter_map(|s| s.signal_dbm.map(f64::from))
            .collect()),
        tx_rate_mbps: med(st.iter().filter_map(|s| s.tx_rate_mbps).collect()),
        rx_rate_mbps: med(st.iter().filter_map(|s| s.rx_rate_mbps).collect()),
        tx_retries: st
            .iter()
            .any(|s| s.tx_retries.is_some())
            .then(|| st.iter().filter_map(|s| s.tx_retries).sum()),
        airtime_share_pct: med(st.iter().filter_map(|s| s.airtime_share_pct).collect()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::monitor::QueueSample;

    fn root_with(files: &[(&str, &str)]) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!(
            "rb-web-route-{}-{}",
            std::process::id(),
            files.len()
        ));
        for (p, t) in files {
            let f = d.join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, t).unwrap();
        }
        d
    }

    #[test]
    fn longest_prefix_route_and_neighbour() {
        let route = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
            wan\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n\
            br-lan\t0001A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n";
        let arp = "IP address       HW type     Flags       HW address            Mask     Device\n\
            192.168.1.23     0x1         0x2         AA:bb:cc:dd:ee:01     *        br-lan\n";
        let six = "fd000000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     br-lan\n\
            00000000000000000000000000000000 00 00000000000000000000000000000000 00 fd000000000000000000000000000001 00000400 00000002 00000000 00000003     wan\n";
        let root = root_with(&[
            ("proc/net/route", route),
            ("proc/net/arp", arp),
            ("proc/net/ipv6_route", six),
        ]);
        assert_eq!(
            route_device(&root, "192.168.1.23".parse().unwrap()).as_deref(),
            Some("br-lan")
        );
        assert_eq!(
            route_device(&root, "8.8.8.8".parse().unwrap()).as_deref(),
            Some("wan")
        );
        assert_eq!(
            route_device(&root, "::ffff:192.168.1.5".parse().unwrap()).as_deref(),
            Some("br-lan")
        );
        assert_eq!(
            route_device(&root, "fd00::5".parse().unwrap()).as_deref(),
            Some("br-lan")
        );
        assert_eq!(
            route_device(&root, "2001:db8::1".parse().unwrap()).as_deref(),
            Some("wan")
        );
        assert_eq!(
            client_mac(&root, "192.168.1.23".parse().unwrap()).as_deref(),
            Some("aa:bb:cc:dd:ee:01")
        );
        assert_eq!(client_mac(&root, "192.168.1.24".parse().unwrap()), None);
        let _ = std::fs::remove_dir_all(root);
    }

    fn sample(t: f64, backlog: u64) -> MonitorSample {
        MonitorSample {
            t_s: t,
            cpu_busy_pct: vec![20.0, 40.0],
            queues: vec![QueueSample {
                dev: "rtr-lan".into(),
                backlog_bytes_max: Some(backlog),
                shaped_rate_bps: Some(20_000_000),
                backlog_ms_max: Some(backlog as f64 * 8.0 / 20e6 * 1e3),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn verdict_names_the_queue_or_says_elsewhere() {
        let full: Vec<RouterPoint> = (0..20)
            .map(|i| {
                point(
                    &sample(i as f64 * 0.5, if i > 4 { 64_000 } else { 0 }),
                    Some("rtr-lan"),
                    None,
                )
            })
            .collect();
        assert_eq!(full[10].queue_bytes, 64_000);
        assert_eq!(full[10].cpu_max_pct, Some(40.0));
        let v = verdict(&full, 2.0, Some("rtr-lan"));
        assert!(
            v.contains("the queue built here: in the qdisc of rtr-lan (toward you), 25.6 ms"),
            "{v}"
        );
        let empty: Vec<RouterPoint> = (0..20)
            .map(|i| point(&sample(i as f64 * 0.5, 1514), Some("rtr-lan"), None))
            .collect();
        let v = verdict(&empty, 2.0, Some("rtr-lan"));
        assert!(v.starts_with("no queue built"), "{v}");
    }
}
