//! What the lab should show from its configuration alone: the standing-queue delay
//! buffer·8/rate, and goodput = rate × TCP payload / Ethernet frame. Plus RTT summaries
//! (percentiles from `crate::stats`, the one definition).

use crate::results::lab::{LabConfig, LabTheory, RttSummary};
use crate::stats::{percentile, sorted_finite};

/// TCP payload per segment at MTU 1500 with timestamps (1500 − 20 IP − 20 TCP − 12 options).
pub const TCP_PAYLOAD: f64 = 1448.0;
/// What tc counts per full-size packet: the IP packet plus the 14-byte Ethernet header.
pub const ETHERNET_FRAME: f64 = 1514.0;

/// Goodput as a fraction of the shaped rate: 1448/1514 = 0.956.
pub fn goodput_ratio() -> f64 {
    TCP_PAYLOAD / ETHERNET_FRAME
}

/// What tc counts for a pure ACK: 14 Ethernet + 20 IP + 32 TCP with timestamps.
pub const ACK_FRAME: f64 = 66.0;

/// Goodput as a fraction of the shaped rate when the same link also carries the ACKs of an
/// equal load in the other direction (rrul): one delayed ACK per two full segments adds 33 bytes
/// to every 1514-byte frame, 1448/1547 = 0.936.
pub fn goodput_ratio_with_reverse_acks() -> f64 {
    TCP_PAYLOAD / (ETHERNET_FRAME + ACK_FRAME / 2.0)
}

/// The delay a full FIFO of `buffer_bytes` adds at `rate_bps`, in ms.
pub fn queue_delay_ms(buffer_bytes: u64, rate_bps: u64) -> f64 {
    if rate_bps == 0 {
        return 0.0;
    }
    buffer_bytes as f64 * 8.0 / rate_bps as f64 * 1000.0
}

/// The lab section of a result for `config`, with its theory; the caller adds what it measured.
pub fn result(config: LabConfig) -> crate::results::lab::LabResult {
    crate::results::lab::LabResult {
        theory: theory(&config),
        config,
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
    }
}

/// The theory for a lab configuration.
pub fn theory(cfg: &LabConfig) -> LabTheory {
    let g = goodput_ratio();
    LabTheory {
        up_queue_delay_ms: cfg.up_rate_bps.map(|r| queue_delay_ms(cfg.buffer_bytes, r)),
        down_queue_delay_ms: cfg
            .down_rate_bps
            .map(|r| queue_delay_ms(cfg.buffer_bytes, r)),
        goodput_ratio: g,
        up_goodput_bps: cfg.up_rate_bps.map(|r| r as f64 * g),
        down_goodput_bps: cfg.down_rate_bps.map(|r| r as f64 * g),
    }
}

/// Summarises round-trip samples (ms) of `sent` probes.
pub fn summarize(sent: u32, samples: &[f64]) -> RttSummary {
    let v = sorted_finite(samples.iter().copied());
    RttSummary {
        sent,
        received: v.len() as u32,
        median_ms: percentile(&v, 50.0),
        p90_ms: percentile(&v, 90.0),
        p99_ms: percentile(&v, 99.0),
        min_ms: v.first().copied(),
        max_ms: v.last().copied(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_model_defaults_match_the_lab() {
        // Old result files get these defaults: they must be what the lab computes and builds.
        assert_eq!(
            crate::results::lab::single_direction_goodput_ratio(),
            goodput_ratio()
        );
        assert_eq!(
            crate::results::lab::LabDevices::default(),
            crate::lab::topology::devices()
        );
    }

    #[test]
    fn spec_points() {
        // docs/protocols/netns-lab.md: 64000 B at 20 Mbit/s = 25.6 ms, 300000 B at 50 Mbit/s = 48 ms.
        assert!((queue_delay_ms(64_000, 20_000_000) - 25.6).abs() < 1e-9);
        assert!((queue_delay_ms(300_000, 50_000_000) - 48.0).abs() < 1e-9);
        assert_eq!(queue_delay_ms(1, 0), 0.0);
        assert!((goodput_ratio() - 0.9564).abs() < 1e-4);
        assert!((goodput_ratio_with_reverse_acks() - 0.9360).abs() < 1e-4);
    }

    #[test]
    fn summarize_counts_and_orders() {
        // The percentile definition itself is tested in crate::stats.
        let s = summarize(5, &[3.0, 1.0, 2.0]);
        assert_eq!((s.sent, s.received), (5, 3));
        assert_eq!(s.median_ms, Some(2.0));
        assert_eq!(s.max_ms, Some(3.0));
    }
}
