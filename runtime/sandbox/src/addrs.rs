//! Which addresses a tool may connect to by a name or `*`: only globally
//! reachable ones that are not this machine's. Refused are the IANA
//! special-purpose registries' entries that are not globally reachable
//! (loopback, private, shared, link-local, documentation, benchmarking,
//! reserved, ...), multicast, and every address of this machine's own
//! interfaces, read at each connection (a service listening on `0.0.0.0`
//! is reached through eth0's address as well as through loopback). An IPv6
//! address that carries an IPv4 one (mapped, IPv4-compatible, NAT64
//! `64:ff9b::/96`, 6to4 `2002::/16`) is judged by the IPv4 address it leads
//! to. An entry that names the address itself opens it (the caller checks).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is not connected to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Closed {
    /// One of this machine's interface addresses.
    Own,
    /// Not globally reachable (IANA special-purpose, multicast).
    NotGlobal,
}

impl Closed {
    /// How a note names it.
    pub(crate) fn words(self) -> &'static str {
        match self {
            Closed::Own => "an address of this machine",
            Closed::NotGlobal => "a loopback, private or other non-public address",
        }
    }
}

/// Why `ip` is closed to a grant by name or `*`, or `None` when it is a
/// public address of another machine. `own` are this machine's addresses.
pub(crate) fn closed(ip: IpAddr, own: &[IpAddr]) -> Option<Closed> {
    let carried = carried_v4(ip);
    // Loopback is named as such, not as this machine's interface `lo`.
    let is_own = |a: IpAddr| !a.is_loopback() && own.contains(&a);
    if is_own(ip) || carried.is_some_and(|v4| is_own(IpAddr::V4(v4))) {
        return Some(Closed::Own);
    }
    let global = match (ip, carried) {
        (_, Some(v4)) => global_v4(v4),
        (IpAddr::V4(v4), None) => global_v4(v4),
        (IpAddr::V6(v6), None) => global_v6(v6),
    };
    (!global).then_some(Closed::NotGlobal)
}

/// The addresses of this machine's interfaces, now; none when they cannot
/// be read (the special-purpose ranges still hold).
#[cfg(target_os = "linux")]
pub(crate) fn own_addresses() -> Vec<IpAddr> {
    let Ok(addrs) = nix::ifaddrs::getifaddrs() else {
        return Vec::new();
    };
    addrs
        .filter_map(|a| {
            let sa = a.address?;
            if let Some(v4) = sa.as_sockaddr_in() {
                Some(IpAddr::V4(v4.ip()))
            } else {
                sa.as_sockaddr_in6().map(|v6| IpAddr::V6(v6.ip()))
            }
        })
        .collect()
}

/// The addresses of this machine's interfaces (not read on this system).
#[cfg(not(target_os = "linux"))]
pub(crate) fn own_addresses() -> Vec<IpAddr> {
    Vec::new()
}

/// The IPv4 address an IPv6 one leads to, if it carries one.
fn carried_v4(ip: IpAddr) -> Option<Ipv4Addr> {
    let IpAddr::V6(v6) = ip else { return None };
    let s = v6.segments();
    let o = v6.octets();
    let at = |i: usize| Ipv4Addr::new(o[i], o[i + 1], o[i + 2], o[i + 3]);
    // IPv4-compatible (deprecated, still routed by some).
    let compatible = s[..6] == [0; 6] && !v6.is_loopback() && !v6.is_unspecified();
    if let Some(v4) = v6.to_ipv4_mapped() {
        Some(v4)
    } else if compatible || s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        Some(at(12))
    } else if s[0] == 0x2002 {
        Some(at(2))
    } else {
        None
    }
}

/// A range: network and prefix length.
type Range<A> = (A, u8);

/// IANA IPv4 special-purpose entries that are not globally reachable, and
/// multicast and broadcast (not unicast destinations).
const NOT_GLOBAL_V4: &[Range<[u8; 4]>] = &[
    ([0, 0, 0, 0], 8),       // "this network"
    ([10, 0, 0, 0], 8),      // private
    ([100, 64, 0, 0], 10),   // shared address space (CGN)
    ([127, 0, 0, 0], 8),     // loopback
    ([169, 254, 0, 0], 16),  // link-local (cloud metadata at .169.254)
    ([172, 16, 0, 0], 12),   // private
    ([192, 0, 0, 0], 24),    // IETF protocol assignments
    ([192, 0, 2, 0], 24),    // documentation (TEST-NET-1)
    ([192, 88, 99, 0], 24),  // 6to4 relay anycast (deprecated)
    ([192, 168, 0, 0], 16),  // private
    ([198, 18, 0, 0], 15),   // benchmarking
    ([198, 51, 100, 0], 24), // documentation (TEST-NET-2)
    ([203, 0, 113, 0], 24),  // documentation (TEST-NET-3)
    ([224, 0, 0, 0], 4),     // multicast
    ([240, 0, 0, 0], 4),     // reserved, and the limited broadcast
];

/// Entries inside those that the registry marks globally reachable.
const GLOBAL_V4: &[Range<[u8; 4]>] = &[
    ([192, 0, 0, 9], 32),  // port control protocol anycast
    ([192, 0, 0, 10], 32), // traversal using relays around NAT anycast
];

