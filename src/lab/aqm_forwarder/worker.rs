//! The `routerbench shape` processes. The supervisor enters the router namespace, starts the
//! worker (the same binary with `--worker`) and, whenever the worker ends — cleanly, by a
//! signal or killed — turns the kernel's forwarding back on. The worker opens the packet
//! sockets, turns the kernel's forwarding of the two lab interfaces off, forwards both
//! directions through the userspace qdiscs, and restores forwarding itself on SIGTERM, SIGINT
//! or when its supervisor dies (PR_SET_PDEATHSIG).

use super::forward::{self, Direction, DirectionReport};
use super::{make_qdisc, pid_path, set_kernel_forwarding, stats_path};
use crate::lab::error::{Context, IoContext, LabError, Result};
use crate::lab::{DEV_LAN, DEV_RTR_LAN, DEV_RTR_WAN, DEV_WAN, load_config, netns, sys::run_tool};
use aqm::{FlowHasher, QdiscKind};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn install_signals() -> Result<()> {
    use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
    let act = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::empty(),
        SigSet::empty(),
    );
    for s in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        // SAFETY: the handler only stores to an atomic.
        unsafe { sigaction(s, &act) }
            .map_err(|e| LabError::Sys(format!("cannot install a {s} handler: {e}")))?;
    }
    Ok(())
}

/// What to run.
#[derive(Debug, Clone)]
pub struct ShapeOptions {
    pub name: String,
    pub qdisc: QdiscKind,
    /// Overrides of the lab's rates and buffer (None: the lab's).
    pub up_rate_bps: Option<Option<u64>>,
    pub down_rate_bps: Option<Option<u64>>,
    pub buffer_bytes: Option<u64>,
    pub duration: Option<Duration>,
}

/// The stats file's content.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ShapeStats {
    pub qdisc: String,
    pub worker_pid: i32,
    pub up: DirectionReport,
    pub down: DirectionReport,
}

/// Reads lab `name`'s forwarder counters.
pub fn read_stats(name: &str) -> Option<ShapeStats> {
    crate::util::json::from_json(&std::fs::read(stats_path(name)).ok()?).ok()
}

fn enter_router(ns_rtr: &str) -> Result<()> {
    let f = std::fs::File::open(netns::ns_path(ns_rtr))
        .io_context(|| format!("lab namespace {ns_rtr} missing: is the lab up?"))?;
    nix::sched::setns(&f, nix::sched::CloneFlags::CLONE_NEWNET)
        .map_err(|e| LabError::Sys(format!("setns into {ns_rtr}: {e} (run as root)")))
}

fn mac_of(ns: &str, dev: &str) -> Result<[u8; 6]> {
    let out = run_tool("ip", &["-n", ns, "-j", "link", "show", "dev", dev])?;
    let v: serde_json::Value =
        serde_json::from_slice(out.as_bytes()).context("ip -j link output")?;
    let s = v
        .get(0)
        .and_then(|l| l.get("address"))
        .and_then(|a| a.as_str())
        .ok_or_else(|| LabError::State(format!("no MAC address for {dev} in {ns}")))?;
    let bad = || LabError::State(format!("bad MAC {s:?} of {dev}"));
    let mut mac = [0u8; 6];
    let parts: Vec<&str> = s.split(':').collect();
    if parts.len() != 6 {
        return Err(bad());
    }
    for (m, p) in mac.iter_mut().zip(parts) {
        *m = u8::from_str_radix(p, 16).map_err(|_| bad())?;
    }
    Ok(mac)
}

/// Writes `v` through the project's one atomic writer (`util::fs::write_atomic`: a temporary
/// file renamed over `path`), so a reader never sees half a file; a failed write costs only
/// that read-out.
pub(crate) fn write_json<T: Serialize>(path: &std::path::Path, v: &T) {
    if let Ok(text) = serde_json::to_string_pretty(v) {
        let _ = crate::util::fs::write_atomic(path, text);
    }
}

/// How the worker ended, for the supervisor's caller to report.
#[derive(Debug)]
pub struct WorkerEnded {
    /// The worker's exit status (None: it could not be collected).
    pub status: Option<std::process::ExitStatus>,
    /// Turning the kernel's forwarding back on: Ok, or why not.
    pub restored: Result<()>,
}

impl WorkerEnded {
    /// The supervisor's exit code: the worker's, 1 if it had none.
    pub fn code(&self) -> i32 {
        self.status.and_then(|s| s.code()).unwrap_or(1)
    }
}

/// Supervisor: runs the worker, restores kernel forwarding whenever it ends.
pub fn supervise(o: &ShapeOptions) -> Result<WorkerEnded> {
    let cfg = load_config(&o.name)?;
    install_signals()?;
    enter_router(&cfg.ns_rtr)?;
    let exe = std::env::current_exe().io_context(|| "cannot find this executable".into())?;
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    args.push("--worker".into());
    let mut child = std::process::Command::new(exe)
        .args(&args)
        .spawn()
        .io_context(|| "cannot start the forwarder worker".into())?;
    let me = std::process::id() as i32;
    write_json(
        &pid_path(&o.name),
        &serde_json::json!({"supervisor_pid": me, "worker_pid": child.id(), "qdisc": o.qdisc.name()}),
    );
    let deadline = o
        .duration
        .map(|d| Instant::now() + d + Duration::from_secs(5));
    let status = wait_worker(&mut child, deadline)?;
    // Whatever happened to the worker, the lab goes back to kernel forwarding.
    let restored = set_kernel_forwarding(&cfg.ns_rtr, true);
    let _ = std::fs::remove_file(pid_path(&o.name));
    Ok(WorkerEnded { status, restored })
}

