//! The daemon's settings: command-line flags over `SLICED_DB` over the TOML file named by
//! `--config` over built-in defaults.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use slice_cli::DataDir;
use slice_controller::{Listeners, TlsFiles};

use auth::session_ttl;
use file::{ClusterFile, DpidEntry, FileConfig, StoreFile};
use links::LinkArgs;
pub(crate) use links::Links;
pub(crate) use listen::{listen_failure, Listen, ListenAddr};
use listen::{parse_dpid, OPENFLOW_OFF};
pub(crate) use switch_limits::SwitchLimitArgs;

mod auth;
mod file;
mod file_errors;
mod help;
mod links;
mod listen;
mod switch_limits;

pub(crate) const DEFAULT_HTTP: &str = "127.0.0.1:9292";
pub(crate) const DEFAULT_OPENFLOW: &str = "0.0.0.0:6653";
pub(crate) const DEFAULT_MAX_HTTP_CONNECTIONS: usize = 512;

/// Each listener's flag and settings key, named where its address is refused.
pub(crate) const HTTP_SETTING: &str = "--http, or http in the settings file";
pub(crate) const METRICS_SETTING: &str = "--metrics, or metrics in the settings file";
pub(crate) const OPENFLOW_SETTING: &str = "--openflow, or openflow in the settings file";
pub(crate) const OPENFLOW_TLS_SETTING: &str =
    "--openflow-tls, or openflow_tls in the settings file";

