//! The data streams of a running test, on either side: one worker thread per stream, the
//! interval meter, and the end-of-test block the client and the server share (stop the workers,
//! close the last interval, this side's ends and CPU, the results message, the merged summary).

use super::cpu::{CpuWindow, ThreadCpu};
use super::meter::{LocalEnd, Meter, MeteredStream};
use super::stream::{self, Budget, Counters, DataSock, Gate, WorkerConfig, WorkerEnd};
use super::summary::{self, ResultParts};
use super::{IntervalSink, Iperf3Error, Result, stream_id};
use crate::results::throughput::{Connected, CpuUtil, Interval, Role, ThroughputResult};
use crate::wire::iperf3::{Protocol, TestParams, TestResults};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

/// How this side runs its streams.
pub(crate) struct StreamPlan<'a> {
    pub params: &'a TestParams,
    /// Whether stream `i` (in creation / accept order) sends from this side.
    pub sends: &'a dyn Fn(usize) -> bool,
    /// Rate of this side's sending streams, bit/s (0 = unlimited TCP).
    pub send_rate: u64,
    /// The `-n` / `-k` budget the sending streams share (client only).
    pub budget: Option<Arc<Budget>>,
    /// Pin every stream thread to this CPU.
    pub cpu: Option<usize>,
    /// Seconds between interval samples.
    pub interval: f64,
    /// Whether this side sends in the test's main direction.
    pub main_sends: bool,
    /// Keep a clone of each sending socket, so stopping wakes a sender blocked in a send.
    pub wake_senders: bool,
}

/// The streams of one test while they run. Dropping it stops every worker.
pub(crate) struct Running {
    pub meter: Meter,
    senders: Vec<JoinHandle<WorkerEnd>>,
    receivers: Vec<JoinHandle<WorkerEnd>>,
    wake: Vec<DataSock>,
    connected: Vec<Connected>,
    congestion: Option<String>,
    gate: Arc<Gate>,
    senders_done: Arc<AtomicBool>,
    receivers_done: Arc<AtomicBool>,
    cpu: CpuWindow,
    control_cpu: ThreadCpu,
    udp: bool,
    main_sends: bool,
    /// What the workers said about how they moved data (deduplicated).
    notes: Vec<String>,
}

impl Running {
    /// Spawns one worker per socket; they move data once [`Running::go`] opens the gate.
    /// `cpu` and `control_cpu` started before the control connection's set-up.
    pub fn start(
        socks: Vec<DataSock>,
        plan: &StreamPlan<'_>,
        cpu: CpuWindow,
        control_cpu: ThreadCpu,
    ) -> Result<Running> {
        let p = plan.params;
        let udp = p.protocol == Protocol::Udp;
        let congestion = socks.iter().find_map(|s| match s {
            DataSock::Tcp(t) => crate::net::sockopt::congestion(t).ok(),
            DataSock::Udp(_) => None,
        });
        let mut run = Running {
            meter: Meter::new(Vec::new(), p.omit, plan.interval, plan.main_sends),
            senders: Vec::new(),
            receivers: Vec::new(),
            wake: Vec::new(),
            connected: Vec::new(),
            congestion,
            gate: Arc::new(Gate::default()),
            senders_done: Arc::new(AtomicBool::new(false)),
            receivers_done: Arc::new(AtomicBool::new(false)),
            cpu,
            control_cpu,
            udp,
            main_sends: plan.main_sends,
            notes: Vec::new(),
        };
        let mut metered = Vec::with_capacity(socks.len());
        let n_streams = socks.len();
        for (i, sock) in socks.into_iter().enumerate() {
            let id = stream_id(i);
            let sender = (plan.sends)(i);
            let counters = Arc::new(Counters::default());
            let mut m = MeteredStream::new(id, sender, udp, counters.clone());
            if let DataSock::Tcp(t) = &sock {
                m.info = t.try_clone().ok();
            }
            run.connected.push(summary::connected(id, &sock));
            if sender && plan.wake_senders {
                if let Ok(w) = sock.try_clone() {
                    run.wake.push(w);
                }
            }
            let wcfg = WorkerConfig {
                sender,
                len: p.block_len() as usize,
                rate: if sender { plan.send_rate } else { p.bandwidth },
                wide: p.udp_counters_64bit,
                repeating_payload: p.repeating_payload,
                budget: if sender { plan.budget.clone() } else { None },
                drain: true,
                cpu: plan.cpu,
                zerocopy: sender && p.zerocopy,
                skip_rx_copy: !sender && p.skip_rx_copy,
                udp_offload: true,
                rcvlowat: if sender || udp {
                    None
                } else {
                    stream::receive_lowat(p.block_len() as usize, n_streams, p.window)
                },
            };
            let flag = if sender {
                &run.senders_done
            } else {
                &run.receivers_done
            };
            // On failure `run` drops here, which stops the workers already spawned.
            let h = stream::spawn(id, sock, wcfg, counters, flag.clone(), run.gate.clone())
                .map_err(|e| Iperf3Error::io("spawn stream thread", e))?;
            metered.push(m);
            if sender {
                run.senders.push(h);
            } else {
                run.receivers.push(h);
            }
        }
        run.meter = Meter::new(metered, p.omit, plan.interval, plan.main_sends);
        Ok(run)
    }

