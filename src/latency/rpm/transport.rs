//! What the RPM driver needs from a transport: load-generating connections it can count and
//! put self probes on, and foreign probes on fresh connections. Implemented over routerbench's
//! own protocol (`rb.rs`); an HTTP/2-over-TLS transport would implement the same trait.
//! Probes report into a shared [`ProbeLog`] through a [`Ticket`], so a slow probe never holds
//! up the schedule.

use crate::wire::rb::Direction;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Foreign or self.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeKind {
    Foreign,
    SelfProbe,
}

/// What a completed probe measured (draft §5.3's tcp_f, tls_f, http_f / http_l).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Timing {
    pub tcp: Option<Duration>,
    /// The TLS handshake, whole (the driver divides it by `tls_round_trips`).
    pub tls: Option<Duration>,
    pub tls_round_trips: Option<u32>,
    pub http: Duration,
    /// The sender's unsent bytes when it queued the probe.
    pub unsent: Option<u32>,
}

/// One probe as the log holds it.
#[derive(Debug, Clone)]
pub struct Entry {
    pub kind: ProbeKind,
    pub launched: Instant,
    pub interval: usize,
    pub connection: Option<(u32, Direction)>,
    pub timing: Option<Timing>,
    pub error: Option<String>,
}

impl Entry {
    pub fn pending(&self) -> bool {
        self.timing.is_none() && self.error.is_none()
    }
}

/// Every probe of a run, in launch order.
#[derive(Debug, Clone, Default)]
pub struct ProbeLog(Arc<Mutex<Vec<Entry>>>);

impl ProbeLog {
    /// Registers a launch; the ticket reports its outcome.
    pub fn launch(
        &self,
        kind: ProbeKind,
        interval: usize,
        connection: Option<(u32, Direction)>,
    ) -> Ticket {
        let mut v = match self.0.lock() {
            Ok(v) => v,
            Err(p) => p.into_inner(),
        };
        v.push(Entry {
            kind,
            launched: Instant::now(),
            interval,
            connection,
            timing: None,
            error: None,
        });
        Ticket {
            log: self.clone(),
            index: v.len() - 1,
            launched: v[v.len() - 1].launched,
        }
    }

    /// A copy of the entries.
    pub fn entries(&self) -> Vec<Entry> {
        match self.0.lock() {
            Ok(v) => v.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    pub fn pending(&self) -> usize {
        self.entries().iter().filter(|e| e.pending()).count()
    }

    fn set(&self, index: usize, f: impl FnOnce(&mut Entry)) {
        let mut v = match self.0.lock() {
            Ok(v) => v,
            Err(p) => p.into_inner(),
        };
        if let Some(e) = v.get_mut(index) {
            if e.pending() {
                f(e);
            }
        }
    }
}

/// The right to report one probe's outcome (first report wins).
#[derive(Debug, Clone)]
pub struct Ticket {
    log: ProbeLog,
    index: usize,
    /// When the probe was launched (timings are measured from here by self probes).
    pub launched: Instant,
}

impl Ticket {
    pub fn done(&self, t: Timing) {
        self.log.set(self.index, |e| e.timing = Some(t));
    }
    pub fn fail(&self, why: impl Into<String>) {
        let why = why.into();
        self.log.set(self.index, |e| e.error = Some(why));
    }
    /// The id a transport puts on the wire for this probe.
    pub fn id(&self) -> u32 {
        self.index as u32
    }
}

/// A load-generating connection (draft §5.1): bulk data in one direction, self probes on it.
pub trait LoadConnection: Send + Sync {
    /// Goodput bytes so far: received (download) or acknowledged by the peer (upload).
    fn bytes(&self) -> u64;
    /// Puts a self probe on this connection, behind the data already queued. Returns at once.
    fn self_probe(&self, ticket: Ticket);
    /// Why the connection ended, if it did.
    fn failure(&self) -> Option<String>;
    /// Stops the transfer and closes the connection.
    fn close(&self);
}

/// A way to load a path and probe it.
pub trait Transport: Send + Sync {
    /// `routerbench TCP`, `HTTP/2 over TLS 1.3`, …
    fn describe(&self) -> String;
    /// Whether foreign probes include a TLS handshake (TLS-enabled vs TCP-only scoring, §5.3.1).
    fn tls(&self) -> bool;
    /// Opens load-generating connection `id` in `direction` and starts its transfer.
    fn open_load(&self, direction: Direction, id: u32) -> Result<Box<dyn LoadConnection>, String>;
    /// Starts a foreign probe (a fresh connection) and returns at once.
    fn foreign_probe(&self, ticket: Ticket);
}
