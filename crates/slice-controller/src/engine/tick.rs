//! What happens with time: the probe rounds, links and hosts expiring, drops and
//! adopted flows checked.

use super::*;

impl Engine {
    /// Sends LLDP out of every live port and forgets links that LLDP no longer confirms.
    pub fn tick(&mut self, now: Instant) {
        self.topology.start_probe_round();
        let ports: Vec<PortId> = self
            .topology
            .dpids()
            .flat_map(|dpid| {
                self.topology
                    .live_ports(dpid)
                    .map(move |port_no| PortId::new(dpid, port_no))
            })
            .collect();
        for port in ports {
            self.probe(port, now);
        }
        if let Some(oldest) = now.checked_sub(self.config.link_max_age) {
            let expired = self
                .topology
                .expire_links(oldest, self.config.link_missed_probes);
            for link in &expired {
                log::info!("link expired: {} -> {}", link.src, link.dst);
            }
            self.links_removed(&expired, now);
        }
        self.guard.expire(now, self.link_return_grace());
        self.expire_drops(now);
        self.age_hosts(now);
        self.check_adopted(now);
        self.retry_full_tables(now);
        self.end_settling(now);
    }

    /// Forgets hosts idle for `host_idle`, except those bound in a slice and those on an
    /// installed path (whose traffic the switches forward without telling us).
    pub(super) fn age_hosts(&mut self, now: Instant) {
        let Some(oldest) = now.checked_sub(self.config.host_idle) else {
            return;
        };
        let idle = self.hosts.idle_since(oldest);
        if idle.is_empty() {
            return;
        }
        let routed: HashSet<MacAddress> = self
            .paths
            .values()
            .flat_map(|path| [path.src.mac, path.dst.mac])
            .chain(self.adopted.keys().flat_map(|(src, dst)| [*src, *dst]))
            .collect();
        for (mac, port) in idle {
            if routed.contains(&mac) || self.membership.is_member(&Host { port, mac }) {
                continue;
            }
            self.forget_host(mac);
            self.count_drop(port.dpid, DropCause::HostAgedOut, 1, now);
        }
    }

    pub(super) fn links_removed(&mut self, links: &[Link], now: Instant) {
        for link in links {
            self.proactive.changed();
            // Both ends look like edge ports now; the link may well come back.
            self.link_went(link, now);
            self.notices.push(Notice::link_down(link));
            self.delete_paths_where(|path| path.uses_link(link));
            self.delete_adopted_where(|_, flow| flow.uses_link(link));
        }
    }
}
