//! IP networks (CIDR) for trusted proxies and `sourceIPAddress` identities.

use std::net::IpAddr;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpNet {
    addr: IpAddr,
    prefix: u8,
}

impl IpNet {
    /// `10.0.0.0/8`, `::1/128`, or a bare address (a /32 or /128).
    pub fn parse(s: &str) -> Option<IpNet> {
        let s = s.trim();
        let (a, p) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = a.parse().ok()?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match p {
            Some(p) => p.parse::<u8>().ok().filter(|p| *p <= max)?,
            None => max,
        };
        // An IPv4-mapped network (`::ffff:10.0.0.0/104`) is the IPv4 network it maps: addresses
        // are compared in their IPv4 form (`canonical`).
        if let IpAddr::V6(v6) = addr
            && prefix >= 96
            && let Some(v4) = v6.to_ipv4_mapped()
        {
            return Some(IpNet {
                addr: IpAddr::V4(v4),
                prefix: prefix - 96,
            });
        }
        Some(IpNet { addr, prefix })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match (self.addr, canonical(ip)) {
            // An IPv6 network wider than the mapped range (`::/0`) holds IPv4 addresses too.
            (IpAddr::V6(_), IpAddr::V4(v4)) => IpAddr::V6(v4.to_ipv6_mapped()),
            (_, ip) => ip,
        };
        match (self.addr, ip) {
            (IpAddr::V4(n), IpAddr::V4(i)) => {
                let mask = if self.prefix == 0 {
                    0
                } else {
                    u32::MAX << (32 - self.prefix)
                };
                (u32::from(n) & mask) == (u32::from(i) & mask)
            }
            (IpAddr::V6(n), IpAddr::V6(i)) => {
                let mask = if self.prefix == 0 {
                    0
                } else {
                    u128::MAX << (128 - self.prefix)
                };
                (u128::from(n) & mask) == (u128::from(i) & mask)
            }
            _ => false,
        }
    }
}

/// IPv4-mapped IPv6 addresses (`::ffff:1.2.3.4`) compare as IPv4.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidr_membership() {
        let n = IpNet::parse("10.1.0.0/16").unwrap();
        assert!(n.contains("10.1.200.3".parse().unwrap()));
        assert!(!n.contains("10.2.0.1".parse().unwrap()));
        assert!(
            IpNet::parse("127.0.0.1")
                .unwrap()
                .contains("::ffff:127.0.0.1".parse().unwrap())
        );
        assert!(IpNet::parse("fd00::/8").unwrap().contains("fd12::1".parse().unwrap()));
        assert!(IpNet::parse("10.0.0.0/33").is_none());
    }

    #[test]
    fn ipv4_mapped_networks_match_ipv4_peers() {
        let n = IpNet::parse("::ffff:10.0.0.0/104").unwrap();
        assert!(n.contains("10.9.8.7".parse().unwrap()));
        assert!(n.contains("::ffff:10.9.8.7".parse().unwrap()));
        assert!(!n.contains("11.0.0.1".parse().unwrap()));
        assert!(
            IpNet::parse("::ffff:127.0.0.1")
                .unwrap()
                .contains("127.0.0.1".parse().unwrap())
        );
        assert!(IpNet::parse("::/0").unwrap().contains("192.0.2.1".parse().unwrap()));
        assert!(!IpNet::parse("fd00::/8").unwrap().contains("10.0.0.1".parse().unwrap()));
        assert!(!IpNet::parse("10.0.0.0/8").unwrap().contains("fd00::1".parse().unwrap()));
        assert!(IpNet::parse("banana").is_none());
    }
}
