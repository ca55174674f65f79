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
use crate::wire::iperf3::params::DEFAULT_TCP_LEN;
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
    /// Block size; None = [`default_tcp_len`] for TCP, the loopback MSS for UDP.
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

/// Largest TCP block (iperf3's own limit, `MAX_BLOCKSIZE`, which our server enforces too).
const MAX_TCP_LEN: u32 = 1 << 20;
/// What the default blocks of one loopback test may take in all: a sender's and a receiver's
/// buffer per stream. 16 MiB keeps `-P 128` at iperf3's 128 KiB and a router's RAM safe.
const DEFAULT_LEN_BUDGET: u64 = 16 << 20;

/// The TCP block size of a loopback test without `-l`, on this machine's CPUs.
pub fn default_tcp_len(cfg: &LoopbackConfig) -> u32 {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let streams = cfg.parallel.max(1) * if cfg.bidir { 2 } else { 1 };
    let len = default_tcp_len_for(streams, cpus as u32, cfg.zerocopy);
    if cfg.skip_rx_copy {
        len.min(SKIP_RX_MAX_TCP_LEN)
    } else {
        len
    }
}

/// The largest default block with `--skip-rx-copy`: the receiver then costs next to nothing,
/// and the sender's writes decide. One stream, 4 s, receiver discarding 128 KiB (2026-12-04):
/// 146–153 Gbit/s at 256–512 KiB against 119–124 at 1 MiB with cubic (OpenWrt's default, and
/// iperf3 3.21's 128 KiB made 139–146); 64–68 at 512 KiB against 69–74 at 1 MiB with bbr, where
/// iperf3 made 30. 512 KiB is the one size near the best under both.
const SKIP_RX_MAX_TCP_LEN: u32 = 512 << 10;

/// The default TCP block for `streams` sending streams on `cpus` CPUs: 1 MiB while each
/// stream's two threads (its sender and its receiver) have a CPU each, 512 KiB up to two
/// streams per CPU, halved as the streams per CPU double after that, never below iperf3's
/// 128 KiB nor above 16 MiB of blocks in all; 128 KiB with `-Z`.
///
/// Why not iperf3's 128 KiB everywhere: on loopback both ends are the kernel's two copies and
/// its TCP processing, run in the sender's thread, and a bigger write lets one `sendmsg` push
/// fewer, fuller bursts. Measured here (docs/benchmarks.md, "Throughput"): one stream 20 Gbit/s
/// at 128 KiB, 31–35 at 1 MiB, for iperf3 3.21 as for us; with more streams than CPUs, 1 MiB
/// gained nothing over 256–512 KiB. Once a stream's sender and receiver share CPUs with other
/// threads, 1 MiB lost: `-P 2` on 2 CPUs, 4 s runs, 42.0–42.5 Gbit/s at 1 MiB, 56.6–56.7 at
/// 512 KiB, 46.5–48.8 at 256 KiB (2026-12-03, the same binary). A smaller figure from the
/// tool's own syscall overhead would understate the device. With `-Z` (sendfile) 1 MiB was slower (15–16 against 21–24
/// Gbit/s), so `-Z` keeps 128 KiB.
pub fn default_tcp_len_for(streams: u32, cpus: u32, zerocopy: bool) -> u32 {
    if zerocopy {
        return DEFAULT_TCP_LEN;
    }
    let streams = u64::from(streams.max(1));
    let cpus = u64::from(cpus.max(1));
    let mut len = MAX_TCP_LEN;
    while len > DEFAULT_TCP_LEN
        && ((len == MAX_TCP_LEN && 2 * streams > cpus)
            || streams > cpus * u64::from(MAX_TCP_LEN / len)
            || 2 * streams * u64::from(len) > DEFAULT_LEN_BUDGET)
    {
        len /= 2;
    }
    len
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
    p.len = match cfg.len {
        Some(len) => Some(len),
        None if !cfg.udp => Some(default_tcp_len(cfg)),
        None => None,
    };
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
    if let Some(note) = bbr_note(cfg, result.sender_tcp_congestion.as_deref()) {
        result.notes.push(note);
    }
    Ok(result)
}

