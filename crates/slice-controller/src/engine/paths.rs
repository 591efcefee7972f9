//! Installed paths: withdrawn when their ingress flow idles out, when a pair may no
//! longer talk, or when something they use goes.

use super::*;

impl Engine {
    /// A switch removed a flow (idle timeout): a path whose ingress flow went is over.
    pub fn flow_removed(&mut self, dpid: u64, rule: Rule, priority: u16) {
        if priority == DROP_PRIORITY {
            let key = (rule.eth_src, rule.eth_dst);
            if self
                .drops
                .get(&key)
                .is_some_and(|drop| drop.ingress == PortId::new(dpid, rule.in_port))
            {
                self.forget_drop(key);
            }
            return;
        }
        let key = (rule.eth_src, rule.eth_dst);
        let adopted_here = self.adopted.get(&key).is_some_and(|flows| {
            flows
                .iter()
                .any(|flow| flow.dpid == dpid && flow.in_port == rule.in_port)
        });
        if adopted_here {
            self.delete_adopted(key);
        }
        let ingress = self
            .paths
            .get(&key)
            .and_then(|path| path.hops.first())
            .is_some_and(|hop| hop.dpid == dpid && hop.in_port == rule.in_port);
        if ingress {
            self.delete_paths_where(|path| (path.src.mac, path.dst.mac) == key);
        }
    }

    pub(super) fn delete_paths_where(&mut self, doomed: impl Fn(&InstalledPath) -> bool) {
        let keys: Vec<HostPair> = self
            .paths
            .iter()
            .filter(|(_, path)| doomed(path))
            .map(|(key, _)| *key)
            .collect();
        for key in keys {
            self.delete_path(key);
        }
    }

    pub(super) fn delete_path(&mut self, key: HostPair) {
        let Some(path) = self.paths.remove(&key) else {
            return;
        };
        log::info!("Deleting path: {}", path.describe());
        self.notices.push(Notice::PathDeleted {
            src: path.src.mac,
            dst: path.dst.mac,
        });
        for hop in &path.hops {
            if self.topology.has_switch(hop.dpid) {
                self.send(
                    hop.dpid,
                    Command::FlowDelete {
                        rule: Rule {
                            in_port: hop.in_port,
                            eth_src: path.src.mac,
                            eth_dst: path.dst.mac,
                        },
                        priority: PATH_PRIORITY,
                    },
                );
            }
        }
    }
}
