//! The learned hosts, with caps per port and per switch and the time each was last
//! heard, so that a MAC flood learns at most the caps and idle hosts can age out. Each
//! host also keeps the last few IP addresses it announced (ARP, neighbour discovery),
//! for operators to read: they are the host's own claim, and nothing forwards by them.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Instant;

use slice_core::{MacAddress, PortId};

/// How many hosts a port and a switch may hold.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HostLimits {
    pub per_port: usize,
    pub per_switch: usize,
}

/// What learning a host did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Learned {
    New,
    /// Already known here; its clock restarted.
    Known,
    /// Known at another port before.
    Moved(PortId),
    /// Not learned: its port or its switch is full.
    Refused,
}

/// How many announced addresses a host keeps: a host with an IPv4 address, a link-local
/// and a global IPv6 address or two fits, and one that announces address after address
/// holds no more than this.
pub(crate) const MAX_ADDRESSES_PER_HOST: usize = 4;

#[derive(Debug, Clone)]
struct Entry {
    port: PortId,
    last_heard: Instant,
    /// Most recently announced first, each once, at most [`MAX_ADDRESSES_PER_HOST`].
    addresses: Vec<IpAddr>,
}

#[derive(Debug, Default)]
pub(crate) struct HostTable {
    by_mac: HashMap<MacAddress, Entry>,
    per_port: HashMap<PortId, usize>,
    per_switch: HashMap<u64, usize>,
}

impl HostTable {
    pub(crate) fn get(&self, mac: &MacAddress) -> Option<PortId> {
        self.by_mac.get(mac).map(|entry| entry.port)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (MacAddress, PortId)> + '_ {
        self.by_mac.iter().map(|(mac, entry)| (*mac, entry.port))
    }

    /// The addresses `mac` announced, most recent first (none for a host not learned).
    pub(crate) fn addresses(&self, mac: &MacAddress) -> &[IpAddr] {
        self.by_mac
            .get(mac)
            .map_or(&[], |entry| entry.addresses.as_slice())
    }

    /// Notes that the learned host `mac` announced `address`; the oldest address goes when
    /// it holds [`MAX_ADDRESSES_PER_HOST`]. A MAC not in the table keeps nothing, so the
    /// caps on hosts bound the addresses too.
    pub(crate) fn announced(&mut self, mac: &MacAddress, address: IpAddr) {
        let Some(entry) = self.by_mac.get_mut(mac) else {
            return;
        };
        entry.addresses.retain(|known| *known != address);
        entry.addresses.insert(0, address);
        entry.addresses.truncate(MAX_ADDRESSES_PER_HOST);
    }

