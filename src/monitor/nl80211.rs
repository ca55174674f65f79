//! nl80211 over generic netlink, read-only: the radios (`GET_WIPHY`, split dump), their
//! interfaces (`GET_INTERFACE`), each interface's stations (`GET_STATION` dump) and channel
//! survey (`GET_SURVEY` dump). Requests are built and answers parsed here, on the tree's one
//! netlink base (`net/netlink.rs`); numbers are the kernel's uapi `linux/nl80211.h`
//! (docs/wifi.md lists them). Unknown or truncated attributes are skipped, never a panic: a
//! newer kernel adds attributes and nests (per-link station info with MLO), an older one
//! lacks some, and each figure it does not send stays `None`.

use crate::net::netlink::{
    GENL_HDRLEN, Msg, NLM_F_DUMP, NLM_F_REQUEST, Netlink, attrs, str_of, u8_of, u16_of, u32_of,
    uint_of,
};
use crate::results::wifi::{TidStats, TxqStats};
use std::io;

pub const FAMILY: &str = "nl80211";

pub const CMD_GET_WIPHY: u8 = 1;
pub const CMD_NEW_WIPHY: u8 = 3;
pub const CMD_GET_INTERFACE: u8 = 5;
pub const CMD_NEW_INTERFACE: u8 = 7;
pub const CMD_GET_STATION: u8 = 17;
pub const CMD_NEW_STATION: u8 = 19;
pub const CMD_GET_SURVEY: u8 = 50;
pub const CMD_NEW_SURVEY_RESULTS: u8 = 51;

const ATTR_WIPHY: u16 = 1;
const ATTR_WIPHY_NAME: u16 = 2;
const ATTR_IFINDEX: u16 = 3;
const ATTR_IFNAME: u16 = 4;
const ATTR_IFTYPE: u16 = 5;
const ATTR_MAC: u16 = 6;
const ATTR_STA_INFO: u16 = 21;
const ATTR_WIPHY_BANDS: u16 = 22;
const ATTR_WIPHY_FREQ: u16 = 38;
const ATTR_SSID: u16 = 52;
const ATTR_SURVEY_INFO: u16 = 84;
const ATTR_WIPHY_TX_POWER_LEVEL: u16 = 98;
const ATTR_CHANNEL_WIDTH: u16 = 159;
const ATTR_CENTER_FREQ1: u16 = 160;
const ATTR_SPLIT_WIPHY_DUMP: u16 = 174;
const ATTR_EXT_FEATURES: u16 = 217;
const ATTR_TXQ_STATS: u16 = 265;
const ATTR_TXQ_LIMIT: u16 = 266;
const ATTR_TXQ_MEMORY_LIMIT: u16 = 267;
const ATTR_TXQ_QUANTUM: u16 = 268;

/// Extended feature bits (`enum nl80211_ext_feature_index`).
pub const EXT_FEATURE_TXQS: u32 = 28;
pub const EXT_FEATURE_AIRTIME_FAIRNESS: u32 = 33;
pub const EXT_FEATURE_AQL: u32 = 40;

mod sta {
    pub const INACTIVE_TIME: u16 = 1;
    pub const RX_BYTES: u16 = 2;
    pub const TX_BYTES: u16 = 3;
    pub const SIGNAL: u16 = 7;
    pub const TX_BITRATE: u16 = 8;
    pub const RX_PACKETS: u16 = 9;
    pub const TX_PACKETS: u16 = 10;
    pub const TX_RETRIES: u16 = 11;
    pub const TX_FAILED: u16 = 12;
    pub const SIGNAL_AVG: u16 = 13;
    pub const RX_BITRATE: u16 = 14;
    pub const CONNECTED_TIME: u16 = 16;
    pub const RX_BYTES64: u16 = 23;
    pub const TX_BYTES64: u16 = 24;
    pub const EXPECTED_THROUGHPUT: u16 = 27;
    pub const RX_DROP_MISC: u16 = 28;
    pub const TID_STATS: u16 = 31;
    pub const RX_DURATION: u16 = 32;
    pub const TX_DURATION: u16 = 39;
    pub const AIRTIME_WEIGHT: u16 = 40;
}

