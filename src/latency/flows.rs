//! Client side of the TCP load flows: open each flow with its DSCP mark and congestion control
//! set before connect, then, at the scheduled instant, send (upload) or receive (download) for
//! the load length, counting bytes per step and sampling TCP_INFO.

use super::conn;
use super::error::LatencyError;
use super::plan::FlowPlan;
use crate::net as so;
use crate::wire::ROUTERBENCH_MAGIC;
use crate::wire::rb::{self, Direction, Message};
use portable_atomic::AtomicU64;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// An opened, accepted flow, ready to start.
pub struct OpenFlow {
    pub id: u8,
    pub plan: FlowPlan,
    pub stream: TcpStream,
    pub tos_client: Option<u8>,
    pub tos_server: u8,
    pub cc_client: Option<String>,
    pub cc_server: String,
}

/// Opens flow `id` of `session`, marking and choosing congestion control before connecting.
pub fn open(
    server: SocketAddr,
    session: u64,
    id: u8,
    plan: &FlowPlan,
    cc: Option<&str>,
    timeout: Duration,
) -> Result<OpenFlow, LatencyError> {
    let v6 = server.is_ipv6();
    let domain = if v6 {
        socket2::Domain::IPV6
    } else {
        socket2::Domain::IPV4
    };
    let sock = socket2::Socket::new(domain, socket2::Type::STREAM, Some(socket2::Protocol::TCP))?;
    so::set_tos(&sock, plan.tos, v6)?;
    if let Some(cc) = cc {
        so::set_congestion(&sock, cc)?;
    }
    sock.connect_timeout(&server.into(), timeout)
        .map_err(|error| LatencyError::FlowConnect {
            flow: plan.name.clone(),
            server,
            error,
        })?;
    let mut stream: TcpStream = sock.into();
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    stream.write_all(&ROUTERBENCH_MAGIC)?;
    let hello = Message::LoadHello {
        version: rb::VERSION,
        session,
        flow: id,
        direction: plan.direction,
        tos: plan.tos,
        cc: cc.unwrap_or("").to_string(),
    };
    conn::write_msg(&mut stream, &hello)?;
    match conn::read_msg(&mut stream) {
        Ok(Message::LoadAccept { flow, tos, cc }) if flow == id => Ok(OpenFlow {
            id,
            plan: plan.clone(),
            tos_client: so::tos(&stream, v6).ok(),
            cc_client: so::congestion(&stream).ok(),
            stream,
            tos_server: tos,
            cc_server: cc,
        }),
        Ok(Message::Error { message, .. }) => Err(LatencyError::FlowRefused {
            flow: plan.name.clone(),
            message,
        }),
        Ok(other) => Err(LatencyError::FlowAnswer {
            flow: plan.name.clone(),
            answer: format!("{other:?}"),
        }),
        Err(error) => Err(LatencyError::FlowNoAnswer {
            flow: plan.name.clone(),
            error,
        }),
    }
}

/// What a flow thread measured.
#[derive(Debug, Default)]
pub struct FlowOutcome {
    /// Download: bytes received per step (uploads are counted by the server).
    pub bytes_per_step: Vec<u64>,
    /// Upload: the client socket's TCP RTT (µs) at each step end.
    pub rtt_per_step: Vec<Option<u32>>,
    /// Every byte this end wrote (upload) or read (download) over the flow's life, the drain
    /// after the load window included.
    pub total_bytes: u64,
    pub error: Option<String>,
}

/// Runs one flow from `start` for `length`; `live_bytes` counts as it goes (progress line).
pub fn run(
    mut f: OpenFlow,
    start: Instant,
    length: Duration,
    step: Duration,
    drain: Duration,
    live_bytes: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
) -> FlowOutcome {
    let steps = (length.as_secs_f64() / step.as_secs_f64()).round().max(1.0) as usize;
    let mut out = FlowOutcome {
        bytes_per_step: vec![0; steps],
        rtt_per_step: vec![None; steps],
        total_bytes: 0,
        error: None,
    };
    // Until the load starts, in slices: an interruption in the idle lead-in ends the flow at
    // once.
    while let Some(wait) = start.checked_duration_since(Instant::now()) {
        if stop.load(Ordering::Relaxed) {
            return out;
        }
        std::thread::sleep(wait.min(Duration::from_millis(50)));
    }
    let end = start + length;
    let step_of = |now: Instant| {
        ((now.saturating_duration_since(start).as_secs_f64() / step.as_secs_f64()) as usize)
            .min(steps - 1)
    };
    match f.plan.direction {
        Direction::Upload => {
            let payload = conn::random_payload(conn::random_u64());
            let _ = f.stream.set_write_timeout(Some(Duration::from_millis(250)));
            let mut next_sample = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let now = Instant::now();
                while next_sample < steps && now >= start + step * (next_sample as u32 + 1) {
                    out.rtt_per_step[next_sample] = so::tcp_rtt_us(&f.stream);
                    next_sample += 1;
                }
                if now >= end {
                    break;
                }
                match f.stream.write(&payload) {
                    Ok(n) => {
                        out.total_bytes += n as u64;
                        live_bytes.fetch_add(n as u64, Ordering::Relaxed);
                    }
                    Err(e) if crate::net::is_timeout(&e) => {}
                    Err(e) => {
                        out.error = Some(format!("{}: send failed: {e}", f.plan.name));
                        break;
                    }
                }
            }
            let _ = f.stream.shutdown(std::net::Shutdown::Write);
        }
        Direction::Download => {
            let _ = f.stream.set_read_timeout(Some(Duration::from_millis(250)));
            let mut buf = vec![0u8; 128 * 1024];
            // The drain: what the sender had buffered at the end still arrives (not counted
            // in the window, but read, so the sender can finish and close).
            let hard_end = end + drain;
            while !stop.load(Ordering::Relaxed) && Instant::now() < hard_end {
                match f.stream.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        let now = Instant::now();
                        // Only what arrives inside the load window counts: bytes drained
                        // from the sender's buffer after the end would add up to a step's
                        // worth and read above the link rate (uploads are cut the same way
                        // by the server's step reports).
                        if now >= start && now < end {
                            out.bytes_per_step[step_of(now)] += n as u64;
                        }
                        out.total_bytes += n as u64;
                        live_bytes.fetch_add(n as u64, Ordering::Relaxed);
                    }
                    Err(e) if crate::net::is_timeout(&e) => {}
                    Err(e) => {
                        out.error = Some(format!("{}: receive failed: {e}", f.plan.name));
                        break;
                    }
                }
            }
        }
    }
    out
}
