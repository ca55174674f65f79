//! Segmentation offloads of the lab's veths through the SIOCETHTOOL ioctl (no `ethtool` binary
//! needed): GSO/TSO on or off, GRO always off, as in docs/protocols/netns-lab.md.
//!
//! Uses the legacy per-feature commands (ETHTOOL_[GS]GSO/TSO/GRO), which every kernel keeps.

use super::error::{LabError, Result};
use std::os::fd::{AsRawFd, OwnedFd};

const ETHTOOL_GTSO: u32 = 0x1e;
const ETHTOOL_STSO: u32 = 0x1f;
const ETHTOOL_GGSO: u32 = 0x23;
const ETHTOOL_SGSO: u32 = 0x24;
const ETHTOOL_GGRO: u32 = 0x2b;
const ETHTOOL_SGRO: u32 = 0x2c;

/// `struct ethtool_value` from linux/ethtool.h.
#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

/// The offload switches of one device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offloads {
    pub gso: bool,
    pub tso: bool,
    pub gro: bool,
}

impl std::fmt::Display for Offloads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let o = |b: bool| if b { "on" } else { "off" };
        write!(
            f,
            "gso={} tso={} gro={}",
            o(self.gso),
            o(self.tso),
            o(self.gro)
        )
    }
}

fn control_socket() -> Result<OwnedFd> {
    nix::sys::socket::socket(
        nix::sys::socket::AddressFamily::Inet,
        nix::sys::socket::SockType::Datagram,
        nix::sys::socket::SockFlag::SOCK_CLOEXEC,
        None,
    )
    .map_err(|e| LabError::Sys(format!("cannot open a control socket for SIOCETHTOOL: {e}")))
}

fn ethtool(fd: &OwnedFd, dev: &str, cmd: u32, data: u32) -> Result<u32> {
    if dev.is_empty() || dev.len() >= libc::IFNAMSIZ {
        return Err(LabError::Input(format!("bad interface name {dev:?}")));
    }
    let mut val = EthtoolValue { cmd, data };
    // SAFETY: ifreq is plain old data; zeroed is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in ifr.ifr_name.iter_mut().zip(dev.bytes()) {
        *dst = src as libc::c_char;
    }
    ifr.ifr_ifru.ifru_data = (&mut val as *mut EthtoolValue).cast();
    // SAFETY: SIOCETHTOOL reads/writes the ethtool_value that ifru_data points to, which lives
    // until the call returns.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCETHTOOL as _, &mut ifr) };
    if rc < 0 {
        let e = std::io::Error::last_os_error();
        return Err(LabError::Sys(format!(
            "SIOCETHTOOL cmd {cmd:#x} on {dev} failed: {e}"
        )));
    }
    Ok(val.data)
}

/// Sets GSO and TSO to `on` and GRO off on `dev` in the calling thread's network namespace.
pub fn set(dev: &str, on: bool) -> Result<()> {
    let fd = control_socket()?;
    let v = u32::from(on);
    ethtool(&fd, dev, ETHTOOL_SGRO, 0)?;
    ethtool(&fd, dev, ETHTOOL_STSO, v)?;
    ethtool(&fd, dev, ETHTOOL_SGSO, v)?;
    Ok(())
}

/// Sets GRO alone on `dev` in the calling thread's network namespace (on a veth, GRO also gives
/// the device a NAPI instance, which `threaded` can then move to a kernel thread).
pub fn set_gro(dev: &str, on: bool) -> Result<()> {
    let fd = control_socket()?;
    ethtool(&fd, dev, ETHTOOL_SGRO, u32::from(on))?;
    Ok(())
}

/// Reads GSO/TSO/GRO of `dev` in the calling thread's network namespace.
pub fn get(dev: &str) -> Result<Offloads> {
    let fd = control_socket()?;
    Ok(Offloads {
        gso: ethtool(&fd, dev, ETHTOOL_GGSO, 0)? != 0,
        tso: ethtool(&fd, dev, ETHTOOL_GTSO, 0)? != 0,
        gro: ethtool(&fd, dev, ETHTOOL_GGRO, 0)? != 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_offloads_readable_and_bad_names_rejected() {
        // Reading needs no privilege; every Linux host has `lo`.
        let o = get("lo").unwrap();
        assert!(o.to_string().starts_with("gso="));
        assert!(get("").is_err());
        assert!(get("a-name-longer-than-15").is_err());
        assert!(get("rb-nodev9").is_err());
    }
}
