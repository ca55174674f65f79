//! `getsockopt(TCP_INFO)` on Linux, decoded at the kernel ABI offsets of `struct tcp_info`
//! (include/uapi/linux/tcp.h), so fields newer than libc's struct (`tcpi_snd_wnd`, 5.4+) are read
//! when the kernel returns them. Used for the sender's RTT, cwnd and retransmits, and the latency
//! flows' RTT: the one TCP_INFO reader (nix has no wrapper for this option, so the
//! `getsockopt` call is raw).

use std::os::fd::{AsFd, AsRawFd};

/// The fields iperf3 reports, from one `TCP_INFO` sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpInfo {
    /// Smoothed RTT in microseconds.
    pub rtt_us: u32,
    /// RTT variance in microseconds.
    pub rttvar_us: u32,
    /// Congestion window in segments.
    pub snd_cwnd_segments: u32,
    /// Sender MSS in bytes.
    pub snd_mss: u32,
    /// Retransmitted segments over the connection's life (`tcpi_total_retrans`).
    pub total_retrans: u32,
    /// Path MTU.
    pub pmtu: u32,
    /// Peer's advertised receive window in bytes (`tcpi_snd_wnd`, kernel 5.4+; 0 if absent).
    pub snd_wnd: u32,
    /// Bytes the peer acknowledged over the connection's life (`tcpi_bytes_acked`, 4.1+).
    pub bytes_acked: u64,
    /// Bytes written by the application but not yet sent (`tcpi_notsent_bytes`, 4.6+).
    pub notsent_bytes: u32,
}

impl TcpInfo {
    /// Congestion window in bytes, as iperf3 prints it (cwnd × MSS).
    pub fn snd_cwnd_bytes(&self) -> u64 {
        self.snd_cwnd_segments as u64 * self.snd_mss as u64
    }

    /// Decodes the bytes the kernel returned (`len` of them); `None` if too short.
    pub fn parse(buf: &[u8]) -> Option<TcpInfo> {
        let u32_at = |off: usize| -> Option<u32> {
            buf.get(off..off + 4)
                .and_then(|b| b.try_into().ok())
                .map(u32::from_ne_bytes)
        };
        Some(TcpInfo {
            snd_mss: u32_at(16)?,
            pmtu: u32_at(60)?,
            rtt_us: u32_at(68)?,
            rttvar_us: u32_at(72)?,
            snd_cwnd_segments: u32_at(80)?,
            total_retrans: u32_at(100)?,
            snd_wnd: u32_at(228).unwrap_or(0),
            bytes_acked: buf
                .get(120..128)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_ne_bytes)
                .unwrap_or(0),
            notsent_bytes: u32_at(144).unwrap_or(0),
        })
    }
}

/// Reads TCP_INFO of a TCP socket.
pub fn tcp_info<S: AsFd>(sock: &S) -> std::io::Result<TcpInfo> {
    let mut buf = [0u8; 256];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: the buffer is valid for `len` bytes and the kernel writes at most `len`.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_fd().as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let got = (len as usize).min(buf.len());
    TcpInfo::parse(&buf[..got])
        .ok_or_else(|| std::io::Error::other(format!("TCP_INFO too short: {got} bytes")))
}

/// Smoothed RTT (µs) from TCP_INFO, or None if the kernel refuses.
pub fn tcp_rtt_us(sock: &impl AsFd) -> Option<u32> {
    tcp_info(sock).ok().map(|i| i.rtt_us)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_offsets() {
        let mut buf = [0u8; 232];
        buf[16..20].copy_from_slice(&32768u32.to_ne_bytes());
        buf[68..72].copy_from_slice(&121u32.to_ne_bytes());
        buf[80..84].copy_from_slice(&56u32.to_ne_bytes());
        buf[100..104].copy_from_slice(&3u32.to_ne_bytes());
        buf[120..128].copy_from_slice(&99_000u64.to_ne_bytes());
        buf[144..148].copy_from_slice(&4096u32.to_ne_bytes());
        let i = TcpInfo::parse(&buf).unwrap();
        assert_eq!((i.bytes_acked, i.notsent_bytes), (99_000, 4096));
        assert_eq!((i.rtt_us, i.total_retrans, i.snd_wnd), (121, 3, 0));
        assert_eq!(i.snd_cwnd_bytes(), 56 * 32768);
        assert!(TcpInfo::parse(&buf[..100]).is_none());
    }

    #[test]
    fn reads_a_loopback_socket() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let i = tcp_info(&c).unwrap();
        assert!(i.snd_mss > 0 && i.snd_cwnd_segments > 0, "{i:?}");
        assert!(tcp_rtt_us(&c).is_some());
    }
}
