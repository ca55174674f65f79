//! Library-level tests of the daemon and the loopback test: the first byte routes a
//! routerbench-protocol connection to its handler while iperf3 tests share the port, and
//! `server::loopback::run` returns consistent results for TCP, -R, --bidir -P 2 and UDP.

use routerbench::results::throughput::{Protocol, Role};
use routerbench::server::loopback::{self, LoopbackConfig};
use routerbench::server::{ProtocolHandler, Quiet, Server, ServerConfig};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

struct Echo;

impl ProtocolHandler for Echo {
    fn handle(
        &self,
        mut conn: routerbench::service::Handoff,
    ) -> Result<(), routerbench::service::HandlerError> {
        conn.stream.write_all(b"hello ")?;
        conn.stream.write_all(&conn.prefix[1..])?;
        Ok(())
    }
}

#[test]
fn first_byte_routes_to_the_routerbench_handler() {
    let server = Server::bind(
        ServerConfig::new("127.0.0.1:0".parse().unwrap()),
        Arc::new(Quiet),
    )
    .unwrap()
    .with_handler(Arc::new(Echo));
    let addr = server.local_addr().unwrap();
    let stop = server.stop_flag();
    std::thread::scope(|s| {
        let h = s.spawn(|| server.run());
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        c.write_all(&routerbench::wire::ROUTERBENCH_MAGIC).unwrap();
        let mut got = Vec::new();
        c.read_to_end(&mut got).unwrap();
        assert_eq!(got, b"hello RBENCH\0");
        // An iperf3 client on the same port at the same time still works.
        let mut cfg = routerbench::iperf3::client::ClientConfig::new("127.0.0.1", addr.port());
        cfg.params.time = 1;
        cfg.interval = 0.0;
        let r = routerbench::iperf3::client::run(
            &cfg,
            &routerbench::iperf3::NoIntervals,
            &std::sync::atomic::AtomicBool::new(false),
        )
        .unwrap();
        assert!(r.sum_received.bytes > 0);
        // Our server drains in-flight data: both ends agree to the byte.
        assert_eq!(r.sum_sent.bytes, r.sum_received.bytes);
        stop.store(true, Ordering::Relaxed);
        let summary = h.join().unwrap().unwrap();
        assert_eq!(summary.tests_done, 1);
    });
}

fn cfg(time: u32) -> LoopbackConfig {
    LoopbackConfig {
        time,
        interval: 0.5,
        ..Default::default()
    }
}

#[test]
fn loopback_tcp_reverse() {
    let r = loopback::run(&LoopbackConfig {
        reverse: true,
        ..cfg(1)
    })
    .unwrap();
    assert_eq!(r.role, Role::Loopback);
    assert!(r.setup.reverse);
    assert!(r.sum_received.bytes > 0);
    assert_eq!(r.sum_sent.bytes, r.sum_received.bytes);
    assert!(
        r.cpu_local.total > 0.0 && r.cpu_remote.total > 0.0,
        "both ends' CPU"
    );
    assert!(r.intervals.len() >= 2);
}

#[test]
fn loopback_bidir_two_streams() {
    let r = loopback::run(&LoopbackConfig {
        bidir: true,
        parallel: 2,
        ..cfg(1)
    })
    .unwrap();
    assert_eq!(r.streams.len(), 4);
    let ids: Vec<i32> = r.streams.iter().map(|s| s.id).collect();
    assert_eq!(ids, [1, 3, 4, 5]);
    let rev = r.sum_received_bidir_reverse.as_ref().expect("reverse sums");
    assert!(rev.bytes > 0);
    let per_stream: Vec<(i32, bool, u64, u64)> = r
        .streams
        .iter()
        .map(|s| (s.id, s.local_sends, s.sender.bytes, s.receiver.bytes))
        .collect();
    assert_eq!(
        r.sum_sent_bidir_reverse.as_ref().map(|s| s.bytes),
        Some(rev.bytes),
        "{per_stream:?}"
    );
    let doc: serde_json::Value = serde_json::from_str(
        &routerbench::report::export::iperf3::render(&r, &routerbench::iperf3::system_info()),
    )
    .unwrap();
    assert!(
        doc["end"]["sum_sent_bidir_reverse"]["bytes"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(doc["start"]["test_start"]["num_streams"], 2);
}

#[test]
fn loopback_udp_rate() {
    let r = loopback::run(&LoopbackConfig {
        udp: true,
        bandwidth: 20_000_000,
        // ~1800 datagrams in the second, so one lost burst on a busy box is not 10 %.
        len: Some(1400),
        ..cfg(1)
    })
    .unwrap();
    assert_eq!(r.setup.protocol, Protocol::Udp);
    let u = r.streams[0].udp.as_ref().expect("udp summary");
    let bps = r.sum_sent.bits_per_second;
    assert!((12e6..28e6).contains(&bps), "paced to 20 Mbit/s, got {bps}");
    assert!(u.packets.unwrap_or(0) > 1000, "{:?}", u.packets);
    assert!(u.lost_percent.unwrap_or(100.0) < 10.0);
}
