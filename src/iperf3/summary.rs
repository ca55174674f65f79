//! End of a test: this side's results message for the peer, and the merge of both sides'
//! results into the end summary (per stream and summed, as iperf3's `end` object).

use super::meter::LocalEnd;
use crate::results::throughput::{
    Connected, CpuUtil, EndSide, Interval, Protocol, Role, StreamEnd, TestSetup, ThroughputResult,
};
use crate::wire::iperf3::{StreamResults, TestParams, TestResults};

/// Builds the results message this side sends. `peer` is the other side's message when it is
/// already known (the server reads the client's first and echoes jitter/errors/packets on its
/// sending streams, as iperf3 does).
pub fn results_message(
    ends: &[LocalEnd],
    cpu: CpuUtil,
    congestion: Option<String>,
    udp: bool,
    peer: Option<&TestResults>,
) -> TestResults {
    let sends = ends.iter().any(|e| e.sender);
    let sender_has_retransmits = match (sends, udp) {
        (false, _) => -1,
        (true, true) => 0,
        (true, false) => {
            if ends.iter().any(|e| e.sender && e.retransmits.is_some()) {
                1
            } else {
                0
            }
        }
    };
    let streams = ends
        .iter()
        .map(|e| {
            let mut s = StreamResults {
                id: e.id,
                bytes: e.bytes,
                retransmits: e.retransmits.unwrap_or(-1),
                jitter: e.jitter,
                errors: e.errors - e.omitted_errors,
                omitted_errors: Some(e.omitted_errors),
                packets: e.packets,
                omitted_packets: Some(e.omitted_packets),
                start_time: 0.0,
                end_time: e.end_time,
            };
            let from_peer = peer
                .filter(|_| e.sender && udp)
                .and_then(|p| p.stream(e.id));
            if let Some(p) = from_peer {
                s.jitter = p.jitter;
                s.errors = p.errors;
            }
            s
        })
        .collect();
    TestResults {
        cpu_util_total: cpu.total,
        cpu_util_user: cpu.user,
        cpu_util_system: cpu.system,
        sender_has_retransmits,
        congestion_used: if udp { None } else { congestion },
        streams,
        server_output_text: None,
        server_output_json: None,
    }
}

fn side_from_local(e: &LocalEnd, local_sends: bool) -> EndSide {
    let seconds = e.end_time.max(1e-9);
    EndSide {
        socket: e.id,
        start: 0.0,
        end: e.end_time,
        seconds,
        bytes: e.bytes,
        bits_per_second: e.bytes as f64 * 8.0 / seconds,
        retransmits: e.retransmits,
        max_snd_cwnd: e.max_snd_cwnd,
        max_snd_wnd: e.max_snd_wnd,
        max_rtt: e.max_rtt,
        min_rtt: e.min_rtt,
        mean_rtt: e.mean_rtt,
        sender: local_sends,
        ..Default::default()
    }
}

fn side_from_peer(p: &StreamResults, local_sends: bool, peer_sends: bool) -> EndSide {
    let seconds = (p.end_time - p.start_time).max(1e-9);
    EndSide {
        socket: p.id,
        start: 0.0,
        end: p.end_time,
        seconds,
        bytes: p.bytes,
        bits_per_second: p.bytes as f64 * 8.0 / seconds,
        retransmits: (peer_sends && p.retransmits >= 0).then_some(p.retransmits),
        sender: local_sends,
        ..Default::default()
    }
}

/// Merges this side's ends with the peer's results into one [`StreamEnd`] per stream.
/// A stream the peer did not report gets an all-zero other side.
pub fn merge_streams(ends: &[LocalEnd], peer: &TestResults, udp: bool) -> Vec<StreamEnd> {
    ends.iter()
        .map(|e| {
            let missing = StreamResults {
                id: e.id,
                end_time: e.end_time,
                ..Default::default()
            };
            let p = peer.stream(e.id).unwrap_or(&missing);
            let local = side_from_local(e, e.sender);
            let remote = side_from_peer(p, e.sender, !e.sender);
            let (sender, receiver) = if e.sender {
                (local, remote)
            } else {
                (remote, local)
            };
            let udp_side = udp.then(|| {
                let (sent_packets, lost, jitter, ooo) = if e.sender {
                    (e.packets, p.errors, p.jitter, 0)
                } else {
                    (
                        p.packets,
                        e.errors - e.omitted_errors,
                        e.jitter,
                        e.outoforder,
                    )
                };
                EndSide {
                    jitter_ms: Some(jitter * 1000.0),
                    lost_packets: Some(lost),
                    packets: Some(sent_packets),
                    lost_percent: Some(percent(lost, sent_packets)),
                    out_of_order: Some(ooo),
                    retransmits: None,
                    ..sender.clone()
                }
            });
            StreamEnd {
                id: e.id,
                local_sends: e.sender,
                sender,
                receiver,
                udp: udp_side,
            }
        })
        .collect()
}

