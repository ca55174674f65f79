//! Byte-level tests of the HTTP/1.1 parser and writer (smoltcp's shape: parse a captured
//! request, emit and compare bytes, then every refusal).

use super::*;

/// A scrape as Prometheus 2.42 (Debian 12's `prometheus`) sent it to a listener on
/// 127.0.0.1:39123 (captured with a one-shot socket; its Accept asks for OpenMetrics first,
/// then text 0.0.4).
static PROMETHEUS_SCRAPE: &[u8] = b"GET /metrics HTTP/1.1\r\n\
Host: 127.0.0.1:39123\r\n\
User-Agent: Prometheus/2.42.0+ds\r\n\
Accept: application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\n\
Accept-Encoding: gzip\r\n\
X-Prometheus-Scrape-Timeout-Seconds: 1\r\n\
\r\n";

fn head(buf: &[u8]) -> RequestHead<'_> {
    match RequestHead::parse(buf, &Limits::default()) {
        Ok(Parsed::Head(h)) => h,
        other => panic!("{other:?}"),
    }
}

fn error(buf: &[u8]) -> HttpError {
    match RequestHead::parse(buf, &Limits::default()) {
        Err(e) => e,
        other => panic!("expected an error, got {other:?}"),
    }
}

#[test]
fn test_parse() {
    let h = head(PROMETHEUS_SCRAPE);
    assert_eq!(h.method, Method::Get);
    assert_eq!(h.method_token, "GET");
    assert_eq!(h.path, "/metrics");
    assert_eq!(h.query, None);
    assert_eq!(h.query_param("token"), None);
    assert_eq!(h.version, Version::Http11);
    assert_eq!(h.fields.len(), 5);
    assert_eq!(h.header("HOST"), Some("127.0.0.1:39123"));
    assert_eq!(h.header("user-agent"), Some("Prometheus/2.42.0+ds"));
    assert_eq!(
        h.header_members("accept").collect::<Vec<_>>(),
        [
            "application/openmetrics-text;version=1.0.0",
            "application/openmetrics-text;version=0.0.1;q=0.75",
            "text/plain;version=0.0.4;q=0.5",
            "*/*;q=0.1"
        ]
    );
    assert_eq!(h.content_length, 0);
    assert_eq!(h.head_len, PROMETHEUS_SCRAPE.len());
    assert!(h.keep_alive());
    assert_eq!(h.bearer_token(), None);
    // The same scrape with `params: {token: [s cr/t]}` in its scrape config.
    let with_token = String::from_utf8(PROMETHEUS_SCRAPE.to_vec())
        .unwrap()
        .replace("/metrics ", "/metrics?token=s+cr%2Ft ");
    let h = head(with_token.as_bytes());
    assert_eq!((h.path, h.query), ("/metrics", Some("token=s+cr%2Ft")));
    assert_eq!(h.query_param("token").as_deref(), Some("s cr/t"));
    assert_eq!(h.query_param("missing"), None);
}

#[test]
fn test_parse_incomplete_at_every_cut() {
    // Every prefix of a request is "incomplete", never an error or a wrong head.
    for cut in 0..PROMETHEUS_SCRAPE.len() {
        assert_eq!(
            RequestHead::parse(&PROMETHEUS_SCRAPE[..cut], &Limits::default()),
            Ok(Parsed::Incomplete),
            "cut at {cut}"
        );
    }
}

#[test]
fn test_parse_body_and_pipelined() {
    let two =
        b"POST /upload HTTP/1.1\r\nhost: x\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.0\r\n\r\n";
    let h = head(two);
    assert_eq!(h.method, Method::Post);
    assert_eq!(h.content_length, 5);
    assert_eq!(&two[h.head_len..h.head_len + 5], b"hello");
    let next = head(&two[h.head_len + 5..]);
    assert_eq!(
        (next.method, next.path, next.version),
        (Method::Get, "/", Version::Http10)
    );
    assert!(!next.keep_alive(), "HTTP/1.0 closes unless asked");
}

