//! `lab up`, `lab down`, `lab status`: building, reconfiguring and removing the namespaces.

use super::error::{Context, IoContext, LabError, Result, chain};
use super::events::{LabEvent, LabEvents, NoEvents};
use super::router::{Bottleneck, apply_shaper, ip, link_exists, tc};
use super::sys::{require_root, require_tools, run_tool, run_tool_stdin, try_tool};
use super::{DEV_LAN, DEV_RTR_LAN, DEV_RTR_WAN, DEV_WAN, NFT_TABLE};
use super::{LAN_IP, LAN_NET, RTR_LAN_IP, RTR_WAN_IP, WAN_IP};
use super::{netns, offload, state, theory};
use crate::results::lab::{LabConfig, LabDevices, LabStatus, NamespaceStatus, QdiscStats, Shaper};
use std::sync::Arc;
use std::time::Duration;

/// What to build.
#[derive(Debug, Clone, PartialEq)]
pub struct LabSpec {
    pub name: String,
    pub up_rate_bps: Option<u64>,
    pub down_rate_bps: Option<u64>,
    pub buffer_bytes: u64,
    pub burst_bytes: u64,
    pub shaper: Shaper,
    pub nat: bool,
    pub offloads: bool,
    pub cc: String,
}

impl Default for LabSpec {
    /// docs/protocols/netns-lab.md's defaults: 50 Mbit/s both ways, 300 KB, tbf burst 15360 B, no NAT,
    /// offloads off, cubic.
    fn default() -> Self {
        Self {
            name: super::DEFAULT_NAME.into(),
            up_rate_bps: Some(50_000_000),
            down_rate_bps: Some(50_000_000),
            buffer_bytes: 300_000,
            burst_bytes: 15_360,
            shaper: Shaper::Tbf,
            nat: false,
            offloads: false,
            cc: "cubic".into(),
        }
    }
}

impl LabSpec {
    pub(crate) fn validate(&self) -> Result<()> {
        netns::check_name(&self.name)?;
        let bad = |m: String| Err(LabError::Input(m));
        if self.name.len() > 40 {
            return bad(format!(
                "lab name {:?} too long: use at most 40 characters",
                self.name
            ));
        }
        if self.buffer_bytes < 1514 {
            return bad(format!(
                "--buffer {} B is smaller than one full Ethernet frame (1514 B)",
                self.buffer_bytes
            ));
        }
        if self.burst_bytes < 1514 {
            return bad(format!(
                "burst {} B is smaller than one full Ethernet frame (1514 B)",
                self.burst_bytes
            ));
        }
        if self.cc.is_empty()
            || !self
                .cc
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return bad(format!("bad congestion control name {:?}", self.cc));
        }
        Ok(())
    }

    fn bottleneck(&self) -> Bottleneck {
        Bottleneck {
            shaper: self.shaper,
            buffer_bytes: self.buffer_bytes,
            burst_bytes: self.burst_bytes,
        }
    }
}

pub(crate) fn names(name: &str) -> (String, String, String) {
    (
        format!("{name}-lan"),
        format!("{name}-rtr"),
        format!("{name}-wan"),
    )
}

/// Picks the namespaces' default congestion control: `cc` if a child netns may use it as its
/// default (it is in the host's tcp_allowed_congestion_control), else reno, which is always
/// allowed. Sockets can still choose `cc` themselves (root may pick any available one).
pub(crate) fn ns_default_cc(cc: &str) -> Result<String> {
    let read = |k: &str| {
        std::fs::read_to_string(format!("/proc/sys/net/ipv4/{k}"))
            .io_context(|| format!("cannot read /proc/sys/net/ipv4/{k}"))
    };
    let available = read("tcp_available_congestion_control")?;
    if !available.split_whitespace().any(|c| c == cc) {
        return Err(LabError::State(format!(
            "congestion control {cc} is not available in this kernel (available: {}); try modprobe tcp_{cc}",
            available.trim()
        )));
    }
    let allowed = read("tcp_allowed_congestion_control")?;
    Ok(if allowed.split_whitespace().any(|c| c == cc) {
        cc.to_string()
    } else {
        "reno".to_string()
    })
}

