//! The queue families: node_exporter's `node_qdisc_*` (root qdiscs, labels `device` and
//! `kind`, as its qdisc collector), and what it has no name for under `routerbench_*`: BQL
//! bytes in flight and limits per TX queue, CAKE's per-tin statistics and fq_codel's. From one
//! rtnetlink qdisc dump (`monitor::netlink`) and /sys/class/net (`monitor::bql`).

use super::super::bql::DeviceBql;
use super::super::tc_stats::{QdiscReading, Xstats};
use crate::results::metrics::{Family, MetricType};

/// Labels of one qdisc: device, kind and handle (`1:`).
fn labels(dev: &str, q: &QdiscReading) -> Vec<(&'static str, String)> {
    vec![
        ("device", dev.to_string()),
        ("kind", q.kind.clone()),
        ("handle", q.handle_text()),
    ]
}

/// `node_qdisc_*` of every root qdisc, `(device name, reading)`.
pub fn node_qdisc(qdiscs: &[(String, QdiscReading)]) -> Vec<Family> {
    let c = MetricType::Counter;
    let g = MetricType::Gauge;
    let mut f = [
        Family::new("node_qdisc_bytes", c, "Number of bytes sent."),
        Family::new("node_qdisc_packets", c, "Number of packets sent."),
        Family::new("node_qdisc_drops", c, "Number of packets dropped."),
        Family::new(
            "node_qdisc_requeues",
            c,
            "Number of packets dequeued, not transmitted, and requeued.",
        ),
        Family::new("node_qdisc_overlimits", c, "Number of overlimit packets."),
        Family::new(
            "node_qdisc_current_queue_length",
            g,
            "Number of packets currently in queue to be sent.",
        ),
        Family::new(
            "node_qdisc_backlog",
            g,
            "Number of bytes currently in queue to be sent.",
        ),
    ];
    for (dev, q) in qdiscs.iter().filter(|(_, q)| q.is_root()) {
        let l = vec![("device", dev.clone()), ("kind", q.kind.clone())];
        let values = [
            q.bytes as f64,
            f64::from(q.packets),
            f64::from(q.drops),
            f64::from(q.requeues),
            f64::from(q.overlimits),
            f64::from(q.qlen),
            f64::from(q.backlog_bytes),
        ];
        for (fam, v) in f.iter_mut().zip(values) {
            fam.push(l.clone(), v);
        }
    }
    f.into()
}