#[test]
fn test_parse_tolerances() {
    // Bare LF line ends, leading empty lines, absolute form, blanks around a value, repeated
    // equal Content-Lengths, `*` for OPTIONS.
    let h = head(b"\r\n\nGET http://router:5201/metrics?x=1 HTTP/1.1\nHost: r\nX-A: \t v \t\n\n");
    assert_eq!(
        (h.path, h.query, h.header("x-a")),
        ("/metrics", Some("x=1"), Some("v"))
    );
    let h = head(b"GET http://router HTTP/1.1\r\nHost: r\r\n\r\n");
    assert_eq!(h.path, "/");
    let h = head(b"PUT / HTTP/1.1\r\nHost: r\r\nContent-Length: 3, 3\r\ncontent-length: 3\r\n\r\n");
    assert_eq!(h.content_length, 3);
    let h = head(b"OPTIONS * HTTP/1.1\r\nHost: r\r\n\r\n");
    assert_eq!((h.method, h.path), (Method::Options, "*"));
    let h = head(b"BREW /pot HTTP/1.1\r\nHost: r\r\n\r\n");
    assert_eq!((h.method, h.method_token), (Method::Other, "BREW"));
    let h = head(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n");
    assert!(h.keep_alive());
    let h = head(b"GET / HTTP/1.1\r\nHost: r\r\nConnection: upgrade, close\r\n\r\n");
    assert!(!h.keep_alive());
    let h = head(b"GET / HTTP/1.1\r\nHost: r\r\nauthorization: bearer abc\r\n\r\n");
    assert_eq!(h.bearer_token(), Some("abc"));
}

#[test]
fn test_parse_refusals() {
    let cases: &[(&[u8], HttpError, u16)] = &[
        (b"GET /\r\n\r\n", HttpError::BadRequestLine, 400),
        (b"GET  / HTTP/1.1\r\n\r\n", HttpError::BadRequestLine, 400),
        (b"GET / HTTP/1.1 x\r\n\r\n", HttpError::BadRequestLine, 400),
        (b"G(T / HTTP/1.1\r\n\r\n", HttpError::BadRequestLine, 400),
        (
            b"GET / HTTP/2.0\r\nHost: r\r\n\r\n",
            HttpError::Version,
            505,
        ),
        (b"GET / SPDY/3\r\n\r\n", HttpError::BadRequestLine, 400),
        (
            b"GET metrics HTTP/1.1\r\nHost: r\r\n\r\n",
            HttpError::BadTarget,
            400,
        ),
        (
            b"GET /a\x01b HTTP/1.1\r\nHost: r\r\n\r\n",
            HttpError::BadTarget,
            400,
        ),
        (
            b"GET /a#frag HTTP/1.1\r\nHost: r\r\n\r\n",
            HttpError::BadTarget,
            400,
        ),
        (
            b"GET /\xff HTTP/1.1\r\nHost: r\r\n\r\n",
            HttpError::BadRequestLine,
            400,
        ),
        (b"GET / HTTP/1.1\r\n\r\n", HttpError::NoHost, 400),
        (
            b"GET / HTTP/1.1\r\nHost : r\r\n\r\n",
            HttpError::BadField,
            400,
        ),
        (
            b"GET / HTTP/1.1\r\nHost r\r\n\r\n",
            HttpError::BadField,
            400,
        ),
        (b"GET / HTTP/1.1\r\n: r\r\n\r\n", HttpError::BadField, 400),
        (
            b"GET / HTTP/1.1\r\nHost: r\0\r\n\r\n",
            HttpError::BadField,
            400,
        ),
        (
            b"GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n",
            HttpError::BadField,
            400,
        ),
        (
            b"GET / HTTP/1.1\r\nHost: r\r\n folded\r\n\r\n",
            HttpError::ObsFold,
            400,
        ),
        (
            b"GET / HTTP/1.1\r\nHost: r\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            HttpError::BadContentLength,
            400,
        ),
        (
            b"GET / HTTP/1.1\r\nHost: r\r\nContent-Length: -1\r\n\r\n",
            HttpError::BadContentLength,
            400,
        ),
        (
            b"GET / HTTP/1.1\r\nHost: r\r\nContent-Length: +1\r\n\r\n",
            HttpError::BadContentLength,
            400,
        ),
        (
            b"GET / HTTP/1.1\r\nHost: r\r\nContent-Length: 99999999999999999999\r\n\r\n",
            HttpError::BadContentLength,
            400,
        ),
        (
            b"GET / HTTP/1.1\r\nHost: r\r\nContent-Length:\r\n\r\n",
            HttpError::BadContentLength,
            400,
        ),
        (
            b"POST / HTTP/1.1\r\nHost: r\r\nTransfer-Encoding: chunked\r\n\r\n",
            HttpError::TransferEncoding,
            501,
        ),
        (
            b"POST / HTTP/1.1\r\nHost: r\r\nContent-Length: 65537\r\n\r\n",
            HttpError::BodyTooLarge {
                got: 65537,
                max: 65536,
            },
            413,
        ),
    ];
    for (bytes, want, status) in cases {
        let got = error(bytes);
        assert_eq!(&got, want, "{}", String::from_utf8_lossy(bytes));
        assert_eq!(got.status(), *status, "{got}");
    }
}

#[test]
fn test_garbage_is_refused_as_it_arrives() {
    // Before its line ends: a method that is no token, a target with a control byte, a version
    // that cannot become HTTP/d.d, a method too long.
    for bytes in [
        &b"G\x00"[..],
        b"GE(",
        b"GET /a\x7f",
        b"GET / HTTQ",
        b"GET / HTTP/1.1x",
        b"GET / HTTP/11",
        b"ABCDEFGHIJKLMNOPQ",
    ] {
        assert!(
            RequestHead::parse(bytes, &Limits::default()).is_err(),
            "{}",
            String::from_utf8_lossy(bytes)
        );
    }
    for bytes in [
        &b"GET"[..],
        b"GET /metrics?x",
        b"GET / HTTP/1",
        b"GET / HTTP/1.1\r",
    ] {
        assert_eq!(
            RequestHead::parse(bytes, &Limits::default()),
            Ok(Parsed::Incomplete),
            "{}",
            String::from_utf8_lossy(bytes)
        );
    }
}

#[test]
fn test_parse_bounds() {
    let l = Limits {
        max_request_line: 20,
        max_field_line: 16,
        max_fields: 2,
        max_head: 60,
        max_body: 10,
    };
    fn parse_with<'a>(b: &'a [u8], l: &Limits) -> Result<Parsed<'a>, HttpError> {
        RequestHead::parse(b, l)
    }
    let parse = |b: &'static [u8]| parse_with(b, &l);
    // A request line over the bound is refused before its end arrives.
    assert_eq!(
        parse(b"GET /aaaaaaaaaaaaaaaaa"),
        Err(HttpError::RequestLineTooLong(20))
    );
    assert_eq!(parse(b"GET /aaaaaaaaaaaaaaa"), Ok(Parsed::Incomplete));
    assert_eq!(
        parse(b"GET /aaaaaaaaaaaaaaaaaaa HTTP/1.1\r\n"),
        Err(HttpError::RequestLineTooLong(20))
    );
    // A field line likewise, ended or not.
    let mut long = b"GET / HTTP/1.0\r\nX: ".to_vec();
    long.extend_from_slice(&[b'v'; 14]);
    assert_eq!(parse_with(&long, &l), Err(HttpError::FieldTooLong(16)));
    long.extend_from_slice(b"\r\n\r\n");
    assert_eq!(parse_with(&long, &l), Err(HttpError::FieldTooLong(16)));
    assert_eq!(
        parse(b"GET / HTTP/1.0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n"),
        Err(HttpError::TooManyFields(2))
    );
    // Many short empty-value lines cannot grow the head past its bound either.
    let l2 = Limits {
        max_fields: 1000,
        ..l
    };
    let mut many = b"GET / HTTP/1.0\r\n".to_vec();
    for _ in 0..20 {
        many.extend_from_slice(b"A: 1\r\n");
    }
    assert_eq!(
        RequestHead::parse(&many, &l2),
        Err(HttpError::HeadTooLarge(60))
    );
    let l3 = Limits {
        max_field_line: 32,
        ..l
    };
    assert_eq!(
        RequestHead::parse(b"GET / HTTP/1.0\r\nContent-Length: 11\r\n\r\n", &l3),
        Err(HttpError::BodyTooLarge { got: 11, max: 10 })
    );
    assert!(matches!(
        RequestHead::parse(b"GET / HTTP/1.0\r\nContent-Length: 10\r\n\r\n", &l3),
        Ok(Parsed::Head(_))
    ));
}