/// Creates or reconfigures the lab. Idempotent: re-running with other values changes the
/// shaping, NAT, offloads and congestion control in place.
pub fn up(spec: &LabSpec) -> Result<LabConfig> {
    require_root()?;
    spec.validate()?;
    require_tools(&["ip", "tc"])?;
    if spec.nat {
        require_tools(&["nft"])?;
    }
    let ns_cc = ns_default_cc(&spec.cc)?;
    // A userspace AQM forwarder from an earlier `up --qdisc` goes; kernel forwarding comes back.
    super::aqm_forwarder::stop(&spec.name)?;
    let (lan, rtr, wan) = names(&spec.name);
    make_namespaces([&lan, &rtr, &wan])?;
    make_links(&lan, &rtr, &wan)?;
    configure_links(spec, &lan, &rtr, &wan, &ns_cc)?;
    apply_shaper(&rtr, DEV_RTR_WAN, spec.bottleneck(), spec.up_rate_bps)?;
    apply_shaper(&rtr, DEV_RTR_LAN, spec.bottleneck(), spec.down_rate_bps)?;
    apply_nat(&rtr, &wan, spec.nat)?;

    let cfg = LabConfig {
        name: spec.name.clone(),
        ns_lan: lan,
        ns_rtr: rtr,
        ns_wan: wan,
        lan_ip: LAN_IP.into(),
        rtr_lan_ip: RTR_LAN_IP.into(),
        rtr_wan_ip: RTR_WAN_IP.into(),
        wan_ip: WAN_IP.into(),
        up_rate_bps: spec.up_rate_bps,
        down_rate_bps: spec.down_rate_bps,
        buffer_bytes: spec.buffer_bytes,
        burst_bytes: spec.burst_bytes,
        shaper: spec.shaper,
        nat: spec.nat,
        offloads: spec.offloads,
        cc: spec.cc.clone(),
        ns_cc,
        devices: devices(),
        router_vm: None,
    };
    state::save_config(&cfg)?;
    Ok(cfg)
}

/// The lab's device names, as the result model records them.
pub fn devices() -> LabDevices {
    LabDevices {
        lan: DEV_LAN.into(),
        rtr_lan: DEV_RTR_LAN.into(),
        rtr_wan: DEV_RTR_WAN.into(),
        wan: DEV_WAN.into(),
    }
}

/// The three namespaces, quiet (no IPv6) and allowed ICMP datagram sockets.
pub(crate) fn make_namespaces(all: [&String; 3]) -> Result<()> {
    for ns in all {
        if !netns::exists(ns) {
            run_tool("ip", &["netns", "add", ns])
                .with_context(|| format!("cannot create network namespace {ns}"))?;
        }
        ip(ns, &["link", "set", "lo", "up"])?;
        // Keep the links quiet: no IPv6 router solicitations, MLD or DAD on the bottleneck.
        netns::sysctl_write(ns, "net.ipv6.conf.all.disable_ipv6", "1")?;
        netns::sysctl_write(ns, "net.ipv6.conf.default.disable_ipv6", "1")?;
        // A new namespace starts with ping_group_range "1 0": no ICMP datagram sockets at all,
        // not even for root. Latency tests ping through the lab with them.
        netns::sysctl_write(ns, "net.ipv4.ping_group_range", "0 2147483647")?;
    }
    Ok(())
}

/// The two veth pairs, created directly inside the namespaces: never in the root namespace.
fn make_links(lan: &str, rtr: &str, wan: &str) -> Result<()> {
    for (host, host_dev, rtr_dev, what) in [
        (lan, DEV_LAN, DEV_RTR_LAN, "LAN"),
        (wan, DEV_WAN, DEV_RTR_WAN, "WAN"),
    ] {
        if !link_exists(rtr, rtr_dev) {
            let args = [
                "link", "add", host_dev, "netns", host, "type", "veth", "peer", "name", rtr_dev,
                "netns", rtr,
            ];
            run_tool("ip", &args).with_context(|| format!("cannot create the {what} veth pair"))?;
        }
    }
    Ok(())
}

