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
//! - `POST /web/up?id`: a body of [`UP_BODY`] bytes, counted and dropped;
//! - `GET /web/ping?id`: a tiny answer, the latency probe;
//! - `GET /web/router?id&from=K`: the router's view since point K (JSON);
//! - `POST /web/result?id`: the page's samples in, the routerbench result document out.
//!
//! With a token (`--token`), every path needs `?token=T` (the page passes its own on). The
//! HTTP layer (`server::http`, its handlers in `server/http/web.rs`) parses, bounds and routes
//! the requests; this module holds the sessions and answers.

pub mod result;
pub mod router_view;

use crate::monitor::{Sampler, SamplerConfig};
use crate::results::monitor::{MonitorResult, MonitorSample};
use result::{PageSamples, Phase, SessionFacts};
use router_view::RouterPoint;
use std::collections::HashMap;
use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The page, built into the binary.
pub const PAGE: &str = include_str!("page.html");

/// The page's upload POST body, bytes. Bodies are read whole into memory (only for a client
/// with a test running), so it stays small; POSTs follow each other on each stream.
pub const UP_BODY: u64 = 1 << 20;
/// Largest result body the page may post, bytes.
pub const MAX_RESULT_BODY: u64 = 2 << 20;

/// Limits and settings of the browser test.
#[derive(Debug, Clone)]
pub struct WebConfig {
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
    /// Highest rate one test may move per direction, bit/s (None: as fast as the link).
    pub max_rate_bps: Option<u64>,
    /// Where /proc and /sys are (`/`; a fixture tree in tests).
    pub root: PathBuf,
}