/// sliced: a routing-switch OpenFlow controller with virtual slicing.
#[derive(Debug, Parser)]
#[command(version, about, after_help = help::examples())]
pub(crate) struct Args {
    /// Data directory (database, local socket, session key) [default: per-user data dir]
    #[arg(long, env = "SLICED_DB", value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Address of the REST API [default: 127.0.0.1:9292]
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// Address of a separate, unauthenticated listener serving only GET /metrics, for
    /// the Prometheus scraper [default: off]
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
    /// Address where OpenFlow switches connect over plain TCP, unauthenticated, or
    /// "none" [default: 0.0.0.0:6653, or none when --openflow-tls is set]
    #[arg(long, value_name = "ADDR", value_parser = Listen::parse)]
    pub openflow: Option<Listen>,
    /// Address where OpenFlow switches connect over TLS with a client certificate
    /// [default: off]
    #[arg(long, value_name = "ADDR")]
    pub openflow_tls: Option<String>,
    /// The controller's TLS certificate chain (PEM)
    #[arg(long, value_name = "FILE")]
    pub openflow_cert: Option<PathBuf>,
    /// The private key of --openflow-cert (PEM)
    #[arg(long, value_name = "FILE")]
    pub openflow_key: Option<PathBuf>,
    /// The CA certificate that signs the switches' certificates (PEM)
    #[arg(long, value_name = "FILE")]
    pub openflow_ca: Option<PathBuf>,
    /// Let only this datapath id connect (0x-hex or decimal; repeatable) [default: any]
    #[arg(long = "allowed-dpid", value_name = "DPID", value_parser = parse_dpid)]
    pub allowed_dpids: Vec<u64>,
    /// TOML file with the same settings
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Run in the background; returns once the daemon is serving
    #[arg(short = 'd', long)]
    pub daemon: bool,
    /// Write the daemon's process id to this file
    #[arg(long, value_name = "FILE")]
    pub pid_file: Option<PathBuf>,
    /// Where a background daemon logs [default: <data dir>/sliced.log]
    #[arg(long, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
    /// Plain routing switch: route between any hosts, ignore slices
    #[arg(long)]
    pub no_slicing: bool,
    /// Set up flows per host pair as traffic starts, on OpenFlow 1.3 switches too,
    /// instead of the proactive pipeline (for comparison; see docs/controller.md)
    #[arg(long)]
    pub per_pair_flows: bool,
    /// How often LLDP probes every switch port, in milliseconds [default: 1000]
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(50..=60_000))]
    pub lldp_interval_ms: Option<u64>,
    /// Idle timeout of path flows, in seconds [default: 60]
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u16).range(1..))]
    pub idle_timeout: Option<u16>,
    /// Require a session on the unprefixed slice endpoints too
    #[arg(long)]
    pub require_auth: bool,
    /// Turn the developer login off (production)
    #[arg(long)]
    pub no_developer_login: bool,
    /// Another name clients may use for the daemon in Host, on the API and the --metrics
    /// listener (repeatable) [default: the listener's address, localhost, 127.0.0.1, [::1]]
    #[arg(long = "allowed-host", value_name = "NAME")]
    pub allowed_hosts: Vec<String>,
    /// Most HTTP connections served at once; more wait to be accepted [default: 512]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_http_connections: Option<u64>,
    /// Seconds a client may take to send a request's head, and then its body [default: 10]
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub request_timeout: Option<u64>,
    /// Most records (slices, ports, MAC addresses) one `POST /slices:apply` may declare;
    /// more is refused with 413 [default: 500000]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_apply_records: Option<u64>,
    /// Session lifetime in seconds, instead of auth.session_ttl_hours [default: 43200]
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub session_ttl_seconds: Option<u64>,
    /// Keep the slices in this etcd cluster instead of the data directory's database
    /// (comma-separated endpoints) [default: off]
    #[arg(
        long,
        env = "SLICED_ETCD",
        value_name = "URL[,URL...]",
        value_delimiter = ','
    )]
    pub etcd: Vec<String>,
    #[command(flatten)]
    pub etcd_access: EtcdAccessArgs,
    /// This instance's name in the cluster (with --etcd) [default: <host name>:<OpenFlow
    /// port>]
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Seconds of the master election's lease (with --etcd): a dead master is replaced
    /// within about this long [default: 2]
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=60))]
    pub lease_ttl: Option<u64>,
    #[command(flatten)]
    pub switch_limits: SwitchLimitArgs,
    #[command(flatten)]
    pub links: LinkArgs,
    /// Check the settings and every file they name (certificates, keys, secrets, the
    /// data directory or its parent), print one line and exit: 0 when the daemon could
    /// start on them, 1 with the errors otherwise. Opens no database and binds no port
    #[arg(long)]
    pub check_config: bool,
    /// The least severe log lines written: error, warn, info, debug or trace; wins over
    /// RUST_LOG [default: info, or RUST_LOG when set]
    #[arg(long, value_name = "LEVEL", value_enum)]
    pub log_level: Option<LogLevel>,
    /// Write the man pages (DIR/man) and the bash, zsh and fish completions
    /// (DIR/completions) of sliced and slice, then exit
    #[arg(long, value_name = "DIR")]
    pub write_manuals: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Option<DaemonCommand>,
}

/// What sliced does instead of serving.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum DaemonCommand {
    /// Print the shell completion script of sliced, or write it to a file
    #[command(
        after_help = "Examples:\n  $ sliced completions bash --output ~/.local/share/bash-completion/completions/\n  $ sliced completions zsh > ~/.zfunc/_sliced"
    )]
    Completions {
        #[arg(value_name = "SHELL")]
        shell: clap_complete::Shell,
        /// Write the script here instead of standard output, creating the directories on
        /// the way; a directory (existing, or written with a final /) gets the file name
        /// the shell looks for (sliced, _sliced, sliced.fish, sliced.elv, _sliced.ps1)
        #[arg(short, long, value_name = "PATH", value_hint = clap::ValueHint::AnyPath)]
        output: Option<PathBuf>,
    },
}

/// `--log-level`: the levels of the `log` crate, as RUST_LOG names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogLevel {
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

/// This instance in a cluster (with etcd).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClusterConfig {
    /// Unique in the cluster; also what `GET /cluster` calls it.
    pub name: String,
    pub lease_ttl: Duration,
}

/// The longest instance name: it is an etcd key's last part and shown to operators.
const MAX_NAME_LEN: usize = 128;

