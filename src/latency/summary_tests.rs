//! Summary on a synthetic run with known answers: server clock 2 ms ahead, idle path 0.1 ms each
//! way, loaded path 10 ms up and 20 ms down, reflector holding 0.05 ms, 0.5 ms client wake-up.

use super::*;
use crate::latency::plan::{Plan, TestKind};

const T0: u64 = 1_800_000_000_000_000_000;
const MS: u64 = 1_000_000;

fn synthetic() -> RawRun {
    let plan = Plan::new(TestKind::Rrul, 0);
    let mut samples = Vec::new();
    // 40 probes every 0.1 s over 4 s: idle 0–1 s, loaded 1–3 s, idle 3–4 s.
    for seq in 0..40u32 {
        let send = T0 + seq as u64 * 100 * MS;
        let t = seq as f64 * 0.1;
        let (up, down) = if (1.0..3.0).contains(&t) {
            (10 * MS, 20 * MS)
        } else {
            (MS / 10, MS / 10)
        };
        let srv_rx = send + up + 2 * MS;
        let srv_tx = srv_rx + MS / 20;
        let recv_k = srv_tx - 2 * MS + down;
        let mut p = RawProbe {
            seq,
            send_user_ns: send,
            send_kernel_ns: Some(send),
            recv_user_ns: Some(recv_k + MS / 2),
            recv_kernel_ns: Some(recv_k),
            server_rx_ns: Some(srv_rx),
            server_rx_kernel: true,
            server_tx_user_ns: Some(srv_tx - 1000),
            server_tx_kernel_ns: Some(srv_tx),
            send_failed: false,
        };
        if seq == 20 {
            // lost on the way up
            p = RawProbe {
                seq,
                send_user_ns: send,
                send_kernel_ns: Some(send),
                ..Default::default()
            };
        }
        samples.push(p);
    }
    let stream = StreamData {
        plan: plan.probes[0].clone(),
        samples,
        note: None,
        unavailable: false,
    };
    RawRun {
        test: "rrul".into(),
        host: "127.0.0.1".into(),
        port: 5201,
        ip_version: 4,
        started_at: "2027-01-15T08:00:00Z".into(),
        t0_ns: T0,
        length_s: 2.0,
        delay_s: 1.0,
        step_s: 0.2,
        has_load: true,
        probe_interval_s: 0.1,
        probe_size: 64,
        congestion_control: Some("cubic".into()),
        hosts: Vec::new(),
        total_length_s: None,
        sessions: Vec::new(),
        flows: vec![RawFlow {
            plan: plan.flows[0].clone(),
            tos_client: Some(0),
            tos_server: Some(0),
            cc_client: Some("cubic".into()),
            cc_server: Some("cubic".into()),
            steps: vec![(2_500_000, Some(1500)); 10],
            start_s: None,
            total_bytes: None,
        }],
        probes: vec![stream],
        reflector_counts: vec![Some((39, 39))],
        notes: vec![],
    }
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-6)
}

#[test]
fn rtt_owd_loss_grade_throughput() {
    let r = synthetic().summarise();
    let c = r.clock.as_ref().expect("clock sync");
    assert!((c.offset_ms - 2.0).abs() < 1e-6, "offset {}", c.offset_ms);
    assert!(close(c.offset_end_ms, 2.0));
    assert!(close(c.drift_ppm, 0.0));
    let p = &r.probes[0];
    assert_eq!(
        (p.sent, p.received, p.lost_up, p.lost_down),
        (40, 39, Some(1), Some(0))
    );
    assert_eq!(p.timestamps, "kernel");
    assert_eq!(p.samples[20].rtt_ms, None);
    assert!(close(p.samples[0].rtt_ms, 0.2));
    assert!(close(p.samples[15].rtt_ms, 30.0));
    assert!(close(p.samples[15].owd_up_ms, 10.0));
    assert!(close(p.samples[15].owd_down_ms, 20.0));
    assert!(
        close(p.samples[15].rtt_user_ms, 30.55),
        "{:?}",
        p.samples[15].rtt_user_ms
    );
    assert!(close(p.samples[15].user_delay_ms, 0.5));
    assert!(close(p.samples[15].server_ms, 0.05));
    let s = &r.summary;
    assert_eq!(s.idle_rtt_ms.n, 10, "lead-in only; the tail drains queues");
    assert_eq!(s.loaded_rtt_ms.n, 19);
    assert!(close(s.increase_ms, 29.8));
    assert_eq!(s.grade.as_deref(), Some("A"));
    assert!(close(s.rpm_loaded, 2000.0));
    assert!(close(s.upload_mbps, 100.0));
    assert_eq!(s.download_mbps, None);
    let f = &r.flows[0];
    assert_eq!(f.samples.len(), 10);
    assert!((f.samples[0].t - 1.2).abs() < 1e-9);
    assert!(close(f.mbps.mean, 100.0));
    assert!(close(f.samples[3].tcp_rtt_ms, 1.5));
    assert_eq!(r.total_length_s, 4.0);
}

#[test]
fn drift_is_measured_between_head_and_tail() {
    let mut run = synthetic();
    // The server clock runs 100 ppm fast: add 100 ns per ms of elapsed time to server stamps.
    for p in &mut run.probes[0].samples {
        let el = p.send_user_ns - T0;
        for v in [
            &mut p.server_rx_ns,
            &mut p.server_tx_kernel_ns,
            &mut p.server_tx_user_ns,
        ] {
            if let Some(x) = v.as_mut() {
                *x += el / 10_000;
            }
        }
    }
    let r = run.summarise();
    let c = r.clock.unwrap();
    assert!(
        (c.drift_ppm.unwrap() - 100.0).abs() < 1.0,
        "{:?}",
        c.drift_ppm
    );
    // With drift correction the loaded one-way delays stay exact to within a microsecond.
    assert!((r.probes[0].samples[15].owd_up_ms.unwrap() - 10.0).abs() < 1e-3);
}