mod rate {
    pub const BITRATE: u16 = 1;
    pub const MCS: u16 = 2;
    pub const WIDTH_40: u16 = 3;
    pub const SHORT_GI: u16 = 4;
    pub const BITRATE32: u16 = 5;
    pub const VHT_MCS: u16 = 6;
    pub const VHT_NSS: u16 = 7;
    pub const WIDTH_80: u16 = 8;
    pub const WIDTH_80P80: u16 = 9;
    pub const WIDTH_160: u16 = 10;
    pub const WIDTH_10: u16 = 11;
    pub const WIDTH_5: u16 = 12;
    pub const HE_MCS: u16 = 13;
    pub const HE_NSS: u16 = 14;
    pub const WIDTH_320: u16 = 18;
    pub const EHT_MCS: u16 = 19;
    pub const EHT_NSS: u16 = 20;
}

mod tid {
    pub const RX_MSDU: u16 = 1;
    pub const TX_MSDU: u16 = 2;
    pub const TX_MSDU_RETRIES: u16 = 3;
    pub const TX_MSDU_FAILED: u16 = 4;
    pub const TXQ_STATS: u16 = 6;
}

mod survey {
    pub const FREQUENCY: u16 = 1;
    pub const NOISE: u16 = 2;
    pub const IN_USE: u16 = 3;
    pub const TIME: u16 = 4;
    pub const TIME_BUSY: u16 = 5;
    pub const TIME_RX: u16 = 7;
    pub const TIME_TX: u16 = 8;
}

/// A radio, merged from the parts of a split `GET_WIPHY` dump.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WiphyInfo {
    pub index: u32,
    pub name: String,
    /// The extended-feature bitmap, bit N of byte N/8.
    pub ext_features: Vec<u8>,
    /// Band ids (`enum nl80211_band`: 0 2.4 GHz, 1 5 GHz, 2 60 GHz, 3 6 GHz).
    pub bands: Vec<u16>,
    pub txq_stats: Option<TxqStats>,
    pub txq_limit: Option<u64>,
    pub txq_memory_limit: Option<u64>,
    pub txq_quantum: Option<u64>,
}

impl WiphyInfo {
    pub fn has_ext_feature(&self, bit: u32) -> bool {
        self.ext_features
            .get((bit / 8) as usize)
            .is_some_and(|b| b & (1 << (bit % 8)) != 0)
    }
}

/// One wireless interface (`GET_INTERFACE`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InterfaceInfo {
    pub ifindex: u32,
    pub name: String,
    pub wiphy: Option<u32>,
    /// `enum nl80211_iftype`: 2 station, 3 AP, 4 AP VLAN, 6 monitor, 7 mesh point, ….
    pub iftype: Option<u32>,
    pub mac: Option<[u8; 6]>,
    pub ssid: Option<Vec<u8>>,
    pub freq_mhz: Option<u32>,
    /// `enum nl80211_chan_width`.
    pub chan_width: Option<u32>,
    pub center_freq1_mhz: Option<u32>,
    pub tx_power_mbm: Option<u32>,
    /// The multicast TXQ's statistics.
    pub txq_stats: Option<TxqStats>,
}

/// A rate (`enum nl80211_rate_info`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RateInfo {
    /// Units of 100 kbit/s.
    pub bitrate_100kbps: Option<u32>,
    pub mcs: Option<u8>,
    pub vht_mcs: Option<u8>,
    pub vht_nss: Option<u8>,
    pub he_mcs: Option<u8>,
    pub he_nss: Option<u8>,
    pub eht_mcs: Option<u8>,
    pub eht_nss: Option<u8>,
    /// 5, 10, 40, 80, 160, 320 where the rate says so; None = 20 MHz.
    pub width_mhz: Option<u32>,
    pub width_80p80: bool,
    pub short_gi: bool,
}

