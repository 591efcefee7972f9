//! The controller under test: the release `sliced` on a fresh data directory with free
//! HTTP and OpenFlow ports, its REST API, and the `slice` tool pointed at it.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, ensure, Context};
use serde_json::Value;

use super::pki::LabPki;
use super::sys::{self, Adopted, Daemon};

/// LLDP goes out this often in the lab, so that links are known within a second.
pub(super) const LLDP_INTERVAL_MS: &str = "200";

/// The binaries under test.
#[derive(Debug, Clone)]
pub(super) struct Bins {
    pub sliced: PathBuf,
    pub slice: PathBuf,
    /// Extra arguments for every sliced started (`--sliced-arg`).
    pub sliced_args: Vec<String>,
}

enum Process {
    /// Started by the lab in the foreground (its child).
    Child(Daemon),
    /// Started with `sliced -d`: the daemon is not the lab's child.
    Detached(Adopted),
}

pub(super) struct Controller {
    bins: Bins,
    /// Every argument it was started with, to start it again the same way.
    args: Vec<String>,
    data: PathBuf,
    log: PathBuf,
    pub http: SocketAddr,
    pub openflow_port: u16,
    /// Whether `openflow_port` speaks TLS (and plain TCP is off).
    pub tls: bool,
    process: Process,
    agent: ureq::Agent,
}

impl Controller {
    /// Starts `sliced` as a child and waits until its REST API answers; with `tls`, its
    /// switches connect over TLS only.
    pub(super) fn start(
        bins: &Bins,
        dir: &Path,
        tls: Option<&LabPki>,
    ) -> anyhow::Result<Controller> {
        Self::start_with(bins, dir, tls, &[])
    }

    /// [`Controller::start`] with more arguments for sliced (a cluster member's `--etcd`).
    pub(super) fn start_with(
        bins: &Bins,
        dir: &Path,
        tls: Option<&LabPki>,
        extra: &[String],
    ) -> anyhow::Result<Controller> {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let (http, openflow_port) = free_ports()?;
        let data = dir.join("data");
        let log = dir.join("sliced.log");
        let mut args = base_args(bins, &data, http, openflow_port, tls);
        args.extend(extra.iter().cloned());
        let process = Process::Child(spawn_child(bins, &args, &log)?);
        let mut controller = Self::new(
            bins,
            data,
            log,
            (http, openflow_port, tls.is_some()),
            process,
        );
        controller.args = args;
        controller.serving()
    }

    /// Stops this sliced with `signal` (SIGKILL: a crash) and waits until it is gone.
    pub(super) fn kill(&mut self, signal: libc::c_int) {
        match &mut self.process {
            Process::Child(daemon) => {
                daemon.stop(signal, Duration::from_secs(10));
            }
            Process::Detached(adopted) => {
                sys::signal(adopted.pid(), signal);
                sys::wait_gone(adopted.pid(), Duration::from_secs(10));
            }
        }
    }

    /// Stops this sliced with `signal`, then starts it again on the same data directory,
    /// ports and arguments (its log goes on in the same file), and waits until it serves.
    pub(super) fn restart(&mut self, signal: libc::c_int) -> anyhow::Result<()> {
        self.kill(signal);
        self.start_again()
    }

    /// Starts `sliced -d --pid-file <pid_file>` as an operator would: the command returns
    /// once the daemon serves and prints its pid. Returns the controller and that pid.
    pub(super) fn start_detached(
        bins: &Bins,
        dir: &Path,
        pid_file: &Path,
        tls: Option<&LabPki>,
    ) -> anyhow::Result<(Controller, u32)> {
        let (http, openflow_port) = free_ports()?;
        let data = dir.join("data");
        let log = dir.join("sliced.log");
        let mut command = command_with(bins, &base_args(bins, &data, http, openflow_port, tls));
        command
            .arg("-d")
            .arg("--pid-file")
            .arg(pid_file)
            .arg("--log-file")
            .arg(&log);
        let printed = sys::run(&mut command)?;
        let pid: u32 = printed
            .trim()
            .parse()
            .with_context(|| format!("`sliced -d` printed {printed:?}, not a pid"))?;
        // Recorded at once, so that the daemon is stopped whatever happens next; the
        // data directory is on its command line, which tells it from a reused pid.
        let adopted = Adopted::new(pid, &data.display().to_string(), "sliced -d");
        let process = Process::Detached(adopted);
        let addresses = (http, openflow_port, tls.is_some());
        let started = Self::new(bins, data, log, addresses, process).serving()?;
        Ok((started, pid))
    }