/// Addresses, offloads, the LAN host's default route, forwarding and the congestion control.
fn configure_links(spec: &LabSpec, lan: &str, rtr: &str, wan: &str, ns_cc: &str) -> Result<()> {
    let devices = [
        (lan, DEV_LAN, LAN_IP),
        (rtr, DEV_RTR_LAN, RTR_LAN_IP),
        (rtr, DEV_RTR_WAN, RTR_WAN_IP),
        (wan, DEV_WAN, WAN_IP),
    ];
    for (ns, dev, addr) in devices {
        ip(ns, &["addr", "replace", &format!("{addr}/24"), "dev", dev])?;
        ip(ns, &["link", "set", dev, "up"])?;
        let (dev_s, on) = (dev.to_string(), spec.offloads);
        netns::run_in(ns, move || Ok(offload::set(&dev_s, on)?))
            .with_context(|| format!("cannot set offloads on {dev} in {ns}"))?;
    }
    ip(lan, &["route", "replace", "default", "via", RTR_LAN_IP])?;
    netns::sysctl_write(rtr, "net.ipv4.ip_forward", "1")?;
    for ns in [lan, rtr, wan] {
        netns::sysctl_write(ns, "net.ipv4.tcp_congestion_control", ns_cc)?;
    }
    Ok(())
}

fn nft_in(rtr: &str, args: &[&str], input: Option<&str>) -> Result<String> {
    let mut v = vec!["netns", "exec", rtr, "nft"];
    v.extend_from_slice(args);
    match input {
        Some(text) => Ok(run_tool_stdin("ip", &v, text)?),
        None => Ok(run_tool("ip", &v)?),
    }
}

pub(crate) fn apply_nat(rtr: &str, wan: &str, nat: bool) -> Result<()> {
    if super::sys::tool_path("nft").is_ok() {
        let _ = nft_in(rtr, &["delete", "table", "ip", NFT_TABLE], None);
    }
    if nat {
        let rules = format!(
            "table ip {NFT_TABLE} {{\n  chain postrouting {{\n    type nat hook postrouting priority srcnat; policy accept;\n    oifname \"{DEV_RTR_WAN}\" counter masquerade\n  }}\n}}\n"
        );
        nft_in(rtr, &["-f", "-"], Some(&rules)).context("cannot install the NAT rules")?;
        // The WAN host must not know the LAN: only NAT makes the path work.
        try_tool("ip", &["-n", wan, "route", "del", LAN_NET]);
    } else {
        ip(wan, &["route", "replace", LAN_NET, "via", RTR_WAN_IP])?;
    }
    Ok(())
}

/// What `down` did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DownReport {
    pub removed: Vec<String>,
    pub killed: Vec<i32>,
}

