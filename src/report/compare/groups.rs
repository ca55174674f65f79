//! The figure groups a comparison covers, in the order it shows them, each one function from a
//! result to its headline figures. A new group (Wi-Fi, say) is one function and one line in
//! [`GROUPS`]. This file has the device's own groups (identity, loopback, crypto and the
//! WireGuard AEADs); `groups_load.rs` those measured under load.

use super::groups_load;
use super::model::{Aspect, Better, Figure, Options, Unit, Value, aspect};
use crate::report::rows::{Row, TITLES, engine_family, is_cipher_column, is_rate_column};
use crate::results::RunResult;
use crate::results::throughput::{Protocol, Role, ThroughputResult};

/// One group of figures.
pub struct GroupDef {
    pub id: &'static str,
    /// Its heading in tables and plots.
    pub title: &'static str,
    /// Its figures in a result; empty when the result lacks that part.
    pub of_result: fn(&RunResult, &Options) -> Vec<Figure>,
}

/// Every group, in the order a comparison shows them.
pub const GROUPS: &[GroupDef] = &[
    GroupDef {
        id: "identity",
        title: "Identity",
        of_result: identity,
    },
    GroupDef {
        id: "loopback",
        title: "In-device loopback throughput",
        of_result: loopback,
    },
    GroupDef {
        id: "crypto",
        title: "Crypto: openssl speed, the OpenWrt row (hashes at 1024 B)",
        of_result: crypto,
    },
    GroupDef {
        id: "wireguard",
        title: "WireGuard AEADs (1456-byte packets)",
        of_result: wireguard,
    },
    GroupDef {
        id: "rrul",
        title: "Latency under load",
        of_result: groups_load::rrul,
    },
    GroupDef {
        id: "phases",
        title: "Per phase (download, upload, both)",
        of_result: groups_load::phases,
    },
    GroupDef {
        id: "rpm",
        title: "Responsiveness (RPM)",
        of_result: groups_load::rpm,
    },
    GroupDef {
        id: "sqm",
        title: "SQM capacity (highest shaped rate this CPU sustains)",
        of_result: groups_load::sqm,
    },
    GroupDef {
        id: "forwarding",
        title: "Forwarding capacity (unshaped)",
        of_result: groups_load::forwarding,
    },
    GroupDef {
        id: "stress",
        title: "Stress verdicts",
        of_result: groups_load::stress,
    },
    GroupDef {
        id: "wifi",
        title: "Wi-Fi per band: fq_codel queues, airtime fairness, AQL, airtime reported",
        of_result: wifi,
    },
];

/// The group of `id` (its title), if there is one.
pub fn group(id: &str) -> Option<&'static GroupDef> {
    GROUPS.iter().find(|g| g.id == id)
}

/// Every figure of a result, group by group.
pub fn figures_of(run: &RunResult, opts: &Options) -> Vec<Figure> {
    let mut figures: Vec<Figure> = GROUPS
        .iter()
        .flat_map(|g| (g.of_result)(run, opts))
        .collect();
    // A run that checked itself: its verdict is an aspect of every measured figure, so a
    // failed run's figures are flagged beside a clean run's.
    if let Some(v) = &run.validity {
        let word = if v.passed() { "passed" } else { "failed" };
        for f in figures.iter_mut().filter(|f| f.group != "identity") {
            f.method.push(super::model::aspect("validity", word));
        }
    }
    figures
}

