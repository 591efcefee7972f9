//! The OpenFlow controller, started on the store, in the master election when on etcd,
//! with what the REST application shows of it: its metrics, its network views and the
//! cluster.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::Context;
use slice_etcd::MasterElection;

use crate::config::{ClusterConfig, Config, EtcdConfig};
use crate::store::Backend;
use crate::{cluster, config, events, metrics, network};

/// The running controller and what the servers take of it.
pub(crate) struct Running {
    pub controller: slice_controller::Controller,
    /// With etcd: resigned at a stop, so that the network is handed over at once.
    pub election: Option<Arc<MasterElection>>,
    /// Its listeners, as `<address> (tcp)` and `<address> (tls)`.
    pub openflow_addrs: Vec<String>,
    pub metrics: Arc<slice_http::metrics::Metrics>,
    pub network: Arc<dyn slice_http::NetworkView>,
}

/// Joins the election (with etcd), starts the controller, and completes `settings` with
/// what the REST application shows of it.
pub(crate) fn start(
    config: &Config,
    backend: &Backend,
    settings: &mut slice_http::Settings,
) -> anyhow::Result<Running> {
    let election = match (&config.etcd, &config.cluster) {
        (Some(etcd), Some(cluster)) => Some(Arc::new(start_election(config, etcd, cluster)?)),
        _ => None,
    };
    let cluster_link = election.as_ref().map(cluster_link);
    // Subscribed before the controller starts, as the controller is: every committed
    // change from here on is an event.
    let events = Arc::clone(&settings.events);
    backend
        .shared()
        .subscribe(Box::new(move |change| events.publish_change(change)));
    let mut measured = metrics::Measured::new(&settings.events);
    match backend {
        Backend::Sled(sled) => sled.observe_commits(measured.store.clone()),
        Backend::Etcd(etcd) => measured.count_skipped_keys(Arc::clone(etcd)),
    }
    let mut controller_config = controller_config(config)?;
    controller_config.metrics = Arc::clone(&measured.controller);
    let controller = backend
        .start_controller(&config.openflow, controller_config, cluster_link)
        .map_err(|err| match err {
            slice_controller::StartError::Listen { addr, reason } => {
                let (listener, setting) = if config.openflow.plain.as_ref() == Some(&addr) {
                    ("OpenFlow", config::OPENFLOW_SETTING)
                } else {
                    ("OpenFlow over TLS", config::OPENFLOW_TLS_SETTING)
                };
                config::listen_failure(listener, &addr, &reason, setting)
            }
            other => other.into(),
        })?;
    // Its listeners are bound now; readiness holds while its engine runs.
    let openflow = controller.handle();
    settings.health.watch_openflow(Box::new(move || {
        openflow
            .is_running()
            .then_some(())
            .ok_or_else(|| "the OpenFlow controller has stopped".to_owned())
    }));
    let metrics = Arc::new(measured.into_metrics(controller.handle()));
    settings.metrics = Some(Arc::clone(&metrics));
    let openflow_addrs: Vec<String> = [
        controller.plain_addr().map(|addr| format!("{addr} (tcp)")),
        controller.tls_addr().map(|addr| format!("{addr} (tls)")),
    ]
    .into_iter()
    .flatten()
    .collect();
    settings.openflow_addresses = openflow_addrs.clone();
    let running = Running {
        network: Arc::new(network::ControllerView::new(controller.handle())),
        controller,
        election,
        openflow_addrs,
        metrics,
    };
    show_network(config, backend, &running, settings);
    Ok(running)
}

/// The controller's view of the network as events, and the cluster it is part of.
fn show_network(
    config: &Config,
    backend: &Backend,
    running: &Running,
    settings: &mut slice_http::Settings,
) {
    // Before the HTTP server exists: every stream waits until the task below follows.
    settings.events.recording(false);
    actix_web::rt::spawn(events::publish_network_changes(
        Arc::clone(&settings.events),
        running.controller.handle(),
    ));
    settings.cluster = Some(match (backend, &running.election) {
        (Backend::Etcd(store), Some(election)) => Arc::new(cluster::EtcdCluster {
            election: Arc::clone(election),
            store: Arc::clone(store),
            prefix: config
                .etcd
                .as_ref()
                .map_or_else(String::new, |etcd| etcd.prefix.clone()),
        }),
        _ => Arc::new(cluster::SingleInstance {
            name: config::default_name(&config.openflow),
            http: config.http.written.clone(),
            openflow: running.openflow_addrs.join(", "),
            controller: running.controller.handle(),
        }),
    });
}