/// Stops the processes inside the lab's namespaces (by PID, never our own) and deletes the three
/// namespaces by exact name. Safe to run twice.
pub fn down(name: &str) -> Result<DownReport> {
    require_root()?;
    netns::check_name(name)?;
    // A VM router's qemu (and with it its taps), its cgroup, console and image.
    super::vm::files::stop(name);
    // The forwarder's supervisor restores kernel forwarding and removes its state files.
    let _ = super::aqm_forwarder::stop(name);
    state::remove_log(name);
    let (lan, rtr, wan) = names(name);
    let me = std::process::id() as i32;
    let mut report = DownReport::default();
    let present: Vec<String> = [lan, rtr, wan]
        .into_iter()
        .filter(|n| netns::exists(n))
        .collect();
    if !present.is_empty() {
        require_tools(&["ip"])?;
    }
    for sig in [
        nix::sys::signal::Signal::SIGTERM,
        nix::sys::signal::Signal::SIGKILL,
    ] {
        let mut any = false;
        for ns in &present {
            for pid in netns::pids(ns).unwrap_or_default() {
                if pid != me {
                    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig);
                    if !report.killed.contains(&pid) {
                        report.killed.push(pid);
                    }
                    any = true;
                }
            }
        }
        if any && sig == nix::sys::signal::Signal::SIGTERM {
            std::thread::sleep(Duration::from_millis(300));
        }
    }
    // Reap what this process started (a VM's qemu, a forwarder): otherwise each stays a
    // zombie until we exit. ECHILD (not our child) is fine; WNOHANG never blocks.
    for &pid in &report.killed {
        let _ = nix::sys::wait::waitpid(
            nix::unistd::Pid::from_raw(pid),
            Some(nix::sys::wait::WaitPidFlag::WNOHANG),
        );
    }
    let mut failed = Vec::new();
    for ns in &present {
        match run_tool("ip", &["netns", "del", ns]) {
            Ok(_) => report.removed.push(ns.clone()),
            Err(e) => failed.push(format!("{ns}: {}", chain(&e))),
        }
    }
    state::remove_config(name);
    if !failed.is_empty() {
        return Err(LabError::State(format!(
            "could not delete: {}",
            failed.join("; ")
        )));
    }
    Ok(report)
}

/// Qdisc counters of `dev` in the router namespace.
pub fn qdisc_stats(cfg: &LabConfig, dev: &str) -> Result<Vec<QdiscStats>> {
    let out = tc(&cfg.ns_rtr, &["-s", "-j", "qdisc", "show", "dev", dev])?;
    crate::monitor::qdisc::parse_qdisc_json(dev, &out).map_err(LabError::other)
}

fn ns_status(ns: &str) -> NamespaceStatus {
    let mut s = NamespaceStatus {
        name: ns.to_string(),
        exists: netns::exists(ns),
        ..Default::default()
    };
    if !s.exists {
        return s;
    }
    if let Ok(out) = ip(ns, &["-4", "-o", "addr", "show"]) {
        s.addresses = out
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let i = f.iter().position(|w| *w == "inet")?;
                Some(format!("{} {}", f.get(1)?, f.get(i + 1)?))
            })
            .collect();
    }
    if let Ok(out) = ip(ns, &["-4", "route", "show"]) {
        s.routes = out.lines().map(|l| l.trim().to_string()).collect();
    }
    s.tcp_congestion_control = netns::sysctl_read(ns, "net.ipv4.tcp_congestion_control").ok();
    s.ip_forward = netns::sysctl_read(ns, "net.ipv4.ip_forward")
        .ok()
        .map(|v| v == "1");
    s
}

/// The lab as it is now: namespaces, addresses, routes, qdiscs with counters, offloads, NAT
/// rules, and whether a UDP echo from the LAN host reaches the WAN host.
pub fn status(name: &str) -> Result<LabStatus> {
    require_root()?;
    netns::check_name(name)?;
    require_tools(&["ip", "tc"])?;
    let (lan, rtr, wan) = names(name);
    let config = state::load_config(name).ok();
    let mut st = LabStatus {
        name: name.to_string(),
        theory: config.as_ref().map(theory::theory),
        config,
        namespaces: [&lan, &rtr, &wan].iter().map(|n| ns_status(n)).collect(),
        ..Default::default()
    };
    if let Some(cfg) = st.config.clone().filter(|c| c.router_vm.is_some()) {
        return vm_status(st, &cfg, &lan, &wan);
    }
    st.up = st.namespaces.iter().all(|n| n.exists)
        && link_exists(&rtr, DEV_RTR_LAN)
        && link_exists(&rtr, DEV_RTR_WAN);
    if !st.up {
        return Ok(st);
    }
    for dev in [DEV_RTR_WAN, DEV_RTR_LAN] {
        let parsed = tc(&rtr, &["-s", "-j", "qdisc", "show", "dev", dev])
            .ok()
            .and_then(|out| crate::monitor::qdisc::parse_qdisc_json(dev, &out).ok());
        if let Some(q) = parsed {
            st.qdiscs.extend(q);
        }
        let d = dev.to_string();
        if let Ok(o) = netns::run_in(&rtr, move || Ok(offload::get(&d)?)) {
            st.offloads.push(format!("{dev}: {o}"));
        }
    }
    if super::sys::tool_path("nft").is_ok() {
        st.nft_ruleset = nft_in(&rtr, &["list", "ruleset"], None).ok();
    }
    st.aqm = state::load_state(name).map(|mut a| {
        a.kernel_forwarding = super::router::kernel_forwarding(&rtr);
        a
    });
    let (reach, rtt) = reachability(&lan, &wan)?;
    st.reachable = Some(reach);
    st.reach_rtt_ms = rtt;
    Ok(st)
}