impl RateInfo {
    pub fn mbps(&self) -> Option<f64> {
        self.bitrate_100kbps.map(|r| f64::from(r) / 10.0)
    }

    /// `HT MCS 7 40 MHz short GI`, `VHT MCS 9 NSS 2 80 MHz`; empty for a legacy rate.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        if let Some(m) = self.eht_mcs {
            parts.push(format!("EHT MCS {m}"));
            parts.extend(self.eht_nss.map(|n| format!("NSS {n}")));
        } else if let Some(m) = self.he_mcs {
            parts.push(format!("HE MCS {m}"));
            parts.extend(self.he_nss.map(|n| format!("NSS {n}")));
        } else if let Some(m) = self.vht_mcs {
            parts.push(format!("VHT MCS {m}"));
            parts.extend(self.vht_nss.map(|n| format!("NSS {n}")));
        } else if let Some(m) = self.mcs {
            parts.push(format!("HT MCS {m}"));
        } else {
            return String::new();
        }
        if self.width_80p80 {
            parts.push("80+80 MHz".into());
        } else if let Some(w) = self.width_mhz {
            parts.push(format!("{w} MHz"));
        }
        if self.short_gi {
            parts.push("short GI".into());
        }
        parts.join(" ")
    }
}

/// One station (`GET_STATION`): the AP's counters for it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StationInfo {
    pub ifindex: u32,
    pub mac: [u8; 6],
    pub inactive_ms: Option<u64>,
    pub rx_bytes: Option<u64>,
    pub tx_bytes: Option<u64>,
    pub rx_packets: Option<u64>,
    pub tx_packets: Option<u64>,
    pub tx_retries: Option<u64>,
    pub tx_failed: Option<u64>,
    pub rx_drop_misc: Option<u64>,
    pub signal_dbm: Option<i32>,
    pub signal_avg_dbm: Option<i32>,
    pub tx_rate: Option<RateInfo>,
    pub rx_rate: Option<RateInfo>,
    pub connected_s: Option<u64>,
    pub expected_throughput_kbps: Option<u64>,
    pub rx_duration_us: Option<u64>,
    pub tx_duration_us: Option<u64>,
    pub airtime_weight: Option<u32>,
    pub tids: Vec<TidStats>,
}

/// One channel's survey (`GET_SURVEY`); times in ms since the driver started counting.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SurveyInfo {
    pub ifindex: u32,
    pub freq_mhz: Option<u32>,
    pub noise_dbm: Option<i32>,
    /// The channel the interface is on now.
    pub in_use: bool,
    pub time_ms: Option<u64>,
    pub busy_ms: Option<u64>,
    pub rx_ms: Option<u64>,
    pub tx_ms: Option<u64>,
}

/// The attributes after the generic netlink header of an answer, with its command.
fn genl_body(payload: &[u8]) -> Option<(u8, &[u8])> {
    let cmd = u8_of(payload)?;
    Some((cmd, payload.get(GENL_HDRLEN..)?))
}

fn mac_of(p: &[u8]) -> Option<[u8; 6]> {
    p.get(..6)?.try_into().ok()
}

fn s8_of(p: &[u8]) -> Option<i32> {
    u8_of(p).map(|b| i32::from(b as i8))
}

/// `TXQ_STATS`' nested counters.
pub fn parse_txq_stats(p: &[u8]) -> TxqStats {
    let mut t = TxqStats::default();
    for (ty, v) in attrs(p) {
        let slot = match ty {
            1 => &mut t.backlog_bytes,
            2 => &mut t.backlog_packets,
            3 => &mut t.flows,
            4 => &mut t.drops,
            5 => &mut t.ecn_marks,
            6 => &mut t.overlimit,
            7 => &mut t.overmemory,
            8 => &mut t.collisions,
            9 => &mut t.tx_bytes,
            10 => &mut t.tx_packets,
            11 => &mut t.max_flows,
            _ => continue,
        };
        *slot = uint_of(v);
    }
    t
}

