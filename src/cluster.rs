//! `GET /cluster`, answered from what this instance knows: the election's state and the
//! member records it last read (a cluster on etcd), or this instance alone (sled).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};
use slice_controller::{ControllerHandle, Role};
use slice_core::Leadership;
use slice_etcd::{EtcdStore, MasterElection, MemberRecord};
use slice_http::{ClusterView, ViewFuture};

/// One instance of a cluster on etcd.
pub(crate) struct EtcdCluster {
    pub election: Arc<MasterElection>,
    pub store: Arc<EtcdStore>,
    /// The store's key prefix: with the endpoints, which store this instance serves
    /// (the `slice` tool checks it before it sends a command here).
    pub prefix: String,
}

impl ClusterView for EtcdCluster {
    fn view(&self) -> ViewFuture {
        let leadership = self.election.leadership().borrow().clone();
        let (master, generation) = match &leadership {
            Leadership::Master { generation } => {
                (Some(self.election.id().to_owned()), Some(*generation))
            }
            Leadership::Standby { master, generation } => (master.clone(), *generation),
        };
        let health = self.election.etcd_health();
        let mut etcd = json!({
            "healthy": health.healthy,
            "endpoints": self.election.endpoints(),
            "in_use": self.store.endpoint_in_use(),
            "prefix": self.prefix,
        });
        if let Some(error) = health.error {
            etcd["error"] = Value::String(error);
        }
        let answer = json!({
            "instance": self.election.id(),
            "master": master,
            "generation": generation,
            "members": self.election.members().iter().map(member).collect::<Vec<_>>(),
            "revision": self.store.revision(),
            "store": "etcd",
            "etcd": etcd,
        });
        Box::pin(std::future::ready(Some(answer)))
    }
}

fn member(record: &MemberRecord) -> Value {
    json!({
        "name": record.name,
        "http": record.http,
        "openflow": record.openflow,
        "switches": record
            .switches
            .iter()
            .map(|switch| json!({"dpid": switch.dpid, "role": switch.role}))
            .collect::<Vec<_>>(),
    })
}

/// A single instance on sled: the one member, and master, of its own network; its
/// switches give it the role every controller has by default, equal.
pub(crate) struct SingleInstance {
    pub name: String,
    pub http: String,
    pub openflow: String,
    pub controller: ControllerHandle,
}

impl ClusterView for SingleInstance {
    fn view(&self) -> ViewFuture {
        let (name, http, openflow) = (self.name.clone(), self.http.clone(), self.openflow.clone());
        let controller = self.controller.clone();
        Box::pin(async move {
            let dpids = controller
                .inspect(|engine| engine.switches().iter().map(|s| s.dpid).collect::<Vec<_>>())
                .await?;
            let switches: Vec<Value> = dpids
                .into_iter()
                .map(|dpid| json!({"dpid": dpid, "role": Role::Equal.describe()}))
                .collect();
            Some(json!({
                "instance": name,
                "master": name,
                "generation": null,
                "members": [{
                    "name": name,
                    "http": http,
                    "openflow": openflow,
                    "switches": switches,
                }],
                "revision": null,
                "store": "sled",
                "etcd": null,
            }))
        })
    }
}

/// The roles as the election's member record lists them.
pub(crate) fn switch_roles(roles: &BTreeMap<u64, Role>) -> Vec<slice_etcd::SwitchRole> {
    slice_etcd::election::switch_roles(roles.iter().map(|(dpid, role)| (*dpid, role.describe())))
}
