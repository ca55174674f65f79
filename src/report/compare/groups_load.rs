//! The figure groups measured under load: latency under load (RRUL and its kin), per phase,
//! RPM, SQM capacity, forwarding capacity and the stress verdicts. Each reads one section of a
//! result and names how it was measured, so a comparison can say when two are not like-for-like.

use super::model::{Aspect, Better, Figure, Options, Unit, Value, aspect};
use crate::results::RunResult;
use crate::results::lab::SearchStop;
use crate::results::latency::LatencyResult;
use crate::results::stress::{InstabilityKind, ThrottleVerdict};

/// `10 s`, `1.5 s`.
fn seconds(s: f64) -> String {
    if (s - s.round()).abs() < 1e-6 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

/// Congestion control of a latency test: the one asked for, else what the flows' sockets
/// reported (the system default).
fn latency_cc(l: &LatencyResult) -> Option<String> {
    l.congestion_control
        .clone()
        .or_else(|| l.flows.iter().find_map(|f| f.cc_client.clone()))
}

fn latency_method(l: &LatencyResult) -> Vec<Aspect> {
    let mut m = vec![aspect("test", l.test.as_str())];
    if let Some(cc) = latency_cc(l) {
        m.push(aspect("congestion control", cc));
    }
    m.push(aspect("length", seconds(l.length_s)));
    m
}

/// Mbit/s (as results keep them) to bit/s.
fn mbit(v: Option<f64>) -> Option<f64> {
    v.map(|x| x * 1e6)
}

pub fn rrul(run: &RunResult, _: &Options) -> Vec<Figure> {
    let Some(l) = run.latency.as_ref().filter(|l| l.phases.is_empty()) else {
        return Vec::new();
    };
    let s = &l.summary;
    let g = "rrul";
    let ms = |name: &str, v: Option<f64>| Figure::number(g, name, Unit::Ms, Better::Lower, v);
    let rate = |name: &str, v: Option<f64>| {
        Figure::number(g, name, Unit::BitsPerSec, Better::Higher, mbit(v))
    };
    let method = latency_method(l);
    [
        ms("idle latency", s.idle_rtt_ms.median),
        ms("loaded latency", s.loaded_rtt_ms.median),
        ms("loaded p99", s.loaded_rtt_ms.p99),
        ms("increase", s.increase_ms),
        Figure::text(g, "grade", s.grade.clone()),
        rate("upload", s.upload_mbps),
        rate("download", s.download_mbps),
    ]
    .into_iter()
    .flatten()
    .map(|f| f.with(&method))
    .collect()
}

pub fn phases(run: &RunResult, _: &Options) -> Vec<Figure> {
    let Some(l) = run.latency.as_ref().filter(|l| !l.phases.is_empty()) else {
        return Vec::new();
    };
    let g = "phases";
    let mut method = latency_method(l);
    let flows = l
        .flows
        .iter()
        .filter(|f| f.direction == "download")
        .filter(|f| {
            f.samples
                .first()
                .zip(l.phases.first())
                .is_some_and(|(s, p)| s.t <= p.load_end_s)
        })
        .count();
    if flows > 0 {
        method.push(aspect("flows", flows.to_string()));
    }
    let mut out = Vec::new();
    for p in &l.phases {
        let name = |what: &str| format!("{}: {what}", p.phase);
        let rate = |what: &str, v: Option<f64>| {
            Figure::number(g, &name(what), Unit::BitsPerSec, Better::Higher, mbit(v))
        };
        let ms =
            |what: &str, v: Option<f64>| Figure::number(g, &name(what), Unit::Ms, Better::Lower, v);
        out.extend(
            [
                rate("down", p.download_mbps),
                rate("up", p.upload_mbps),
                ms("RTT", p.rtt_ms.median),
                ms("RTT +idle", p.rtt_increase_ms),
                // The one-way delays' increase over idle: the queue in each direction.
                ms("up delay", p.owd_up_increase_ms),
                ms("down delay", p.owd_down_increase_ms),
            ]
            .into_iter()
            .flatten()
            .map(|f| f.with(&method)),
        );
    }
    out
}

pub fn rpm(run: &RunResult, _: &Options) -> Vec<Figure> {
    let Some(r) = &run.rpm else {
        return Vec::new();
    };
    let method = [aspect("transport", r.transport.as_str())];
    let mut out: Vec<Figure> = r
        .runs
        .iter()
        .filter_map(|x| {
            Figure::number(
                "rpm",
                &format!("RPM {}", x.direction),
                Unit::Rpm,
                Better::Higher,
                x.score.rpm,
            )
        })
        .collect();
    out.extend(Figure::number(
        "rpm",
        "idle latency",
        Unit::Ms,
        Better::Lower,
        r.idle_latency_ms,
    ));
    out.into_iter().map(|f| f.with(&method)).collect()
}

pub fn sqm(run: &RunResult, _: &Options) -> Vec<Figure> {
    let all: Vec<_> = run
        .sqm_capacity
        .iter()
        .chain(&run.sqm_side_by_side)
        .collect();
    all.iter()
        .map(|c| {
            // Two searches of one qdisc (kernel and userspace side by side) get a row each.
            let twice = all.iter().filter(|o| o.qdisc == c.qdisc).count() > 1;
            let name = if twice {
                format!("{} ({})", c.qdisc, c.place)
            } else {
                c.qdisc.clone()
            };
            let found_failure = matches!(
                c.stopped_by,
                None | Some(SearchStop::Bracketed) | Some(SearchStop::Budget { failed: true, .. })
            );
            let value = match c.capacity_bps {
                Some(b) if found_failure => Value::Number(b as f64),
                Some(b) => Value::AtLeast(b as f64),
                None => Value::NotMeasured("even the lowest rate tried failed".into()),
            };
            let mut method = vec![aspect("place", c.place.as_str())];
            if let Some(r) = &c.router {
                method.push(aspect("router", r.as_str()));
            }
            method.push(aspect("search", c.method.as_str()));
            Figure::new("sqm", &name, Unit::BitsPerSec, Better::Higher, value).with(&method)
        })
        .collect()
}

pub fn forwarding(run: &RunResult, _: &Options) -> Vec<Figure> {
    let Some(c) = run.lab.as_ref().and_then(|l| l.capacity.as_ref()) else {
        return Vec::new();
    };
    let mut method = vec![aspect("load", c.generator.as_str())];
    if let Some(b) = c.cpu_budget_pct {
        method.push(aspect("CPU budget", format!("{b} %")));
    }
    c.points
        .iter()
        .filter_map(|p| {
            let name = format!(
                "{} flow{}{}",
                p.flows,
                if p.flows == 1 { "" } else { "s" },
                if p.nat { ", NAT" } else { "" }
            );
            let mut m = method.clone();
            m.push(aspect("offloads", if p.offloads { "on" } else { "off" }));
            Figure::number(
                "forwarding",
                &name,
                Unit::BitsPerSec,
                Better::Higher,
                Some(p.goodput_bps),
            )
            .map(|f| f.with(&m))
        })
        .collect()
}

fn throttle_word(v: ThrottleVerdict) -> &'static str {
    match v {
        ThrottleVerdict::Throttled => "throttled",
        ThrottleVerdict::FrequencyDrop => "clock fell (not heat)",
        ThrottleVerdict::Suspected => "suspected",
        ThrottleVerdict::None => "none",
        ThrottleVerdict::Unknown => "cannot tell",
    }
}

