//! Interop with Debian's iperf3 3.12: iperf3 client → routerbench server and routerbench
//! client → iperf3 server, for TCP, -R, --bidir, -P 4, -u -b 100M and -n 50M. The iperf3 side
//! must exit 0 and both sides must agree on the bytes of each direction: exactly up to one
//! block when routerbench receives (it drains what is in flight at TEST_END), and within 10 %
//! when iperf3 receives (iperf3 drops in-flight data by design, docs/protocols/iperf3.md §9) or for UDP
//! (datagrams the kernel drops on a loaded box are real loss).

use crate::support::iperf3::*;
use serde_json::Value;
use std::time::Duration;

#[derive(Clone, Copy, PartialEq)]
enum Ours {
    Server,
    Client,
}

struct Run {
    client: Value,
    server: Value,
}

fn run_pair(ours: Ours, port: u16, opts: &[&str]) -> Run {
    run_pair_with(&iperf3(), ours, port, opts)
}

/// iperf3 3.21 (`crate::support::iperf3::iperf3_new`); None, with a line saying the test skipped,
/// where it is absent.
fn iperf3_321() -> Option<std::path::PathBuf> {
    let p = iperf3_new();
    if p.is_none() {
        eprintln!("skipped: no iperf3 3.21 ($IPERF3_NEW or ../shared/peers/iperf3-3.21)");
    }
    p
}

fn run_pair_with(ip3: &std::path::Path, ours: Ours, port: u16, opts: &[&str]) -> Run {
    let ip3 = ip3.to_path_buf();
    let rb = std::path::Path::new(ROUTERBENCH);
    let p = port.to_string();
    let server_args: Vec<&str> = match ours {
        Ours::Server => vec!["server", "-p", &p, "-1", "-J", "--max-duration", "60"],
        Ours::Client => vec!["-s", "-p", &p, "-1", "-J"],
    };
    let mut server = Proc::start(
        if ours == Ours::Server { rb } else { &ip3 },
        &server_args,
        &format!("srv{port}"),
    );
    wait_listening(port);
    let mut client_args: Vec<&str> = match ours {
        Ours::Server => vec!["-c", "127.0.0.1", "-p", &p, "-J"],
        Ours::Client => vec!["client", "127.0.0.1", "-p", &p, "-J"],
    };
    client_args.extend_from_slice(opts);
    let mut client = Proc::start(
        if ours == Ours::Client { rb } else { &ip3 },
        &client_args,
        &format!("cli{port}"),
    );
    let cst = client
        .wait(Duration::from_secs(40))
        .expect("client did not finish in 40 s");
    let sst = server
        .wait(Duration::from_secs(20))
        .expect("one-off server did not exit in 20 s");
    assert!(
        cst.success(),
        "client failed: {cst}\n{}\n{}",
        client.stdout_text(),
        client.stderr_text()
    );
    assert!(
        sst.success(),
        "server failed: {sst}\n{}",
        server.stderr_text()
    );
    Run {
        client: client.json(),
        server: server.json(),
    }
}

/// Checks one direction: `sender` doc's `sent_key` against `receiver` doc's `recv_key`.
fn check_direction(
    sender: &Value,
    receiver: &Value,
    keys: (&str, &str),
    ours_receives: bool,
    udp: bool,
) -> (u64, u64) {
    let blk = receiver["start"]["test_start"]["blksize"]
        .as_u64()
        .or_else(|| sender["start"]["test_start"]["blksize"].as_u64())
        .expect("blksize");
    let sent = end_bytes(sender, keys.0);
    let recv = end_bytes(receiver, keys.1);
    assert!(sent > 0, "nothing sent ({})", keys.0);
    // iperf3 3.21's sender threads may write a last block (UDP: a last GSO buffer) after the
    // test's end without counting it: a receiver that drains (ours) can see up to that more.
    let slack = match (ours_receives, udp) {
        (true, false) => blk,
        (true, true) => 65507,
        _ => 0,
    };
    assert!(recv <= sent + slack, "received {recv} > sent {sent}");
    if ours_receives && !udp {
        assert!(
            sent.saturating_sub(recv) <= blk,
            "routerbench received {recv} of {sent}: more than one block ({blk}) apart"
        );
    } else {
        assert!(
            recv as f64 >= 0.9 * sent as f64,
            "received {recv} of {sent}"
        );
    }
    (sent, recv)
}

