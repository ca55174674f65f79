//! One session of a latency test: a control connection to one server address with the flows
//! and probes the plan gives it. Opened when its probe window begins, Start sent ahead of its
//! load, closed (threads joined, Finish → Finished) when its window ends, so a test with several
//! sessions (rrul46, rtt_fair, phases; `runner`) keeps each server's session only as long as it
//! is used.

use super::conn;
use super::control::{self, ControlData, Welcome};
use super::error::LatencyError;
use super::flows::{self, FlowOutcome};
use super::plan::{FlowPlan, ProbePlan, Window};
use super::probe::{self, Live, ProbeConfig, StreamData};
use super::summary::RawFlow;
use crate::wire::rb::{Direction, Message};
use portable_atomic::AtomicU64;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The settings every session of a test shares.
pub(super) struct Opts {
    pub connect_timeout: Duration,
    pub token: String,
    pub cc: Option<String>,
    pub probe_interval: Duration,
    pub probe_size: usize,
    pub step: Duration,
    pub drain: Duration,
}

/// A session under way: the control connection and the threads that measure.
pub(super) struct Running {
    pub addr: SocketAddr,
    ctl: TcpStream,
    hs_rtt: Duration,
    reader: JoinHandle<()>,
    control: Arc<Mutex<ControlData>>,
    pub upload_live: Arc<AtomicU64>,
    pub download_live: Arc<AtomicU64>,
    pub live: Arc<Live>,
    pub stop: Arc<AtomicBool>,
    probes: JoinHandle<Result<Vec<StreamData>, LatencyError>>,
    /// Per flow: its id, what is known of it before it runs (steps still empty), its thread.
    flows: Vec<(u8, RawFlow, JoinHandle<FlowOutcome>)>,
    pub load_start: Instant,
    pub load_len: Duration,
    pub start_sent: bool,
}

/// What a session's threads and its server measured, once they are done.
pub(super) struct Collected {
    pub addr: SocketAddr,
    pub streams: Vec<StreamData>,
    pub flows: Vec<(u8, RawFlow, FlowOutcome)>,
    pub control: ControlData,
    pub notes: Vec<String>,
}

/// Refuses now what the server would refuse later.
fn check_grant(
    addr: SocketAddr,
    flows: usize,
    load: Duration,
    welcome: &Welcome,
) -> Result<(), LatencyError> {
    if flows > 0 && load.as_millis() > welcome.max_duration_ms as u128 {
        return Err(LatencyError::Refused {
            addr,
            message: format!(
                "--length {} s exceeds this server's limit of {} s",
                load.as_secs_f64(),
                welcome.max_duration_ms as f64 / 1e3
            ),
        });
    }
    if flows > welcome.max_flows as usize {
        return Err(LatencyError::Refused {
            addr,
            message: format!(
                "{flows} flows exceed this server's limit of {}",
                welcome.max_flows
            ),
        });
    }
    Ok(())
}