fn instability_word(k: InstabilityKind) -> &'static str {
    match k {
        InstabilityKind::TestError => "test error",
        InstabilityKind::ConnectionReset => "connection reset",
        InstabilityKind::AgentStall => "agent stall",
        InstabilityKind::Reboot => "reboot",
        InstabilityKind::OomKill => "OOM kill",
        InstabilityKind::KernelOops => "kernel oops",
        InstabilityKind::KernelWarning => "kernel warning",
    }
}

pub fn stress(run: &RunResult, _: &Options) -> Vec<Figure> {
    let Some(s) = &run.stress else {
        return Vec::new();
    };
    let a = &s.analysis;
    let g = "stress";
    let mut method = vec![aspect("length", format!("{:.0} min", s.measured_s / 60.0))];
    if let Some(c) = &s.cpu {
        method.push(aspect(
            "load",
            format!("{} on {} threads", c.algorithm.cli_name(), c.threads),
        ));
    }
    if let Some(n) = &s.net {
        method.push(aspect(
            "network load",
            format!("{} to {}", n.test, n.target),
        ));
    }
    let stability = if a.stability.stable {
        "stable".to_string()
    } else {
        let mut kinds: Vec<&str> = a
            .stability
            .findings
            .iter()
            .map(|f| instability_word(f.kind))
            .collect();
        kinds.dedup();
        if !a.stability.stopped.is_empty() {
            kinds.push("stopped answering");
        }
        format!("unstable: {}", kinds.join(", "))
    };
    let heat = match a.heat.zones.iter().map(|z| z.peak_c).reduce(f64::max) {
        Some(peak) => Value::Number(peak),
        None => Value::NotMeasured("no thermal zone or hwmon sensor".into()),
    };
    let d = &a.drift;
    let pct =
        |name: &str, v: Option<f64>| Figure::number(g, name, Unit::Percent, Better::Higher, v);
    [
        Figure::text(g, "stability", Some(stability)),
        Figure::text(
            g,
            "throttling",
            Some(throttle_word(a.throttling.verdict).into()),
        ),
        Some(Figure::new(
            g,
            "peak temperature",
            Unit::Celsius,
            Better::Lower,
            heat,
        )),
        pct("drift crypto", d.crypto_change_pct),
        pct("drift up", d.up_change_pct),
        pct("drift down", d.down_change_pct),
        Figure::number(
            g,
            "drift latency",
            Unit::Ms,
            Better::Lower,
            d.latency_change_ms,
        ),
    ]
    .into_iter()
    .flatten()
    .map(|f| f.with(&method))
    .collect()
}