#[test]
fn test_first_byte() {
    for m in [b'G', b'H', b'P', b'D', b'O', b'C', b'T'] {
        assert!(starts_request(m));
    }
    // iperf3 cookies are [a-z2-7]; the routerbench magic starts with 0xFF.
    for b in b"abcdefghijklmnopqrstuvwxyz234567".iter().chain(&[0xFF, 0]) {
        assert!(!starts_request(*b), "{b:#x}");
    }
}

#[test]
fn test_percent_decode() {
    assert_eq!(percent_decode("a%2Fb%3d+c"), "a/b= c");
    assert_eq!(percent_decode("100%"), "100%");
    assert_eq!(percent_decode("%zz%4"), "%zz%4");
    assert_eq!(percent_decode("%ff"), "\u{fffd}");
    assert!(matches!(percent_decode("plain"), Cow::Borrowed("plain")));
    let pairs: Vec<_> = query_pairs("a=1&&b&c=%41").collect();
    assert_eq!(
        pairs,
        [
            (Cow::from("a"), Cow::from("1")),
            (Cow::from("b"), Cow::from("")),
            (Cow::from("c"), Cow::from("A"))
        ]
    );
}

#[test]
fn test_emit() {
    let r = Response::text(404, "no route /x: the server serves /metrics");
    assert_eq!(
        r.emit(true, false),
        b"HTTP/1.1 404 Not Found\r\n\
Content-Type: text/plain; charset=utf-8\r\n\
Content-Length: 40\r\n\
Cache-Control: no-store\r\n\
Connection: keep-alive\r\n\
\r\n\
no route /x: the server serves /metrics\n"
    );
    let r = Response::new(200, "text/plain; version=0.0.4", "a 1\n")
        .with_header("Allow", "GET, HEAD\r\nX-Injected: 1");
    assert_eq!(
        r.emit(false, true),
        b"HTTP/1.1 200 OK\r\n\
Content-Type: text/plain; version=0.0.4\r\n\
Allow: GET, HEADX-Injected: 1\r\n\
Content-Length: 4\r\n\
Cache-Control: no-store\r\n\
Connection: close\r\n\
\r\n"
    );
}

#[test]
fn test_every_error_has_a_reason_phrase() {
    for e in [
        HttpError::RequestLineTooLong(1),
        HttpError::FieldTooLong(1),
        HttpError::BodyTooLarge { got: 1, max: 0 },
        HttpError::BadTarget,
        HttpError::TransferEncoding,
        HttpError::Version,
    ] {
        assert!(!reason(e.status()).is_empty(), "{e}");
    }
}
