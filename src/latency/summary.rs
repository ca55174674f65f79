//! Turns what the runner collected (raw probe timestamps, per-step byte counts) into the result
//! model: RTTs from kernel timestamps, one-way delays through the clock offset, loss per
//! direction, per-series statistics, idle vs loaded latency, grade and round trips per minute. No I/O.

use super::figures as stats;
use super::plan::{FlowPlan, ProbeKind, dir_word};
use super::probe::{RawProbe, StreamData};
use crate::results::latency::*;
use crate::stats::{Exchange, clock_offset};
use crate::wire::rb::Direction;

/// One load flow as the runner collected it.
#[derive(Debug, Clone)]
pub struct RawFlow {
    pub plan: FlowPlan,
    pub tos_client: Option<u8>,
    pub tos_server: Option<u8>,
    pub cc_client: Option<String>,
    pub cc_server: Option<String>,
    /// Per step: bytes delivered to the receiver and the sender's TCP RTT (µs).
    pub steps: Vec<(u64, Option<u32>)>,
    /// When its load began, s from T0 (None: DELAY, flent's timeline).
    pub start_s: Option<f64>,
    /// Every byte the client wrote (upload) or read (download), the drain after the load
    /// window included.
    pub total_bytes: Option<u64>,
}

/// Everything a run produced, before summarising.
#[derive(Debug, Clone)]
pub struct RawRun {
    pub test: String,
    pub host: String,
    pub port: u16,
    pub ip_version: u8,
    pub started_at: String,
    /// T0, CLOCK_REALTIME ns: when probing began.
    pub t0_ns: u64,
    pub length_s: f64,
    pub delay_s: f64,
    pub step_s: f64,
    pub has_load: bool,
    pub probe_interval_s: f64,
    pub probe_size: usize,
    pub congestion_control: Option<String>,
    /// Every server address used, when the test had more than one session.
    pub hosts: Vec<String>,
    /// The whole timeline when it is not DELAY + LENGTH + DELAY (phases).
    pub total_length_s: Option<f64>,
    /// The sessions and their load windows (one for most tests).
    pub sessions: Vec<RawSession>,
    pub flows: Vec<RawFlow>,
    pub probes: Vec<StreamData>,
    /// Per probe stream index: (received by the reflector, answered by it).
    pub reflector_counts: Vec<Option<(u32, u32)>>,
    pub notes: Vec<String>,
}

/// One session of the run (a control connection to one server address) and its load window.
#[derive(Debug, Clone, PartialEq)]
pub struct RawSession {
    pub index: usize,
    pub addr: String,
    pub ip_version: u8,
    pub load_start_s: f64,
    pub load_end_s: f64,
    pub phase: Option<String>,
}

/// Drift beyond this (µs per s) earns a note: quartz drifts tens of ppm, not hundreds.
pub const DRIFT_WARN_PPM: f64 = 200.0;

fn ms(ns: i64) -> f64 {
    ns as f64 / 1e6
}

/// The four timestamps of a UDP exchange, best available (kernel, else user space).
fn exchange(p: &RawProbe) -> Option<Exchange> {
    Some(Exchange {
        client_send: p.send_kernel_ns.unwrap_or(p.send_user_ns),
        server_rx: p.server_rx_ns?,
        server_tx: p.server_tx_kernel_ns.or(p.server_tx_user_ns)?,
        client_recv: p.recv_kernel_ns.or(p.recv_user_ns)?,
    })
}