/// One part of a split wiphy dump (the whole radio when not split), merged into `out`.
pub fn merge_wiphy(payload: &[u8], out: &mut Vec<WiphyInfo>) {
    let Some((CMD_NEW_WIPHY, body)) = genl_body(payload) else {
        return;
    };
    let Some(index) = attrs(body).find_map(|(t, v)| (t == ATTR_WIPHY).then(|| u32_of(v)).flatten())
    else {
        return;
    };
    let w = match out.iter().position(|w| w.index == index) {
        Some(i) => &mut out[i],
        None if out.len() < 64 => {
            out.push(WiphyInfo {
                index,
                ..Default::default()
            });
            let last = out.len() - 1;
            &mut out[last]
        }
        None => return,
    };
    for (ty, v) in attrs(body) {
        match ty {
            ATTR_WIPHY_NAME => w.name = str_of(v),
            ATTR_EXT_FEATURES => w.ext_features = v.iter().copied().take(64).collect(),
            ATTR_WIPHY_BANDS => {
                for (band, _) in attrs(v) {
                    if !w.bands.contains(&band) && w.bands.len() < 8 {
                        w.bands.push(band);
                    }
                }
            }
            ATTR_TXQ_STATS => w.txq_stats = Some(parse_txq_stats(v)),
            ATTR_TXQ_LIMIT => w.txq_limit = uint_of(v),
            ATTR_TXQ_MEMORY_LIMIT => w.txq_memory_limit = uint_of(v),
            ATTR_TXQ_QUANTUM => w.txq_quantum = uint_of(v),
            _ => {}
        }
    }
    w.bands.sort_unstable();
}

/// One `GET_INTERFACE` answer.
pub fn parse_interface(payload: &[u8]) -> Option<InterfaceInfo> {
    let (CMD_NEW_INTERFACE, body) = genl_body(payload)? else {
        return None;
    };
    let mut i = InterfaceInfo::default();
    let mut have_index = false;
    for (ty, v) in attrs(body) {
        match ty {
            ATTR_IFINDEX => {
                i.ifindex = u32_of(v)?;
                have_index = true;
            }
            ATTR_IFNAME => i.name = str_of(v),
            ATTR_WIPHY => i.wiphy = u32_of(v),
            ATTR_IFTYPE => i.iftype = u32_of(v),
            ATTR_MAC => i.mac = mac_of(v),
            ATTR_SSID => i.ssid = Some(v.iter().copied().take(32).collect()),
            ATTR_WIPHY_FREQ => i.freq_mhz = u32_of(v),
            ATTR_CHANNEL_WIDTH => i.chan_width = u32_of(v),
            ATTR_CENTER_FREQ1 => i.center_freq1_mhz = u32_of(v),
            ATTR_WIPHY_TX_POWER_LEVEL => i.tx_power_mbm = u32_of(v),
            ATTR_TXQ_STATS => i.txq_stats = Some(parse_txq_stats(v)),
            _ => {}
        }
    }
    have_index.then_some(i)
}

