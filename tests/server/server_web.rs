//! The browser test's routes (src/server/web/, docs/web.md) under hostile and careless clients,
//! through the real server: nothing outside the route table is served (no file, however the
//! path is spelled), bodies without a running test are refused on their head before a byte of
//! them is read, tests are bounded per device and in all, a session is its device's alone, a
//! download is capped and cut when its reader stops reading, a bad result is refused, and the
//! server still serves after all that. Then `--web off`, and `--token` with its slowed guesses. About 3 s.

use crate::support::server::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn from(host: &str, port: u16) -> TcpStream {
    connect_from(host, port).unwrap()
}

/// Sends `req` on a new connection from `host` and reads its answer.
#[track_caller]
fn ask(host: &str, port: u16, req: &str) -> (u16, String, String) {
    let mut s = from(host, port);
    s.write_all(req.as_bytes()).unwrap();
    http_response(&mut s)
}

fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: r\r\n\r\n")
}

fn post(path: &str) -> String {
    format!("POST {path} HTTP/1.1\r\nHost: r\r\nContent-Length: 0\r\n\r\n")
}

/// A session's id from `/web/start`'s answer.
#[track_caller]
fn id_of(answer: &(u16, String, String)) -> String {
    assert_eq!(answer.0, 200, "{}{}", answer.1, answer.2);
    let doc: serde_json::Value = serde_json::from_str(&answer.2).unwrap();
    doc["id"].as_str().unwrap().to_string()
}

