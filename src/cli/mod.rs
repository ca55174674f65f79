//! The command line: one file per subcommand, each with its argument struct and a `run` function.

use clap::{Parser, Subcommand};

pub mod client;
pub mod common;
#[cfg(feature = "plots")]
pub mod compare;
pub mod crypto;
pub mod device;
#[cfg(feature = "lab")]
pub mod forwarder;
#[cfg(feature = "lab")]
pub mod lab;
pub mod loopback;
pub mod monitor;
#[cfg(feature = "plots")]
pub mod report;
pub mod rpm;
pub mod rrul;
pub mod run;
pub mod server;
pub mod stress;
pub mod wifi;

/// What can this router really do? Crypto, throughput, latency under load.
#[derive(Debug, Parser)]
#[command(name = "routerbench", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The full local suite: identity, crypto, and (as they land) throughput and latency.
    Run(run::RunArgs),
    /// This machine's identity: SoC, board, CPU, BogoMIPS, OpenWrt revision, kernel.
    Device(device::DeviceArgs),
    /// The `openssl speed` suite behind the OpenWrt benchmark table, or import of its output.
    Crypto(crypto::CryptoArgs),
    /// Realtime Response Under Load (flent's rrul): 4 up + 4 down TCP flows (BE, BK, CS5, EF)
    /// with UDP EF/BK/BE and ICMP latency probes.
    Rrul(rrul::LatencyArgs),
    /// rrul with every flow and probe best effort (CS0).
    #[command(name = "rrul_be")]
    RrulBe(rrul::LatencyArgs),
    /// N TCP uploads with an ICMP latency probe.
    #[command(name = "tcp_nup")]
    TcpNup(rrul::NflowArgs),
    /// N TCP downloads with an ICMP latency probe.
    #[command(name = "tcp_ndown")]
    TcpNdown(rrul::NflowArgs),
    /// Idle latency: ICMP and UDP probes, no load.
    Ping(rrul::LatencyArgs),
    /// rrul_be's 8 best-effort flows with ICMP as the only latency probe.
    #[command(name = "rrul_icmp")]
    RrulIcmp(rrul::LatencyArgs),
    /// One TCP upload and one download at once, with an ICMP latency probe.
    #[command(name = "tcp_bidirectional")]
    TcpBidirectional(rrul::LatencyArgs),
    /// Responsiveness under working conditions (RPM, draft-ietf-ippm-responsiveness-09)
    /// against a routerbench server, or (`--url`) any draft-conforming HTTP/2 server.
    Rpm(rpm::RpmArgs),
    /// flent's rrul_var: N bidirectional streams (`--flows N`), each with its own UDP probe,
    /// and ICMP.
    #[command(name = "rrul_var")]
    RrulVar(rrul::NflowArgs),
    /// flent's voip: a G.711-like UDP stream (20 ms, 172 B) with one-way delay, jitter, loss.
    Voip(rrul::LatencyArgs),
    /// flent's rrul46: rrul with BE/BK over IPv4 and CS5/EF over IPv6 at once (HOST has an
    /// IPv4 and an IPv6 address, or `HOST4 --also HOST6`).
    Rrul46(rrul::RttFairArgs),
    /// flent's rtt_fair: four streams (upload, download, ping each) spread over up to four
    /// hosts (`HOST --also HOST2 …`), with the fairness between them.
    #[command(name = "rtt_fair")]
    RttFair(rrul::RttFairArgs),
    /// crusader's phases: download, then upload, then both, each LENGTH long with `--flows N`
    /// per loaded direction, latency probes throughout.
    Phases(rrul::NflowArgs),
    /// A standalone server for the latency tests (routerbench protocol only).
    LatencyServer(rrul::ServerArgs),
    /// Sample this machine's CPU, softirq, softnet drops and temperature for a while.
    Monitor(monitor::MonitorArgs),
    /// The router's radios and stations: driver, channel, mac80211's make-wifi-fast features
    /// (fq_codel TXQs, airtime fairness, AQL) with a verdict per radio, channel use, hostapd,
    /// and per station its address, signal, rates, counters, airtime and queues.
    Wifi(wifi::WifiArgs),
    /// Can it crash, overheat or throttle? Crypto on every core and RRUL load for a set time,
    /// the machine (or the router's agent) recorded, the answer in a few lines.
    Stress(stress::StressArgs),
    /// The netns router lab (root): up, down, status, measure, capacity, run.
    #[cfg(feature = "lab")]
    Lab(lab::LabArgs),
    /// The lab's userspace AQM forwarder (fifo, codel, fq_codel, cake) in the router namespace.
    #[cfg(feature = "lab")]
    Shape(forwarder::ShapeArgs),
    /// Inside the VM router (run by its /init): configure it over netlink, then serve as its
    /// agent. Not for use on a host.
    #[cfg(feature = "lab")]
    #[command(name = "vm-router", hide = true)]
    VmRouter(lab::VmRouterArgs),
    /// Serve iperf3 3.x clients (TCP/UDP, -R, --bidir, -P) and routerbench clients on one port.
    #[command(args_override_self = true)]
    Server(server::ServerArgs),
    /// Run an iperf3 test against an iperf3 (or routerbench) server.
    Client(client::ClientArgs),
    /// Throughput over loopback: server and client in one process, one thread per stream.
    Loopback(loopback::LoopbackArgs),
    /// One self-contained HTML page (inline SVG plots) from result files.
    #[cfg(feature = "plots")]
    Report(report::ReportArgs),
    /// One SVG plot of a result file (the report's own code).
    #[cfg(feature = "plots")]
    Plot(report::PlotArgs),
    /// Devices side by side on every headline figure, with ratios; a table of many with ranks.
    #[cfg(feature = "plots")]
    Compare(compare::CompareArgs),
}