fn parse_rate(p: &[u8]) -> RateInfo {
    let mut r = RateInfo::default();
    for (ty, v) in attrs(p) {
        match ty {
            rate::BITRATE => r.bitrate_100kbps = r.bitrate_100kbps.or(u16_of(v).map(u32::from)),
            // The 32-bit rate wins: the 16-bit one is absent above 6.5 Gbit/s.
            rate::BITRATE32 => r.bitrate_100kbps = u32_of(v).or(r.bitrate_100kbps),
            rate::MCS => r.mcs = u8_of(v),
            rate::VHT_MCS => r.vht_mcs = u8_of(v),
            rate::VHT_NSS => r.vht_nss = u8_of(v),
            rate::HE_MCS => r.he_mcs = u8_of(v),
            rate::HE_NSS => r.he_nss = u8_of(v),
            rate::EHT_MCS => r.eht_mcs = u8_of(v),
            rate::EHT_NSS => r.eht_nss = u8_of(v),
            rate::SHORT_GI => r.short_gi = true,
            rate::WIDTH_40 => r.width_mhz = Some(40),
            rate::WIDTH_80 => r.width_mhz = Some(80),
            rate::WIDTH_80P80 => r.width_80p80 = true,
            rate::WIDTH_160 => r.width_mhz = Some(160),
            rate::WIDTH_320 => r.width_mhz = Some(320),
            rate::WIDTH_10 => r.width_mhz = Some(10),
            rate::WIDTH_5 => r.width_mhz = Some(5),
            _ => {}
        }
    }
    r
}

fn parse_tids(p: &[u8]) -> Vec<TidStats> {
    let mut out = Vec::new();
    // The nest's attribute type is the TID + 1 (17 = the non-QoS queue, TID 16).
    for (ty, v) in attrs(p).take(17) {
        if !(1..=17).contains(&ty) {
            continue;
        }
        let mut t = TidStats {
            tid: ty - 1,
            ..Default::default()
        };
        for (k, x) in attrs(v) {
            match k {
                tid::RX_MSDU => t.rx_msdu = uint_of(x),
                tid::TX_MSDU => t.tx_msdu = uint_of(x),
                tid::TX_MSDU_RETRIES => t.tx_msdu_retries = uint_of(x),
                tid::TX_MSDU_FAILED => t.tx_msdu_failed = uint_of(x),
                tid::TXQ_STATS => t.txq = Some(parse_txq_stats(x)),
                _ => {}
            }
        }
        out.push(t);
    }
    out
}

/// One `GET_STATION` answer.
pub fn parse_station(payload: &[u8]) -> Option<StationInfo> {
    let (CMD_NEW_STATION, body) = genl_body(payload)? else {
        return None;
    };
    let mut s = StationInfo::default();
    let (mut have_mac, mut info) = (false, None);
    for (ty, v) in attrs(body) {
        match ty {
            ATTR_IFINDEX => s.ifindex = u32_of(v).unwrap_or(0),
            ATTR_MAC => {
                if let Some(m) = mac_of(v) {
                    s.mac = m;
                    have_mac = true;
                }
            }
            ATTR_STA_INFO => info = Some(v),
            _ => {}
        }
    }
    if !have_mac {
        return None;
    }
    let (mut rx32, mut tx32) = (None, None);
    for (ty, v) in attrs(info.unwrap_or(&[])) {
        match ty {
            sta::INACTIVE_TIME => s.inactive_ms = uint_of(v),
            sta::RX_BYTES => rx32 = uint_of(v),
            sta::TX_BYTES => tx32 = uint_of(v),
            sta::RX_BYTES64 => s.rx_bytes = uint_of(v),
            sta::TX_BYTES64 => s.tx_bytes = uint_of(v),
            sta::RX_PACKETS => s.rx_packets = uint_of(v),
            sta::TX_PACKETS => s.tx_packets = uint_of(v),
            sta::TX_RETRIES => s.tx_retries = uint_of(v),
            sta::TX_FAILED => s.tx_failed = uint_of(v),
            sta::RX_DROP_MISC => s.rx_drop_misc = uint_of(v),
            sta::SIGNAL => s.signal_dbm = s8_of(v),
            sta::SIGNAL_AVG => s.signal_avg_dbm = s8_of(v),
            sta::TX_BITRATE => s.tx_rate = Some(parse_rate(v)),
            sta::RX_BITRATE => s.rx_rate = Some(parse_rate(v)),
            sta::CONNECTED_TIME => s.connected_s = uint_of(v),
            sta::EXPECTED_THROUGHPUT => s.expected_throughput_kbps = uint_of(v),
            sta::RX_DURATION => s.rx_duration_us = uint_of(v),
            sta::TX_DURATION => s.tx_duration_us = uint_of(v),
            sta::AIRTIME_WEIGHT => s.airtime_weight = uint_of(v).map(|w| w as u32),
            sta::TID_STATS => s.tids = parse_tids(v),
            _ => {}
        }
    }
    // The 64-bit byte counters where the kernel sent them, else the 32-bit ones.
    s.rx_bytes = s.rx_bytes.or(rx32);
    s.tx_bytes = s.tx_bytes.or(tx32);
    Some(s)
}

