//! mac80211's debugfs files (`/sys/kernel/debug/ieee80211/phyN/…`, present where the kernel
//! has `CONFIG_MAC80211_DEBUGFS`: OpenWrt's do, Debian's do not): the radio's `aqm`,
//! `airtime_flags`, `aql_enable`, `aql_threshold`, `aql_txq_limit`, `aql_pending`, and each
//! station's `airtime`, `aql` and `aqm`. Pure parsers of the texts as the kernel's
//! `net/mac80211/debugfs.c` and `debugfs_sta.c` print them (docs/wifi.md has the formats),
//! and the reader that says in a note what is missing and why. A line that does not parse is
//! skipped.

use crate::results::wifi::{AqlLimit, RadioDebugfs, StationDebugfs};
use std::path::{Path, PathBuf};

/// Where debugfs is mounted.
pub const DEBUGFS: &str = "sys/kernel/debug";

/// The first number of a word (`5000`, `-12`, `5000us`).
fn num(word: &str) -> Option<i64> {
    let end = word
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && c == '-')))
        .map_or(word.len(), |(i, _)| i);
    word[..end].parse().ok()
}

fn unum(word: &str) -> Option<u64> {
    num(word).and_then(|v| u64::try_from(v).ok())
}

/// `phyN/aqm`: `access name value` then `R fq_backlog 0`, …. The kernel prints the values of
/// `fq_overlimit` and `fq_overmemory` in each other's place (its argument list has
/// overmemory before overlimit; every version up to the newest checked), so the two are
/// swapped back here: the result holds each value under its true name.
pub fn parse_phy_aqm(text: &str) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = text
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let access = w.next()?;
            if !matches!(access, "R" | "RW" | "W") {
                return None;
            }
            let name = w.next()?;
            Some((name.to_string(), unum(w.next()?)?))
        })
        .take(32)
        .collect();
    let at = |n: &str, v: &[(String, u64)]| v.iter().position(|(k, _)| k == n);
    if let (Some(a), Some(b)) = (at("fq_overlimit", &out), at("fq_overmemory", &out)) {
        let (va, vb) = (out[a].1, out[b].1);
        out[a].1 = vb;
        out[b].1 = va;
    }
    out
}

/// `airtime_flags`: a line per set bit, `AIRTIME_TX\t(1)`, `AIRTIME_RX\t(2)`.
pub fn parse_airtime_flags(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.starts_with("AIRTIME_"))
        .map(str::to_string)
        .take(8)
        .collect()
}

/// `aql_txq_limit`: `AC\tAQL limit low\tAQL limit high`, then `VO 5000 12000` …, and on newer
/// or OpenWrt kernels a `BC/MC` or `MC` row (one value: its single limit).
pub fn parse_aql_txq_limit(text: &str) -> Vec<AqlLimit> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let ac = w.next()?;
            let low = unum(w.next()?)?;
            let high = w.next().and_then(unum).unwrap_or(low);
            Some(AqlLimit {
                ac: ac.to_string(),
                low_us: low,
                high_us: high,
            })
        })
        .take(8)
        .collect()
}

/// `aql_pending`: `AC     AQL pending`, then `VO     0 us` … and `total  0 us`.
pub fn parse_aql_pending(text: &str) -> Vec<(String, u64)> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let ac = w.next()?;
            Some((ac.to_string(), unum(w.next()?)?))
        })
        .take(8)
        .collect()
}

/// `"AC: N us AC: N us …"` or `"AC: l/h AC: l/h …"` after a label: the (AC, words) pairs.
fn per_ac(rest: &str) -> Vec<(String, String)> {
    let words: Vec<&str> = rest.split_whitespace().collect();
    words
        .iter()
        .enumerate()
        .filter_map(|(i, w)| {
            let ac = w.strip_suffix(':')?;
            Some((ac.to_string(), (*words.get(i + 1)?).to_string()))
        })
        .take(8)
        .collect()
}

/// A station's `airtime`: `RX: <us> us`, `TX: <us> us`, `Weight: <w>`, then per AC the
/// scheduler's state: `Deficit: VO: <d> us …` (kernels up to 5.10 and from 6.0) or
/// `Virt-T: VO: <t> us …` (5.11–5.19, the virtual-time scheduler).
pub fn parse_station_airtime(text: &str, out: &mut StationDebugfs) {
    for line in text.lines() {
        let Some((label, rest)) = line.split_once(':') else {
            continue;
        };
        match label.trim() {
            "RX" => out.airtime_rx_us = rest.split_whitespace().next().and_then(unum),
            "TX" => out.airtime_tx_us = rest.split_whitespace().next().and_then(unum),
            "Weight" => {
                out.airtime_weight = rest
                    .split_whitespace()
                    .next()
                    .and_then(unum)
                    .and_then(|w| u32::try_from(w).ok());
            }
            l @ ("Deficit" | "Virt-T") => {
                out.airtime_scheduler = Some(
                    if l == "Deficit" {
                        "deficit"
                    } else {
                        "virtual time"
                    }
                    .to_string(),
                );
                out.airtime_per_ac_us = per_ac(rest)
                    .into_iter()
                    .filter_map(|(ac, v)| Some((ac, num(&v)?)))
                    .collect();
            }
            _ => {}
        }
    }
}