fn percent(lost: i64, packets: i64) -> f64 {
    if packets > 0 {
        100.0 * lost as f64 / packets as f64
    } else {
        0.0
    }
}

/// Sums one direction (`local_sends` selects the streams): (sum_sent, sum_received).
pub fn sum_direction(streams: &[StreamEnd], local_sends: bool, udp: bool) -> (EndSide, EndSide) {
    let sel: Vec<&StreamEnd> = streams
        .iter()
        .filter(|s| s.local_sends == local_sends)
        .collect();
    let sum = |pick: fn(&StreamEnd) -> &EndSide| -> EndSide {
        let bytes: u64 = sel.iter().map(|s| pick(s).bytes).sum();
        let end = sel.iter().map(|s| pick(s).end).fold(0.0, f64::max);
        let seconds = sel
            .iter()
            .map(|s| pick(s).seconds)
            .fold(0.0, f64::max)
            .max(1e-9);
        let retrans: Vec<i64> = sel.iter().filter_map(|s| pick(s).retransmits).collect();
        EndSide {
            socket: 0,
            start: 0.0,
            end,
            seconds,
            bytes,
            bits_per_second: bytes as f64 * 8.0 / seconds,
            retransmits: (!retrans.is_empty()).then(|| retrans.iter().sum()),
            sender: local_sends,
            ..Default::default()
        }
    };
    let mut sent = sum(|s| &s.sender);
    let mut received = sum(|s| &s.receiver);
    if udp {
        let udp_parts: Vec<&EndSide> = sel.iter().filter_map(|s| s.udp.as_ref()).collect();
        let packets: i64 = udp_parts.iter().filter_map(|u| u.packets).sum();
        let lost: i64 = udp_parts.iter().filter_map(|u| u.lost_packets).sum();
        let jitter = if udp_parts.is_empty() {
            0.0
        } else {
            udp_parts.iter().filter_map(|u| u.jitter_ms).sum::<f64>() / udp_parts.len() as f64
        };
        for (side, j) in [(&mut sent, 0.0), (&mut received, jitter)] {
            side.jitter_ms = Some(j);
            side.lost_packets = Some(lost);
            side.packets = Some(packets);
            side.lost_percent = Some(percent(lost, packets));
        }
        // iperf3 marks sum_received as the receiving side.
        received.sender = false;
    }
    (sent, received)
}

/// Everything needed to assemble one side's [`ThroughputResult`].
#[derive(Debug)]
pub struct ResultParts<'a> {
    pub role: Role,
    pub peer_version: Option<String>,
    pub host: String,
    pub port: u16,
    pub cookie: String,
    pub timesecs: u64,
    pub setup: TestSetup,
    pub tcp_mss_default: Option<u32>,
    pub buffers: (u64, u64),
    pub connected: Vec<Connected>,
    pub intervals: Vec<Interval>,
    pub ends: &'a [LocalEnd],
    pub peer: &'a TestResults,
    pub cpu_local: CpuUtil,
    /// Whether this side sends in the test's main direction.
    pub main_local_sends: bool,
    /// TCP_CONGESTION on this side's data sockets.
    pub congestion: Option<String>,
}