/// `routerbench_cake_*` per tin and per qdisc, and `routerbench_fq_codel_*` per qdisc, for
/// every CAKE and fq_codel instance (roots and children: SQM's fq_codel sits under HTB).
pub fn aqm(qdiscs: &[(String, QdiscReading)]) -> Vec<Family> {
    let c = MetricType::Counter;
    let g = MetricType::Gauge;
    let mut tin = [
        Family::new(
            "routerbench_cake_tin_sent_bytes",
            c,
            "CAKE: bytes sent by this tin.",
        ),
        Family::new(
            "routerbench_cake_tin_sent_packets",
            c,
            "CAKE: packets sent by this tin.",
        ),
        Family::new(
            "routerbench_cake_tin_dropped_packets",
            c,
            "CAKE: packets this tin dropped (AQM and overflow).",
        ),
        Family::new(
            "routerbench_cake_tin_ecn_marked_packets",
            c,
            "CAKE: packets this tin marked with ECN CE instead of dropping.",
        ),
        Family::new(
            "routerbench_cake_tin_ack_drops_packets",
            c,
            "CAKE: pure ACKs the ACK filter dropped in this tin.",
        ),
        Family::new(
            "routerbench_cake_tin_backlog_bytes",
            g,
            "CAKE: bytes queued in this tin now.",
        ),
        Family::new(
            "routerbench_cake_tin_peak_delay_seconds",
            g,
            "CAKE: peak sojourn time of this tin (EWMA), seconds.",
        ),
        Family::new(
            "routerbench_cake_tin_avg_delay_seconds",
            g,
            "CAKE: average sojourn time of this tin (EWMA), seconds.",
        ),
        Family::new(
            "routerbench_cake_tin_base_delay_seconds",
            g,
            "CAKE: base (minimum) sojourn time of this tin (EWMA), seconds.",
        ),
        Family::new(
            "routerbench_cake_tin_target_seconds",
            g,
            "CAKE: the CoDel target delay of this tin, seconds.",
        ),
        Family::new(
            "routerbench_cake_tin_threshold_rate_bits_per_second",
            g,
            "CAKE: the rate this tin is guaranteed before it yields to lower tins.",
        ),
        Family::new(
            "routerbench_cake_tin_sparse_flows",
            g,
            "CAKE: sparse (new, low-rate) flows of this tin now.",
        ),
        Family::new(
            "routerbench_cake_tin_bulk_flows",
            g,
            "CAKE: bulk flows of this tin now.",
        ),
        Family::new(
            "routerbench_cake_tin_unresponsive_flows",
            g,
            "CAKE: flows of this tin that ignore congestion signals (COBALT's BLUE) now.",
        ),
    ];
    let mut cake_capacity = Family::new(
        "routerbench_cake_capacity_estimate_bits_per_second",
        g,
        "CAKE: its estimate of the link's capacity (autorate-ingress), else the shaper's rate.",
    );
    let mut cake_memory = Family::new(
        "routerbench_cake_memory_used_bytes",
        g,
        "CAKE: memory its queues use now.",
    );
    let mut fq = [
        Family::new(
            "routerbench_fq_codel_drop_overlimit_packets",
            c,
            "fq_codel: packets dropped because the qdisc was over its packet limit.",
        ),
        Family::new(
            "routerbench_fq_codel_drop_overmemory_packets",
            c,
            "fq_codel: packets dropped because the qdisc was over its memory limit.",
        ),
        Family::new(
            "routerbench_fq_codel_ecn_mark_packets",
            c,
            "fq_codel: packets marked with ECN CE by CoDel.",
        ),
        Family::new(
            "routerbench_fq_codel_ce_mark_packets",
            c,
            "fq_codel: packets marked CE above the ce_threshold.",
        ),
        Family::new(
            "routerbench_fq_codel_new_flow_count_flows",
            c,
            "fq_codel: flows that were new (entered the new-flows list).",
        ),
        Family::new(
            "routerbench_fq_codel_new_flows",
            g,
            "fq_codel: flows on the new-flows list now.",
        ),
        Family::new(
            "routerbench_fq_codel_old_flows",
            g,
            "fq_codel: flows on the old-flows list now.",
        ),
        Family::new(
            "routerbench_fq_codel_max_packet_bytes",
            g,
            "fq_codel: the largest packet seen, bytes.",
        ),
        Family::new(
            "routerbench_fq_codel_memory_usage_bytes",
            g,
            "fq_codel: memory its queues use now.",
        ),
    ];
    for (dev, q) in qdiscs {
        match &q.xstats {
            Some(Xstats::Cake(x)) => {
                let l = labels(dev, q);
                if let Some(v) = x.capacity_estimate_bytes_per_s {
                    cake_capacity.push(l.clone(), v as f64 * 8.0);
                }
                if let Some(v) = x.memory_used_bytes {
                    cake_memory.push(l.clone(), f64::from(v));
                }
                for (i, t) in x.tins.iter().enumerate().take(8) {
                    let mut tl = l.clone();
                    tl.push(("tin", i.to_string()));
                    let values = [
                        t.sent_bytes as f64,
                        f64::from(t.sent_packets),
                        f64::from(t.dropped_packets),
                        f64::from(t.ecn_marked_packets),
                        f64::from(t.ack_drops),
                        f64::from(t.backlog_bytes),
                        f64::from(t.peak_delay_us) / 1e6,
                        f64::from(t.avg_delay_us) / 1e6,
                        f64::from(t.base_delay_us) / 1e6,
                        f64::from(t.target_us) / 1e6,
                        t.threshold_rate_bytes_per_s as f64 * 8.0,
                        f64::from(t.sparse_flows),
                        f64::from(t.bulk_flows),
                        f64::from(t.unresponsive_flows),
                    ];
                    for (fam, v) in tin.iter_mut().zip(values) {
                        fam.push(tl.clone(), v);
                    }
                }
            }
            Some(Xstats::FqCodel(x)) => {
                let l = labels(dev, q);
                let values = [
                    Some(x.drop_overlimit),
                    x.drop_overmemory,
                    Some(x.ecn_mark),
                    Some(x.ce_mark),
                    Some(x.new_flow_count),
                    Some(x.new_flows_len),
                    Some(x.old_flows_len),
                    Some(x.maxpacket),
                    x.memory_usage,
                ];
                for (fam, v) in fq.iter_mut().zip(values) {
                    if let Some(v) = v {
                        fam.push(l.clone(), f64::from(v));
                    }
                }
            }
            None => {}
        }
    }
    let mut out: Vec<Family> = tin.into();
    out.push(cake_capacity);
    out.push(cake_memory);
    out.extend(fq);
    out
}