    /// Tells `sink` the streams are connected and lets the data move.
    pub fn go(&self, sink: &dyn IntervalSink) {
        sink.started(&self.connected);
        self.gate.open();
    }

    /// Whether this side has senders and every one of them has ended (a `-n`/`-k` budget
    /// used up).
    pub fn senders_finished(&self) -> bool {
        !self.senders.is_empty() && self.senders.iter().all(|h| h.is_finished())
    }

    /// Whether the senders were told to stop.
    pub fn senders_stopped(&self) -> bool {
        self.senders_done.load(Ordering::Relaxed)
    }

    /// Tells the senders to stop and wakes those blocked in a send, without waiting.
    pub fn wake_senders(&self) {
        self.senders_done.store(true, Ordering::Relaxed);
        for w in &self.wake {
            w.wake();
        }
    }

    /// Stops the senders and waits for them (the client, before TEST_END).
    pub fn stop_senders(&mut self) {
        self.wake_senders();
        for h in std::mem::take(&mut self.senders) {
            if let Ok(end) = h.join() {
                self.ended(end);
            }
        }
    }

    /// Stops the receivers (each drains what is in flight, at most DRAIN_MAX) and waits for
    /// them.
    pub fn stop_receivers(&mut self) {
        self.receivers_done.store(true, Ordering::Relaxed);
        for h in std::mem::take(&mut self.receivers) {
            if let Ok(end) = h.join() {
                self.ended(end);
            }
        }
    }

    fn ended(&mut self, end: WorkerEnd) {
        self.cpu.add(end.cpu);
        if let Some(n) = end.note {
            if !self.notes.contains(&n) {
                self.notes.push(n);
            }
        }
    }

    /// Stops both at once (the server: senders at once, receivers after draining).
    pub fn stop_all(&mut self) {
        self.receivers_done.store(true, Ordering::Relaxed);
        self.stop_senders();
        self.stop_receivers();
    }

    /// Closes the meter at `end_t` (seconds since the start), hands a last partial interval to
    /// `sink`, and returns this side's ends. Call after the workers stopped.
    pub fn finish(mut self, end_t: f64, sink: &dyn IntervalSink) -> Ended {
        let before = self.meter.intervals.len();
        let ends = self.meter.finish(end_t);
        if self.meter.intervals.len() > before {
            if let Some(last) = self.meter.intervals.last() {
                sink.interval(last);
            }
        }
        Ended {
            ends,
            intervals: std::mem::take(&mut self.meter.intervals),
            connected: std::mem::take(&mut self.connected),
            congestion: self.congestion.take(),
            cpu: self.cpu,
            control_cpu: self.control_cpu,
            udp: self.udp,
            main_sends: self.main_sends,
            io_paths: std::mem::take(&mut self.notes),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // An early return (error) must not leave workers waiting at the gate or sending.
        self.receivers_done.store(true, Ordering::Relaxed);
        self.senders_done.store(true, Ordering::Relaxed);
    }
}

/// This side's view once its streams stopped: what goes into the results message and the
/// summary.
pub(crate) struct Ended {
    pub ends: Vec<LocalEnd>,
    intervals: Vec<Interval>,
    connected: Vec<Connected>,
    congestion: Option<String>,
    cpu: CpuWindow,
    control_cpu: ThreadCpu,
    udp: bool,
    main_sends: bool,
    /// How this side's workers moved data (`-Z`'s method, UDP batching): the result's
    /// `io_paths`, shown with `-V` (iperf3 prints nothing of the kind).
    pub io_paths: Vec<String>,
}

/// Who this side is, for its summary.
pub(crate) struct SideInfo {
    pub role: Role,
    pub peer_version: Option<String>,
    pub host: String,
    pub port: u16,
    pub tcp_mss_default: Option<u32>,
    pub buffers: (u64, u64),
    pub cookie: String,
    /// When the test started (TEST_START), seconds since the Unix epoch.
    pub timesecs: u64,
}

impl Ended {
    /// This side's CPU use over the test, with the control thread's (call on the control
    /// thread, once, when the results are exchanged).
    pub fn cpu_util(&mut self) -> CpuUtil {
        self.cpu.add(self.control_cpu.stop());
        self.cpu.util()
    }

    /// The results message for the peer; `peer` is its message when already known.
    pub fn results_message(&self, cpu: CpuUtil, peer: Option<&TestResults>) -> TestResults {
        summary::results_message(&self.ends, cpu, self.congestion.clone(), self.udp, peer)
    }

    /// Merges both sides into this side's result.
    pub fn summarise(
        self,
        side: SideInfo,
        params: &TestParams,
        peer: &TestResults,
        cpu: CpuUtil,
        notes: Vec<String>,
    ) -> ThroughputResult {
        let mut result = summary::build_result(ResultParts {
            role: side.role,
            peer_version: side.peer_version,
            host: side.host,
            port: side.port,
            cookie: side.cookie,
            timesecs: side.timesecs,
            setup: summary::setup_from(params),
            tcp_mss_default: side.tcp_mss_default,
            buffers: side.buffers,
            connected: self.connected,
            intervals: self.intervals,
            ends: &self.ends,
            peer,
            cpu_local: cpu,
            main_local_sends: self.main_sends,
            congestion: self.congestion,
        });
        result.notes = notes;
        result.io_paths = self.io_paths;
        result
    }
}

/// Seconds since the Unix epoch (the result's `timesecs`).
pub(crate) fn unix_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
