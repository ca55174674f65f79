//! The lab's AQM (`lab up --qdisc fifo|codel|fq_codel|cake --aqm auto|kernel|userspace`): the
//! kernel's qdiscs when it has them, else `routerbench shape`, a userspace forwarder in the
//! router namespace that applies the `aqm` crate's qdiscs at the lab's rates, with the kernel's
//! forwarding of rtr-lan/rtr-wan off while it runs and restored when it stops or dies.

pub mod afpacket;
pub mod forward;
pub mod worker;

use super::error::{Context, IoContext, LabError, Result, chain};
use super::router::{reapply_shaper, router_links_exist};
use super::state::{alive, log_path, read_pids, remove_forwarder_files};
use super::sys::{run_tool, try_tool};
use super::{DEV_LAN, DEV_RTR_LAN, DEV_RTR_WAN, DEV_WAN, netns, offload};
use crate::results::lab::{AqmState, LabConfig};
use aqm::{Cake, CakeConfig, Codel, CodelParams, Fifo, FqCodel, FqCodelConfig, Overhead};
use aqm::{Qdisc, QdiscKind, Shaped};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use super::router::{kernel_forwarding, set_kernel_forwarding};
pub use super::state::{load_state, pid_path, stats_path};

/// Where the AQM runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AqmPlace {
    Kernel,
    Userspace,
}

impl AqmPlace {
    pub fn name(self) -> &'static str {
        match self {
            AqmPlace::Kernel => "kernel",
            AqmPlace::Userspace => "userspace",
        }
    }
}

/// What `lab up --qdisc Q --aqm P` asks for; `place: None` = the kernel's if it has the qdisc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AqmSpec {
    pub qdisc: QdiscKind,
    pub place: Option<AqmPlace>,
}

/// The userspace qdisc for one direction: `rate_bps` (None = unshaped) and `buffer_bytes` as
/// the byte/memory limit of every discipline (frame bytes).
pub fn make_qdisc(kind: QdiscKind, rate_bps: Option<u64>, buffer_bytes: u64) -> Box<dyn Qdisc> {
    let raw = Overhead::raw();
    match kind {
        QdiscKind::Fifo => Box::new(Shaped::new(Fifo::new(buffer_bytes), rate_bps, raw)),
        QdiscKind::Codel => Box::new(Shaped::new(
            Codel::new(CodelParams::default(), buffer_bytes),
            rate_bps,
            raw,
        )),
        QdiscKind::FqCodel => Box::new(Shaped::new(
            FqCodel::new(FqCodelConfig {
                memory_limit: buffer_bytes,
                ..Default::default()
            }),
            rate_bps,
            raw,
        )),
        QdiscKind::Cake => Box::new(Cake::new(CakeConfig {
            rate_bps,
            memory_limit: Some(buffer_bytes),
            ..Default::default()
        })),
    }
}

/// Stops lab `name`'s forwarder if one runs (SIGTERM, SIGKILL after 3 s) and turns the
/// kernel's forwarding back on. Safe when none runs.
pub fn stop(name: &str) -> Result<()> {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    if let Some((sup, work)) = read_pids(name) {
        for (pid, sig) in [(sup, Signal::SIGTERM), (work, Signal::SIGTERM)] {
            if alive(pid) {
                let _ = kill(Pid::from_raw(pid), sig);
            }
        }
        let t0 = Instant::now();
        while (alive(sup) || alive(work)) && t0.elapsed() < Duration::from_secs(3) {
            reap(sup);
            std::thread::sleep(Duration::from_millis(20));
        }
        for pid in [sup, work] {
            if alive(pid) {
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
        }
        reap(sup);
    }
    remove_forwarder_files(name);
    let rtr = format!("{name}-rtr");
    if netns::exists(&rtr) && router_links_exist(&rtr) {
        set_kernel_forwarding(&rtr, true)?;
    }
    Ok(())
}

/// Collects a child we started (no-op for other processes).
fn reap(pid: i32) {
    let _ = nix::sys::wait::waitpid(
        nix::unistd::Pid::from_raw(pid),
        Some(nix::sys::wait::WaitPidFlag::WNOHANG),
    );
}

fn kernel_commands(kind: QdiscKind, dev: &str, rate: u64, buffer: u64) -> Vec<Vec<String>> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let r = super::tc_shaper::tc_rate(rate);
    let b = buffer.to_string();
    match kind {
        QdiscKind::Cake => vec![s(&[
            "qdisc",
            "add",
            "dev",
            dev,
            "root",
            "cake",
            "bandwidth",
            &r,
            "memlimit",
            &b,
            "diffserv4",
        ])],
        _ => {
            let leaf: Vec<&str> = match kind {
                QdiscKind::FqCodel => vec!["fq_codel", "memory_limit", &b],
                _ => vec!["codel"],
            };
            let mut l = vec!["qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:"];
            l.extend(leaf);
            vec![
                s(&[
                    "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "1",
                ]),
                s(&[
                    "class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate",
                    &r, "ceil", &r,
                ]),
                s(&l),
            ]
        }
    }
}