/// One `GET_SURVEY` answer.
pub fn parse_survey(payload: &[u8]) -> Option<SurveyInfo> {
    let (CMD_NEW_SURVEY_RESULTS, body) = genl_body(payload)? else {
        return None;
    };
    let mut s = SurveyInfo::default();
    let mut info = None;
    for (ty, v) in attrs(body) {
        match ty {
            ATTR_IFINDEX => s.ifindex = u32_of(v).unwrap_or(0),
            ATTR_SURVEY_INFO => info = Some(v),
            _ => {}
        }
    }
    for (ty, v) in attrs(info?) {
        match ty {
            survey::FREQUENCY => s.freq_mhz = u32_of(v),
            survey::NOISE => s.noise_dbm = s8_of(v),
            survey::IN_USE => s.in_use = true,
            survey::TIME => s.time_ms = uint_of(v),
            survey::TIME_BUSY => s.busy_ms = uint_of(v),
            survey::TIME_RX => s.rx_ms = uint_of(v),
            survey::TIME_TX => s.tx_ms = uint_of(v),
            _ => {}
        }
    }
    Some(s)
}

/// The IEEE channel number and band of a centre frequency.
pub fn channel_of(freq_mhz: u32) -> (Option<u32>, &'static str) {
    match freq_mhz {
        2484 => (Some(14), "2.4 GHz"),
        2407..=2483 => (Some((freq_mhz - 2407) / 5), "2.4 GHz"),
        4910..=4980 => (Some((freq_mhz - 4000) / 5), "4.9 GHz"),
        5955..=7115 => (Some((freq_mhz - 5950) / 5), "6 GHz"),
        5000..=5954 => (Some((freq_mhz - 5000) / 5), "5 GHz"),
        58_320..=70_200 => (Some((freq_mhz - 56_160) / 2160), "60 GHz"),
        _ => (None, "other"),
    }
}

/// A band id's name.
pub fn band_name(band: u16) -> &'static str {
    match band {
        0 => "2.4 GHz",
        1 => "5 GHz",
        2 => "60 GHz",
        3 => "6 GHz",
        4 => "900 MHz (S1G)",
        _ => "other",
    }
}

/// A channel width's name (`enum nl80211_chan_width`).
pub fn width_name(w: u32) -> String {
    match w {
        0 => "20 MHz (no HT)".into(),
        1 => "20 MHz".into(),
        2 => "40 MHz".into(),
        3 => "80 MHz".into(),
        4 => "80+80 MHz".into(),
        5 => "160 MHz".into(),
        6 => "5 MHz".into(),
        7 => "10 MHz".into(),
        13 => "320 MHz".into(),
        n => format!("width {n}"),
    }
}

/// An interface type's name (`enum nl80211_iftype`).
pub fn iftype_name(t: u32) -> String {
    match t {
        1 => "ad-hoc".into(),
        2 => "station".into(),
        3 => "AP".into(),
        4 => "AP VLAN".into(),
        5 => "WDS".into(),
        6 => "monitor".into(),
        7 => "mesh point".into(),
        8 => "P2P client".into(),
        9 => "P2P GO".into(),
        10 => "P2P device".into(),
        n => format!("type {n}"),
    }
}

