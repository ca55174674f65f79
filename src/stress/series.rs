//! The network load's series on the stress run's axis: one RRUL segment's flows and probes
//! folded into one point per step (summed goodput per direction, median probe round trip,
//! probes sent and lost). Pure.

use crate::results::latency::LatencyResult;
use crate::results::stress::NetPoint;

/// The points of one segment; `t0_unix_s` is the stress run's t0, so a segment that started
/// 60 s in gives points from t = 60 s on.
pub fn net_points(seg: &LatencyResult, t0_unix_s: f64) -> Vec<NetPoint> {
    let offset = seg.t0_unix - t0_unix_s;
    let step = seg.step_s.max(1e-3);
    // The step ends every flow reports (they share the runner's steps).
    let ends: Vec<f64> = seg
        .flows
        .iter()
        .max_by_key(|f| f.samples.len())
        .map(|f| f.samples.iter().map(|s| s.t).collect())
        .unwrap_or_default();
    let sum = |direction: &str, k: usize| -> f64 {
        seg.flows
            .iter()
            .filter(|f| f.direction == direction)
            .filter_map(|f| f.samples.get(k))
            .map(|s| s.mbps)
            .sum()
    };
    ends.iter()
        .enumerate()
        .map(|(k, &end)| {
            let in_step = seg
                .probes
                .iter()
                .flat_map(|p| &p.samples)
                .filter(|p| p.t > end - step && p.t <= end);
            let (mut probes, mut lost, mut rtts) = (0u32, 0u32, Vec::new());
            for p in in_step {
                probes += 1;
                match p.rtt_ms {
                    Some(r) => rtts.push(r),
                    None => lost += 1,
                }
            }
            let rtts = crate::stats::sorted_finite(rtts);
            NetPoint {
                t_s: offset + end,
                up_mbps: sum("upload", k),
                down_mbps: sum("download", k),
                latency_ms: crate::stats::median(&rtts),
                probes,
                lost_probes: lost,
            }
        })
        .collect()
}

/// Flow failures a segment noted (a send or receive that failed: a reset or broken
/// connection), which end no test but are instability.
pub fn flow_failures(seg: &LatencyResult) -> Vec<String> {
    seg.notes
        .iter()
        .filter(|n| n.contains(": send failed:") || n.contains(": receive failed:"))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::latency::{FlowResult, ProbePoint, ProbeResult, ThroughputSample};

    fn flow(direction: &str, mbps: &[f64]) -> FlowResult {
        FlowResult {
            name: format!("TCP {direction}"),
            label: "BE".into(),
            direction: direction.into(),
            tos: 0,
            tos_client: None,
            tos_server: None,
            cc_client: None,
            cc_server: None,
            bytes: 0,
            bytes_all: None,
            samples: mbps
                .iter()
                .enumerate()
                .map(|(i, &m)| ThroughputSample {
                    t: (i + 1) as f64,
                    mbps: m,
                    tcp_rtt_ms: None,
                })
                .collect(),
            mbps: Default::default(),
            tcp_rtt_ms: Default::default(),
        }
    }

    fn probe(points: &[(f64, Option<f64>)]) -> ProbeResult {
        ProbeResult {
            name: "Ping (ms) UDP EF".into(),
            kind: "udp".into(),
            tos: 0,
            timestamps: "kernel".into(),
            server_timestamps: None,
            sent: points.len() as u32,
            received: 0,
            lost_up: None,
            lost_down: None,
            samples: points
                .iter()
                .enumerate()
                .map(|(i, &(t, rtt_ms))| ProbePoint {
                    t,
                    seq: i as u32,
                    rtt_ms,
                    rtt_user_ms: None,
                    owd_up_ms: None,
                    owd_down_ms: None,
                    user_delay_ms: None,
                    server_ms: None,
                })
                .collect(),
            rtt_ms: Default::default(),
            rtt_user_ms: Default::default(),
            idle_rtt_ms: Default::default(),
            loaded_rtt_ms: Default::default(),
            note: None,
        }
    }

    #[test]
    fn steps_sum_directions_and_take_the_median_probe() {
        let seg = LatencyResult {
            test: "rrul".into(),
            host: "127.0.0.1".into(),
            port: 1,
            ip_version: 4,
            started_at: String::new(),
            t0_unix: 1030.0,
            length_s: 2.0,
            delay_s: 0.0,
            step_s: 1.0,
            total_length_s: 2.0,
            probe_interval_s: 0.2,
            probe_size: 64,
            congestion_control: None,
            flows: vec![
                flow("upload", &[10.0, 20.0]),
                flow("upload", &[1.0, 2.0]),
                flow("download", &[30.0, 40.0]),
            ],
            probes: vec![probe(&[
                (0.2, Some(1.0)),
                (0.4, Some(3.0)),
                (0.6, Some(2.0)),
                (1.2, None),
                (1.4, Some(5.0)),
            ])],
            clock: None,
            summary: Default::default(),
            phases: Vec::new(),
            notes: vec![
                "TCP upload BE: send failed: Connection reset by peer (os error 104)".into(),
                "server sent no probe counts: loss is not split by direction".into(),
            ],
            interrupted: false,
            hosts: Vec::new(),
            sessions: Vec::new(),
        };
        let p = net_points(&seg, 1000.0);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].t_s, 31.0);
        assert_eq!((p[0].up_mbps, p[0].down_mbps), (11.0, 30.0));
        assert_eq!(p[0].latency_ms, Some(2.0));
        assert_eq!((p[0].probes, p[0].lost_probes), (3, 0));
        assert_eq!((p[1].up_mbps, p[1].down_mbps), (22.0, 40.0));
        assert_eq!(p[1].latency_ms, Some(5.0));
        assert_eq!((p[1].probes, p[1].lost_probes), (2, 1));
        assert_eq!(flow_failures(&seg).len(), 1);
    }
}
