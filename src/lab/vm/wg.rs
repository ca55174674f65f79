//! WireGuard inside the VM router without `wg` or `ip`: the device is made over rtnetlink
//! (`RTM_NEWLINK`, kind `wireguard`) and configured over generic netlink (family `wireguard`,
//! resolved with `CTRL_CMD_GETFAMILY`; `WG_CMD_SET_DEVICE` with the private key, listen port
//! and one peer). The attribute numbers are the kernel's uapi `linux/wireguard.h` and
//! `linux/genetlink.h`; docs/vm-router.md lists them. Keys are made on the host (`wg genkey`),
//! so the router needs no Curve25519 code of ours.

use crate::net::netlink::{Msg, NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REQUEST, Netlink};
use std::io;
use std::net::{Ipv4Addr, SocketAddrV4};

const RTM_NEWLINK: u16 = 16;
const IFLA_IFNAME: u16 = 3;
const IFLA_LINKINFO: u16 = 18;
const IFLA_INFO_KIND: u16 = 1;

/// `linux/wireguard.h`.
pub const WG_GENL_NAME: &str = "wireguard";
const WG_GENL_VERSION: u8 = 1;
const WG_CMD_SET_DEVICE: u8 = 1;
const WGDEVICE_A_IFNAME: u16 = 2;
const WGDEVICE_A_PRIVATE_KEY: u16 = 3;
const WGDEVICE_A_FLAGS: u16 = 5;
const WGDEVICE_A_LISTEN_PORT: u16 = 6;
const WGDEVICE_A_PEERS: u16 = 8;
const WGDEVICE_F_REPLACE_PEERS: u32 = 1;
const WGPEER_A_PUBLIC_KEY: u16 = 1;
const WGPEER_A_FLAGS: u16 = 3;
const WGPEER_A_ENDPOINT: u16 = 4;
const WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL: u16 = 5;
const WGPEER_A_ALLOWEDIPS: u16 = 9;
const WGPEER_F_REPLACE_ALLOWEDIPS: u32 = 2;
const WGALLOWEDIP_A_FAMILY: u16 = 1;
const WGALLOWEDIP_A_IPADDR: u16 = 2;
const WGALLOWEDIP_A_CIDR_MASK: u16 = 3;
const AF_INET: u16 = 2;

/// One WireGuard device with one peer.
#[derive(Debug, Clone, PartialEq)]
pub struct WgDevice {
    pub ifname: String,
    pub private_key: [u8; 32],
    pub listen_port: u16,
    pub peer_public_key: [u8; 32],
    pub peer_endpoint: SocketAddrV4,
    /// (network, prefix length) the peer may send from and is routed to.
    pub allowed_ips: Vec<(Ipv4Addr, u8)>,
    /// Seconds; 0 = off.
    pub keepalive_s: u16,
}

/// A 32-byte WireGuard key from its base64 text (`wg genkey` / `wg pubkey`).
pub fn key_from_base64(text: &str) -> Result<[u8; 32], String> {
    use base64ct::Encoding;
    let v = base64ct::Base64::decode_vec(text.trim())
        .map_err(|e| format!("not a base64 WireGuard key ({e})"))?;
    v.try_into()
        .map_err(|v: Vec<u8>| format!("a WireGuard key is 32 bytes, this one {}", v.len()))
}

/// `struct sockaddr_in` as the kernel reads it: family (host order), port and address
/// (network order), 8 bytes of zero.
fn sockaddr_in(a: SocketAddrV4) -> [u8; 16] {
    let mut s = [0u8; 16];
    s[0..2].copy_from_slice(&AF_INET.to_ne_bytes());
    s[2..4].copy_from_slice(&a.port().to_be_bytes());
    s[4..8].copy_from_slice(&a.ip().octets());
    s
}

/// `WG_CMD_SET_DEVICE` for `d`, replacing its peers and their allowed IPs.
pub fn set_device_msg(family: u16, d: &WgDevice) -> Msg {
    let mut m = Msg::genl(
        family,
        NLM_F_REQUEST | NLM_F_ACK,
        WG_CMD_SET_DEVICE,
        WG_GENL_VERSION,
    );
    m.str(WGDEVICE_A_IFNAME, &d.ifname)
        .attr(WGDEVICE_A_PRIVATE_KEY, &d.private_key)
        .attr(WGDEVICE_A_LISTEN_PORT, &d.listen_port.to_ne_bytes())
        .u32_ne(WGDEVICE_A_FLAGS, WGDEVICE_F_REPLACE_PEERS)
        .nest(WGDEVICE_A_PEERS)
        .nest(0)
        .attr(WGPEER_A_PUBLIC_KEY, &d.peer_public_key)
        .u32_ne(WGPEER_A_FLAGS, WGPEER_F_REPLACE_ALLOWEDIPS)
        .attr(WGPEER_A_ENDPOINT, &sockaddr_in(d.peer_endpoint))
        .attr(
            WGPEER_A_PERSISTENT_KEEPALIVE_INTERVAL,
            &d.keepalive_s.to_ne_bytes(),
        )
        .nest(WGPEER_A_ALLOWEDIPS);
    for (i, (net, len)) in d.allowed_ips.iter().enumerate() {
        m.nest(i as u16)
            .attr(WGALLOWEDIP_A_FAMILY, &AF_INET.to_ne_bytes())
            .attr(WGALLOWEDIP_A_IPADDR, &net.octets())
            .attr(WGALLOWEDIP_A_CIDR_MASK, &[*len])
            .end();
    }
    m.end().end().end();
    m
}

