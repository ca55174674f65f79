//! The browser test's handlers in the server's HTTP route table (`ROUTES`): each reads its
//! arguments from the request and answers with what `server::web` says (docs/web.md).

use super::{Exchange, HttpConfig, Reply};
use crate::server::web::{PAGE, Web, WebReply};
use crate::wire::http::{RequestHead, Response};
use std::net::SocketAddr;

fn off() -> Reply {
    Reply::Full(Response::text(
        404,
        "the browser test is off on this server (routerbench server --web off)",
    ))
}

fn reply(r: WebReply) -> Reply {
    match r {
        WebReply::Text(status, text) => Reply::Full(Response::text(status, &text)),
        WebReply::Json(body) => Reply::Full(Response::new(200, "application/json", body)),
        WebReply::Page => Reply::Full(
            Response::new(200, "text/html; charset=utf-8", PAGE.as_bytes())
                // Its own inline style and script, its own origin, a blob: link for the result.
                .with_header(
                    "Content-Security-Policy",
                    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                     connect-src 'self'; img-src 'self' data: blob:; base-uri 'none'; \
                     form-action 'none'",
                )
                .with_header("Referrer-Policy", "no-referrer")
                .with_header("X-Content-Type-Options", "nosniff"),
        ),
        WebReply::Download(d) => Reply::Stream {
            head: Response::new(200, "application/octet-stream", Vec::new()),
            length: d.bytes,
            body: Box::new(move |out| d.write(out)),
        },
    }
}

fn with_web(x: &Exchange<'_>, f: impl FnOnce(&Web) -> WebReply) -> Reply {
    match &x.http.web {
        Some(w) => reply(f(w)),
        None => off(),
    }
}

fn arg(x: &Exchange<'_>, name: &str) -> Option<String> {
    x.head.query_param(name).map(|v| v.into_owned())
}

pub fn page(x: &Exchange<'_>) -> Reply {
    with_web(x, |_| WebReply::Page)
}

pub fn start(x: &Exchange<'_>) -> Reply {
    let (phase, streams) = (arg(x, "phase"), arg(x, "streams"));
    with_web(x, |w| {
        w.start(
            x.peer.ip(),
            x.head.header("host"),
            phase.as_deref(),
            streams.as_deref(),
        )
    })
}

pub fn ping(x: &Exchange<'_>) -> Reply {
    let id = arg(x, "id");
    with_web(x, |w| w.ping(x.peer.ip(), id.as_deref()))
}

pub fn down(x: &Exchange<'_>) -> Reply {
    let (id, bytes) = (arg(x, "id"), arg(x, "bytes"));
    with_web(x, |w| w.down(x.peer.ip(), id.as_deref(), bytes.as_deref()))
}

pub fn up(x: &Exchange<'_>) -> Reply {
    let id = arg(x, "id");
    with_web(x, |w| w.up(x.peer.ip(), id.as_deref(), x.body, x.head_at))
}

pub fn router(x: &Exchange<'_>) -> Reply {
    let (id, from) = (arg(x, "id"), arg(x, "from"));
    with_web(x, |w| w.router(x.peer.ip(), id.as_deref(), from.as_deref()))
}

pub fn result(x: &Exchange<'_>) -> Reply {
    let id = arg(x, "id");
    with_web(x, |w| w.result(x.peer.ip(), id.as_deref(), x.body))
}

/// A body for the browser test's routes is read into memory only for a client with a test
/// running: anyone else's upload or result is refused on its head (404), so bodies cannot
/// fill the server's memory.
pub fn refuse_before_body(
    http: &HttpConfig,
    head: &RequestHead<'_>,
    peer: SocketAddr,
) -> Option<Response> {
    if !matches!(head.path, "/web/up" | "/web/result") {
        return None;
    }
    let Some(w) = &http.web else {
        return Some(Response::text(
            404,
            "the browser test is off on this server",
        ));
    };
    let id = head.query_param("id");
    if w.has_session(peer.ip(), id.as_deref()) {
        None
    } else {
        Some(Response::text(
            404,
            "no such browser test (it ended, or another device started it): press Start again",
        ))
    }
}
