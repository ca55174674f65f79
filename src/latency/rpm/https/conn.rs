//! One HTTP/2-over-TLS connection of `rpm --url` and what runs on it: open it (timing the TCP
//! and TLS handshakes separately, draft §5.3's tcp_f and tls_f), GET an object (the small one
//! for a probe, the large one, again and again, for a download load), POST bodies back to back
//! (an upload load). Each connection lives on its own thread's current-thread tokio runtime
//! (`mod.rs`), so a probe never waits behind another connection's work.

use super::super::transport::{Ticket, Timing};
use bytes::Bytes;
use h2::client::SendRequest;
use http::{Method, Request, Uri};
use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use std::future::poll_fn;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Receive window per stream and per connection: large enough that HTTP/2 flow control never
/// limits a download (8 MiB at 1 Gbit/s is 67 ms of data in flight).
const STREAM_WINDOW: u32 = 8 << 20;
const CONNECTION_WINDOW: u32 = 16 << 20;
/// Data HTTP/2 may hold in user space per connection before it reaches the socket: one frame,
/// so a self probe's request waits behind little of its connection's own data (draft
/// "Client-Side Influence": keep the HTTP and transport layers' queues small).
const SEND_BUFFER: usize = 16 << 10;
/// TCP_NOTSENT_LOWAT of an upload socket (the draft asks endpoints to keep the unsent backlog
/// small; a self probe queues behind it).
const UPLOAD_NOTSENT_LOWAT: u32 = 16 << 10;
/// One POST body. Bodies follow each other on the connection (the next POST starts when the
/// last byte of the previous one is handed to HTTP/2), so the upload never pauses; a bounded
/// body lets a server that must read the whole body first (nginx's request-body buffer) do so.
pub const UPLOAD_BODY: usize = 4 << 20;
const UPLOAD_CHUNK: usize = 16 << 10;

/// Where and how to connect.
pub struct Endpoint {
    pub addr: SocketAddr,
    /// TLS name (the URLs' host).
    pub name: ServerName<'static>,
    pub tls: Arc<ClientConfig>,
    pub timeout: Duration,
    /// Congestion control of load connections (None: the system's).
    pub cc: Option<String>,
}

/// What a connection is for (its socket options differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Probe,
    Download,
    Upload,
}

/// An open connection.
pub struct Opened {
    pub tcp: Duration,
    pub tls: Duration,
    /// Round trips of the TLS handshake: 1 for TLS 1.3 (2 after a HelloRetryRequest), 2 for a
    /// full TLS 1.2 handshake, 1 for a resumed one.
    pub tls_round_trips: u32,
    /// `TLS 1.3` or `TLS 1.2`.
    pub tls_version: String,
    /// The TCP socket itself (a second handle): TCP_INFO and shutdown.
    pub raw: TcpStream,
    pub send: SendRequest<Bytes>,
}

fn h2err(e: h2::Error) -> String {
    if e.is_go_away() {
        format!(
            "the server ended the connection (HTTP/2 GOAWAY {:?}; nginx does this after \
             keepalive_requests requests on one connection)",
            e.reason()
        )
    } else if let Some(io) = e.get_io() {
        format!("connection failed: {io}")
    } else {
        format!("HTTP/2: {e}")
    }
}