fn check(run: &Run, ours: Ours, reverse: bool, bidir: bool, udp: bool) {
    let (c, s) = (&run.client, &run.server);
    // Main direction: client → server, or server → client with -R.
    let (snd, rcv, ours_receives) = if reverse {
        (s, c, ours == Ours::Client)
    } else {
        (c, s, ours == Ours::Server)
    };
    check_direction(snd, rcv, ("sum_sent", "sum_received"), ours_receives, udp);
    if bidir {
        check_direction(
            s,
            c,
            ("sum_sent_bidir_reverse", "sum_received_bidir_reverse"),
            ours == Ours::Client,
            udp,
        );
    }
}

macro_rules! interop {
    ($name:ident, $ours:expr, $port:expr, [$($opt:expr),*], reverse=$rev:expr, bidir=$bidir:expr, udp=$udp:expr) => {
        #[test]
        fn $name() {
            let run = run_pair($ours, $port, &[$($opt),*]);
            check(&run, $ours, $rev, $bidir, $udp);
        }
    };
}

interop!(
    iperf3_client_tcp,
    Ours::Server,
    25301,
    ["-t", "2"],
    reverse = false,
    bidir = false,
    udp = false
);
interop!(
    iperf3_client_reverse,
    Ours::Server,
    25302,
    ["-t", "2", "-R"],
    reverse = true,
    bidir = false,
    udp = false
);
interop!(
    iperf3_client_bidir,
    Ours::Server,
    25303,
    ["-t", "2", "--bidir"],
    reverse = false,
    bidir = true,
    udp = false
);
interop!(
    iperf3_client_parallel4,
    Ours::Server,
    25304,
    ["-t", "2", "-P", "4"],
    reverse = false,
    bidir = false,
    udp = false
);
interop!(
    iperf3_client_udp,
    Ours::Server,
    25305,
    ["-t", "2", "-u", "-b", "100M"],
    reverse = false,
    bidir = false,
    udp = true
);
interop!(
    routerbench_client_tcp,
    Ours::Client,
    25311,
    ["-t", "2"],
    reverse = false,
    bidir = false,
    udp = false
);
interop!(
    routerbench_client_reverse,
    Ours::Client,
    25312,
    ["-t", "2", "-R"],
    reverse = true,
    bidir = false,
    udp = false
);
interop!(
    routerbench_client_bidir,
    Ours::Client,
    25313,
    ["-t", "2", "--bidir"],
    reverse = false,
    bidir = true,
    udp = false
);
interop!(
    routerbench_client_parallel4,
    Ours::Client,
    25314,
    ["-t", "2", "-P", "4"],
    reverse = false,
    bidir = false,
    udp = false
);
interop!(
    routerbench_client_udp,
    Ours::Client,
    25315,
    ["-t", "2", "-u", "-b", "100M"],
    reverse = false,
    bidir = false,
    udp = true
);

const FIFTY_MIB: u64 = 50 * 1024 * 1024;

fn check_bytes_test(run: &Run, ours: Ours) {
    let (sent, _) = check_direction(
        &run.client,
        &run.server,
        ("sum_sent", "sum_received"),
        ours == Ours::Server,
        false,
    );
    assert!(sent >= FIFTY_MIB, "-n 50M sent only {sent}");
    assert!(sent <= FIFTY_MIB + 16 * 131072, "-n 50M sent {sent}");
    assert_eq!(
        run.client["start"]["test_start"]["bytes"].as_u64(),
        Some(FIFTY_MIB)
    );
}

#[test]
fn iperf3_client_bytes() {
    let run = run_pair(Ours::Server, 25306, &["-n", "50M"]);
    check_bytes_test(&run, Ours::Server);
}

#[test]
fn routerbench_client_bytes() {
    let run = run_pair(Ours::Client, 25316, &["-n", "50M"]);
    check_bytes_test(&run, Ours::Client);
}

