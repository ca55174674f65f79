//! Rendering of the lab's results: configuration with theory, status, the capacity table and the
//! accuracy table (markdown, so they paste into docs as they are).

use crate::results::lab::{
    AccuracyPoint, CapacityResult, LabConfig, LabResult, LabStatus, LabTheory, StationRun,
};
use crate::results::wifi::{BYTES_TOLERANCE_PCT, StationBytesCheck};
use crate::util::units::human_rate as fmt_rate;
use std::fmt::Write;

pub use super::lab_checks::{checks, checks_header, checks_rows, phase_lines};

fn rate_or_unshaped(r: Option<u64>) -> String {
    r.map(|b| fmt_rate(b as f64))
        .unwrap_or_else(|| "unshaped".into())
}

fn ms(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.2}")).unwrap_or_else(|| "n/a".into())
}

fn ratio(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.2}")).unwrap_or_else(|| "n/a".into())
}

/// The lab's configuration and what theory predicts for it.
pub fn config(cfg: &LabConfig, th: &LabTheory) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "lab {}: {} ({} {}) -> {} -> {} ({} {})",
        cfg.name,
        cfg.ns_lan,
        cfg.devices.lan,
        cfg.lan_ip,
        cfg.ns_rtr,
        cfg.ns_wan,
        cfg.devices.wan,
        cfg.wan_ip
    );
    let _ = writeln!(
        s,
        "  upload   {} on {} ({}), download {} on {}",
        rate_or_unshaped(cfg.up_rate_bps),
        cfg.devices.rtr_wan,
        cfg.shaper,
        rate_or_unshaped(cfg.down_rate_bps),
        cfg.devices.rtr_lan
    );
    let _ = writeln!(
        s,
        "  buffer {} B, burst {} B, NAT {}, offloads {}, cc {} (namespace default {})",
        cfg.buffer_bytes,
        cfg.burst_bytes,
        if cfg.nat { "on (masquerade)" } else { "off" },
        if cfg.offloads { "on" } else { "off" },
        cfg.cc,
        cfg.ns_cc
    );
    // Seconds once a queue holds more than one: "120.0 s", not "120000.0 ms".
    let delay = |ms: f64| {
        if ms >= 1000.0 {
            format!("{:.1} s", ms / 1000.0)
        } else {
            format!("{ms:.1} ms")
        }
    };
    let line = |dir: &str, d: Option<f64>, g: Option<f64>| match (d, g) {
        (Some(d), Some(g)) => format!(
            "  theory {dir}: full queue adds {}; TCP goodput {} ({:.3} x rate)\n",
            delay(d),
            fmt_rate(g),
            th.goodput_ratio
        ),
        _ => format!("  theory {dir}: unshaped, no standing queue\n"),
    };
    s.push_str(&line("up  ", th.up_queue_delay_ms, th.up_goodput_bps));
    s.push_str(&line("down", th.down_queue_delay_ms, th.down_goodput_bps));
    if cfg.ns_cc != cfg.cc {
        let _ = writeln!(
            s,
            "  note: {} is not in the host's tcp_allowed_congestion_control, so the namespaces \
             default to {}; lab tests set {} per socket",
            cfg.cc, cfg.ns_cc, cfg.cc
        );
    }
    s
}

/// The lab section of a saved result: configuration and theory, then whatever was measured
/// through it (capacity, accuracy runs, a latency test's checks against theory).
pub fn render_result(r: &LabResult) -> String {
    let mut s = config(&r.config, &r.theory);
    if let Some(c) = &r.capacity {
        s.push('\n');
        s.push_str(&capacity(c));
    }
    if !r.accuracy.is_empty() {
        s.push('\n');
        s.push_str(&accuracy(&r.accuracy));
    }
    if !r.checks.is_empty() {
        s.push('\n');
        s.push_str(&checks(
            r.test.as_deref().unwrap_or("test"),
            r.config.nat,
            &r.checks,
        ));
    }
    if !r.stations.is_empty() {
        let _ = writeln!(
            s,
            "\n{} from Wi-Fi station(s) of the VM router, side by side:",
            r.test.as_deref().unwrap_or("test")
        );
        s.push_str(&stations(&r.stations, r.throughput_jain));
        if let Some(note) = &r.wifi_emulated {
            let _ = writeln!(s, "note: {note}");
        }
    }
    s
}

