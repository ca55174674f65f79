//! From Wi-Fi readings to figures, with no I/O: the report of `routerbench wifi` (two readings
//! an interval apart: rates, the channel's use, the make-wifi-fast verdict per radio), one
//! monitor interval's station and radio samples, and the summary of a monitored window
//! (per-station throughput, retries per second, airtime share; Jain's index over airtime;
//! stations that joined or left). A figure the driver does not report stays `None`.

use super::nl80211::{self, StationInfo, WiphyInfo};
use super::wifi::{RadioReading, WifiReading, mac_text};
use crate::results::monitor::{MonitorSample, ProcessCpu};
use crate::results::wifi::{
    ChannelSurvey, Radio, RadioDebugfs, RadioSample, RadioSummary, Station, StationDebugfs,
    StationSample, StationSummary, WifiChannel, WifiFeatures, WifiInterface, WifiRate, WifiReport,
    WifiSummary, jain_index,
};
use std::collections::HashMap;

/// What the report needs beside the two readings (read from debugfs and /proc by the caller).
#[derive(Debug, Default)]
pub struct Extras {
    /// Per radio: its debugfs figures, or why there are none.
    pub radio_debugfs: HashMap<String, Result<RadioDebugfs, String>>,
    /// Per (phy, dev, MAC).
    pub station_debugfs: HashMap<(String, String, String), StationDebugfs>,
    pub hostapd: Vec<ProcessCpu>,
}

/// Bytes moved by a station since association below which its zero airtime says nothing.
const AIRTIME_EVIDENCE_BYTES: u64 = 64 * 1024;

/// The radio's features from its extended-feature bits.
pub fn features(w: &WiphyInfo) -> WifiFeatures {
    WifiFeatures {
        txqs: w.has_ext_feature(nl80211::EXT_FEATURE_TXQS),
        airtime_fairness: w.has_ext_feature(nl80211::EXT_FEATURE_AIRTIME_FAIRNESS),
        aql: w.has_ext_feature(nl80211::EXT_FEATURE_AQL),
    }
}

/// Whether a radio's driver registers airtime: Some(true) once any station's airtime moved,
/// Some(false) when stations moved bytes (64 KiB or more) and none had any airtime, None when
/// no station moved enough to tell.
pub fn airtime_reported(stations: &[(String, StationInfo)]) -> Option<bool> {
    let airtime = |s: &StationInfo| s.tx_duration_us.unwrap_or(0) + s.rx_duration_us.unwrap_or(0);
    if stations.iter().any(|(_, s)| airtime(s) > 0) {
        return Some(true);
    }
    let moved = stations
        .iter()
        .any(|(_, s)| s.tx_bytes.unwrap_or(0) + s.rx_bytes.unwrap_or(0) >= AIRTIME_EVIDENCE_BYTES);
    moved.then_some(false)
}

/// Where a driver's airtime comes from, where it is known from the driver's source.
fn airtime_source(driver: &str) -> Option<&'static str> {
    if driver == "ath9k" || driver.starts_with("ath9k_") {
        // ath_tx_count_airtime: the hardware's frame duration times the tries.
        Some("driver-measured")
    } else if driver.starts_with("ath10k") {
        // ath10k_mac_update_airtime: a host estimate from the last TX rate (6 Mbit/s if none).
        Some("host-estimated")
    } else {
        None
    }
}

/// One verdict per radio in the field's words, e.g. "ath9k: fq_codel queues, airtime
/// fairness on driver-measured airtime, no AQL".
pub fn verdict(driver: Option<&str>, f: WifiFeatures, reported: Option<bool>) -> String {
    let name = driver.unwrap_or("unknown driver");
    let mut parts: Vec<String> = Vec::new();
    parts.push(if f.txqs {
        "fq_codel queues".into()
    } else {
        "no mac80211 fq_codel queues (the driver's own queues, or the interface's qdisc)".into()
    });
    let on = || match (airtime_source(name), reported) {
        (Some(src), _) => format!(" on {src} airtime"),
        (None, Some(true)) => " on driver-reported airtime".into(),
        (None, Some(false)) => ", but no airtime reported by the driver".into(),
        (None, None) => String::new(),
    };
    parts.push(if f.airtime_fairness {
        format!("airtime fairness{}", on())
    } else {
        "no airtime fairness".into()
    });
    parts.push(if f.aql {
        if f.airtime_fairness {
            "AQL".into()
        } else {
            format!("AQL{}", on())
        }
    } else {
        "no AQL".into()
    });
    let mut v = format!("{name}: {}", parts.join(", "));
    if reported == Some(false) && !f.airtime_fairness && !f.aql {
        v.push_str("; airtime not reported by the driver");
    }
    v
}