/// `ip link add NAME type wireguard`.
pub fn newlink_msg(ifname: &str) -> Msg {
    let mut m = Msg::new(
        RTM_NEWLINK,
        NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
        &[0u8; 16],
    );
    m.str(IFLA_IFNAME, ifname)
        .nest(IFLA_LINKINFO)
        .str(IFLA_INFO_KIND, "wireguard")
        .end();
    m
}

/// Makes and configures `d` (the wireguard module must be loaded), then sets it up with
/// `addr/prefix`.
pub fn configure(d: &WgDevice, addr: Ipv4Addr, prefix: u8) -> io::Result<()> {
    let mut rt = Netlink::route()?;
    rt.request(
        newlink_msg(&d.ifname),
        &format!(
            "create WireGuard device {} (is the wireguard module loaded?)",
            d.ifname
        ),
    )?;
    let mut g = Netlink::generic()?;
    let family = g
        .resolve_family(WG_GENL_NAME)
        .map_err(|e| io::Error::new(e.kind(), format!("{e} (is the wireguard module loaded?)")))?;
    g.request(
        set_device_msg(family, d),
        &format!("configure WireGuard device {}", d.ifname),
    )?;
    super::nlconf::addr_add(&mut rt, &d.ifname, addr, prefix)?;
    super::nlconf::link_up(&mut rt, &d.ifname)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev() -> WgDevice {
        WgDevice {
            ifname: "wg0".into(),
            private_key: [0x11; 32],
            listen_port: 51820,
            peer_public_key: [0x22; 32],
            peer_endpoint: "10.201.2.2:51820".parse().unwrap(),
            allowed_ips: vec![("10.202.0.0".parse().unwrap(), 24)],
            keepalive_s: 0,
        }
    }

    fn u16ne(v: u16) -> [u8; 2] {
        v.to_ne_bytes()
    }

    /// The whole WG_CMD_SET_DEVICE message, byte by byte (little-endian host order is what
    /// both this host and the armv7 VM use; the test builds the expected bytes the same way).
    #[test]
    fn set_device_bytes() {
        let b = set_device_msg(0x1234, &dev()).finish(7);
        let mut want: Vec<u8> = Vec::new();
        let attr = |want: &mut Vec<u8>, ty: u16, data: &[u8]| {
            want.extend_from_slice(&u16ne(4 + data.len() as u16));
            want.extend_from_slice(&u16ne(ty));
            want.extend_from_slice(data);
            while want.len() % 4 != 0 {
                want.push(0);
            }
        };
        // nlmsghdr: len (patched below), type = family, flags REQUEST|ACK, seq 7, pid 0.
        want.extend_from_slice(&[0; 4]);
        want.extend_from_slice(&u16ne(0x1234));
        want.extend_from_slice(&u16ne(5));
        want.extend_from_slice(&7u32.to_ne_bytes());
        want.extend_from_slice(&[0; 4]);
        want.extend_from_slice(&[1, 1, 0, 0]); // genlmsghdr: SET_DEVICE, version 1
        attr(&mut want, 2, b"wg0\0");
        attr(&mut want, 3, &[0x11; 32]);
        attr(&mut want, 6, &u16ne(51820));
        attr(&mut want, 5, &1u32.to_ne_bytes());
        // PEERS { 0 { PUBLIC_KEY, FLAGS, ENDPOINT, KEEPALIVE, ALLOWEDIPS { 0 { .. } } } }
        let mut aip = Vec::new();
        attr(&mut aip, 1, &u16ne(2));
        attr(&mut aip, 2, &[10, 202, 0, 0]);
        attr(&mut aip, 3, &[24]);
        let mut aips = Vec::new();
        attr(&mut aips, 0x8000, &aip);
        let mut peer = Vec::new();
        attr(&mut peer, 1, &[0x22; 32]);
        attr(&mut peer, 3, &2u32.to_ne_bytes());
        let mut sin = vec![0u8; 16];
        sin[0..2].copy_from_slice(&u16ne(2));
        sin[2..4].copy_from_slice(&[0xca, 0x6c]); // 51820 big-endian
        sin[4..8].copy_from_slice(&[10, 201, 2, 2]);
        attr(&mut peer, 4, &sin);
        attr(&mut peer, 5, &u16ne(0));
        attr(&mut peer, 0x8000 | 9, &aips);
        let mut peers = Vec::new();
        attr(&mut peers, 0x8000, &peer);
        attr(&mut want, 0x8000 | 8, &peers);
        let len = want.len() as u32;
        want[0..4].copy_from_slice(&len.to_ne_bytes());
        assert_eq!(b, want);
        assert_eq!(b.len(), 192);
    }

    #[test]
    fn newlink_bytes() {
        let b = newlink_msg("wg0").finish(1);
        // ifinfomsg is 16 zero bytes; IFNAME "wg0"; LINKINFO (nested) { KIND "wireguard" }.
        assert_eq!(&b[4..6], &u16ne(16));
        assert_eq!(&b[6..8], &u16ne(0x605));
        assert_eq!(&b[16..32], &[0u8; 16]);
        assert_eq!(&b[32..40], &[8, 0, 3, 0, b'w', b'g', b'0', 0]);
        assert_eq!(&b[40..44], &[4 + 16, 0, 18, 0x80]);
        assert_eq!(&b[44..48], &[14, 0, 1, 0]);
        assert_eq!(&b[48..58], b"wireguard\0");
        assert_eq!(b.len(), 60);
    }

    #[test]
    fn keys_from_base64() {
        let k = key_from_base64("yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=\n").unwrap();
        assert_eq!(k[0], 0xc8);
        assert!(
            key_from_base64("c2hvcnQ=")
                .unwrap_err()
                .contains("32 bytes")
        );
        assert!(key_from_base64("!!").unwrap_err().contains("base64"));
    }
}
