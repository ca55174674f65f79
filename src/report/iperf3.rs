//! iperf3-style text: the "connected" lines, one line per stream per interval, and the final
//! sender/receiver summary with CPU utilisation, in iperf3's column layout and units
//! (transfer in binary KBytes/MBytes/GBytes, bitrate in decimal Kbits/Mbits/Gbits per second).

use crate::results::throughput::{
    Connected, EndSide, Interval, IntervalStream, Protocol, ThroughputResult,
};
use std::fmt::Write;

/// iperf3's `unit_snprintf` number: 4 significant characters and a unit.
fn unit(value: f64, base: f64, units: [&str; 4]) -> String {
    let mut v = value;
    let mut i = 0;
    while v >= base && i < 3 {
        v /= base;
        i += 1;
    }
    let num = if v < 9.995 {
        format!("{v:4.2}")
    } else if v < 99.95 {
        format!("{v:4.1}")
    } else {
        format!("{v:4.0}")
    };
    format!("{num} {}", units[i])
}

/// Bytes as iperf3 prints transfers: `1.65 GBytes`.
pub fn bytes(b: u64) -> String {
    unit(b as f64, 1024.0, ["Bytes", "KBytes", "MBytes", "GBytes"])
}

/// Bit/s as iperf3 prints bitrates: `14.2 Gbits/sec`.
pub fn bitrate(bps: f64) -> String {
    let s = unit(bps, 1000.0, ["bits", "Kbits", "Mbits", "Gbits"]);
    format!("{s}/sec")
}

fn id_col(id: i32) -> String {
    if id == 0 {
        "[SUM]".to_string()
    } else {
        format!("[{id:3}]")
    }
}

/// `[  5] local 127.0.0.1 port 51992 connected to 127.0.0.1 port 5201` lines.
pub fn render_connected(connected: &[Connected]) -> String {
    let mut out = String::new();
    for c in connected {
        let _ = writeln!(
            out,
            "{} local {} port {} connected to {} port {}",
            id_col(c.socket),
            c.local_host,
            c.local_port,
            c.remote_host,
            c.remote_port
        );
    }
    out
}

/// The column header for intervals of this kind of test.
pub fn interval_header(protocol: Protocol, tcp_sender: bool, udp_sender: bool) -> String {
    match (protocol, tcp_sender, udp_sender) {
        (Protocol::Udp, _, true) => {
            "[ ID] Interval           Transfer     Bitrate         Total Datagrams".into()
        }
        (Protocol::Udp, _, false) => {
            "[ ID] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams"
                .into()
        }
        (_, true, _) => "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd".into(),
        _ => "[ ID] Interval           Transfer     Bitrate".into(),
    }
}

fn interval_line(s: &IntervalStream, tag: &str) -> String {
    let mut line = format!(
        "{}{tag} {:6.2}-{:<6.2} sec  {}  {}",
        id_col(s.socket),
        s.start,
        s.end,
        bytes(s.bytes),
        bitrate(s.bits_per_second)
    );
    if let (Some(r), Some(cwnd)) = (s.retransmits, s.snd_cwnd) {
        let _ = write!(line, "  {r:3}   {}", bytes(cwnd));
    } else if let Some(r) = s.retransmits {
        let _ = write!(line, "  {r:3}");
    } else if let (Some(j), Some(lost), Some(p)) = (s.jitter_ms, s.lost_packets, s.packets) {
        let pct = if p > 0 {
            100.0 * lost as f64 / p as f64
        } else {
            0.0
        };
        let _ = write!(line, "  {j:5.3} ms  {lost}/{p} ({pct:.2}%)");
    } else if let Some(p) = s.packets {
        let _ = write!(line, "  {p}");
    }
    if s.omitted {
        line.push_str("  (omitted)");
    }
    line
}

/// One interval: a line per stream, and `[SUM]` lines with several streams.
pub fn render_interval(iv: &Interval) -> String {
    let mut out = String::new();
    let bidir = iv.sum_bidir_reverse.is_some();
    let tag = |s: &IntervalStream| {
        if bidir {
            if s.sender { "[TX-C]" } else { "[RX-C]" }
        } else {
            ""
        }
    };
    for s in &iv.streams {
        let _ = writeln!(out, "{}", interval_line(s, tag(s)));
    }
    let n_main = iv
        .streams
        .iter()
        .filter(|s| s.sender == iv.sum.sender)
        .count();
    if n_main > 1 {
        let _ = writeln!(out, "{}", interval_line(&iv.sum, tag(&iv.sum)));
    }
    let reverse = iv
        .sum_bidir_reverse
        .as_ref()
        .filter(|_| iv.streams.len() - n_main > 1);
    if let Some(r) = reverse {
        let _ = writeln!(out, "{}", interval_line(r, tag(r)));
    }
    if iv.streams.len() > 1 {
        out.push_str("- - - - - - - - - - - - - - - - - - - - - - - - -\n");
    }
    out
}