fn rate(r: &Option<nl80211::RateInfo>) -> Option<WifiRate> {
    r.as_ref().map(|r| WifiRate {
        mbps: r.mbps(),
        desc: r.describe(),
    })
}

fn channel(i: &nl80211::InterfaceInfo) -> Option<WifiChannel> {
    let f = i.freq_mhz?;
    let (number, band) = nl80211::channel_of(f);
    Some(WifiChannel {
        freq_mhz: f,
        number,
        band: band.into(),
        width: i.chan_width.map(nl80211::width_name),
        center_freq1_mhz: i.center_freq1_mhz,
    })
}

/// A counter's growth from `a` to `b`; a counter that went back was reset (the station
/// re-associated), so all of `b` is new.
fn grew(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    let b = b?;
    Some(match a {
        Some(a) if b >= a => b - a,
        _ => b,
    })
}

/// The same station in an earlier reading (same AP interface and MAC, not re-associated).
fn earlier<'a>(
    prev: Option<&'a RadioReading>,
    dev: &str,
    s: &StationInfo,
) -> Option<&'a StationInfo> {
    prev?
        .stations
        .iter()
        .find(|(d, p)| d == dev && p.mac == s.mac)
        .map(|(_, p)| p)
        .filter(|p| match (p.connected_s, s.connected_s) {
            (Some(a), Some(b)) => b >= a,
            _ => true,
        })
}

fn survey(a: Option<&nl80211::SurveyInfo>, b: &nl80211::SurveyInfo) -> ChannelSurvey {
    let pct = |x: Option<u64>, y: Option<u64>| -> Option<f64> {
        let dt = b.time_ms?.checked_sub(a?.time_ms?)?;
        let d = y?.checked_sub(x?)?;
        (dt > 0).then(|| (100.0 * d as f64 / dt as f64).min(100.0))
    };
    ChannelSurvey {
        freq_mhz: b.freq_mhz.unwrap_or(0),
        noise_dbm: b.noise_dbm,
        busy_pct: pct(a.and_then(|a| a.busy_ms), b.busy_ms),
        rx_pct: pct(a.and_then(|a| a.rx_ms), b.rx_ms),
        tx_pct: pct(a.and_then(|a| a.tx_ms), b.tx_ms),
        time_ms: a
            .and_then(|a| a.time_ms)
            .zip(b.time_ms)
            .and_then(|(x, y)| y.checked_sub(x)),
    }
}