/// TLS and credentials for an etcd that is locked down (docs/cluster.md).
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct EtcdAccessArgs {
    /// CA certificates (PEM) etcd's certificate must chain to, for https:// endpoints
    /// [default: the system's roots]
    #[arg(long, env = "SLICED_ETCD_CAFILE", value_name = "FILE")]
    pub etcd_cafile: Option<PathBuf>,
    /// Client certificate (PEM) shown to etcd; when etcd authenticates clients by their
    /// certificates, its common name is the etcd user
    #[arg(long, env = "SLICED_ETCD_CERTFILE", value_name = "FILE")]
    pub etcd_certfile: Option<PathBuf>,
    /// The client certificate's key (PEM)
    #[arg(long, env = "SLICED_ETCD_KEYFILE", value_name = "FILE")]
    pub etcd_keyfile: Option<PathBuf>,
    /// etcd user (with --etcd-password-file)
    #[arg(long, env = "SLICED_ETCD_USER", value_name = "NAME")]
    pub etcd_user: Option<String>,
    /// File holding the etcd user's password; it must be its owner's alone (chmod 600)
    #[arg(long, env = "SLICED_ETCD_PASSWORD_FILE", value_name = "FILE")]
    pub etcd_password_file: Option<PathBuf>,
    /// Accept etcd over plain http://: whoever reads the network between sliced and etcd
    /// reads the slices and the credentials, and the session key unless
    /// auth.session_key_file keeps it out of etcd
    #[arg(long)]
    pub etcd_allow_plaintext: bool,
}

/// Where the slices live when not in the data directory: an etcd cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EtcdConfig {
    pub endpoints: Vec<String>,
    /// The prefix of every key of the store (`slice_etcd::DEFAULT_PREFIX` unless set).
    pub prefix: String,
    /// TLS files and credentials, flags over `[store]`.
    pub access: slice_etcd::Access,
}

/// Everything the daemon needs to know, resolved.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub data_dir: DataDir,
    /// The data directory was named (`--db`, `SLICED_DB` or `db`), not the per-user default.
    pub data_dir_named: bool,
    pub http: ListenAddr,
    /// The scraper's own listener, if any.
    pub metrics: Option<ListenAddr>,
    pub openflow: Listeners,
    pub allowed_dpids: Option<BTreeSet<u64>>,
    pub pid_file: Option<PathBuf>,
    pub log_file: Option<PathBuf>,
    pub slicing: bool,
    /// Whether OpenFlow 1.3 networks run the proactive pipeline.
    pub pipeline: bool,
    /// Unset: the controller's default.
    pub lldp_interval_ms: Option<u64>,
    /// Unset: the controller's default.
    pub idle_timeout: Option<u16>,
    /// Unset: slice-http's default (`Settings::new`), as for the two below.
    pub require_auth: Option<bool>,
    pub developer_login: Option<bool>,
    pub secure_cookie: Option<bool>,
    /// The authenticating proxy of `[auth.proxy]`, if any.
    pub proxy: Option<slice_http::ProxyAuth>,
    /// Which claims and proxy headers give which role (`[auth.roles]`).
    pub roles: slice_http::RoleMapping,
    /// The OpenID Connect login of `[auth.oidc]`, if any.
    pub oidc: Option<slice_http::OidcConfig>,
    pub session_key_file: PathBuf,
    pub session_ttl: Duration,
    pub allowed_hosts: Vec<String>,
    pub max_http_connections: usize,
    pub request_timeout: Duration,
    pub max_apply_records: usize,
    /// Unset limits keep the controller's defaults.
    pub switch_limits: SwitchLimitArgs,
    /// The declared fabric, or the discovery window.
    pub links: Links,
    /// The session key is etcd's, shared by the cluster (etcd, and no
    /// `auth.session_key_file`), not `session_key_file`.
    pub session_key_shared: bool,
    /// Unset: the slices are in the data directory's sled database.
    pub etcd: Option<EtcdConfig>,
    /// Set exactly when `etcd` is.
    pub cluster: Option<ClusterConfig>,
}

