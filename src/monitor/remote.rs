//! The client side of the agent: subscribe to `routerbench server --monitor` on the router,
//! estimate the agent's clock offset from request/response timestamps (the probes' method,
//! lowest third by RTT), receive its samples while a test runs, and put them on the test's
//! time axis (one t0).

use super::agent::read_frame;
use super::error::MonitorError;
use crate::net::timestamp::realtime_ns;
use crate::results::monitor::{AgentClock, MonitorResult, MonitorSample};
use crate::stats::{Exchange, clock_offset};
use crate::wire::rb_agent::{self, AgentMessage, ChunkKind};
use std::io::Write;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::mpsc::SyncSender;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How to subscribe.
#[derive(Debug, Clone)]
pub struct RemoteConfig {
    /// `HOST[:PORT]` (port 5201 when left out; `[v6]:port` for IPv6).
    pub address: String,
    pub token: Option<String>,
    pub interval: Duration,
    /// The subscription ends by itself after this long.
    pub max_duration: Duration,
    pub connect_timeout: Duration,
    /// Clock exchanges before the samples start.
    pub exchanges: usize,
}

impl RemoteConfig {
    pub fn new(address: &str, token: Option<String>, interval: Duration, max: Duration) -> Self {
        Self {
            address: address.to_string(),
            token,
            interval,
            max_duration: max,
            connect_timeout: Duration::from_secs(5),
            exchanges: 16,
        }
    }
}

/// Resolves `HOST[:PORT]`.
pub fn resolve(address: &str) -> Result<SocketAddr, MonitorError> {
    let port = crate::wire::iperf3::DEFAULT_PORT;
    if let Ok(a) = address.parse::<SocketAddr>() {
        return Ok(a);
    }
    let bare = address.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<std::net::IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    let found = if address.contains(':') {
        address.to_socket_addrs()
    } else {
        (address, port).to_socket_addrs()
    };
    found
        .map_err(|error| MonitorError::Resolve {
            address: address.to_string(),
            error,
        })?
        .next()
        .ok_or_else(|| MonitorError::NoAddress {
            address: address.to_string(),
        })
}

/// A running subscription.
pub struct RemoteMonitor {
    writer: TcpStream,
    handle: Option<JoinHandle<Received>>,
}

/// What a subscription delivered: every sample received, and why it ended early if it did
/// (then `result` holds the samples up to the break, a summary of them, and a note).
pub struct Received {
    pub result: MonitorResult,
    pub error: Option<MonitorError>,
}

fn expect_reply(stream: &mut TcpStream, addr: SocketAddr) -> Result<AgentMessage, MonitorError> {
    let mut first = [0u8; 1];
    if matches!(stream.peek(&mut first), Ok(1)) && first[0] == crate::wire::BUSY_BYTE {
        return Err(MonitorError::Refused {
            addr,
            code: 2,
            message: "busy: the server is at its connection limit and refused this connection"
                .into(),
            hint: " — retry later",
        });
    }
    match read_frame(stream) {
        Ok(AgentMessage::Error { code, message }) => Err(MonitorError::Refused {
            addr,
            code,
            hint: if code == 3 && message.contains("0x10") {
                " — is the server there started with --monitor?"
            } else {
                ""
            },
            message,
        }),
        Ok(m) => Ok(m),
        Err(error) => Err(MonitorError::NoReply { addr, error }),
    }
}

fn unexpected(addr: SocketAddr, expected: &'static str, got: &AgentMessage) -> MonitorError {
    MonitorError::Unexpected {
        addr,
        expected,
        got: format!("{got:?}"),
    }
}

