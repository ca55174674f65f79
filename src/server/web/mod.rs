//! The browser test `routerbench server` serves over HTTP/1.1 (docs/web.md): one embedded page
//! and its test endpoints. A test is a session: the page starts it, downloads and uploads
//! through it with probes beside, polls the router's view of itself, and posts its samples at
//! the end for the result document. Sessions are bounded in number, length, rate and body
//! sizes; nothing else is served (no file system, no other paths).
//!
//! Endpoints (all `Cache-Control: no-store`, never compressed):
//! - `GET /`: the page (HTML, CSS and JS inline);
//! - `POST /web/start?phase=S&streams=N`: a new session (JSON: its id, timeline, limits);
//! - `GET /web/down?id&bytes=N`: N bytes (at most [`WebConfig::max_down_request`]);
//! - `POST /web/up?id`: a body of at most [`WebConfig::max_up_body`] bytes, counted and dropped;
//! - `GET /web/ping?id`: a tiny answer, the latency probe;
//! - `GET /web/router?id&from=K`: the router's view since point K (JSON);
//! - `POST /web/result?id`: the page's samples in, the routerbench result document out.
//!
//! With a token (`--token`), every path needs `?token=T` (the page passes its own on).

pub mod result;
pub mod router_view;

use crate::monitor::{Sampler, SamplerConfig};
use crate::results::monitor::{MonitorResult, MonitorSample};
use result::{PageSamples, Phase, SessionFacts};
use router_view::RouterPoint;
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The page, built into the binary.
pub const PAGE: &str = include_str!("page.html");

/// Limits and settings of the browser test.
#[derive(Debug, Clone)]
pub struct WebConfig {
    /// Shared secret every request must carry as `?token=` (the server's `--token`).
    pub token: Option<String>,
    /// Browser tests at once over all clients, and per client address.
    pub max_tests: usize,
    pub max_tests_per_host: usize,
    /// Longest phase a page may ask for, s (three phases and the idle lead-in make a test).
    pub max_phase_s: u32,
    pub default_phase_s: u32,
    /// Idle lead-in, s.
    pub idle_s: f64,
    /// Parallel HTTP streams per loaded direction: 2 keeps a page within the ~6 connections
    /// browsers open to one host:port (2 down + 2 up + probe + router poll).
    pub max_streams: u32,
    /// Largest download one request may ask for, bytes.
    pub max_down_request: u64,
    /// Largest upload body, bytes (the page grows its POSTs up to this).
    pub max_up_body: u64,
    /// Largest result body the page may post, bytes.
    pub max_result_body: u64,
    /// Highest rate one test may move per direction, bit/s (None: as fast as the link).
    pub max_rate_bps: Option<u64>,
    /// A transfer that moves nothing for this long is closed.
    pub io_timeout: Duration,
    /// Where /proc and /sys are (`/`; a fixture tree in tests).
    pub root: PathBuf,
}

impl Default for WebConfig {
    fn default() -> Self {
        WebConfig {
            token: None,
            max_tests: 2,
            max_tests_per_host: 1,
            max_phase_s: 30,
            default_phase_s: 10,
            idle_s: 2.0,
            max_streams: 2,
            max_down_request: 256 << 20,
            max_up_body: 32 << 20,
            max_result_body: 2 << 20,
            max_rate_bps: None,
            io_timeout: Duration::from_secs(10),
            root: PathBuf::from("/"),
        }
    }
}

/// Step of the byte counts and probe interval, s.
const STEP_S: f64 = 0.1;
const PROBE_INTERVAL_S: f64 = 0.1;
/// A session lives this long past its timeline (the page's last transfers, its result post).
const GRACE: Duration = Duration::from_secs(30);

/// One browser test in progress.
struct Session {
    id: String,
    client: IpAddr,
    local: SocketAddr,
    t0: Instant,
    t0_unix: f64,
    started_at: String,
    phases: Vec<Phase>,
    idle_s: f64,
    streams: u32,
    deadline: Instant,
    up_bins: Mutex<Vec<u64>>,
    /// Bytes moved per direction so far (for the rate cap).
    down_total: portable_atomic::AtomicU64,
    up_total: portable_atomic::AtomicU64,
    view: Mutex<View>,
}