/// `status` of a lab whose router is a VM: qemu alive, the taps, their qdiscs (the queue in
/// front of the router), and the path through it.
fn vm_status(mut st: LabStatus, cfg: &LabConfig, lan: &str, wan: &str) -> Result<LabStatus> {
    let alive = super::vm::files::running(cfg) == Some(true);
    st.up = alive
        && st.namespaces.iter().all(|n| n.exists)
        && link_exists(lan, DEV_LAN)
        && link_exists(wan, DEV_WAN);
    st.vm_running = Some(alive);
    if !st.up {
        return Ok(st);
    }
    for (ns, dev) in [(lan, DEV_LAN), (wan, DEV_WAN)] {
        if let Some(q) = tc(ns, &["-s", "-j", "qdisc", "show", "dev", dev])
            .ok()
            .and_then(|out| crate::monitor::qdisc::parse_qdisc_json(dev, &out).ok())
        {
            st.qdiscs.extend(q);
        }
    }
    let (reach, rtt) = reachability(lan, wan)?;
    st.reachable = Some(reach);
    st.reach_rtt_ms = rtt;
    Ok(st)
}

/// One-off UDP echo LAN host → WAN host (3 tries, 1 s timeout each).
fn reachability(lan: &str, wan: &str) -> Result<(bool, Option<f64>)> {
    let wan_ip: std::net::Ipv4Addr = WAN_IP.parse().context("WAN_IP")?;
    let port = 7;
    let server = super::probe::EchoServer::start(wan, wan_ip, port, Duration::from_secs(10))?;
    let plan = super::probe::ProbePlan {
        count: 3,
        interval: Duration::from_millis(200),
        timeout: Duration::from_secs(1),
    };
    let (_, rtts) = super::probe::probe(lan, std::net::SocketAddrV4::new(wan_ip, port), plan)?;
    server.stop()?;
    let t = theory::summarize(3, &rtts);
    Ok((!rtts.is_empty(), t.min_ms))
}

/// Deletes the lab when dropped: tests hold one so the namespaces go even when they fail. A
/// cleanup that fails is an event ([`LabEvent::CleanupFailed`]) for the guard's [`LabEvents`].
pub struct LabGuard {
    name: String,
    events: Arc<dyn LabEvents>,
}

impl LabGuard {
    /// Guards lab `name`; create the guard before `up` so a half-built lab is removed too.
    /// A failed cleanup goes unreported: use [`LabGuard::with_events`] to hear of it.
    pub fn new(name: &str) -> Self {
        Self::with_events(name, Arc::new(NoEvents))
    }

    /// Guards lab `name`, telling `events` if the cleanup fails.
    pub fn with_events(name: &str, events: Arc<dyn LabEvents>) -> Self {
        Self {
            name: name.to_string(),
            events,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for LabGuard {
    fn drop(&mut self) {
        if let Err(e) = down(&self.name) {
            self.events.event(&LabEvent::CleanupFailed {
                lab: self.name.clone(),
                error: chain(&e),
            });
        }
    }
}