impl RemoteMonitor {
    /// Connects, subscribes, measures the clock offset and starts the samples; a refusal (wrong
    /// token, busy agent, no agent) is an error here, before any test starts.
    pub fn start(
        cfg: &RemoteConfig,
        live: Option<SyncSender<MonitorSample>>,
    ) -> Result<Self, MonitorError> {
        let addr = resolve(&cfg.address)?;
        let mut s = TcpStream::connect_timeout(&addr, cfg.connect_timeout)
            .map_err(|error| MonitorError::Connect { addr, error })?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        s.set_write_timeout(Some(Duration::from_secs(10)))?;
        let _ = s.set_nodelay(true);
        s.write_all(&crate::wire::ROUTERBENCH_MAGIC)?;
        let hello = AgentMessage::Hello {
            version: rb_agent::AGENT_VERSION,
            interval_ms: cfg.interval.as_millis().min(u128::from(u32::MAX)) as u32,
            duration_ms: cfg.max_duration.as_millis().min(u128::from(u32::MAX)) as u32,
            token: cfg.token.clone().unwrap_or_default(),
        };
        s.write_all(&hello.emit())?;
        let granted = match expect_reply(&mut s, addr)? {
            AgentMessage::Welcome { interval_ms, .. } => Duration::from_millis(interval_ms.into()),
            other => return Err(unexpected(addr, "Welcome", &other)),
        };
        let mut ex = Vec::new();
        for _ in 0..cfg.exchanges.min(rb_agent::MAX_TIME_EXCHANGES) {
            let client_send = realtime_ns();
            s.write_all(
                &AgentMessage::TimeRequest {
                    client_ns: client_send,
                }
                .emit(),
            )?;
            match expect_reply(&mut s, addr)? {
                AgentMessage::TimeReply {
                    client_ns,
                    agent_rx_ns,
                    agent_tx_ns,
                } if client_ns == client_send => ex.push(Exchange {
                    client_send,
                    server_rx: agent_rx_ns,
                    server_tx: agent_tx_ns,
                    client_recv: realtime_ns(),
                }),
                other => return Err(unexpected(addr, "TimeReply", &other)),
            }
        }
        let clock = clock_of(&cfg.address, &ex);
        s.write_all(&AgentMessage::Start.emit())?;
        let start_unix_ns = match expect_reply(&mut s, addr)? {
            AgentMessage::Started { start_unix_ns } => start_unix_ns,
            other => return Err(unexpected(addr, "Started", &other)),
        };
        let writer = s.try_clone()?;
        // Samples arrive every interval; a silent agent for 5 intervals + 5 s is gone.
        s.set_read_timeout(Some(granted * 5 + Duration::from_secs(5)))?;
        let until = Instant::now() + cfg.max_duration + Duration::from_secs(30);
        let handle = std::thread::Builder::new()
            .name("rb-monitor-rx".into())
            .spawn(move || receive(s, addr, until, live, clock, start_unix_ns, granted))?;
        Ok(Self {
            writer,
            handle: Some(handle),
        })
    }

    /// Ends the subscription and returns what the agent sent (t_s on the agent's own axis,
    /// `start_unix_s` already on this machine's clock); an error if the stream broke off.
    pub fn stop(self) -> Result<MonitorResult, MonitorError> {
        let r = self.stop_keeping();
        match r.error {
            Some(e) => Err(e),
            None => Ok(r.result),
        }
    }

    /// Ends the subscription and returns every sample received, also when the stream broke
    /// off before the end (the agent killed, the router gone): nothing measured is lost.
    pub fn stop_keeping(mut self) -> Received {
        let _ = self.writer.write_all(&AgentMessage::Stop.emit());
        match self.handle.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            _ => Received {
                result: MonitorResult::default(),
                error: Some(MonitorError::ReceiverFailed),
            },
        }
    }

    /// True once the stream has ended (the agent finished, broke off or fell silent).
    pub fn is_finished(&self) -> bool {
        self.handle.as_ref().is_none_or(JoinHandle::is_finished)
    }
}

impl Drop for RemoteMonitor {
    fn drop(&mut self) {
        if self.handle.is_some() {
            // Not stopped (the test failed): end the subscription, unblock the receiver.
            let _ = self.writer.write_all(&AgentMessage::Stop.emit());
            let _ = self.writer.shutdown(std::net::Shutdown::Both);
        }
    }
}

fn clock_of(address: &str, ex: &[Exchange]) -> AgentClock {
    let mut rtts: Vec<f64> = ex.iter().map(|e| e.rtt_ns() as f64 / 1e6).collect();
    rtts.sort_by(f64::total_cmp);
    let keep = rtts.len().div_ceil(3).max(1);
    AgentClock {
        address: address.to_string(),
        offset_ms: clock_offset(ex).map_or(0.0, |(o, _, _)| o / 1e6),
        rtt_ms: rtts.iter().take(keep).sum::<f64>() / keep as f64,
        exchanges: ex.len(),
    }
}

fn receive(
    mut s: TcpStream,
    addr: SocketAddr,
    until: Instant,
    live: Option<SyncSender<MonitorSample>>,
    clock: AgentClock,
    start_unix_ns: u64,
    interval: Duration,
) -> Received {
    let mut samples = Vec::new();
    let (final_doc, error) = read_stream(&mut s, addr, until, live.as_ref(), &mut samples);
    let mut error = error;
    let mut r = match final_doc.map(|d| crate::util::json::from_json::<MonitorResult>(&d)) {
        Some(Ok(r)) => r,
        Some(Err(e)) => {
            error = Some(MonitorError::BadJson {
                addr,
                what: "the final summary",
                error: e,
            });
            MonitorResult::default()
        }
        None => MonitorResult::default(),
    };
    if let Some(e) = &error {
        // No final document: the CPU ids are the samples' per-CPU positions.
        if r.cpus.is_empty() {
            let n = samples.first().map_or(0, |s| s.cpu_busy_pct.len());
            r.cpus = (0..n as u32).collect();
        }
        r.notes.push(format!(
            "the agent's stream ended early after {} samples: {e}",
            samples.len()
        ));
    }
    // The agent keeps no samples: the summary's per-sample figures come from ours.
    let queues = std::mem::take(&mut r.summary.queues);
    r.summary = super::sampler::summarize(&samples, interval.as_secs_f64());
    r.summary.queues = queues;
    r.samples = samples;
    r.interval_s = interval.as_secs_f64();
    // The agent's t_s = 0 on this machine's clock.
    r.start_unix_s = Some(start_unix_ns as f64 / 1e9 - clock.offset_ms / 1e3);
    r.agent = Some(clock);
    Received { result: r, error }
}