impl Config {
    pub(crate) fn resolve(args: &Args) -> anyhow::Result<Self> {
        let file = match &args.config {
            Some(path) => read_file(path)?,
            None => FileConfig::default(),
        };
        let openflow = openflow_listeners(args, &file)?;
        let allowed_dpids = allowed_dpids(args, &file)?;
        let named_data_dir = args.db.clone().or(file.db);
        let data_dir_named = named_data_dir.is_some();
        let data_dir = DataDir::resolve(named_data_dir);
        let lldp_interval_ms_file = file.controller.lldp_interval_ms;
        let idle_timeout_file = file.controller.idle_timeout;
        let session_ttl = session_ttl(args.session_ttl_seconds, &file.auth)?;
        let max_http_connections = args
            .max_http_connections
            .or(file.max_http_connections)
            .map_or(Ok(DEFAULT_MAX_HTTP_CONNECTIONS), usize::try_from)
            .context("max_http_connections is too large")?;
        anyhow::ensure!(
            max_http_connections > 0,
            "max_http_connections must be at least 1"
        );
        let request_timeout = match args.request_timeout.or(file.request_timeout) {
            Some(seconds) => Duration::from_secs(seconds),
            None => slice_http::DEFAULT_REQUEST_TIMEOUT,
        };
        anyhow::ensure!(
            (Duration::from_secs(1)..=Duration::from_secs(3600)).contains(&request_timeout),
            "request_timeout must be between 1 and 3600 seconds"
        );
        let max_apply_records = args
            .max_apply_records
            .or(file.max_apply_records)
            .map_or(Ok(slice_http::DEFAULT_MAX_APPLY_RECORDS), usize::try_from)
            .context("max_apply_records is too large")?;
        anyhow::ensure!(
            max_apply_records > 0,
            "max_apply_records must be at least 1"
        );
        let allowed_hosts = if args.allowed_hosts.is_empty() {
            file.allowed_hosts.clone().unwrap_or_default()
        } else {
            args.allowed_hosts.clone()
        };
        // Unset, they keep the controller's defaults.
        let lldp_interval_ms = args.lldp_interval_ms.or(lldp_interval_ms_file);
        anyhow::ensure!(
            lldp_interval_ms.map_or(true, |ms| (50..=60_000).contains(&ms)),
            "controller.lldp_interval_ms must be between 50 and 60000"
        );
        let idle_timeout = args.idle_timeout.or(idle_timeout_file);
        anyhow::ensure!(
            idle_timeout != Some(0),
            "controller.idle_timeout must be at least 1"
        );
        let pipeline = !args.per_pair_flows && file.controller.pipeline.unwrap_or(true);
        let links = args.links.resolve(
            file.controller.fabric.clone(),
            file.controller.discovery_window_secs,
        )?;
        let switch_limits = args.switch_limits.or(file.controller);
        switch_limits.check()?;
        let etcd = etcd(args, file.store)?;
        let cluster = cluster(args, file.cluster, etcd.is_some(), &openflow)?;
        let session_key_shared = etcd.is_some() && file.auth.session_key_file.is_none();
        let oidc = file.auth.oidc()?;
        let proxy = file.auth.proxy()?;
        let http = args
            .http
            .clone()
            .or(file.http)
            .unwrap_or(DEFAULT_HTTP.into());
        let http = ListenAddr::resolve(http, "the HTTP address", HTTP_SETTING)?;
        let metrics = args
            .metrics
            .clone()
            .or(file.metrics)
            .map(|addr| ListenAddr::resolve(addr, "the metrics address", METRICS_SETTING))
            .transpose()?;
        Ok(Self {
            http,
            metrics,
            openflow,
            allowed_dpids,
            pid_file: args.pid_file.clone().or(file.pid_file),
            log_file: args.log_file.clone().or(file.log_file),
            slicing: !args.no_slicing && file.slicing.unwrap_or(true),
            pipeline,
            lldp_interval_ms,
            idle_timeout,
            require_auth: args
                .require_auth
                .then_some(true)
                .or(file.auth.require_for_slices),
            // A daemon with a real login (a proxy's or OpenID Connect) has no developer
            // login, which lets anyone be anyone, unless the file asks for both.
            developer_login: args
                .no_developer_login
                .then_some(false)
                .or(file.auth.developer_login)
                .or((oidc.is_some() || proxy.is_some()).then_some(false)),
            secure_cookie: file.auth.secure_cookie,
            proxy,
            roles: file.auth.roles()?,
            oidc,
            session_key_file: file
                .auth
                .session_key_file
                .unwrap_or_else(|| data_dir.session_key_path()),
            session_ttl,
            allowed_hosts,
            max_http_connections,
            request_timeout,
            max_apply_records,
            switch_limits,
            links,
            session_key_shared,
            data_dir,
            data_dir_named,
            etcd,
            cluster,
        })
    }
}

