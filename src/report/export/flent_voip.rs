//! The `voip` test in flent's data format: what flent's VoIP runner writes when it uses irtt
//! (flent/runners.py, `IrttRunner` with `multi_results`, as `voip.conf` sets it up): raw
//! `VoIP` points `{t, val (RTT), seq, owd_up, owd_down, ipdv_up, ipdv_down}` (lost ones
//! `{t, seq, lost}`), and the sub-series `VoIP::delay` (one-way delay up), `VoIP::jitter`
//! (|IPDV up|), `VoIP::loss` (probes lost since the previous sample), `VoIP::rtt` sampled every
//! STEP_SIZE, plus the computed `VoIP::induced_delay` (delay − its minimum). The caller
//! (`flent.rs`) passes its grid interpolation, so this file needs nothing of it.

use crate::results::latency::LatencyResult;
use serde_json::{Map, Value, json};

/// flent's grid interpolation: `(t, value)` points onto the grid's times.
type Interpolate = fn(&[(f64, f64)], &[f64]) -> Vec<Option<f64>>;

/// Adds the VoIP series of `r` (its first probe series) to the document's parts.
pub(super) fn add_voip(
    r: &LatencyResult,
    grid: &[f64],
    raw: &mut Map<String, Value>,
    meta: &mut Map<String, Value>,
    interpolated: &mut Vec<(String, Vec<Option<f64>>)>,
    interpolate: Interpolate,
) {
    let Some(p) = r.probes.first() else { return };
    let mut raw_pts = Vec::new();
    let (mut delay, mut jitter, mut loss, mut rtt) = (vec![], vec![], vec![], vec![]);
    let (mut prev_up, mut prev_down): (Option<f64>, Option<f64>) = (None, None);
    let (mut next_sample, mut lost) = (f64::NEG_INFINITY, 0u32);
    let (mut ipdv_up_all, mut ipdv_down_all) = (Vec::new(), Vec::new());
    for s in &p.samples {
        let Some(v) = s.rtt_ms else {
            raw_pts.push(json!({"t": r.t0_unix + s.t, "seq": s.seq, "lost": true}));
            lost += 1;
            continue;
        };
        // irtt's runner stamps a received packet with its receive time.
        let t = s.t + v / 1e3;
        let mut o = json!({"t": r.t0_unix + t, "val": v, "seq": s.seq});
        let ipdv_up = s.owd_up_ms.zip(prev_up).map(|(a, b)| a - b);
        let ipdv_down = s.owd_down_ms.zip(prev_down).map(|(a, b)| a - b);
        if let (Some(u), Some(d)) = (s.owd_up_ms, s.owd_down_ms) {
            o["owd_up"] = json!(u);
            o["owd_down"] = json!(d);
        }
        if let (Some(u), Some(d)) = (ipdv_up, ipdv_down) {
            o["ipdv_up"] = json!(u);
            o["ipdv_down"] = json!(d);
            o["ipdv"] = json!(u + d);
            ipdv_up_all.push(u.abs());
            ipdv_down_all.push(d.abs());
        }
        prev_up = s.owd_up_ms.or(prev_up);
        prev_down = s.owd_down_ms.or(prev_down);
        raw_pts.push(o);
        if t >= next_sample {
            rtt.push((t, v));
            if let Some(u) = s.owd_up_ms {
                delay.push((t, u));
            }
            jitter.push((t, ipdv_up.map(f64::abs).unwrap_or(0.0)));
            loss.push((t, f64::from(lost)));
            lost = 0;
            next_sample = t + r.step_s;
        }
    }
    let min_delay = delay.iter().map(|d| d.1).fold(f64::INFINITY, f64::min);
    let induced: Vec<(f64, f64)> = delay.iter().map(|&(t, d)| (t, d - min_delay)).collect();
    for (name, pts) in [
        ("VoIP::delay", &delay),
        ("VoIP::jitter", &jitter),
        ("VoIP::loss", &loss),
        ("VoIP::rtt", &rtt),
        ("VoIP::induced_delay", &induced),
    ] {
        interpolated.push((name.into(), interpolate(pts, grid)));
        raw.insert(name.into(), json!([]));
    }
    raw.insert("VoIP::bitrate".into(), json!([]));
    raw.insert("VoIP".into(), Value::Array(raw_pts));
    let mean = |v: &[f64]| crate::stats::mean(v);
    let ups: Vec<f64> = p.samples.iter().filter_map(|s| s.owd_up_ms).collect();
    let downs: Vec<f64> = p.samples.iter().filter_map(|s| s.owd_down_ms).collect();
    meta.insert(
        "VoIP".into(),
        json!({
            "UNITS": "ms",
            "RUNNER": "routerbench",
            "MEAN_VALUE": p.rtt_ms.mean,
            "RTT_MEAN": p.rtt_ms.mean,
            "RTT_MEDIAN": p.rtt_ms.median,
            "RTT_MIN": p.rtt_ms.min,
            "RTT_MAX": p.rtt_ms.max,
            "OWD_UP_MEAN": mean(&ups),
            "OWD_DOWN_MEAN": mean(&downs),
            "IPDV_UP_MEAN": mean(&ipdv_up_all),
            "IPDV_DOWN_MEAN": mean(&ipdv_down_all),
            "PACKETS_SENT": p.sent,
            "PACKETS_RECEIVED": p.received,
            "PACKET_LOSS_RATE": if p.sent > 0 { 1.0 - f64::from(p.received) / f64::from(p.sent) } else { 0.0 },
            "LOST_UP": p.lost_up,
            "LOST_DOWN": p.lost_down,
            "TIMESTAMPS": p.timestamps,
        }),
    );
    for (name, runner) in [
        ("VoIP::bitrate", "NullRunner"),
        ("VoIP::delay", "NullRunner"),
        ("VoIP::jitter", "NullRunner"),
        ("VoIP::loss", "NullRunner"),
        ("VoIP::rtt", "NullRunner"),
        ("VoIP::induced_delay", "DiffMinRunner"),
    ] {
        meta.insert(name.into(), json!({"RUNNER": runner}));
    }
}