/// Merges both sides into this side's view of the test.
pub fn build_result(p: ResultParts<'_>) -> ThroughputResult {
    let udp = p.setup.protocol == Protocol::Udp;
    let streams = merge_streams(p.ends, p.peer, udp);
    let (sum_sent, sum_received) = sum_direction(&streams, p.main_local_sends, udp);
    let (rs, rr) = if p.setup.bidir {
        let (a, b) = sum_direction(&streams, !p.main_local_sends, udp);
        (Some(a), Some(b))
    } else {
        (None, None)
    };
    let (sender_cc, receiver_cc) = if udp {
        (None, None)
    } else if p.main_local_sends {
        (p.congestion.clone(), p.peer.congestion_used.clone())
    } else {
        (p.peer.congestion_used.clone(), p.congestion.clone())
    };
    ThroughputResult {
        role: p.role,
        peer_version: p.peer_version,
        host: p.host,
        port: p.port,
        cookie: p.cookie,
        timesecs: p.timesecs,
        setup: p.setup,
        tcp_mss_default: p.tcp_mss_default,
        sndbuf_actual: p.buffers.0,
        rcvbuf_actual: p.buffers.1,
        connected: p.connected,
        intervals: p.intervals,
        streams,
        sum_sent,
        sum_received,
        sum_sent_bidir_reverse: rs,
        sum_received_bidir_reverse: rr,
        cpu_local: p.cpu_local,
        cpu_remote: CpuUtil {
            total: p.peer.cpu_util_total,
            user: p.peer.cpu_util_user,
            system: p.peer.cpu_util_system,
        },
        sender_tcp_congestion: sender_cc,
        receiver_tcp_congestion: receiver_cc,
        server_output_text: p.peer.server_output_text.clone(),
        server_output_json: p.peer.server_output_json.clone(),
        notes: Vec::new(),
        io_paths: Vec::new(),
        interrupted: false,
    }
}

/// The `start.test_start` part from the parameters.
pub fn setup_from(params: &TestParams) -> TestSetup {
    TestSetup {
        protocol: params.protocol,
        num_streams: params.parallel,
        blksize: params.block_len(),
        omit: params.omit,
        duration: params.time,
        bytes: params.num,
        blocks: params.blockcount,
        reverse: params.reverse,
        bidir: params.bidirectional,
        tos: params.tos.unwrap_or(0),
        target_bitrate: params.bandwidth,
        window: params.window.unwrap_or(0),
    }
}

/// Describes a data socket for `start.connected`.
pub fn connected(id: i32, sock: &super::stream::DataSock) -> Connected {
    let (l, r) = (sock.local_addr().ok(), sock.peer_addr().ok());
    let host = |a: Option<std::net::SocketAddr>| {
        a.map(|a| crate::net::addr::display_ip(a.ip()))
            .unwrap_or_default()
    };
    Connected {
        socket: id,
        local_host: host(l),
        local_port: l.map(|a| a.port()).unwrap_or(0),
        remote_host: host(r),
        remote_port: r.map(|a| a.port()).unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end(id: i32, sender: bool, bytes: u64) -> LocalEnd {
        LocalEnd {
            id,
            sender,
            bytes,
            end_time: 2.0,
            retransmits: sender.then_some(3),
            ..Default::default()
        }
    }

    #[test]
    fn receive_only_side_reports_minus_one() {
        let m = results_message(&[end(1, false, 10)], CpuUtil::default(), None, false, None);
        assert_eq!(m.sender_has_retransmits, -1);
        assert_eq!(m.streams[0].retransmits, -1);
        let m = results_message(
            &[end(1, true, 10)],
            CpuUtil::default(),
            Some("bbr".into()),
            false,
            None,
        );
        assert_eq!(m.sender_has_retransmits, 1);
        assert_eq!(m.congestion_used.as_deref(), Some("bbr"));
    }

    #[test]
    fn merge_matches_by_id_and_sums() {
        // Captured bidir (§13.3) client view: 1 sends, 3 receives.
        let peer = TestResults::parse(br#"{"cpu_util_total":32.5,"cpu_util_user":0.6,"cpu_util_system":31.8,"sender_has_retransmits":1,"streams":[{"id":1,"bytes":1688207360,"retransmits":18446744073709551615,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":2.00694},{"id":3,"bytes":1363148800,"retransmits":12,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":2.006943}]}"#).unwrap();
        let ends = [end(1, true, 1692139520), end(3, false, 1360003072)];
        let s = merge_streams(&ends, &peer, false);
        assert_eq!(s[0].receiver.bytes, 1688207360);
        assert_eq!(s[1].sender.bytes, 1363148800);
        assert_eq!(s[1].sender.retransmits, Some(12));
        assert_eq!(s[0].sender.retransmits, Some(3));
        let (sent, recv) = sum_direction(&s, true, false);
        assert_eq!((sent.bytes, recv.bytes), (1692139520, 1688207360));
        let (rsent, rrecv) = sum_direction(&s, false, false);
        assert_eq!((rsent.bytes, rrecv.bytes), (1363148800, 1360003072));
    }
}