#[test]
fn udp_details_match_iperf3_schema() {
    let run = run_pair(Ours::Client, 25317, &["-t", "2", "-u", "-b", "50M"]);
    let s = &run.client["end"]["streams"][0]["udp"];
    assert!(s["packets"].as_i64().unwrap_or(0) > 100, "{s}");
    assert!(s["jitter_ms"].as_f64().is_some(), "{s}");
    assert_eq!(run.client["start"]["test_start"]["protocol"], "UDP");
    // The UDP block defaults to the control connection's MSS (32768 on Linux loopback), and the
    // server used the same length.
    let blk = run.client["start"]["test_start"]["blksize"]
        .as_u64()
        .unwrap_or(0);
    assert!(
        blk > 1460 && blk <= 65507,
        "UDP len {blk} should come from the loopback MSS"
    );
    assert_eq!(
        run.server["start"]["test_start"]["blksize"].as_u64(),
        Some(blk)
    );
    // Our client's datagram count matches what iperf3's server saw (highest sequence), up to
    // the last datagrams: iperf3 3.12 stops reading data once TEST_END arrives, and on a busy
    // box that can be before it read the final one or two.
    let server_packets = run.server["end"]["sum_received"]["packets"]
        .as_i64()
        .expect("server packets");
    let ours = s["packets"].as_i64().expect("client packets");
    assert!(
        (ours - 2..=ours).contains(&server_packets),
        "client sent {ours} datagrams, iperf3 server saw {server_packets}"
    );
}

#[test]
fn two_iperf3_clients_at_once() {
    // iperf3 refuses a second client while a test runs; routerbench runs both.
    let ip3 = iperf3();
    let port = 25318u16;
    let p = port.to_string();
    let mut server = Proc::start(
        std::path::Path::new(ROUTERBENCH),
        &["server", "-p", &p, "--max-tests", "3", "-J"],
        "two-srv",
    );
    wait_listening(port);
    let mut tcp = Proc::start(
        &ip3,
        &["-c", "127.0.0.1", "-p", &p, "-t", "3", "-P", "2", "-J"],
        "two-tcp",
    );
    std::thread::sleep(Duration::from_millis(300));
    let mut udp = Proc::start(
        &ip3,
        &[
            "-c",
            "127.0.0.1",
            "-p",
            &p,
            "-t",
            "2",
            "-u",
            "-b",
            "20M",
            "-J",
        ],
        "two-udp",
    );
    let mut rev = Proc::start(
        &ip3,
        &["-c", "127.0.0.1", "-p", &p, "-t", "2", "-R", "-J"],
        "two-rev",
    );
    for (name, proc_) in [("tcp", &mut tcp), ("udp", &mut udp), ("reverse", &mut rev)] {
        let st = proc_
            .wait(Duration::from_secs(30))
            .unwrap_or_else(|| panic!("{name} client hung"));
        assert!(
            st.success(),
            "{name} client failed: {}\n{}",
            proc_.stdout_text(),
            proc_.stderr_text()
        );
        assert!(end_bytes(&proc_.json(), "sum_received") > 0, "{name}");
    }
    let st = server
        .wait(Duration::from_secs(15))
        .expect("server did not stop after 3 tests");
    assert!(st.success());
}

/// UDP accounting on the receiver's side is exact: datagrams received (bytes / len) plus the
/// loss iperf3's arithmetic infers equal the highest sequence number seen, and the receiver
/// saw at most what the sender sent.
fn check_udp_counts(sender: &Value, receiver: &Value, len: u64, ours_receives: bool) {
    let r = &receiver["end"]["streams"][0]["udp"];
    let s = &sender["end"]["streams"][0]["udp"];
    let bytes = r["bytes"].as_u64().expect("receiver bytes");
    let packets = r["packets"].as_u64().expect("receiver packets");
    let lost = r["lost_packets"].as_u64().expect("receiver lost_packets");
    assert_eq!(bytes % len, 0, "whole datagrams only: {bytes}");
    assert!(lost <= packets, "lost {lost} of {packets}");
    if ours_receives {
        // (iperf3's own receivers report per-stream bytes on another basis.)
        assert_eq!(
            bytes / len + lost,
            packets,
            "received + lost = highest sequence"
        );
    }
    let sent = s["packets"].as_u64().expect("sender packets");
    assert!(
        packets <= sent,
        "receiver saw sequence {packets} > {sent} sent"
    );
    assert!(packets > 0);
}