impl RawRun {
    fn t_of(&self, ns: u64) -> f64 {
        (ns as i64 - self.t0_ns as i64) as f64 / 1e9
    }
    /// The idle baseline: the lead-in before the load (the tail is still draining queues, so it
    /// serves the drift check only); the whole run for `ping`.
    fn is_idle(&self, t: f64) -> bool {
        !self.has_load || t < self.delay_s
    }
    /// Inside a load window: DELAY..DELAY+LENGTH, or (phases) any session's window.
    fn is_loaded(&self, t: f64) -> bool {
        if !self.has_load {
            return false;
        }
        if self.total_length_s.is_some() && !self.sessions.is_empty() {
            return self
                .sessions
                .iter()
                .any(|s| t >= s.load_start_s && t < s.load_end_s);
        }
        t >= self.delay_s && t < self.delay_s + self.length_s
    }
    /// When the last load ends (the idle tail starts).
    fn load_end(&self) -> f64 {
        match self.total_length_s {
            Some(_) => self
                .sessions
                .iter()
                .map(|s| s.load_end_s)
                .fold(self.delay_s + self.length_s, f64::max),
            None => self.delay_s + self.length_s,
        }
    }
    fn total_length(&self) -> f64 {
        if let Some(t) = self.total_length_s {
            return t;
        }
        if self.has_load {
            self.length_s + 2.0 * self.delay_s
        } else {
            self.length_s
        }
    }
    /// Whether the sessions went to more than one server (then one clock fit would mix their
    /// clocks: one-way delays are left out).
    fn several_servers(&self) -> bool {
        let mut hosts: Vec<&str> = self.sessions.iter().map(|s| s.addr.as_str()).collect();
        hosts.sort_unstable();
        hosts.dedup();
        // rrul46's two sessions reach one machine by two addresses: one clock.
        hosts.len() > 1 && self.test != "rrul46"
    }

    /// Offset at the start (idle lead-in) and end (idle tail) from the UDP probes.
    fn clock(&self) -> Option<Clock> {
        if self.several_servers() {
            return None;
        }
        let (head_end, tail_start) = if self.has_load {
            (self.delay_s, self.load_end())
        } else {
            (f64::INFINITY, f64::INFINITY)
        };
        let mut head = Vec::new();
        let mut tail = Vec::new();
        for s in self.probes.iter().filter(|s| s.plan.kind == ProbeKind::Udp) {
            for p in &s.samples {
                let Some(e) = exchange(p) else { continue };
                let t = self.t_of(p.send_user_ns);
                if t < head_end {
                    head.push(e);
                } else if t >= tail_start {
                    tail.push(e);
                }
            }
        }
        let (start, used, at_head) = clock_offset(&head)?;
        let t_head = self.t_of(at_head);
        let tail_est = clock_offset(&tail);
        let end = tail_est.map(|(o, _, _)| o);
        let t_tail = tail_est.map(|(_, _, at)| self.t_of(at)).unwrap_or(t_head);
        let drift_ppm = end
            .filter(|_| t_tail > t_head)
            .map(|e| (e - start) / 1e3 / (t_tail - t_head));
        let sync = ClockSync {
            offset_ms: start / 1e6,
            offset_end_ms: end.map(|e| e / 1e6),
            drift_ppm,
            samples: used,
        };
        Some((sync, t_head, t_tail))
    }