/// The report of `routerbench wifi` from two readings `b.at − a.at` apart.
pub fn build_report(a: &WifiReading, b: &WifiReading, extras: Extras) -> WifiReport {
    let dt = b.at.duration_since(a.at).as_secs_f64().max(1e-6);
    let mut report = WifiReport {
        interval_s: dt,
        hostapd: extras.hostapd,
        notes: b.errors.clone(),
        ..Default::default()
    };
    for r in &b.radios {
        let prev = a.radios.iter().find(|p| p.wiphy.index == r.wiphy.index);
        let f = features(&r.wiphy);
        let reported = airtime_reported(&r.stations);
        let phy = r.wiphy.name.clone();
        let mut radio = Radio {
            phy: phy.clone(),
            wiphy: r.wiphy.index,
            driver: r.driver.clone(),
            bands: r
                .wiphy
                .bands
                .iter()
                .map(|b| nl80211::band_name(*b).to_string())
                .collect(),
            channel: r.interfaces.iter().find_map(channel),
            features: f,
            txq_limit_packets: r.wiphy.txq_limit,
            txq_memory_limit_bytes: r.wiphy.txq_memory_limit,
            txq_quantum_bytes: r.wiphy.txq_quantum,
            txq: r.wiphy.txq_stats,
            survey: r
                .survey
                .as_ref()
                .map(|s| survey(prev.and_then(|p| p.survey.as_ref()), s)),
            airtime_reported: reported,
            verdict: verdict(r.driver.as_deref(), f, reported),
            ..Default::default()
        };
        match extras.radio_debugfs.get(&phy) {
            Some(Ok(d)) => radio.debugfs = Some(d.clone()),
            Some(Err(note)) if !report.notes.contains(note) => report.notes.push(note.clone()),
            _ => {}
        }
        radio.interfaces = r
            .interfaces
            .iter()
            .map(|i| WifiInterface {
                name: i.name.clone(),
                ifindex: i.ifindex,
                iftype: i
                    .iftype
                    .map_or_else(|| "unknown".into(), nl80211::iftype_name),
                mac: i.mac.as_ref().map(mac_text),
                ssid: i
                    .ssid
                    .as_ref()
                    .map(|s| String::from_utf8_lossy(s).into_owned()),
                channel: channel(i),
                multicast_txq: i.txq_stats,
            })
            .collect();
        for (dev, s) in &r.stations {
            let mac = mac_text(&s.mac);
            let old = earlier(prev, dev, s);
            let mbps = |x: Option<u64>, y: Option<u64>| {
                old.map(|_| grew(x, y).unwrap_or(0) as f64 * 8.0 / dt / 1e6)
            };
            let airtime_ok = reported != Some(false);
            radio.stations.push(Station {
                ip: b.neighbours.get(&mac).cloned(),
                signal_dbm: s.signal_dbm,
                signal_avg_dbm: s.signal_avg_dbm,
                tx_rate: rate(&s.tx_rate),
                rx_rate: rate(&s.rx_rate),
                expected_mbps: s.expected_throughput_kbps.map(|k| k as f64 / 1000.0),
                tx_bytes: s.tx_bytes,
                rx_bytes: s.rx_bytes,
                tx_packets: s.tx_packets,
                rx_packets: s.rx_packets,
                tx_retries: s.tx_retries,
                tx_failed: s.tx_failed,
                tx_airtime_us: s.tx_duration_us.filter(|_| airtime_ok),
                rx_airtime_us: s.rx_duration_us.filter(|_| airtime_ok),
                airtime_weight: s.airtime_weight,
                inactive_ms: s.inactive_ms,
                connected_s: s.connected_s,
                tx_mbps: mbps(old.and_then(|o| o.tx_bytes), s.tx_bytes),
                rx_mbps: mbps(old.and_then(|o| o.rx_bytes), s.rx_bytes),
                tids: s.tids.clone(),
                debugfs: extras
                    .station_debugfs
                    .get(&(phy.clone(), dev.clone(), mac.clone()))
                    .cloned(),
                mac,
                dev: dev.clone(),
            });
        }
        report.radios.push(radio);
    }
    report
}

/// Sum of a station's TXQ backlog over its TIDs, (bytes, packets).
fn txq_backlog(s: &StationInfo) -> (Option<u64>, Option<u64>) {
    let q: Vec<_> = s.tids.iter().filter_map(|t| t.txq).collect();
    if q.is_empty() {
        return (None, None);
    }
    let sum = |f: fn(&crate::results::wifi::TxqStats) -> Option<u64>| {
        q.iter().filter_map(f).reduce(|a, b| a + b)
    };
    (sum(|t| t.backlog_bytes), sum(|t| t.backlog_packets))
}

fn txq_counter(
    s: &StationInfo,
    f: fn(&crate::results::wifi::TxqStats) -> Option<u64>,
) -> Option<u64> {
    s.tids
        .iter()
        .filter_map(|t| t.txq.as_ref().and_then(f))
        .reduce(|a, b| a + b)
}

