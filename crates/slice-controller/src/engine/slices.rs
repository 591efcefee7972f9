//! Membership changes: the index kept current, paths the change forbids withdrawn,
//! drops it allows lifted.

use super::*;

impl Engine {
    /// Applies a committed change of slice membership and withdraws what it forbids now.
    pub fn membership_changed(&mut self, change: &Change) {
        self.membership.apply(change);
        let grows = change.grows();
        if !self.config.slicing {
            return;
        }
        self.proactive.changed();
        if grows {
            self.lift_drops_now_allowed();
        } else {
            let membership = &self.membership;
            let forbidden: Vec<HostPair> = self
                .paths
                .iter()
                .filter(|(_, path)| !membership.shares_slice(&path.src, &path.dst))
                .map(|(key, _)| *key)
                .collect();
            for key in forbidden {
                self.delete_path(key);
            }
            let membership = &self.membership;
            let forbidden: Vec<HostPair> = self
                .adopted
                .iter()
                .filter(|((src, dst), flows)| {
                    flows.iter().any(|flow| {
                        flow.endpoints.is_some_and(|(src_port, dst_port)| {
                            !membership.shares_slice(
                                &Host {
                                    port: src_port,
                                    mac: *src,
                                },
                                &Host {
                                    port: dst_port,
                                    mac: *dst,
                                },
                            )
                        })
                    })
                })
                .map(|(key, _)| *key)
                .collect();
            for key in forbidden {
                self.delete_adopted(key);
            }
        }
    }

    /// Drop flows for pairs that a new membership allows go at once, so that the next
    /// packet reaches the controller and is routed.
    pub(super) fn lift_drops_now_allowed(&mut self) {
        let allowed: Vec<HostPair> = self
            .drops
            .iter()
            .filter(|((src, dst), drop)| {
                let src_host = Host {
                    port: drop.ingress,
                    mac: *src,
                };
                self.hosts.get(dst).is_some_and(|dst_port| {
                    self.membership.shares_slice(
                        &src_host,
                        &Host {
                            port: dst_port,
                            mac: *dst,
                        },
                    )
                })
            })
            .map(|(key, _)| *key)
            .collect();
        for key in allowed {
            self.lift_drop(key);
        }
    }
}
