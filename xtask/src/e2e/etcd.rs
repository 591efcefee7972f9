//! A cluster's etcd: real `etcd` members (Debian's `etcd-server`) on free loopback ports,
//! their data in the stage's directory, run as the lab's daemons (so that a signal or a
//! failed scenario stops them like any other) and stopped or restarted one by one to take
//! the quorum away and give it back.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context};

use super::sys::{self, Daemon};

/// How long a member may take to report itself healthy on a loaded two-core machine.
const HEALTHY_TIMEOUT: Duration = Duration::from_secs(30);

/// One member: its addresses and, while it runs, its process.
struct Member {
    name: String,
    data: PathBuf,
    log: PathBuf,
    client: SocketAddr,
    peer: SocketAddr,
    daemon: Option<Daemon>,
}

/// The members of one etcd cluster. Dropping it stops them all.
pub(super) struct EtcdCluster {
    members: Vec<Member>,
    /// `--initial-cluster`: every member's name and peer URL.
    initial_cluster: String,
}

impl EtcdCluster {
    /// Starts `size` members named e1, e2, ... in `dir` and waits until each is healthy.
    pub(super) fn start(dir: &Path, size: usize) -> anyhow::Result<EtcdCluster> {
        ensure!(size > 0, "an etcd cluster needs a member");
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        // Every listener is held until all ports are chosen, so that they differ.
        let listeners: Vec<(TcpListener, TcpListener)> = (0..size)
            .map(|_| Ok((free_port()?, free_port()?)))
            .collect::<anyhow::Result<_>>()?;
        let mut members = Vec::new();
        for (at, (client, peer)) in listeners.iter().enumerate() {
            let name = format!("e{}", at + 1);
            members.push(Member {
                data: dir.join(format!("{name}.data")),
                log: dir.join(format!("{name}.log")),
                name,
                client: client.local_addr()?,
                peer: peer.local_addr()?,
                daemon: None,
            });
        }
        drop(listeners);
        let initial_cluster = members
            .iter()
            .map(|m| format!("{}=http://{}", m.name, m.peer))
            .collect::<Vec<_>>()
            .join(",");
        let mut cluster = EtcdCluster {
            members,
            initial_cluster,
        };
        // All first: a member is healthy only once a quorum runs.
        for at in 0..size {
            cluster.spawn(at)?;
        }
        for at in 0..size {
            cluster.wait_healthy(at)?;
        }
        Ok(cluster)
    }

    /// The client endpoints, comma-separated, as `sliced --etcd` takes them.
    pub(super) fn endpoints(&self) -> String {
        self.members
            .iter()
            .map(|m| format!("http://{}", m.client))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Each member's client address.
    pub(super) fn clients(&self) -> Vec<std::net::SocketAddr> {
        self.members.iter().map(|m| m.client).collect()
    }

    pub(super) fn len(&self) -> usize {
        self.members.len()
    }

    pub(super) fn name(&self, at: usize) -> &str {
        &self.members[at].name
    }

    /// Kills member `at` (SIGKILL, as a crash or a pulled cable would) and waits until
    /// it is gone.
    pub(super) fn stop(&mut self, at: usize) {
        if let Some(mut daemon) = self.members[at].daemon.take() {
            daemon.stop(libc::SIGKILL, Duration::from_secs(5));
        }
    }

    /// Starts member `at` again on its data (after [`EtcdCluster::stop`]); returns at
    /// once: it is healthy only when a quorum runs, see [`EtcdCluster::wait_healthy`].
    pub(super) fn restart(&mut self, at: usize) -> anyhow::Result<()> {
        self.spawn(at)
    }

    /// Whether member `at` says it has a leader and serves (etcd's `/health`).
    pub(super) fn healthy(&self, at: usize) -> bool {
        let url = format!("http://{}/health", self.members[at].client);
        let agent = ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(2))
            .build();
        agent
            .get(&url)
            .call()
            .ok()
            .and_then(|response| response.into_string().ok())
            .is_some_and(|body| body.contains("\"health\":\"true\""))
    }

    /// Whether member `at` is etcd's leader now, as its own status says (the gRPC
    /// gateway's `/v3/maintenance/status`).
    pub(super) fn is_leader(&self, at: usize) -> anyhow::Result<bool> {
        let url = format!("http://{}/v3/maintenance/status", self.members[at].client);
        let agent = ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(2))
            .build();
        let body = agent
            .post(&url)
            .send_string("{}")
            .with_context(|| format!("etcd member {} status", self.members[at].name))?
            .into_string()?;
        let status: serde_json::Value = serde_json::from_str(&body)?;
        let member = status["header"]["member_id"].as_str();
        Ok(member.is_some() && member == status["leader"].as_str())
    }

    /// A member that is not etcd's leader: losing it elects nobody.
    pub(super) fn a_follower(&self) -> anyhow::Result<usize> {
        for at in (0..self.members.len()).rev() {
            if self.members[at].daemon.is_some() && !self.is_leader(at)? {
                return Ok(at);
            }
        }
        bail!("every running etcd member says it is the leader")
    }

    /// Waits until member `at` is healthy.
    pub(super) fn wait_healthy(&mut self, at: usize) -> anyhow::Result<()> {
        let started = Instant::now();
        loop {
            if let Some(daemon) = &mut self.members[at].daemon {
                if let Some(status) = daemon.exited() {
                    bail!(
                        "etcd member {} exited ({status}); see {}",
                        self.members[at].name,
                        self.members[at].log.display()
                    );
                }
            }
            if self.healthy(at) {
                return Ok(());
            }
            if started.elapsed() > HEALTHY_TIMEOUT {
                bail!(
                    "etcd member {} was not healthy within {HEALTHY_TIMEOUT:?}; see {}",
                    self.members[at].name,
                    self.members[at].log.display()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn spawn(&mut self, at: usize) -> anyhow::Result<()> {
        self.stop(at);
        let member = &self.members[at];
        let client = format!("http://{}", member.client);
        let peer = format!("http://{}", member.peer);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&member.log)
            .with_context(|| format!("cannot open {}", member.log.display()))?;
        let mut command = sys::command(
            "etcd",
            &[
                format!("--name={}", member.name),
                format!("--data-dir={}", member.data.display()),
                format!("--listen-client-urls={client}"),
                format!("--advertise-client-urls={client}"),
                format!("--listen-peer-urls={peer}"),
                format!("--initial-advertise-peer-urls={peer}"),
                format!("--initial-cluster={}", self.initial_cluster),
                "--initial-cluster-state=new".to_owned(),
            ],
        );
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        let label = format!("etcd {}", member.name);
        let daemon = Daemon::spawn(&mut command, &label)?;
        self.members[at].daemon = Some(daemon);
        Ok(())
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for at in 0..self.members.len() {
            self.stop(at);
        }
    }
}

fn free_port() -> anyhow::Result<TcpListener> {
    TcpListener::bind("127.0.0.1:0").context("cannot find a free port")
}
