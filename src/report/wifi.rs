//! Wi-Fi as text: `routerbench wifi` (each radio with its make-wifi-fast verdict, queues,
//! channel use, AP interfaces and hostapd; each station with its address, signal, rates,
//! counters, airtime and queues) and the Wi-Fi lines of a monitored test's summary. What the
//! driver does not report is said in words, never printed as 0.

use crate::results::monitor::ProcessCpu;
use crate::results::wifi::{
    Radio, RadioDebugfs, Station, StationDebugfs, TxqStats, WifiRate, WifiReport, WifiSummary,
};

/// The words for a figure the driver does not report.
pub const NOT_REPORTED: &str = "not reported by the driver";

fn bytes(b: u64) -> String {
    match b {
        0..1000 => format!("{b} B"),
        1000..1_000_000 => format!("{:.1} KB", b as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.2} MB", b as f64 / 1e6),
        _ => format!("{:.2} GB", b as f64 / 1e9),
    }
}

fn opt<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map_or_else(|| NOT_REPORTED.to_string(), f)
}

fn mbps(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0} Mbit/s")
    } else {
        format!("{v:.1} Mbit/s")
    }
}

fn rate(r: &Option<WifiRate>) -> String {
    match r {
        Some(WifiRate {
            mbps: Some(m),
            desc,
        }) if !desc.is_empty() => {
            format!("{} ({desc})", self::mbps(*m))
        }
        Some(WifiRate { mbps: Some(m), .. }) => self::mbps(*m),
        _ => NOT_REPORTED.into(),
    }
}

/// `backlog 1.5 KB / 1 pkt, drops 3, marks 0, overlimit 0, overmemory 0, collisions 0`;
/// only the counters the kernel sent.
fn txq(q: &TxqStats) -> String {
    let mut parts = Vec::new();
    if let (Some(b), Some(p)) = (q.backlog_bytes, q.backlog_packets) {
        parts.push(format!("backlog {} / {p} pkt", bytes(b)));
    }
    for (name, v) in [
        ("drops", q.drops),
        ("marks", q.ecn_marks),
        ("overlimit", q.overlimit),
        ("overmemory", q.overmemory),
        ("collisions", q.collisions),
        ("flows", q.flows),
    ] {
        if let Some(v) = v {
            parts.push(format!("{name} {v}"));
        }
    }
    if parts.is_empty() {
        NOT_REPORTED.into()
    } else {
        parts.join(", ")
    }
}

fn radio_debugfs_lines(d: &RadioDebugfs, out: &mut String) {
    let mut aql = Vec::new();
    if let Some(e) = d.aql_enable {
        aql.push(if e {
            "enabled".to_string()
        } else {
            "disabled".to_string()
        });
    }
    if let Some(t) = d.aql_threshold_us {
        aql.push(format!("threshold {t} µs"));
    }
    if let Some(be) = d.aql_txq_limit.iter().find(|l| l.ac == "BE") {
        aql.push(format!("BE limit {}/{} µs", be.low_us, be.high_us));
    }
    if let Some((_, t)) = d.aql_pending_us.iter().find(|(ac, _)| ac == "total") {
        aql.push(format!("pending {t} µs"));
    }
    if !aql.is_empty() {
        out.push_str(&format!("  AQL (debugfs)  {}\n", aql.join(", ")));
    }
    if let Some(f) = &d.airtime_flags {
        let what = if f.is_empty() {
            "none (the scheduler counts no airtime)".to_string()
        } else {
            f.join(" + ")
        };
        out.push_str(&format!("  airtime flags  {what}\n"));
    }
    if !d.aqm.is_empty() {
        let v: Vec<String> = d.aqm.iter().map(|(k, v)| format!("{k} {v}")).collect();
        out.push_str(&format!("  aqm (debugfs)  {}\n", v.join(", ")));
    }
}

