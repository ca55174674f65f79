//! HTTP/1.1 on the server's port: a connection whose first byte starts a request method (an
//! upper-case letter, which no iperf3 cookie and no routerbench magic starts with) comes here
//! from `conn.rs`. The [`ROUTES`] table says which path serves what, with which methods, behind
//! which token; anything else is 404, a known path with another method 405.
//!
//! The connection keeps the limits of every other connection of the server: it holds its
//! fair-pool seat from the accept (pending, so a lighter host's newcomer may take it under
//! pressure, even from an idle keep-alive connection), each request must be complete within the
//! handshake timeout (a whole-message deadline, however slowly its bytes come), requests per
//! connection are capped, and a malformed request gets its status (400, 413, 414, 431, 501,
//! 505) and a close. Tokens are the server's own (`--token`, or `--monitor-token` for the
//! monitor's routes), as `Authorization: Bearer T` or `?token=T`; wrong guesses slow their
//! address down as the routerbench protocol's do.

pub mod metrics;
pub mod web;

use super::Shared;
use crate::service::backoff::{self, Backoff};
use crate::service::fair::Seat;
use crate::wire::http::{HttpError, Limits, Method, Parsed, RequestHead, Response};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Who may use a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    /// Anyone who reaches the port.
    Open,
    /// The server's `--token`, if it has one.
    Token,
    /// The monitor agent's token (`--monitor-token`, else `--token`), if it has one.
    MonitorToken,
}

/// Writes a streamed body to the connection.
pub type BodyWriter = Box<dyn FnOnce(&mut dyn Write) -> std::io::Result<()>>;

/// What a route answers.
pub enum Reply {
    /// A response with its body in memory.
    Full(Response),
    /// A response whose body of `length` bytes `body` writes (big downloads): the head is
    /// `head`'s status and fields.
    Stream {
        head: Response,
        length: u64,
        body: BodyWriter,
    },
}

/// One request as a route sees it.
pub struct Exchange<'a> {
    pub head: &'a RequestHead<'a>,
    /// The request's body (at most the route's `max_body` bytes).
    pub body: &'a [u8],
    pub peer: SocketAddr,
    pub http: &'a HttpConfig,
    /// When the request's head was complete: its body arrived between then and the call.
    pub head_at: Instant,
}

/// A route's handler.
pub type Handler = fn(&Exchange<'_>) -> Reply;

/// One line of the route table.
pub struct Route {
    pub path: &'static str,
    /// Methods served (HEAD is served wherever GET is: the same head, no body).
    pub methods: &'static [Method],
    pub guard: Guard,
    /// Largest request body read for this route.
    pub max_body: usize,
    pub handler: Handler,
}

const GET: &[Method] = &[Method::Get];
const POST: &[Method] = &[Method::Post];

/// Every path the server answers over HTTP. A feature adds its routes here, one line each,
/// with its handlers in a module of its own.
pub const ROUTES: &[Route] = &[
    Route {
        path: "/metrics",
        methods: GET,
        guard: Guard::MonitorToken,
        max_body: 0,
        handler: metrics::serve,
    },
    // The browser test (server/web, docs/web.md).
    Route {
        path: "/",
        methods: GET,
        guard: Guard::Token,
        max_body: 0,
        handler: web::page,
    },
    Route {
        path: "/web/start",
        methods: POST,
        guard: Guard::Token,
        max_body: 0,
        handler: web::start,
    },
    Route {
        path: "/web/ping",
        methods: GET,
        guard: Guard::Token,
        max_body: 0,
        handler: web::ping,
    },
    Route {
        path: "/web/down",
        methods: GET,
        guard: Guard::Token,
        max_body: 0,
        handler: web::down,
    },
    Route {
        path: "/web/up",
        methods: POST,
        guard: Guard::Token,
        max_body: crate::server::web::UP_BODY as usize,
        handler: web::up,
    },
    Route {
        path: "/web/router",
        methods: GET,
        guard: Guard::Token,
        max_body: 0,
        handler: web::router,
    },
    Route {
        path: "/web/result",
        methods: POST,
        guard: Guard::Token,
        max_body: crate::server::web::MAX_RESULT_BODY as usize,
        handler: web::result,
    },
];

/// What the HTTP side of the server knows besides its route table.
#[derive(Clone)]
pub struct HttpConfig {
    pub limits: Limits,
    /// Requests one connection may send (keep-alive), then it is closed.
    pub max_requests_per_conn: u32,
    /// `--token`.
    pub token: Option<String>,
    /// `--monitor-token` (or `--token`) when the agent runs.
    pub monitor_token: Option<String>,
    /// What `/metrics` serves (`None`: the server runs without `--monitor`).
    pub metrics: Option<Arc<dyn metrics::Exposition>>,
    /// Wrong tokens slow their address down.
    pub backoff: Arc<Backoff>,
    /// The browser test (`None`: `--web off`, its paths answer 404).
    pub web: Option<Arc<crate::server::web::Web>>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            limits: Limits::default(),
            max_requests_per_conn: 100,
            token: None,
            monitor_token: None,
            metrics: None,
            backoff: Arc::new(Backoff::default()),
            web: None,
        }
    }
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpConfig")
            .field("limits", &self.limits)
            .field("max_requests_per_conn", &self.max_requests_per_conn)
            .field("token", &self.token.is_some())
            .field("monitor_token", &self.monitor_token.is_some())
            .field("metrics", &self.metrics.is_some())
            .field("web", &self.web.is_some())
            .finish()
    }
}