/// One line per station side by side, Jain's index over their throughputs, then each
/// station's byte check against the AP's counters.
pub fn stations(runs: &[StationRun], jain: Option<f64>) -> String {
    let mut s = String::new();
    let f = |v: Option<f64>, d: usize| v.map_or("-".to_string(), |v| format!("{v:.d$}"));
    for r in runs {
        let _ = writeln!(
            s,
            "station {} {} {:<12} down {:>6} Mbit/s  up {:>6} Mbit/s  latency idle {:>6} ms, loaded {:>6} ms (p99 {})",
            r.station,
            r.mac,
            r.ip,
            f(r.download_mbps, 2),
            f(r.upload_mbps, 2),
            f(r.idle_ms, 1),
            f(r.loaded_ms, 1),
            f(r.loaded_p99_ms, 1)
        );
    }
    if let Some(j) = jain {
        let _ = writeln!(
            s,
            "Jain's fairness index over the stations' throughputs: {j:.3}"
        );
    }
    for r in runs {
        for c in &r.bytes_check {
            let _ = writeln!(s, "{}", bytes_line(r.station, c));
        }
    }
    s
}

/// The bytes check line: "AP bytes for station K match the test's bytes: x vs y, Δ z%".
pub fn bytes_line(k: u32, c: &StationBytesCheck) -> String {
    let verdict = match c.matches() {
        Some(true) => "match",
        Some(false) => "do NOT match",
        None => "cannot be compared with",
    };
    format!(
        "AP bytes for station {k} ({}) {verdict} the test's bytes: {} vs {} B, Δ {}{}",
        c.direction,
        c.ap_payload_bytes,
        c.test_bytes,
        c.delta_pct()
            .map_or("-".to_string(), |d| format!("{d:+.2}%")),
        if c.matches() == Some(false) {
            format!(" (more than {BYTES_TOLERANCE_PCT} %)")
        } else {
            String::new()
        }
    )
}

/// One line per SQM capacity point (progress of `lab capacity --qdisc`).
pub fn sqm_point(p: &crate::results::lab::SqmPoint) -> String {
    format!(
        "  {:>10}: goodput {} ({:.3} of theory), p99 {} -> {}{}{}\n",
        fmt_rate(p.rate_bps as f64),
        fmt_rate(p.goodput_bps),
        p.goodput_of_theory,
        // Signed: below zero, the idle baseline's p99 was the worse one (a disturbed host).
        p.p99_increase_ms
            .map_or("+n/a".to_string(), |v| format!("{v:+.2} ms")),
        if p.pass { "pass" } else { "FAIL" },
        if p.remeasured { " (re-measured)" } else { "" },
        p.forwarder_cpu_us_per_packet
            .map_or(String::new(), |c| format!(
                "; forwarder CPU {c:.2} µs/packet"
            ))
    )
}

/// The SQM capacity result: the figure, where the qdisc ran, and the points behind it.
pub fn sqm_capacity(c: &crate::results::lab::SqmCapacity) -> String {
    let mut s = format!(
        "SQM capacity ({} in {}): {}\n  criteria: {}\n  method: {}\n",
        c.qdisc,
        c.place,
        capacity_words(c),
        c.criteria,
        c.method
    );
    if let Some(r) = &c.router {
        let _ = writeln!(s, "  router: {r}");
    }
    for p in &c.points {
        s.push_str(&sqm_point(p));
    }
    s
}

/// Several SQM capacities on one router, as one table, then each search's points.
pub fn sqm_side_by_side(all: &[crate::results::lab::SqmCapacity]) -> String {
    let mut s = String::new();
    if let Some(r) = all.iter().find_map(|c| c.router.as_ref()) {
        let _ = writeln!(s, "SQM capacity side by side on one router: {r}");
    }
    let _ = writeln!(s, "| qdisc | where | SQM capacity | points |");
    let _ = writeln!(s, "|---|---|---|---|");
    for c in all {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} |",
            c.qdisc,
            c.place,
            capacity_words(c),
            c.points.len()
        );
    }
    if let Some(c) = all.first() {
        let _ = writeln!(s, "criteria: {}", c.criteria);
    }
    for c in all {
        s.push('\n');
        s.push_str(&sqm_capacity(c));
    }
    s
}

