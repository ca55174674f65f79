//! Inside the VM router: `routerbench vm-router --config FILE` (run by the initramfs's `/init`)
//! configures the router from the file the host put in the image, with netlink only (no `ip`,
//! `tc` or `nft` in the VM): links up, addresses, forwarding, its qdiscs, NAT. It prints one
//! `routerbench-vm: ready {json}` line on the console with the router's identity (what
//! `routerbench device` says inside the VM), then becomes the router's agent and test server
//! (`routerbench server --monitor`), which serves until the VM is stopped.

use super::nlconf::{self, Netlink, QdiscPlan};
use crate::lab::error::{LabError, Result};
use crate::results::device::DeviceInfo;
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;

/// The console line the host waits for.
pub const READY: &str = "routerbench-vm: ready ";
/// The console line that reports a configuration failure.
pub const FAILED: &str = "routerbench-vm: failed ";

/// One direction's qdisc inside the VM.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GuestQdisc {
    /// cake, fq_codel (htb + fq_codel), codel (htb + codel) or fifo (htb + bfifo).
    pub kind: String,
    pub rate_bps: u64,
    pub buffer_bytes: u64,
}

/// What the host tells the VM router (router.json in the initramfs).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GuestConfig {
    /// Expected device names; the devices are found by their MAC addresses.
    pub lan_dev: String,
    pub wan_dev: String,
    pub lan_mac: String,
    pub wan_mac: String,
    pub lan_ip: String,
    pub wan_ip: String,
    pub prefix_len: u8,
    /// Upload: the egress of the WAN device.
    pub up: Option<GuestQdisc>,
    /// Download: the egress of the LAN device.
    pub down: Option<GuestQdisc>,
    pub nat: bool,
    /// GRO/GSO/TSO inside the VM; off = every packet is routed as it arrived.
    pub offloads: bool,
    pub agent_port: u16,
    pub agent_token: String,
    /// routerbench's userspace forwarder (this qdisc kind, at `up`/`down`'s rates and
    /// buffers) instead of the kernel's qdiscs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub userspace_aqm: Option<String>,
    /// MAC addresses of the host-side taps: the forwarder's next hops.
    #[serde(default)]
    pub lan_peer_mac: String,
    #[serde(default)]
    pub wan_peer_mac: String,
    /// A WireGuard tunnel from the router to the WAN host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wireguard: Option<GuestWireguard>,
    /// The Wi-Fi router: hwsim radios, hostapd, stations (guest_wifi.rs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wifi: Option<super::guest_wifi::GuestWifi>,
}

/// The router's end of the WireGuard tunnel (keys in base64, as `wg` writes them).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GuestWireguard {
    pub ifname: String,
    pub private_key: String,
    pub listen_port: u16,
    pub address: String,
    pub prefix_len: u8,
    pub peer_public_key: String,
    /// `ip:port` of the WAN host's end.
    pub peer_endpoint: String,
    /// `net/len` the peer sends from and is routed to.
    pub allowed_ips: Vec<String>,
}

impl GuestWireguard {
    /// The netlink view of this configuration.
    pub fn device(&self) -> Result<super::wg::WgDevice> {
        let key = |k: &str, what: &str| {
            super::wg::key_from_base64(k)
                .map_err(|e| LabError::Input(format!("WireGuard {what}: {e}")))
        };
        let mut allowed = Vec::new();
        for a in &self.allowed_ips {
            let (net, len) = a
                .split_once('/')
                .ok_or_else(|| LabError::Input(format!("allowed IP {a:?}: want net/len")))?;
            let len: u8 = len
                .parse()
                .ok()
                .filter(|l| *l <= 32)
                .ok_or_else(|| LabError::Input(format!("allowed IP {a:?}: bad length")))?;
            allowed.push((ip(net)?, len));
        }
        Ok(super::wg::WgDevice {
            ifname: self.ifname.clone(),
            private_key: key(&self.private_key, "private key")?,
            listen_port: self.listen_port,
            peer_public_key: key(&self.peer_public_key, "peer key")?,
            peer_endpoint: self.peer_endpoint.parse().map_err(|_| {
                LabError::Input(format!("bad WireGuard endpoint {:?}", self.peer_endpoint))
            })?,
            allowed_ips: allowed,
            keepalive_s: 0,
        })
    }
}

/// `aa:bb:cc:dd:ee:ff` as bytes.
pub fn parse_mac(s: &str) -> Result<[u8; 6]> {
    let bad = || LabError::Input(format!("bad MAC address {s:?}"));
    let parts: Vec<&str> = s.split(':').collect();
    if parts.len() != 6 {
        return Err(bad());
    }
    let mut mac = [0u8; 6];
    for (m, p) in mac.iter_mut().zip(parts) {
        *m = u8::from_str_radix(p, 16).map_err(|_| bad())?;
    }
    Ok(mac)
}

