//! What happens with time: the probe rounds, links and hosts expiring (each link by its
//! own age limit), flapping links held and let back, drops and adopted flows checked.

use super::*;

impl Engine {
    /// Sends LLDP out of every live port and forgets links that LLDP no longer confirms.
    pub fn tick(&mut self, now: Instant) {
        self.handle_timeout(now);
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
        let round = self.topology.probe_round();
        let switches: Vec<u64> = self.topology.dpids().collect();
        for dpid in switches {
            if self.may_write(dpid) {
                self.send(dpid, Command::ProbeRoundSent { round });
                self.probe_rounds.sent(dpid, round, now);
            }
        }
        // A probe counts as missing only once both switches have worked past it: a switch
        // working through the controller's own writes, or through earlier rounds, answers
        // its probes late and all at once afterwards, and its links do not go meanwhile,
        // or each expiry's rewrite would keep it busy (the metastable collapse of issue 36).
        let (health, rounds) = (&self.health, &self.probe_rounds);
        let expired = self.topology.expire_links(
            now,
            self.config.link_missed_probes,
            |src, own| health.expiry_limit(src, own),
            |link, round| rounds.worked_past(link.src.dpid, link.dst.dpid, round, now),
        );
        for (link, confirmed) in &expired {
            log::info!(
                "link expired: {} -> {} (unconfirmed for {} ms)",
                link.src,
                link.dst,
                now.saturating_duration_since(*confirmed).as_millis()
            );
        }
        let expired: Vec<Link> = expired.into_iter().map(|(link, _)| link).collect();
        self.links_removed(&expired, now);
        self.links_flapped(&expired, link_health::EXPIRY_PENALTY, now);
        for link in self.health.reusable(now) {
            log::info!(
                "link {} -> {} no longer flapping: let back",
                link.src,
                link.dst
            );
            self.links_released(&[link], now);
        }
        self.guard.expire(now, self.link_return_grace());
        self.expire_drops(now);
        self.age_hosts(now);
        self.check_adopted(now);
        self.retry_full_tables(now);
        self.end_settling(now);
        self.pace_pipeline(now);
    }

    /// `dpid` answered the barrier after the probes of `round` ([`probe_rounds`]).
    pub fn probe_round_answered(&mut self, dpid: u64, round: u64) {
        let current = self.topology.probe_round();
        self.probe_rounds.answered(dpid, round, current);
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

    /// Checks a probe's proof, claiming to come from `from`, against that port's age
    /// limit, and takes its round trip as a sample: a genuine probe up to the ceiling old
    /// is evidence of how late the switches answer even when it is too old to count, so
    /// that the limit catches up with a switch that grew late instead of every probe of
    /// it going stale.
    pub(super) fn probe_verdict(
        &mut self,
        from: PortId,
        proof: &ProbeProof,
        now: Instant,
    ) -> Verdict {
        let key = &self.config.probe_key;
        // A probe in flight on a loaded machine may take a good part of a fast (100 ms)
        // interval; a second is still far too short to be of use to anyone replaying it,
        // and the host-port rule stops relays within it.
        let ceiling = self.health.ceiling().max(MIN_PROBE_AGE);
        let verdict = key.verify(from.dpid, from.port_no, proof, now, ceiling);
        if verdict != Verdict::Genuine {
            return verdict;
        }
        let age = key.age(proof, now);
        let limit = self.health.age_limit(from).max(MIN_PROBE_AGE);
        if self.topology.has_port(from) {
            self.health.sample(from, proof.nonce, age);
        }
        if age > limit {
            Verdict::Stale
        } else {
            Verdict::Genuine
        }
    }

    /// Links held for flapping that are let back, or whose other end went: their ends
    /// are in use again, with the grace of a link that went lately so that a probe
    /// brings the link back over host traffic seen there meanwhile.
    fn links_released(&mut self, links: &[Link], now: Instant) {
        for link in links {
            // An end of another link still held (the other direction) stays held.
            for end in [link.src, link.dst] {
                if !self.health.holds(end) {
                    self.topology.release(end);
                }
            }
            self.link_went(link, now);
            self.proactive.changed();
        }
    }

    /// `dpid` or its `port` went: the links held there are let go.
    pub(super) fn holds_gone(&mut self, dpid: u64, port: Option<u32>, now: Instant) {
        let released = match port {
            Some(port_no) => self.health.port_deleted(PortId::new(dpid, port_no)),
            None => self.health.switch_gone(dpid),
        };
        self.links_released(&released, now);
    }

    /// `links` went for a reason that counts as a flap (`penalty`): expired, or their
    /// port went down. One that flaps too often is held out until it has been steady a
    /// while.
    pub(super) fn links_flapped(&mut self, links: &[Link], penalty: f64, now: Instant) {
        for link in links {
            // A port deleted (or a switch gone) keeps no penalty: nothing of it is kept.
            if self.topology.has_port(link.src) && self.health.withdrawn(link, penalty, now) {
                // Each flap rewrites the tables of every switch on a path over it:
                // held out, it stops doing so until it has been steady a while.
                let held_for = self.health.held_for(link.src, now).unwrap_or_default();
                log::warn!(
                    "link {} -> {} flapping: held out of use for {} s unless it flaps again",
                    link.src,
                    link.dst,
                    held_for.as_secs()
                );
                self.metrics.links_held.inc();
                self.topology.hold(link.src);
                self.topology.hold(link.dst);
            }
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