/// The capacity in words: a search in which no rate failed only found a lower bound, so it
/// reads "at least", with what ended the search (its time budget, `--max-rate`, its steps).
fn capacity_words(c: &crate::results::lab::SqmCapacity) -> String {
    use crate::results::lab::SearchStop;
    let no_failure = !c.points.is_empty() && c.points.iter().all(|p| p.pass);
    match (c.capacity_bps, c.stopped_by) {
        (None, _) => "below the lowest rate tried".to_string(),
        (Some(r), stop) if no_failure => {
            let why = match stop {
                Some(SearchStop::Budget { seconds, .. }) => format!(
                    "the {seconds} s budget ran out before a rate failed; `lab capacity --budget S` searches longer"
                ),
                Some(SearchStop::MaxRate { bps }) => {
                    format!("the search reached --max-rate {}", fmt_rate(bps as f64))
                }
                Some(SearchStop::StepLimit) => "the doubling used all its 16 steps".into(),
                Some(SearchStop::Bracketed | SearchStop::MinRate { .. }) | None => {
                    "the search ended before a rate failed".into()
                }
            };
            format!(
                "at least {} (no rate tried failed: {why})",
                fmt_rate(r as f64)
            )
        }
        (Some(r), Some(SearchStop::Budget { seconds, .. })) => format!(
            "{} (the {seconds} s budget ended the refinement: the capacity lies below the lowest failing rate)",
            fmt_rate(r as f64)
        ),
        (Some(r), _) => fmt_rate(r as f64),
    }
}

/// One line on the lab's AQM: which qdisc, kernel or userspace, and the forwarder's state.
pub fn aqm_line(a: &crate::results::lab::AqmState) -> String {
    let mut line = format!("aqm: {} in {} ({})", a.qdisc, a.place, a.note);
    if a.place == "userspace" {
        match a.worker_pid {
            Some(p) => line.push_str(&format!("; forwarder running, worker PID {p}")),
            None => line.push_str("; forwarder NOT running"),
        }
    }
    if let Some(f) = a.kernel_forwarding {
        line.push_str(if f {
            "; kernel forwarding on"
        } else {
            "; kernel forwarding off"
        });
    }
    line
}

/// `lab status`.
pub fn status(st: &LabStatus) -> String {
    if !st.up {
        return down_line(st);
    }
    let mut s = String::new();
    let _ = writeln!(s, "lab {}: UP", st.name);
    if let (Some(cfg), Some(th)) = (&st.config, &st.theory) {
        s.push_str(&config(cfg, th));
    }
    match (
        &st.aqm,
        st.config.as_ref().and_then(|c| c.router_vm.as_ref()),
    ) {
        (_, Some(r)) => s.push_str(&router_vm(r)),
        (Some(a), None) => {
            let _ = writeln!(s, "{}", aqm_line(a));
        }
        (None, None) => {
            let _ = writeln!(s, "aqm: fifo in the kernel (the shaper's FIFO)");
        }
    }
    s.push_str(&namespaces(st));
    s.push_str(&router_state(st));
    match st.reachable {
        Some(true) => {
            let _ = writeln!(
                s,
                "== reachability LAN -> WAN (UDP echo): ok, {} ms",
                ms(st.reach_rtt_ms)
            );
        }
        Some(false) => {
            let _ = writeln!(s, "== reachability LAN -> WAN (UDP echo): FAILED");
        }
        None => {}
    }
    s
}

