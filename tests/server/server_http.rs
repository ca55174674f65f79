//! HTTP/1.1 on the server's port (src/server/http/): requests are told apart from iperf3 and
//! the routerbench protocol by their first byte, answered by the route table (404, 405 with
//! `Allow`, `/metrics` only with `--monitor`), kept alive, and bounded like every connection:
//! malformed requests get their status and a close, a dribbled request is cut at the handshake
//! deadline with 408. About 3 s.

use crate::support::server::*;
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn connect(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

#[test]
fn routes_keep_alive_and_refusals() {
    let (srv, port) = server_any(&["--handshake-timeout", "1"], "http");
    // Keep-alive: three requests on one connection, each answered in turn.
    let mut s = connect(port);
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: r\r\n\r\n")
        .unwrap();
    let (status, head, body) = http_response(&mut s);
    assert_eq!(status, 404, "{head}{body}");
    assert!(body.contains("--monitor"), "{body}");
    assert!(head.contains("Cache-Control: no-store\r\n"), "{head}");
    assert!(head.contains("Connection: keep-alive\r\n"), "{head}");
    s.write_all(b"POST /metrics HTTP/1.1\r\nHost: r\r\nContent-Length: 0\r\n\r\n")
        .unwrap();
    let (status, head, _) = http_response(&mut s);
    assert_eq!(status, 405, "{head}");
    assert!(head.contains("Allow: GET, HEAD\r\n"), "{head}");
    // Two pipelined requests in one write; the second asks to close.
    s.write_all(
        b"GET /nothing HTTP/1.1\r\nHost: r\r\n\r\nGET /metrics HTTP/1.1\r\nHost: r\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let (status, _, body) = http_response(&mut s);
    assert_eq!(status, 404);
    assert!(body.contains("/nothing"), "{body}");
    let (status, head, _) = http_response(&mut s);
    assert_eq!(status, 404);
    assert!(head.contains("Connection: close\r\n"), "{head}");
    assert!(closed_within(&mut s, Duration::from_secs(2)));

    // Malformed: its status, then a close.
    for (req, want) in [
        (&b"GET / HTTP/1.1\r\nHost r\r\n\r\n"[..], 400),
        (b"GET / HTTP/3.0\r\nHost: r\r\n\r\n", 505),
        (
            b"POST / HTTP/1.1\r\nHost: r\r\nTransfer-Encoding: chunked\r\n\r\n",
            501,
        ),
        (
            b"GET /metrics HTTP/1.1\r\nHost: r\r\nContent-Length: 999999999\r\n\r\n",
            413,
        ),
    ] {
        let mut s = connect(port);
        s.write_all(req).unwrap();
        let (status, head, body) = http_response(&mut s);
        assert_eq!(status, want, "{head}{body}");
        assert!(head.contains("Connection: close\r\n"), "{head}");
        assert!(closed_within(&mut s, Duration::from_secs(2)));
    }
    // A head without end is cut at its bound (431), not read for ever.
    let mut s = connect(port);
    let mut big = b"GET / HTTP/1.1\r\nHost: r\r\n".to_vec();
    while big.len() < 20_000 {
        big.extend_from_slice(b"X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
    }
    let _ = s.write_all(&big);
    let (status, _, _) = http_response(&mut s);
    assert_eq!(status, 431);

    // A dribbled request: 408 at the 1 s deadline, however slowly its bytes keep coming.
    let mut s = connect(port);
    let started = Instant::now();
    for b in b"GET /metrics HTTP/1.1\r\nHost: r\r\n" {
        if s.write_all(&[*b]).is_err() || started.elapsed() > Duration::from_secs(3) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let (status, _, body) = http_response(&mut s);
    assert_eq!(status, 408, "{body}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    // The server still serves after all that, and logged the refusals.
    let mut s = connect(port);
    s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    assert_eq!(http_response(&mut s).0, 404);
    let log = srv.stderr_text();
    assert!(log.contains("HTTP: "), "{log}");
}
