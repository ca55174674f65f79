//! iperf3-style text: the "connected" lines, one line per stream per interval, and the final
//! sender/receiver summary with CPU utilisation, in iperf3's column layout and units
//! (transfer in binary KBytes/MBytes/GBytes, bitrate in decimal Kbits/Mbits/Gbits per second).

use crate::results::throughput::{
    Connected, EndSide, Interval, IntervalStream, Protocol, ThroughputResult,
};
use std::fmt::Write;
use std::sync::atomic::{AtomicU8, Ordering};

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

/// iperf3's `-f` letter for bitrates: 0 = adaptive; `k m g` bits, `K M G` bytes per second.
static FORMAT: AtomicU8 = AtomicU8::new(0);

/// Sets the bitrate unit for this process (iperf3's `-f k|m|g|K|M|G`; `a` = adaptive).
pub fn set_format(letter: char) -> Result<(), String> {
    match letter {
        'k' | 'm' | 'g' | 'K' | 'M' | 'G' => {
            FORMAT.store(letter as u8, Ordering::Relaxed);
            Ok(())
        }
        'a' => {
            FORMAT.store(0, Ordering::Relaxed);
            Ok(())
        }
        other => Err(format!(
            "bad format {other:?}: use k, m, g (Kbits, Mbits, Gbits/sec) or K, M, G (KBytes, \
             MBytes, GBytes/sec)"
        )),
    }
}

/// Bit/s as iperf3 prints bitrates: `14.2 Gbits/sec` (or in the `-f` unit).
pub fn bitrate(bps: f64) -> String {
    let letter = FORMAT.load(Ordering::Relaxed) as char;
    let s = match letter {
        'k' | 'm' | 'g' | 'K' | 'M' | 'G' => fixed_unit(bps, letter),
        _ => unit(bps, 1000.0, ["bits", "Kbits", "Mbits", "Gbits"]),
    };
    format!("{s}/sec")
}

/// One fixed unit, as iperf3's `unit_snprintf` with a format letter: bits in decimal
/// steps, bytes in binary steps.
fn fixed_unit(bps: f64, letter: char) -> String {
    let (value, name) = match letter {
        'k' => (bps / 1e3, "Kbits"),
        'm' => (bps / 1e6, "Mbits"),
        'g' => (bps / 1e9, "Gbits"),
        'K' => (bps / 8.0 / 1024.0, "KBytes"),
        'M' => (bps / 8.0 / 1048576.0, "MBytes"),
        _ => (bps / 8.0 / 1073741824.0, "GBytes"),
    };
    let num = if value < 9.995 {
        format!("{value:4.2}")
    } else if value < 99.95 {
        format!("{value:4.1}")
    } else {
        format!("{value:4.0}")
    };
    format!("{num} {name}")
}

/// C's `%.2g`, which iperf3 uses for the loss percentage: `0`, `0.5`, `12`, `1e+02`.
pub fn percent_g2(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v.is_finite() {
            "0".into()
        } else {
            format!("{v}")
        };
    }
    // Round to two significant digits first: 99.5 becomes 100, which %.2g writes as 1e+02.
    let scale = 10f64.powi(v.abs().log10().floor() as i32 - 1);
    let v = (v / scale).round() * scale;
    let exp = v.abs().log10().floor() as i32;
    if !(-4..2).contains(&exp) {
        let m = v / 10f64.powi(exp);
        let m = format!("{m:.1}");
        let m = m.trim_end_matches('0').trim_end_matches('.');
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{m}e{sign}{:02}", exp.abs());
    }
    let decimals = (1 - exp).max(0) as usize;
    let t = format!("{v:.decimals$}");
    if t.contains('.') {
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        t
    }
}

/// The separator iperf3 prints between interval blocks and before the summary.
pub const SEPARATOR: &str = "- - - - - - - - - - - - - - - - - - - - - - - - -\n";

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

/// The column header for intervals of this kind of test (`[ ID][Role]` with `--bidir`).
pub fn interval_header(
    protocol: Protocol,
    tcp_sender: bool,
    udp_sender: bool,
    bidir: bool,
) -> String {
    let id = if bidir { "[ ID][Role]" } else { "[ ID]" };
    let cols = match (protocol, tcp_sender, udp_sender) {
        (Protocol::Udp, _, true) => "Total Datagrams",
        (Protocol::Udp, _, false) => "Jitter    Lost/Total Datagrams",
        (_, true, _) => "Retr  Cwnd",
        _ => "",
    };
    format!("{id} Interval           Transfer     Bitrate         {cols}")
        .trim_end()
        .to_string()
}

/// The header for an interval (when `first`) or iperf3's separator between interval blocks
/// (with several streams per direction), then the interval's lines; `server` picks the
/// `--bidir` role tags (`[TX-S]` rather than `[TX-C]`).
pub fn render_interval_block(iv: &Interval, first: bool, parallel: usize, server: bool) -> String {
    let mut out = String::new();
    if first {
        let udp = iv.streams.iter().any(|s| s.packets.is_some());
        let proto = if udp { Protocol::Udp } else { Protocol::Tcp };
        let tcp_sender = iv.streams.iter().any(|s| s.retransmits.is_some());
        let udp_sender = iv.streams.iter().any(|s| s.sender);
        let bidir = iv.sum_bidir_reverse.is_some();
        let _ = writeln!(
            out,
            "{}",
            interval_header(proto, tcp_sender, udp_sender, bidir)
        );
    } else if parallel > 1 {
        out.push_str(SEPARATOR);
    }
    out.push_str(&render_interval(iv, server));
    out
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
        let _ = write!(line, "  {j:5.3} ms  {lost}/{p} ({}%)", percent_g2(pct));
    } else if let Some(p) = s.packets {
        let _ = write!(line, "  {p}");
    }
    if s.omitted {
        line.push_str("  (omitted)");
    }
    line
}