/// IANA IPv6 special-purpose entries that are not globally reachable, and
/// multicast and the deprecated site-local range. (IPv4-mapped, -compatible,
/// NAT64 and 6to4 addresses are judged by the IPv4 address they carry.)
const NOT_GLOBAL_V6: &[Range<[u16; 8]>] = &[
    ([0, 0, 0, 0, 0, 0, 0, 0], 128),         // unspecified
    ([0, 0, 0, 0, 0, 0, 0, 1], 128),         // loopback
    ([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48),  // NAT64 local use
    ([0x100, 0, 0, 0, 0, 0, 0, 0], 64),      // discard-only
    ([0x100, 0, 0, 1, 0, 0, 0, 0], 64),      // dummy prefix
    ([0x2001, 0, 0, 0, 0, 0, 0, 0], 23),     // IETF protocol assignments, Teredo
    ([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32), // documentation
    ([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20),     // documentation
    ([0x5f00, 0, 0, 0, 0, 0, 0, 0], 16),     // segment routing SIDs
    ([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7),      // unique local
    ([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10),     // link-local
    ([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10),     // site-local (deprecated)
    ([0xff00, 0, 0, 0, 0, 0, 0, 0], 8),      // multicast
];

/// Entries inside `2001::/23` that the registry marks globally reachable.
const GLOBAL_V6: &[Range<[u16; 8]>] = &[
    ([0x2001, 1, 0, 0, 0, 0, 0, 1], 128), // port control protocol anycast
    ([0x2001, 1, 0, 0, 0, 0, 0, 2], 128), // TURN anycast
    ([0x2001, 1, 0, 0, 0, 0, 0, 3], 128), // DNS-SD service registration
    ([0x2001, 3, 0, 0, 0, 0, 0, 0], 32),  // AMT
    ([0x2001, 4, 0x112, 0, 0, 0, 0, 0], 48), // AS112-v6
    ([0x2001, 0x20, 0, 0, 0, 0, 0, 0], 28), // ORCHIDv2
    ([0x2001, 0x30, 0, 0, 0, 0, 0, 0], 28), // drone remote ID
];

fn in_v4(ip: Ipv4Addr, ranges: &[Range<[u8; 4]>]) -> bool {
    let a = u32::from(ip);
    ranges.iter().any(|&(net, len)| {
        let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
        a & mask == u32::from(Ipv4Addr::from(net)) & mask
    })
}

fn in_v6(ip: Ipv6Addr, ranges: &[Range<[u16; 8]>]) -> bool {
    let a = u128::from(ip);
    ranges.iter().any(|&(net, len)| {
        let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
        a & mask == u128::from(Ipv6Addr::from(net)) & mask
    })
}

fn global_v4(ip: Ipv4Addr) -> bool {
    !in_v4(ip, NOT_GLOBAL_V4) || in_v4(ip, GLOBAL_V4)
}

fn global_v6(ip: Ipv6Addr) -> bool {
    !in_v6(ip, NOT_GLOBAL_V6) || in_v6(ip, GLOBAL_V6)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn closed_of(a: &str) -> Option<Closed> {
        closed(a.parse().unwrap(), &[])
    }

    #[test]
    fn addresses_that_are_not_globally_reachable_are_closed() {
        for a in [
            "127.0.0.1",
            "127.8.9.1",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "0.1.2.3",
            "100.64.0.1",
            "192.0.0.170",
            "192.0.2.2",
            "198.51.100.7",
            "203.0.113.9",
            "192.88.99.1",
            "198.18.0.1",
            "198.19.255.1",
            "224.0.0.251",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:192.0.2.2",
            "::10.0.0.5",
            "64:ff9b::a00:5",
            "64:ff9b::169.254.169.254",
            "64:ff9b:1::a00:5",
            "2002:a00:5::1",
            "2002:7f00:1::",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "2001:2::1",
            "2001:db8::1",
            "3fff::1",
            "5f00::1",
            "100::1",
            "100:0:0:1::1",
        ] {
            assert_eq!(closed_of(a), Some(Closed::NotGlobal), "{a}");
        }
        for a in [
            "8.8.8.8",
            "172.32.0.1",
            "1.1.1.1",
            "100.128.0.1",
            "198.20.0.1",
            "192.0.0.9",
            "192.0.3.1",
            "2606:4700::1111",
            "64:ff9b::808:808",
            "2002:808:808::1",
            "2001:db9::1",
            "2001:4:112::1",
            "2001:20::1",
            "2001:1::1",
        ] {
            assert_eq!(closed_of(a), None, "{a}");
        }
    }

    #[test]
    fn this_machines_own_addresses_are_closed_in_every_form() {
        let own: Vec<IpAddr> = vec![
            "8.8.4.4".parse().unwrap(),
            "2606:4700::6810".parse().unwrap(),
        ];
        for a in [
            "8.8.4.4",
            "::ffff:8.8.4.4",
            "64:ff9b::808:404",
            "2606:4700::6810",
        ] {
            assert_eq!(closed(a.parse().unwrap(), &own), Some(Closed::Own), "{a}");
        }
        assert_eq!(closed("8.8.8.8".parse().unwrap(), &own), None);
        let lo = ["127.0.0.1".parse().unwrap()];
        assert_eq!(closed(lo[0], &lo), Some(Closed::NotGlobal));
        // Read from the machine: loopback is always one of them.
        assert!(own_addresses().contains(&"127.0.0.1".parse().unwrap()));
    }
}
