//! The in-device loopback test: our server and our client in one process over 127.0.0.1 (or
//! ::1), the seed's `iperf3 -s -D && iperf3 -c 127.0.0.1` in one call. One thread per stream
//! on each end, so `-P` scales with cores; both ends' CPU is accounted per thread. Intervals
//! go to an [`IntervalSink`] as they complete (the CLI renders them, or a progress line).

use super::{Quiet, Server, ServerConfig};
use crate::iperf3::client::{self, ClientConfig};
use crate::iperf3::{IntervalSink, Iperf3Error, NoIntervals, Result};
use crate::results::throughput::{Role, ThroughputResult};
use crate::util::affinity;
use crate::wire::iperf3::Protocol;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A loopback test.
#[derive(Debug, Clone)]
pub struct LoopbackConfig {
    /// Seconds (after the omit period).
    pub time: u32,
    pub omit: u32,
    /// Streams per direction.
    pub parallel: u32,
    pub reverse: bool,
    pub bidir: bool,
    pub udp: bool,
    /// bit/s per stream (0 = unlimited TCP; UDP defaults to 1 Mbit/s like iperf3).
    pub bandwidth: u64,
    /// Block size; None = iperf3's default (TCP 128 KiB, UDP the loopback MSS).
    pub len: Option<u32>,
    pub ipv6: bool,
    /// Socket buffer size (`-w`), bytes.
    pub window: Option<u32>,
    pub tos: Option<u8>,
    pub congestion: Option<String>,
    /// Seconds between interval samples.
    pub interval: f64,
    /// iperf3's `-A n,m`: every client stream thread on CPU n, every server one on CPU m.
    /// None: wherever the scheduler puts them (measured best, see `util::affinity`).
    pub affinity: Option<(usize, usize)>,
    /// `-Z`: zero-copy TCP sending.
    pub zerocopy: bool,
    /// `--skip-rx-copy`: the TCP receiver discards in the kernel.
    pub skip_rx_copy: bool,
    /// `--gsro`: send 3.21's GSO/GRO keys (our ends batch UDP either way).
    pub gsro: bool,
}

impl Default for LoopbackConfig {
    fn default() -> Self {
        LoopbackConfig {
            time: 10,
            omit: 0,
            parallel: 1,
            reverse: false,
            bidir: false,
            udp: false,
            bandwidth: 0,
            len: None,
            ipv6: false,
            window: None,
            tos: None,
            congestion: None,
            interval: 1.0,
            affinity: None,
            zerocopy: false,
            skip_rx_copy: false,
            gsro: false,
        }
    }
}

/// Runs the loopback test, without live intervals.
pub fn run(cfg: &LoopbackConfig) -> Result<ThroughputResult> {
    run_with_sink(cfg, &NoIntervals, &AtomicBool::new(false))
}

/// Runs the loopback test; intervals go to `sink` as they complete; `stop` interrupts it.
pub fn run_with_sink(
    cfg: &LoopbackConfig,
    sink: &dyn IntervalSink,
    stop: &AtomicBool,
) -> Result<ThroughputResult> {
    let host = if cfg.ipv6 { "::1" } else { "127.0.0.1" };
    let bind = (
        host.parse::<std::net::IpAddr>()
            .map_err(|e| Iperf3Error::Protocol(e.to_string()))?,
        0,
    )
        .into();
    let (client_cpus, server_cpus) = match cfg.affinity {
        Some((client, server)) => {
            for c in [client, server] {
                affinity::check_cpu(c).map_err(Iperf3Error::Protocol)?;
            }
            (Some(client), Some(server))
        }
        None => (None, None),
    };
    let mut scfg = ServerConfig::private(bind);
    scfg.session.cpu = server_cpus;
    scfg.session.interval = 0.0;
    let server = Server::bind(scfg, Arc::new(Quiet))
        .map_err(|e| Iperf3Error::io(format!("loopback server on {host}"), e))?
        .keep_results();
    let port = server
        .local_addr()
        .map_err(|e| Iperf3Error::io("loopback server address", e))?
        .port();
    let server_stop = server.stop_flag();
    let mut ccfg = ClientConfig::new(host, port);
    let p = &mut ccfg.params;
    p.protocol = if cfg.udp {
        Protocol::Udp
    } else {
        Protocol::Tcp
    };
    p.time = cfg.time;
    p.omit = cfg.omit;
    p.parallel = cfg.parallel;
    p.reverse = cfg.reverse && !cfg.bidir;
    p.bidirectional = cfg.bidir;
    p.bandwidth = cfg.bandwidth;
    p.len = cfg.len;
    p.tos = cfg.tos;
    p.window = cfg.window;
    p.congestion = cfg.congestion.clone();
    p.zerocopy = cfg.zerocopy;
    p.skip_rx_copy = cfg.skip_rx_copy;
    if cfg.gsro && cfg.udp {
        let on = crate::wire::iperf3::UdpOffload {
            on: true,
            dg_size: 0,
            bf_size: 0,
        };
        p.gso = Some(on);
        p.gro = Some(on);
    }
    ccfg.interval = cfg.interval;
    ccfg.cpu = client_cpus;
    let outcome = std::thread::scope(|scope| {
        let srv = scope.spawn(|| server.run());
        let r = client::run(&ccfg, sink, stop);
        if r.is_err() {
            server_stop.store(true, Ordering::Relaxed);
        }
        let srv_r = srv.join();
        (r, srv_r)
    });
    let (client_result, server_run) = outcome;
    if let Ok(Err(e)) = server_run {
        return Err(Iperf3Error::io("loopback server", e));
    }
    let mut result = client_result?;
    result.role = Role::Loopback;
    Ok(result)
}
