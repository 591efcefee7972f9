//! The daemon's settings: command-line flags over `SLICED_DB` over the TOML file named by
//! `--config` over built-in defaults.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use serde::Deserialize;
use slice_store::DataDir;

pub const DEFAULT_HTTP: &str = "127.0.0.1:9292";
pub const DEFAULT_OPENFLOW: &str = "0.0.0.0:6653";
pub const DEFAULT_MAX_HTTP_CONNECTIONS: usize = 512;

/// sliced: a routing-switch OpenFlow controller with virtual slicing.
#[derive(Debug, Parser)]
#[command(version, about, after_help = EXAMPLES)]
pub struct Args {
    /// Data directory (database, local socket, session key) [default: per-user data dir]
    #[arg(long, env = "SLICED_DB", value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Address of the REST API [default: 127.0.0.1:9292]
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// Address where OpenFlow switches connect [default: 0.0.0.0:6653]
    #[arg(long, value_name = "ADDR")]
    pub openflow: Option<String>,
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
    /// Another name clients may use for the daemon in Host (repeatable) [default: the
    /// --http address, localhost, 127.0.0.1, [::1]]
    #[arg(long = "allowed-host", value_name = "NAME")]
    pub allowed_hosts: Vec<String>,
    /// Most HTTP connections served at once; more wait to be accepted [default: 512]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_http_connections: Option<u64>,
    /// Seconds a client may take to send a request's head, and then its body [default: 10]
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub request_timeout: Option<u64>,
    /// Session lifetime in seconds, instead of auth.session_ttl_hours [default: 43200]
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub session_ttl_seconds: Option<u64>,
}

const EXAMPLES: &str = "Examples:
  sliced                                  # foreground, defaults
  sliced --db /var/lib/sliced -d --pid-file /run/sliced.pid
  sliced --config /etc/sliced.toml
  RUST_LOG=debug sliced --http 0.0.0.0:9292";

/// The settings file. Every key is optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    db: Option<PathBuf>,
    http: Option<String>,
    openflow: Option<String>,
    pid_file: Option<PathBuf>,
    log_file: Option<PathBuf>,
    slicing: Option<bool>,
    allowed_hosts: Option<Vec<String>>,
    max_http_connections: Option<u64>,
    request_timeout: Option<u64>,
    #[serde(default)]
    auth: AuthFile,
    #[serde(default)]
    controller: ControllerFile,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ControllerFile {
    lldp_interval_ms: Option<u64>,
    idle_timeout: Option<u16>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct AuthFile {
    require_for_slices: Option<bool>,
    developer_login: Option<bool>,
    secure_cookie: Option<bool>,
    session_key_file: Option<PathBuf>,
    session_ttl_hours: Option<i64>,
    session_ttl_seconds: Option<u64>,
}

/// Everything the daemon needs to know, resolved.
#[derive(Debug, Clone)]
pub struct Config {
    pub data_dir: DataDir,
    pub http: String,
    pub openflow: String,
    pub pid_file: Option<PathBuf>,
    pub log_file: Option<PathBuf>,
    pub slicing: bool,
    pub lldp_interval_ms: u64,
    pub idle_timeout: u16,
    pub require_auth: bool,
    pub developer_login: bool,
    pub secure_cookie: bool,
    pub session_key_file: PathBuf,
    pub session_ttl: Duration,
    pub allowed_hosts: Vec<String>,
    pub max_http_connections: usize,
    pub request_timeout: Duration,
}

impl Config {
    pub fn resolve(args: &Args) -> anyhow::Result<Self> {
        let file = match &args.config {
            Some(path) => read_file(path)?,
            None => FileConfig::default(),
        };
        let data_dir = DataDir::resolve(args.db.clone().or(file.db));
        let session_ttl = session_ttl(args, &file.auth)?;
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
        let allowed_hosts = if args.allowed_hosts.is_empty() {
            file.allowed_hosts.clone().unwrap_or_default()
        } else {
            args.allowed_hosts.clone()
        };
        let lldp_interval_ms = args
            .lldp_interval_ms
            .or(file.controller.lldp_interval_ms)
            .unwrap_or(1000);
        anyhow::ensure!(
            (50..=60_000).contains(&lldp_interval_ms),
            "controller.lldp_interval_ms must be between 50 and 60000"
        );
        let idle_timeout = args
            .idle_timeout
            .or(file.controller.idle_timeout)
            .unwrap_or(60);
        anyhow::ensure!(
            idle_timeout > 0,
            "controller.idle_timeout must be at least 1"
        );
        Ok(Self {
            http: args
                .http
                .clone()
                .or(file.http)
                .unwrap_or(DEFAULT_HTTP.into()),
            openflow: args
                .openflow
                .clone()
                .or(file.openflow)
                .unwrap_or(DEFAULT_OPENFLOW.into()),
            pid_file: args.pid_file.clone().or(file.pid_file),
            log_file: args.log_file.clone().or(file.log_file),
            slicing: !args.no_slicing && file.slicing.unwrap_or(true),
            lldp_interval_ms,
            idle_timeout,
            require_auth: args.require_auth || file.auth.require_for_slices.unwrap_or(false),
            developer_login: !args.no_developer_login && file.auth.developer_login.unwrap_or(true),
            secure_cookie: file.auth.secure_cookie.unwrap_or(false),
            session_key_file: file
                .auth
                .session_key_file
                .unwrap_or_else(|| data_dir.session_key_path()),
            session_ttl,
            allowed_hosts,
            max_http_connections,
            request_timeout,
            data_dir,
        })
    }
}

/// The session lifetime: `--session-ttl-seconds`, or one of `auth.session_ttl_seconds`
/// and `auth.session_ttl_hours`, at most a year.
fn session_ttl(args: &Args, auth: &AuthFile) -> anyhow::Result<Duration> {
    const HOUR: u64 = 3600;
    const YEAR: u64 = 24 * 365 * HOUR;
    let seconds = match (
        args.session_ttl_seconds,
        auth.session_ttl_seconds,
        auth.session_ttl_hours,
    ) {
        (Some(seconds), _, _) | (None, Some(seconds), None) => seconds,
        (None, Some(_), Some(_)) => {
            anyhow::bail!("set auth.session_ttl_hours or auth.session_ttl_seconds, not both")
        }
        (None, None, Some(hours)) => {
            anyhow::ensure!(
                (1..=24 * 365).contains(&hours),
                "auth.session_ttl_hours must be between 1 and 8760"
            );
            hours.unsigned_abs() * HOUR
        }
        (None, None, None) => return Ok(slice_http::DEFAULT_SESSION_TTL),
    };
    anyhow::ensure!(
        (1..=YEAR).contains(&seconds),
        "the session lifetime must be between 1 second and 8760 hours"
    );
    Ok(Duration::from_secs(seconds))
}

fn read_file(path: &Path) -> anyhow::Result<FileConfig> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read config file {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("invalid config file {}", path.display()))
}