/// `routerbench_bql_inflight_bytes` and `routerbench_bql_limit_bytes{device,queue}`.
pub fn bql(devices: &[DeviceBql]) -> Vec<Family> {
    let mut inflight = Family::new(
        "routerbench_bql_inflight_bytes",
        MetricType::Gauge,
        "BQL: bytes handed to the driver's TX ring and not yet completed, per TX queue.",
    );
    let mut limit = Family::new(
        "routerbench_bql_limit_bytes",
        MetricType::Gauge,
        "BQL: the byte limit of the TX ring now (the kernel adapts it), per TX queue.",
    );
    for d in devices {
        for q in &d.queues {
            let l = vec![("device", d.dev.clone()), ("queue", q.queue.to_string())];
            inflight.push(l.clone(), q.inflight as f64);
            limit.push(l, q.limit as f64);
        }
    }
    vec![inflight, limit]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::bql::TxQueue;
    use crate::monitor::tc_stats::{CakeTin, CakeXstats, FqCodelXstats};

    fn reading(kind: &str, parent: u32, xstats: Option<Xstats>) -> QdiscReading {
        QdiscReading {
            ifindex: 2,
            handle: 0x8001_0000,
            parent,
            kind: kind.into(),
            bytes: 123_456,
            packets: 100,
            qlen: 7,
            backlog_bytes: 9_000,
            drops: 3,
            requeues: 1,
            overlimits: 2,
            rate_bytes_per_s: None,
            xstats,
        }
    }

    #[test]
    fn roots_only_for_node_qdisc() {
        let q = vec![
            ("eth0".to_string(), reading("cake", 0xFFFF_FFFF, None)),
            ("eth0".to_string(), reading("fq_codel", 0x0001_0001, None)),
        ];
        let f = node_qdisc(&q);
        let backlog = f.iter().find(|f| f.name == "node_qdisc_backlog").unwrap();
        assert_eq!(backlog.samples.len(), 1);
        assert_eq!(backlog.samples[0].value, 9000.0);
        assert_eq!(
            backlog.samples[0].labels,
            vec![("device", "eth0".to_string()), ("kind", "cake".to_string())]
        );
    }

    #[test]
    fn cake_tins_and_fq_codel() {
        let tin = CakeTin {
            sent_bytes: 1000,
            backlog_bytes: 3028,
            peak_delay_us: 12_500,
            threshold_rate_bytes_per_s: 1_250_000,
            ..Default::default()
        };
        let cake = Xstats::Cake(CakeXstats {
            capacity_estimate_bytes_per_s: Some(1_250_000),
            memory_used_bytes: Some(4096),
            tins: vec![tin.clone(), tin],
        });
        let fq = Xstats::FqCodel(FqCodelXstats {
            maxpacket: 1514,
            ecn_mark: 5,
            memory_usage: None,
            ..Default::default()
        });
        let q = vec![
            ("wan".to_string(), reading("cake", 0xFFFF_FFFF, Some(cake))),
            (
                "lan".to_string(),
                reading("fq_codel", 0x0001_0001, Some(fq)),
            ),
        ];
        let f = aqm(&q);
        let get = |n: &str| f.iter().find(|f| f.name == n).unwrap();
        let peak = get("routerbench_cake_tin_peak_delay_seconds");
        assert_eq!(peak.samples.len(), 2);
        assert_eq!(peak.samples[1].value, 0.0125);
        assert!(peak.samples[1].labels.contains(&("tin", "1".to_string())));
        assert_eq!(
            get("routerbench_cake_tin_threshold_rate_bits_per_second").samples[0].value,
            10e6
        );
        assert_eq!(
            get("routerbench_cake_capacity_estimate_bits_per_second").samples[0].value,
            10e6
        );
        assert_eq!(
            get("routerbench_fq_codel_max_packet_bytes").samples[0].value,
            1514.0
        );
        // A field the kernel did not send is no sample, not a zero.
        assert!(
            get("routerbench_fq_codel_memory_usage_bytes")
                .samples
                .is_empty()
        );
    }

    #[test]
    fn bql_per_queue() {
        let d = DeviceBql {
            dev: "eth0".into(),
            queues: vec![TxQueue {
                queue: 0,
                inflight: 3028,
                limit: 30280,
            }],
        };
        let f = bql(&[d]);
        assert_eq!(f[0].samples[0].value, 3028.0);
        assert_eq!(f[1].samples[0].value, 30280.0);
    }
}