macro_rules! interop_peer {
    ($name:ident, $peer:expr, $ours:expr, $port:expr, [$($opt:expr),*], reverse=$rev:expr, udp=$udp:expr) => {
        #[test]
        fn $name() {
            let Some(peer) = $peer else { return };
            let opts = [$($opt),*];
            let run = run_pair_with(&peer, $ours, $port, &opts);
            check(&run, $ours, $rev, false, $udp);
            if $udp {
                let (snd, rcv) = if $rev { (&run.server, &run.client) } else { (&run.client, &run.server) };
                let ours_receives = ($ours == Ours::Server) != $rev;
                check_udp_counts(snd, rcv, 1400, ours_receives);
            }
        }
    };
}

fn debian_iperf3() -> Option<std::path::PathBuf> {
    Some(iperf3())
}

// The zero-copy and batching modes (issue 22) against 3.21's same modes, both ways, and
// against 3.12 where it has them (-Z; UDP without --gsro, our ends batch anyway).
interop_peer!(
    ip321_client_zerocopy,
    iperf3_321(),
    Ours::Server,
    25341,
    ["-t", "2", "-Z"],
    reverse = false,
    udp = false
);
interop_peer!(
    ip321_client_skip_rx_copy,
    iperf3_321(),
    Ours::Server,
    25342,
    ["-t", "2", "--skip-rx-copy"],
    reverse = false,
    udp = false
);
interop_peer!(
    ip321_client_reverse_zerocopy,
    iperf3_321(),
    Ours::Server,
    25343,
    ["-t", "2", "-R", "-Z"],
    reverse = true,
    udp = false
);
interop_peer!(
    ip321_client_gsro,
    iperf3_321(),
    Ours::Server,
    25344,
    ["-t", "2", "-u", "--gsro", "-b", "300M", "-l", "1400"],
    reverse = false,
    udp = true
);
interop_peer!(
    rb_client_zerocopy_ip321,
    iperf3_321(),
    Ours::Client,
    25345,
    ["-t", "2", "-Z"],
    reverse = false,
    udp = false
);
interop_peer!(
    rb_client_reverse_skip_rx_copy_ip321,
    iperf3_321(),
    Ours::Client,
    25346,
    ["-t", "2", "-R", "--skip-rx-copy"],
    reverse = true,
    udp = false
);
interop_peer!(
    rb_client_gsro_ip321,
    iperf3_321(),
    Ours::Client,
    25347,
    ["-t", "2", "-u", "--gsro", "-b", "100M", "-l", "1400"],
    reverse = false,
    udp = true
);
interop_peer!(
    rb_client_reverse_gsro_ip321,
    iperf3_321(),
    Ours::Client,
    25348,
    ["-t", "2", "-u", "-R", "--gsro", "-b", "300M", "-l", "1400"],
    reverse = true,
    udp = true
);
interop_peer!(
    ip312_client_zerocopy,
    debian_iperf3(),
    Ours::Server,
    25349,
    ["-t", "2", "-Z", "-R"],
    reverse = true,
    udp = false
);
interop_peer!(
    rb_client_zerocopy_ip312,
    debian_iperf3(),
    Ours::Client,
    25350,
    ["-t", "2", "-Z"],
    reverse = false,
    udp = false
);
interop_peer!(
    rb_client_udp_batched_ip312,
    debian_iperf3(),
    Ours::Client,
    25351,
    ["-t", "2", "-u", "-b", "100M", "-l", "1400"],
    reverse = false,
    udp = true
);
interop_peer!(
    ip312_client_udp_reverse_batched,
    debian_iperf3(),
    Ours::Server,
    25352,
    ["-t", "2", "-u", "-R", "-b", "100M", "-l", "1400"],
    reverse = true,
    udp = true
);
