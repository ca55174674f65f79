//! What the VM router runs beside its agent: the userspace AQM forwarder (`routerbench shape`'s
//! loops on the VM's own NICs, `--aqm userspace --router vm`) and the control port, a
//! virtio-serial port on which the host asks the VM to run routerbench with given arguments
//! (`lab exec`): one JSON request line in, one JSON reply line out. Only the routerbench binary
//! runs, or one of the allow-listed Debian programs of the image's extras ([`EXTRA_PROGRAMS`]:
//! iperf3 and openssl, for the in-device comparisons), never a shell; the port is reached
//! through a root-only socket of qemu's on the host.

use crate::lab::aqm_forwarder::forward::{self, Direction, DirectionReport};
use crate::lab::aqm_forwarder::worker::{ShapeStats, write_json};
use crate::lab::error::{IoContext, LabError, Result};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The virtio-serial port's name (qemu's `virtserialport,name=`).
pub const CONTROL_PORT: &str = "routerbench.ctl";
/// Where the forwarder inside the VM keeps its counters (a `ShapeStats`, as the namespace lab's
/// forwarder writes, rewritten every second); `lab exec -- vm-router --shape-stats` prints it.
pub const SHAPE_STATS: &str = "/run/routerbench-shape.json";
/// A request or reply line is at most this long.
pub const MAX_LINE: usize = 1 << 20;
/// Each of stdout and stderr of a command is kept up to this many bytes.
pub const MAX_OUTPUT: usize = 16 << 20;

/// The Debian programs the control port runs besides routerbench, from `/bin/NAME` in the
/// image (`lab up --extras`): the seed's own tools, so that routerbench is compared with them
/// on the same CPU in the same boot (`bench/vm-loopback-vs-iperf3.sh`).
pub const EXTRA_PROGRAMS: &[&str] = &["iperf3", "openssl"];
/// At most this many background programs run at once (each killed at its timeout).
pub const MAX_BACKGROUND: usize = 4;

/// Run routerbench inside the VM with these arguments.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ExecRequest {
    /// Echoed in the reply, so a reply left over from an earlier client is told apart.
    #[serde(default)]
    pub id: u64,
    /// One of [`EXTRA_PROGRAMS`] instead of routerbench (`lab exec --program`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// Start the command and reply at once; it runs until it exits or its timeout ends, with
    /// its output discarded (`lab exec --background`: iperf3's server beside its client).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub background: bool,

    pub args: Vec<String>,
    /// Killed after this long.
    pub timeout_s: f64,
    /// Run inside this Wi-Fi station's namespaces (`lab exec --station K`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub station: Option<u32>,
}

/// What the command did.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ExecReply {
    #[serde(default)]
    pub id: u64,
    /// Exit code; None when killed or not started.
    pub status: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
    /// Why the command could not run at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The VM's CPU time while the command ran, all CPUs and every process and interrupt
    /// (`/proc/stat`: user, nice, system, irq, softirq), seconds; what a test cost the router
    /// whichever process spent it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm_cpu_s: Option<f64>,
    /// Wall-clock seconds the command ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_s: Option<f64>,
    /// A background command's process ID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

/// The executable a request runs: routerbench (`exe`) or an allow-listed program of the image
/// under `bin_dir`; the arguments are checked against what the program may do there.
pub fn program_path(
    exe: &std::path::Path,
    bin_dir: &std::path::Path,
    req: &ExecRequest,
) -> std::result::Result<std::path::PathBuf, String> {
    let Some(name) = req.program.as_deref() else {
        return Ok(exe.to_path_buf());
    };
    if !EXTRA_PROGRAMS.contains(&name) {
        return Err(format!(
            "{name} is not a program the control port runs (routerbench, or one of: {})",
            EXTRA_PROGRAMS.join(", ")
        ));
    }
    match name {
        // Every program's life is bounded by its request's timeout: a daemon would escape it.
        "iperf3" if req.args.iter().any(|a| is_daemon_flag(a)) => {
            return Err("iperf3 -D would outlive its request: run the server with \
                        `lab exec --background --program iperf3 -- -s` (killed at --timeout)"
                .into());
        }
        "openssl"
            if !matches!(
                req.args.first().map(String::as_str),
                Some("speed" | "version")
            ) =>
        {
            return Err("openssl runs `speed` or `version` only here".into());
        }
        _ => {}
    }
    let p = bin_dir.join(name);
    if !p.exists() {
        return Err(format!(
            "{name} is not in this VM's image: `lab up --router vm --extras {name}`"
        ));
    }
    Ok(p)
}

