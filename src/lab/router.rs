//! The router namespace's two lab links: `ip`/`tc` inside a namespace, whether the links exist,
//! the FIFO shaper on their egress, and the kernel's forwarding between them (off while the
//! userspace forwarder runs). Used by the topology and by the forwarder.

use super::error::{Context, Result};
use super::sys::{run_tool, try_tool};
use super::{DEV_RTR_LAN, DEV_RTR_WAN, netns, tc_shaper};
use crate::results::lab::{LabConfig, Shaper};

/// `ip -n NS args…`.
pub fn ip(ns: &str, args: &[&str]) -> Result<String> {
    let mut v = vec!["-n", ns];
    v.extend_from_slice(args);
    Ok(run_tool("ip", &v)?)
}

/// `tc -n NS args…`.
pub fn tc(ns: &str, args: &[&str]) -> Result<String> {
    let mut v = vec!["-n", ns];
    v.extend_from_slice(args);
    Ok(run_tool("tc", &v)?)
}

/// True if `dev` exists in namespace `ns`.
pub fn link_exists(ns: &str, dev: &str) -> bool {
    try_tool("ip", &["-n", ns, "link", "show", "dev", dev])
}

/// True if the router namespace has both lab links.
pub fn router_links_exist(rtr: &str) -> bool {
    link_exists(rtr, DEV_RTR_LAN) && link_exists(rtr, DEV_RTR_WAN)
}

/// Kernel forwarding of the router's two lab interfaces ("1" = on).
pub fn kernel_forwarding(ns_rtr: &str) -> Option<bool> {
    let a = netns::sysctl_read(ns_rtr, &format!("net.ipv4.conf.{DEV_RTR_LAN}.forwarding")).ok()?;
    let b = netns::sysctl_read(ns_rtr, &format!("net.ipv4.conf.{DEV_RTR_WAN}.forwarding")).ok()?;
    Some(a.trim() == "1" && b.trim() == "1")
}

/// Turns the kernel's forwarding of the two lab interfaces on or off.
pub fn set_kernel_forwarding(ns_rtr: &str, on: bool) -> Result<()> {
    let v = if on { "1" } else { "0" };
    for dev in [DEV_RTR_LAN, DEV_RTR_WAN] {
        netns::sysctl_write(ns_rtr, &format!("net.ipv4.conf.{dev}.forwarding"), v)?;
    }
    Ok(())
}

/// The lab's FIFO bottleneck: which shaper, its queue limit and token bucket depth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bottleneck {
    pub shaper: Shaper,
    pub buffer_bytes: u64,
    pub burst_bytes: u64,
}

/// Replaces the root qdisc of `dev` in `rtr` with the bottleneck at `rate` (None: the veth
/// default, unshaped).
pub fn apply_shaper(rtr: &str, dev: &str, b: Bottleneck, rate: Option<u64>) -> Result<()> {
    // Back to the veth default (noqueue), then add ours: re-running `up` replaces the shaper.
    try_tool("tc", &["-n", rtr, "qdisc", "del", "dev", dev, "root"]);
    let Some(rate) = rate else { return Ok(()) };
    for args in tc_shaper::tc_commands(dev, b.shaper, rate, b.buffer_bytes, b.burst_bytes) {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        tc(rtr, &a).with_context(|| format!("cannot install the {} shaper on {dev}", b.shaper))?;
    }
    Ok(())
}

/// Puts the lab's own FIFO shaper back on both directions (after a failed kernel AQM install).
pub fn reapply_shaper(cfg: &LabConfig) -> Result<()> {
    let b = Bottleneck {
        shaper: cfg.shaper,
        buffer_bytes: cfg.buffer_bytes,
        burst_bytes: cfg.burst_bytes,
    };
    apply_shaper(&cfg.ns_rtr, DEV_RTR_WAN, b, cfg.up_rate_bps)?;
    apply_shaper(&cfg.ns_rtr, DEV_RTR_LAN, b, cfg.down_rate_bps)
}