/// Opens a session now: handshake, the flows' connections, the control reader, the probes (for
/// the rest of `w`'s probe window from `t0`) and the flow threads (they wait for the load).
pub(super) fn open(
    cfg: &Opts,
    addr: SocketAddr,
    flow_plans: &[FlowPlan],
    probe_plans: &[ProbePlan],
    w: &Window,
    t0: Instant,
) -> Result<Running, LatencyError> {
    let (ctl, welcome, hs_rtt) = control::handshake(addr, cfg.connect_timeout, &cfg.token)?;
    check_grant(addr, flow_plans.len(), w.load_len, &welcome)?;
    let mut open = Vec::new();
    for (i, fp) in flow_plans.iter().enumerate() {
        open.push(flows::open(
            addr,
            welcome.session,
            i as u8,
            fp,
            cfg.cc.as_deref(),
            cfg.connect_timeout,
        )?);
    }
    let control = Arc::new(Mutex::new(ControlData::default()));
    let upload_live = Arc::new(AtomicU64::new(0));
    let reader = {
        let r = ctl.try_clone()?;
        let (c, u) = (control.clone(), upload_live.clone());
        std::thread::Builder::new()
            .name("rb-control".into())
            .spawn(move || control::control_reader(r, c, u))?
    };
    let live = Arc::new(Live::default());
    let stop = Arc::new(AtomicBool::new(false));
    let probe_end = t0 + w.probe_end;
    let pcfg = ProbeConfig {
        reflector: SocketAddr::new(addr.ip(), welcome.udp_port),
        session: welcome.session,
        interval: cfg.probe_interval,
        size: cfg.probe_size,
        duration: probe_end.saturating_duration_since(Instant::now()),
        grace: Duration::from_millis(800),
    };
    let probes = probe::spawn(pcfg, probe_plans.to_vec(), live.clone(), stop.clone())?;
    let load_start = t0 + w.load_start;
    let download_live = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    for f in open {
        let (id, dir) = (f.id, f.plan.direction);
        let counter = if dir == Direction::Download {
            download_live.clone()
        } else {
            Arc::new(AtomicU64::new(0))
        };
        let (len, step, st, drain) = (w.load_len, cfg.step, stop.clone(), cfg.drain);
        let known = RawFlow {
            plan: f.plan.clone(),
            tos_client: f.tos_client,
            tos_server: Some(f.tos_server),
            cc_client: f.cc_client.clone(),
            cc_server: Some(f.cc_server.clone()),
            steps: Vec::new(),
            start_s: Some(w.load_start.as_secs_f64()),
            total_bytes: None,
        };
        let h = std::thread::Builder::new()
            .name(format!("rb-flow{id}"))
            .spawn(move || flows::run(f, load_start, len, step, drain, counter, st))?;
        handles.push((id, known, h));
    }
    Ok(Running {
        addr,
        ctl,
        hs_rtt,
        reader,
        control,
        upload_live,
        download_live,
        live,
        stop,
        probes,
        flows: handles,
        load_start,
        load_len: w.load_len,
        start_sent: flow_plans.is_empty(),
    })
}

impl Running {
    /// Sends Start so that both ends begin at `load_start` (half the handshake RTT early).
    pub fn send_start(&mut self, step: Duration) -> Result<(), String> {
        let start_in = self
            .load_start
            .saturating_duration_since(Instant::now())
            .saturating_sub(self.hs_rtt / 2);
        let m = Message::Start {
            start_in_us: start_in.as_micros() as u32,
            duration_ms: self.load_len.as_millis() as u32,
            step_ms: step.as_millis() as u16,
        };
        self.start_sent = true;
        conn::write_msg(&mut self.ctl, &m).map_err(|e| format!("cannot send Start: {e}"))
    }

    /// The control reader's error, if the server reported one.
    pub fn error(&self) -> Option<String> {
        self.control.lock().ok().and_then(|d| d.error.clone())
    }

    /// Joins the probe and flow threads, sends Finish and waits (5 s at most) for the server's
    /// probe counts. A control error aborts the test unless the test was interrupted.
    pub fn collect(self, interrupted: bool) -> Result<Collected, LatencyError> {
        let mut notes = Vec::new();
        let streams = self
            .probes
            .join()
            .map_err(|_| LatencyError::Panicked("probe"))??;
        let mut flows = Vec::new();
        for (id, known, h) in self.flows {
            let out = h.join().map_err(|_| LatencyError::Panicked("flow"))?;
            if let Some(e) = &out.error {
                notes.push(e.clone());
            }
            flows.push((id, known, out));
        }
        let mut ctl = self.ctl;
        let _ = conn::write_msg(&mut ctl, &Message::Finish);
        let give_up = Instant::now() + Duration::from_secs(5);
        while Instant::now() < give_up && !self.reader.is_finished() {
            std::thread::sleep(Duration::from_millis(20));
        }
        let data = std::mem::take(
            &mut *self
                .control
                .lock()
                .map_err(|_| LatencyError::Poisoned("control data"))?,
        );
        match data.error.clone() {
            // Ending early can make the server complain; the measurement still stands.
            Some(f) if interrupted => notes.push(format!("server after the interruption: {f}")),
            Some(f) => return Err(LatencyError::Aborted(f)),
            None => {}
        }
        Ok(Collected {
            addr: self.addr,
            streams,
            flows,
            control: data,
            notes,
        })
    }
}
