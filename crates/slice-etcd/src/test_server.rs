//! A private etcd for tests: one `etcd` process on free loopback ports with a temporary
//! data directory, killed when dropped. Only built with the `test-server` feature.
//!
//! The tests need the real `etcd` binary (Debian package `etcd-server`, which `.ci/run`
//! installs): without it they fail with a message that says so, rather than pass having
//! tested nothing.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long etcd may take to come up on a loaded two-core machine.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running etcd member: alone, or one of a [`LocalEtcd::cluster`].
pub struct LocalEtcd {
    child: Option<Child>,
    dir: tempfile::TempDir,
    name: String,
    client: SocketAddr,
    peer: SocketAddr,
    /// Where `/health` is served over plain HTTP, whatever the client URL needs.
    metrics: SocketAddr,
    /// `--initial-cluster`: every member's name and peer URL.
    initial_cluster: String,
    tls: Option<ServerTls>,
}

/// The files of an etcd that serves clients over TLS, as production does.
#[derive(Debug, Clone)]
pub struct ServerTls {
    /// etcd's certificate and key (PEM), for `127.0.0.1`.
    pub cert: PathBuf,
    pub key: PathBuf,
    /// The CA client certificates must chain to (`--trusted-ca-file`).
    pub client_ca: PathBuf,
    /// `--client-cert-auth`: a client shows a certificate of that CA, and its common name
    /// is its user once authentication is on.
    pub client_cert_auth: bool,
}

impl LocalEtcd {
    /// Starts an etcd of one member and waits until it reports itself healthy. Panics,
    /// naming the cause, when it cannot: this is a test fixture.
    pub fn start() -> Self {
        let mut members = Self::cluster(1);
        members.remove(0)
    }

    /// Starts an etcd of one member that serves clients over TLS only.
    pub fn start_tls(tls: ServerTls) -> Self {
        let mut member = Self::unstarted(1).remove(0);
        member.tls = Some(tls);
        member.spawn();
        member.wait_until_healthy();
        member
    }

    /// Starts a cluster of `size` members and waits until each reports itself healthy.
    pub fn cluster(size: usize) -> Vec<Self> {
        let mut members = Self::unstarted(size);
        // All first: a member of a cluster is healthy only once a quorum runs.
        for member in &mut members {
            member.spawn();
        }
        for member in &mut members {
            member.wait_until_healthy();
        }
        members
    }

    fn unstarted(size: usize) -> Vec<Self> {
        // Every listener is held until all ports are chosen, so that they differ.
        let ports: Vec<(TcpListener, TcpListener, TcpListener)> = (0..size)
            .map(|_| (free_port(), free_port(), free_port()))
            .collect();
        let address =
            |listener: &TcpListener| listener.local_addr().expect("a bound port has an address");
        let initial_cluster = ports
            .iter()
            .enumerate()
            .map(|(at, (_, peer, _))| format!("member{at}=http://{}", address(peer)))
            .collect::<Vec<_>>()
            .join(",");
        let members: Vec<Self> = ports
            .iter()
            .enumerate()
            .map(|(at, (client, peer, metrics))| Self {
                child: None,
                dir: tempfile::tempdir().expect("a temporary directory for etcd"),
                name: format!("member{at}"),
                client: address(client),
                peer: address(peer),
                metrics: address(metrics),
                initial_cluster: initial_cluster.clone(),
                tls: None,
            })
            .collect();
        drop(ports);
        members
    }

    /// The endpoint to give the client: `http://127.0.0.1:<port>`, or `https://` when
    /// it serves TLS.
    pub fn endpoint(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.client)
    }

    /// Runs `etcdctl` against this member with `args` (after `--endpoints` and, with TLS,
    /// `--cacert`), as an operator would; its output, or a panic naming the failure.
    pub fn etcdctl(
        &self,
        tls_client: Option<(&std::path::Path, &std::path::Path)>,
        args: &[&str],
    ) -> String {
        let mut command = Command::new("etcdctl");
        command
            .env("ETCDCTL_API", "3")
            .arg(format!("--endpoints={}", self.endpoint()));
        if let Some(tls) = &self.tls {
            command.arg(format!("--cacert={}", tls.client_ca.display()));
        }
        if let Some((cert, key)) = tls_client {
            command
                .arg(format!("--cert={}", cert.display()))
                .arg(format!("--key={}", key.display()));
        }
        let output = command.args(args).output().unwrap_or_else(|err| {
            panic!(
                "cannot run `etcdctl` ({err}): the locked-down etcd tests need it \
                 (apt-get install etcd-client; .ci/run installs it)"
            )
        });
        assert!(
            output.status.success(),
            "etcdctl {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Kills etcd (SIGKILL, as a crash would) and waits for it to be gone.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts etcd again on the same ports and data (after [`LocalEtcd::stop`]) and
    /// waits until it is healthy, which for a cluster member needs a quorum running.
    pub fn restart(&mut self) {
        self.spawn();
        self.wait_until_healthy();
    }

    fn spawn(&mut self) {
        self.stop();
        let client = self.endpoint();
        let peer = format!("http://{}", self.peer);
        let log = std::fs::File::create(self.dir.path().join("etcd.log"))
            .expect("etcd's log file can be created");
        let child = Command::new("etcd")
            .arg(format!("--name={}", self.name))
            .arg(format!(
                "--data-dir={}",
                self.dir.path().join("data").display()
            ))
            .arg(format!("--listen-client-urls={client}"))
            .arg(format!("--advertise-client-urls={client}"))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster={}", self.initial_cluster))
            .arg(format!("--listen-metrics-urls=http://{}", self.metrics))
            .args(self.tls.iter().flat_map(|tls| {
                let mut args = vec![
                    format!("--cert-file={}", tls.cert.display()),
                    format!("--key-file={}", tls.key.display()),
                    format!("--trusted-ca-file={}", tls.client_ca.display()),
                ];
                if tls.client_cert_auth {
                    args.push("--client-cert-auth".to_owned());
                }
                args
            }))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|err| {
                panic!(
                    "cannot run `etcd` ({err}): the etcd tests need it \
                     (apt-get install etcd-server; .ci/run installs it)"
                )
            });
        self.child = Some(child);
    }

    /// Whether this member says it has a leader and serves, as etcd's `/health` does.
    pub fn is_healthy(&self) -> bool {
        healthy(self.metrics)
    }

    fn wait_until_healthy(&mut self) {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|child| child.try_wait().ok().flatten())
            {
                let log = std::fs::read_to_string(self.dir.path().join("etcd.log"));
                panic!(
                    "etcd exited during start-up ({status}): {}",
                    log.unwrap_or_default()
                );
            }
            if healthy(self.metrics) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "etcd did not become healthy in time"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for LocalEtcd {
    fn drop(&mut self) {
        self.stop();
    }
}

fn free_port() -> TcpListener {
    TcpListener::bind("127.0.0.1:0").expect("a free loopback port")
}

/// Whether etcd's `/health` says it has a leader and serves.
fn healthy(client: SocketAddr) -> bool {
    let Ok(mut stream) = TcpStream::connect(client) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream
        .write_all(b"GET /health HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.contains("\"health\":\"true\"")
}

/// Polls `state` until `check` holds or `within` has passed; the last state either way.
pub fn poll<T>(within: Duration, mut state: impl FnMut() -> T, check: impl Fn(&T) -> bool) -> T {
    let deadline = Instant::now() + within;
    loop {
        let now = state();
        if check(&now) || Instant::now() > deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
