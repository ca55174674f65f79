//! The page's raw samples to a routerbench result: bytes per step and probe round trips become
//! the usual latency section (test `web`, a phase per load), so `report` and `compare` read a
//! browser test like any other. Pure; no I/O.

use crate::latency::figures::{grade, rpm, series_stats};
use crate::results::latency::{
    FlowResult, LatencyResult, LatencySession, LatencySummary, ProbePoint, ProbeResult,
    SeriesStats, ThroughputSample,
};
use serde::Deserialize;

/// What the page posts when its test ends (bounded by the server before parsing).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct PageSamples {
    /// Its step, s (must match the session's).
    pub step_s: f64,
    /// Download bytes the page read, per step from its t0.
    #[serde(default)]
    pub down: Vec<u64>,
    /// Upload bytes its progress events counted as sent, per step (a cross-check: they run
    /// ahead of the wire by what the socket buffers hold).
    #[serde(default)]
    pub up: Vec<u64>,
    /// Probes: send time s from t0, round trip ms (null: no answer within 3 s).
    #[serde(default)]
    pub probes: Vec<(f64, Option<f64>)>,
    #[serde(default)]
    pub errors: Vec<String>,
    #[serde(default)]
    pub timing: Option<String>,
    #[serde(default)]
    pub user_agent: Option<String>,
    #[serde(default)]
    pub screen: Option<String>,
}

/// A phase of the browser test on its timeline.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Phase {
    pub phase: &'static str,
    pub start_s: f64,
    pub end_s: f64,
}

impl Phase {
    fn loads(&self, direction: &str) -> bool {
        self.phase == "both" || self.phase == direction
    }
}

/// The timeline: idle lead-in, then download, upload, both, each `phase_s` long.
pub fn timeline(idle_s: f64, phase_s: f64) -> Vec<Phase> {
    ["download", "upload", "both"]
        .iter()
        .enumerate()
        .map(|(i, p)| Phase {
            phase: p,
            start_s: idle_s + i as f64 * phase_s,
            end_s: idle_s + (i + 1) as f64 * phase_s,
        })
        .collect()
}

/// The session's facts the conversion needs besides the page's samples.
#[derive(Debug, Clone)]
pub struct SessionFacts {
    pub host: String,
    pub port: u16,
    pub ip_version: u8,
    pub t0_unix: f64,
    pub idle_s: f64,
    pub phases: Vec<Phase>,
    pub step_s: f64,
    pub probe_interval_s: f64,
    /// Upload bytes the server received per step from t0 (the receiver's count, the upload's
    /// figures): each POST body spread over the time it took to arrive.
    pub up_received: Vec<u64>,
}

impl SessionFacts {
    fn total_s(&self) -> f64 {
        self.phases.last().map_or(self.idle_s, |p| p.end_s)
    }
    /// Inside a phase's steady part (its first min(20 %, 2 s) left out, as `phases` does).
    fn steady(&self, t: f64) -> bool {
        self.phases.iter().any(|p| {
            let from = p.start_s + crate::latency::phases::warmup_s(p.end_s - p.start_s);
            t >= from && t < p.end_s
        })
    }
}

/// Checks what the page sent against the session: lengths and values a real page can give.
pub fn check(s: &PageSamples, f: &SessionFacts) -> Result<(), String> {
    if (s.step_s - f.step_s).abs() > 1e-9 {
        return Err(format!(
            "step {} s, the session's is {} s",
            s.step_s, f.step_s
        ));
    }
    let steps = (f.total_s() / f.step_s).ceil() as usize + 50;
    if s.down.len() > steps || s.up.len() > steps {
        return Err(format!("more than {steps} steps of bytes"));
    }
    let max_probes = (f.total_s() / f.probe_interval_s).ceil() as usize + 50;
    if s.probes.len() > max_probes {
        return Err(format!("more than {max_probes} probes"));
    }
    let bad = |x: f64| !x.is_finite() || x < 0.0;
    if s.probes
        .iter()
        .any(|(t, r)| bad(*t) || *t > f.total_s() + 10.0 || r.is_some_and(|r| bad(r) || r > 60e3))
    {
        return Err("a probe with a time or round trip out of range".into());
    }
    Ok(())
}