/// Why reading a request stopped without one.
enum ReadEnd {
    /// The peer closed (or its seat was taken) with `pending` bytes of a request unread.
    Closed {
        pending: usize,
    },
    /// The deadline passed with `pending` bytes of a request.
    TimedOut {
        pending: usize,
    },
    Malformed(HttpError),
    /// Refused on its head alone, before its body was read (a body larger than its route
    /// takes, or one its route has no use for now): the answer, then a close.
    Refused(Response),
    Io(std::io::Error),
}

/// Reads into `buf` until it holds a whole request (head and its body within `route_body`'s
/// bound): the head's length, the body's, and when the head was complete (the body's bytes
/// arrived from then on).
fn read_request(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    limits: &Limits,
    deadline: Instant,
    before_body: &dyn Fn(&RequestHead<'_>) -> Option<Response>,
) -> Result<(usize, usize, Instant), ReadEnd> {
    let mut chunk = [0u8; 4096];
    let mut need = None;
    let mut head_at = Instant::now();
    loop {
        if need.is_none() && !buf.is_empty() {
            match RequestHead::parse(buf, limits) {
                Ok(Parsed::Incomplete) => {}
                Ok(Parsed::Head(h)) => {
                    if let Some(refusal) = before_body(&h) {
                        return Err(ReadEnd::Refused(refusal));
                    }
                    need = Some((h.head_len, h.content_length as usize));
                    head_at = Instant::now();
                }
                Err(e) => return Err(ReadEnd::Malformed(e)),
            }
        }
        if let Some((head, body)) = need {
            if buf.len() >= head + body {
                return Ok((head, body, head_at));
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ReadEnd::TimedOut { pending: buf.len() });
        }
        let _ = stream.set_read_timeout(Some(left));
        // Never read past what the head and body bounds allow.
        let room = match need {
            Some((head, body)) => head + body - buf.len(),
            None => limits.max_head + 1 - buf.len().min(limits.max_head),
        };
        let want = room.clamp(1, chunk.len());
        match stream.read(&mut chunk[..want]) {
            Ok(0) => return Err(ReadEnd::Closed { pending: buf.len() }),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if crate::net::is_timeout(&e) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(ReadEnd::Io(e)),
        }
    }
}

/// The route for a path, or the answer that there is none.
fn route_for(path: &str) -> Option<&'static Route> {
    ROUTES.iter().find(|r| r.path == path)
}