    /// Builds the result: the clock fit, then each probe series, each flow, and the summary
    /// over all of them.
    pub fn summarise(mut self) -> LatencyResult {
        let clock = self.clock();
        if self.several_servers() {
            self.notes.push(
                "several servers, each with its own clock: one-way delays are not computed (the \
                 round trips are)"
                    .into(),
            );
        }
        if let Some(d) = clock
            .as_ref()
            .and_then(|c| c.0.drift_ppm)
            .filter(|d| d.abs() > DRIFT_WARN_PPM)
        {
            self.notes.push(format!(
                "clock offset moved {d:.0} ppm between the idle lead-in and tail: one-way delays \
                 are corrected linearly but less certain (NTP stepping the clock during the test?)"
            ));
        }
        let mut pools = Pools::default();
        let mut probes = Vec::new();
        for idx in 0..self.probes.len() {
            let (result, note) = self.probe_series(idx, clock.as_ref(), &mut pools);
            self.notes.extend(note);
            probes.extend(result);
        }
        let flows = self.flow_results();
        for f in flows.iter().filter(|f| f.bytes == 0) {
            self.notes.push(format!(
                "{} moved no data: the path dropped or blocked it (a firewall, or a shaper whose \
                 burst is smaller than the packets?)",
                f.name
            ));
        }
        let summary = self.latency_summary(pools);
        let mut result = LatencyResult {
            test: self.test.clone(),
            host: self.host.clone(),
            port: self.port,
            ip_version: self.ip_version,
            started_at: self.started_at.clone(),
            t0_unix: self.t0_ns as f64 / 1e9,
            length_s: self.length_s,
            delay_s: if self.has_load { self.delay_s } else { 0.0 },
            step_s: self.step_s,
            total_length_s: self.total_length(),
            hosts: self.hosts.clone(),
            sessions: if self.sessions.len() > 1 {
                self.sessions
                    .iter()
                    .map(|s| crate::results::latency::LatencySession {
                        index: s.index,
                        addr: s.addr.clone(),
                        ip_version: s.ip_version,
                        load_start_s: s.load_start_s,
                        load_end_s: s.load_end_s,
                        phase: s.phase.clone(),
                    })
                    .collect()
            } else {
                Vec::new()
            },
            probe_interval_s: self.probe_interval_s,
            probe_size: self.probe_size,
            congestion_control: self.congestion_control.clone(),
            flows,
            probes,
            clock: clock.map(|c| c.0),
            summary,
            phases: Vec::new(),
            notes: self.notes,
            interrupted: false,
        };
        result.phases = super::phases::summaries(&result);
        result
    }

    /// One probe point: RTT (kernel stamps, minus the reflector's hold for UDP), user-space
    /// RTT and delay, one-way delays through the clock offset.
    fn probe_point(&self, p: &RawProbe, udp: bool, clock: Option<&Clock>) -> ProbePoint {
        let t = self.t_of(p.send_user_ns);
        let mut pt = ProbePoint {
            t,
            seq: p.seq,
            rtt_ms: None,
            rtt_user_ms: None,
            owd_up_ms: None,
            owd_down_ms: None,
            user_delay_ms: None,
            server_ms: None,
        };
        let Some(recv_user) = p.recv_user_ns else {
            return pt;
        };
        let send = p.send_kernel_ns.unwrap_or(p.send_user_ns);
        let recv = p.recv_kernel_ns.unwrap_or(recv_user);
        pt.rtt_user_ms = Some(ms(recv_user as i64 - p.send_user_ns as i64));
        if let (Some(k), Some(sk)) = (p.recv_kernel_ns, p.send_kernel_ns) {
            pt.user_delay_ms =
                Some(ms((recv_user - k.min(recv_user)) as i64
                    + (sk as i64 - p.send_user_ns as i64).max(0)));
        }
        pt.rtt_ms = Some(ms(recv as i64 - send as i64));
        if let Some(e) = exchange(p).filter(|_| udp) {
            pt.rtt_ms = Some(ms(e.rtt_ns()));
            pt.server_ms = Some(ms(e.server_tx as i64 - e.server_rx as i64));
            if let Some(off) = offset_at(clock, t) {
                // Integer differences first: absolute ns lose precision in an f64.
                let up = (e.server_rx as i64 - e.client_send as i64) as f64 - off;
                let down = (e.client_recv as i64 - e.server_tx as i64) as f64 + off;
                pt.owd_up_ms = Some(up / 1e6);
                pt.owd_down_ms = Some(down / 1e6);
            }
        }
        pt
    }

