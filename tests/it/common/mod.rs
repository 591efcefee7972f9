//! What the black-box tests share: starting the real `sliced` binary on a temporary data
//! directory and a free port, and reaching it over real sockets.

pub(crate) mod in_process;
pub(crate) mod switch;
pub(crate) mod tls;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub(crate) const SLICED: &str = env!("CARGO_BIN_EXE_sliced");
pub(crate) const SLICE: &str = env!("CARGO_BIN_EXE_slice");

/// How long a daemon may take to come up on a loaded two-core machine.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running `sliced`, stopped (SIGKILL) when dropped.
pub(crate) struct Daemon {
    child: Option<Child>,
    pub http: SocketAddr,
    pub openflow: SocketAddr,
    pub data_dir: PathBuf,
}

/// A port that was free a moment ago. The kernel hands out ports in sequence, so a port
/// just released is not handed to another test right away.
/// A loopback port that nothing listens on, for a daemon about to be started.
///
/// Not one the kernel picks (port 0): those come from its ephemeral range, the range every
/// outgoing connection of every other test takes its local port from, so one of them
/// could take the port between this check and the daemon's bind (CI saw "Address already
/// in use"). Ports are handed out in turn from below that range (Linux's default starts
/// at 32768), from an offset that differs between test processes, and each is checked
/// to be free.
pub(crate) fn free_port() -> SocketAddr {
    use std::sync::atomic::{AtomicU32, Ordering};
    const FIRST: u32 = 20_000;
    const SPAN: u32 = 12_000;
    static HANDED_OUT: AtomicU32 = AtomicU32::new(0);
    let offset = std::process::id() % 60 * 200;
    for _ in 0..SPAN {
        let turn = HANDED_OUT.fetch_add(1, Ordering::Relaxed);
        // In range by construction: FIRST + (a value below SPAN) stays below 32,000.
        let port = u16::try_from(FIRST + (offset + turn) % SPAN).unwrap_or(0);
        if let Ok(addr) = TcpListener::bind(("127.0.0.1", port)).and_then(|l| l.local_addr()) {
            return addr;
        }
    }
    panic!("no free loopback port between {FIRST} and {}", FIRST + SPAN)
}

impl Daemon {
    pub(crate) fn start(data_dir: &Path) -> Self {
        Self::start_with(data_dir, &[])
    }

    /// Starts `sliced` in the foreground with `extra` arguments and waits until both its
    /// HTTP port and its local socket answer.
    pub(crate) fn start_with(data_dir: &Path, extra: &[&str]) -> Self {
        Self::launch(data_dir, free_port(), extra, true, Stdio::inherit())
    }

    /// Starts on a given HTTP address, for a restart that clients must find again.
    pub(crate) fn start_with_http(data_dir: &Path, http: SocketAddr) -> Self {
        Self::launch(data_dir, http, &[], true, Stdio::inherit())
    }

    /// Starts with the daemon's log (stderr) going to `log`; without an `--openflow` flag
    /// of the helper's own unless `plain_openflow`, so that the test decides about plain
    /// TCP (`openflow` is then a free port nobody listens on).
    pub(crate) fn start_logged(
        data_dir: &Path,
        extra: &[&str],
        plain_openflow: bool,
        log: &Path,
    ) -> Self {
        let log = std::fs::File::create(log).expect("the log file can be created");
        Self::launch(data_dir, free_port(), extra, plain_openflow, log.into())
    }

    /// Starts with `RUST_LOG=filter`, the daemon's log going to `log`.
    pub(crate) fn start_filtered(data_dir: &Path, filter: &str, log: &Path) -> Self {
        let log = std::fs::File::create(log).expect("the log file can be created");
        let mut daemon = Self::spawn(data_dir, free_port(), &[], true, log.into(), filter);
        daemon.wait_until_ready();
        daemon
    }

    /// Starts with `extra` arguments and `RUST_LOG=filter`, the daemon's log going to
    /// `log`.
    pub(crate) fn start_filtered_with(
        data_dir: &Path,
        extra: &[&str],
        filter: &str,
        log: &Path,
    ) -> Self {
        let log = std::fs::File::create(log).expect("the log file can be created");
        let mut daemon = Self::spawn(data_dir, free_port(), extra, true, log.into(), filter);
        daemon.wait_until_ready();
        daemon
    }

