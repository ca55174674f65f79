//! The bottleneck: rate and size parsing, the `tc` command lines for tbf and htb+bfifo, and the
//! total drops of the qdisc counters read back with `crate::monitor::qdisc`.

use super::error::{LabError, Result};
use crate::results::lab::{QdiscStats, Shaper};

/// Parses a rate in tc's units (`20mbit`, `500kbit`, `1gbit`, `64000bit`, `10mbps` = bytes/s)
/// or with SI suffixes (`20M`, `1.5G`); `none`/`0` = unshaped (`None`).
pub fn parse_rate(s: &str) -> Result<Option<u64>> {
    let t = s.trim().to_ascii_lowercase();
    if t == "none" || t == "off" {
        return Ok(None);
    }
    if t.starts_with('-') {
        return Err(LabError::Input(format!(
            "rate {s:?}: must be positive (e.g. 20mbit), or none for unshaped"
        )));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| {
        LabError::Input(format!(
            "bad rate {s:?}: expected e.g. 20mbit, 500kbit, 1gbit, 20M or none"
        ))
    })?;
    if n <= 0.0 {
        return Err(LabError::Input(format!(
            "rate {s:?}: must be positive (e.g. 20mbit), or none for unshaped"
        )));
    }
    let mult = match unit {
        "" | "bit" => 1.0,
        "kbit" | "k" => 1e3,
        "mbit" | "m" => 1e6,
        "gbit" | "g" => 1e9,
        "bps" => 8.0,
        "kbps" => 8e3,
        "mbps" => 8e6,
        "gbps" => 8e9,
        _ => {
            return Err(LabError::Input(format!(
                "bad rate unit {unit:?} in {s:?}: use bit, kbit, mbit, gbit (or kbps/mbps = bytes/s)"
            )));
        }
    };
    let bps = (n * mult).round();
    if !(bps.is_finite() && (8_000.0..=400e9).contains(&bps)) {
        return Err(LabError::Input(format!(
            "rate {s:?} out of range: use 8kbit to 400gbit, or none for unshaped"
        )));
    }
    Ok(Some(bps as u64))
}

/// Parses a byte count: plain bytes (`300000`), or `k`/`kb`/`m`/`mb` meaning 1000/1000000 (we do
/// not follow tc's 1024 for `k`, to keep `--buffer 64k` = 64000 bytes as written in the spec).
pub fn parse_bytes(s: &str) -> Result<u64> {
    let t = s.trim().to_ascii_lowercase();
    if t.starts_with('-') {
        return Err(LabError::Input(format!(
            "byte count {s:?}: must be positive (e.g. 64000, 64k or 1m)"
        )));
    }
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| {
        LabError::Input(format!(
            "bad byte count {s:?}: expected e.g. 64000, 64k or 1m"
        ))
    })?;
    let mult = match unit {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "m" | "mb" => 1_000_000,
        _ => {
            return Err(LabError::Input(format!(
                "bad byte unit {unit:?} in {s:?}: use plain bytes, k (1000) or m (1000000)"
            )));
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| LabError::Input(format!("byte count {s:?} too large")))
}

/// A rate in tc's syntax, exact to the bit: `20000000bit`.
pub fn tc_rate(bps: u64) -> String {
    format!("{bps}bit")
}

/// The `tc` invocations (argument lists, after `tc -n NS`) that install the bottleneck on `dev`.
/// Sizes are given in plain bytes, so tc's "k = 1024" never applies.
pub fn tc_commands(
    dev: &str,
    shaper: Shaper,
    rate_bps: u64,
    buffer: u64,
    burst: u64,
) -> Vec<Vec<String>> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let (rate, buffer, burst) = (tc_rate(rate_bps), buffer.to_string(), burst.to_string());
    match shaper {
        Shaper::Tbf => vec![s(&[
            "qdisc", "add", "dev", dev, "root", "handle", "1:", "tbf", "rate", &rate, "burst",
            &burst, "limit", &buffer,
        ])],
        Shaper::Htb => vec![
            s(&[
                "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "10",
            ]),
            s(&[
                "class", "add", "dev", dev, "parent", "1:", "classid", "1:10", "htb", "rate",
                &rate, "ceil", &rate, "burst", &burst, "cburst", &burst, "quantum", "1514",
            ]),
            s(&[
                "qdisc", "add", "dev", dev, "parent", "1:10", "handle", "10:", "bfifo", "limit",
                &buffer,
            ]),
        ],
    }
}

/// Total drops of all qdiscs on a device (tbf root, or htb root + bfifo leaf).
pub fn total_drops(qdiscs: &[QdiscStats]) -> u64 {
    qdiscs.iter().map(|q| q.drops).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("20mbit").unwrap(), Some(20_000_000));
        assert_eq!(parse_rate("50M").unwrap(), Some(50_000_000));
        assert_eq!(parse_rate("1.5gbit").unwrap(), Some(1_500_000_000));
        assert_eq!(parse_rate("500kbit").unwrap(), Some(500_000));
        assert_eq!(parse_rate("64000bit").unwrap(), Some(64_000));
        assert_eq!(parse_rate("64000").unwrap(), Some(64_000));
        assert_eq!(parse_rate("10mbps").unwrap(), Some(80_000_000));
        assert_eq!(parse_rate("none").unwrap(), None);
        for zero in ["0", "0.0", "-5mbit", "0mbit"] {
            let e = parse_rate(zero).unwrap_err().to_string();
            assert!(e.contains("must be positive"), "{zero}: {e}");
        }
        let e = parse_bytes("-1").unwrap_err().to_string();
        assert!(e.contains("must be positive"), "{e}");
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("20xbit").is_err());
        assert!(parse_rate("1bit").is_err());
        assert!(parse_rate("").is_err());
    }

    #[test]
    fn bytes() {
        assert_eq!(parse_bytes("300000").unwrap(), 300_000);
        assert_eq!(parse_bytes("64k").unwrap(), 64_000);
        assert_eq!(parse_bytes("1m").unwrap(), 1_000_000);
        assert!(parse_bytes("-5").is_err());
        assert!(parse_bytes("12q").is_err());
        assert!(parse_bytes("99999999999999999999k").is_err());
    }

    #[test]
    fn tbf_line() {
        let c = tc_commands("rtr-wan", Shaper::Tbf, 20_000_000, 64_000, 15_360);
        assert_eq!(
            c[0].join(" "),
            "qdisc add dev rtr-wan root handle 1: tbf rate 20000000bit burst 15360 limit 64000"
        );
    }

    #[test]
    fn htb_lines() {
        let c = tc_commands("rtr-lan", Shaper::Htb, 50_000_000, 300_000, 15_360);
        assert_eq!(c.len(), 3);
        assert!(c[1].join(" ").contains("rate 50000000bit ceil 50000000bit"));
        assert_eq!(
            c[2].join(" "),
            "qdisc add dev rtr-lan parent 1:10 handle 10: bfifo limit 300000"
        );
    }

    #[test]
    fn total_drops_sums_root_and_leaf() {
        let q = |drops| QdiscStats {
            drops,
            ..Default::default()
        };
        assert_eq!(total_drops(&[q(19), q(4)]), 23);
        assert_eq!(total_drops(&[]), 0);
    }
}
