//! The RPM transport over HTTP/2 and TLS (cargo feature `https`): any server that follows
//! draft-ietf-ippm-responsiveness-09's "Responsiveness Test Server" section (the config document
//! at `/.well-known/nq`, a 1-byte small object, a large object, an upload URL; docs/rpm.md).
//! Load connections GET the large object or POST to the upload URL; self probes are GETs of the
//! small object multiplexed on them (no priorities, as the draft demands); foreign probes open a
//! new TCP + TLS + HTTP/2 connection and time each part.
//!
//! Threads, not a shared executor: every connection (load or foreign probe) runs on its own
//! thread with its own current-thread tokio runtime, which h2 and tokio-rustls need for their
//! I/O. The rest of routerbench stays blocking; tokio is compiled in only with this feature.

pub mod conn;
pub mod tls;

use super::transport::{LoadConnection, Ticket, Timing, Transport};
use crate::wire::nq::{self, NqConfig, TestUrl};
use crate::wire::rb::Direction;
use conn::{Endpoint, Role};
use portable_atomic::AtomicU64;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

pub use tls::Trust;

/// A responsiveness server that served its configuration.
pub struct HttpsTransport {
    pub config: NqConfig,
    endpoint: Arc<Endpoint>,
    small: http::Uri,
    large: http::Uri,
    upload: http::Uri,
    /// What the server calls itself (`server` header of the config response) and the TLS
    /// version agreed, for `describe`.
    server: Option<String>,
    tls_version: String,
}

/// Runs `f` to completion on a new current-thread runtime on this thread.
fn block_on<F: std::future::Future>(f: F) -> Result<F::Output, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| format!("cannot start the HTTP/2 runtime: {e}"))?;
    Ok(rt.block_on(f))
}

fn uri(u: &TestUrl) -> Result<http::Uri, String> {
    format!("https://{}{}", u.authority(), u.path)
        .parse::<http::Uri>()
        .map_err(|e| format!("{}: {e}", u.url))
}