fn flow(name: &str, direction: &str, bins: &[u64], f: &SessionFacts) -> FlowResult {
    let loads = |t: f64| {
        f.phases
            .iter()
            .any(|p| p.loads(direction) && t >= p.start_s && t < p.end_s)
    };
    let mut samples = Vec::new();
    let mut bytes = 0;
    for (i, b) in bins.iter().enumerate() {
        let start = i as f64 * f.step_s;
        if !loads(start + f.step_s / 2.0) {
            continue;
        }
        bytes += b;
        samples.push(ThroughputSample {
            t: start + f.step_s,
            mbps: *b as f64 * 8.0 / f.step_s / 1e6,
            tcp_rtt_ms: None,
        });
    }
    FlowResult {
        name: name.into(),
        label: "BE".into(),
        direction: direction.into(),
        tos: 0,
        tos_client: None,
        tos_server: None,
        cc_client: None,
        cc_server: None,
        bytes,
        bytes_all: None,
        mbps: series_stats(samples.iter().map(|s| s.mbps)),
        tcp_rtt_ms: SeriesStats::default(),
        samples,
    }
}

/// Mean goodput of a direction over the steady parts of the phases that load it, Mbit/s.
fn goodput(bins: &[u64], direction: &str, f: &SessionFacts) -> Option<f64> {
    let mut bits = 0.0;
    let mut secs = 0.0;
    for p in f.phases.iter().filter(|p| p.loads(direction)) {
        let from = p.start_s + crate::latency::phases::warmup_s(p.end_s - p.start_s);
        let (a, b) = (
            (from / f.step_s).round() as usize,
            (p.end_s / f.step_s).round() as usize,
        );
        bits += bins.iter().take(b).skip(a).sum::<u64>() as f64 * 8.0;
        secs += (b.saturating_sub(a)) as f64 * f.step_s;
    }
    (secs > 0.0 && bits > 0.0).then(|| bits / secs / 1e6)
}

