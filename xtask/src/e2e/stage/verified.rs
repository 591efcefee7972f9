//! The verifier's word beside the pings (issue 37's oracle, `oracle`): every ordered pair
//! of a scenario's hosts pinged, and what sliced proved from the switches' tables checked
//! against each answer.

use std::time::SystemTime;

use super::cluster::master;
use super::{Stage, PING_ATTEMPTS};
use crate::e2e::{net, oracle};

impl Stage<'_> {
    /// The lab's hosts as the oracle names them: `h3`, its MAC and its port.
    pub(crate) fn oracle_peers(&self, hosts: &[u8]) -> anyhow::Result<Vec<oracle::Peer>> {
        hosts
            .iter()
            .map(|&host| {
                Ok(oracle::Peer {
                    label: format!("h{host}"),
                    mac: net::mac(host),
                    port: self.port_of(host)?,
                })
            })
            .collect()
    }

    /// Pings every ordered pair of `hosts` (a pair still silent after a few tries once
    /// more with static ARP entries, so that unicast alone is tried, as a host that knows
    /// its peer's address would) and checks that the verification says the same of each
    /// pair. The pings observe; nothing here says which pairs ought to talk.
    pub(crate) fn pings_agree_with_verifier(&mut self, hosts: &[u8]) -> anyhow::Result<()> {
        let pairs: Vec<(u8, u8)> = hosts
            .iter()
            .flat_map(|&a| hosts.iter().filter(move |&&b| b != a).map(move |&b| (a, b)))
            .collect();
        let net = self.net()?;
        let mut answered = vec![false; pairs.len()];
        let mut pinged_at = SystemTime::now();
        for _ in 0..PING_ATTEMPTS {
            let silent: Vec<usize> = (0..pairs.len()).filter(|&i| !answered[i]).collect();
            if silent.is_empty() {
                break;
            }
            pinged_at = SystemTime::now();
            let asked: Vec<(u8, u8)> = silent.iter().map(|&i| pairs[i]).collect();
            for (i, ok) in silent.into_iter().zip(net.ping_all(&asked)?) {
                answered[i] |= ok;
            }
        }
        let silent: Vec<usize> = (0..pairs.len()).filter(|&i| !answered[i]).collect();
        let asked: Vec<(u8, u8)> = silent.iter().map(|&i| pairs[i]).collect();
        for &(a, b) in &asked {
            net.pin_neighbour(a, b)?;
            net.pin_neighbour(b, a)?;
        }
        let unicast = net.ping_all(&asked);
        for &(a, b) in &asked {
            net.forget_neighbour(a, b)?;
            net.forget_neighbour(b, a)?;
        }
        for (i, ok) in silent.into_iter().zip(unicast?) {
            answered[i] |= ok;
        }

        let peers = self.oracle_peers(hosts)?;
        let index = |host: u8| hosts.iter().position(|&h| h == host);
        let pinged: Vec<oracle::Pinged> = pairs
            .iter()
            .zip(&answered)
            .filter_map(|(&(a, b), &ok)| Some((index(a)?, index(b)?, ok)))
            .collect();
        // A cluster's standby reads no switch back: the master verifies.
        let at = if self.is_cluster() { master(self)? } else { 0 };
        let agreed = oracle::agree(
            &self.controllers()[at],
            &peers,
            &pinged,
            pinged_at,
            self.runs_pipeline(),
        )?;
        let talking = answered.iter().filter(|&&ok| ok).count();
        self.step(format!(
            "{talking} of {} ordered pairs answered; {agreed}",
            pairs.len()
        ));
        Ok(())
    }
}
