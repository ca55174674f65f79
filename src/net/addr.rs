//! Peer addresses as people and peers see them: an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`,
//! what a dual-stack socket reports for an IPv4 peer) is the IPv4 address.

use std::net::IpAddr;

/// The address with IPv4-mapped IPv6 turned into plain IPv4.
pub fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// An IP for display: IPv4-mapped IPv6 (`::ffff:127.0.0.1`) shown as plain IPv4.
pub fn display_ip(ip: IpAddr) -> String {
    canonical_ip(ip).to_string()
}

/// Compares two addresses for "same peer", treating v4-mapped IPv6 as IPv4.
pub fn same_ip(a: IpAddr, b: IpAddr) -> bool {
    canonical_ip(a) == canonical_ip(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_ip_treats_mapped_as_v4() {
        let v4: IpAddr = "127.0.0.1".parse().unwrap();
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
        assert!(same_ip(v4, mapped));
        assert!(!same_ip(v4, "127.0.0.2".parse().unwrap()));
        assert_eq!(display_ip(mapped), "127.0.0.1");
        assert_eq!(display_ip("::1".parse().unwrap()), "::1");
    }
}
