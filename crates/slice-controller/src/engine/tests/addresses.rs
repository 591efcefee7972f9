//! The IP addresses hosts announce (ARP, neighbour discovery): learned for display, at
//! most a few per host, and never used to forward.

use super::*;
use std::net::IpAddr;

/// An ARP request from host `src` (last MAC octet) announcing `ip`.
fn arp_from(src: u8, ip: [u8; 4]) -> Frame {
    let mut data = vec![0xff; 6];
    data.extend_from_slice(&mac(src).octets());
    data.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0x00, 6, 4, 0, 1]);
    data.extend_from_slice(&mac(src).octets());
    data.extend_from_slice(&ip);
    data.extend_from_slice(&[0; 6]);
    data.extend_from_slice(&[192, 0, 2, 254]);
    Frame {
        dst: BROADCAST,
        src: mac(src),
        probe: None,
        data: Bytes::from(data),
    }
}

/// A neighbour solicitation from host `src` with IPv6 source `ip`.
fn solicitation_from(src: u8, ip: &str) -> Frame {
    let dst = MacAddress::new([0x33, 0x33, 0xff, 0, 0, 1]);
    let mut data = dst.octets().to_vec();
    data.extend_from_slice(&mac(src).octets());
    data.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0, 0, 24, 58, 255]);
    data.extend_from_slice(&ip.parse::<std::net::Ipv6Addr>().unwrap().octets());
    data.extend_from_slice(&[0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0, 0, 1]);
    data.extend_from_slice(&[135, 0, 0, 0, 0, 0, 0, 0]);
    data.extend_from_slice(&[0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    Frame {
        dst,
        src: mac(src),
        probe: None,
        data: Bytes::from(data),
    }
}

fn addresses_of(engine: &Engine, last: u8) -> Vec<String> {
    engine
        .hosts()
        .into_iter()
        .find(|host| host.mac == mac(last))
        .map(|host| host.ip_addresses.iter().map(IpAddr::to_string).collect())
        .unwrap_or_default()
}

#[test]
fn hosts_show_the_addresses_they_announce_the_last_four_first() {
    let mut engine = line(config(), Membership::default());
    let now = Instant::now();
    engine.packet_in(1, 1, arp_from(1, [192, 0, 2, 1]), now);
    engine.packet_in(1, 1, solicitation_from(1, "fe80::1"), now);
    assert_eq!(addresses_of(&engine, 1), ["fe80::1", "192.0.2.1"]);
    for last in 2..=5 {
        engine.packet_in(1, 1, arp_from(1, [192, 0, 2, last]), now);
    }
    assert_eq!(
        addresses_of(&engine, 1),
        ["192.0.2.5", "192.0.2.4", "192.0.2.3", "192.0.2.2"]
    );
    // Plain traffic teaches the host but no address.
    send(&mut engine, p(2, 1), 2, BROADCAST);
    assert!(addresses_of(&engine, 2).is_empty());
}

#[test]
fn an_announced_address_changes_no_forwarding() {
    let index = membership(&[("blue", &[(1, 1, 1), (2, 1, 2), (3, 1, 3)])]);
    let mut engine = line(config(), index);
    let now = Instant::now();
    engine.packet_in(1, 1, arp_from(1, [192, 0, 2, 1]), now);
    engine.take_commands();
    // Host 3 claims host 1's address: both show it, and a frame to host 1's MAC still
    // goes to host 1's port.
    engine.packet_in(3, 1, arp_from(3, [192, 0, 2, 1]), now);
    engine.take_commands();
    assert_eq!(addresses_of(&engine, 1), ["192.0.2.1"]);
    assert_eq!(addresses_of(&engine, 3), ["192.0.2.1"]);
    let commands = send(&mut engine, p(2, 1), 2, mac(1));
    assert_eq!(packet_outs(&commands), [(1, 1)]);
}

#[test]
fn a_refused_host_keeps_no_address() {
    let config = EngineConfig {
        max_hosts_per_port: 1,
        ..config()
    };
    let mut engine = line(config, Membership::default());
    let now = Instant::now();
    engine.packet_in(1, 1, arp_from(1, [192, 0, 2, 1]), now);
    engine.packet_in(1, 1, arp_from(9, [192, 0, 2, 9]), now);
    assert_eq!(engine.hosts().len(), 1);
    assert!(addresses_of(&engine, 9).is_empty());
}