/// What the VM reports on its ready line.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct GuestReady {
    pub identity: DeviceInfo,
    /// One line per step done (`eth0 up`, `cake on eth1 at 50 Mbit/s`, …).
    pub steps: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wifi: Option<super::guest_wifi::GuestWifiReady>,
}

impl GuestQdisc {
    pub fn plan(&self, nat: bool) -> Result<QdiscPlan> {
        let buffer = u32::try_from(self.buffer_bytes)
            .map_err(|_| LabError::Input(format!("buffer {} B is too large", self.buffer_bytes)))?;
        let rate_bps = self.rate_bps;
        if rate_bps == 0 {
            return Err(LabError::Input("a qdisc rate must be positive".into()));
        }
        Ok(match self.kind.as_str() {
            "cake" => QdiscPlan::Cake {
                rate_bps,
                buffer,
                nat,
            },
            "fq_codel" => QdiscPlan::HtbFqCodel { rate_bps, buffer },
            "codel" => QdiscPlan::HtbCodel { rate_bps },
            "fifo" => QdiscPlan::HtbFifo { rate_bps, buffer },
            k => {
                return Err(LabError::Input(format!(
                    "unknown VM qdisc {k:?}: cake, fq_codel, codel or fifo"
                )));
            }
        })
    }
}

fn ip(s: &str) -> Result<Ipv4Addr> {
    s.parse()
        .map_err(|_| LabError::Input(format!("bad IPv4 address {s:?}")))
}

fn io(e: std::io::Error) -> LabError {
    LabError::Sys(e.to_string())
}

fn sysctl(path: &str, value: &str) -> Result<()> {
    std::fs::write(path, value).map_err(|e| LabError::Sys(format!("cannot write {path}: {e}")))
}

/// The device with MAC address `mac` (from /sys/class/net/*/address).
fn dev_by_mac(mac: &str) -> Option<String> {
    let rd = std::fs::read_dir("/sys/class/net").ok()?;
    rd.flatten().take(256).find_map(|e| {
        let a = std::fs::read_to_string(e.path().join("address")).ok()?;
        a.trim()
            .eq_ignore_ascii_case(mac)
            .then(|| e.file_name().to_string_lossy().into_owned())
    })
}

/// The userspace forwarder's plan for `cfg` (device names resolved).
pub fn shape_plan(cfg: &GuestConfig) -> Result<super::guest_run::GuestShape> {
    let kind = cfg
        .userspace_aqm
        .as_deref()
        .ok_or_else(|| LabError::Input("no userspace AQM asked for".into()))?;
    let qdisc = aqm::QdiscKind::parse(kind)
        .ok_or_else(|| LabError::Input(format!("unknown userspace qdisc {kind:?}")))?;
    let local_ips = vec![ip(&cfg.lan_ip)?.octets(), ip(&cfg.wan_ip)?.octets()];
    let dir = |name: &str, in_dev: &str, out_dev: &str, out_mac: &str, peer: &str, port| {
        Ok::<_, LabError>(crate::lab::aqm_forwarder::forward::Direction {
            name: name.into(),
            in_dev: in_dev.into(),
            out_dev: out_dev.into(),
            out_mac: parse_mac(out_mac)?,
            next_hop_mac: parse_mac(peer)?,
            local_ips: local_ips.clone(),
            in_port: port,
        })
    };
    let buffer = |q: &Option<GuestQdisc>| q.as_ref().map_or(300_000, |q| q.buffer_bytes);
    Ok(super::guest_run::GuestShape {
        qdisc,
        up_rate_bps: cfg.up.as_ref().map(|q| q.rate_bps),
        down_rate_bps: cfg.down.as_ref().map(|q| q.rate_bps),
        buffer_bytes: buffer(&cfg.up).max(buffer(&cfg.down)),
        up: dir(
            "up",
            &cfg.lan_dev,
            &cfg.wan_dev,
            &cfg.wan_mac,
            &cfg.wan_peer_mac,
            0,
        )?,
        down: dir(
            "down",
            &cfg.wan_dev,
            &cfg.lan_dev,
            &cfg.lan_mac,
            &cfg.lan_peer_mac,
            1,
        )?,
    })
}

/// `cfg` with its device names found by their MAC addresses.
pub fn resolve(cfg: &GuestConfig) -> Result<GuestConfig> {
    let mut cfg = cfg.clone();
    for (mac, dev) in [
        (cfg.lan_mac.clone(), &mut cfg.lan_dev),
        (cfg.wan_mac.clone(), &mut cfg.wan_dev),
    ] {
        match dev_by_mac(&mac) {
            Some(d) => *dev = d,
            None => {
                return Err(LabError::State(format!(
                    "no network device with MAC {mac} in the VM (virtio_net not loaded?)"
                )));
            }
        }
    }
    Ok(cfg)
}