/// Installs `kind` in the kernel on both directions; Ok(false) if the kernel lacks it (the
/// lab's FIFO shaper is then back in place).
fn try_kernel(cfg: &LabConfig, kind: QdiscKind) -> Result<bool> {
    let rtr = &cfg.ns_rtr;
    for (dev, rate) in [
        (DEV_RTR_WAN, cfg.up_rate_bps),
        (DEV_RTR_LAN, cfg.down_rate_bps),
    ] {
        let Some(rate) = rate else { continue };
        try_tool("tc", &["-n", rtr, "qdisc", "del", "dev", dev, "root"]);
        for args in kernel_commands(kind, dev, rate, cfg.buffer_bytes) {
            let mut v = vec!["-n", rtr.as_str()];
            v.extend(args.iter().map(String::as_str));
            if let Err(e) = run_tool("tc", &v) {
                let msg = chain(&e);
                if msg.contains("unknown") || msg.contains("Unknown") || msg.contains("not found") {
                    return Ok(false);
                }
                return Err(e).context(format!("cannot install kernel {kind} on {dev}"));
            }
        }
    }
    Ok(true)
}

/// Puts `spec` on lab `cfg` (already up with its FIFO shaper). `exe` is the routerbench binary
/// that runs the userspace forwarder.
pub fn apply(cfg: &LabConfig, spec: &AqmSpec, exe: &Path) -> Result<AqmState> {
    stop(&cfg.name)?;
    let mut st = AqmState {
        qdisc: spec.qdisc.name().to_string(),
        place: "kernel".into(),
        ..Default::default()
    };
    let want_kernel = spec.place != Some(AqmPlace::Userspace);
    if want_kernel && spec.qdisc == QdiscKind::Fifo {
        st.note = format!("kernel {} + FIFO of {} B", cfg.shaper, cfg.buffer_bytes);
    } else if want_kernel && try_kernel(cfg, spec.qdisc)? {
        st.note = format!("kernel {} at the lab's rates", spec.qdisc);
    } else if spec.place == Some(AqmPlace::Kernel) {
        reapply_shaper(cfg)?;
        return Err(LabError::State(format!(
            "this kernel has no sch_{}: use --aqm userspace (routerbench's own {} in a forwarder)",
            spec.qdisc, spec.qdisc
        )));
    } else {
        if cfg.nat {
            return Err(LabError::State(
                "the userspace forwarder does not do NAT: run `lab up` without --nat for --aqm userspace".into()
            ));
        }
        if cfg.offloads {
            return Err(LabError::State(
                "the userspace forwarder needs MTU-sized frames: run `lab up --offloads off` for --aqm userspace".into()
            ));
        }
        for dev in [DEV_RTR_WAN, DEV_RTR_LAN] {
            try_tool(
                "tc",
                &["-n", &cfg.ns_rtr, "qdisc", "del", "dev", dev, "root"],
            );
        }
        let napi = hosts_receive_in_own_threads(cfg);
        let (sup, work) = start(cfg, spec.qdisc, exe)?;
        st.place = "userspace".into();
        st.forwarder_pid = Some(sup);
        st.worker_pid = Some(work);
        st.note = if want_kernel {
            format!(
                "this kernel has no sch_{}: routerbench's userspace {} (AF_PACKET forwarder)",
                spec.qdisc, spec.qdisc
            )
        } else {
            format!(
                "routerbench's userspace {} (AF_PACKET forwarder)",
                spec.qdisc
            )
        };
        st.note = format!("{}; {napi}", st.note);
    }
    st.kernel_forwarding = kernel_forwarding(&cfg.ns_rtr);
    super::state::save_aqm(&cfg.name, &st)?;
    Ok(st)
}