/// Connects, handshakes TLS (ALPN h2) and HTTP/2. Must run inside a tokio runtime (it spawns
/// the connection's task).
pub async fn open(ep: &Endpoint, role: Role) -> Result<Opened, String> {
    let t = Instant::now();
    // Blocking connect: this runtime's thread has nothing else to do yet, and the std call is
    // the one with a timeout.
    let tcp_sock = TcpStream::connect_timeout(&ep.addr, ep.timeout)
        .map_err(|e| format!("connect to {}: {e}", ep.addr))?;
    let tcp = t.elapsed();
    tcp_sock
        .set_nodelay(true)
        .map_err(|e| format!("TCP_NODELAY: {e}"))?;
    if role != Role::Probe {
        if let Some(cc) = &ep.cc {
            crate::net::set_congestion(&tcp_sock, cc).map_err(|e| format!("--cc {cc}: {e}"))?;
        }
    }
    if role == Role::Upload {
        crate::net::sockopt::set_notsent_lowat(&tcp_sock, UPLOAD_NOTSENT_LOWAT)
            .map_err(|e| format!("TCP_NOTSENT_LOWAT: {e}"))?;
    }
    let raw = tcp_sock.try_clone().map_err(|e| e.to_string())?;
    tcp_sock.set_nonblocking(true).map_err(|e| e.to_string())?;
    let stream = tokio::net::TcpStream::from_std(tcp_sock).map_err(|e| e.to_string())?;
    let t = Instant::now();
    let connector = tokio_rustls::TlsConnector::from(ep.tls.clone());
    let tls =
        match tokio::time::timeout(ep.timeout, connector.connect(ep.name.clone(), stream)).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(super::tls::explain(&e)),
            Err(_) => {
                return Err(format!(
                    "TLS: no handshake within {:.0} s",
                    ep.timeout.as_secs_f64()
                ));
            }
        };
    let tls_time = t.elapsed();
    let (tls_version, tls_round_trips) = {
        let c = tls.get_ref().1;
        if c.alpn_protocol() != Some(b"h2") {
            return Err(
                "the server did not agree to HTTP/2 (ALPN h2): a responsiveness server must \
                 speak HTTP/2 over TLS (nginx: `listen … ssl http2`)"
                    .into(),
            );
        }
        let v13 = c.protocol_version() == Some(rustls::ProtocolVersion::TLSv1_3);
        let kind = c.handshake_kind();
        let rt = match (v13, kind) {
            (_, Some(rustls::HandshakeKind::Resumed)) => 1,
            (true, Some(rustls::HandshakeKind::FullWithHelloRetryRequest)) => 2,
            (true, _) => 1,
            (false, _) => 2,
        };
        (if v13 { "TLS 1.3" } else { "TLS 1.2" }.to_string(), rt)
    };
    let handshake = h2::client::Builder::new()
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .max_send_buffer_size(SEND_BUFFER)
        .enable_push(false)
        .handshake::<_, Bytes>(tls);
    let (send, connection) = within(ep.timeout, "the HTTP/2 handshake", handshake)
        .await?
        .map_err(h2err)?;
    tokio::spawn(async move {
        // Its errors reach the requests on it; nothing to add here.
        let _ = connection.await;
    });
    Ok(Opened {
        tcp,
        tls: tls_time,
        tls_round_trips,
        tls_version,
        raw,
        send,
    })
}

/// `f`, or an error naming `what` if it takes longer than `limit` (a server that accepts and
/// then stalls must not hold a probe, or the configuration fetch, forever).
pub async fn within<F: std::future::Future>(
    limit: Duration,
    what: &str,
    f: F,
) -> Result<F::Output, String> {
    tokio::time::timeout(limit, f).await.map_err(|_| {
        format!(
            "{what}: no answer within {:.0} s (the server accepted the connection, then \
             stalled)",
            limit.as_secs_f64()
        )
    })
}

fn request(method: Method, uri: &Uri, body_len: Option<usize>) -> Result<Request<()>, String> {
    let mut b = Request::builder()
        .method(method)
        .uri(uri.clone())
        // The draft: GETs carry "Accept-Encoding: identity" so the server does not compress.
        .header("accept-encoding", "identity")
        .header(
            "user-agent",
            concat!("routerbench/", env!("CARGO_PKG_VERSION")),
        );
    if let Some(n) = body_len {
        b = b
            .header("content-type", "application/octet-stream")
            .header("content-length", n.to_string());
    }
    b.body(()).map_err(|e| format!("request for {uri}: {e}"))
}

/// What a GET returned besides its body.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    /// The `server` header, if any.
    pub server: Option<String>,
    pub bytes: u64,
}

/// GETs `uri` and reads the whole body, handing each piece to `on_data`. Anything but 200 is an
/// error naming the status.
pub async fn get(
    send: &SendRequest<Bytes>,
    uri: &Uri,
    mut on_data: impl FnMut(&[u8]),
) -> Result<Answer, String> {
    let mut s = send.clone().ready().await.map_err(h2err)?;
    let (resp, _) = s
        .send_request(request(Method::GET, uri, None)?, true)
        .map_err(h2err)?;
    let resp = resp.await.map_err(h2err)?;
    let status = resp.status();
    if status != http::StatusCode::OK {
        return Err(format!(
            "GET {uri} answered {status}: the server is not draft-conforming (it must answer 200)"
        ));
    }
    let server = resp
        .headers()
        .get("server")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let mut body = resp.into_body();
    let mut bytes = 0u64;
    while let Some(d) = body.data().await {
        let d = d.map_err(h2err)?;
        bytes += d.len() as u64;
        on_data(&d);
        let _ = body.flow_control().release_capacity(d.len());
    }
    Ok(Answer { server, bytes })
}