/// `-D`, `--daemon`, or a cluster of short options with D in it (`-sD`).
fn is_daemon_flag(a: &str) -> bool {
    a == "--daemon"
        || (a.starts_with('-')
            && !a.starts_with("--")
            && a[1..].chars().all(|c| c.is_ascii_alphanumeric())
            && a.contains('D'))
}

/// Busy CPU ticks of the whole VM (user, nice, system, irq, softirq from `/proc/stat`'s first
/// line) and the ticks per second; None where there is no /proc/stat.
fn busy_ticks() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    busy_ticks_of(text.lines().next()?)
}

/// The busy ticks of a `/proc/stat` `cpu` line.
fn busy_ticks_of(line: &str) -> Option<u64> {
    let v: Vec<u64> = line
        .strip_prefix("cpu ")?
        .split_whitespace()
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq [steal …]: idle and iowait are not busy, and
    // steal is time the host took.
    (v.len() >= 7).then(|| v[0] + v[1] + v[2] + v[5] + v[6])
}

fn ticks_per_second() -> f64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .filter(|&t| t > 0)
        .unwrap_or(100) as f64
}

/// Background programs alive now.
static BACKGROUND: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Starts `cmd` in the background, killed after `timeout`; replies with its PID.
fn start_background(
    mut cmd: std::process::Command,
    req: &ExecRequest,
    timeout: Duration,
) -> ExecReply {
    use std::process::Stdio;
    let failed = |e: String| ExecReply {
        id: req.id,
        error: Some(e),
        ..Default::default()
    };
    if BACKGROUND.fetch_add(1, Ordering::SeqCst) >= MAX_BACKGROUND {
        BACKGROUND.fetch_sub(1, Ordering::SeqCst);
        return failed(format!(
            "{MAX_BACKGROUND} background programs run already: wait for one to end"
        ));
    }
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            BACKGROUND.fetch_sub(1, Ordering::SeqCst);
            return failed(format!("cannot start {:?}: {e}", cmd.get_program()));
        }
    };
    let pid = child.id();
    std::thread::spawn(move || {
        let t0 = Instant::now();
        while matches!(child.try_wait(), Ok(None)) {
            if t0.elapsed() > timeout {
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        BACKGROUND.fetch_sub(1, Ordering::SeqCst);
    });
    ExecReply {
        id: req.id,
        pid: Some(pid),
        ..Default::default()
    }
}

/// Reads up to `max` bytes of `r` (the rest is drained and dropped).
fn read_capped(mut r: impl Read, max: usize) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    while let Ok(n) = r.read(&mut buf) {
        if n == 0 {
            break;
        }
        let room = max.saturating_sub(out.len());
        out.extend_from_slice(&buf[..n.min(room)]);
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Runs `exe req.args` (or the request's allow-listed program from `/bin`) with the request's
/// timeout.
pub fn run_request(exe: &std::path::Path, req: &ExecRequest) -> ExecReply {
    run_request_in(exe, std::path::Path::new("/bin"), req)
}

/// [`run_request`] with the extra programs looked for in `bin_dir`.
pub fn run_request_in(
    exe: &std::path::Path,
    bin_dir: &std::path::Path,
    req: &ExecRequest,
) -> ExecReply {
    use std::process::{Command, Stdio};
    let timeout = if req.timeout_s.is_finite() {
        Duration::from_secs_f64(req.timeout_s.clamp(1.0, 7200.0))
    } else {
        Duration::from_secs(600)
    };
    let exe = match program_path(exe, bin_dir, req) {
        Ok(p) => p,
        Err(e) => {
            return ExecReply {
                id: req.id,
                error: Some(e),
                ..Default::default()
            };
        }
    };
    let mut cmd = Command::new(&exe);
    cmd.args(&req.args).stdin(Stdio::null());
    if let Some(k) = req.station {
        let entered =
            super::guest_wifi::holder_of(k).and_then(|pid| super::guest_wifi::enter(&mut cmd, pid));
        if let Err(e) = entered {
            return ExecReply {
                id: req.id,
                error: Some(format!("station {k}: {e}")),
                ..Default::default()
            };
        }
    }
    if req.background {
        return start_background(cmd, req, timeout);
    }
    let busy0 = busy_ticks();
    let mut child = match cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn() {
        Ok(c) => c,
        Err(e) => {
            return ExecReply {
                error: Some(format!("cannot start {}: {e}", exe.display())),
                ..Default::default()
            };
        }
    };
    let out = child
        .stdout
        .take()
        .map(|o| std::thread::spawn(move || read_capped(o, MAX_OUTPUT)));
    let err = child
        .stderr
        .take()
        .map(|e| std::thread::spawn(move || read_capped(e, MAX_OUTPUT)));
    let t0 = Instant::now();
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s.code(),
            Ok(None) if t0.elapsed() > timeout => {
                timed_out = true;
                let _ = child.kill();
                break child.wait().ok().and_then(|s| s.code());
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break None,
        }
    };
    let wall = t0.elapsed().as_secs_f64();
    let vm_cpu_s = busy0
        .zip(busy_ticks())
        .map(|(a, b)| b.saturating_sub(a) as f64 / ticks_per_second());
    let join = |h: Option<std::thread::JoinHandle<String>>| {
        h.and_then(|h| h.join().ok()).unwrap_or_default()
    };
    ExecReply {
        id: req.id,
        status,
        stdout: join(out),
        stderr: join(err),
        timed_out,
        error: None,
        vm_cpu_s,
        wall_s: Some(wall),
        pid: None,
    }
}

/// The device node of the virtio port named `name` (`/sys/class/virtio-ports/*/name`).
fn find_port(name: &str) -> Option<std::path::PathBuf> {
    let rd = std::fs::read_dir("/sys/class/virtio-ports").ok()?;
    rd.flatten().take(64).find_map(|e| {
        let n = std::fs::read_to_string(e.path().join("name")).ok()?;
        (n.trim() == name).then(|| std::path::Path::new("/dev").join(e.file_name()))
    })
}

/// Serves the control port forever: a request line in, the command run, a reply line out.
/// A host that is not connected reads as end of file: the loop waits and reads again.
pub fn serve_control() -> Result<()> {
    let exe = std::env::current_exe().io_context(|| "cannot find this executable".into())?;
    let mut port = None;
    for _ in 0..50 {
        port = find_port(CONTROL_PORT);
        if port.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let path = port.ok_or_else(|| {
        LabError::State(format!(
            "no virtio port {CONTROL_PORT} (virtio_console not loaded, or qemu without it)"
        ))
    })?;
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .io_context(|| format!("cannot open {}", path.display()))?;
    let mut line = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = match f.read(&mut buf) {
            Ok(0) | Err(_) => {
                line.clear();
                std::thread::sleep(Duration::from_millis(200));
                continue;
            }
            Ok(n) => n,
        };
        for &b in &buf[..n] {
            if b != b'\n' {
                if line.len() < MAX_LINE {
                    line.push(b);
                }
                continue;
            }
            let reply = match crate::util::json::from_json::<ExecRequest>(&line) {
                Ok(req) => ExecReply {
                    id: req.id,
                    ..run_request(&exe, &req)
                },
                Err(e) => ExecReply {
                    error: Some(format!("not a request: {e}")),
                    ..Default::default()
                },
            };
            line.clear();
            let mut text = serde_json::to_vec(&reply).unwrap_or_default();
            text.push(b'\n');
            let _ = f.write_all(&text);
        }
    }
}

/// The userspace forwarder's two directions inside the VM.
#[derive(Debug, Clone)]
pub struct GuestShape {
    pub qdisc: aqm::QdiscKind,
    pub up_rate_bps: Option<u64>,
    pub down_rate_bps: Option<u64>,
    pub buffer_bytes: u64,
    pub up: Direction,
    pub down: Direction,
}

/// Runs the forwarder until killed (the VM's power-off): the kernel's forwarding of the two
/// NICs goes off once the packet sockets are open, as in the namespace lab's worker.
pub fn serve_shape(s: &GuestShape) -> Result<()> {
    let mut key = [0u8; 16];
    crate::util::random::fill(&mut key);
    let (k0, k1) = key.split_at(8);
    let hasher = aqm::FlowHasher::new(
        u64::from_le_bytes(k0.try_into().unwrap_or_default()),
        u64::from_le_bytes(k1.try_into().unwrap_or_default()),
    );
    let stop = Arc::new(AtomicBool::new(false));
    // A thread per direction here, where the namespace lab runs one for both: inside the VM the
    // forwarder has the router's CPUs to itself and each is slow, so the two directions in
    // parallel carry more (userspace cake's SQM capacity in the 2-vCPU ARM VM: 31.2, 37.5, 62.5
    // and 62.5 Mbit/s with a thread each, 25.0, 31.2 and 31.2 with one, 2026-12-05); in the
    // namespace lab the CPUs are shared with the hosts' TCP, and one thread costs less CPU per
    // packet at the same capacity (docs/aqm.md).
    let mut threads = Vec::new();
    let mut reports = Vec::new();
    for (d, rate) in [
        (s.up.clone(), s.up_rate_bps),
        (s.down.clone(), s.down_rate_bps),
    ] {
        let report = Arc::new(Mutex::new(DirectionReport::default()));
        reports.push(report.clone());
        let lane = forward::Lane {
            q: crate::lab::aqm_forwarder::make_qdisc(s.qdisc, rate, s.buffer_bytes),
            report,
            d,
        };
        let st = stop.clone();
        threads.push(
            std::thread::Builder::new()
                .name(format!("shape-{}", lane.d.name))
                .spawn(move || forward::run(vec![lane], hasher, st, None))
                .io_context(|| "cannot start a forwarding thread".into())?,
        );
    }
    std::thread::sleep(Duration::from_millis(50));
    for dev in [&s.up.in_dev, &s.down.in_dev] {
        let p = format!("/proc/sys/net/ipv4/conf/{dev}/forwarding");
        std::fs::write(&p, "0").io_context(|| format!("cannot write {p}"))?;
    }
    // The counters, every second, until both directions end, in the namespace lab's stats format.
    let path = std::path::Path::new(SHAPE_STATS);
    while threads.iter().any(|t| !t.is_finished()) {
        std::thread::sleep(Duration::from_secs(1));
        let now = |i: usize| reports[i].lock().map(|g| g.clone()).unwrap_or_default();
        let stats = ShapeStats {
            qdisc: s.qdisc.name().into(),
            worker_pid: std::process::id() as i32,
            up: now(0),
            down: now(1),
        };
        write_json(path, &stats);
    }
    let mut result = Ok(());
    for t in threads {
        match t.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => result = Err(e),
            Err(_) => result = Err(LabError::Panicked("a forwarding thread panicked")),
        }
    }
    stop.store(true, Ordering::Relaxed);
    result
}

/// What one kind of wait took, µs of wall time (and the calling thread's CPU time per wait).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WaitTimes {
    pub asked_us: f64,
    pub median_us: f64,
    pub p90_us: f64,
    pub max_us: f64,
    pub cpu_per_wait_us: f64,
}