/// What the VM router is: emulator, kernel, CPU budget, qdiscs, agent, identity.
pub fn router_vm(r: &crate::results::lab::RouterVm) -> String {
    let mut s = String::new();
    let budget = match r.cpu_budget_pct {
        Some(p) => format!("{p} % of one host core ({})", r.cpu_budget_how),
        None => "no CPU budget (as fast as this host emulates it)".into(),
    };
    let _ = writeln!(
        s,
        "router: VM, {} vCPU, {} MiB, {budget}; PID {}, up in {:.1} s",
        r.vcpus, r.memory_mib, r.qemu_pid, r.boot_s
    );
    let _ = writeln!(s, "  emulator: {}", r.emulator);
    let pk: Vec<String> = r
        .packages
        .iter()
        .map(|p| format!("{} {}", p.package, p.version))
        .collect();
    let suite = match r.kernel_suite.as_deref() {
        Some("backports") => "bookworm-backports",
        _ => "bookworm",
    };
    let _ = writeln!(
        s,
        "  kernel {} from {suite} (Debian: {})",
        r.kernel,
        pk.join(", ")
    );
    if let Some(id) = &r.identity {
        let _ = writeln!(
            s,
            "  identity (routerbench device inside): Arch {}, {} cores, CPU {}, kernel {}",
            id.arch.as_deref().unwrap_or("?"),
            id.cores
                .map(|c| c.to_string())
                .unwrap_or_else(|| "?".into()),
            id.cpu_model.as_deref().unwrap_or("?"),
            id.kernel.as_deref().unwrap_or("?")
        );
    }
    let _ = writeln!(
        s,
        "  qdisc upload (eth1): {}; download (eth0): {}",
        r.qdisc_up, r.qdisc_down
    );
    let _ = writeln!(s, "  agent {} ; console {}", r.agent, r.console);
    if let Some(w) = &r.wifi {
        let _ = writeln!(
            s,
            "  Wi-Fi: hostapd AP on {}/{} {} (ssid {}, {}, 2.4 GHz channel {}), {} station(s):",
            w.ap_phy,
            w.ap_dev,
            w.ap_ip,
            w.ssid,
            w.security,
            w.channel,
            w.stations.len()
        );
        for st in &w.stations {
            let _ = writeln!(
                s,
                "    station {}: {}/{} {} {} (own namespace in the VM), associated in {:.1} s",
                st.station, st.phy, st.dev, st.mac, st.ip, st.assoc_s
            );
        }
        let _ = writeln!(s, "  note: {}", w.emulation);
    }
    s
}

/// The VM router's verdict line and its taps' queues.
pub fn router_verdict(
    v: &crate::results::lab::RouterVerdict,
    taps: &[crate::results::lab::TapQueue],
) -> String {
    let mut s = format!("router: {}\n", v.line);
    for t in taps {
        let _ = writeln!(
            s,
            "  tap {} ({}, {} side, in front of the router): backlog peak {} B, p95 {} B, {} drops",
            t.dev, t.qdisc, t.direction, t.backlog_max_bytes, t.backlog_p95_bytes, t.drops
        );
        if let Some(r) = &t.ring {
            let _ = writeln!(
                s,
                "    its tun ring ({} packets): peak {} packets / {} B, p95 {} B, {} dropped when full",
                r.capacity_packets
                    .map_or("size unknown".to_string(), |c| c.to_string()),
                r.max_packets,
                r.max_bytes,
                r.p95_bytes,
                r.drops
            );
        }
    }
    if let (Some(sq), Some(ts)) = (v.softirq_max_pct, v.time_squeeze_total) {
        let _ = writeln!(s, "  router softirq max {sq:.0} %, time_squeeze {ts}");
    }
    s
}

/// A lab that is down, and what of it is still there.
fn down_line(st: &LabStatus) -> String {
    let present: Vec<&str> = st
        .namespaces
        .iter()
        .filter(|n| n.exists)
        .map(|n| n.name.as_str())
        .collect();
    format!(
        "lab {}: DOWN{}\n",
        st.name,
        if present.is_empty() {
            String::new()
        } else {
            format!(
                " (partly present: {}; run `routerbench lab down --name {}`)",
                present.join(", "),
                st.name
            )
        }
    )
}