/// A download load: GET the large object, and when it ends, again; `on_data` counts. Returns
/// only with an error.
pub async fn download_forever(
    send: SendRequest<Bytes>,
    uri: Uri,
    mut on_data: impl FnMut(usize),
) -> String {
    loop {
        if let Err(e) = get(&send, &uri, |d| on_data(d.len())).await {
            return e;
        }
    }
}

/// An upload load: POST bodies of [`UPLOAD_BODY`] bytes back to back, handing data to HTTP/2
/// only as flow control grants it (so nothing piles up in user space). A response other than
/// 2xx, or a reset stream, is reported through `fail`. Returns only with an error.
pub async fn upload_forever(
    send: SendRequest<Bytes>,
    uri: Uri,
    fail: Arc<dyn Fn(String) + Send + Sync>,
) -> String {
    // Random filler (incompressible), 128 KiB, sliced into chunks.
    let chunk = Bytes::from(crate::latency::conn::random_payload(
        crate::latency::conn::random_u64(),
    ));
    let chunk = chunk.slice(..UPLOAD_CHUNK.min(chunk.len()));
    loop {
        let mut s = match send.clone().ready().await {
            Ok(s) => s,
            Err(e) => return h2err(e),
        };
        let req = match request(Method::POST, &uri, Some(UPLOAD_BODY)) {
            Ok(r) => r,
            Err(e) => return e,
        };
        let (resp, mut stream) = match s.send_request(req, false) {
            Ok(x) => x,
            Err(e) => return h2err(e),
        };
        let (f, u) = (fail.clone(), uri.clone());
        tokio::spawn(async move {
            match resp.await {
                Ok(r) if r.status().is_success() => {
                    let mut body = r.into_body();
                    while let Some(Ok(d)) = body.data().await {
                        let _ = body.flow_control().release_capacity(d.len());
                    }
                }
                Ok(r) => f(format!(
                    "POST {u} answered {}: the upload URL must take a body of any size \
                     (nginx: client_max_body_size 0)",
                    r.status()
                )),
                Err(e) if e.is_reset() => f(format!(
                    "POST {u}: the server reset the upload ({:?}) instead of reading it",
                    e.reason()
                )),
                Err(e) => f(h2err(e)),
            }
        });
        let mut left = UPLOAD_BODY;
        while left > 0 {
            stream.reserve_capacity(left.min(UPLOAD_CHUNK));
            let cap = match poll_fn(|cx| stream.poll_capacity(cx)).await {
                Some(Ok(c)) => c,
                Some(Err(e)) => return h2err(e),
                None => return format!("POST {uri}: the server closed the upload stream"),
            };
            let n = cap.min(left).min(chunk.len());
            if n == 0 {
                continue;
            }
            if let Err(e) = stream.send_data(chunk.slice(..n), n == left) {
                return h2err(e);
            }
            left -= n;
        }
    }
}

/// Self probes of one load connection: each ticket becomes a GET of the small object on this
/// connection, timed from the driver's launch to the end of the response (http_l), with the
/// socket's unsent bytes when it was queued.
pub async fn self_probes(
    send: SendRequest<Bytes>,
    small: Uri,
    raw: TcpStream,
    limit: Duration,
    mut tickets: tokio::sync::mpsc::UnboundedReceiver<Ticket>,
) {
    while let Some(t) = tickets.recv().await {
        let unsent = crate::latency::rpm::stream::unsent(&raw);
        let (send, small) = (send.clone(), small.clone());
        tokio::spawn(async move {
            match within(limit, "a self probe", get(&send, &small, |_| {}))
                .await
                .and_then(|r| r)
            {
                Ok(_) => t.done(Timing {
                    http: t.launched.elapsed(),
                    unsent: Some(unsent),
                    ..Default::default()
                }),
                Err(e) => t.fail(e),
            }
        });
    }
}