/// Waits for the worker to end; on a signal or past `deadline` stops it (SIGTERM, SIGKILL
/// after 2 s).
fn wait_worker(
    child: &mut std::process::Child,
    deadline: Option<Instant>,
) -> Result<Option<std::process::ExitStatus>> {
    loop {
        let polled = child
            .try_wait()
            .io_context(|| "waiting for the worker".into())?;
        if let Some(st) = polled {
            return Ok(Some(st));
        }
        if STOP.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() > d) {
            let pid = nix::unistd::Pid::from_raw(child.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(2) {
                if let Ok(Some(s)) = child.try_wait() {
                    return Ok(Some(s));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = child.kill();
            return Ok(child.wait().ok());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Turns kernel forwarding back on when dropped (worker exit, error or panic unwinding).
struct ForwardingOff(String);

impl Drop for ForwardingOff {
    fn drop(&mut self) {
        let _ = set_kernel_forwarding(&self.0, true);
    }
}

/// Worker: the forwarding loops.
pub fn work(o: &ShapeOptions) -> Result<i32> {
    let cfg = load_config(&o.name)?;
    install_signals()?;
    // SIGTERM when the supervisor dies (best effort: the supervisor also stops us itself).
    let _ = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM);
    enter_router(&cfg.ns_rtr)?;
    let up_rate = o.up_rate_bps.unwrap_or(cfg.up_rate_bps);
    let down_rate = o.down_rate_bps.unwrap_or(cfg.down_rate_bps);
    let buffer = o.buffer_bytes.unwrap_or(cfg.buffer_bytes);
    let local_ips = vec![[10, 201, 1, 1], [10, 201, 2, 1]];
    let up = Direction {
        name: "up".into(),
        in_dev: DEV_RTR_LAN.into(),
        out_dev: DEV_RTR_WAN.into(),
        out_mac: mac_of(&cfg.ns_rtr, DEV_RTR_WAN)?,
        next_hop_mac: mac_of(&cfg.ns_wan, DEV_WAN)?,
        local_ips: local_ips.clone(),
        in_port: 0,
    };
    let down = Direction {
        name: "down".into(),
        in_dev: DEV_RTR_WAN.into(),
        out_dev: DEV_RTR_LAN.into(),
        out_mac: mac_of(&cfg.ns_rtr, DEV_RTR_LAN)?,
        next_hop_mac: mac_of(&cfg.ns_lan, DEV_LAN)?,
        local_ips,
        in_port: 1,
    };
    let mut key = [0u8; 16];
    std::io::Read::read_exact(
        &mut std::fs::File::open("/dev/urandom")
            .io_context(|| "cannot open /dev/urandom".into())?,
        &mut key,
    )
    .io_context(|| "cannot read a hash key from /dev/urandom".into())?;
    let (k0, k1) = key.split_at(8);
    let hasher = FlowHasher::new(
        u64::from_le_bytes(k0.try_into().unwrap_or_default()),
        u64::from_le_bytes(k1.try_into().unwrap_or_default()),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let deadline = o.duration.map(|d| Instant::now() + d);
    let reports = [
        Arc::new(Mutex::new(DirectionReport::default())),
        Arc::new(Mutex::new(DirectionReport::default())),
    ];
    // One thread for both directions (forward::run says why).
    let lanes = vec![
        forward::Lane {
            d: up,
            q: make_qdisc(o.qdisc, up_rate, buffer),
            report: reports[0].clone(),
        },
        forward::Lane {
            d: down,
            q: make_qdisc(o.qdisc, down_rate, buffer),
            report: reports[1].clone(),
        },
    ];
    let st = stop.clone();
    let threads = vec![
        std::thread::Builder::new()
            .name("shape".into())
            .spawn(move || forward::run(lanes, hasher, st, deadline))
            .io_context(|| "cannot start the forwarding thread".into())?,
    ];
    // Sockets open in the thread first; then the kernel stops forwarding these interfaces.
    std::thread::sleep(Duration::from_millis(50));
    set_kernel_forwarding(&cfg.ns_rtr, false)?;
    let _restore = ForwardingOff(cfg.ns_rtr.clone());
    let me = std::process::id() as i32;
    let snapshot = |reports: &[Arc<Mutex<DirectionReport>>; 2]| ShapeStats {
        qdisc: o.qdisc.name().into(),
        worker_pid: me,
        up: reports[0].lock().map(|g| g.clone()).unwrap_or_default(),
        down: reports[1].lock().map(|g| g.clone()).unwrap_or_default(),
    };
    while !STOP.load(Ordering::Relaxed) && !threads.iter().all(|t| t.is_finished()) {
        write_json(&stats_path(&o.name), &snapshot(&reports));
        std::thread::sleep(Duration::from_millis(500));
    }
    stop.store(true, Ordering::Relaxed);
    let mut result = Ok(0);
    for t in threads {
        match t.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => result = Err(e),
            Err(_) => result = Err(LabError::Panicked("a forwarding thread panicked")),
        }
    }
    write_json(&stats_path(&o.name), &snapshot(&reports));
    result
}