/// One monitor interval's station and radio samples from two readings.
pub fn interval_samples(
    prev: &WifiReading,
    cur: &WifiReading,
) -> (Vec<StationSample>, Vec<RadioSample>) {
    let (mut stations, mut radios) = (Vec::new(), Vec::new());
    for r in &cur.radios {
        let p = prev.radios.iter().find(|p| p.wiphy.index == r.wiphy.index);
        let reported = airtime_reported(&r.stations) == Some(true);
        let first = stations.len();
        for (dev, s) in &r.stations {
            let old = earlier(p, dev, s);
            // A station new since the last reading counts from zero only if it associated
            // within the interval; one already there when sampling began starts its series.
            let fresh = old.is_none()
                && s.connected_s.is_some_and(|c| {
                    (c as f64) <= cur.at.duration_since(prev.at).as_secs_f64() + 1.0
                });
            let d = |f: fn(&StationInfo) -> Option<u64>| -> Option<u64> {
                match old {
                    Some(o) => grew(f(o), f(s)),
                    None if fresh => f(s),
                    None => f(s).map(|_| 0),
                }
            };
            let (backlog, backlog_pkts) = txq_backlog(s);
            stations.push(StationSample {
                mac: mac_text(&s.mac),
                dev: dev.clone(),
                phy: r.wiphy.name.clone(),
                tx_bytes: d(|s| s.tx_bytes).unwrap_or(0),
                rx_bytes: d(|s| s.rx_bytes).unwrap_or(0),
                tx_packets: d(|s| s.tx_packets).unwrap_or(0),
                rx_packets: d(|s| s.rx_packets).unwrap_or(0),
                tx_retries: d(|s| s.tx_retries),
                tx_failed: d(|s| s.tx_failed),
                tx_airtime_us: d(|s| s.tx_duration_us).filter(|_| reported),
                rx_airtime_us: d(|s| s.rx_duration_us).filter(|_| reported),
                airtime_share_pct: None,
                signal_dbm: s.signal_dbm.or(s.signal_avg_dbm),
                tx_rate_mbps: s.tx_rate.as_ref().and_then(|r| r.mbps()),
                rx_rate_mbps: s.rx_rate.as_ref().and_then(|r| r.mbps()),
                txq_backlog_bytes: backlog,
                txq_backlog_packets: backlog_pkts,
                txq_drops: match old {
                    Some(o) => grew(txq_counter(o, |t| t.drops), txq_counter(s, |t| t.drops)),
                    None => txq_counter(s, |t| t.drops).map(|v| if fresh { v } else { 0 }),
                },
                txq_ecn_marks: match old {
                    Some(o) => grew(
                        txq_counter(o, |t| t.ecn_marks),
                        txq_counter(s, |t| t.ecn_marks),
                    ),
                    None => txq_counter(s, |t| t.ecn_marks).map(|v| if fresh { v } else { 0 }),
                },
            });
        }
        let mine = &mut stations[first..];
        let airtime: Vec<f64> = mine
            .iter()
            .map(|s| (s.tx_airtime_us.unwrap_or(0) + s.rx_airtime_us.unwrap_or(0)) as f64)
            .collect();
        let total: f64 = airtime.iter().sum();
        if reported && total > 0.0 {
            for (s, a) in mine.iter_mut().zip(&airtime) {
                s.airtime_share_pct = Some(100.0 * a / total);
            }
        }
        let active: Vec<f64> = airtime.iter().copied().filter(|a| *a > 0.0).collect();
        radios.push(RadioSample {
            phy: r.wiphy.name.clone(),
            channel_busy_pct: r
                .survey
                .as_ref()
                .and_then(|s| survey(p.and_then(|p| p.survey.as_ref()), s).busy_pct),
            airtime_jain: if reported { jain_index(&active) } else { None },
            aql_pending_us: r.aql_pending_us,
        });
    }
    (stations, radios)
}

