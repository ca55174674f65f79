//! The WAN host's end of the VM router's WireGuard tunnel. This host's kernel has no wireguard
//! module, so the WAN end is wireguard-go (Debian's `wireguard-go`, userspace, a TUN device)
//! configured with `wg` (Debian's `wireguard-tools`), both run in the WAN namespace. Keys come
//! from `wg genkey` / `wg pubkey`; the router's end is configured over netlink inside the VM
//! (`wg.rs`). docs/vm-router.md has the addresses and the routes.

use super::guest::GuestWireguard;
use crate::lab::error::{LabError, Result};
use crate::lab::netns;
use crate::lab::state::STATE_DIR;
use crate::results::lab::VmWireguard;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub const WG_PORT: u16 = 51820;
pub const RTR_TUNNEL_IP: &str = "10.202.0.1";
pub const WAN_TUNNEL_IP: &str = "10.202.0.2";
pub const TUNNEL_NET: &str = "10.202.0.0/24";
/// The WAN host's routing table for replies from its tunnel address (policy rule priority too).
pub const TUNNEL_TABLE: u32 = 202;
/// WireGuard's default MTU on a 1500-byte path (IPv4 or IPv6 outer header, 80 bytes).
pub const WG_MTU: u32 = 1420;
/// wireguard-go's UAPI sockets.
use super::files::WG_UAPI_DIR as UAPI_DIR;

/// The two key pairs, base64.
#[derive(Debug, Clone)]
pub struct WgKeys {
    pub rtr_private: String,
    pub rtr_public: String,
    pub wan_private: String,
    pub wan_public: String,
}