fn end_line(e: &EndSide, id: i32, role: &str, udp: bool, tag: &str) -> String {
    let mut line = format!(
        "{}{tag} {:6.2}-{:<6.2} sec  {}  {}",
        id_col(id),
        0.0,
        e.seconds,
        bytes(e.bytes),
        bitrate(e.bits_per_second)
    );
    if udp {
        let lost = e.lost_packets.unwrap_or(0);
        let p = e.packets.unwrap_or(0);
        let j = e.jitter_ms.unwrap_or(0.0);
        let pct = e.lost_percent.unwrap_or(0.0);
        let _ = write!(line, "  {j:5.3} ms  {lost}/{p} ({pct:.2}%)  {role}");
    } else if role == "sender" {
        match e.retransmits {
            Some(r) => {
                let _ = write!(line, "  {r:4}             {role}");
            }
            None => {
                let _ = write!(line, "                  {role}");
            }
        }
    } else {
        let _ = write!(line, "                  {role}");
    }
    line
}

/// The final summary: per stream sender and receiver lines, `[SUM]` lines, CPU utilisation.
pub fn render_final(r: &ThroughputResult) -> String {
    let udp = r.setup.protocol == Protocol::Udp;
    let bidir = r.setup.bidir;
    // iperf3 tags bidir lines from its own side: -C on the client, -S on the server.
    let (tx, rx) = if r.role == crate::results::throughput::Role::Server {
        ("[TX-S]", "[RX-S]")
    } else {
        ("[TX-C]", "[RX-C]")
    };
    let mut out = String::from("- - - - - - - - - - - - - - - - - - - - - - - - -\n");
    out.push_str(if udp {
        "[ ID] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams\n"
    } else {
        "[ ID] Interval           Transfer     Bitrate         Retr\n"
    });
    for s in &r.streams {
        let tag = if bidir {
            if s.local_sends { tx } else { rx }
        } else {
            ""
        };
        let (snd, rcv) = match &s.udp {
            Some(u) => (
                EndSide {
                    jitter_ms: Some(0.0),
                    lost_packets: Some(0),
                    lost_percent: Some(0.0),
                    packets: u.packets,
                    ..s.sender.clone()
                },
                EndSide {
                    jitter_ms: u.jitter_ms,
                    lost_packets: u.lost_packets,
                    lost_percent: u.lost_percent,
                    packets: u.packets,
                    ..s.receiver.clone()
                },
            ),
            None => (s.sender.clone(), s.receiver.clone()),
        };
        let _ = writeln!(out, "{}", end_line(&snd, s.id, "sender", udp, tag));
        let _ = writeln!(out, "{}", end_line(&rcv, s.id, "receiver", udp, tag));
    }
    let main_streams = r
        .streams
        .iter()
        .filter(|s| s.local_sends == r.sum_sent.sender)
        .count();
    if main_streams > 1 {
        let tag = match (bidir, r.sum_sent.sender) {
            (false, _) => "",
            (true, true) => tx,
            (true, false) => rx,
        };
        let _ = writeln!(out, "{}", end_line(&r.sum_sent, 0, "sender", udp, tag));
        let _ = writeln!(
            out,
            "{}",
            end_line(&r.sum_received, 0, "receiver", udp, tag)
        );
    }
    let reverse = match (&r.sum_sent_bidir_reverse, &r.sum_received_bidir_reverse) {
        (Some(s), Some(rv)) if main_streams > 1 => Some((s, rv)),
        _ => None,
    };
    if let Some((s, rv)) = reverse {
        let tag = if s.sender { tx } else { rx };
        let _ = writeln!(out, "{}", end_line(s, 0, "sender", udp, tag));
        let _ = writeln!(out, "{}", end_line(rv, 0, "receiver", udp, tag));
    }
    let (l, rm) = (r.cpu_local, r.cpu_remote);
    let local_role = if r.sum_sent.sender {
        "sender"
    } else {
        "receiver"
    };
    let remote_role = if r.sum_sent.sender {
        "receiver"
    } else {
        "sender"
    };
    let _ = writeln!(
        out,
        "CPU Utilization: local/{local_role} {:.1}% ({:.1}%u/{:.1}%s), remote/{remote_role} {:.1}% ({:.1}%u/{:.1}%s)",
        l.total, l.user, l.system, rm.total, rm.user, rm.system
    );
    if let Some(cc) = &r.sender_tcp_congestion {
        let _ = writeln!(out, "\nsnd_tcp_congestion {cc}");
    }
    if let Some(cc) = &r.receiver_tcp_congestion {
        let _ = writeln!(out, "rcv_tcp_congestion {cc}");
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_like_iperf3() {
        // From the -J sample: 1772093440 bytes in 1.000215 s → "1.65 GBytes  14.2 Gbits/sec".
        assert_eq!(bytes(1772093440), "1.65 GBytes");
        assert_eq!(bitrate(14173699415.505718), "14.2 Gbits/sec");
        assert_eq!(bytes(1833524), "1.75 MBytes");
        assert_eq!(bitrate(100130700.0), " 100 Mbits/sec");
        assert_eq!(bytes(512), " 512 Bytes");
    }

    #[test]
    fn interval_line_layout() {
        let s = IntervalStream {
            socket: 5,
            start: 0.0,
            end: 1.000215,
            seconds: 1.000215,
            bytes: 1772093440,
            bits_per_second: 14173699415.505718,
            retransmits: Some(1),
            snd_cwnd: Some(1833524),
            sender: true,
            ..Default::default()
        };
        assert_eq!(
            interval_line(&s, ""),
            "[  5]   0.00-1.00   sec  1.65 GBytes  14.2 Gbits/sec    1   1.75 MBytes"
        );
    }
}