/// A note when a TCP loopback test ran under BBR without `-C`: BBR sizes its window from
/// bandwidth × minimum RTT, and loopback's RTT of a few microseconds keeps it near 10 segments
/// (`ss -ti` during a test here: `cwnd:10`, `minrtt:0.001`), so the sender waits for ACKs
/// with a CPU idle, and the figure is BBR's, not the CPU's. Measured 2026-12-04, both tools
/// alike: `-Z` 15 Gbit/s under bbr against 103–111 under cubic, one stream 49 against 92
/// (docs/throughput.md). OpenWrt's default is cubic; a host may default to bbr.
fn bbr_note(cfg: &LoopbackConfig, cc: Option<&str>) -> Option<String> {
    let cc = cc?;
    (!cfg.udp && cfg.congestion.is_none() && cc.starts_with("bbr")).then(|| {
        format!(
            "congestion control {cc} (this kernel's default): over loopback its window stays \
             near 10 segments and the CPU waits for ACKs, so this figure understates what the \
             CPU can move; `-C cubic` (OpenWrt's default) measures the CPU, and iperf3 under \
             {cc} is held the same way"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_block_is_one_mib_while_each_streams_two_threads_have_cpus_and_shrinks_to_iperf3s() {
        let len = default_tcp_len_for;
        // Two CPUs (this host): P1 gets 1 MiB, P2 to P4 512 KiB, P8 256 KiB, more 128 KiB.
        assert_eq!(len(1, 2, false), 1 << 20);
        assert_eq!(len(2, 2, false), 512 << 10);
        assert_eq!(len(3, 2, false), 512 << 10);
        assert_eq!(len(4, 2, false), 512 << 10);
        assert_eq!(len(8, 2, false), 256 << 10);
        assert_eq!(len(16, 2, false), 128 << 10);
        assert_eq!(len(256, 2, false), 128 << 10);
        // One CPU (a single-core router): the one stream's sender and receiver share it.
        assert_eq!(len(1, 1, false), 512 << 10);
        assert_eq!(len(2, 1, false), 512 << 10);
        assert_eq!(len(3, 1, false), 256 << 10);
        // Four CPUs: P2 gets 1 MiB (four threads, four CPUs), P3 512 KiB.
        assert_eq!(len(2, 4, false), 1 << 20);
        assert_eq!(len(3, 4, false), 512 << 10);
        assert_eq!(len(8, 4, false), 512 << 10);
        assert_eq!(len(9, 4, false), 256 << 10);
        // Many CPUs: the 16 MiB budget decides.
        assert_eq!(len(8, 64, false), 1 << 20);
        assert_eq!(len(16, 64, false), 512 << 10);
        assert_eq!(len(64, 64, false), 128 << 10);
        // Degenerate counts are read as one (one stream on one CPU).
        assert_eq!(len(0, 0, false), 512 << 10);
        // -Z: sendfile was slower with 1 MiB blocks.
        assert_eq!(len(1, 2, true), 128 << 10);
        for cpus in [1, 2, 4, 128] {
            for streams in 1..=256 {
                let l = len(streams, cpus, false);
                assert!(
                    (128 << 10..=1 << 20).contains(&l),
                    "P{streams} on {cpus}: {l}"
                );
                assert!(l.is_power_of_two());
            }
        }
    }

    #[test]
    fn bidir_counts_both_directions() {
        let cfg = |parallel, bidir| LoopbackConfig {
            parallel,
            bidir,
            ..LoopbackConfig::default()
        };
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        assert_eq!(
            default_tcp_len(&cfg(3, true)),
            default_tcp_len_for(6, cpus, false)
        );
        assert_eq!(
            default_tcp_len(&cfg(3, false)),
            default_tcp_len_for(3, cpus, false)
        );
    }

    #[test]
    fn a_bbr_default_gets_a_note_and_a_chosen_algorithm_or_udp_does_not() {
        let cfg = |congestion: Option<&str>, udp| LoopbackConfig {
            congestion: congestion.map(str::to_string),
            udp,
            ..LoopbackConfig::default()
        };
        let note = bbr_note(&cfg(None, false), Some("bbr")).expect("bbr default: a note");
        assert!(note.contains("bbr") && note.contains("-C cubic"), "{note}");
        assert!(bbr_note(&cfg(None, false), Some("bbr3")).is_some());
        assert_eq!(bbr_note(&cfg(None, false), Some("cubic")), None);
        assert_eq!(bbr_note(&cfg(None, false), None), None);
        // Asked for with -C: the user chose it, no note.
        assert_eq!(bbr_note(&cfg(Some("bbr"), false), Some("bbr")), None);
        assert_eq!(bbr_note(&cfg(None, true), Some("bbr")), None);
    }

    #[test]
    fn skip_rx_copy_caps_the_default_block_at_512_kib() {
        let one = |skip_rx_copy| LoopbackConfig {
            parallel: 1,
            skip_rx_copy,
            ..LoopbackConfig::default()
        };
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        let plain = default_tcp_len_for(1, cpus, false);
        assert_eq!(default_tcp_len(&one(false)), plain);
        assert_eq!(default_tcp_len(&one(true)), plain.min(512 << 10));
        // Many streams: the smaller default stays.
        let many = LoopbackConfig {
            parallel: 64,
            skip_rx_copy: true,
            ..LoopbackConfig::default()
        };
        assert_eq!(default_tcp_len(&many), default_tcp_len_for(64, cpus, false));
        assert!(default_tcp_len(&many) <= 512 << 10);
    }
}