/// One interval: a line per stream, and `[SUM]` lines with several streams.
pub fn render_interval(iv: &Interval, server: bool) -> String {
    let mut out = String::new();
    let bidir = iv.sum_bidir_reverse.is_some();
    let (tx, rx) = if server {
        ("[TX-S]", "[RX-S]")
    } else {
        ("[TX-C]", "[RX-C]")
    };
    let tag = |s: &IntervalStream| {
        if bidir {
            if s.sender { tx } else { rx }
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
        let _ = write!(
            line,
            "  {j:5.3} ms  {lost}/{p} ({}%)  {role}",
            percent_g2(pct)
        );
    } else if role == "sender" {
        match e.retransmits {
            Some(r) => {
                let _ = write!(line, "  {r:3}             {role}");
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

/// The final summary as iperf3 prints it: separator, header, per-stream sender and receiver
/// lines (the server prints only its own end of each stream), `[SUM]` lines.
pub fn render_final(r: &ThroughputResult) -> String {
    let udp = r.setup.protocol == Protocol::Udp;
    let bidir = r.setup.bidir;
    let server = r.role == crate::results::throughput::Role::Server;
    // iperf3 tags bidir lines from its own side: -C on the client, -S on the server.
    let (tx, rx) = if server {
        ("[TX-S]", "[RX-S]")
    } else {
        ("[TX-C]", "[RX-C]")
    };
    // Which lines this end prints: the client both, the server its own side.
    let shown = |local_sends: bool, role: &str| !server || (role == "sender") == local_sends;
    let mut out = String::from(SEPARATOR);
    let id = if bidir { "[ ID][Role]" } else { "[ ID]" };
    let retr = !server || r.streams.iter().any(|s| s.local_sends);
    let cols = match (udp, retr) {
        (true, _) => "         Jitter    Lost/Total Datagrams",
        (false, true) => "         Retr",
        (false, false) => "",
    };
    let _ = writeln!(out, "{id} Interval           Transfer     Bitrate{cols}");
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
        if shown(s.local_sends, "sender") {
            let _ = writeln!(out, "{}", end_line(&snd, s.id, "sender", udp, tag));
        }
        if shown(s.local_sends, "receiver") {
            let _ = writeln!(out, "{}", end_line(&rcv, s.id, "receiver", udp, tag));
        }
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
        if shown(r.sum_sent.sender, "sender") {
            let _ = writeln!(out, "{}", end_line(&r.sum_sent, 0, "sender", udp, tag));
        }
        if shown(r.sum_sent.sender, "receiver") {
            let _ = writeln!(
                out,
                "{}",
                end_line(&r.sum_received, 0, "receiver", udp, tag)
            );
        }
    }
    let reverse = match (&r.sum_sent_bidir_reverse, &r.sum_received_bidir_reverse) {
        (Some(s), Some(rv)) if main_streams > 1 => Some((s, rv)),
        _ => None,
    };
    if let Some((s, rv)) = reverse {
        let tag = if s.sender { tx } else { rx };
        if shown(s.sender, "sender") {
            let _ = writeln!(out, "{}", end_line(s, 0, "sender", udp, tag));
        }
        if shown(s.sender, "receiver") {
            let _ = writeln!(out, "{}", end_line(rv, 0, "receiver", udp, tag));
        }
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// [`render_final`] and the lines iperf3 adds with `-V`: CPU utilisation at both ends and
/// the congestion control in use.
pub fn render_final_verbose(r: &ThroughputResult) -> String {
    let mut out = render_final(r);
    out.push_str(&render_cpu(r));
    for p in &r.io_paths {
        let _ = writeln!(out, "data path: {p}");
    }
    out
}

/// `CPU Utilization: …` and `snd_tcp_congestion …` (iperf3's `-V` lines).
pub fn render_cpu(r: &ThroughputResult) -> String {
    let mut out = String::new();
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
    fn loss_percent_like_printf_g2() {
        assert_eq!(percent_g2(0.0), "0");
        assert_eq!(percent_g2(0.5), "0.5");
        assert_eq!(percent_g2(0.0123), "0.012");
        assert_eq!(percent_g2(12.34), "12");
        assert_eq!(percent_g2(9.96), "10");
        assert_eq!(percent_g2(100.0), "1e+02");
        assert_eq!(percent_g2(99.5), "1e+02");
        assert_eq!(percent_g2(0.00005), "5e-05");
    }

    #[test]
    fn fixed_bitrate_units() {
        assert_eq!(fixed_unit(14_173_699_415.0, 'm'), "14174 Mbits");
        assert_eq!(fixed_unit(8_000_000.0, 'k'), "8000 Kbits");
        assert_eq!(fixed_unit(8.0 * 1048576.0, 'M'), "1.00 MBytes");
        assert!(set_format('x').is_err());
    }

    #[test]
    fn bidir_header_has_role() {
        assert_eq!(
            interval_header(Protocol::Tcp, true, true, true),
            "[ ID][Role] Interval           Transfer     Bitrate         Retr  Cwnd"
        );
        assert_eq!(
            interval_header(Protocol::Tcp, false, false, false),
            "[ ID] Interval           Transfer     Bitrate"
        );
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