/// Lets the LAN and WAN hosts receive in their own kernel threads: GRO on their veth ends (which
/// gives a veth a NAPI instance) and `threaded` NAPI. Without it, the forwarder's `sendmmsg` into
/// a veth runs the far host's whole receive (TCP, its ACKs, their way back into the other
/// direction's ring) as softirq work in the forwarder's own thread: half of the forwarder's CPU
/// per packet (docs/aqm.md, "Where the CPU goes"), work that on a router runs on another machine.
/// The router's own ends keep GRO off (the forwarder needs MTU-sized frames), so what crosses
/// the bottleneck is unchanged; the hosts see what a Linux host with GRO sees. Returns a note;
/// where the kernel cannot (no `threaded` before Linux 5.12), GRO goes back off and the note
/// says the hosts' receive still runs in the forwarder's thread.
fn hosts_receive_in_own_threads(cfg: &LabConfig) -> String {
    let mut failed = Vec::new();
    for (ns, dev) in [(&cfg.ns_lan, DEV_LAN), (&cfg.ns_wan, DEV_WAN)] {
        let d = dev.to_string();
        let gro = netns::run_in(ns, move || Ok(offload::set_gro(&d, true)?));
        let threaded = gro.and_then(|_| {
            let cmd = format!("echo 1 > /sys/class/net/{dev}/threaded");
            Ok(run_tool("ip", &["netns", "exec", ns, "sh", "-c", &cmd]).map(|_| ())?)
        });
        if let Err(e) = threaded {
            let d = dev.to_string();
            let _ = netns::run_in(ns, move || Ok(offload::set_gro(&d, false)?));
            failed.push(format!("{dev}: {}", chain(&e)));
        }
    }
    if failed.is_empty() {
        format!("the hosts receive in their own NAPI threads ({DEV_LAN}, {DEV_WAN}: GRO, threaded)")
    } else {
        format!(
            "the hosts' receive runs in the forwarder's thread, counted in its CPU ({})",
            failed.join("; ")
        )
    }
}

/// Starts `exe shape --name NAME --qdisc Q` detached and waits (≤ 5 s) until its worker runs
/// and the kernel's forwarding is off. Returns (supervisor, worker) PIDs.
fn start(cfg: &LabConfig, kind: QdiscKind, exe: &Path) -> Result<(i32, i32)> {
    use std::os::unix::process::CommandExt;
    let _ = std::fs::remove_file(pid_path(&cfg.name));
    let log_p = log_path(&cfg.name);
    let log = std::fs::File::create(&log_p)
        .io_context(|| format!("cannot create {}", log_p.display()))?;
    let log_out = log
        .try_clone()
        .io_context(|| format!("cannot open {} twice", log_p.display()))?;
    let mut child = std::process::Command::new(exe)
        .args(["shape", "--name", &cfg.name, "--qdisc", kind.name()])
        .stdin(std::process::Stdio::null())
        .stdout(log_out)
        .stderr(log)
        .process_group(0)
        .spawn()
        .io_context(|| format!("cannot start the forwarder {}", exe.display()))?;
    let sup = child.id() as i32;
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(5) {
        if let Some((s, w)) = read_pids(&cfg.name) {
            if s == sup && alive(w) && kernel_forwarding(&cfg.ns_rtr) == Some(false) {
                return Ok((s, w));
            }
        }
        // (Not `alive`: right after fork the child still shows our own command line.)
        if child.try_wait().ok().flatten().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let tail = std::fs::read_to_string(&log_p).unwrap_or_default();
    let _ = stop(&cfg.name);
    Err(LabError::State(format!(
        "the userspace forwarder did not come up within 5 s; its log ({}):\n{}",
        log_p.display(),
        tail.lines()
            .rev()
            .take(10)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n")
    )))
}

/// The routerbench binary to start the forwarder from: `$ROUTERBENCH_BIN`, else this
/// executable under whatever name it was installed or copied as (`routerbench-armv7`,
/// `/tmp/rb-new`), unless it is a cargo test harness (`target/*/deps/NAME-HASH`), which has no
/// `shape` command.
pub fn routerbench_exe() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("ROUTERBENCH_BIN") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().io_context(|| "cannot find this executable".into())?;
    if is_test_harness(&exe) {
        Err(LabError::State(format!(
            "the userspace AQM runs `routerbench shape`, and {} is a test harness: set ROUTERBENCH_BIN to the routerbench binary",
            exe.display()
        )))
    } else {
        Ok(exe)
    }
}

/// A cargo test binary: in a `deps` directory, named `NAME-HASH` with a 16-hex-digit hash.
fn is_test_harness(exe: &std::path::Path) -> bool {
    let in_deps = exe
        .parent()
        .and_then(|d| d.file_name())
        .is_some_and(|d| d == "deps");
    let hashed = exe
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.rsplit_once('-'))
        .is_some_and(|(_, h)| h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit()));
    in_deps && hashed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn any_installed_name_is_routerbench_but_a_test_harness_is_not() {
        for exe in [
            "/usr/bin/routerbench",
            "/tmp/rb-new",
            "/root/routerbench-armv7",
            "/work/main/target/release/routerbench",
            "/opt/deps/routerbench",
        ] {
            assert!(!is_test_harness(Path::new(exe)), "{exe}");
        }
        for exe in [
            "/work/main/target/debug/deps/routerbench-0872f9b165d316b7",
            "/work/main/target/debug/deps/lab-a1b2c3d4e5f60718",
        ] {
            assert!(is_test_harness(Path::new(exe)), "{exe}");
        }
        // This very process is one.
        if std::env::var_os("ROUTERBENCH_BIN").is_none() {
            let err = routerbench_exe().unwrap_err().to_string();
            assert!(err.contains("ROUTERBENCH_BIN"), "{err}");
        }
    }
}