/// Each namespace: congestion control, forwarding, addresses and routes.
fn namespaces(st: &LabStatus) -> String {
    let mut s = String::new();
    for n in &st.namespaces {
        let _ = writeln!(
            s,
            "== {}  cc={} ip_forward={}",
            n.name,
            n.tcp_congestion_control.as_deref().unwrap_or("?"),
            match n.ip_forward {
                Some(true) => "1",
                Some(false) => "0",
                None => "?",
            }
        );
        for a in &n.addresses {
            let _ = writeln!(s, "  addr  {a}");
        }
        for r in &n.routes {
            let _ = writeln!(s, "  route {r}");
        }
    }
    s
}

/// The router's qdisc counters, offloads and nftables rules.
fn router_state(st: &LabStatus) -> String {
    let mut s = String::new();
    for q in &st.qdiscs {
        let _ = writeln!(
            s,
            "== qdisc {} {} {}: sent {} B {} pkt, dropped {}, overlimits {}, backlog {} B {} pkt",
            q.dev,
            q.kind,
            q.handle,
            q.bytes,
            q.packets,
            q.drops,
            q.overlimits,
            q.backlog_bytes,
            q.qlen
        );
    }
    for o in &st.offloads {
        let _ = writeln!(s, "== offloads {o}");
    }
    if let Some(rules) = &st.nft_ruleset {
        let rules = rules.trim();
        if rules.is_empty() {
            let _ = writeln!(s, "== nft: no rules");
        } else {
            let _ = writeln!(s, "== nft:");
            for l in rules.lines() {
                let _ = writeln!(s, "  {l}");
            }
        }
    }
    s
}

/// The capacity table.
pub fn capacity(c: &CapacityResult) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "forwarding capacity, unshaped, LAN -> router -> WAN ({})",
        c.generator
    );
    let _ = writeln!(
        s,
        "| NAT | flows | offloads | goodput | seconds | retransmits |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|");
    for p in &c.points {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.1} | {} |",
            if p.nat { "on" } else { "off" },
            p.flows,
            if p.offloads { "on" } else { "off" },
            fmt_rate(p.goodput_bps),
            p.seconds,
            p.retransmits
                .map(|r| r.to_string())
                .unwrap_or_else(|| "n/a".into())
        );
    }
    if let Some(b) = c.cpu_budget_pct {
        let _ = writeln!(s, "VM router CPU budget: {b} % of one host core");
    }
    if !c.wireguard.is_empty() {
        s.push_str(&wireguard(&c.wireguard));
    }
    s
}

