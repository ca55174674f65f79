//! `routerbench wifi`'s measuring: every radio read twice an interval apart through the
//! Wi-Fi reader (`wifi.rs`), hostapd's CPU over the same interval, the debugfs figures where
//! the kernel has them, and the report built from them (`wifi_derive.rs`).

use super::wifi::{WifiReader, mac_text};
use std::path::Path;

/// `routerbench wifi`: every radio read twice `interval` apart (rates, channel use, hostapd's
/// CPU come from the difference), with the debugfs figures where the kernel has them. With no
/// radio, the report holds only the note that says so.
pub fn report(root: &Path, interval: std::time::Duration) -> crate::results::wifi::WifiReport {
    report_recording(root, interval, false).0
}

/// [`report`], and with `record` every nl80211 answer of its second reading (dump name,
/// generic netlink payload).
pub fn report_recording(
    root: &Path,
    interval: std::time::Duration,
    record: bool,
) -> (
    crate::results::wifi::WifiReport,
    Vec<(&'static str, Vec<u8>)>,
) {
    let mut reader = match WifiReader::open(root) {
        Ok(r) => r,
        Err(note) => {
            let r = crate::results::wifi::WifiReport {
                notes: vec![note],
                ..Default::default()
            };
            return (r, Vec::new());
        }
    };
    let hostapd_before = reader.hostapd_ticks();
    let a = reader.read();
    std::thread::sleep(interval);
    if record {
        reader.record_nl80211();
    }
    let b = reader.read();
    let raw = reader.recorded_nl80211();
    let mut extras = super::wifi_derive::Extras {
        hostapd: super::processes::busiest(
            &hostapd_before,
            &reader.hostapd_ticks(),
            b.at.duration_since(a.at).as_secs_f64(),
            8,
        ),
        ..Default::default()
    };
    // A hostapd idle over the interval still runs: listed at 0 %.
    for (pid, (comm, _)) in reader.hostapd_ticks() {
        if !extras.hostapd.iter().any(|p| p.pid == pid) {
            extras.hostapd.push(crate::results::monitor::ProcessCpu {
                pid,
                comm,
                cpu_pct: 0.0,
            });
        }
    }
    for r in &b.radios {
        let phy = r.wiphy.name.clone();
        extras
            .radio_debugfs
            .insert(phy.clone(), reader.radio_debugfs(&phy));
        for (dev, s) in &r.stations {
            let mac = mac_text(&s.mac);
            if let Some(d) = reader.station_debugfs(&phy, dev, &mac) {
                extras
                    .station_debugfs
                    .insert((phy.clone(), dev.clone(), mac), d);
            }
        }
    }
    let mut report = super::wifi_derive::build_report(&a, &b, extras);
    if report.radios.is_empty() {
        report.notes.push(
            "radios in /sys/class/ieee80211 but none in this network namespace (moved to \
             another one?)"
                .into(),
        );
    }
    (report, raw)
}