/// `--name` and `--lease-ttl` over `[cluster]`, only with etcd.
fn cluster(
    args: &Args,
    file: ClusterFile,
    with_etcd: bool,
    openflow: &Listeners,
) -> anyhow::Result<Option<ClusterConfig>> {
    let name = args.name.clone().or(file.name);
    let lease_ttl = args.lease_ttl.or(file.lease_ttl_secs);
    if !with_etcd {
        anyhow::ensure!(
            name.is_none() && lease_ttl.is_none(),
            "--name, --lease-ttl and [cluster] are used only with etcd (--etcd or store.etcd)"
        );
        return Ok(None);
    }
    let name = match name {
        Some(name) => name,
        None => default_name(openflow),
    };
    anyhow::ensure!(
        !name.is_empty()
            && name.len() <= MAX_NAME_LEN
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._:-".contains(c)),
        "the instance name must be 1 to {MAX_NAME_LEN} of letters, digits, '.', '_', ':' \
         and '-': {name:?}"
    );
    let lease_ttl = match lease_ttl {
        Some(seconds) => {
            anyhow::ensure!(
                (1..=60).contains(&seconds),
                "cluster.lease_ttl_secs must be between 1 and 60"
            );
            Duration::from_secs(seconds)
        }
        None => slice_etcd::DEFAULT_LEASE_TTL,
    };
    Ok(Some(ClusterConfig { name, lease_ttl }))
}

/// `<host name>:<OpenFlow port>`: unique as long as instances on one machine listen on
/// different ports, which they must anyway.
pub(crate) fn default_name(openflow: &Listeners) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "sliced".to_owned());
    let address = openflow
        .plain
        .as_deref()
        .or(openflow.tls.as_ref().map(|(addr, _)| addr.as_str()))
        .unwrap_or_default();
    let port = address.rsplit(':').next().unwrap_or_default();
    format!("{host}:{port}")
}