impl Default for WebConfig {
    fn default() -> Self {
        WebConfig {
            max_tests: 2,
            max_tests_per_host: 1,
            max_phase_s: 30,
            default_phase_s: 10,
            idle_s: 2.0,
            max_streams: 2,
            max_down_request: 256 << 20,
            max_rate_bps: None,
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
    /// The server as the page reached it (its `Host` field).
    host: String,
    port: u16,
    t0: Instant,
    t0_unix: f64,
    started_at: String,
    phases: Vec<Phase>,
    idle_s: f64,
    streams: u32,
    deadline: Instant,
    /// Upload bytes received in whole POST bodies.
    up_received: portable_atomic::AtomicU64,
    /// The same per step from t0, each body spread over the time it took to arrive.
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
    /// Adds `n` bytes received between `from` and `to` to the upload steps, spread evenly.
    fn count_up(&self, n: u64, from: Instant, to: Instant) {
        let t = |i: Instant| i.saturating_duration_since(self.t0).as_secs_f64();
        let (a, b) = (t(from), t(to).max(t(from)));
        let max = (self.total_s() / STEP_S) as usize + 50;
        let Ok(mut bins) = self.up_bins.lock() else {
            return;
        };
        let (first, last) = ((a / STEP_S) as usize, (b / STEP_S) as usize);
        if last >= max {
            return;
        }
        if bins.len() <= last {
            bins.resize(last + 1, 0);
        }
        if first == last || b - a < 1e-9 {
            bins[last] += n;
            return;
        }
        let mut given = 0;
        for (i, bin) in bins.iter_mut().enumerate().take(last + 1).skip(first) {
            let lo = (i as f64 * STEP_S).max(a);
            let hi = ((i + 1) as f64 * STEP_S).min(b);
            let share = if i == last {
                n - given
            } else {
                ((hi - lo).max(0.0) / (b - a) * n as f64) as u64
            };
            *bin += share;
            given += share;
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

/// What a web route answers; `server::http`'s route handlers turn it into a response.
pub enum WebReply {
    /// A plain-text refusal or error: the status and one line saying what to do.
    Text(u16, String),
    /// A JSON document.
    Json(Vec<u8>),
    /// The page.
    Page,
    /// `bytes` of download for a running test ([`WebDownload::write`] sends them).
    Download(WebDownload),
}

/// A download in progress: its body's length and the session it belongs to.
pub struct WebDownload {
    pub bytes: u64,
    session: Arc<Session>,
    rate: Option<u64>,
}

impl WebDownload {
    /// Writes the body: incompressible bytes, cut short (an error, so the connection closes)
    /// once the test's deadline passed, paced to the test's rate cap if there is one.
    pub fn write(self, out: &mut dyn Write) -> io::Result<()> {
        let block = filler();
        let mut left = self.bytes;
        while left > 0 {
            if Instant::now() >= self.session.deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "browser test ended",
                ));
            }
            let k = left.min(block.len() as u64) as usize;
            out.write_all(&block[..k])?;
            left -= k as u64;
            let total = self
                .session
                .down_total
                .fetch_add(k as u64, std::sync::atomic::Ordering::Relaxed)
                + k as u64;
            self.session.pace(total, self.rate);
        }
        out.flush()
    }
}

/// Writes the result document a finished test returns (the caller's: `cli` passes
/// `report::export::json`'s, the encoder of every saved result, so the result type's
/// serializer is compiled once; docs/web.md, "Size").
pub type EncodeResult = fn(&crate::results::RunResult) -> Vec<u8>;

/// The browser test's state: settings and the sessions running.
pub struct Web {
    cfg: WebConfig,
    encode: EncodeResult,
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

fn gone() -> WebReply {
    WebReply::Text(
        404,
        "no such browser test (it ended, or another device started it): press Start again".into(),
    )
}

/// The server's address as the page reached it, from its `Host` field: (host, port).
fn host_port(host: Option<&str>) -> (String, u16) {
    let h = host.unwrap_or("");
    if let Ok(a) = h.parse::<SocketAddr>() {
        return (crate::net::addr::display_ip(a.ip()), a.port());
    }
    match h.rsplit_once(':') {
        Some((n, p)) if !n.ends_with(']') || n.starts_with('[') => (
            n.trim_matches(['[', ']']).to_string(),
            p.parse().unwrap_or(0),
        ),
        _ => (h.to_string(), 80),
    }
}

impl Web {
    pub fn new(cfg: WebConfig, encode: EncodeResult) -> Self {
        Web {
            cfg,
            encode,
            sessions: Mutex::new(HashMap::new()),
        }
    }

    pub fn config(&self) -> &WebConfig {
        &self.cfg
    }

    fn session(&self, peer: IpAddr, id: Option<&str>) -> Option<Arc<Session>> {
        self.reap();
        let s = self.sessions.lock().ok()?.get(id?).cloned()?;
        // Only the client that started it may use it.
        (crate::net::addr::same_ip(s.client, peer) && Instant::now() < s.deadline).then_some(s)
    }

    /// Whether `peer` has the running test `id` (bodies are read only for one).
    pub fn has_session(&self, peer: IpAddr, id: Option<&str>) -> bool {
        self.session(peer, id).is_some()
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

    /// Browser tests running now.
    pub fn running(&self) -> usize {
        self.reap();
        self.sessions.lock().map(|m| m.len()).unwrap_or(0)
    }

    /// `POST /web/start?phase=S&streams=N`: a new session, or why not.
    pub fn start(
        &self,
        peer: IpAddr,
        host: Option<&str>,
        phase: Option<&str>,
        streams: Option<&str>,
    ) -> WebReply {
        self.reap();
        let phase_s = match phase.map(str::parse::<u32>) {
            None => self.cfg.default_phase_s,
            Some(Ok(p)) if (2..=self.cfg.max_phase_s).contains(&p) => p,
            Some(_) => {
                return WebReply::Text(
                    400,
                    format!("phase must be 2 to {} seconds", self.cfg.max_phase_s),
                );
            }
        };
        let streams = match streams.map(str::parse::<u32>) {
            None => self.cfg.max_streams,
            Some(Ok(n)) if (1..=self.cfg.max_streams).contains(&n) => n,
            Some(_) => {
                return WebReply::Text(
                    400,
                    format!("streams must be 1 to {}", self.cfg.max_streams),
                );
            }
        };
        let phases = result::timeline(self.cfg.idle_s, f64::from(phase_s));
        let total = phases.last().map_or(0.0, |p| p.end_s);
        let id = format!("{:016x}", crate::util::random::u64());
        let (host, port) = host_port(host);
        let session = {
            let Ok(mut m) = self.sessions.lock() else {
                return WebReply::Text(500, "internal error".into());
            };
            let mine = m
                .values()
                .filter(|s| crate::net::addr::same_ip(s.client, peer))
                .count();
            if mine >= self.cfg.max_tests_per_host {
                return WebReply::Text(
                    429,
                    "a test from this device is still running (another tab?): wait for it to end"
                        .into(),
                );
            }
            if m.len() >= self.cfg.max_tests {
                return WebReply::Text(
                    429,
                    format!(
                        "busy: {} browser tests are running, the most this server runs at once; \
                         try again in a minute",
                        m.len()
                    ),
                );
            }
            let s = Arc::new(Session {
                id: id.clone(),
                client: peer,
                host,
                port,
                t0: Instant::now(),
                t0_unix: crate::util::time::unix_now_f64(),
                started_at: crate::util::time::now_rfc3339(),
                phases: phases.clone(),
                idle_s: self.cfg.idle_s,
                streams,
                deadline: Instant::now() + Duration::from_secs_f64(total) + GRACE,
                up_received: Default::default(),
                up_bins: Mutex::new(Vec::new()),
                down_total: Default::default(),
                up_total: Default::default(),
                view: Mutex::new(self.view_of(peer, total)),
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
            "up_bytes": UP_BODY,
        });
        WebReply::Json(doc.to_string().into_bytes())
    }

    /// `GET /web/ping?id`: the probe's answer.
    pub fn ping(&self, peer: IpAddr, id: Option<&str>) -> WebReply {
        match self.session(peer, id) {
            Some(_) => WebReply::Text(200, "ok".into()),
            None => gone(),
        }
    }

    /// `GET /web/down?id&bytes=N`.
    pub fn down(&self, peer: IpAddr, id: Option<&str>, bytes: Option<&str>) -> WebReply {
        let Some(session) = self.session(peer, id) else {
            return gone();
        };
        let want = bytes
            .and_then(|b| b.parse::<u64>().ok())
            .unwrap_or(self.cfg.max_down_request);
        WebReply::Download(WebDownload {
            bytes: want.min(self.cfg.max_down_request),
            session,
            rate: self.cfg.max_rate_bps,
        })
    }

    /// `POST /web/up?id`: the body arrived whole (the HTTP layer bounds it) from `since` on;
    /// counted per step, spread evenly over the time it took to arrive, and dropped.
    pub fn up(&self, peer: IpAddr, id: Option<&str>, body: &[u8], since: Instant) -> WebReply {
        let Some(s) = self.session(peer, id) else {
            return gone();
        };
        let n = body.len() as u64;
        s.count_up(n, since, Instant::now());
        s.up_received
            .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        let total = s
            .up_total
            .fetch_add(n, std::sync::atomic::Ordering::Relaxed)
            + n;
        s.pace(total, self.cfg.max_rate_bps);
        WebReply::Json(format!("{{\"bytes\":{n}}}").into_bytes())
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

    /// `GET /web/router?id&from=K`: the router's view since point K.
    pub fn router(&self, peer: IpAddr, id: Option<&str>, from: Option<&str>) -> WebReply {
        let Some(s) = self.session(peer, id) else {
            return gone();
        };
        let from = from.and_then(|f| f.parse::<usize>().ok()).unwrap_or(0);
        let doc = {
            let Ok(mut v) = s.view.lock() else {
                return WebReply::Text(500, "internal error".into());
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
        WebReply::Json(doc.to_string().into_bytes())
    }

    /// `POST /web/result?id`: the page's samples in, the result document out; the session ends.
    pub fn result(&self, peer: IpAddr, id: Option<&str>, body: &[u8]) -> WebReply {
        let Some(s) = self.session(peer, id) else {
            return gone();
        };
        // Through a `Value`, as every typed parse (util::json): one deserializer per type.
        let samples: PageSamples = match crate::util::json::from_json(body) {
            Ok(p) => p,
            Err(e) => {
                return WebReply::Text(400, format!("result body is not the page's samples: {e}"));
            }
        };
        let facts = SessionFacts {
            host: s.host.clone(),
            port: s.port,
            ip_version: if s.host.contains(':') { 6 } else { 4 },
            t0_unix: s.t0_unix,
            idle_s: s.idle_s,
            phases: s.phases.clone(),
            step_s: STEP_S,
            probe_interval_s: PROBE_INTERVAL_S,
            up_received: s.up_bins.lock().map(|b| b.clone()).unwrap_or_default(),
        };
        if let Err(why) = result::check(&samples, &facts) {
            return WebReply::Text(400, format!("result body out of range: {why}"));
        }
        // The session ends here: its id no longer works.
        if let Ok(mut m) = self.sessions.lock() {
            m.remove(&s.id);
        }
        let doc = self.document(&s, &samples, &facts);
        WebReply::Json((self.encode)(&doc))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn json(r: WebReply) -> serde_json::Value {
        match r {
            WebReply::Json(b) => serde_json::from_slice(&b).unwrap(),
            WebReply::Text(s, t) => panic!("{s} {t}"),
            _ => panic!("not JSON"),
        }
    }

    #[test]
    fn a_session_from_start_to_result_and_its_bounds() {
        let web = Web::new(
            WebConfig {
                root: std::env::temp_dir().join("rb-web-no-such-root"),
                idle_s: 0.2,
                max_down_request: 100_000,
                ..Default::default()
            },
            |r| serde_json::to_vec(r).unwrap(),
        );
        let me: IpAddr = "192.168.1.23".parse().unwrap();
        let other: IpAddr = "192.168.1.24".parse().unwrap();
        let start = json(web.start(me, Some("192.168.1.1:5201"), Some("2"), None));
        let id = start["id"].as_str().unwrap().to_string();
        assert_eq!(start["phases"].as_array().unwrap().len(), 3);
        assert_eq!(start["total_s"], 6.2);
        // One test per device, and bounds on the asks.
        assert!(matches!(
            web.start(me, None, None, None),
            WebReply::Text(429, _)
        ));
        assert!(matches!(
            web.start(other, None, Some("999"), None),
            WebReply::Text(400, _)
        ));
        assert!(matches!(
            web.start(other, None, None, Some("9")),
            WebReply::Text(400, _)
        ));
        // Another device cannot use this session.
        assert!(matches!(web.ping(other, Some(&id)), WebReply::Text(404, _)));
        assert!(matches!(web.ping(me, Some(&id)), WebReply::Text(200, _)));
        let WebReply::Download(d) = web.down(me, Some(&id), Some("1000000000")) else {
            panic!("no download");
        };
        assert_eq!(d.bytes, 100_000, "capped");
        let mut sink = Vec::new();
        d.write(&mut sink).unwrap();
        assert_eq!(sink.len(), 100_000);
        let since = Instant::now() - Duration::from_millis(250);
        assert_eq!(
            json(web.up(me, Some(&id), &[0u8; 1000], since))["bytes"],
            1000
        );
        let view = json(web.router(me, Some(&id), Some("0")));
        assert!(view["verdict"].is_string(), "{view}");
        assert!(matches!(
            web.result(me, Some(&id), b"{"),
            WebReply::Text(400, _)
        ));
        let body = serde_json::json!({
            "step_s": 0.1, "down": [0, 0, 1000], "up": [], "probes": [[0.0, 1.0], [0.1, 1.2], [3.0, 20.0]],
            "timing": "resource-timing", "user_agent": "test"
        });
        let doc = json(web.result(me, Some(&id), body.to_string().as_bytes()));
        assert_eq!(doc["schema"], crate::results::SCHEMA);
        assert_eq!(doc["latency"]["test"], "web");
        assert_eq!(doc["latency"]["host"], "192.168.1.1");
        assert_eq!(doc["web"]["client"], "192.168.1.23");
        assert_eq!(doc["web"]["timing"], "resource-timing");
        // The result ended the session.
        assert!(matches!(web.ping(me, Some(&id)), WebReply::Text(404, _)));
        assert_eq!(web.running(), 0);
        let r: crate::results::RunResult = serde_json::from_value(doc).unwrap();
        assert!(r.latency.is_some() && r.router.is_some());
    }
}