/// The latency section of a browser test.
pub fn latency(s: &PageSamples, f: &SessionFacts, started_at: String) -> LatencyResult {
    let points: Vec<ProbePoint> = s
        .probes
        .iter()
        .enumerate()
        .map(|(i, (t, rtt))| ProbePoint {
            t: *t,
            seq: i as u32,
            rtt_ms: *rtt,
            rtt_user_ms: *rtt,
            owd_up_ms: None,
            owd_down_ms: None,
            user_delay_ms: None,
            server_ms: None,
        })
        .collect();
    let idle: Vec<f64> = points
        .iter()
        .filter(|p| p.t < f.idle_s)
        .filter_map(|p| p.rtt_ms)
        .collect();
    let loaded: Vec<f64> = points
        .iter()
        .filter(|p| f.steady(p.t))
        .filter_map(|p| p.rtt_ms)
        .collect();
    let idle_stats = series_stats(idle.iter().copied());
    let loaded_stats = series_stats(loaded.iter().copied());
    let all = series_stats(points.iter().filter_map(|p| p.rtt_ms));
    let increase = loaded_stats.mean.zip(idle_stats.mean).map(|(l, i)| l - i);
    let received = points.iter().filter(|p| p.rtt_ms.is_some()).count() as u32;
    let probe = ProbeResult {
        name: "HTTP GET round trip".into(),
        kind: "http".into(),
        tos: 0,
        timestamps: "user".into(),
        server_timestamps: None,
        sent: points.len() as u32,
        received,
        lost_up: None,
        lost_down: None,
        rtt_ms: all.clone(),
        rtt_user_ms: all,
        idle_rtt_ms: idle_stats.clone(),
        loaded_rtt_ms: loaded_stats.clone(),
        note: Some(format!(
            "timed by the browser ({}); an answer later than 3 s counts as lost",
            s.timing.as_deref().unwrap_or("fetch")
        )),
        samples: points,
    };
    let summary = LatencySummary {
        increase_ms: increase,
        grade: increase.map(|x| grade(x).to_string()),
        rpm_loaded: loaded_stats.mean.and_then(rpm),
        rpm_idle: idle_stats.mean.and_then(rpm),
        download_mbps: goodput(&s.down, "download", f),
        upload_mbps: goodput(&f.up_received, "upload", f),
        idle_rtt_ms: idle_stats,
        loaded_rtt_ms: loaded_stats,
        ..Default::default()
    };
    let mut r = LatencyResult {
        test: "web".into(),
        host: f.host.clone(),
        port: f.port,
        ip_version: f.ip_version,
        started_at,
        t0_unix: f.t0_unix,
        length_s: f.phases.iter().map(|p| p.end_s - p.start_s).sum(),
        delay_s: f.idle_s,
        step_s: f.step_s,
        total_length_s: f.total_s(),
        hosts: Vec::new(),
        sessions: f
            .phases
            .iter()
            .enumerate()
            .map(|(i, p)| LatencySession {
                index: i,
                addr: f.host.clone(),
                ip_version: f.ip_version,
                load_start_s: p.start_s,
                load_end_s: p.end_s,
                phase: Some(p.phase.into()),
            })
            .collect(),
        probe_interval_s: f.probe_interval_s,
        probe_size: 0,
        congestion_control: None,
        flows: vec![
            flow("HTTP download", "download", &s.down, f),
            flow("HTTP upload", "upload", &f.up_received, f),
        ],
        probes: vec![probe],
        clock: None,
        summary,
        phases: Vec::new(),
        notes: vec![
            "browser test: download counted by the page as its reads returned, upload by the \
             server as it received the POST bodies (each spread over the time it took to \
             arrive); latency is an HTTP GET on a connection of its own, loaded figures leave \
             out each phase's first min(20 %, 2 s)"
                .into(),
            format!(
                "upload: the page counted {} bytes sent, the server received {}",
                s.up.iter().sum::<u64>(),
                f.up_received.iter().sum::<u64>()
            ),
        ],
        interrupted: false,
    };
    r.phases = crate::latency::phases::summaries(&r);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> SessionFacts {
        SessionFacts {
            host: "10.0.0.1".into(),
            port: 5201,
            ip_version: 4,
            t0_unix: 1e9,
            idle_s: 2.0,
            phases: timeline(2.0, 5.0),
            step_s: 0.1,
            probe_interval_s: 0.1,
            // 12.5 MB/s = 100 Mbit/s of upload in the upload and both phases.
            up_received: (0..170)
                .map(|i| if i >= 70 { 1_250_000 } else { 0 })
                .collect(),
        }
    }

    #[test]
    fn phases_goodput_latency_and_grade() {
        let f = facts();
        let s = PageSamples {
            step_s: 0.1,
            // 50 Mbit/s of download in the download and both phases.
            down: (0..170)
                .map(|i| {
                    if (20..70).contains(&i) || i >= 120 {
                        625_000
                    } else {
                        0
                    }
                })
                .collect(),
            up: vec![],
            probes: (0..170)
                .map(|i| {
                    let t = i as f64 * 0.1;
                    (t, Some(if t < 2.0 { 1.0 } else { 41.0 }))
                })
                .collect(),
            ..Default::default()
        };
        check(&s, &f).unwrap();
        let r = latency(&s, &f, "2026-12-06T00:00:00Z".into());
        assert_eq!(r.test, "web");
        let names: Vec<&str> = r.phases.iter().map(|p| p.phase.as_str()).collect();
        assert_eq!(names, ["download", "upload", "both"]);
        assert!((r.phases[0].download_mbps.unwrap() - 50.0).abs() < 1e-6);
        assert_eq!(r.phases[0].upload_mbps, None);
        assert!((r.phases[1].upload_mbps.unwrap() - 100.0).abs() < 1e-6);
        assert!((r.summary.download_mbps.unwrap() - 50.0).abs() < 1e-6);
        assert!((r.summary.increase_ms.unwrap() - 40.0).abs() < 1e-9);
        assert_eq!(r.summary.grade.as_deref(), Some("B"));
        assert!((r.phases[2].rtt_increase_ms.unwrap() - 40.0).abs() < 1e-9);
    }

    #[test]
    fn out_of_range_samples_are_refused() {
        let f = facts();
        let mut s = PageSamples {
            step_s: 0.2,
            ..Default::default()
        };
        assert!(check(&s, &f).unwrap_err().contains("step"));
        s.step_s = 0.1;
        s.down = vec![0; 100_000];
        assert!(check(&s, &f).is_err());
        s.down.clear();
        s.probes = vec![(1.0, Some(f64::NAN))];
        assert!(check(&s, &f).is_err());
        s.probes = vec![(1.0, Some(-1.0))];
        assert!(check(&s, &f).is_err());
    }
}