    fn new(
        bins: &Bins,
        data: PathBuf,
        log: PathBuf,
        (http, openflow_port, tls): (SocketAddr, u16, bool),
        process: Process,
    ) -> Controller {
        Controller {
            bins: bins.clone(),
            args: Vec::new(),
            data,
            log,
            http,
            openflow_port,
            tls,
            process,
            agent: agent(),
        }
    }

    /// Returns the controller once its REST API answers.
    fn serving(mut self) -> anyhow::Result<Controller> {
        self.wait_serving()?;
        Ok(self)
    }

    fn wait_serving(&mut self) -> anyhow::Result<()> {
        let served = sys::poll(Duration::from_secs(15), Duration::from_millis(20), || {
            self.check_running()?;
            Ok(matches!(self.request("GET", "/slices", None), Ok((200, _))).then_some(()))
        })?;
        if served.is_none() {
            bail!("sliced did not answer on http://{} within 15 s", self.http);
        }
        Ok(())
    }

    /// The daemon's process id.
    pub(super) fn pid(&self) -> u32 {
        match &self.process {
            Process::Child(daemon) => daemon.pid(),
            Process::Detached(adopted) => adopted.pid(),
        }
    }

    /// An error when the daemon has exited.
    pub(super) fn check_running(&mut self) -> anyhow::Result<()> {
        match &mut self.process {
            Process::Child(daemon) => {
                if let Some(status) = daemon.exited() {
                    bail!("sliced exited ({status})");
                }
            }
            Process::Detached(adopted) => {
                if !adopted.alive() {
                    bail!("sliced (pid {}) is gone", adopted.pid());
                }
            }
        }
        Ok(())
    }

    /// Starts a killed daemon again on the same data directory, ports and arguments
    /// (the switches are configured with its OpenFlow port), its log appended to the
    /// first one's, and waits until it serves.
    pub(super) fn start_again(&mut self) -> anyhow::Result<()> {
        ensure!(
            !self.args.is_empty(),
            "only a sliced the lab started in the foreground can be started again"
        );
        self.process = Process::Child(spawn_child(&self.bins, &self.args, &self.log)?);
        self.wait_serving()
    }

    pub(super) fn data_dir(&self) -> &Path {
        &self.data
    }

    /// One REST call: the status and the body, whatever the status.
    pub(super) fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> anyhow::Result<(u16, String)> {
        let url = format!("http://{}{path}", self.http);
        let request = self.agent.request(method, &url);
        let result = match body {
            Some(body) => request
                .set("Content-Type", "application/json")
                .send_string(&body.to_string()),
            None => request.call(),
        };
        let response = match result {
            Ok(response) => response,
            Err(ureq::Error::Status(_, response)) => response,
            Err(err) => return Err(err).with_context(|| format!("{method} {url}")),
        };
        let status = response.status();
        let text = response
            .into_string()
            .with_context(|| format!("{method} {url}: cannot read the response"))?;
        Ok((status, text))
    }

    /// A REST call that must answer `expected`; returns the body.
    pub(super) fn rest(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
        expected: u16,
    ) -> anyhow::Result<String> {
        let (status, text) = self.request(method, path, body.as_ref())?;
        if status != expected {
            bail!(
                "{method} {path} {}: answered {status} (expected {expected}): {}",
                body.map(|b| b.to_string()).unwrap_or_default(),
                text.trim()
            );
        }
        Ok(text)
    }

    /// A GET that must answer 200 with JSON.
    pub(super) fn view(&self, path: &str) -> anyhow::Result<Value> {
        let text = self.rest("GET", path, None, 200)?;
        serde_json::from_str(&text).with_context(|| format!("GET {path} is not JSON: {text}"))
    }