/// The Wi-Fi summary of a window's samples (`interval_s` apart); None when no sample had a
/// station or radio.
pub fn summarize(samples: &[MonitorSample], interval_s: f64) -> Option<WifiSummary> {
    if samples
        .iter()
        .all(|s| s.stations.is_empty() && s.radios.is_empty())
    {
        return None;
    }
    let iv = interval_s.max(1e-3);
    let mut out = WifiSummary::default();
    let mut order: Vec<(String, String, String)> = Vec::new();
    let mut by: HashMap<(String, String, String), StationSummary> = HashMap::new();
    let mut airtime: HashMap<(String, String, String), (u64, bool)> = HashMap::new();
    let mut retries: HashMap<(String, String, String), Option<u64>> = HashMap::new();
    let (t_first, t_last) = (
        samples.first().map_or(0.0, |s| s.t_s),
        samples.last().map_or(0.0, |s| s.t_s),
    );
    for s in samples {
        for st in &s.stations {
            let key = (st.phy.clone(), st.dev.clone(), st.mac.clone());
            let e = by.entry(key.clone()).or_insert_with(|| {
                order.push(key.clone());
                StationSummary {
                    mac: st.mac.clone(),
                    dev: st.dev.clone(),
                    phy: st.phy.clone(),
                    from_s: s.t_s - iv,
                    ..Default::default()
                }
            });
            e.to_s = s.t_s;
            e.tx_bytes += st.tx_bytes;
            e.rx_bytes += st.rx_bytes;
            e.tx_packets += st.tx_packets;
            e.rx_packets += st.rx_packets;
            if let Some(f) = st.tx_failed {
                e.tx_failed = Some(e.tx_failed.unwrap_or(0) + f);
            }
            if let Some(sig) = st.signal_dbm {
                e.signal_min_dbm = Some(e.signal_min_dbm.map_or(sig, |m| m.min(sig)));
            }
            if let Some(b) = st.txq_backlog_bytes {
                e.txq_backlog_max_bytes = Some(e.txq_backlog_max_bytes.map_or(b, |m| m.max(b)));
            }
            if let Some(d) = st.txq_drops {
                e.txq_drops = Some(e.txq_drops.unwrap_or(0) + d);
            }
            if let Some(m) = st.txq_ecn_marks {
                e.txq_ecn_marks = Some(e.txq_ecn_marks.unwrap_or(0) + m);
            }
            let r = retries.entry(key.clone()).or_insert(None);
            if let Some(x) = st.tx_retries {
                *r = Some(r.unwrap_or(0) + x);
            }
            let a = airtime.entry(key).or_insert((0, false));
            if st.tx_airtime_us.is_some() || st.rx_airtime_us.is_some() {
                a.0 += st.tx_airtime_us.unwrap_or(0) + st.rx_airtime_us.unwrap_or(0);
                a.1 = true;
            }
        }
    }
    // Per radio: the stations' airtime shares and Jain's index over them.
    let mut phys: Vec<String> = Vec::new();
    for s in samples {
        for r in &s.radios {
            if !phys.contains(&r.phy) {
                phys.push(r.phy.clone());
            }
        }
    }
    for phy in &phys {
        let keys: Vec<&(String, String, String)> = order.iter().filter(|k| &k.0 == phy).collect();
        let reported = keys.iter().any(|k| airtime.get(*k).is_some_and(|a| a.1));
        let total: u64 = keys
            .iter()
            .filter_map(|k| airtime.get(*k))
            .map(|a| a.0)
            .sum();
        if reported && total > 0 {
            for k in &keys {
                if let (Some(e), Some(a)) = (by.get_mut(*k), airtime.get(*k)) {
                    e.airtime_share_pct = Some(100.0 * a.0 as f64 / total as f64);
                }
            }
        }
        let active: Vec<f64> = keys
            .iter()
            .filter_map(|k| airtime.get(*k))
            .map(|a| a.0 as f64)
            .filter(|a| *a > 0.0)
            .collect();
        let radio_samples = samples
            .iter()
            .flat_map(|s| s.radios.iter().filter(|r| &r.phy == phy));
        let (mut busy, mut aql): (Option<f64>, Option<u64>) = (None, None);
        for r in radio_samples {
            if let Some(b) = r.channel_busy_pct {
                busy = Some(busy.map_or(b, |m| m.max(b)));
            }
            if let Some(p) = r.aql_pending_us {
                aql = Some(aql.map_or(p, |m| m.max(p)));
            }
        }
        out.radios.push(RadioSummary {
            phy: phy.clone(),
            airtime_jain: if reported { jain_index(&active) } else { None },
            airtime_reported: reported,
            channel_busy_max_pct: busy,
            aql_pending_max_us: aql,
        });
    }
    for key in order {
        let Some(mut e) = by.remove(&key) else {
            continue;
        };
        let span = (e.to_s - e.from_s).max(iv);
        e.tx_mbps = e.tx_bytes as f64 * 8.0 / span / 1e6;
        e.rx_mbps = e.rx_bytes as f64 * 8.0 / span / 1e6;
        e.retries_per_s = retries
            .get(&key)
            .copied()
            .flatten()
            .map(|r| r as f64 / span);
        if e.from_s > t_first - iv + 1e-9 {
            out.notes.push(format!(
                "station {} joined {} at {:.1} s: its series starts there",
                e.mac, e.dev, e.from_s
            ));
        }
        if e.to_s < t_last - 1e-9 {
            out.notes.push(format!(
                "station {} left {} at {:.1} s: its series ends there",
                e.mac, e.dev, e.to_s
            ));
        }
        out.stations.push(e);
    }
    Some(out)
}

#[cfg(test)]
#[path = "wifi_derive_tests.rs"]
mod tests;