fn wg(args: &[&str], stdin: Option<&str>) -> Result<String> {
    let mut child = Command::new("wg")
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            LabError::State(format!(
                "cannot run `wg` ({e}): the WAN end of the tunnel needs wireguard-tools \
                 (apt-get install wireguard-tools wireguard-go)"
            ))
        })?;
    if let (Some(text), Some(mut i)) = (stdin, child.stdin.take()) {
        let _ = i.write_all(text.as_bytes());
    }
    let o = child
        .wait_with_output()
        .map_err(|e| LabError::Sys(format!("wg {}: {e}", args.join(" "))))?;
    if !o.status.success() {
        return Err(LabError::Sys(format!(
            "wg {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// Checks that the WAN end's programs are there, before anything is built.
pub fn preflight() -> Result<()> {
    for (tool, pkg) in [("wg", "wireguard-tools"), ("wireguard-go", "wireguard-go")] {
        if crate::lab::sys::tool_path(tool).is_err() {
            return Err(LabError::State(format!(
                "--wireguard needs `{tool}` on this host for the WAN end of the tunnel (its \
                 kernel has no wireguard module): apt-get install {pkg}"
            )));
        }
    }
    Ok(())
}

/// Two fresh key pairs.
pub fn make_keys() -> Result<WgKeys> {
    let rtr_private = wg(&["genkey"], None)?;
    let wan_private = wg(&["genkey"], None)?;
    Ok(WgKeys {
        rtr_public: wg(&["pubkey"], Some(&rtr_private))?,
        wan_public: wg(&["pubkey"], Some(&wan_private))?,
        rtr_private,
        wan_private,
    })
}

impl WgKeys {
    /// The router's end, for its configuration file.
    pub fn guest(&self) -> GuestWireguard {
        GuestWireguard {
            ifname: "wg0".into(),
            private_key: self.rtr_private.clone(),
            listen_port: WG_PORT,
            address: RTR_TUNNEL_IP.into(),
            prefix_len: 24,
            peer_public_key: self.wan_public.clone(),
            peer_endpoint: format!("{}:{WG_PORT}", crate::lab::WAN_IP),
            allowed_ips: vec![TUNNEL_NET.into()],
        }
    }
}

pub use super::files::wan_wg_ifname as wan_ifname;

use super::files::wireguard_go_log as log_path;

/// Starts wireguard-go in namespace `wan` and configures it as the router's peer; returns what
/// the lab's configuration records.
pub fn start(name: &str, wan: &str, keys: &WgKeys) -> Result<VmWireguard> {
    let ifname = wan_ifname(name);
    let sock = PathBuf::from(UAPI_DIR).join(format!("{ifname}.sock"));
    let _ = std::fs::remove_file(&sock);
    let log_p = log_path(name);
    let log = std::fs::File::create(&log_p)
        .map_err(|e| LabError::Sys(format!("cannot create {}: {e}", log_p.display())))?;
    let log2 = log
        .try_clone()
        .map_err(|e| LabError::Sys(format!("cannot open {} twice: {e}", log_p.display())))?;
    use std::os::unix::process::CommandExt;
    let mut child = Command::new("ip")
        .args(["netns", "exec", wan, "wireguard-go", &ifname])
        .env("WG_PROCESS_FOREGROUND", "1")
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log2)
        .process_group(0)
        .spawn()
        .map_err(|e| LabError::Sys(format!("cannot start wireguard-go: {e}")))?;
    let pid = child.id() as i32;
    let t0 = Instant::now();
    while !sock.exists() {
        if child.try_wait().ok().flatten().is_some() || t0.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(LabError::State(format!(
                "wireguard-go did not come up in {wan}: {}",
                std::fs::read_to_string(&log_p).unwrap_or_default().trim()
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // qemu-style: the process runs on after `lab up` (lab down stops the namespace's PIDs).
    drop(child);
    let key_file = PathBuf::from(STATE_DIR).join(format!("{name}.wg-key"));
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .mode(0o600)
            .open(&key_file)
            .map_err(|e| LabError::Sys(format!("cannot write {}: {e}", key_file.display())))?;
        f.write_all(keys.wan_private.as_bytes())
            .map_err(|e| LabError::Sys(format!("cannot write {}: {e}", key_file.display())))?;
    }
    let kf = key_file.display().to_string();
    let port = WG_PORT.to_string();
    let allowed = format!("{RTR_TUNNEL_IP}/32,{}", crate::lab::LAN_NET);
    let endpoint = format!("{}:{WG_PORT}", crate::lab::RTR_WAN_IP);
    let (w, i, p, k, a, e) = (
        wan.to_string(),
        ifname.clone(),
        port,
        keys.rtr_public.clone(),
        allowed,
        endpoint,
    );
    let set = netns::run_in(&w, move || {
        Ok(wg(
            &[
                "set",
                &i,
                "private-key",
                &kf,
                "listen-port",
                &p,
                "peer",
                &k,
                "allowed-ips",
                &a,
                "endpoint",
                &e,
            ],
            None,
        )?)
    });
    let _ = std::fs::remove_file(&key_file);
    set?;
    let ip = |args: &[&str]| crate::lab::router::ip(wan, args);
    ip(&[
        "addr",
        "replace",
        &format!("{WAN_TUNNEL_IP}/24"),
        "dev",
        &ifname,
    ])?;
    ip(&["link", "set", &ifname, "mtu", &WG_MTU.to_string(), "up"])?;
    // Only what the WAN host sends from its tunnel address goes back through the tunnel (the
    // servers of `--tunnel` tests bind to it): a policy rule, so the lab's plain path (the main
    // table's route to the LAN via the router, or none with NAT) stays as it is. A route to the
    // LAN in the main table through the tunnel would send the plain path's replies into it too,
    // with a source (10.201.2.2) the router's peer does not allow, and they would be dropped.
    let table = TUNNEL_TABLE.to_string();
    ip(&[
        "route",
        "replace",
        crate::lab::LAN_NET,
        "dev",
        &ifname,
        "table",
        &table,
    ])?;
    let from = format!("{WAN_TUNNEL_IP}/32");
    let rule = |verb| {
        [
            "rule", verb, "from", &from, "lookup", &table, "priority", &table,
        ]
    };
    // `ip rule add` twice makes two rules: remove an old one first (none is fine).
    let _ = crate::lab::router::ip(wan, &rule("del"));
    ip(&rule("add"))?;
    Ok(VmWireguard {
        rtr_tunnel_ip: RTR_TUNNEL_IP.into(),
        wan_tunnel_ip: WAN_TUNNEL_IP.into(),
        tunnel_net: TUNNEL_NET.into(),
        wan_ifname: ifname,
        wan_implementation: "wireguard-go (userspace, TUN) configured with wg".into(),
        listen_port: WG_PORT,
        mtu: WG_MTU,
        wireguard_go_pid: pid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_names_fit_and_differ() {
        let a = wan_ifname("rb19c-a");
        let b = wan_ifname("rb19c-b");
        assert_ne!(a, b);
        assert!(a.len() <= 15, "{a}");
        assert!(a.starts_with("rbwg"));
        assert_eq!(a, wan_ifname("rb19c-a"));
    }
}