/// The router's side of a session: its sampler and the digests so far.
struct View {
    sampler: Option<(Sampler, Receiver<MonitorSample>, f64)>,
    dev: Option<String>,
    mac: Option<String>,
    points: Vec<RouterPoint>,
    /// The qdisc toward the client and its shaped rate, as last seen.
    qdisc: Option<(String, Option<u64>)>,
    note: Option<String>,
}

impl Session {
    fn total_s(&self) -> f64 {
        self.phases.last().map_or(self.idle_s, |p| p.end_s)
    }
    fn t(&self) -> f64 {
        self.t0.elapsed().as_secs_f64()
    }
    fn count_up(&self, n: u64) {
        let i = (self.t() / STEP_S) as usize;
        let max = (self.total_s() / STEP_S) as usize + 50;
        if let Ok(mut b) = self.up_bins.lock() {
            if i < max {
                if b.len() <= i {
                    b.resize(i + 1, 0);
                }
                b[i] += n;
            }
        }
    }
    /// Sleeps as long as moving `total` bytes so far would exceed `rate` since t0.
    fn pace(&self, total: u64, rate: Option<u64>) {
        if let Some(r) = rate.filter(|r| *r > 0) {
            let due = total as f64 * 8.0 / r as f64;
            let ahead = due - self.t();
            if ahead > 0.0 {
                std::thread::sleep(Duration::from_secs_f64(ahead.min(1.0)));
            }
        }
    }
}

impl View {
    /// Takes the samples the sampler offered since the last call.
    fn drain(&mut self) {
        let Some((_, rx, offset)) = &self.sampler else {
            return;
        };
        let offset = *offset;
        while let Ok(mut s) = rx.try_recv() {
            s.t_s += offset;
            if let Some(q) = self
                .dev
                .as_deref()
                .and_then(|d| s.queues.iter().find(|q| q.dev == d))
            {
                if let Some(k) = &q.qdisc {
                    self.qdisc = Some((k.clone(), q.shaped_rate_bps));
                }
            }
            if self.points.len() < 10_000 {
                self.points.push(router_view::point(
                    &s,
                    self.dev.as_deref(),
                    self.mac.as_deref(),
                ));
            }
        }
    }
}

/// An HTTP request as the web routes need it (the server's HTTP layer parsed it).
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub method: &'a str,
    /// The path without the query.
    pub path: &'a str,
    /// The query string without `?` (empty when none).
    pub query: &'a str,
    /// The body's length (no body: None; chunked bodies are refused before this).
    pub content_length: Option<u64>,
    pub peer: SocketAddr,
    pub local: SocketAddr,
}

impl Request<'_> {
    fn arg(&self, name: &str) -> Option<&str> {
        self.query
            .split('&')
            .filter_map(|kv| kv.split_once('=').or(Some((kv, ""))))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v)
    }
}

/// What a route answered: the status, and whether the connection may be kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    pub status: u16,
    pub keep_alive: bool,
}

/// The browser test's state: settings and the sessions running.
pub struct Web {
    cfg: WebConfig,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
}

/// A 64 KiB block of incompressible bytes the downloads repeat.
fn filler() -> &'static [u8] {
    static BLOCK: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BLOCK.get_or_init(|| {
        let mut b = vec![0u8; 64 << 10];
        crate::util::random::fill(&mut b);
        b
    })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        _ => "Error",
    }
}

/// The status line and headers of an answer with a body of `len` bytes.
pub fn head(out: &mut dyn Write, status: u16, ctype: &str, len: u64, keep: bool) -> io::Result<()> {
    let csp = if ctype.starts_with("text/html") {
        // The page's own inline style and script, its own origin, blob: for the result link.
        "Content-Security-Policy: default-src 'none'; script-src 'unsafe-inline'; style-src \
         'unsafe-inline'; connect-src 'self'; img-src 'self' data: blob:; base-uri 'none'; \
         form-action 'none'\r\nReferrer-Policy: no-referrer\r\n"
    } else {
        ""
    };
    write!(
        out,
        "HTTP/1.1 {status} {}\r\nContent-Type: {ctype}\r\nContent-Length: {len}\r\n\
         Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n{csp}Connection: {}\r\n\r\n",
        reason(status),
        if keep { "keep-alive" } else { "close" }
    )
}

