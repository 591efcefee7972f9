//! What the store tells: membership changes (the index kept current, paths the change
//! forbids withdrawn, drops it allows lifted) and the fabric declared anew.

use super::*;

impl Engine {
    /// Applies a committed change of slice membership and withdraws what it forbids now.
    pub fn membership_changed(&mut self, change: &Change) {
        if let Change::FabricDeclared(fabric) = change {
            return self.fabric_declared(fabric.clone());
        }
        let touched = self.membership.hosts_touched_by(change);
        self.membership.apply(change);
        let grows = change.grows();
        if !self.config.slicing {
            return;
        }
        self.proactive.hosts_changed(&touched);
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

    /// The operator declared the fabric anew (through the store): links form only where
    /// it allows from now on, and a link it does not allow goes at once, with everything
    /// routed over it. An empty declaration brings back discovery: links there stay, and
    /// new ones form within a switch's window as before. An instance whose settings
    /// declare the fabric keeps to them (the REST API refuses a declaration there; this
    /// one came from another instance of the cluster).
    pub fn fabric_declared(&mut self, fabric: DeclaredFabric) {
        if self.fabric_in_settings {
            if fabric != self.config.fabric {
                log::warn!(
                    "another instance declared the fabric in the store; this one keeps the \
                     fabric its settings declare: give every instance the same"
                );
            }
            return;
        }
        log::info!(
            "fabric declared: {}",
            if fabric.is_declared() {
                format!("{} entries", fabric.entries().len())
            } else {
                "none, links are discovered".to_owned()
            }
        );
        self.config.fabric = fabric;
        if self.config.fabric.is_unreadable() {
            return log::error!(
                "the store holds a fabric declaration that cannot be read: no new link \
                 forms until the fabric is declared again (PUT /topology/fabric)"
            );
        }
        if !self.config.fabric.is_declared() {
            return;
        }
        let fabric = &self.config.fabric;
        let undeclared = self
            .topology
            .remove_links_where(|link| !fabric.allows(link.src, link.dst));
        for link in &undeclared {
            log::warn!(
                "link {} -> {} withdrawn: the declared fabric has no such cable",
                link.src,
                link.dst
            );
            self.link_disowned(link);
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
