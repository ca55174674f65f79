//! The route table's answers: 404, 405 with `Allow`, tokens (bearer and query), backoff.

use super::*;
use crate::results::metrics::Format;
use crate::wire::http::Limits;

struct Fixed;

impl metrics::Exposition for Fixed {
    fn scrape(&self, format: Format) -> Result<Vec<u8>, String> {
        Ok(match format {
            Format::Text => b"up 1\n".to_vec(),
            Format::OpenMetrics => b"up 1\n# EOF\n".to_vec(),
        })
    }
}

fn peer() -> SocketAddr {
    "192.0.2.7:40000".parse().unwrap()
}

fn reply(http: &HttpConfig, req: &str) -> Response {
    let head = match RequestHead::parse(req.as_bytes(), &Limits::default()) {
        Ok(Parsed::Head(h)) => h,
        other => panic!("{other:?}"),
    };
    let body = &req.as_bytes()[head.head_len..];
    match answer(http, &head, body, peer()) {
        Reply::Full(r) => r,
        Reply::Stream { .. } => panic!("no streamed routes here"),
    }
}

fn body(r: &Response) -> String {
    String::from_utf8(r.body.clone()).unwrap()
}

fn with_metrics(token: Option<&str>) -> HttpConfig {
    HttpConfig {
        metrics: Some(Arc::new(Fixed)),
        monitor_token: token.map(str::to_string),
        ..HttpConfig::default()
    }
}

#[test]
fn unknown_paths_are_404_and_other_methods_405() {
    let http = with_metrics(None);
    let r = reply(&http, "GET /nothing HTTP/1.1\r\nHost: r\r\n\r\n");
    assert_eq!(r.status, 404);
    assert!(body(&r).contains("/metrics"), "{}", body(&r));
    for m in ["POST", "PUT", "DELETE", "OPTIONS", "BREW"] {
        let r = reply(
            &http,
            &format!("{m} /metrics HTTP/1.1\r\nHost: r\r\nContent-Length: 0\r\n\r\n"),
        );
        assert_eq!(r.status, 405, "{m}");
        assert!(
            r.headers.contains(&("Allow", "GET, HEAD".to_string())),
            "{:?}",
            r.headers
        );
    }
    let r = reply(&http, "GET /metrics HTTP/1.1\r\nHost: r\r\n\r\n");
    assert_eq!((r.status, body(&r).as_str()), (200, "up 1\n"));
    assert!(
        r.headers
            .contains(&("Content-Type", Format::Text.content_type().into()))
    );
    let r = reply(
        &http,
        "GET /metrics HTTP/1.1\r\nHost: r\r\nAccept: application/openmetrics-text\r\n\r\n",
    );
    assert_eq!(body(&r), "up 1\n# EOF\n");
    // A body on a route that takes none.
    let r = reply(
        &http,
        "GET /metrics HTTP/1.1\r\nHost: r\r\nContent-Length: 2\r\n\r\nab",
    );
    assert_eq!(r.status, 413);
}

#[test]
fn metrics_without_monitor_say_how_to_get_them() {
    let r = reply(&HttpConfig::default(), "GET /metrics HTTP/1.0\r\n\r\n");
    assert_eq!(r.status, 404);
    assert!(body(&r).contains("--monitor"), "{}", body(&r));
}

#[test]
fn tokens_by_bearer_or_query() {
    let http = with_metrics(Some("s3cret"));
    let r = reply(&http, "GET /metrics HTTP/1.1\r\nHost: r\r\n\r\n");
    assert_eq!(r.status, 401);
    assert!(body(&r).contains("Bearer"), "{}", body(&r));
    assert!(r.headers.iter().any(|(n, _)| *n == "WWW-Authenticate"));
    let r = reply(
        &http,
        "GET /metrics HTTP/1.1\r\nHost: r\r\nAuthorization: Bearer s3cret\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    let r = reply(
        &http,
        "GET /metrics?token=s3cret HTTP/1.1\r\nHost: r\r\n\r\n",
    );
    assert_eq!(r.status, 200);
    let r = reply(
        &http,
        "GET /metrics?token=s3cre HTTP/1.1\r\nHost: r\r\n\r\n",
    );
    assert_eq!(r.status, 401);
    assert!(body(&r).contains("wrong token"), "{}", body(&r));
    // The wrong guess made this address wait: the right token right away is refused too.
    let r = reply(
        &http,
        "GET /metrics?token=s3cret HTTP/1.1\r\nHost: r\r\n\r\n",
    );
    assert_eq!(r.status, 429, "{}", body(&r));
    assert!(r.headers.iter().any(|(n, _)| *n == "Retry-After"));
    // The server's --token does not open the monitor's route when --monitor-token differs.
    let http = HttpConfig {
        token: Some("other".into()),
        ..with_metrics(Some("s3cret"))
    };
    let r = reply(
        &http,
        "GET /metrics HTTP/1.1\r\nHost: r\r\nAuthorization: Bearer other\r\n\r\n",
    );
    assert_eq!(r.status, 401);
}

#[test]
fn every_route_is_well_formed() {
    for r in ROUTES {
        assert!(r.path.starts_with('/'), "{}", r.path);
        assert!(!r.methods.is_empty(), "{}", r.path);
        assert_eq!(
            ROUTES.iter().filter(|o| o.path == r.path).count(),
            1,
            "{} twice",
            r.path
        );
    }
}
