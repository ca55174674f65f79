//! Data-stream set-up on the server (docs/protocols/iperf3.md §5): TCP streams arrive through the
//! server's cookie broker; UDP streams by the hello dance on the shared port, one test at a time
//! and in arrival order, each within a short deadline, so a client that never says hello delays
//! the next set-up by at most that deadline and can never starve it.

use super::control::{Control, refuse};
use super::env::SessionEnv;
use super::stream::DataSock;
use super::{Iperf3Error, Result};
use crate::wire::iperf3::{self as wire, Cookie, State, errors};
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::sync::Mutex;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

/// Waits for `total` TCP data connections with the test's cookie, within the set-up deadline.
pub(crate) fn accept_tcp(
    ctl: &mut Control,
    env: &SessionEnv<'_>,
    cookie: &Cookie,
    total: usize,
) -> Result<Vec<DataSock>> {
    let rx = env.broker.open(cookie);
    ctl.send_state(State::CreateStreams)?;
    let deadline = Instant::now() + env.cfg.control_timeout;
    let mut socks: Vec<(u64, TcpStream)> = Vec::with_capacity(total);
    while socks.len() < total {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(s) => socks.push(s),
            Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => {
                return Err(refuse(
                    ctl,
                    errors::IESTREAMACCEPT,
                    format!(
                        "only {} of {total} data connections arrived within {:?}",
                        socks.len(),
                        env.cfg.control_timeout
                    ),
                ));
            }
        }
    }
    env.broker.running(cookie);
    // Accept order is the client's creation order (it connects one stream at a time).
    socks.sort_by_key(|(seq, _)| *seq);
    Ok(socks.into_iter().map(|(_, s)| DataSock::Tcp(s)).collect())
}

/// Waits in line for the UDP port (up to the control timeout), then for `total` hellos from
/// the control connection's host within `udp_hello_timeout`.
pub(crate) fn accept_udp(
    ctl: &mut Control,
    env: &SessionEnv<'_>,
    peer_ip: IpAddr,
    total: usize,
) -> Result<Vec<DataSock>> {
    // A test waits behind at most a few others' hello deadlines (per-host test limits bound
    // the line), never behind a renewed one: the line is first come, first served.
    let wait_until = Instant::now() + env.cfg.control_timeout.max(env.cfg.udp_hello_timeout * 4);
    let Some(_turn) = env.udp.wait_turn(wait_until) else {
        return Err(refuse(
            ctl,
            errors::IESTREAMLISTEN,
            "UDP port busy with other tests' set-up".into(),
        ));
    };
    if let Some(hellos) = &env.udp.hellos {
        return accept_udp_handed_over(ctl, env, hellos, peer_ip, total);
    }
    let mut listener =
        bind_udp(env.udp.bind).map_err(|e| refuse(ctl, errors::IESTREAMLISTEN, e.to_string()))?;
    ctl.send_state(State::CreateStreams)?;
    let deadline = Instant::now() + env.cfg.udp_hello_timeout;
    let mut socks = Vec::with_capacity(total);
    while socks.len() < total {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(refuse(
                ctl,
                errors::IESTREAMACCEPT,
                format!(
                    "only {} of {total} UDP streams said hello within {:?}",
                    socks.len(),
                    env.cfg.udp_hello_timeout
                ),
            ));
        }
        let _ = listener.set_read_timeout(Some(left.max(Duration::from_millis(1))));
        let mut buf = [0u8; 64];
        let from = match listener.recv_from(&mut buf) {
            Ok((_, from)) if crate::net::addr::same_ip(from.ip(), peer_ip) => from,
            Ok(_) => continue, // another host's datagram: not ours
            Err(e) if super::control::is_timeout(&e) => continue,
            Err(e) => return Err(Iperf3Error::io("UDP stream hello", e)),
        };
        listener
            .connect(from)
            .map_err(|e| Iperf3Error::io("UDP connect to client", e))?;
        let next = bind_udp(env.udp.bind)
            .map_err(|e| refuse(ctl, errors::IESTREAMLISTEN, e.to_string()))?;
        let stream = std::mem::replace(&mut listener, next);
        stream
            .send(&wire::UDP_CONNECT_REPLY)
            .map_err(|e| Iperf3Error::io("UDP hello reply", e))?;
        socks.push(DataSock::Udp(stream));
    }
    Ok(socks)
}

/// UDP streams whose hellos the probe reflector received on the shared port: each gets a
/// socket on the port connected to the client (a connected socket wins the kernel's lookup
/// over the reflector's unconnected one, so the stream's data comes here).
fn accept_udp_handed_over(
    ctl: &mut Control,
    env: &SessionEnv<'_>,
    hellos: &Mutex<std::sync::mpsc::Receiver<SocketAddr>>,
    peer_ip: IpAddr,
    total: usize,
) -> Result<Vec<DataSock>> {
    let rx = hellos.lock().unwrap_or_else(|p| p.into_inner());
    // Hellos that arrived while no test was setting up belong to nobody.
    while rx.try_recv().is_ok() {}
    ctl.send_state(State::CreateStreams)?;
    let deadline = Instant::now() + env.cfg.udp_hello_timeout;
    let mut socks = Vec::with_capacity(total);
    let mut seen: Vec<SocketAddr> = Vec::with_capacity(total);
    while socks.len() < total {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(refuse(
                ctl,
                errors::IESTREAMACCEPT,
                format!(
                    "only {} of {total} UDP streams said hello within {:?}",
                    socks.len(),
                    env.cfg.udp_hello_timeout
                ),
            ));
        }
        let from = match rx.recv_timeout(left.min(Duration::from_millis(200))) {
            Ok(from) => from,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => {
                return Err(refuse(
                    ctl,
                    errors::IESTREAMLISTEN,
                    "the UDP port's reader (probe reflector) stopped".into(),
                ));
            }
        };
        if !crate::net::addr::same_ip(from.ip(), peer_ip) || seen.contains(&from) {
            continue; // another host's datagram, or a repeated hello
        }
        seen.push(from);
        let stream = bind_udp(env.udp.bind)
            .map_err(|e| refuse(ctl, errors::IESTREAMLISTEN, e.to_string()))?;
        stream
            .connect(from)
            .map_err(|e| Iperf3Error::io("UDP connect to client", e))?;
        stream
            .send(&wire::UDP_CONNECT_REPLY)
            .map_err(|e| Iperf3Error::io("UDP hello reply", e))?;
        socks.push(DataSock::Udp(stream));
    }
    Ok(socks)
}

/// An unconnected UDP socket on the server's address and port, SO_REUSEADDR (like iperf3), so
/// connected stream sockets and the next listener can share the port.
pub fn bind_udp(addr: SocketAddr) -> std::io::Result<UdpSocket> {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, None)?;
    s.set_reuse_address(true)?;
    if addr.is_ipv6() {
        let _ = s.set_only_v6(false);
    }
    s.bind(&addr.into())
        .map_err(|e| std::io::Error::new(e.kind(), format!("UDP bind {addr}: {e}")))?;
    Ok(s.into())
}