/// `--etcd` (or `SLICED_ETCD`) over `store.etcd`; `store.etcd_prefix` only with one of them.
fn etcd(args: &Args, file: StoreFile) -> anyhow::Result<Option<EtcdConfig>> {
    let endpoints = if args.etcd.is_empty() {
        file.etcd
    } else {
        Some(args.etcd.clone())
    };
    let given = &args.etcd_access;
    let access = slice_etcd::Access {
        ca_file: given.etcd_cafile.clone().or(file.etcd_cafile),
        cert_file: given.etcd_certfile.clone().or(file.etcd_certfile),
        key_file: given.etcd_keyfile.clone().or(file.etcd_keyfile),
        user: given.etcd_user.clone().or(file.etcd_user),
        password_file: given.etcd_password_file.clone().or(file.etcd_password_file),
    };
    let allow_plaintext = given.etcd_allow_plaintext || file.etcd_allow_plaintext == Some(true);
    let Some(endpoints) = endpoints else {
        anyhow::ensure!(
            file.etcd_prefix.is_none(),
            "store.etcd_prefix is used only with etcd (--etcd or store.etcd)"
        );
        anyhow::ensure!(
            access == slice_etcd::Access::default() && !allow_plaintext,
            "the etcd TLS, user and plaintext settings are used only with etcd (--etcd or \
             store.etcd)"
        );
        return Ok(None);
    };
    let endpoints: Vec<String> = endpoints
        .into_iter()
        .map(|endpoint| endpoint.trim().to_owned())
        .collect();
    anyhow::ensure!(
        !endpoints.is_empty() && endpoints.iter().all(|endpoint| !endpoint.is_empty()),
        "the etcd endpoints must be a non-empty list of URLs (--etcd URL[,URL...])"
    );
    // The same rule as the `slice` tool's, in one place.
    slice_etcd::Access::refuse_plaintext(&endpoints, allow_plaintext)
        .map_err(|err| anyhow::anyhow!("{err} (store.etcd_allow_plaintext = true)"))?;
    let prefix = file
        .etcd_prefix
        .unwrap_or_else(|| slice_etcd::DEFAULT_PREFIX.to_owned());
    anyhow::ensure!(
        prefix.starts_with('/') && prefix.len() > 1,
        "store.etcd_prefix must start with / and name something, like {:?}",
        slice_etcd::DEFAULT_PREFIX
    );
    Ok(Some(EtcdConfig {
        endpoints,
        prefix,
        access,
    }))
}

/// Plain TCP is on by default, on the port Open vSwitch uses; once TLS is on it is off
/// unless asked for, because an open plain port would undo what TLS guards.
fn openflow_listeners(args: &Args, file: &FileConfig) -> anyhow::Result<Listeners> {
    let tls_addr = args.openflow_tls.clone().or(file.openflow_tls.clone());
    let cert = args
        .openflow_cert
        .clone()
        .or(file.controller.openflow_cert.clone());
    let key = args
        .openflow_key
        .clone()
        .or(file.controller.openflow_key.clone());
    let ca = args
        .openflow_ca
        .clone()
        .or(file.controller.openflow_ca.clone());
    let tls = match (tls_addr, cert, key, ca) {
        (Some(addr), Some(cert), Some(key), Some(ca)) => Some((addr, TlsFiles { cert, key, ca })),
        (Some(_), ..) => anyhow::bail!(
            "openflow_tls needs openflow_cert, openflow_key and openflow_ca \
             (--openflow-cert, --openflow-key, --openflow-ca)"
        ),
        (None, None, None, None) => None,
        (None, ..) => anyhow::bail!(
            "openflow_cert, openflow_key and openflow_ca are used only with openflow_tls \
             (--openflow-tls ADDR)"
        ),
    };
    let plain = match args.openflow.clone().or(file.openflow.clone()) {
        Some(Listen::Off) => None,
        Some(Listen::At(addr)) => Some(addr),
        None if tls.is_some() => None,
        None => Some(DEFAULT_OPENFLOW.into()),
    };
    // The controller binds them as written (a host name is allowed); only the form is
    // checked here, so that a bare port is answered as for --http.
    if let Some(addr) = &plain {
        listen::check_host_port(addr, "the OpenFlow address", OPENFLOW_SETTING)?;
    }
    if let Some((addr, _)) = &tls {
        listen::check_host_port(addr, "the OpenFlow TLS address", OPENFLOW_TLS_SETTING)?;
    }
    anyhow::ensure!(
        plain.is_some() || tls.is_some(),
        "openflow is \"{OPENFLOW_OFF}\" and openflow_tls is not set: no switch could connect"
    );
    Ok(Listeners { plain, tls })
}

fn allowed_dpids(args: &Args, file: &FileConfig) -> anyhow::Result<Option<BTreeSet<u64>>> {
    if !args.allowed_dpids.is_empty() {
        return Ok(Some(args.allowed_dpids.iter().copied().collect()));
    }
    let Some(entries) = &file.controller.allowed_dpids else {
        return Ok(None);
    };
    let dpids = entries
        .iter()
        .map(|entry| match entry {
            DpidEntry::Number(dpid) => Ok(*dpid),
            DpidEntry::Text(text) => {
                parse_dpid(text).map_err(|err| anyhow::anyhow!("controller.allowed_dpids: {err}"))
            }
        })
        .collect::<anyhow::Result<BTreeSet<u64>>>()?;
    // An empty list would lock every switch out, which nobody means.
    anyhow::ensure!(
        !dpids.is_empty(),
        "controller.allowed_dpids is empty; leave it out to allow any switch"
    );
    Ok(Some(dpids))
}