/// Applies `cfg` to this machine (the VM), after resolving the device names by MAC. Returns
/// the configuration actually applied and what was done.
pub fn apply(cfg: &GuestConfig) -> Result<(GuestConfig, Vec<String>)> {
    let cfg = &resolve(cfg)?;
    let mut steps = Vec::new();
    let mut nl = Netlink::route().map_err(io)?;
    nlconf::link_up(&mut nl, "lo").map_err(io)?;
    // No IPv6 chatter on the links (the namespace lab does the same).
    let _ = sysctl("/proc/sys/net/ipv6/conf/all/disable_ipv6", "1");
    let _ = sysctl("/proc/sys/net/ipv6/conf/default/disable_ipv6", "1");
    for (dev, addr) in [(&cfg.lan_dev, &cfg.lan_ip), (&cfg.wan_dev, &cfg.wan_ip)] {
        let _ = sysctl(&format!("/proc/sys/net/ipv6/conf/{dev}/disable_ipv6"), "1");
        // GRO goes off first; a virtio NIC on a tap without a vnet header has no TSO/GSO to
        // switch, so what stuck is read back rather than required.
        let set = crate::lab::offload::set(dev, cfg.offloads);
        let now = crate::lab::offload::get(dev)
            .map(|o| o.to_string())
            .unwrap_or_else(|e| format!("unreadable ({e})"));
        nlconf::link_up(&mut nl, dev).map_err(io)?;
        nlconf::addr_add(&mut nl, dev, ip(addr)?, cfg.prefix_len).map_err(io)?;
        steps.push(format!(
            "{dev} up, {addr}/{}, offloads asked {}: {now}{}",
            cfg.prefix_len,
            if cfg.offloads { "on" } else { "off" },
            if set.is_err() {
                " (the NIC offers no more)"
            } else {
                ""
            }
        ));
    }
    sysctl("/proc/sys/net/ipv4/ip_forward", "1")?;
    steps.push("ip_forward=1".into());
    for (dev, q) in [(&cfg.wan_dev, &cfg.up), (&cfg.lan_dev, &cfg.down)] {
        if cfg.userspace_aqm.is_some() {
            // routerbench's forwarder shapes; the kernel's qdiscs stay the defaults.
            break;
        }
        if let Some(q) = q {
            nlconf::qdisc_set(&mut nl, dev, q.plan(cfg.nat)?).map_err(io)?;
            steps.push(format!(
                "{} on {dev} at {} (limit {} B)",
                q.kind,
                crate::util::units::human_rate(q.rate_bps as f64),
                q.buffer_bytes
            ));
        }
    }
    if let Some(w) = &cfg.wireguard {
        super::wg::configure(&w.device()?, ip(&w.address)?, w.prefix_len).map_err(io)?;
        steps.push(format!(
            "WireGuard {} {}/{} (kernel module), peer {} allowed {}",
            w.ifname,
            w.address,
            w.prefix_len,
            w.peer_endpoint,
            w.allowed_ips.join(",")
        ));
    }
    if cfg.nat {
        nlconf::masquerade(crate::lab::NFT_TABLE, &cfg.wan_dev).map_err(io)?;
        steps.push(format!(
            "nftables masquerade on {} (table {})",
            cfg.wan_dev,
            crate::lab::NFT_TABLE
        ));
    }
    Ok((cfg.clone(), steps))
}

/// Parses router.json.
pub fn load(path: &std::path::Path) -> Result<GuestConfig> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| LabError::Sys(format!("cannot read {}: {e}", path.display())))?;
    crate::util::json::from_json(text.as_bytes()).map_err(|e| {
        LabError::Unexpected(format!("{} is not a VM router config: {e}", path.display()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qdisc_plans() {
        let q = |k: &str| GuestQdisc {
            kind: k.into(),
            rate_bps: 50_000_000,
            buffer_bytes: 300_000,
        };
        assert_eq!(
            q("cake").plan(true).unwrap(),
            QdiscPlan::Cake {
                rate_bps: 50_000_000,
                buffer: 300_000,
                nat: true
            }
        );
        assert!(matches!(
            q("fq_codel").plan(false).unwrap(),
            QdiscPlan::HtbFqCodel { .. }
        ));
        assert!(
            q("sfq")
                .plan(false)
                .unwrap_err()
                .to_string()
                .contains("sfq")
        );
        let mut z = q("cake");
        z.rate_bps = 0;
        assert!(z.plan(false).is_err());
    }
}