/// Keeps `payload` in `record` when recording (at most 4096 answers).
fn keep(record: &mut Option<Vec<(&'static str, Vec<u8>)>>, what: &'static str, payload: &[u8]) {
    if let Some(r) = record.as_mut().filter(|r| r.len() < 4096) {
        r.push((what, payload.to_vec()));
    }
}

/// An nl80211 socket in the calling thread's network namespace.
pub struct Nl80211 {
    nl: Netlink,
    family: u16,
    /// When set, every answer's payload is kept here with the dump it came from (`wiphy`,
    /// `interface`, `station`, `survey`): `routerbench wifi --nl80211-hex`, the captures the
    /// tests are built from, and what a bug report about a driver needs.
    pub record: Option<Vec<(&'static str, Vec<u8>)>>,
}

impl Nl80211 {
    /// Opens the socket and resolves the family; NotFound when the kernel has no nl80211
    /// (no cfg80211: no wireless at all).
    pub fn open() -> io::Result<Self> {
        let mut nl = Netlink::generic()?;
        let family = nl.resolve_family(FAMILY)?;
        Ok(Self {
            nl,
            family,
            record: None,
        })
    }

    fn dump_msg(&self, cmd: u8) -> Msg {
        Msg::genl(self.family, NLM_F_REQUEST | NLM_F_DUMP, cmd, 0)
    }

    /// Every radio (a split dump, as `iw` asks: an unsplit answer would not fit one message
    /// for radios with many bands and channels).
    pub fn wiphys(&mut self) -> io::Result<Vec<WiphyInfo>> {
        let mut m = self.dump_msg(CMD_GET_WIPHY);
        m.flag(ATTR_SPLIT_WIPHY_DUMP);
        let mut out = Vec::new();
        let rec = &mut self.record;
        self.nl.dump(m, "nl80211 wiphy dump", |_, p| {
            keep(rec, "wiphy", p);
            merge_wiphy(p, &mut out)
        })?;
        Ok(out)
    }

    /// Every wireless interface of this namespace.
    pub fn interfaces(&mut self) -> io::Result<Vec<InterfaceInfo>> {
        let mut out = Vec::new();
        let m = self.dump_msg(CMD_GET_INTERFACE);
        let rec = &mut self.record;
        self.nl.dump(m, "nl80211 interface dump", |_, p| {
            keep(rec, "interface", p);
            if out.len() < 256 {
                out.extend(parse_interface(p));
            }
        })?;
        Ok(out)
    }

    /// The stations of interface `ifindex` (for an AP: its associated clients).
    pub fn stations(&mut self, ifindex: u32) -> io::Result<Vec<StationInfo>> {
        let mut out = Vec::new();
        let mut m = self.dump_msg(CMD_GET_STATION);
        m.u32_ne(ATTR_IFINDEX, ifindex);
        let rec = &mut self.record;
        self.nl.dump(m, "nl80211 station dump", |_, p| {
            keep(rec, "station", p);
            if out.len() < 2048 {
                out.extend(parse_station(p));
            }
        })?;
        Ok(out)
    }

    /// The survey of interface `ifindex`'s radio, a channel each.
    pub fn survey(&mut self, ifindex: u32) -> io::Result<Vec<SurveyInfo>> {
        let mut out = Vec::new();
        let mut m = self.dump_msg(CMD_GET_SURVEY);
        m.u32_ne(ATTR_IFINDEX, ifindex);
        let rec = &mut self.record;
        self.nl.dump(m, "nl80211 survey dump", |_, p| {
            keep(rec, "survey", p);
            if out.len() < 512 {
                out.extend(parse_survey(p));
            }
        })?;
        Ok(out)
    }
}

#[cfg(test)]
#[path = "nl80211_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "nl80211_capture_tests.rs"]
mod capture_tests;