/// What ties the controller to the election: its leadership in, the switches' roles out
/// to the member record.
fn cluster_link(election: &Arc<MasterElection>) -> slice_controller::ClusterLink {
    let (switch_roles, mut roles) = tokio::sync::watch::channel(BTreeMap::new());
    let publisher = Arc::clone(election);
    actix_web::rt::spawn(async move {
        while roles.changed().await.is_ok() {
            let current = roles.borrow_and_update().clone();
            publisher.set_switch_roles(cluster::switch_roles(&current));
        }
    });
    slice_controller::ClusterLink {
        leadership: election.leadership(),
        switch_roles,
        generation_recheck: election.generation_recheck(),
    }
}

/// Joins the master election as `cluster.name`.
fn start_election(
    config: &Config,
    etcd: &EtcdConfig,
    cluster: &ClusterConfig,
) -> anyhow::Result<slice_etcd::MasterElection> {
    let openflow = config
        .openflow
        .plain
        .clone()
        .or(config.openflow.tls.as_ref().map(|(addr, _)| addr.clone()))
        .unwrap_or_default();
    let election = slice_etcd::MasterElection::start(slice_etcd::ElectionConfig {
        endpoints: etcd.endpoints.clone(),
        prefix: etcd.prefix.clone(),
        id: cluster.name.clone(),
        http: config.http.written.clone(),
        openflow,
        lease_ttl: cluster.lease_ttl,
        access: etcd.access.clone(),
    })
    .context("cannot join the master election in etcd")?;
    log::info!(
        "joined the master election as {} (lease {} s)",
        cluster.name,
        cluster.lease_ttl.as_secs()
    );
    Ok(election)
}

fn controller_config(config: &Config) -> anyhow::Result<slice_controller::ControllerConfig> {
    let mut controller = slice_controller::ControllerConfig::default();
    controller.engine.slicing = config.slicing;
    controller.engine.proactive = config.pipeline;
    if let Some(idle_timeout) = config.idle_timeout {
        controller.engine.idle_timeout = idle_timeout;
    }
    controller.allowed_dpids = config.allowed_dpids.clone();
    if let Some(ms) = config.lldp_interval_ms {
        controller.set_lldp_interval(std::time::Duration::from_millis(ms));
    }
    controller.engine.fabric = config.links.fabric.clone();
    if let Some(window) = config.links.discovery_window {
        controller.engine.discovery_window = window;
    }
    let entries = controller.engine.fabric.entries();
    if entries.is_empty() {
        log::info!(
            "unless the store holds a fabric declared through the API, links are discovered \
             for {} s after a switch connects; declare the fabric (--fabric, \
             controller.fabric, PUT /topology/fabric) so that hosts cannot fake one",
            controller.engine.discovery_window.as_secs()
        );
    } else {
        let listed: Vec<String> = entries.iter().map(ToString::to_string).collect();
        log::info!(
            "links form on the declared fabric only: {}",
            listed.join(", ")
        );
    }
    let limits = &config.switch_limits;
    if let Some(path) = &limits.lldp_secret_file {
        controller.engine.probe_key = slice_controller::ProbeKey::from_file(path)?;
    }
    let engine = &mut controller.engine;
    let size = |value: u32| usize::try_from(value).unwrap_or(usize::MAX);
    let bytes = |value: u64| usize::try_from(value).unwrap_or(usize::MAX);
    if let Some(value) = limits.max_ports_per_switch {
        engine.max_ports_per_switch = size(value);
    }
    if let Some(value) = limits.max_hosts_per_port {
        engine.max_hosts_per_port = size(value);
    }
    if let Some(value) = limits.max_hosts_per_switch {
        engine.max_hosts_per_switch = size(value);
    }
    if let Some(value) = limits.host_idle_timeout {
        engine.host_idle = std::time::Duration::from_secs(value.into());
    }
    if let Some(value) = limits.max_multipart_bytes {
        controller.max_multipart_bytes = bytes(value);
    }
    if let Some(value) = limits.max_outbound_bytes {
        controller.max_outbound_bytes = bytes(value);
    }
    if let Some(value) = limits.packet_in_rate {
        controller.packet_in_rate = value;
    }
    if let Some(value) = limits.packet_in_burst {
        controller.packet_in_burst = value;
    }
    if let Some(value) = limits.packet_in_port_rate {
        controller.packet_in_port_rate = value;
    }
    if let Some(value) = limits.max_switch_connections {
        controller.max_switch_connections = size(value);
    }
    if let Some(value) = limits.max_pending_handshakes {
        controller.max_pending_handshakes = size(value);
    }
    if let Some(secs) = limits.verification_interval {
        controller.verification_interval = std::time::Duration::from_secs(secs);
    }
    if let Some(value) = limits.verification_list_limit {
        controller.verification_list_limit = size(value);
    }
    Ok(controller)
}