/// The VM's timers and clocks as the forwarder's loop uses them (`lab exec -- vm-router
/// --timer-probe`): the clocksource, what a clock read costs, and how late a 100 µs sleep (the
/// forwarder's coalescing wait), a 1 ms sleep and a 1 ms `ppoll` wake up.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TimerProbe {
    pub clocksource: String,
    pub monotonic_read_ns: f64,
    pub thread_cputime_read_ns: f64,
    pub sleep_100us: WaitTimes,
    pub sleep_1ms: WaitTimes,
    pub ppoll_1ms: WaitTimes,
}

/// Measures [`TimerProbe`] in well under a second on an idle VM (bounded: 200 waits).
pub fn timer_probe() -> TimerProbe {
    use crate::lab::aqm_forwarder::afpacket::{clock_ns, wait_readable};
    use nix::time::ClockId;
    let per_read = |c: ClockId| {
        let t = Instant::now();
        for _ in 0..2_000 {
            std::hint::black_box(clock_ns(c));
        }
        t.elapsed().as_nanos() as f64 / 2_000.0
    };
    let times = |n: usize, asked: Duration, wait: &dyn Fn()| {
        let cpu0 = clock_ns(ClockId::CLOCK_THREAD_CPUTIME_ID);
        let mut v: Vec<f64> = (0..n)
            .map(|_| {
                let t = Instant::now();
                wait();
                t.elapsed().as_nanos() as f64 / 1e3
            })
            .collect();
        let cpu = clock_ns(ClockId::CLOCK_THREAD_CPUTIME_ID).saturating_sub(cpu0);
        v.sort_by(f64::total_cmp);
        let at = |f: f64| v[((v.len() - 1) as f64 * f).round() as usize];
        WaitTimes {
            asked_us: asked.as_nanos() as f64 / 1e3,
            median_us: at(0.5),
            p90_us: at(0.9),
            max_us: at(1.0),
            cpu_per_wait_us: cpu as f64 / 1e3 / n as f64,
        }
    };
    // A pipe's read end that never becomes readable: ppoll only times out.
    let pipe = nix::unistd::pipe().ok();
    let us100 = Duration::from_micros(100);
    let ms1 = Duration::from_millis(1);
    TimerProbe {
        clocksource: std::fs::read_to_string(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        )
        .map(|s| s.trim().to_string())
        .unwrap_or_default(),
        monotonic_read_ns: per_read(ClockId::CLOCK_MONOTONIC),
        thread_cputime_read_ns: per_read(ClockId::CLOCK_THREAD_CPUTIME_ID),
        sleep_100us: times(100, us100, &|| std::thread::sleep(us100)),
        sleep_1ms: times(50, ms1, &|| std::thread::sleep(ms1)),
        ppoll_1ms: times(50, ms1, &|| match &pipe {
            Some((r, _)) => wait_readable(std::os::fd::AsFd::as_fd(r), 1_000_000),
            None => std::thread::sleep(ms1),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_a_command_with_its_output_and_status() {
        let sh = std::path::Path::new("/bin/sh");
        let r = run_request(
            sh,
            &ExecRequest {
                id: 9,
                program: None,
                background: false,
                args: vec!["-c".into(), "echo out; echo err >&2; exit 3".into()],
                timeout_s: 10.0,
                station: None,
            },
        );
        assert_eq!(r.status, Some(3));
        assert_eq!(r.id, 9);
        assert_eq!(r.stdout, "out\n");
        assert_eq!(r.stderr, "err\n");
        assert!(!r.timed_out);
        let slow = run_request(
            sh,
            &ExecRequest {
                id: 1,
                program: None,
                background: false,
                args: vec!["-c".into(), "sleep 30".into()],
                timeout_s: 1.0,
                station: None,
            },
        );
        assert!(slow.timed_out);
        assert_eq!(slow.status, None);
        let missing = run_request(
            std::path::Path::new("/nonexistent/routerbench"),
            &ExecRequest {
                id: 2,
                program: None,
                background: false,
                args: vec![],
                timeout_s: 1.0,
                station: None,
            },
        );
        assert!(missing.error.unwrap().contains("cannot start"));
    }

    fn request(program: Option<&str>, background: bool, args: &[&str]) -> ExecRequest {
        ExecRequest {
            id: 7,
            program: program.map(str::to_string),
            background,
            args: args.iter().map(|a| a.to_string()).collect(),
            timeout_s: 5.0,
            station: None,
        }
    }

    #[test]
    fn only_allow_listed_programs_run_and_never_as_daemons() {
        let exe = std::path::Path::new("/nonexistent/routerbench");
        let dir = std::env::temp_dir().join(format!("rb-guest-programs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let bin = dir.as_path();
        // routerbench itself by default.
        assert_eq!(
            program_path(exe, bin, &request(None, false, &["device"])).unwrap(),
            exe
        );
        // A shell or anything else is refused, naming what runs.
        for p in ["sh", "busybox", "../bin/sh", "/bin/sh"] {
            let e = program_path(exe, bin, &request(Some(p), false, &[])).unwrap_err();
            assert!(e.contains("iperf3, openssl"), "{e}");
        }
        // iperf3 as a daemon would escape the request's timeout.
        for a in [&["-s", "-D"][..], &["-sD"], &["--daemon", "-s"]] {
            let e = program_path(exe, bin, &request(Some("iperf3"), false, a)).unwrap_err();
            assert!(e.contains("--background"), "{e}");
        }
        // openssl: speed and version only.
        let e = program_path(exe, bin, &request(Some("openssl"), false, &["enc"])).unwrap_err();
        assert!(e.contains("speed"), "{e}");
        // Allowed but missing from the image: the remedy is named.
        let e = program_path(exe, bin, &request(Some("iperf3"), false, &["-s"])).unwrap_err();
        assert!(e.contains("--extras iperf3"), "{e}");
        std::fs::write(bin.join("iperf3"), b"").unwrap();
        std::fs::write(bin.join("openssl"), b"").unwrap();
        assert_eq!(
            program_path(
                exe,
                bin,
                &request(Some("iperf3"), false, &["-c", "127.0.0.1", "-P", "2"])
            )
            .unwrap(),
            bin.join("iperf3")
        );
        assert!(
            program_path(
                exe,
                bin,
                &request(Some("openssl"), false, &["speed", "md5"])
            )
            .is_ok()
        );
        // A refused request comes back as the reply's error, with its id.
        let r = run_request_in(exe, bin, &request(Some("sh"), false, &["-c", "true"]));
        assert_eq!(r.id, 7);
        assert!(r.error.is_some() && r.status.is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn background_commands_reply_at_once_and_die_at_their_timeout() {
        let sh = std::path::Path::new("/bin/sh");
        let mut req = request(None, true, &["-c", "sleep 30"]);
        req.timeout_s = 1.0;
        let t0 = Instant::now();
        let r = run_request(sh, &req);
        assert!(t0.elapsed() < Duration::from_secs(5), "{r:?}");
        let pid = r.pid.expect("a background command's PID");
        let alive = |pid: u32| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
        };
        assert!(alive(pid));
        // Killed at its 1 s timeout (polled at most 10 s).
        let mut gone = false;
        for _ in 0..200 {
            if !alive(pid) {
                gone = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(gone, "background PID {pid} outlived its timeout");
    }

    #[test]
    fn a_foreground_command_reports_the_vms_cpu() {
        let sh = std::path::Path::new("/bin/sh");
        let r = run_request(
            sh,
            &request(
                None,
                false,
                &["-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"],
            ),
        );
        assert_eq!(r.status, Some(0), "{r:?}");
        let (cpu, wall) = (r.vm_cpu_s.unwrap(), r.wall_s.unwrap());
        assert!(wall > 0.0 && cpu > 0.0, "{r:?}");
        assert_eq!(
            busy_ticks_of("cpu  10 1 5 1000 7 2 3 4 0 0"),
            Some(10 + 1 + 5 + 2 + 3)
        );
        assert_eq!(busy_ticks_of("intr 1 2 3"), None);
        assert_eq!(busy_ticks_of("cpu  1 2"), None);
    }

    #[test]
    fn timer_probe_measures_the_waits() {
        let p = timer_probe();
        assert!(p.monotonic_read_ns > 0.0);
        assert!(p.sleep_100us.median_us >= 100.0, "{p:?}");
        assert!(p.sleep_1ms.median_us >= 1_000.0 && p.ppoll_1ms.median_us >= 900.0);
        assert!(p.sleep_100us.max_us >= p.sleep_100us.p90_us);
    }

    #[test]
    fn output_is_capped() {
        let data = vec![b'x'; 10_000];
        assert_eq!(read_capped(&data[..], 100).len(), 100);
        assert_eq!(read_capped(&data[..], 1 << 20).len(), 10_000);
    }
}