    /// Probe series `idx`: its points (added to the idle/loaded pools), counts, timestamp kind
    /// and statistics; plus a note when no UDP probe came back.
    fn probe_series(
        &self,
        idx: usize,
        clock: Option<&Clock>,
        pools: &mut Pools,
    ) -> (Option<ProbeResult>, Option<String>) {
        let Some(s) = self.probes.get(idx) else {
            return (None, None);
        };
        let udp = s.plan.kind == ProbeKind::Udp;
        let mut points = Vec::with_capacity(s.samples.len());
        let (mut n_kernel_tx, mut n_kernel_rx, mut received) = (0usize, 0usize, 0u32);
        let (mut n_srv_rx, mut n_srv_tx) = (0usize, 0usize);
        for p in &s.samples {
            let pt = self.probe_point(p, udp, clock);
            if p.recv_user_ns.is_some() {
                received += 1;
                n_kernel_tx += p.send_kernel_ns.is_some() as usize;
                n_kernel_rx += p.recv_kernel_ns.is_some() as usize;
                n_srv_rx += p.server_rx_kernel as usize;
                n_srv_tx += p.server_tx_kernel_ns.is_some() as usize;
            }
            pools.add(self, &pt);
            points.push(pt);
        }
        let sent = s.samples.iter().filter(|p| !p.send_failed).count() as u32;
        let failed = s.samples.len() as u32 - sent;
        let note = (udp && !s.samples.is_empty() && received == 0).then(|| {
            format!(
                "{}: none of {} UDP probes came back ({failed} sends failed): is the \
                 reflector's UDP port blocked by a firewall or NAT between here and the server?",
                s.plan.name,
                s.samples.len()
            )
        });
        let counts = self
            .reflector_counts
            .get(idx)
            .copied()
            .flatten()
            .filter(|_| udp);
        let timestamps = match (received as usize, n_kernel_tx, n_kernel_rx) {
            (0, _, _) => "none",
            (r, tx, rx) if tx * 2 >= r && rx * 2 >= r => "kernel",
            (r, _, rx) if rx * 2 >= r => "kernel-rx",
            _ => "user",
        };
        let server_timestamps = udp.then(|| {
            match (received as usize, n_srv_tx, n_srv_rx) {
                (0, _, _) => "none",
                (r, tx, rx) if tx * 2 >= r && rx * 2 >= r => "kernel",
                (r, _, rx) if rx * 2 >= r => "kernel-rx",
                (r, tx, _) if tx * 2 >= r => "kernel-tx",
                _ => "user",
            }
            .to_string()
        });
        let window = |loaded: bool| {
            stats::series_stats(
                points
                    .iter()
                    .filter(|p| {
                        if loaded {
                            self.is_loaded(p.t)
                        } else {
                            self.is_idle(p.t)
                        }
                    })
                    .filter_map(|p| p.rtt_ms),
            )
        };
        let result = ProbeResult {
            name: s.plan.name.clone(),
            kind: if udp { "udp" } else { "icmp" }.into(),
            tos: s.plan.tos,
            timestamps: timestamps.into(),
            server_timestamps,
            sent,
            received,
            lost_up: counts.map(|(r, _)| sent.saturating_sub(r)),
            lost_down: counts.map(|(_, a)| a.saturating_sub(received)),
            rtt_ms: stats::series_stats(points.iter().filter_map(|p| p.rtt_ms)),
            rtt_user_ms: stats::series_stats(points.iter().filter_map(|p| p.rtt_user_ms)),
            idle_rtt_ms: window(false),
            loaded_rtt_ms: window(true),
            samples: points,
            note: s.note.clone(),
        };
        (Some(result), note)
    }

    /// Each flow's throughput and TCP RTT per step, and their statistics.
    fn flow_results(&self) -> Vec<FlowResult> {
        self.flows
            .iter()
            .map(|f| {
                let samples: Vec<ThroughputSample> = f
                    .steps
                    .iter()
                    .enumerate()
                    .map(|(k, &(bytes, rtt))| ThroughputSample {
                        t: f.start_s.unwrap_or(self.delay_s) + (k + 1) as f64 * self.step_s,
                        mbps: bytes as f64 * 8.0 / self.step_s / 1e6,
                        tcp_rtt_ms: rtt.filter(|&r| r > 0).map(|r| r as f64 / 1e3),
                    })
                    .collect();
                FlowResult {
                    name: f.plan.name.clone(),
                    label: f.plan.label.clone(),
                    direction: dir_word(f.plan.direction).into(),
                    tos: f.plan.tos,
                    tos_client: f.tos_client,
                    tos_server: f.tos_server,
                    cc_client: f.cc_client.clone(),
                    cc_server: f.cc_server.clone(),
                    bytes: f.steps.iter().map(|s| s.0).sum(),
                    bytes_all: f.total_bytes,
                    mbps: stats::series_stats(samples.iter().map(|s| s.mbps)),
                    tcp_rtt_ms: stats::series_stats(samples.iter().filter_map(|s| s.tcp_rtt_ms)),
                    samples,
                }
            })
            .collect()
    }

