//! Data-stream set-up on the server (docs/protocols/iperf3.md §5, docs/throughput.md): TCP streams arrive through the
//! server's cookie broker; UDP streams by the hello dance on the shared port (`udp_port.rs`
//! decides which hellos a test may take), each within a short deadline. While it waits, the
//! set-up watches its seat: a test evicted by a lighter host's newcomer stops at once.

use super::control::{Control, refuse};
use super::env::SessionEnv;
use super::stream::DataSock;
use super::{Iperf3Error, Result};
use crate::wire::iperf3::{self as wire, Cookie, State, errors};
use std::net::{IpAddr, SocketAddr, TcpStream};

pub use super::udp_port::bind_udp;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

/// How often a waiting set-up looks at its seat.
const SEAT_CHECK: Duration = Duration::from_millis(100);

/// The error of a set-up whose seat was taken: ACCESS_DENIED to the client (iperf3 prints
/// "the server is busy running a test. try again later").
pub(crate) fn evicted(ctl: &mut Control) -> Iperf3Error {
    let _ = ctl.send_state(State::AccessDenied);
    Iperf3Error::Refused {
        i_errno: errors::IEACCESSDENIED,
        message: "evicted in its set-up: the server was full and a host holding fewer tests \
                  needed the slot"
            .into(),
    }
}

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
        if env.evicted() {
            return Err(evicted(ctl));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left.min(SEAT_CHECK)) {
            Ok(s) => {
                socks.push(s);
                env.progress();
            }
            Err(RecvTimeoutError::Timeout) if !left.is_zero() => {}
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

/// Waits for the turn of the control connection's address at the UDP port (another test of the
/// same address may be setting up; up to the control timeout), then takes `total` hellos from
/// that address within `udp_hello_timeout`: each stream a socket on the port connected to the
/// hello's source, which answers `6789`.
pub(crate) fn accept_udp(
    ctl: &mut Control,
    env: &SessionEnv<'_>,
    peer_ip: IpAddr,
    total: usize,
) -> Result<Vec<DataSock>> {
    let wait_until = Instant::now() + env.cfg.control_timeout;
    let Some(expecting) = env
        .udp
        .expect(peer_ip, total, wait_until, &|| env.evicted())
    else {
        if env.evicted() {
            return Err(evicted(ctl));
        }
        return Err(refuse(
            ctl,
            errors::IESTREAMLISTEN,
            "another UDP test from this address is still setting up its streams".into(),
        ));
    };
    env.udp
        .ensure_reader()
        .map_err(|e| refuse(ctl, errors::IESTREAMLISTEN, e.to_string()))?;
    ctl.send_state(State::CreateStreams)?;
    let deadline = Instant::now() + env.cfg.udp_hello_timeout;
    let mut socks = Vec::with_capacity(total);
    while socks.len() < total {
        if env.evicted() {
            return Err(evicted(ctl));
        }
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
        let from: SocketAddr = match expecting.rx.recv_timeout(left.min(SEAT_CHECK)) {
            Ok(from) => from,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => {
                return Err(refuse(
                    ctl,
                    errors::IESTREAMLISTEN,
                    "the UDP port's reader stopped".into(),
                ));
            }
        };
        let stream = bind_udp(env.udp.bind)
            .map_err(|e| refuse(ctl, errors::IESTREAMLISTEN, e.to_string()))?;
        stream
            .connect(from)
            .map_err(|e| Iperf3Error::io("UDP connect to client", e))?;
        stream
            .send(&wire::UDP_CONNECT_REPLY)
            .map_err(|e| Iperf3Error::io("UDP hello reply", e))?;
        socks.push(DataSock::Udp(stream));
        env.progress();
    }
    Ok(socks)
}