/// A request refused on its head, before any of its body is read into memory: a body larger
/// than its route takes (413), or one the route says it has no use for (the browser test's
/// upload without a running test of that client).
fn refuse_before_body(
    http: &HttpConfig,
    head: &RequestHead<'_>,
    peer: SocketAddr,
) -> Option<Response> {
    if head.content_length == 0 {
        return None;
    }
    let max = route_for(head.path).map_or(0, |r| r.max_body);
    if head.content_length > max as u64 {
        return Some(Response::text(
            413,
            &format!("{} takes a body of at most {max} bytes", head.path),
        ));
    }
    web::refuse_before_body(http, head, peer)
}

fn allowed(route: &Route) -> String {
    let mut m: Vec<&str> = route.methods.iter().map(|m| m.as_str()).collect();
    if route.methods.contains(&Method::Get) {
        m.push("HEAD");
    }
    m.join(", ")
}

/// Checks the route's token: `None` to go on, or the refusal.
fn check_token(
    http: &HttpConfig,
    route: &Route,
    head: &RequestHead<'_>,
    peer: SocketAddr,
) -> Option<Response> {
    let want = match route.guard {
        Guard::Open => return None,
        Guard::Token => http.token.as_deref(),
        Guard::MonitorToken => http.monitor_token.as_deref(),
    }?;
    if want.is_empty() {
        return None;
    }
    let got = head
        .bearer_token()
        .map(std::borrow::Cow::Borrowed)
        .or_else(|| head.query_param("token"));
    let unauthorized = |why: String| {
        Some(
            Response::text(401, &why)
                .with_header("WWW-Authenticate", "Bearer realm=\"routerbench\""),
        )
    };
    match (http.backoff.check(peer.ip()), got) {
        (Err(wait), _) => Some(
            Response::text(429, &backoff::wait_message("token", wait))
                .with_header("Retry-After", format!("{}", wait.as_secs().max(1))),
        ),
        (Ok(()), None) => unauthorized(format!(
            "{} needs a token: send `Authorization: Bearer T` or add `?token=T` (the server's {})",
            route.path,
            if route.guard == Guard::MonitorToken {
                "--monitor-token, else --token"
            } else {
                "--token"
            }
        )),
        (Ok(()), Some(t)) if crate::service::same_token(want, &t) => {
            http.backoff.succeeded(peer.ip());
            None
        }
        (Ok(()), Some(_)) => {
            let wait = http.backoff.failed(peer.ip());
            unauthorized(format!(
                "wrong token (next try from this address in {:.1} s)",
                wait.as_secs_f64()
            ))
        }
    }
}

/// The answer to one well-formed request, by the route table.
pub fn answer(http: &HttpConfig, head: &RequestHead<'_>, body: &[u8], peer: SocketAddr) -> Reply {
    answer_at(http, head, body, peer, Instant::now())
}

/// [`answer`] for a request whose head was complete at `head_at`.
pub fn answer_at(
    http: &HttpConfig,
    head: &RequestHead<'_>,
    body: &[u8],
    peer: SocketAddr,
    head_at: Instant,
) -> Reply {
    let Some(route) = route_for(head.path) else {
        return Reply::Full(Response::text(
            404,
            &format!(
                "no such path {}: this server answers {}",
                head.path,
                ROUTES.iter().map(|r| r.path).collect::<Vec<_>>().join(", ")
            ),
        ));
    };
    let get_like = head.method == Method::Head && route.methods.contains(&Method::Get);
    if !(route.methods.contains(&head.method) || get_like) {
        return Reply::Full(
            Response::text(
                405,
                &format!(
                    "{} does not allow {}: use {}",
                    route.path,
                    head.method_token,
                    allowed(route)
                ),
            )
            .with_header("Allow", allowed(route)),
        );
    }
    if body.len() > route.max_body {
        return Reply::Full(Response::text(
            413,
            &format!(
                "{} takes a body of at most {} bytes",
                route.path, route.max_body
            ),
        ));
    }
    if let Some(refusal) = check_token(http, route, head, peer) {
        return Reply::Full(refusal);
    }
    (route.handler)(&Exchange {
        head,
        body,
        peer,
        http,
        head_at,
    })
}

/// The largest body any route reads (the parser's bound; each route checks its own).
fn max_route_body(limits: &Limits) -> usize {
    ROUTES
        .iter()
        .map(|r| r.max_body)
        .max()
        .unwrap_or(0)
        .min(limits.max_body)
}