    /// Learns `mac` at `port`, unless the port or switch is full; `exempt` hosts (those
    /// an operator bound in a slice) are learned regardless of the caps.
    pub(crate) fn learn(
        &mut self,
        mac: MacAddress,
        port: PortId,
        now: Instant,
        exempt: bool,
        limits: HostLimits,
    ) -> Learned {
        let old = self.by_mac.get(&mac).map(|entry| entry.port);
        if old == Some(port) {
            if let Some(entry) = self.by_mac.get_mut(&mac) {
                entry.last_heard = now;
            }
            return Learned::Known;
        }
        let full = self.per_port.get(&port).copied().unwrap_or(0) >= limits.per_port
            || self.per_switch.get(&port.dpid).copied().unwrap_or(0) >= limits.per_switch;
        if full && !exempt {
            return Learned::Refused;
        }
        // A host that moved keeps the addresses it announced: they belong to the host,
        // not to its port.
        let addresses = if old.is_some() {
            self.remove_entry(&mac)
                .map(|entry| entry.addresses)
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        self.by_mac.insert(
            mac,
            Entry {
                port,
                last_heard: now,
                addresses,
            },
        );
        *self.per_port.entry(port).or_default() += 1;
        *self.per_switch.entry(port.dpid).or_default() += 1;
        match old {
            Some(old) => Learned::Moved(old),
            None => Learned::New,
        }
    }

    pub(crate) fn remove(&mut self, mac: &MacAddress) -> Option<PortId> {
        self.remove_entry(mac).map(|entry| entry.port)
    }

    fn remove_entry(&mut self, mac: &MacAddress) -> Option<Entry> {
        let entry = self.by_mac.remove(mac)?;
        decrement(&mut self.per_port, entry.port);
        decrement(&mut self.per_switch, entry.port.dpid);
        Some(entry)
    }

    /// The hosts at ports for which `at` holds.
    pub(crate) fn at(&self, at: impl Fn(PortId) -> bool) -> Vec<MacAddress> {
        self.by_mac
            .iter()
            .filter(|(_, entry)| at(entry.port))
            .map(|(mac, _)| *mac)
            .collect()
    }

    /// Forgets the hosts at ports for which `doomed` holds.
    pub(crate) fn remove_at(&mut self, doomed: impl Fn(PortId) -> bool) {
        for mac in self.at(doomed) {
            self.remove(&mac);
        }
    }

    /// The hosts last heard before `oldest`.
    pub(crate) fn idle_since(&self, oldest: Instant) -> Vec<(MacAddress, PortId)> {
        self.by_mac
            .iter()
            .filter(|(_, entry)| entry.last_heard < oldest)
            .map(|(mac, entry)| (*mac, entry.port))
            .collect()
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.by_mac.len()
    }
}

fn decrement<K: std::hash::Hash + Eq>(counts: &mut HashMap<K, usize>, key: K) {
    if let Some(count) = counts.get_mut(&key) {
        *count -= 1;
        if *count == 0 {
            counts.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const LIMITS: HostLimits = HostLimits {
        per_port: 2,
        per_switch: 3,
    };

    fn mac(last: u8) -> MacAddress {
        MacAddress::new([0, 0, 0, 0, 0, last])
    }

    #[test]
    fn a_port_and_a_switch_learn_up_to_their_caps_but_bound_hosts_always() {
        let now = Instant::now();
        let mut table = HostTable::default();
        let (p1, p2) = (PortId::new(1, 1), PortId::new(1, 2));
        assert_eq!(table.learn(mac(1), p1, now, false, LIMITS), Learned::New);
        assert_eq!(table.learn(mac(2), p1, now, false, LIMITS), Learned::New);
        assert_eq!(
            table.learn(mac(3), p1, now, false, LIMITS),
            Learned::Refused
        );
        assert_eq!(table.learn(mac(3), p2, now, false, LIMITS), Learned::New);
        assert_eq!(
            table.learn(mac(4), p2, now, false, LIMITS),
            Learned::Refused
        );
        assert_eq!(table.learn(mac(4), p2, now, true, LIMITS), Learned::New);
        assert_eq!(table.learn(mac(1), p1, now, false, LIMITS), Learned::Known);
        // Another switch has room of its own.
        let other = PortId::new(2, 1);
        assert_eq!(table.learn(mac(5), other, now, false, LIMITS), Learned::New);
        // Leaving frees room.
        table.remove(&mac(2));
        assert_eq!(
            table.learn(mac(6), p1, now, false, LIMITS),
            Learned::Refused
        );
        table.remove(&mac(4));
        assert_eq!(table.learn(mac(6), p1, now, false, LIMITS), Learned::New);
        assert_eq!(table.len(), 4);
    }

    #[test]
    fn a_move_is_reported_and_idle_hosts_are_found() {
        let start = Instant::now();
        let mut table = HostTable::default();
        let (p1, p2) = (PortId::new(1, 1), PortId::new(1, 2));
        table.learn(mac(1), p1, start, false, LIMITS);
        table.learn(mac(2), p1, start, false, LIMITS);
        let later = start + Duration::from_secs(10);
        assert_eq!(
            table.learn(mac(1), p2, later, false, LIMITS),
            Learned::Moved(p1)
        );
        assert_eq!(
            table.idle_since(start + Duration::from_secs(5)),
            vec![(mac(2), p1)]
        );
    }

    #[test]
    fn a_host_keeps_its_last_announced_addresses_across_a_move() {
        let now = Instant::now();
        let mut table = HostTable::default();
        let (p1, p2) = (PortId::new(1, 1), PortId::new(1, 2));
        let ip = |last: u8| IpAddr::from([192, 0, 2, last]);
        // Nothing is kept for a host not learned.
        table.announced(&mac(1), ip(1));
        assert!(table.addresses(&mac(1)).is_empty());
        table.learn(mac(1), p1, now, false, LIMITS);
        for last in 1..=6 {
            table.announced(&mac(1), ip(last));
        }
        assert_eq!(table.addresses(&mac(1)), [ip(6), ip(5), ip(4), ip(3)]);
        // Announced again, an address moves to the front rather than repeating.
        table.announced(&mac(1), ip(4));
        assert_eq!(table.addresses(&mac(1)), [ip(4), ip(6), ip(5), ip(3)]);
        assert_eq!(
            table.learn(mac(1), p2, now, false, LIMITS),
            Learned::Moved(p1)
        );
        assert_eq!(table.addresses(&mac(1)), [ip(4), ip(6), ip(5), ip(3)]);
        table.remove(&mac(1));
        table.learn(mac(1), p1, now, false, LIMITS);
        assert!(
            table.addresses(&mac(1)).is_empty(),
            "forgotten with the host"
        );
    }
}