    /// Idle vs loaded over all probe series, grade, RPM, throughput per direction.
    fn latency_summary(&self, pools: Pools) -> LatencySummary {
        let dir_mbps = |d: Direction| {
            let fl: Vec<&RawFlow> = self
                .flows
                .iter()
                .filter(|f| f.plan.direction == d)
                .collect();
            // Flows that load at the same time add up; loads one after the other (phases:
            // each flow's start) are averaged, so a direction loaded in two phases is not
            // counted twice.
            let mut starts: Vec<u64> = fl
                .iter()
                .map(|f| f.start_s.unwrap_or(self.delay_s).to_bits())
                .collect();
            starts.sort_unstable();
            starts.dedup();
            (!fl.is_empty() && self.length_s > 0.0).then(|| {
                fl.iter()
                    .flat_map(|f| f.steps.iter().map(|s| s.0))
                    .sum::<u64>() as f64
                    * 8.0
                    / self.length_s
                    / 1e6
                    / starts.len() as f64
            })
        };
        let idle = stats::series_stats(pools.idle);
        let loaded = stats::series_stats(pools.loaded);
        let increase = loaded.mean.zip(idle.mean).map(|(l, i)| l - i);
        LatencySummary {
            grade: increase.map(|x| stats::grade(x).to_string()),
            increase_ms: increase,
            rpm_loaded: loaded.mean.and_then(stats::rpm),
            rpm_idle: idle.mean.and_then(stats::rpm),
            idle_rtt_ms: idle,
            loaded_rtt_ms: loaded,
            upload_mbps: dir_mbps(Direction::Upload),
            download_mbps: dir_mbps(Direction::Download),
            loaded_owd_up_ms: stats::series_stats(pools.up),
            loaded_owd_down_ms: stats::series_stats(pools.down),
            loaded_rtt_user_ms: stats::series_stats(pools.loaded_user),
            user_delay_ms: stats::series_stats(pools.user_delay),
        }
    }
}

/// The clock fit: the sync figures, and the times (s since T0) of the head and tail estimates.
type Clock = (ClockSync, f64, f64);

/// Offset (ns) at time t: linear between the head and tail estimates (drift correction).
fn offset_at(clock: Option<&Clock>, t: f64) -> Option<f64> {
    let (c, th, tt) = clock?;
    let start = c.offset_ms * 1e6;
    Some(match c.offset_end_ms {
        Some(end) if tt > th => start + (end * 1e6 - start) * (t - th) / (tt - th),
        _ => start,
    })
}

/// The samples of every probe series together, for the summary.
#[derive(Default)]
struct Pools {
    idle: Vec<f64>,
    loaded: Vec<f64>,
    loaded_user: Vec<f64>,
    up: Vec<f64>,
    down: Vec<f64>,
    user_delay: Vec<f64>,
}

impl Pools {
    fn add(&mut self, run: &RawRun, pt: &ProbePoint) {
        if let Some(r) = pt.rtt_ms {
            if run.is_loaded(pt.t) {
                self.loaded.push(r);
                self.loaded_user.extend(pt.rtt_user_ms);
                self.up.extend(pt.owd_up_ms);
                self.down.extend(pt.owd_down_ms);
            } else if run.is_idle(pt.t) {
                self.idle.push(r);
            }
        }
        self.user_delay.extend(pt.user_delay_ms);
    }
}

#[cfg(test)]
#[path = "summary_tests.rs"]
mod tests;