fn send(
    stream: &mut TcpStream,
    reply: Reply,
    keep_alive: bool,
    head_only: bool,
) -> std::io::Result<()> {
    match reply {
        Reply::Full(r) => stream.write_all(&r.emit(keep_alive, head_only)),
        Reply::Stream { head, length, body } => {
            let mut out = Vec::with_capacity(256);
            head.emit_head(length, keep_alive, &mut out);
            stream.write_all(&out)?;
            if head_only {
                return Ok(());
            }
            body(stream)
        }
    }
}

/// Serves one HTTP connection whose first byte (`first`) was read: requests until the client
/// closes, a request fails, the request cap or an idle deadline; `deadline` bounds the first.
pub(super) fn serve(
    sh: &Shared,
    mut stream: TcpStream,
    peer: SocketAddr,
    first: u8,
    deadline: Instant,
    seat: Seat,
) {
    let http = &sh.http;
    let mut limits = http.limits;
    limits.max_body = max_route_body(&http.limits);
    let idle = sh.cfg.first_bytes_timeout;
    let _ = stream.set_write_timeout(Some(idle.max(Duration::from_secs(1))));
    let _ = stream.set_nodelay(true);
    let mut buf = vec![first];
    let mut deadline = deadline;
    let mut served = 0u32;
    let end = loop {
        let before_body = |h: &RequestHead<'_>| refuse_before_body(http, h, peer);
        let (head_len, body_len, head_at) =
            match read_request(&mut stream, &mut buf, &limits, deadline, &before_body) {
                Ok(x) => x,
                Err(ReadEnd::Closed { pending: 0 }) => break None,
                Err(ReadEnd::Closed { pending }) => {
                    break Some(format!("HTTP: closed after {pending} bytes of a request"));
                }
                Err(ReadEnd::TimedOut { pending: 0 }) if served > 0 => break None,
                Err(ReadEnd::TimedOut { pending }) => {
                    let _ = send(
                        &mut stream,
                        Reply::Full(Response::text(
                            408,
                            &format!("the whole request must arrive within {} s", idle.as_secs()),
                        )),
                        false,
                        false,
                    );
                    break Some(format!(
                        "HTTP: {pending} bytes of a request, then nothing: timed out"
                    ));
                }
                Err(ReadEnd::Malformed(e)) => {
                    let _ = send(
                        &mut stream,
                        Reply::Full(Response::text(e.status(), &format!("bad request: {e}"))),
                        false,
                        false,
                    );
                    break Some(format!("HTTP: {e} (answered {})", e.status()));
                }
                Err(ReadEnd::Refused(r)) => {
                    let status = r.status;
                    let _ = send(&mut stream, Reply::Full(r), false, false);
                    break Some(format!("HTTP: refused before its body (answered {status})"));
                }
                Err(ReadEnd::Io(e)) => break Some(format!("HTTP: read error: {e}")),
            };
        let Ok(Parsed::Head(head)) = RequestHead::parse(&buf[..head_len], &limits) else {
            break Some("HTTP: request changed while read".into());
        };
        served += 1;
        seat.progress();
        let keep_alive = head.keep_alive()
            && served < http.max_requests_per_conn
            && !sh.stop.load(Ordering::Relaxed);
        let head_only = head.method == Method::Head;
        let reply = answer_at(
            http,
            &head,
            &buf[head_len..head_len + body_len],
            peer,
            head_at,
        );
        if let Err(e) = send(&mut stream, reply, keep_alive, head_only) {
            break Some(format!("HTTP: write error: {e}"));
        }
        if !keep_alive {
            break None;
        }
        buf.drain(..head_len + body_len);
        deadline = Instant::now() + idle;
    };
    let _ = stream.flush();
    let _ = stream.shutdown(std::net::Shutdown::Write);
    match end {
        None if served > 0 => seat.succeed(),
        None => drop(seat),
        Some(why) => {
            sh.refused.fetch_add(1, Ordering::Relaxed);
            super::log_refusal(sh, peer, why);
            drop(seat);
        }
    }
}

#[cfg(test)]
mod tests;
