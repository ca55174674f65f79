//! The access point's counters for one station against a test's own bytes: does what
//! `routerbench wifi` and the monitor read from nl80211 add up to the traffic that crossed the
//! Wi-Fi hop? mac80211 counts each frame with its 802.11 header (a QoS data header, 26 bytes,
//! with the 8-byte LLC/SNAP header: 34 bytes) over the IP packet; a TCP segment with
//! timestamps carries 52 bytes of IP and TCP headers. So `bytes − 86 × packets` is the TCP
//! payload the AP carried (ACKs, all headers, add nothing), which the test's flows count as
//! delivered to their receivers. The small difference left is the probes and the segments in
//! flight at the end.

use crate::results::latency::LatencyResult;
pub use crate::results::wifi::StationBytesCheck;
use crate::results::wifi::WifiSummary;

/// Bytes of framing per frame the AP counts beyond the TCP payload: 26 (802.11 QoS data
/// header) + 8 (LLC/SNAP) + 20 (IPv4) + 32 (TCP with the timestamps option).
pub const FRAME_OVERHEAD_BYTES: u64 = 86;

/// The station's two directions, when the summary has it and the test has flows there.
pub fn check(latency: &LatencyResult, wifi: &WifiSummary, mac: &str) -> Vec<StationBytesCheck> {
    let Some(s) = wifi.stations.iter().find(|s| s.mac == mac) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (direction, bytes, packets) in [
        ("download", s.tx_bytes, s.tx_packets),
        ("upload", s.rx_bytes, s.rx_packets),
    ] {
        let test_bytes: u64 = latency
            .flows
            .iter()
            .filter(|f| f.direction == direction)
            .map(|f| f.bytes_all.unwrap_or(f.bytes))
            .sum();
        if test_bytes == 0 {
            continue;
        }
        let payload = bytes.saturating_sub(FRAME_OVERHEAD_BYTES * packets);
        out.push(StationBytesCheck {
            mac: mac.to_string(),
            direction: direction.to_string(),
            ap_bytes: bytes,
            ap_packets: packets,
            ap_payload_bytes: payload,
            test_bytes,
            ratio: Some(payload as f64 / test_bytes as f64),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::latency::FlowResult;
    use crate::results::wifi::StationSummary;

    fn flow(direction: &str, bytes: u64) -> FlowResult {
        serde_json::from_value(serde_json::json!({
            "name": format!("TCP {direction} BE"), "label": "BE", "direction": direction,
            "tos": 0, "tos_client": null, "tos_server": null, "cc_client": null,
            "cc_server": null, "bytes": bytes, "samples": [],
            "mbps": {"n": 0, "mean": null, "median": null, "p90": null, "p99": null,
                     "min": null, "max": null},
            "tcp_rtt_ms": {"n": 0, "mean": null, "median": null, "p90": null, "p99": null,
                           "min": null, "max": null}
        }))
        .expect("a flow")
    }

    #[test]
    fn payload_after_the_framing_matches_the_flows() {
        // 10 MB down: 6906 data frames of 1448 payload bytes, and 3000 ACK frames (the
        // upload's acknowledgements), 86 bytes each with no payload.
        let data = 6906u64;
        let acks = 3000u64;
        let s = StationSummary {
            mac: "02:00:00:00:01:00".into(),
            tx_bytes: data * (1448 + 86) + acks * 86,
            tx_packets: data + acks,
            ..Default::default()
        };
        let w = WifiSummary {
            stations: vec![s],
            ..Default::default()
        };
        // A real lab RRUL, its flows replaced.
        let mut lat: LatencyResult = serde_json::from_str(include_str!(
            "../../tests/fixtures/lab/rrul-20mbit-64000.json"
        ))
        .expect("fixture");
        lat.flows = vec![flow("download", data * 1448), flow("upload", 0)];
        let c = check(&lat, &w, "02:00:00:00:01:00");
        assert_eq!(c.len(), 1, "no upload bytes: no upload check");
        assert_eq!(c[0].ap_payload_bytes, data * 1448);
        assert_eq!(c[0].ratio, Some(1.0));
        assert!(check(&lat, &w, "02:00:00:00:09:00").is_empty());
    }
}