    /// Starts listening for HTTP on `http` (such as `[::]:port`) with `extra` arguments and
    /// `RUST_LOG=filter`, the daemon's log going to `log`.
    pub(crate) fn start_filtered_on(
        data_dir: &Path,
        http: SocketAddr,
        extra: &[&str],
        filter: &str,
        log: &Path,
    ) -> Self {
        let log = std::fs::File::create(log).expect("the log file can be created");
        let mut daemon = Self::spawn(data_dir, http, extra, true, log.into(), filter);
        daemon.wait_until_ready();
        daemon
    }

    fn launch(
        data_dir: &Path,
        http: SocketAddr,
        extra: &[&str],
        plain_openflow: bool,
        stderr: Stdio,
    ) -> Self {
        // SLICED_TEST_LOG=debug shows the daemon's log when a test needs a look inside.
        let filter = std::env::var("SLICED_TEST_LOG").unwrap_or_else(|_| "warn".into());
        let mut daemon = Self::spawn(data_dir, http, extra, plain_openflow, stderr, &filter);
        daemon.wait_until_ready();
        daemon
    }

    fn spawn(
        data_dir: &Path,
        http: SocketAddr,
        extra: &[&str],
        plain_openflow: bool,
        stderr: Stdio,
        filter: &str,
    ) -> Self {
        let openflow = free_port();
        let mut command = Command::new(SLICED);
        command
            .arg("--db")
            .arg(data_dir)
            .arg("--http")
            .arg(http.to_string());
        if plain_openflow {
            command.arg("--openflow").arg(openflow.to_string());
        }
        let child = command
            .args(extra)
            .env("RUST_LOG", filter)
            .stdin(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("sliced starts");
        Self {
            child: Some(child),
            http,
            openflow,
            data_dir: data_dir.to_owned(),
        }
    }

    fn wait_until_ready(&mut self) {
        let socket = self.data_dir.join("sliced.sock");
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!("sliced exited during start-up: {status}");
            }
            let http_up = TcpStream::connect(self.http).is_ok();
            let socket_up = std::os::unix::net::UnixStream::connect(&socket).is_ok();
            if http_up && socket_up {
                return;
            }
            assert!(Instant::now() < deadline, "sliced did not come up in time");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// GET `path` over HTTP, asserting 200, as JSON.
    pub(crate) fn get_json(&self, path: &str) -> serde_json::Value {
        let (status, body) = status_json(agent().get(&self.url(path)).call());
        assert_eq!(status, 200, "GET {path}: {body}");
        body
    }

    /// Puts `mac` on `port` of `slice` through REST, creating the slice if needed.
    pub(crate) fn add_host(&self, slice: &str, port: &str, mac: &str) {
        let (status, body) = status_json(
            agent()
                .post(&self.url("/slices"))
                .send_json(serde_json::json!({ "name": slice })),
        );
        assert!(status == 201 || status == 409, "POST /slices: {body}");
        let path = format!("/slices/{slice}/ports/{port}/mac_addresses");
        let (status, body) = status_json(
            agent()
                .post(&self.url(&path))
                .send_json(serde_json::json!({ "name": mac })),
        );
        assert_eq!(status, 201, "POST {path}: {body}");
    }

    /// `GET /topology/switches` without each switch's drop counters and PACKET_IN meter
    /// flag, for the tests that compare the switches exactly and cause no drops.
    /// Switch `dpid` as `/topology/switches` shows it, or None while it is not connected.
    pub(crate) fn switch_view(&self, dpid: u64) -> Option<serde_json::Value> {
        self.get_json("/topology/switches")
            .as_array()?
            .iter()
            .find(|switch| switch["dpid"] == dpid)
            .cloned()
    }

    pub(crate) fn switches_without_drops(&self) -> serde_json::Value {
        let mut switches = self.get_json("/topology/switches");
        for switch in switches.as_array_mut().into_iter().flatten() {
            if let Some(switch) = switch.as_object_mut() {
                switch.remove("dropped");
                switch.remove("packet_in_meter");
                switch.remove("pipeline_entries");
            }
        }
        switches
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.http, path)
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// SIGTERM, then waits for a clean exit and returns its status.
    pub(crate) fn terminate(mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("daemon still running");
        signal(child.id(), "TERM");
        wait_with_timeout(&mut child, START_TIMEOUT).expect("sliced stops on SIGTERM")
    }

    /// Waits up to `timeout` for the daemon to exit by itself; it is killed on drop if it
    /// has not.
    pub(crate) fn exit_within(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let child = self.child.as_mut().expect("daemon still running");
        let status = wait_with_timeout(child, timeout)?;
        self.child = None;
        Some(status)
    }

    /// Hands over the process, for a test that stops it some other way.
    pub(crate) fn into_child(mut self) -> Child {
        self.child.take().expect("daemon still running")
    }

    /// SIGKILL: no chance to flush anything.
    pub(crate) fn kill9(mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

pub(crate) fn signal(pid: u32, name: &str) {
    let status = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(pid.to_string())
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill -{name} {pid} failed");
}

pub(crate) fn wait_with_timeout(
    child: &mut Child,
    timeout: Duration,
) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `sliced` on the data directory `db` (and a free HTTP port) with `args` that must
/// stop it during start-up; returns what it wrote to stderr.
pub(crate) fn refused_start(db: &Path, args: &[&str]) -> String {
    let mut child = Command::new(SLICED)
        .arg("--db")
        .arg(db)
        .args(["--http", &free_port().to_string()])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sliced starts");
    // Its stderr is read after it exits: a refusal writes a few lines, far below a pipe's
    // buffer.
    let status = wait_with_timeout(&mut child, Duration::from_secs(30)).unwrap_or_else(|| {
        let _ = child.kill();
        panic!("sliced {args:?} did not stop")
    });
    assert!(!status.success(), "sliced {args:?} exited 0");
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        std::io::Read::read_to_string(&mut pipe, &mut stderr).expect("stderr is text");
    }
    stderr
}

/// Runs the `slice` tool on `data_dir` and returns what it did.
pub(crate) fn slice(data_dir: &Path, args: &[&str]) -> Output {
    Command::new(SLICE)
        .arg("--db")
        .arg(data_dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("slice runs")
}

/// The sample `name` (a metric's whole name with its suffix, no labels) in the daemon's
/// `GET /metrics`, or None when it has none.
pub(crate) fn metric(daemon: &Daemon, name: &str) -> Option<f64> {
    let text = agent()
        .get(&daemon.url("/metrics"))
        .call()
        .unwrap()
        .into_string()
        .unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .map(|value| value.trim().parse().unwrap())
}

/// An HTTP agent that does not turn 4xx/5xx into errors and keeps cookies.
pub(crate) fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(30))
        .build()
}

/// A response's status and body as JSON (Null when the body is not JSON).
pub(crate) fn status_json(result: Result<ureq::Response, ureq::Error>) -> (u16, serde_json::Value) {
    let response = match result {
        Ok(response) => response,
        Err(ureq::Error::Status(_, response)) => response,
        Err(other) => panic!("request failed: {other}"),
    };
    let status = response.status();
    let body = response.into_string().unwrap_or_default();
    (
        status,
        serde_json::from_str(&body).unwrap_or(serde_json::Value::Null),
    )
}

/// Sends `method path` over the daemon's local socket in `data_dir`, with `headers`
/// (`Name: value` each) and a JSON `body` if given; the answer's status and its body as
/// JSON (Null when the body is not JSON).
pub(crate) fn local_request(
    data_dir: &Path,
    method: &str,
    path: &str,
    headers: &[&str],
    body: Option<&serde_json::Value>,
) -> (u16, serde_json::Value) {
    use std::io::{Read, Write};
    let mut stream = std::os::unix::net::UnixStream::connect(data_dir.join("sliced.sock"))
        .expect("the local socket answers");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("a read timeout");
    let body = body.map(ToString::to_string).unwrap_or_default();
    let mut request =
        format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
    for header in headers {
        request.push_str(&format!("{header}\r\n"));
    }
    if !body.is_empty() {
        request.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    stream
        .write_all(request.as_bytes())
        .expect("the request is sent");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("an answer");
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {answer}"));
    let json = answer
        .split_once("\r\n\r\n")
        .and_then(|(_, body)| serde_json::from_str(body).ok())
        .unwrap_or(serde_json::Value::Null);
    (status, json)
}

/// Overwrites the first 4 KiB of the database's log (`<data dir>/store/db`, sled's one data
/// file) with noise, as a failing disk or a stray `dd` would, and returns every file of
/// the store with its bytes, to show later that nothing was rewritten.
pub(crate) fn damage_start_of_log(data_dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    use std::io::{Seek, SeekFrom, Write};
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let noise: Vec<u8> = (0..4096)
        .map(|_| {
            // xorshift64: fixed, so that every run damages alike.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect();
    let store = data_dir.join("store");
    let mut log = std::fs::OpenOptions::new()
        .write(true)
        .open(store.join("db"))
        .expect("the database's log exists");
    log.seek(SeekFrom::Start(0)).unwrap();
    log.write_all(&noise).unwrap();
    log.sync_all().unwrap();
    files_with_bytes(data_dir)
}

/// Every file under `dir`, sorted, with its bytes.
pub(crate) fn files_with_bytes(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                files.push((path, bytes));
            }
        }
    }
    files.sort();
    files
}

/// Overwrites 8 bytes in the middle of what the database's log holds (half way to its
/// last byte that is not zero: sled's log file is mostly preallocated zeros), as a
/// failing disk would, and returns every file of the data directory with its bytes.
pub(crate) fn damage_middle_of_log(data_dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    use std::io::{Seek, SeekFrom, Write};
    let path = data_dir.join("store").join("db");
    let bytes = std::fs::read(&path).expect("the database's log exists");
    let written = bytes.iter().rposition(|&byte| byte != 0).unwrap_or(0);
    let middle = u64::try_from(written / 2).expect("a log fits in u64");
    let mut log = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    log.seek(SeekFrom::Start(middle)).unwrap();
    log.write_all(&[0xde, 0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef])
        .unwrap();
    log.sync_all().unwrap();
    files_with_bytes(data_dir)
}

/// Cuts the database's log to half its length, as a copy that stopped half way would
/// leave it, and returns every file of the data directory with its bytes.
pub(crate) fn cut_log_in_half(data_dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let path = data_dir.join("store").join("db");
    let log = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    let len = log.metadata().unwrap().len();
    log.set_len(len / 2).unwrap();
    log.sync_all().unwrap();
    files_with_bytes(data_dir)
}

/// Copies the header of the first segment of the database's log over the second's (sled
/// 0.34's segments are 512 KiB), as a write sent to the wrong place would, and returns
/// every file of the data directory with its bytes. The log must span two segments.
pub(crate) fn duplicate_first_segment_header(data_dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    use std::os::unix::fs::FileExt;
    const SEGMENT: u64 = 512 * 1024;
    // A CRC-32, the segment's first LSN and the highest stable LSN.
    let mut header = [0u8; 20];
    let path = data_dir.join("store").join("db");
    let log = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    assert!(
        log.metadata().unwrap().len() > SEGMENT + 20,
        "a log of one segment"
    );
    log.read_exact_at(&mut header, 0).unwrap();
    log.write_all_at(&header, SEGMENT).unwrap();
    log.sync_all().unwrap();
    files_with_bytes(data_dir)
}

/// Whether this test runs as root, which it needs to make files another user owns. In
/// CI (`CI=true`, as root) not being root is a failure; elsewhere the test says loudly
/// that it did not run.
pub(crate) fn running_as_root(test: &str) -> bool {
    if slice_store::effective_uid() == 0 {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{test} must run as root in CI"
    );
    eprintln!("{test} NOT RUN: files of another user can be made only as root");
    false
}

/// The user files of "another user" belong to in the tests: nobody.
pub(crate) const ANOTHER_UID: u32 = 65534;

/// Writes `bytes` to `path` with `mode`, owned by [`ANOTHER_UID`], as another local
/// user would plant it.
pub(crate) fn plant(path: &Path, bytes: &[u8], mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, bytes).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    std::os::unix::fs::chown(path, Some(ANOTHER_UID), Some(ANOTHER_UID)).unwrap();
}
