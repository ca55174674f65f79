//! Watching the machine under test for the whole run: this machine's sampler, and with an agent
//! the router's samples, kept through a broken stream (the samples up to the break stay), with
//! a new subscription tried every few seconds so a router that reboots is seen coming back (its
//! uptime then tells the reboot). Every part ends up on the run's time axis.

use crate::monitor::remote::{self, RemoteConfig, RemoteMonitor};
use crate::monitor::{MonitorError, Sampler, SamplerConfig};
use crate::results::monitor::{MonitorResult, MonitorSample};
use std::sync::mpsc::{Receiver, SyncSender};
use std::time::{Duration, Instant};

/// The router's agent to subscribe to.
#[derive(Debug, Clone)]
pub struct AgentTarget {
    /// `HOST[:PORT]`.
    pub address: String,
    pub token: Option<String>,
    pub interval: Duration,
}

/// How often a lost agent is asked again.
const RETRY: Duration = Duration::from_secs(5);

/// The agent's subscriptions over the run.
pub struct Router {
    target: AgentTarget,
    live: SyncSender<MonitorSample>,
    current: Option<RemoteMonitor>,
    /// Earlier subscriptions (on the agent's clock until `finish`).
    parts: Vec<MonitorResult>,
    next_try: Instant,
}

/// What a lost or regained agent means for the run.
pub enum Change {
    Lost(String),
    Back,
}

impl Router {
    /// Subscribes; a refusal (wrong token, busy, no agent) is an error before the run starts.
    pub fn start(
        target: &AgentTarget,
        run_length: Duration,
        live: SyncSender<MonitorSample>,
    ) -> Result<Self, MonitorError> {
        let first = RemoteMonitor::start(&config(target, run_length), Some(live.clone()))?;
        Ok(Self {
            target: target.clone(),
            live,
            current: Some(first),
            parts: Vec::new(),
            next_try: Instant::now(),
        })
    }

    /// Called every tick with the time left: notices a stream that ended, and tries a new
    /// subscription every few seconds while none runs.
    pub fn poll(&mut self, left: Duration) -> Option<Change> {
        match &self.current {
            Some(r) if r.is_finished() => {
                let received = self.current.take()?.stop_keeping();
                if received.error.is_none() {
                    // The agent ended a whole subscription (its --max-duration): go on with a
                    // new one at once; only a failure to get one is a loss.
                    self.parts.push(received.result);
                    let mut cfg = config(&self.target, left);
                    cfg.connect_timeout = Duration::from_secs(2);
                    if let Ok(r) = RemoteMonitor::start(&cfg, Some(self.live.clone())) {
                        self.current = Some(r);
                        return None;
                    }
                    self.next_try = Instant::now() + RETRY;
                    return Some(Change::Lost(
                        "the agent ended the subscription and refused a new one".into(),
                    ));
                }
                let why = received.error.map(|e| anyhow_like(&e)).unwrap_or_default();
                self.parts.push(received.result);
                self.next_try = Instant::now() + RETRY;
                Some(Change::Lost(why))
            }
            Some(_) => None,
            None if Instant::now() >= self.next_try && left > RETRY => {
                self.next_try = Instant::now() + RETRY;
                let mut cfg = config(&self.target, left);
                cfg.connect_timeout = Duration::from_secs(2);
                match RemoteMonitor::start(&cfg, Some(self.live.clone())) {
                    Ok(r) => {
                        self.current = Some(r);
                        Some(Change::Back)
                    }
                    Err(_) => None,
                }
            }
            None => None,
        }
    }

    /// Ends the subscription; every part's samples on the run's axis (`t0_unix_s`), merged.
    pub fn finish(mut self, t0_unix_s: f64) -> MonitorResult {
        if let Some(r) = self.current.take() {
            let received = r.stop_keeping();
            let mut part = received.result;
            if let Some(e) = received.error {
                part.notes.push(format!("at the end: {}", anyhow_like(&e)));
            }
            self.parts.push(part);
        }
        merge(self.parts, t0_unix_s)
    }
}

/// The error with its causes, as one line.
fn anyhow_like(e: &MonitorError) -> String {
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(c) = src {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        src = c.source();
    }
    s
}

fn config(t: &AgentTarget, run_length: Duration) -> RemoteConfig {
    RemoteConfig::new(
        &t.address,
        t.token.clone(),
        t.interval,
        run_length + Duration::from_secs(30),
    )
}

/// Subscriptions one after another into one result on the run's axis.
pub fn merge(parts: Vec<MonitorResult>, t0_unix_s: f64) -> MonitorResult {
    let mut out = MonitorResult::default();
    for (i, mut p) in parts.into_iter().enumerate() {
        remote::onto_test_axis(&mut p, t0_unix_s);
        if i == 0 {
            out.interval_s = p.interval_s;
            out.queue_interval_s = p.queue_interval_s;
            out.agent = p.agent.clone();
        }
        if out.cpus.is_empty() {
            out.cpus = p.cpus.clone();
        }
        out.samples.append(&mut p.samples);
        for n in p.notes {
            if !out.notes.contains(&n) {
                out.notes.push(n);
            }
        }
        if !p.top_processes.is_empty() {
            out.top_processes = p.top_processes;
        }
        if !p.summary.queues.is_empty() {
            out.summary.queues = p.summary.queues;
        }
    }
    out.samples.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    let queues = std::mem::take(&mut out.summary.queues);
    out.summary = crate::monitor::sampler::summarize(&out.samples, out.interval_s);
    out.summary.queues = queues;
    out.start_unix_s = Some(t0_unix_s);
    out
}

/// This machine's sampler for the run.
pub fn start_local(
    interval: Duration,
    run_length: Duration,
    live: Option<SyncSender<MonitorSample>>,
) -> std::io::Result<Sampler> {
    Sampler::start(SamplerConfig {
        interval,
        max_duration: run_length + Duration::from_secs(60),
        live,
        ..SamplerConfig::default()
    })
}

/// The newest sample waiting in `rx`, if any.
pub fn latest(rx: &Receiver<MonitorSample>) -> Option<MonitorSample> {
    let mut last = None;
    for _ in 0..1024 {
        match rx.try_recv() {
            Ok(s) => last = Some(s),
            Err(_) => break,
        }
    }
    last
}