fn station_debugfs_line(d: &StationDebugfs) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(s) = &d.airtime_scheduler {
        let acs: Vec<String> = d
            .airtime_per_ac_us
            .iter()
            .map(|(ac, v)| format!("{ac} {v}"))
            .collect();
        parts.push(format!("{s} µs {}", acs.join(" ")));
    }
    if !d.aql_queued_us.is_empty() {
        let q: u64 = d.aql_queued_us.iter().map(|(_, v)| v).sum();
        parts.push(format!("AQL queued {q} µs"));
    }
    if let (Some(t), Some(i)) = (d.codel_target_us, d.codel_interval_us) {
        parts.push(format!(
            "CoDel target {} ms interval {} ms",
            t / 1000,
            i / 1000
        ));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

fn station_block(s: &Station, out: &mut String) {
    let who = s.ip.as_deref().unwrap_or("IP not in the neighbour table");
    let connected = s
        .connected_s
        .map_or(String::new(), |c| format!(", connected {c} s"));
    out.push_str(&format!(
        "  station {} {who} on {}{connected}\n",
        s.mac, s.dev
    ));
    let sig = match (s.signal_dbm, s.signal_avg_dbm) {
        (Some(a), Some(b)) => format!("{a} dBm (avg {b})"),
        (Some(a), None) | (None, Some(a)) => format!("{a} dBm"),
        (None, None) => NOT_REPORTED.into(),
    };
    out.push_str(&format!(
        "    signal {sig}; tx rate {}; rx rate {}; expected {}\n",
        rate(&s.tx_rate),
        rate(&s.rx_rate),
        opt(s.expected_mbps, mbps)
    ));
    let now = match (s.tx_mbps, s.rx_mbps) {
        (Some(t), Some(r)) => format!(" (now {} to, {} from)", mbps(t), mbps(r)),
        _ => String::new(),
    };
    out.push_str(&format!(
        "    to it {} in {} pkts, {} retries, {} failed; from it {} in {} pkts{now}\n",
        opt(s.tx_bytes, bytes),
        opt(s.tx_packets, |v| v.to_string()),
        opt(s.tx_retries, |v| v.to_string()),
        opt(s.tx_failed, |v| v.to_string()),
        opt(s.rx_bytes, bytes),
        opt(s.rx_packets, |v| v.to_string()),
    ));
    let airtime = match (s.tx_airtime_us, s.rx_airtime_us) {
        (None, None) => NOT_REPORTED.to_string(),
        (t, r) => format!(
            "tx {} ms, rx {} ms",
            opt(t, |v| format!("{:.1}", v as f64 / 1e3)),
            opt(r, |v| format!("{:.1}", v as f64 / 1e3))
        ),
    };
    out.push_str(&format!(
        "    airtime {airtime}; weight {}\n",
        opt(s.airtime_weight, |w| w.to_string())
    ));
    let mut unused = Vec::new();
    for t in s.tids.iter().filter(|t| t.txq.is_some()) {
        if let Some(q) = &t.txq {
            let name = if t.tid == 16 {
                "non-QoS".to_string()
            } else {
                format!("TID {}", t.tid)
            };
            let used = [
                q.flows,
                q.backlog_packets,
                q.drops,
                q.ecn_marks,
                q.tx_packets,
            ]
            .iter()
            .any(|v| v.unwrap_or(0) > 0);
            if used {
                out.push_str(&format!("    queue {name}: {}\n", txq(q)));
            } else {
                unused.push(name);
            }
        }
    }
    if !unused.is_empty() {
        // A queue no packet ever entered: one line for all of them (a station has 16 TIDs).
        out.push_str(&format!("    queues never used: {}\n", tid_ranges(&unused)));
    }
    if let Some(d) = s.debugfs.as_ref().and_then(station_debugfs_line) {
        out.push_str(&format!("    debugfs {d}\n"));
    }
}

/// `TID 1, TID 2, TID 3, non-QoS` → `TID 1-3, non-QoS`.
fn tid_ranges(names: &[String]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut run: Option<(u16, u16)> = None;
    let flush = |run: &mut Option<(u16, u16)>, parts: &mut Vec<String>| {
        if let Some((a, b)) = run.take() {
            parts.push(if a == b {
                format!("TID {a}")
            } else {
                format!("TID {a}-{b}")
            });
        }
    };
    for n in names {
        match n.strip_prefix("TID ").and_then(|v| v.parse::<u16>().ok()) {
            Some(t) => match run {
                Some((a, b)) if b + 1 == t => run = Some((a, t)),
                _ => {
                    flush(&mut run, &mut parts);
                    run = Some((t, t));
                }
            },
            None => {
                flush(&mut run, &mut parts);
                parts.push(n.clone());
            }
        }
    }
    flush(&mut run, &mut parts);
    parts.join(", ")
}

fn radio_block(r: &Radio, hostapd: &[ProcessCpu], out: &mut String) {
    let chan = r.channel.as_ref().map_or_else(
        || format!("{} (no channel: no interface up)", r.bands.join(" + ")),
        |c| {
            format!(
                "{} channel {} ({} MHz){}",
                c.band,
                c.number.map_or("?".into(), |n| n.to_string()),
                c.freq_mhz,
                c.width.as_ref().map_or(String::new(), |w| format!(", {w}"))
            )
        },
    );
    out.push_str(&format!(
        "{}  {}  {chan}\n",
        r.phy,
        r.driver.as_deref().unwrap_or("driver unknown")
    ));
    out.push_str(&format!("  make-wifi-fast {}\n", r.verdict));
    if r.features.txqs {
        let limits = format!(
            "limit {} pkts, memory {}, quantum {}",
            opt(r.txq_limit_packets, |v| v.to_string()),
            opt(r.txq_memory_limit_bytes, bytes),
            opt(r.txq_quantum_bytes, |v| format!("{v} B"))
        );
        let stats = r.txq.as_ref().map_or(NOT_REPORTED.to_string(), txq);
        out.push_str(&format!("  TXQs           {limits}; {stats}\n"));
    }
    match &r.survey {
        Some(s) => out.push_str(&format!(
            "  channel use    busy {}, rx {}, tx {} over {}; noise {}\n",
            opt(s.busy_pct, |v| format!("{v:.1} %")),
            opt(s.rx_pct, |v| format!("{v:.1} %")),
            opt(s.tx_pct, |v| format!("{v:.1} %")),
            opt(s.time_ms, |v| format!("{v} ms")),
            opt(s.noise_dbm, |v| format!("{v} dBm"))
        )),
        None => out.push_str(&format!("  channel use    {NOT_REPORTED} (no survey)\n")),
    }
    for i in &r.interfaces {
        let ssid = i
            .ssid
            .as_ref()
            .map_or(String::new(), |s| format!(" SSID {s:?}"));
        let mc = i
            .multicast_txq
            .as_ref()
            .map_or(String::new(), |q| format!("; multicast TXQ {}", txq(q)));
        out.push_str(&format!("  {} {}{ssid}{mc}\n", i.iftype, i.name));
    }
    if let Some(d) = &r.debugfs {
        radio_debugfs_lines(d, out);
    }
    if r.interfaces.iter().any(|i| i.iftype == "AP") {
        let h: Vec<String> = hostapd
            .iter()
            .map(|p| format!("{}[{}] {:.1} % CPU", p.comm, p.pid, p.cpu_pct))
            .collect();
        out.push_str(&format!(
            "  hostapd        {}\n",
            if h.is_empty() {
                "not seen running (or idle over the interval)".to_string()
            } else {
                h.join(", ")
            }
        ));
    }
    out.push_str(&format!("  stations       {}\n", r.stations.len()));
    for s in &r.stations {
        station_block(s, out);
    }
}

/// `routerbench wifi`'s text.
pub fn render_report(w: &WifiReport) -> String {
    let mut out = String::from("== Wi-Fi\n");
    for r in &w.radios {
        radio_block(r, &w.hostapd, &mut out);
    }
    if w.radios.is_empty() && w.notes.is_empty() {
        out.push_str("no radio in this network namespace\n");
    }
    for n in &w.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

/// The Wi-Fi lines of a monitored window's summary.
pub fn render_summary(w: &WifiSummary) -> String {
    let mut out = String::new();
    for r in &w.radios {
        let fair = match (r.airtime_reported, r.airtime_jain) {
            (false, _) => format!("airtime {NOT_REPORTED}"),
            (true, Some(j)) => format!("airtime fairness (Jain) {j:.3}"),
            (true, None) => "airtime fairness: fewer than two stations used airtime".into(),
        };
        let busy = r
            .channel_busy_max_pct
            .map_or(String::new(), |b| format!(", channel busy max {b:.0} %"));
        let aql = r
            .aql_pending_max_us
            .map_or(String::new(), |a| format!(", AQL pending max {a} µs"));
        out.push_str(&format!("wifi       {}: {fair}{busy}{aql}\n", r.phy));
    }
    for s in &w.stations {
        let share = s
            .airtime_share_pct
            .map_or(String::new(), |a| format!(", airtime {a:.0} %"));
        let retries = s
            .retries_per_s
            .map_or(String::new(), |r| format!(", {r:.1} retries/s"));
        let backlog = s
            .txq_backlog_max_bytes
            .map_or(String::new(), |b| format!(", TXQ max {}", bytes(b)));
        let signal = s
            .signal_min_dbm
            .map_or(String::new(), |v| format!(", signal min {v} dBm"));
        out.push_str(&format!(
            "  station  {} on {}: to it {}, from it {}{retries}{share}{backlog}{signal}\n",
            s.mac,
            s.dev,
            mbps(s.tx_mbps),
            mbps(s.rx_mbps)
        ));
    }
    for n in &w.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::wifi::{RadioSummary, StationSummary, WifiFeatures};

    #[test]
    fn unreported_is_said_never_zero() {
        let r = WifiReport {
            interval_s: 1.0,
            radios: vec![Radio {
                phy: "phy0".into(),
                driver: Some("mac80211_hwsim".into()),
                bands: vec!["2.4 GHz".into()],
                features: WifiFeatures {
                    txqs: true,
                    ..Default::default()
                },
                verdict: "mac80211_hwsim: fq_codel queues, no airtime fairness, no AQL".into(),
                stations: vec![Station {
                    mac: "02:00:00:00:01:00".into(),
                    dev: "wlan0".into(),
                    tx_bytes: Some(12_000_000),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let t = render_report(&r);
        assert!(
            t.contains("make-wifi-fast mac80211_hwsim: fq_codel queues"),
            "{t}"
        );
        assert!(t.contains("airtime not reported by the driver"), "{t}");
        assert!(t.contains("signal not reported by the driver"), "{t}");
        assert!(t.contains("to it 12.00 MB"), "{t}");
        assert!(
            t.contains("channel use    not reported by the driver (no survey)"),
            "{t}"
        );
        assert!(!t.contains("airtime tx 0"), "{t}");
    }

    #[test]
    fn summary_lines() {
        let w = WifiSummary {
            stations: vec![StationSummary {
                mac: "02:00:00:00:01:00".into(),
                dev: "wlan0".into(),
                phy: "phy0".into(),
                tx_mbps: 18.24,
                rx_mbps: 1.05,
                airtime_share_pct: Some(61.0),
                ..Default::default()
            }],
            radios: vec![RadioSummary {
                phy: "phy0".into(),
                airtime_jain: Some(0.913),
                airtime_reported: true,
                ..Default::default()
            }],
            notes: vec!["station x joined".into()],
        };
        let t = render_summary(&w);
        assert!(t.contains("airtime fairness (Jain) 0.913"), "{t}");
        assert!(
            t.contains("to it 18.2 Mbit/s, from it 1.1 Mbit/s, airtime 61 %"),
            "{t}"
        );
        assert!(t.contains("note: station x joined"));
    }

    #[test]
    fn unused_queues_in_ranges() {
        let n = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            super::tid_ranges(&n(&["TID 1", "TID 2", "TID 3", "TID 5", "non-QoS"])),
            "TID 1-3, TID 5, non-QoS"
        );
        assert_eq!(super::tid_ranges(&n(&["TID 0"])), "TID 0");
    }
}