/// Checks before any measuring that `path` can be written: it is not a directory, its
/// directory exists (none is created: a typo must not make directories, as root, anywhere) and
/// takes a new file (`what` names the option in the error). A device or pipe (`/dev/stdout`)
/// is written in place and passes as it is.
pub fn check_output_file(path: &std::path::Path, what: &str) -> anyhow::Result<()> {
    if path.is_dir() {
        anyhow::bail!(
            "{what} {}: is a directory; give a file name in it (e.g. {})",
            path.display(),
            path.join("result.json").display()
        );
    }
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return Ok(());
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    if !dir.is_dir() {
        anyhow::bail!(
            "{what} {}: the directory {} does not exist; create it first (mkdir -p {}) or \
             choose another place",
            path.display(),
            dir.display(),
            dir.display()
        );
    }
    if std::fs::metadata(path).is_ok_and(|m| m.permissions().readonly()) && !is_root() {
        anyhow::bail!(
            "{what} {}: the file is read-only; make it writable (chmod u+w) or choose another \
             name",
            path.display()
        );
    }
    check_writable_dir(&dir).map_err(|e| anyhow::anyhow!("{what} {}: {e}", path.display()))
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Checks that `dir` exists (creating it: the commands whose option names a directory of
/// their own, `run --out-dir`) and that a file can be created in it.
pub fn check_output_dir(dir: &std::path::Path, what: &str) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| {
        anyhow::anyhow!(
            "{what} {}: cannot create the directory: {e} (pick a writable place)",
            dir.display()
        )
    })?;
    check_writable_dir(dir).map_err(|e| anyhow::anyhow!("{what} {}: {e}", dir.display()))
}

fn check_writable_dir(dir: &std::path::Path) -> anyhow::Result<()> {
    let probe = dir.join(format!(".routerbench-write-check-{}", std::process::id()));
    match std::fs::File::create(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => anyhow::bail!(
            "cannot write in {}: {e} (read-only? pick a writable directory)",
            dir.display()
        ),
    }
}

/// Runs one command; returns the process exit code.
pub fn dispatch(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Run(a) => run::run(a),
        Command::Device(a) => device::run(a),
        Command::Crypto(a) => crypto::run(a),
        Command::Rrul(a) => rrul::run(crate::latency::TestKind::Rrul, 1, a),
        Command::RrulBe(a) => rrul::run(crate::latency::TestKind::RrulBe, 1, a),
        Command::TcpNup(a) => rrul::run(crate::latency::TestKind::TcpNup, a.streams, a.common),
        Command::TcpNdown(a) => rrul::run(crate::latency::TestKind::TcpNdown, a.streams, a.common),
        Command::Ping(a) => rrul::run(crate::latency::TestKind::Ping, 1, a),
        Command::RrulIcmp(a) => rrul::run(crate::latency::TestKind::RrulIcmp, 1, a),
        Command::TcpBidirectional(a) => rrul::run(crate::latency::TestKind::TcpBidirectional, 1, a),
        Command::LatencyServer(a) => rrul::serve(a),
        Command::Rpm(a) => rpm::run(a),
        Command::RrulVar(a) => rrul::run(crate::latency::TestKind::RrulVar, a.streams, a.common),
        Command::Voip(a) => rrul::run(crate::latency::TestKind::Voip, 1, a),
        Command::Rrul46(a) => rrul::run_hosts(crate::latency::TestKind::Rrul46, a),
        Command::RttFair(a) => rrul::run_hosts(crate::latency::TestKind::RttFair, a),
        Command::Phases(a) => rrul::run(crate::latency::TestKind::Phases, a.streams, a.common),
        Command::Monitor(a) => monitor::run(a),
        Command::Wifi(a) => wifi::run(a),
        Command::Stress(a) => stress::run(a),
        #[cfg(feature = "lab")]
        Command::Lab(a) => lab::run(a),
        #[cfg(feature = "lab")]
        Command::Shape(a) => forwarder::run(a),
        #[cfg(feature = "lab")]
        Command::VmRouter(a) => lab::vm_router(a),
        Command::Server(a) => server::run(a),
        Command::Client(a) => client::run(a),
        Command::Loopback(a) => loopback::run(a),
        #[cfg(feature = "plots")]
        Command::Report(a) => report::run_report(a),
        #[cfg(feature = "plots")]
        Command::Plot(a) => report::run_plot(a),
        #[cfg(feature = "plots")]
        Command::Compare(a) => compare::run(a),
    }
}
