//! The client's control connection: the handshake (magic, Hello → Welcome) and the reader
//! thread that collects the server's StepReports and its final probe counts.

use super::conn::{self, ConnError};
use super::error::LatencyError;
use crate::wire::ROUTERBENCH_MAGIC;
use crate::wire::rb::{self, Message};
use portable_atomic::AtomicU64;
use std::collections::HashMap;
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the server granted in its Welcome.
pub(super) struct Welcome {
    pub session: u64,
    pub udp_port: u16,
    pub max_duration_ms: u32,
    pub max_flows: u8,
}

/// Opens the control connection: magic, Hello → Welcome. Returns (stream, grant, handshake RTT).
pub(super) fn handshake(
    addr: SocketAddr,
    timeout: Duration,
    token: &str,
) -> Result<(TcpStream, Welcome, Duration), LatencyError> {
    let mut ctl = TcpStream::connect_timeout(&addr, timeout)
        .map_err(|error| LatencyError::Connect { addr, error })?;
    ctl.set_nodelay(true)?;
    ctl.set_read_timeout(Some(timeout))?;
    ctl.set_write_timeout(Some(timeout))?;
    let t = Instant::now();
    let mut hello = ROUTERBENCH_MAGIC.to_vec();
    hello.extend_from_slice(
        &Message::Hello {
            version: rb::VERSION,
            token: token.to_string(),
        }
        .emit(),
    );
    ctl.write_all(&hello)?;
    // A server at its connection limit answers one byte 0xff and closes (the byte starts no
    // frame): say "busy", not "closed".
    let mut first = [0u8; 1];
    if matches!(ctl.peek(&mut first), Ok(1)) && first[0] == crate::wire::BUSY_BYTE {
        return Err(LatencyError::Refused {
            addr,
            message: "server busy: it is at its connection limit and refused this connection; \
                      retry later"
                .into(),
        });
    }
    match conn::read_msg(&mut ctl) {
        Ok(Message::Welcome { session, udp_port, max_duration_ms, max_flows, .. }) => {
            Ok((ctl, Welcome { session, udp_port, max_duration_ms, max_flows }, t.elapsed()))
        }
        Ok(Message::Error { message, .. }) => Err(LatencyError::Refused { addr, message }),
        Ok(other) => Err(LatencyError::Refused { addr, message: format!("unexpected answer {other:?}") }),
        Err(ConnError::Closed) => Err(LatencyError::Refused {
            addr,
            message: "connection closed during the handshake without an answer: an iperf3-only server, an older routerbench, or a server that dropped the connection (its log says why)".into(),
        }),
        Err(ConnError::Timeout) => Err(LatencyError::Refused {
            addr,
            message: format!(
                "no answer to Hello within {timeout:?}: is this an iperf3-only server (iperf3 -s \
                 waits for its own cookie), or another service on that port?"
            ),
        }),
        Err(e) => Err(LatencyError::Refused { addr, message: format!("no valid Welcome: {e}") }),
    }
}

/// What the control reader collected.
#[derive(Default)]
pub(super) struct ControlData {
    /// flow id → per step (bytes, server TCP RTT µs).
    pub steps: HashMap<u8, Vec<(u64, u32)>>,
    pub finished: Option<Vec<rb::StreamCount>>,
    pub error: Option<String>,
}

/// Reads StepReports into `data` (and the live upload byte count) until Finished, an error or
/// the connection ends; at most 4000 s.
pub(super) fn control_reader(
    mut ctl: TcpStream,
    data: Arc<Mutex<ControlData>>,
    upload_live: Arc<AtomicU64>,
) {
    let _ = ctl.set_read_timeout(Some(Duration::from_millis(500)));
    let give_up = Instant::now() + Duration::from_secs(4000);
    while Instant::now() < give_up {
        match conn::read_msg(&mut ctl) {
            Ok(Message::StepReport { step, flows }) => {
                let Ok(mut d) = data.lock() else { return };
                // The live line shows the latest whole step (reports arrive just after it ends).
                upload_live.store(flows.iter().map(|f| f.bytes).sum(), Ordering::Relaxed);
                for f in flows {
                    let v = d.steps.entry(f.flow).or_default();
                    let idx = step as usize;
                    if idx < 100_000 {
                        if v.len() <= idx {
                            v.resize(idx + 1, (0, 0));
                        }
                        v[idx] = (f.bytes, f.tcp_rtt_us);
                    }
                }
            }
            Ok(Message::Finished { streams }) => {
                if let Ok(mut d) = data.lock() {
                    d.finished = Some(streams);
                }
                return;
            }
            Ok(Message::Error { message, .. }) => {
                if let Ok(mut d) = data.lock() {
                    d.error = Some(format!("server reported: {message}"));
                }
                return;
            }
            Ok(other) => {
                if let Ok(mut d) = data.lock() {
                    d.error = Some(format!("unexpected control message {other:?}"));
                }
                return;
            }
            Err(ConnError::Timeout) => {}
            Err(e) => {
                if let Ok(mut d) = data.lock() {
                    d.error = Some(format!("control connection lost: {e}"));
                }
                return;
            }
        }
    }
}