/// A station's `aql`: `Q depth: VO: <u> us …` and `Q limit[low/high]: VO: l/h …`.
pub fn parse_station_aql(text: &str, out: &mut StationDebugfs) {
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Q depth:") {
            out.aql_queued_us = per_ac(rest)
                .into_iter()
                .filter_map(|(ac, v)| Some((ac, unum(&v)?)))
                .collect();
        } else if let Some(rest) = line.strip_prefix("Q limit[low/high]:") {
            out.aql_limits_us = per_ac(rest)
                .into_iter()
                .filter_map(|(ac, v)| {
                    let (l, h) = v.split_once('/')?;
                    Some(AqlLimit {
                        ac,
                        low_us: unum(l)?,
                        high_us: unum(h)?,
                    })
                })
                .collect();
        }
    }
}

/// A station's `aqm` first line: `target 20000us interval 100000us ecn yes`.
pub fn parse_station_codel(text: &str, out: &mut StationDebugfs) {
    let Some(first) = text.lines().next() else {
        return;
    };
    let w: Vec<&str> = first.split_whitespace().collect();
    for pair in w.windows(2) {
        match pair[0] {
            "target" => out.codel_target_us = unum(pair[1]),
            "interval" => out.codel_interval_us = unum(pair[1]),
            "ecn" => out.codel_ecn = Some(pair[1] == "yes"),
            _ => {}
        }
    }
}

/// Reads mac80211's debugfs under `root` (`/` on a router, a fixture tree in tests).
pub struct DebugfsReader {
    base: PathBuf,
    /// Why nothing can be read, when nothing can (said once per report).
    pub missing: Option<String>,
}

fn read(p: &Path) -> Option<String> {
    std::fs::read_to_string(p).ok()
}

impl DebugfsReader {
    pub fn new(root: &Path) -> Self {
        let debugfs = root.join(DEBUGFS);
        let base = debugfs.join("ieee80211");
        let missing = match std::fs::read_dir(&debugfs).map(|mut d| d.next().is_none()) {
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Some(format!(
                "cannot read /{DEBUGFS} (permission denied): run as root for mac80211's AQL, \
                 airtime and queue files"
            )),
            Err(_) => Some(format!(
                "no debugfs at /{DEBUGFS}: mount it (`mount -t debugfs debugfs /{DEBUGFS}`) for \
                 mac80211's AQL, airtime and queue files"
            )),
            Ok(true) => Some(format!(
                "debugfs is not mounted at /{DEBUGFS}: mount it (`mount -t debugfs debugfs \
                 /{DEBUGFS}`) for mac80211's AQL, airtime and queue files"
            )),
            Ok(false) if !base.is_dir() => Some(format!(
                "no /{DEBUGFS}/ieee80211: the kernel has no cfg80211 debugfs (or no radio)"
            )),
            Ok(false) => None,
        };
        Self { base, missing }
    }

    /// The radio's files; Err with a note when the kernel has none of mac80211's (its
    /// `CONFIG_MAC80211_DEBUGFS` is off, as in Debian's kernels).
    pub fn radio(&self, phy: &str) -> Result<RadioDebugfs, String> {
        if let Some(m) = &self.missing {
            return Err(m.clone());
        }
        let dir = self.base.join(phy);
        let aqm = read(&dir.join("aqm"));
        let flags = read(&dir.join("airtime_flags"));
        let limit = read(&dir.join("aql_txq_limit"));
        if aqm.is_none() && flags.is_none() && limit.is_none() {
            return Err(format!(
                "{phy}: no mac80211 debugfs files in /{DEBUGFS}/ieee80211/{phy} (the kernel is \
                 built without CONFIG_MAC80211_DEBUGFS, as Debian's are): no aqm, airtime or \
                 AQL figures from debugfs"
            ));
        }
        Ok(RadioDebugfs {
            aql_enable: read(&dir.join("aql_enable")).and_then(|t| match t.trim() {
                "1" | "Y" => Some(true),
                "0" | "N" => Some(false),
                _ => None,
            }),
            aql_txq_limit: limit
                .as_deref()
                .map(parse_aql_txq_limit)
                .unwrap_or_default(),
            aql_threshold_us: read(&dir.join("aql_threshold")).and_then(|t| unum(t.trim())),
            aql_pending_us: read(&dir.join("aql_pending"))
                .as_deref()
                .map(parse_aql_pending)
                .unwrap_or_default(),
            airtime_flags: flags.as_deref().map(parse_airtime_flags),
            aqm: aqm.as_deref().map(parse_phy_aqm).unwrap_or_default(),
        })
    }

    /// The `aql_pending` total of a radio, µs (read every monitor interval).
    pub fn aql_pending_total(&self, phy: &str) -> Option<u64> {
        if self.missing.is_some() {
            return None;
        }
        let t = read(&self.base.join(phy).join("aql_pending"))?;
        parse_aql_pending(&t)
            .into_iter()
            .find(|(ac, _)| ac == "total")
            .map(|(_, v)| v)
    }

    /// A station's files (`phyN/netdev:DEV/stations/MAC/`), None where there are none.
    pub fn station(&self, phy: &str, dev: &str, mac: &str) -> Option<StationDebugfs> {
        if self.missing.is_some() {
            return None;
        }
        let dir = self
            .base
            .join(phy)
            .join(format!("netdev:{dev}"))
            .join("stations")
            .join(mac);
        let mut out = StationDebugfs::default();
        let mut any = false;
        if let Some(t) = read(&dir.join("airtime")) {
            parse_station_airtime(&t, &mut out);
            any = true;
        }
        if let Some(t) = read(&dir.join("aql")) {
            parse_station_aql(&t, &mut out);
            any = true;
        }
        if let Some(t) = read(&dir.join("aqm")) {
            parse_station_codel(&t, &mut out);
            any = true;
        }
        any.then_some(out)
    }
}

#[cfg(test)]
#[path = "wifi_debugfs_tests.rs"]
mod tests;
