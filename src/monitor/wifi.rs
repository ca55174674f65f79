//! The Wi-Fi reader: every radio of the calling thread's network namespace over nl80211
//! (`nl80211.rs`), its driver from sysfs, its debugfs files where the kernel has them
//! (`wifi_debugfs.rs`), its stations' IPv4 addresses from the neighbour table, and hostapd.
//! One [`WifiReading`] per call; `wifi_derive.rs` turns two of them into the report of
//! `routerbench wifi` or into a monitor interval. /proc/net/wireless, the monitor's older
//! source, is empty on an access point (the kernel fills it only for station interfaces).

use super::nl80211::{InterfaceInfo, Nl80211, StationInfo, SurveyInfo, WiphyInfo};
use super::wifi_debugfs::DebugfsReader;
use crate::results::wifi::RadioDebugfs;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The note when a machine has no radio at all.
pub const NO_RADIO: &str = "no wireless radio (no /sys/class/ieee80211)";

/// One radio's reading.
#[derive(Debug, Clone, Default)]
pub struct RadioReading {
    pub wiphy: WiphyInfo,
    pub driver: Option<String>,
    pub interfaces: Vec<InterfaceInfo>,
    /// (AP interface name, station).
    pub stations: Vec<(String, StationInfo)>,
    /// The survey entry of the channel in use.
    pub survey: Option<SurveyInfo>,
    /// debugfs `aql_pending` total, µs.
    pub aql_pending_us: Option<u64>,
}

/// Every radio at one instant.
#[derive(Debug, Clone)]
pub struct WifiReading {
    pub at: Instant,
    pub radios: Vec<RadioReading>,
    /// IPv4 address by MAC (lower case) from /proc/net/arp.
    pub neighbours: HashMap<String, String>,
    /// What failed in this reading (a dump refused, a radio gone mid-read).
    pub errors: Vec<String>,
}

/// An open nl80211 socket and the paths it reads beside it.
pub struct WifiReader {
    root: PathBuf,
    nl: Nl80211,
    pub debugfs: DebugfsReader,
}

/// `aa:bb:cc:dd:ee:ff`.
pub fn mac_text(m: &[u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// /proc/net/arp: MAC (lower case) → IPv4, complete entries only (flags ≠ 0x0).
pub fn parse_arp(text: &str) -> HashMap<String, String> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let (ip, flags, mac) = (w.first()?, w.get(2)?, w.get(3)?);
            (*flags != "0x0" && mac.len() == 17).then(|| (mac.to_ascii_lowercase(), ip.to_string()))
        })
        .take(4096)
        .collect()
}

/// The driver bound to a radio's device (`/sys/class/ieee80211/phyN/device/driver`).
fn driver_of(root: &Path, phy: &str) -> Option<String> {
    let link = std::fs::read_link(
        root.join("sys/class/ieee80211")
            .join(phy)
            .join("device/driver"),
    )
    .ok()?;
    Some(link.file_name()?.to_string_lossy().into_owned())
}

impl WifiReader {
    /// Opens the reader in the calling thread's namespace; Err with the note to show when
    /// there is nothing to read (no radio, no nl80211).
    pub fn open(root: &Path) -> Result<Self, String> {
        let class = root.join("sys/class/ieee80211");
        let any_radio = std::fs::read_dir(&class).is_ok_and(|mut d| d.next().is_some());
        if !any_radio {
            return Err(NO_RADIO.into());
        }
        let nl = Nl80211::open().map_err(|e| {
            format!("wireless radios in /sys/class/ieee80211 but no nl80211 to read them: {e}")
        })?;
        Ok(Self {
            root: root.to_path_buf(),
            nl,
            debugfs: DebugfsReader::new(root),
        })
    }