/// A CPU or SoC name without trademarks and filler (`Intel(R) Xeon(R) Processor` → `Intel
/// Xeon`).
pub fn tidy_cpu(name: &str) -> String {
    let mut s = name
        .replace("(R)", "")
        .replace("(TM)", "")
        .replace("(tm)", "");
    if let Some(i) = s.find(" @ ") {
        s.truncate(i);
    }
    s.split_whitespace()
        .filter(|w| !matches!(*w, "Processor" | "CPU" | "processor"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn identity(run: &RunResult, _: &Options) -> Vec<Figure> {
    let Some(d) = &run.device else {
        return Vec::new();
    };
    let g = "identity";
    let release = match (&d.openwrt_release, &d.revision) {
        (Some(r), Some(v)) => Some(format!("{r} {v}")),
        (r, v) => r.clone().or_else(|| v.clone()),
    };
    let mut out: Vec<Figure> = [
        Figure::text(
            g,
            "SoC",
            d.soc
                .clone()
                .or_else(|| d.cpu_model.as_deref().map(tidy_cpu)),
        ),
        Figure::text(g, "board", d.model.clone()),
        Figure::number(
            g,
            "CPUs",
            Unit::Count,
            Better::Neither,
            d.cores.map(f64::from),
        ),
        Figure::number(
            g,
            "BogoMIPS",
            Unit::Count,
            Better::Neither,
            d.bogomips.as_deref().and_then(|b| b.trim().parse().ok()),
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    match release {
        Some(r) => out.extend(Figure::text(g, "OpenWrt", Some(r))),
        None => out.extend(Figure::text(
            g,
            "OpenWrt",
            // The OS without its code name: `no (Debian GNU/Linux 12)`.
            d.os.as_ref()
                .map(|o| format!("no ({})", o.split(" (").next().unwrap_or(o))),
        )),
    }
    out.extend(Figure::text(g, "kernel", d.kernel.clone()));
    out.extend(Figure::text(
        g,
        "validity",
        run.validity.as_ref().map(crate::report::validity::short),
    ));
    out
}

/// Whether a throughput test ran inside one device: `loopback`, or a client (iperf3's own
/// `-J`, `loopback --json`) whose server was a loopback address.
fn is_in_device(t: &ThroughputResult) -> bool {
    t.role == Role::Loopback
        || (t.role == Role::Client
            && t.host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|a| a.is_loopback()))
}

/// `128 KiB`, `1 MiB`, `1400 B`.
fn block_text(bytes: u32) -> String {
    if bytes >= 1 << 20 && bytes % (1 << 20) == 0 {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1024 && bytes % 1024 == 0 {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} B")
    }
}

fn loopback(run: &RunResult, _: &Options) -> Vec<Figure> {
    let Some(t) = run.throughput.as_ref().filter(|t| is_in_device(t)) else {
        return Vec::new();
    };
    let s = &t.setup;
    let mut method = Vec::new();
    if t.role == Role::Loopback {
        method.push(aspect("tool", "routerbench"));
    }
    if let Some(cc) = t
        .sender_tcp_congestion
        .as_ref()
        .or(t.receiver_tcp_congestion.as_ref())
        .filter(|_| s.protocol == Protocol::Tcp)
    {
        method.push(aspect("congestion control", cc.as_str()));
    }
    method.push(aspect("length", format!("{} s", s.duration)));
    method.push(aspect("streams", s.num_streams.to_string()));
    if s.blksize > 0 {
        method.push(aspect("block", block_text(s.blksize)));
    }
    if s.reverse || s.bidir {
        method.push(aspect(
            "direction",
            if s.bidir {
                "both (--bidir)"
            } else {
                "reverse (-R)"
            },
        ));
    }
    let name = match s.protocol {
        Protocol::Udp => "UDP",
        _ => "TCP",
    };
    Figure::number(
        "loopback",
        name,
        Unit::BitsPerSec,
        Better::Higher,
        Some(t.received_bps()).filter(|b| *b > 0.0),
    )
    .map(|f| f.with(&method))
    .into_iter()
    .collect()
}

/// The in-device loopback figure of a published row (the seed's `iperf3 -c 127.0.0.1`).
pub fn loopback_of_reference(bps: f64, method: &[Aspect]) -> Option<Figure> {
    Figure::number(
        "loopback",
        "TCP",
        Unit::BitsPerSec,
        Better::Higher,
        Some(bps),
    )
    .map(|f| f.with(method))
}

/// The aspects of a crypto row's column: engine, OpenSSL version, cipher block, threads.
fn crypto_method(row: &Row, col: Option<usize>) -> Vec<Aspect> {
    let mut m = Vec::new();
    let family = engine_family(&row.engine);
    if family != "unknown" {
        m.push(aspect("engine", family));
    }
    let version = row.engine.trim_start_matches("OpenSSL").trim();
    if family == "OpenSSL" && version.starts_with(|c: char| c.is_ascii_digit()) {
        m.push(aspect("OpenSSL", version));
    }
    if col.is_some_and(is_cipher_column) {
        if let Some(b) = row.cipher_block {
            m.push(aspect("cipher block", format!("{b} B")));
        } else {
            m.push(aspect("cipher block", "unknown"));
        }
    }
    if let Some(t) = row.threads {
        m.push(aspect("threads", t.to_string()));
    }
    m
}

/// The 13 columns of a crypto row: `-` (not published) is no figure, `0.00` is "not measured".
pub fn crypto_figures(row: &Row) -> Vec<Figure> {
    let mut out = Vec::new();
    for (col, title) in TITLES.iter().enumerate() {
        let Some(v) = row.values[col] else { continue };
        let unit = if is_rate_column(col) {
            Unit::BytesPerSec
        } else {
            Unit::PerSec
        };
        let value = if v > 0.0 {
            Value::Number(v)
        } else {
            Value::NotMeasured(
                "0.00 in the row (OpenSSL 3 without the legacy provider has no DES)".into(),
            )
        };
        out.push(
            Figure::new("crypto", title, unit, Better::Higher, value)
                .with(&crypto_method(row, Some(col))),
        );
    }
    out
}

/// The WireGuard AEADs of a crypto row (result files only; wiki rows have none).
pub fn wireguard_figures(row: &Row) -> Vec<Figure> {
    ["ChaCha20-Poly1305", "AES-128-GCM"]
        .iter()
        .zip(row.wireguard)
        .filter_map(|(name, v)| {
            Figure::number(
                "wireguard",
                name,
                Unit::BytesPerSec,
                Better::Higher,
                v.filter(|x| *x > 0.0),
            )
        })
        .map(|f| f.with(&crypto_method(row, None)))
        .collect()
}

fn crypto(run: &RunResult, o: &Options) -> Vec<Figure> {
    Row::from_result(run, "", o.cipher_block)
        .map(|r| crypto_figures(&r))
        .unwrap_or_default()
}

fn wireguard(run: &RunResult, o: &Options) -> Vec<Figure> {
    Row::from_result(run, "", o.cipher_block)
        .map(|r| wireguard_figures(&r))
        .unwrap_or_default()
}

/// Per radio (named by its band, so two devices' 2.4 GHz radios share a row): its driver, and
/// whether it has mac80211's fq_codel queues, airtime fairness and AQL, and reports airtime;
/// with the stations' airtime fairness when a monitored test measured it.
fn wifi(run: &RunResult, _: &Options) -> Vec<Figure> {
    let g = "wifi";
    let mut out = Vec::new();
    let yes = |b: bool| Some(if b { "yes" } else { "no" }.to_string());
    for r in run.wifi.iter().flat_map(|w| w.radios.iter()) {
        let band = r
            .channel
            .as_ref()
            .map(|c| c.band.clone())
            .or_else(|| r.bands.first().cloned())
            .unwrap_or_else(|| r.phy.clone());
        let name = |what: &str| format!("{band} {what}");
        out.extend(Figure::text(g, &name("driver"), r.driver.clone()));
        out.extend(Figure::text(g, &name("fq_codel"), yes(r.features.txqs)));
        out.extend(Figure::text(
            g,
            &name("fairness"),
            yes(r.features.airtime_fairness),
        ));
        out.extend(Figure::text(g, &name("AQL"), yes(r.features.aql)));
        out.extend(Figure::text(
            g,
            &name("airtime"),
            r.airtime_reported.and_then(yes),
        ));
        out.extend(Figure::number(
            g,
            &name("stations"),
            Unit::Count,
            Better::Neither,
            Some(r.stations.len() as f64),
        ));
    }
    let summaries = run.router.iter().chain(run.monitor.iter());
    for w in summaries.filter_map(|m| m.summary.wifi.as_ref()) {
        for r in &w.radios {
            out.extend(Figure::number(
                g,
                &format!("{} airtime fairness (Jain)", r.phy),
                Unit::Count,
                Better::Higher,
                r.airtime_jain,
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_names_lose_their_trademarks() {
        assert_eq!(tidy_cpu("Intel(R) Xeon(R) Processor"), "Intel Xeon");
        assert_eq!(
            tidy_cpu("AMD EPYC 7B13 64-Core Processor @ 2.4GHz"),
            "AMD EPYC 7B13 64-Core"
        );
        assert_eq!(block_text(131072), "128 KiB");
        assert_eq!(block_text(1 << 20), "1 MiB");
        assert_eq!(block_text(1400), "1400 B");
    }

    #[test]
    fn every_group_id_is_unique_and_keys_carry_it() {
        let mut ids: Vec<&str> = GROUPS.iter().map(|g| g.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), GROUPS.len());
        let refs = crate::report::reference::builtin().unwrap();
        let v1 = &refs.iter().find(|r| r.id == "ea7500-v1").unwrap().row;
        let f = crypto_figures(v1);
        assert_eq!(f.len(), 13);
        assert_eq!(f[9].key, "crypto.rsa-sign");
        assert!(matches!(f[4].value, Value::NotMeasured(_)), "DES 0.00");
        assert!(f[4].method.iter().any(|a| a.name == "cipher block"));
        assert!(!f[0].method.iter().any(|a| a.name == "cipher block"));
    }
}
