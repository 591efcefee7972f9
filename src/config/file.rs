//! The settings file (`--config`): its tables and keys as serde reads them, every key
//! optional and an unknown one refused. contrib/sliced.toml describes each key; the
//! parent's unit tests hold the two to the same list.

use std::path::PathBuf;

use serde::Deserialize;

use super::auth::AuthFile;
use super::listen::Listen;

/// The settings file. Every key is optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileConfig {
    pub(super) db: Option<PathBuf>,
    pub(super) http: Option<String>,
    pub(super) metrics: Option<String>,
    pub(super) openflow: Option<Listen>,
    pub(super) openflow_tls: Option<String>,
    pub(super) pid_file: Option<PathBuf>,
    pub(super) log_file: Option<PathBuf>,
    pub(super) slicing: Option<bool>,
    pub(super) allowed_hosts: Option<Vec<String>>,
    pub(super) max_http_connections: Option<u64>,
    pub(super) request_timeout: Option<u64>,
    pub(super) max_apply_records: Option<u64>,
    #[serde(default)]
    pub(super) auth: AuthFile,
    #[serde(default)]
    pub(super) controller: ControllerFile,
    #[serde(default)]
    pub(super) store: StoreFile,
    #[serde(default)]
    pub(super) cluster: ClusterFile,
}

/// `[cluster]`: this instance in a cluster, with etcd only.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ClusterFile {
    pub(super) name: Option<String>,
    pub(super) lease_ttl_secs: Option<u64>,
}

/// `[store]`: the etcd cluster that keeps the slices instead of the data directory.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct StoreFile {
    pub(super) etcd: Option<Vec<String>>,
    pub(super) etcd_prefix: Option<String>,
    pub(super) etcd_cafile: Option<PathBuf>,
    pub(super) etcd_certfile: Option<PathBuf>,
    pub(super) etcd_keyfile: Option<PathBuf>,
    pub(super) etcd_user: Option<String>,
    pub(super) etcd_password_file: Option<PathBuf>,
    pub(super) etcd_allow_plaintext: Option<bool>,
}

/// `[controller]`: the pipeline, the OpenFlow TLS files, which switches may connect, what
/// each may make the controller hold, and links.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ControllerFile {
    pub(super) pipeline: Option<bool>,
    pub(super) lldp_interval_ms: Option<u64>,
    pub(super) idle_timeout: Option<u16>,
    pub(super) openflow_cert: Option<PathBuf>,
    pub(super) openflow_key: Option<PathBuf>,
    pub(super) openflow_ca: Option<PathBuf>,
    pub(super) allowed_dpids: Option<Vec<DpidEntry>>,
    pub(super) lldp_secret_file: Option<PathBuf>,
    pub(super) max_ports_per_switch: Option<u32>,
    pub(super) max_multipart_bytes: Option<u64>,
    pub(super) max_outbound_bytes: Option<u64>,
    pub(super) max_hosts_per_port: Option<u32>,
    pub(super) max_hosts_per_switch: Option<u32>,
    pub(super) host_idle_timeout: Option<u32>,
    pub(super) packet_in_rate: Option<u32>,
    pub(super) packet_in_burst: Option<u32>,
    pub(super) packet_in_port_rate: Option<u32>,
    pub(super) max_switch_connections: Option<u32>,
    pub(super) max_pending_handshakes: Option<u32>,
    pub(super) fabric: Option<Vec<String>>,
    pub(super) discovery_window_secs: Option<u64>,
    pub(super) verification_interval: Option<u64>,
    pub(super) verification_list_limit: Option<u32>,
}

/// A datapath id in the settings file: an integer, or a string for the ids beyond
/// TOML's signed 64-bit integers.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum DpidEntry {
    Number(u64),
    Text(String),
}