    /// Every radio, its interfaces, stations and survey, now.
    pub fn read(&mut self) -> WifiReading {
        let mut out = WifiReading {
            at: Instant::now(),
            radios: Vec::new(),
            neighbours: std::fs::read_to_string(self.root.join("proc/net/arp"))
                .map(|t| parse_arp(&t))
                .unwrap_or_default(),
            errors: Vec::new(),
        };
        let wiphys = match self.nl.wiphys() {
            Ok(w) => w,
            Err(e) => {
                out.errors.push(format!("nl80211: {e}"));
                return out;
            }
        };
        let interfaces = self.nl.interfaces().unwrap_or_else(|e| {
            out.errors.push(format!("nl80211: {e}"));
            Vec::new()
        });
        for w in wiphys {
            let ifaces: Vec<InterfaceInfo> = interfaces
                .iter()
                .filter(|i| i.wiphy == Some(w.index))
                .cloned()
                .collect();
            let mut r = RadioReading {
                driver: driver_of(&self.root, &w.name),
                aql_pending_us: self.debugfs.aql_pending_total(&w.name),
                wiphy: w,
                ..Default::default()
            };
            for i in &ifaces {
                // Stations of access points (and mesh points); a station interface's one
                // "station" is its AP, which /proc/net/wireless already covers.
                if matches!(i.iftype, Some(3) | Some(4) | Some(7)) {
                    match self.nl.stations(i.ifindex) {
                        Ok(v) => r
                            .stations
                            .extend(v.into_iter().map(|s| (i.name.clone(), s))),
                        // The interface went away between the two dumps: its series end.
                        Err(e) => out.errors.push(format!("{}: {e}", i.name)),
                    }
                }
                if r.survey.is_none() && i.freq_mhz.is_some() {
                    r.survey = self.nl.survey(i.ifindex).ok().and_then(|v| {
                        v.iter()
                            .find(|s| s.in_use)
                            .or_else(|| v.iter().find(|s| s.freq_mhz == i.freq_mhz))
                            .cloned()
                    });
                }
            }
            r.interfaces = ifaces;
            out.radios.push(r);
        }
        out
    }

    /// Keep every nl80211 answer from now on (see [`Nl80211::record`]).
    pub fn record_nl80211(&mut self) {
        self.nl.record = Some(Vec::new());
    }

    /// The answers kept since [`Self::record_nl80211`], by dump.
    pub fn recorded_nl80211(&mut self) -> Vec<(&'static str, Vec<u8>)> {
        self.nl.record.take().unwrap_or_default()
    }

    /// The radio's debugfs figures, or why there are none.
    pub fn radio_debugfs(&self, phy: &str) -> Result<RadioDebugfs, String> {
        self.debugfs.radio(phy)
    }

    /// A station's debugfs figures, where there are any.
    pub fn station_debugfs(
        &self,
        phy: &str,
        dev: &str,
        mac: &str,
    ) -> Option<crate::results::wifi::StationDebugfs> {
        self.debugfs.station(phy, dev, mac)
    }

    /// CPU ticks of the hostapd processes (`hostapd`, and OpenWrt's `wpad` multi-call binary):
    /// pid → (comm, ticks).
    pub fn hostapd_ticks(&self) -> HashMap<u32, (String, u64)> {
        super::processes::process_ticks(&self.root)
            .into_iter()
            .filter(|(_, (comm, _))| is_hostapd(comm))
            .collect()
    }
}

/// hostapd, or OpenWrt's wpad that runs it.
pub fn is_hostapd(comm: &str) -> bool {
    matches!(comm, "hostapd" | "wpad")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arp_table() {
        let t = "IP address       HW type     Flags       HW address            Mask     Device\n\
                 10.201.3.11      0x1         0x2         02:00:00:00:01:00     *        wlan0\n\
                 10.201.3.12      0x1         0x0         00:00:00:00:00:00     *        wlan0\n\
                 10.201.1.2       0x1         0x2         52:54:00:19:01:02     *        eth0\n";
        let m = parse_arp(t);
        assert_eq!(m.len(), 2, "the incomplete entry is left out");
        assert_eq!(m["02:00:00:00:01:00"], "10.201.3.11");
        assert!(parse_arp("").is_empty());
        assert!(parse_arp("header\nshort line\n").is_empty());
        assert_eq!(mac_text(&[2, 0, 0, 0, 1, 0xab]), "02:00:00:00:01:ab");
        assert!(is_hostapd("hostapd") && is_hostapd("wpad") && !is_hostapd("hostapd_cli"));
    }

    #[test]
    fn no_radio_is_a_note() {
        let root = std::env::temp_dir().join(format!("rb-wifi-none-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        let e = WifiReader::open(&root).err().unwrap();
        assert_eq!(e, NO_RADIO);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