/// The WireGuard tunnel's goodput beside the model's prediction.
pub fn wireguard(w: &[crate::results::lab::WireguardCheck]) -> String {
    let mut s = String::from(
        "WireGuard through the router (kernel module in the VM <-> wireguard-go on the WAN host)\n",
    );
    let _ = writeln!(
        s,
        "| flows | unencrypted | forward µs/pkt | {} | crypto µs/pkt | predicted | measured | error |",
        w.first().map_or("crypto".to_string(), |c| format!(
            "{} at 1456 B",
            c.crypto_algorithm
        ))
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|");
    for c in w {
        let _ = writeln!(
            s,
            "| {} | {} | {:.1} | {:.2} MB/s | {:.1} | {} | {} | {:+.1} % |",
            c.flows,
            fmt_rate(c.plain_goodput_bps),
            c.forward_us_per_packet,
            c.crypto_bytes_per_s / 1e6,
            c.crypto_us_per_packet,
            fmt_rate(c.predicted_goodput_bps),
            fmt_rate(c.measured_goodput_bps),
            c.error_pct
        );
    }
    if let Some(c) = w.first() {
        let _ = writeln!(
            s,
            "model: goodput = 1368 B / (1 / unencrypted packets per s + 1456 B / crypto rate); crypto row inside the VM: {}",
            c.crypto_engine
        );
    }
    s
}

/// Header of the accuracy table.
pub fn accuracy_header() -> String {
    "| rate | buffer B | dir | flows | cc | NAT | theory ms | idle ms | loaded med / p99 ms | median +ms | p99 +ms | median/theory | p99/theory | goodput | goodput/rate | goodput/(0.957 rate) | retr | drops | probe loss |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n".into()
}

/// One accuracy row.
pub fn accuracy_row(p: &AccuracyPoint) -> String {
    let loss = if p.loaded.sent > 0 {
        format!(
            "{:.1}%",
            100.0 * f64::from(p.loaded.sent - p.loaded.received.min(p.loaded.sent))
                / f64::from(p.loaded.sent)
        )
    } else {
        "n/a".into()
    };
    let opt = |x: Option<u64>| x.map(|r| r.to_string()).unwrap_or_else(|| "n/a".into());
    format!(
        "| {} | {} | {} | {} | {} | {} | {:.1} | {} | {} / {} | {} | {} | {} | {} | {} | {:.3} | {:.3} | {} | {} | {} |\n",
        fmt_rate(p.rate_bps as f64),
        p.buffer_bytes,
        p.direction,
        p.flows,
        p.cc,
        if p.nat { "on" } else { "off" },
        p.theory_ms,
        ms(p.idle.median_ms),
        ms(p.loaded.median_ms),
        ms(p.loaded.p99_ms),
        ms(p.median_increase_ms),
        ms(p.p99_increase_ms),
        ratio(p.median_ratio),
        ratio(p.p99_ratio),
        fmt_rate(p.goodput_bps),
        p.goodput_ratio,
        p.goodput_ratio / p.goodput_theory_ratio,
        opt(p.retransmits),
        opt(p.qdisc_drops),
        loss
    )
}

/// The accuracy table.
pub fn accuracy(points: &[AccuracyPoint]) -> String {
    let mut s = accuracy_header();
    for p in points {
        s.push_str(&accuracy_row(p));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::lab::{CapacityPoint, SearchStop, Shaper, SqmCapacity, SqmPoint};

    #[test]
    fn stations_side_by_side_with_their_byte_checks() {
        let c = StationBytesCheck {
            direction: "download".into(),
            ap_payload_bytes: 1_010,
            test_bytes: 1_000,
            ratio: Some(1.01),
            ..Default::default()
        };
        assert_eq!(
            bytes_line(1, &c),
            "AP bytes for station 1 (download) match the test's bytes: 1010 vs 1000 B, Δ +1.00%"
        );
        let bad = StationBytesCheck {
            ratio: Some(0.9),
            ..c.clone()
        };
        assert!(bytes_line(2, &bad).ends_with("Δ -10.00% (more than 2 %)"));
        let none = StationBytesCheck {
            ratio: None,
            ..c.clone()
        };
        assert!(bytes_line(2, &none).contains("cannot be compared with"));
        let runs = [
            StationRun {
                station: 1,
                mac: "02:00:00:00:01:00".into(),
                ip: "10.201.3.11".into(),
                download_mbps: Some(10.0),
                loaded_ms: Some(12.5),
                bytes_check: vec![c],
                ..Default::default()
            },
            StationRun {
                station: 2,
                upload_mbps: Some(4.0),
                bytes_check: vec![bad],
                ..Default::default()
            },
        ];
        let text = stations(&runs, Some(0.9));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        assert!(
            lines[0].starts_with("station 1 02:00:00:00:01:00 10.201.3.11"),
            "{text}"
        );
        assert!(
            lines[0].contains("down  10.00 Mbit/s  up      - Mbit/s"),
            "{text}"
        );
        assert!(
            lines[1].contains("down      - Mbit/s  up   4.00 Mbit/s"),
            "{text}"
        );
        assert_eq!(
            lines[2],
            "Jain's fairness index over the stations' throughputs: 0.900"
        );
        assert!(lines[4].contains("station 2") && lines[4].contains("do NOT match"));
        // A saved result renders them too, with the emulation note.
        let mut r = LabResult {
            theory: theory(),
            config: cfg(),
            capacity: None,
            accuracy: Vec::new(),
            test: Some("rtt_fair".into()),
            checks: Vec::new(),
            tap_queues: Vec::new(),
            router_verdict: None,
            station: None,
            stations: runs.to_vec(),
            throughput_jain: Some(0.9),
            wifi_emulated: Some("the Wi-Fi hop is emulated".into()),
        };
        let all = render_result(&r);
        assert!(all.contains("rtt_fair from Wi-Fi station(s)"), "{all}");
        assert!(all.contains("note: the Wi-Fi hop is emulated"), "{all}");
        r.stations.clear();
        assert!(!render_result(&r).contains("Wi-Fi station"));
    }

    #[test]
    fn sqm_capacity_is_a_lower_bound_when_no_rate_failed() {
        let point = |rate_bps, pass| SqmPoint {
            rate_bps,
            pass,
            ..Default::default()
        };
        let mut c = SqmCapacity {
            qdisc: "cake".into(),
            place: "userspace".into(),
            capacity_bps: Some(800_000_000),
            points: vec![point(400_000_000, true), point(800_000_000, true)],
            ..Default::default()
        };
        let text = sqm_capacity(&c);
        assert!(text.contains("at least 800.0 Mbit/s"), "{text}");
        assert!(
            text.contains("the search ended before a rate failed"),
            "{text}"
        );
        // What ended it is said: never "its ceiling" when it was the budget.
        c.stopped_by = Some(SearchStop::Budget {
            seconds: 60,
            failed: false,
        });
        let text = sqm_capacity(&c);
        assert!(text.contains("at least 800.0 Mbit/s"), "{text}");
        assert!(text.contains("the 60 s budget ran out"), "{text}");
        assert!(!text.contains("ceiling"), "{text}");
        c.stopped_by = Some(SearchStop::MaxRate { bps: 800_000_000 });
        let text = sqm_capacity(&c);
        assert!(text.contains("reached --max-rate 800.0 Mbit/s"), "{text}");
        c.stopped_by = Some(SearchStop::Bracketed);
        c.points.push(point(1_600_000_000, false));
        let text = sqm_capacity(&c);
        assert!(!text.contains("at least"), "{text}");
        assert!(text.contains("): 800.0 Mbit/s"), "{text}");
        c.stopped_by = Some(SearchStop::Budget {
            seconds: 60,
            failed: true,
        });
        let text = sqm_capacity(&c);
        assert!(!text.contains("at least"), "{text}");
        assert!(text.contains("budget ended the refinement"), "{text}");
        c.capacity_bps = None;
        assert!(sqm_capacity(&c).contains("below the lowest rate tried"));
    }

    fn cfg() -> LabConfig {
        LabConfig {
            name: "t".into(),
            ns_lan: "t-lan".into(),
            ns_rtr: "t-rtr".into(),
            ns_wan: "t-wan".into(),
            lan_ip: "10.201.1.2".into(),
            rtr_lan_ip: "10.201.1.1".into(),
            rtr_wan_ip: "10.201.2.1".into(),
            wan_ip: "10.201.2.2".into(),
            up_rate_bps: Some(20_000_000),
            down_rate_bps: None,
            buffer_bytes: 64_000,
            burst_bytes: 15_360,
            shaper: Shaper::Tbf,
            nat: true,
            offloads: false,
            cc: "cubic".into(),
            ns_cc: "reno".into(),
            devices: Default::default(),
            router_vm: None,
        }
    }

    /// What `lab::theory` computes for `cfg()`: 64000 B at 20 Mbit/s up, download unshaped.
    fn theory() -> LabTheory {
        LabTheory {
            up_queue_delay_ms: Some(25.6),
            down_queue_delay_ms: None,
            goodput_ratio: 1448.0 / 1514.0,
            up_goodput_bps: Some(20e6 * 1448.0 / 1514.0),
            down_goodput_bps: None,
        }
    }

    #[test]
    fn config_text_has_theory() {
        let c = cfg();
        let t = config(&c, &theory());
        assert!(t.contains("full queue adds 25.6 ms"), "{t}");
        assert!(
            t.contains("download unshaped") || t.contains("theory down: unshaped"),
            "{t}"
        );
        assert!(t.contains("namespaces default to reno"), "{t}");
    }

    #[test]
    fn result_section_lists_what_was_measured() {
        let c = cfg();
        let mut r = LabResult {
            theory: theory(),
            config: c,
            capacity: None,
            accuracy: Vec::new(),
            test: None,
            checks: Vec::new(),
            tap_queues: Vec::new(),
            router_verdict: None,
            station: None,
            stations: Vec::new(),
            throughput_jain: None,
            wifi_emulated: None,
        };
        let bare = render_result(&r);
        assert!(bare.contains("full queue adds 25.6 ms"), "{bare}");
        assert!(!bare.contains("forwarding capacity"), "{bare}");
        r.capacity = Some(CapacityResult {
            generator: "g".into(),
            points: Vec::new(),
            ..Default::default()
        });
        assert!(render_result(&r).contains("forwarding capacity"));
    }

    #[test]
    fn status_text() {
        use crate::results::lab::NamespaceStatus;
        let ns = |name: &str, exists| NamespaceStatus {
            name: name.into(),
            exists,
            ..Default::default()
        };
        let mut st = LabStatus {
            name: "t".into(),
            namespaces: vec![ns("t-lan", true), ns("t-rtr", false), ns("t-wan", false)],
            ..Default::default()
        };
        let down = status(&st);
        assert!(
            down.starts_with("lab t: DOWN (partly present: t-lan;"),
            "{down}"
        );
        assert_eq!(down.lines().count(), 1, "{down}");
        st.up = true;
        st.config = Some(cfg());
        st.theory = Some(theory());
        st.reachable = Some(true);
        st.reach_rtt_ms = Some(0.05);
        let up = status(&st);
        assert!(
            up.starts_with("lab t: UP\nlab t: t-lan (lan0 10.201.1.2)"),
            "{up}"
        );
        assert!(up.contains("full queue adds 25.6 ms"), "{up}");
        assert!(up.contains("aqm: fifo in the kernel"), "{up}");
        assert!(up.contains("== t-lan  cc=? ip_forward=?"), "{up}");
        assert!(up.ends_with("(UDP echo): ok, 0.05 ms\n"), "{up}");
    }

    #[test]
    fn old_files_without_devices_or_goodput_theory_render_as_before() {
        // A lab section as routerbench wrote it before `devices` and `goodput_theory_ratio`.
        let mut v = serde_json::to_value(LabResult {
            theory: theory(),
            config: cfg(),
            capacity: None,
            accuracy: Vec::new(),
            test: None,
            checks: Vec::new(),
            tap_queues: Vec::new(),
            router_verdict: None,
            station: None,
            stations: Vec::new(),
            throughput_jain: None,
            wifi_emulated: None,
        })
        .unwrap();
        v["config"].as_object_mut().unwrap().remove("devices");
        let rtt = serde_json::json!({"sent": 20, "received": 20, "median_ms": 0.1,
            "p90_ms": 0.1, "p99_ms": 0.2, "min_ms": 0.1, "max_ms": 0.2});
        v["accuracy"] = serde_json::json!([{
            "direction": "up", "flows": 1, "cc": "cubic", "rate_bps": 20_000_000,
            "buffer_bytes": 64_000, "goodput_bps": 19.1e6, "goodput_ratio": 0.955,
            "idle": rtt, "loaded": rtt, "theory_ms": 25.6, "median_increase_ms": 24.0,
            "p99_increase_ms": 25.4, "median_ratio": 0.94, "p99_ratio": 0.99,
            "retransmits": 3, "qdisc_drops": 5, "method": "m"
        }]);
        let r: LabResult = serde_json::from_value(v).unwrap();
        assert_eq!(r.config.devices.rtr_wan, "rtr-wan");
        let text = render_result(&r);
        assert!(text.contains("(lan0 10.201.1.2)"), "{text}");
        assert!(text.contains("on rtr-wan (tbf)"), "{text}");
        // 0.955 / (1448/1514) = 0.999
        assert!(text.contains("| 0.955 | 0.999 |"), "{text}");
    }

    #[test]
    fn capacity_table() {
        let c = CapacityResult {
            generator: "x".into(),
            points: vec![CapacityPoint {
                nat: true,
                flows: 4,
                offloads: false,
                goodput_bps: 6.5e9,
                seconds: 5.0,
                retransmits: None,
            }],
            ..Default::default()
        };
        let t = capacity(&c);
        assert!(
            t.contains("| on | 4 | off | 6.50 Gbit/s | 5.0 | n/a |"),
            "{t}"
        );
    }
}