/// Reads Chunks until the final document (returned) or an error; samples go to `samples`
/// (and `live`) as they arrive.
fn read_stream(
    s: &mut TcpStream,
    addr: SocketAddr,
    until: Instant,
    live: Option<&SyncSender<MonitorSample>>,
    samples: &mut Vec<MonitorSample>,
) -> (Option<Vec<u8>>, Option<MonitorError>) {
    let mut doc = Vec::new();
    while Instant::now() < until {
        let m = match read_frame(s) {
            Ok(m) => m,
            Err(error) => {
                // read_exact's "failed to fill whole buffer" is the agent closing the stream.
                let error = if error.kind() == std::io::ErrorKind::UnexpectedEof {
                    std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the agent closed the connection",
                    )
                } else {
                    error
                };
                return (None, Some(MonitorError::BrokeOff { addr, error }));
            }
        };
        let AgentMessage::Chunk { kind, last, bytes } = m else {
            return (None, Some(unexpected(addr, "a Chunk", &m)));
        };
        if doc.len() + bytes.len() > 16 << 20 {
            return (None, Some(MonitorError::TooLarge { addr }));
        }
        doc.extend_from_slice(&bytes);
        if !last {
            continue;
        }
        let d = std::mem::take(&mut doc);
        match kind {
            ChunkKind::Sample => match crate::util::json::from_json::<MonitorSample>(&d) {
                Ok(sample) => {
                    if let Some(tx) = live {
                        let _ = tx.try_send(sample.clone());
                    }
                    if samples.len() < 86_400 {
                        samples.push(sample);
                    }
                }
                Err(error) => {
                    let e = MonitorError::BadJson {
                        addr,
                        what: "a sample",
                        error,
                    };
                    return (None, Some(e));
                }
            },
            ChunkKind::Final => return (Some(d), None),
        }
    }
    (None, Some(MonitorError::NoFinal { addr }))
}

/// Moves samples onto a test's time axis: `t_s` becomes seconds since `t0_unix` (this
/// machine's clock); samples that ended before t0 are dropped.
pub fn onto_test_axis(m: &mut MonitorResult, t0_unix: f64) {
    let Some(start) = m.start_unix_s else {
        return;
    };
    let shift = start - t0_unix;
    for s in &mut m.samples {
        s.t_s += shift;
    }
    m.samples.retain(|s| s.t_s >= 0.0);
    m.start_unix_s = Some(t0_unix);
}

/// Ends the subscription, puts the samples on the test's axis (`t0_unix`) and summarises the
/// load window `[from, to)` (on that axis) against the idle lead-in.
pub fn finish(
    r: RemoteMonitor,
    t0_unix: f64,
    load: Option<(f64, f64)>,
) -> Result<MonitorResult, MonitorError> {
    let mut m = r.stop()?;
    onto_test_axis(&mut m, t0_unix);
    if let Some((from, to)) = load {
        m.summary.under_load = Some(super::summary::load_summary(&m, from, to));
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(resolve("127.0.0.1:27301").unwrap().port(), 27301);
        assert_eq!(resolve("127.0.0.1").unwrap().port(), 5201);
        assert_eq!(resolve("[::1]:27302").unwrap().port(), 27302);
        assert_eq!(resolve("::1").unwrap().port(), 5201);
    }

    #[test]
    fn axis_shift() {
        let mut m = MonitorResult {
            start_unix_s: Some(1000.5),
            samples: [0.2, 0.7, 1.2]
                .iter()
                .map(|&t| MonitorSample {
                    t_s: t,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        onto_test_axis(&mut m, 1001.0);
        let t: Vec<f64> = m
            .samples
            .iter()
            .map(|s| (s.t_s * 10.0).round() / 10.0)
            .collect();
        assert_eq!(t, [0.2, 0.7]);
        assert_eq!(m.start_unix_s, Some(1001.0));
    }
}