#[test]
fn web_routes_refuse_what_they_do_not_serve() {
    let (srv, port) = server_any(&["--handshake-timeout", "1"], "web");
    let (me, other, third) = ("127.0.0.1", ATTACKER, "127.0.0.3");

    // The page: self-contained, under a policy that forbids anything else.
    let (status, head, page) = ask(me, port, &get("/"));
    assert_eq!(status, 200, "{head}");
    assert!(
        head.contains("Content-Security-Policy: default-src 'none'"),
        "{head}"
    );
    assert!(head.contains("Cache-Control: no-store\r\n"), "{head}");
    assert!(page.contains("<html") && page.contains("<script"), "{page}");
    for external in ["src=\"http", "href=\"http", "src=\"//", "@import"] {
        assert!(
            !page.contains(external),
            "the page refers outside itself: {external}"
        );
    }
    // Nothing outside the table, however the path is spelled.
    for path in [
        "/../../etc/passwd",
        "/%2e%2e/%2e%2e/etc/passwd",
        "//etc/passwd",
        "/web/../../../etc/passwd",
        "/web/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
        "/etc/passwd",
        "/index.html",
        "/web/",
    ] {
        let (status, head, body) = ask(me, port, &get(path));
        assert!(matches!(status, 400 | 404), "{path}: {head}{body}");
        assert!(!body.contains("root:"), "{path} served a file: {body}");
    }

    // A body without a running test is refused on its head: 404 at once, not the 408 a
    // server waiting for the megabyte announced would give at its 1 s deadline.
    for path in [
        "/web/up?id=0123456789abcdef",
        "/web/result?id=0123456789abcdef",
    ] {
        let mut s = from(me, port);
        s.write_all(
            format!("POST {path} HTTP/1.1\r\nHost: r\r\nContent-Length: 1048576\r\n\r\n")
                .as_bytes(),
        )
        .unwrap();
        let (status, head, body) = http_response(&mut s);
        assert_eq!(status, 404, "{path}: {head}{body}");
        assert!(closed_within(&mut s, Duration::from_secs(2)), "{path}");
    }

    // One test per device, two in all; the asks are bounded.
    let mine = id_of(&ask(me, port, &post("/web/start?phase=5")));
    assert_eq!(
        ask(me, port, &post("/web/start")).0,
        429,
        "a second test from one device"
    );
    assert_eq!(ask(third, port, &post("/web/start?phase=999")).0, 400);
    assert_eq!(ask(third, port, &post("/web/start?streams=64")).0, 400);
    assert_eq!(ask(third, port, &post("/web/start?phase=-1")).0, 400);
    let theirs = id_of(&ask(other, port, &post("/web/start?phase=5")));
    let (status, _, body) = ask(third, port, &post("/web/start"));
    assert_eq!(status, 429, "a third test at once: {body}");
    assert!(body.contains("busy"), "{body}");

    // A session is its device's alone: another device's probe, download and upload on it are
    // refused (the upload before its body).
    assert_eq!(
        ask(other, port, &get(&format!("/web/ping?id={mine}"))).0,
        404
    );
    assert_eq!(
        ask(other, port, &get(&format!("/web/down?id={mine}&bytes=10"))).0,
        404
    );
    let up =
        format!("POST /web/up?id={mine} HTTP/1.1\r\nHost: r\r\nContent-Length: 1048576\r\n\r\n");
    assert_eq!(ask(other, port, &up).0, 404);
    assert_eq!(ask(me, port, &get(&format!("/web/ping?id={mine}"))).0, 200);
    assert_eq!(
        ask(other, port, &get(&format!("/web/ping?id={theirs}"))).0,
        200
    );
    // An upload larger than the page's POSTs is refused on its head (413).
    let big =
        format!("POST /web/up?id={mine} HTTP/1.1\r\nHost: r\r\nContent-Length: 99999999\r\n\r\n");
    assert_eq!(ask(me, port, &big).0, 413);

    // A download is capped, and cut when its reader stops reading.
    let mut s = from(me, port);
    s.write_all(get(&format!("/web/down?id={mine}&bytes=99999999999999")).as_bytes())
        .unwrap();
    let (status, head, len) = http_head(&mut s);
    assert_eq!(status, 200, "{head}");
    assert!(len > 0 && len <= 256 << 20, "not capped: {len}");
    // Not reading: the socket buffers fill (a second or two on loopback, autotuning still
    // growing them, longer on a loaded machine), then the server's writes make no progress for
    // its 1 s write timeout and it logs the cut. Wait (at most 20 s) for that line.
    let waited = Instant::now();
    let cut = loop {
        if srv.stderr_text().contains("HTTP: write error") {
            break true;
        }
        if waited.elapsed() > Duration::from_secs(20) {
            break false;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        cut,
        "the server kept a stalled download for 20 s: {}",
        srv.stderr_text()
    );
    let end = Instant::now() + Duration::from_secs(10);
    let (mut got, mut b) = (0usize, vec![0u8; 1 << 16]);
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let closed = loop {
        match s.read(&mut b) {
            Ok(0) => break true,
            Ok(n) => got += n,
            Err(_) => break false,
        }
        if Instant::now() > end {
            break false;
        }
    };
    assert!(
        closed,
        "the stalled download was not closed ({got} bytes read)"
    );
    assert!(
        got < len,
        "all {len} bytes came although the reader stalled"
    );

    // A result that is not the page's samples is refused; the session survives it.
    let bad =
        format!("POST /web/result?id={mine} HTTP/1.1\r\nHost: r\r\nContent-Length: 1\r\n\r\n{{");
    assert_eq!(ask(me, port, &bad).0, 400);
    assert_eq!(ask(me, port, &get(&format!("/web/ping?id={mine}"))).0, 200);

    // Still serving, and the refusals were logged.
    assert_eq!(ask(third, port, &get("/")).0, 200);
    let log = srv.stderr_text();
    assert!(log.contains("HTTP: "), "{log}");
}

#[test]
fn web_off_and_behind_a_token() {
    let (_off, port) = server_any(&["--web", "off"], "web-off");
    for req in [get("/"), post("/web/start"), get("/web/ping?id=1")] {
        let (status, _, body) = ask("127.0.0.1", port, &req);
        assert_eq!(status, 404, "{req}: {body}");
    }
    let (_tok, port) = server_any(&["--token", "s3cret"], "web-token");
    assert_eq!(ask("127.0.0.1", port, &get("/")).0, 401);
    // A wrong guess slows its address down (429 during its wait, even with the right token),
    // not anyone else's.
    let guessed = Instant::now();
    assert_eq!(ask(ATTACKER, port, &post("/web/start?token=guess")).0, 401);
    let (status, _, body) = ask(ATTACKER, port, &get("/?token=s3cret"));
    // The wait is 1 s: a machine too slow to ask again within it may see the page.
    if guessed.elapsed() < Duration::from_millis(900) {
        assert_eq!(status, 429, "{body}");
    }
    let (status, _, page) = ask("127.0.0.1", port, &get("/?token=s3cret"));
    assert_eq!(status, 200);
    assert!(page.contains("<script"));
    let id = id_of(&ask(
        "127.0.0.1",
        port,
        &post("/web/start?phase=2&token=s3cret"),
    ));
    assert_eq!(
        ask("127.0.0.1", port, &get(&format!("/web/ping?id={id}"))).0,
        401
    );
    assert_eq!(
        ask(
            "127.0.0.1",
            port,
            &get(&format!("/web/ping?id={id}&token=s3cret"))
        )
        .0,
        200
    );
}