fn resolve(host: &str, port: u16) -> Result<SocketAddr, String> {
    (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
        .next()
        .ok_or_else(|| format!("{host} has no address"))
}

impl HttpsTransport {
    /// Fetches and checks the configuration document at `url` (the draft's `.well-known/nq`,
    /// or any URL serving that JSON), then prepares connections to the test endpoint.
    pub fn connect(
        url: &str,
        trust: &Trust,
        timeout: Duration,
        cc: Option<String>,
    ) -> Result<Self, String> {
        let config_url = nq::parse_url(url).map_err(|e| format!("--url {e}"))?;
        let tls = tls::client_config(trust)?;
        let first = Endpoint {
            addr: resolve(&config_url.host, config_url.port)?,
            name: tls::server_name(&config_url.host)?,
            tls: tls.clone(),
            timeout,
            cc: None,
        };
        let config_uri = uri(&config_url)?;
        let fetched = block_on(async {
            let o = conn::open(&first, Role::Probe).await?;
            let mut body = Vec::new();
            let answer = conn::within(
                timeout,
                "GET of the configuration",
                conn::get(&o.send, &config_uri, |d| {
                    if body.len() < 64 * 1024 {
                        body.extend_from_slice(d);
                    }
                }),
            )
            .await??;
            Ok::<_, String>((o.tls_version, answer, body))
        })?;
        let (tls_version, answer, body) =
            fetched.map_err(|e| format!("configuration {url}: {e}"))?;
        let config = nq::parse_config(&body).map_err(|e| {
            format!(
                "{url} is not a responsiveness configuration (draft-ietf-ippm-responsiveness \
                 .well-known/nq): {e}"
            )
        })?;
        let host = config
            .test_endpoint
            .clone()
            .unwrap_or_else(|| config.large.host.clone());
        let endpoint = Endpoint {
            addr: resolve(&host, config.large.port)?,
            name: tls::server_name(&config.large.host)?,
            tls,
            timeout,
            cc,
        };
        Ok(Self {
            small: uri(&config.small)?,
            large: uri(&config.large)?,
            upload: uri(&config.upload)?,
            endpoint: Arc::new(endpoint),
            server: answer.server,
            tls_version,
            config,
        })
    }

    /// The address test connections go to.
    pub fn addr(&self) -> SocketAddr {
        self.endpoint.addr
    }
}

impl Transport for HttpsTransport {
    fn describe(&self) -> String {
        match &self.server {
            Some(s) => format!("HTTP/2 over {} ({s})", self.tls_version),
            None => format!("HTTP/2 over {}", self.tls_version),
        }
    }

    fn tls(&self) -> bool {
        true
    }

    fn open_load(&self, direction: Direction, id: u32) -> Result<Box<dyn LoadConnection>, String> {
        let state = Arc::new(LoadState::default());
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
        let (probe_tx, probe_rx) = tokio::sync::mpsc::unbounded_channel::<Ticket>();
        let (ep, st) = (self.endpoint.clone(), state.clone());
        let (small, large, upload) = (self.small.clone(), self.large.clone(), self.upload.clone());
        std::thread::Builder::new()
            .name(format!("rpm-h2-load{id}"))
            .spawn(move || {
                let run = async {
                    let role = match direction {
                        Direction::Download => Role::Download,
                        Direction::Upload => Role::Upload,
                    };
                    let o = match conn::open(&ep, role).await {
                        Ok(o) => o,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    let (raw1, raw2) = match (o.raw.try_clone(), o.raw.try_clone()) {
                        (Ok(a), Ok(b)) => (a, b),
                        (Err(e), _) | (_, Err(e)) => {
                            let _ = ready_tx.send(Err(e.to_string()));
                            return;
                        }
                    };
                    let _ = st.raw.set(raw1);
                    let _ = ready_tx.send(Ok(()));
                    tokio::spawn(conn::self_probes(
                        o.send.clone(),
                        small,
                        raw2,
                        ep.timeout,
                        probe_rx,
                    ));
                    let why = match direction {
                        Direction::Download => {
                            let st2 = st.clone();
                            conn::download_forever(o.send, large, move |n| {
                                st2.received.fetch_add(n as u64, Ordering::Relaxed);
                            })
                            .await
                        }
                        Direction::Upload => {
                            let st2 = st.clone();
                            let fail: Arc<dyn Fn(String) + Send + Sync> =
                                Arc::new(move |e| st2.fail(e));
                            conn::upload_forever(o.send, upload, fail).await
                        }
                    };
                    st.fail(why);
                };
                if let Err(e) = block_on(run) {
                    st.fail(e);
                }
            })
            .map_err(|e| format!("cannot start a load thread: {e}"))?;
        match ready_rx.recv_timeout(self.endpoint.timeout * 3) {
            Ok(Ok(())) => Ok(Box::new(H2Load {
                direction,
                state,
                probes: Mutex::new(probe_tx),
            })),
            Ok(Err(e)) => Err(e),
            Err(_) => {
                state.stop.store(true, Ordering::Relaxed);
                Err("the connection did not open in time".into())
            }
        }
    }

    fn foreign_probe(&self, ticket: Ticket) {
        let (ep, small) = (self.endpoint.clone(), self.small.clone());
        let t = ticket.clone();
        let spawned = std::thread::Builder::new()
            .name("rpm-h2-probe".into())
            .spawn(move || {
                let r = block_on(async {
                    let o = conn::open(&ep, Role::Probe).await?;
                    let h = std::time::Instant::now();
                    conn::within(
                        ep.timeout,
                        "a foreign probe's GET",
                        conn::get(&o.send, &small, |_| {}),
                    )
                    .await??;
                    Ok::<_, String>(Timing {
                        tcp: Some(o.tcp),
                        tls: Some(o.tls),
                        tls_round_trips: Some(o.tls_round_trips),
                        http: h.elapsed(),
                        unsent: None,
                    })
                });
                match r {
                    Ok(Ok(timing)) => t.done(timing),
                    Ok(Err(e)) | Err(e) => t.fail(e),
                }
            });
        if let Err(e) = spawned {
            ticket.fail(format!("cannot start a probe thread: {e}"));
        }
    }
}

/// Shared state of one load connection.
#[derive(Default)]
struct LoadState {
    stop: AtomicBool,
    received: AtomicU64,
    failure: Mutex<Option<String>>,
    raw: OnceLock<TcpStream>,
}

impl LoadState {
    fn fail(&self, why: String) {
        if !self.stop.load(Ordering::Relaxed) {
            if let Ok(mut f) = self.failure.lock() {
                f.get_or_insert(why);
            }
        }
    }
}

/// A load connection as the driver sees it.
struct H2Load {
    direction: Direction,
    state: Arc<LoadState>,
    probes: Mutex<tokio::sync::mpsc::UnboundedSender<Ticket>>,
}

impl LoadConnection for H2Load {
    fn bytes(&self) -> u64 {
        match self.direction {
            Direction::Download => self.state.received.load(Ordering::Relaxed),
            // What the server's TCP acknowledged (TLS and HTTP/2 framing included, ~0.2 %).
            Direction::Upload => self
                .state
                .raw
                .get()
                .and_then(|s| crate::net::tcp_info::tcp_info(s).ok())
                .map(|i| i.bytes_acked)
                .unwrap_or(0),
        }
    }

    fn self_probe(&self, ticket: Ticket) {
        let sent = self
            .probes
            .lock()
            .map(|tx| tx.send(ticket.clone()).is_ok())
            .unwrap_or(false);
        if !sent {
            ticket.fail("the load connection has ended");
        }
    }

    fn failure(&self) -> Option<String> {
        self.state.failure.lock().ok().and_then(|f| f.clone())
    }

    fn close(&self) {
        self.state.stop.store(true, Ordering::Relaxed);
        if let Some(s) = self.state.raw.get() {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }
}