fn answer(
    out: &mut dyn Write,
    status: u16,
    ctype: &str,
    body: &[u8],
    keep: bool,
) -> io::Result<Outcome> {
    head(out, status, ctype, body.len() as u64, keep)?;
    out.write_all(body)?;
    out.flush()?;
    Ok(Outcome {
        status,
        keep_alive: keep,
    })
}

/// A refusal in words, closing the connection when the request's body was not read.
fn refuse(out: &mut dyn Write, status: u16, why: &str, body_unread: bool) -> io::Result<Outcome> {
    answer(
        out,
        status,
        "text/plain; charset=utf-8",
        why.as_bytes(),
        !body_unread,
    )
}

impl Web {
    pub fn new(cfg: WebConfig) -> Self {
        Web {
            cfg,
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// Whether this request is the browser test's (the page or an endpoint).
    pub fn claims(path: &str) -> bool {
        path == "/" || path == "/index.html" || path.starts_with("/web/")
    }

    /// Serves one request; `body` yields exactly its body (`content_length` bytes), `out` is
    /// the connection. Errors are the connection's (the caller closes it).
    pub fn handle(
        &self,
        req: &Request,
        body: &mut dyn Read,
        out: &mut dyn Write,
    ) -> io::Result<Outcome> {
        let has_body = req.content_length.unwrap_or(0) > 0;
        if let Some(want) = &self.cfg.token {
            let got = req.arg("token").unwrap_or("");
            if !crate::service::same_token(want, got) {
                return refuse(
                    out,
                    403,
                    "this routerbench server needs its token: open http://ROUTER:PORT/?token=TOKEN",
                    has_body,
                );
            }
        }
        self.reap();
        match (req.method, req.path) {
            ("GET" | "HEAD", "/" | "/index.html") => {
                if req.method == "HEAD" {
                    head(
                        out,
                        200,
                        "text/html; charset=utf-8",
                        PAGE.len() as u64,
                        !has_body,
                    )?;
                    out.flush()?;
                    return Ok(Outcome {
                        status: 200,
                        keep_alive: !has_body,
                    });
                }
                answer(
                    out,
                    200,
                    "text/html; charset=utf-8",
                    PAGE.as_bytes(),
                    !has_body,
                )
            }
            ("POST", "/web/start") => self.start(req, out, has_body),
            ("GET", "/web/ping") => match self.session(req) {
                Some(_) => answer(out, 200, "text/plain", b"ok", !has_body),
                None => refuse(out, 404, "no such test (ended or never started)", has_body),
            },
            ("GET", "/web/down") => self.down(req, out, has_body),
            ("POST", "/web/up") => self.up(req, body, out),
            ("GET", "/web/router") => self.router(req, out, has_body),
            ("POST", "/web/result") => self.result(req, body, out),
            (
                _,
                "/" | "/index.html" | "/web/start" | "/web/ping" | "/web/down" | "/web/up"
                | "/web/router" | "/web/result",
            ) => refuse(out, 405, "method not allowed here", has_body),
            _ => refuse(
                out,
                404,
                "not found: this server serves its test page at / only",
                has_body,
            ),
        }
    }

    fn session(&self, req: &Request) -> Option<Arc<Session>> {
        let id = req.arg("id")?;
        let s = self.sessions.lock().ok()?.get(id).cloned()?;
        // Only the client that started it may use it.
        (crate::net::addr::same_ip(s.client, req.peer.ip()) && Instant::now() < s.deadline)
            .then_some(s)
    }

    /// Ends sessions past their deadline (a page that never posted its result).
    fn reap(&self) {
        let Ok(mut m) = self.sessions.lock() else {
            return;
        };
        let now = Instant::now();
        let dead: Vec<String> = m
            .iter()
            .filter(|(_, s)| now >= s.deadline)
            .map(|(k, _)| k.clone())
            .collect();
        for k in dead {
            if let Some(s) = m.remove(&k) {
                if let Ok(mut v) = s.view.lock() {
                    if let Some((sampler, _, _)) = v.sampler.take() {
                        drop(sampler.stop());
                    }
                }
            }
        }
    }

    fn start(&self, req: &Request, out: &mut dyn Write, has_body: bool) -> io::Result<Outcome> {
        let phase_s = match req.arg("phase").map(str::parse::<u32>) {
            None => self.cfg.default_phase_s,
            Some(Ok(p)) if (2..=self.cfg.max_phase_s).contains(&p) => p,
            Some(_) => {
                let why = format!("phase must be 2 to {} seconds", self.cfg.max_phase_s);
                return refuse(out, 400, &why, has_body);
            }
        };
        let streams = match req.arg("streams").map(str::parse::<u32>) {
            None => self.cfg.max_streams,
            Some(Ok(n)) if (1..=self.cfg.max_streams).contains(&n) => n,
            Some(_) => {
                let why = format!("streams must be 1 to {}", self.cfg.max_streams);
                return refuse(out, 400, &why, has_body);
            }
        };
        let client = req.peer.ip();
        let phases = result::timeline(self.cfg.idle_s, f64::from(phase_s));
        let total = phases.last().map_or(0.0, |p| p.end_s);
        let id = format!("{:016x}", crate::util::random::u64());
        let session = {
            let Ok(mut m) = self.sessions.lock() else {
                return refuse(out, 500, "internal error", has_body);
            };
            let mine = m
                .values()
                .filter(|s| crate::net::addr::same_ip(s.client, client))
                .count();
            if m.len() >= self.cfg.max_tests {
                return refuse(
                    out,
                    429,
                    &format!(
                        "busy: {} browser tests are running; try again in a minute",
                        m.len()
                    ),
                    has_body,
                );
            }
            if mine >= self.cfg.max_tests_per_host {
                return refuse(
                    out,
                    429,
                    "a test from this device is still running (another tab?); wait for it to end",
                    has_body,
                );
            }
            let s = Arc::new(Session {
                id: id.clone(),
                client,
                local: req.local,
                t0: Instant::now(),
                t0_unix: crate::util::time::unix_now_f64(),
                started_at: crate::util::time::now_rfc3339(),
                phases: phases.clone(),
                idle_s: self.cfg.idle_s,
                streams,
                deadline: Instant::now() + Duration::from_secs_f64(total) + GRACE,
                up_bins: Mutex::new(Vec::new()),
                down_total: Default::default(),
                up_total: Default::default(),
                view: Mutex::new(self.view_of(client, total)),
            });
            m.insert(id.clone(), s.clone());
            s
        };
        let doc = serde_json::json!({
            "id": session.id,
            "step_s": STEP_S,
            "probe_interval_s": PROBE_INTERVAL_S,
            "idle_s": session.idle_s,
            "phases": phases,
            "total_s": total,
            "streams": streams,
            "down_bytes": self.cfg.max_down_request,
            "up_max_bytes": self.cfg.max_up_body.min(16 << 20),
        });
        answer(
            out,
            200,
            "application/json",
            doc.to_string().as_bytes(),
            !has_body,
        )
    }

    /// The router's side of a new session: the route toward the client and a sampler.
    fn view_of(&self, client: IpAddr, total_s: f64) -> View {
        let dev = router_view::route_device(&self.cfg.root, client);
        let mac = router_view::client_mac(&self.cfg.root, client);
        let (tx, rx) = std::sync::mpsc::sync_channel(256);
        let t0 = Instant::now();
        let sampler = Sampler::start(SamplerConfig {
            root: self.cfg.root.clone(),
            interval: Duration::from_millis(500),
            max_duration: Duration::from_secs_f64(total_s) + GRACE,
            queue_interval: Duration::from_millis(100),
            qdiscs: true,
            live: Some(tx),
            keep_samples: true,
        });
        let (sampler, note) = match sampler {
            Ok(s) => (Some((s, rx, t0.elapsed().as_secs_f64())), None),
            Err(e) => (
                None,
                Some(format!("the router's monitor did not start: {e}")),
            ),
        };
        View {
            sampler,
            dev,
            mac,
            points: Vec::new(),
            qdisc: None,
            note,
        }
    }

    fn down(&self, req: &Request, out: &mut dyn Write, has_body: bool) -> io::Result<Outcome> {
        let Some(s) = self.session(req) else {
            return refuse(out, 404, "no such test (ended or never started)", has_body);
        };
        let want = req
            .arg("bytes")
            .and_then(|b| b.parse::<u64>().ok())
            .unwrap_or(self.cfg.max_down_request);
        let n = want.min(self.cfg.max_down_request);
        head(out, 200, "application/octet-stream", n, !has_body)?;
        let block = filler();
        let mut left = n;
        while left > 0 {
            if Instant::now() >= s.deadline {
                // Past the test's end: cut the body short; the page has stopped reading.
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "browser test ended",
                ));
            }
            let k = left.min(block.len() as u64) as usize;
            out.write_all(&block[..k])?;
            left -= k as u64;
            let total = s
                .down_total
                .fetch_add(k as u64, std::sync::atomic::Ordering::Relaxed)
                + k as u64;
            s.pace(total, self.cfg.max_rate_bps);
        }
        out.flush()?;
        Ok(Outcome {
            status: 200,
            keep_alive: !has_body,
        })
    }