fn read_file(path: &Path) -> anyhow::Result<FileConfig> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read config file {}", path.display()))?;
    toml::from_str(&text).map_err(|err| {
        let hint = file_errors::hint(&text, &err)
            .map(|hint| format!("\n{hint}"))
            .unwrap_or_default();
        anyhow::anyhow!("invalid config file {}: {err}{hint}", path.display())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The commented settings file the Debian package installs as /etc/sliced/sliced.toml.
    const SHIPPED: &str = include_str!("../contrib/sliced.toml");

    /// The shipped file with every "# key = value" line turned into a setting, and every
    /// "# [table]" line into a table.
    fn uncommented() -> String {
        SHIPPED
            .lines()
            .map(|line| match line.strip_prefix("# ") {
                Some(rest) if is_setting(rest) || is_table(rest) => rest,
                _ => line,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// A commented-out table such as `[auth.proxy]`, so that its keys land in it.
    fn is_table(line: &str) -> bool {
        line.strip_prefix('[')
            .and_then(|rest| rest.strip_suffix(']'))
            .is_some_and(|name| {
                !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'.')
            })
    }

    fn is_setting(line: &str) -> bool {
        line.split_once(" = ").is_some_and(|(key, _)| {
            !key.is_empty() && key.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
        })
    }

    /// The keys a table of the file accepts, as serde lists them on an unknown one: the
    /// structs themselves, so a new setting is missed by nobody.
    fn accepted_keys(table: &str) -> Vec<String> {
        let text = if table.is_empty() {
            "no_such_key = 1".to_owned()
        } else {
            format!("[{table}]\nno_such_key = 1")
        };
        let err = toml::from_str::<FileConfig>(&text).expect_err("an unknown key is refused");
        let message = err.to_string();
        // "expected `a`, `b`, ...", or "expected `a` or `b`" for two.
        let (_, expected) = message
            .split_once("`no_such_key`, expected ")
            .unwrap_or_else(|| panic!("serde names the accepted keys: {message}"));
        let expected = expected.lines().next().unwrap_or_default();
        let expected = expected.strip_prefix("one of ").unwrap_or(expected);
        expected
            .split(", ")
            .flat_map(|keys| keys.split(" or "))
            .map(|key| key.trim_matches('`').to_owned())
            .collect()
    }

    #[test]
    fn the_shipped_config_is_valid_as_installed() {
        let args = Args::parse_from(["sliced", "--config", "contrib/sliced.toml"]);
        let config = Config::resolve(&args).expect("the shipped file resolves");
        assert_eq!(config.data_dir.root(), Path::new("/var/lib/sliced"));
        assert_eq!(config.developer_login, Some(false));
    }

    #[test]
    fn every_setting_in_the_shipped_config_is_a_real_key() {
        let text = uncommented();
        assert!(
            text.matches(" = ").count() > 30,
            "the settings were uncommented"
        );
        if let Err(err) = toml::from_str::<FileConfig>(&text) {
            panic!("contrib/sliced.toml with every setting uncommented: {err}");
        }
    }

    #[test]
    fn every_real_key_is_in_the_shipped_config() {
        let table: toml::Table = uncommented().parse().expect("TOML");
        for section in ["", "auth", "controller", "store", "cluster"] {
            let present = if section.is_empty() {
                &table
            } else {
                table[section].as_table().expect("a section is a table")
            };
            for key in accepted_keys(section) {
                assert!(
                    present.contains_key(&key),
                    "contrib/sliced.toml does not describe {section}.{key}"
                );
            }
        }
    }
}