    /// The datapath ids of the switches connected at OpenFlow version `wire` (the
    /// version byte: 1 or 4).
    pub(super) fn switches_at(&self, wire: u64) -> anyhow::Result<std::collections::BTreeSet<u64>> {
        Ok(self
            .view("/topology/switches")?
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| s.get("version").and_then(Value::as_u64) == Some(wire))
            .filter_map(|s| s.get("dpid")?.as_u64())
            .collect())
    }

    /// The links the controller knows, as (source, destination) port names in lowercase.
    pub(super) fn links(&self) -> anyhow::Result<std::collections::BTreeSet<(String, String)>> {
        let links = self.view("/topology/links")?;
        Ok(links
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|link| {
                let src = link.get("src")?.as_str()?.to_ascii_lowercase();
                let dst = link.get("dst")?.as_str()?.to_ascii_lowercase();
                Some((src, dst))
            })
            .collect())
    }

    /// Runs the `slice` tool on this daemon's data directory; returns what it printed.
    pub(super) fn tool(&self, args: &[&str]) -> anyhow::Result<String> {
        let mut command = sys::command(&self.bins.slice.display().to_string(), &["--db"]);
        command.arg(&self.data).args(args);
        sys::run(&mut command)
    }

    pub(super) fn log_path(&self) -> &Path {
        &self.log
    }

    /// The last `lines` lines of its log.
    pub(super) fn log_tail(&self, lines: usize) -> String {
        match std::fs::read_to_string(&self.log) {
            Ok(text) => {
                let all: Vec<&str> = text.lines().collect();
                all[all.len().saturating_sub(lines)..].join("\n")
            }
            Err(err) => format!("(cannot read {}: {err})", self.log.display()),
        }
    }
}

/// sliced's arguments for this data directory and these ports.
fn base_args(
    bins: &Bins,
    data: &Path,
    http: SocketAddr,
    openflow_port: u16,
    tls: Option<&LabPki>,
) -> Vec<String> {
    let mut args = vec![
        "--db".to_owned(),
        data.display().to_string(),
        "--http".to_owned(),
        http.to_string(),
    ];
    match tls {
        Some(pki) => args.extend(pki.sliced_args(openflow_port)),
        None => args.extend([
            "--openflow".to_owned(),
            format!("127.0.0.1:{openflow_port}"),
        ]),
    }
    args.extend(["--lldp-interval-ms".to_owned(), LLDP_INTERVAL_MS.to_owned()]);
    args.extend([
        "--verification-interval".to_owned(),
        super::oracle::VERIFICATION_INTERVAL_SECS.to_owned(),
        "--verification-list-limit".to_owned(),
        super::oracle::VERIFICATION_LIST_LIMIT.to_owned(),
    ]);
    args.extend(bins.sliced_args.iter().cloned());
    args
}

/// sliced with these arguments, in the lab's environment.
fn command_with(bins: &Bins, args: &[String]) -> std::process::Command {
    let mut command = std::process::Command::new(&bins.sliced);
    command
        .args(args)
        // The lab's own environment must not leak a database, an etcd or a config into
        // the test.
        .env_remove("SLICED_DB")
        .env_remove("SLICED_ETCD");
    if std::env::var_os("RUST_LOG").is_none() {
        command.env("RUST_LOG", "info,actix_server=warn");
    }
    command
}

/// Starts sliced in the foreground, its output appended to `log`.
fn spawn_child(bins: &Bins, args: &[String], log: &Path) -> anyhow::Result<Daemon> {
    let log_file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("cannot open {}", log.display()))?;
    let mut command = command_with(bins, args);
    command
        .stdin(Stdio::null())
        .stdout(log_file.try_clone()?)
        .stderr(log_file);
    Daemon::spawn(&mut command, "sliced")
}

/// Two free TCP ports on loopback (asked of the kernel, held until both are known).
fn free_ports() -> anyhow::Result<(SocketAddr, u16)> {
    let http = TcpListener::bind("127.0.0.1:0").context("cannot find a free port")?;
    let openflow = TcpListener::bind("127.0.0.1:0").context("cannot find a free port")?;
    Ok((http.local_addr()?, openflow.local_addr()?.port()))
}

fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(10))
        .build()
}