    fn up(&self, req: &Request, body: &mut dyn Read, out: &mut dyn Write) -> io::Result<Outcome> {
        let len = req.content_length.unwrap_or(0);
        let Some(s) = self.session(req) else {
            return refuse(out, 404, "no such test (ended or never started)", len > 0);
        };
        if len > self.cfg.max_up_body {
            let why = format!(
                "upload body of {len} bytes: at most {} per request",
                self.cfg.max_up_body
            );
            return refuse(out, 413, &why, true);
        }
        let mut buf = vec![0u8; 64 << 10];
        let mut left = len;
        while left > 0 {
            if Instant::now() >= s.deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "browser test ended",
                ));
            }
            let k = left.min(buf.len() as u64) as usize;
            let got = body.read(&mut buf[..k])?;
            if got == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "upload body cut short",
                ));
            }
            left -= got as u64;
            s.count_up(got as u64);
            let total = s
                .up_total
                .fetch_add(got as u64, std::sync::atomic::Ordering::Relaxed)
                + got as u64;
            s.pace(total, self.cfg.max_rate_bps);
        }
        answer(
            out,
            200,
            "application/json",
            format!("{{\"bytes\":{len}}}").as_bytes(),
            true,
        )
    }

    fn router(&self, req: &Request, out: &mut dyn Write, has_body: bool) -> io::Result<Outcome> {
        let Some(s) = self.session(req) else {
            return refuse(out, 404, "no such test (ended or never started)", has_body);
        };
        let from = req
            .arg("from")
            .and_then(|f| f.parse::<usize>().ok())
            .unwrap_or(0);
        let doc = {
            let Ok(mut v) = s.view.lock() else {
                return refuse(out, 500, "internal error", has_body);
            };
            v.drain();
            let wifi_note = match (&v.mac, v.points.iter().any(|p| p.station.is_some())) {
                (_, true) => None,
                (Some(_), false) => Some(
                    "your device is not a Wi-Fi station of this router (wired, or on another access point)",
                ),
                (None, false) => Some(
                    "your device is not in this router's neighbour table: not on its LAN, or reached over IPv6",
                ),
            };
            serde_json::json!({
                "dev": v.dev,
                "qdisc": v.qdisc.as_ref().map(|q| q.0.clone()),
                "shaped_mbps": v.qdisc.as_ref().and_then(|q| q.1).map(|r| r as f64 / 1e6),
                "verdict": router_view::verdict(&v.points, s.idle_s + 1.0, v.dev.as_deref()),
                "wifi_note": wifi_note,
                "note": v.note,
                "samples": v.points.get(from.min(v.points.len())..).unwrap_or(&[]),
            })
        };
        answer(
            out,
            200,
            "application/json",
            doc.to_string().as_bytes(),
            !has_body,
        )
    }

    fn result(
        &self,
        req: &Request,
        body: &mut dyn Read,
        out: &mut dyn Write,
    ) -> io::Result<Outcome> {
        let len = req.content_length.unwrap_or(0);
        let Some(s) = self.session(req) else {
            return refuse(out, 404, "no such test (ended or never started)", len > 0);
        };
        if len == 0 || len > self.cfg.max_result_body {
            let why = format!(
                "result body of {len} bytes: 1 to {} expected",
                self.cfg.max_result_body
            );
            return refuse(out, 413, &why, len > 0);
        }
        let mut text = Vec::with_capacity(len as usize);
        body.take(len).read_to_end(&mut text)?;
        if text.len() as u64 != len {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "result body cut short",
            ));
        }
        let samples: PageSamples = match serde_json::from_slice(&text) {
            Ok(p) => p,
            Err(e) => {
                return refuse(
                    out,
                    400,
                    &format!("result body is not the page's samples: {e}"),
                    false,
                );
            }
        };
        let facts = SessionFacts {
            host: crate::net::addr::display_ip(s.local.ip()),
            port: s.local.port(),
            ip_version: if crate::net::addr::canonical_ip(s.local.ip()).is_ipv4() {
                4
            } else {
                6
            },
            t0_unix: s.t0_unix,
            idle_s: s.idle_s,
            phases: s.phases.clone(),
            step_s: STEP_S,
            probe_interval_s: PROBE_INTERVAL_S,
            up_received: s.up_bins.lock().map(|b| b.clone()).unwrap_or_default(),
        };
        if let Err(why) = result::check(&samples, &facts) {
            return refuse(out, 400, &format!("result body out of range: {why}"), false);
        }
        // The session ends here: its id no longer works.
        if let Ok(mut m) = self.sessions.lock() {
            m.remove(&s.id);
        }
        let doc = self.document(&s, &samples, &facts);
        let text = serde_json::to_vec(&doc).unwrap_or_default();
        answer(out, 200, "application/json", &text, true)
    }

    /// The result document of a finished session.
    fn document(
        &self,
        s: &Session,
        samples: &PageSamples,
        facts: &SessionFacts,
    ) -> crate::results::RunResult {
        let mut run = crate::results::RunResult::new(s.started_at.clone());
        run.finished_at = crate::util::time::now_rfc3339();
        run.latency = Some(result::latency(samples, facts, s.started_at.clone()));
        run.device = Some(crate::device::detect());
        let total = s.total_s();
        let (router, verdict, station, dev) = {
            let mut v = match s.view.lock() {
                Ok(v) => v,
                Err(p) => p.into_inner(),
            };
            v.drain();
            let router = v.sampler.take().map(|(sampler, _, offset)| {
                let mut m: MonitorResult = sampler.stop();
                for x in &mut m.samples {
                    x.t_s += offset;
                }
                m.start_unix_s = Some(s.t0_unix);
                m.summary.under_load = Some(crate::monitor::summary::load_summary(
                    &m,
                    s.idle_s + 1.0,
                    total,
                ));
                m
            });
            let verdict = router_view::verdict(&v.points, s.idle_s + 1.0, v.dev.as_deref());
            (
                router,
                verdict,
                router_view::station(&v.points, s.idle_s),
                v.dev.clone(),
            )
        };
        run.router = router;
        let clip = |t: &str, n: usize| t.chars().take(n).collect::<String>();
        run.web = Some(crate::results::web::WebClient {
            client: crate::net::addr::display_ip(s.client),
            user_agent: samples.user_agent.as_deref().map(|u| clip(u, 200)),
            screen: samples.screen.as_deref().map(|u| clip(u, 20)),
            streams: s.streams,
            timing: clip(samples.timing.as_deref().unwrap_or("fetch"), 20),
            device: dev,
            verdict,
            errors: samples
                .errors
                .iter()
                .take(20)
                .map(|e| clip(e, 200))
                .collect(),
            upload_bytes_sent_by_page: Some(samples.up.iter().sum()),
            station,
        });
        run
    }
}
