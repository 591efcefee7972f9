//! An authenticating proxy in front of the daemon (a real nginx with HTTP basic
//! authentication) names the user and their groups in headers; the daemon believes them
//! from the proxy's address alone, gives roles by the groups, and tells every write in
//! its audit trail with the user.

use std::io::Write as _;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};

use crate::common::{agent, free_port, slice, status_json, wait_with_timeout, Daemon};

/// The address the proxy connects from: the only one the daemon trusts. The test itself
/// connects from 127.0.0.1, so it can try the header without the proxy.
const PROXY_SOURCE: &str = "127.0.0.2";

/// A real nginx, stopped when dropped.
struct Nginx {
    child: Child,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Nginx {
    /// nginx on a free port in front of `upstream`, logging in `ada` (group `net-admins`)
    /// and `bob` (group `staff`) with the password `secret`. Below `/passing/` it forwards
    /// the client's headers as they came, as a proxy that does not overwrite them would.
    fn start(upstream: SocketAddr) -> Self {
        let dir = tempfile::tempdir().expect("a directory for nginx");
        let path = |name: &str| dir.path().join(name).display().to_string();
        std::fs::write(
            dir.path().join("htpasswd"),
            "ada:{PLAIN}secret\nbob:{PLAIN}secret\n",
        )
        .expect("the password file is written");
        let addr = free_port();
        let config = format!(
            r#"daemon off;
pid {pid};
error_log {error_log} warn;
events {{}}
http {{
    access_log off;
    client_body_temp_path {tmp};
    proxy_temp_path {tmp};
    map $remote_user $sliced_groups {{ ada net-admins; bob staff; default ""; }}
    server {{
        listen {addr};
        auth_basic "sliced";
        auth_basic_user_file {htpasswd};
        location / {{
            proxy_pass http://{upstream};
            proxy_bind {PROXY_SOURCE};
            proxy_buffering off;
            proxy_set_header X-Forwarded-User $remote_user;
            proxy_set_header X-Forwarded-Email $remote_user@example.com;
            proxy_set_header X-Forwarded-Groups $sliced_groups;
        }}
        # The proxy done wrong: the client's own headers pass through as they came.
        location /passing/ {{
            proxy_pass http://{upstream}/;
            proxy_bind {PROXY_SOURCE};
            proxy_buffering off;
        }}
    }}
}}
"#,
            pid = path("nginx.pid"),
            error_log = path("error.log"),
            tmp = path("tmp"),
            htpasswd = path("htpasswd"),
        );
        std::fs::write(dir.path().join("nginx.conf"), config).expect("the config is written");
        let child = Command::new("nginx")
            .arg("-p")
            .arg(dir.path())
            .arg("-e")
            .arg(path("error.log"))
            .arg("-c")
            .arg(path("nginx.conf"))
            .stdin(Stdio::null())
            // Its workers would hold the test's output open after it.
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nginx starts (apt-get install nginx-light)");
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(addr).is_err() {
            assert!(Instant::now() < deadline, "nginx did not come up");
            std::thread::sleep(Duration::from_millis(20));
        }
        Self {
            child,
            addr,
            _dir: dir,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for Nginx {
    /// A fast shutdown (SIGTERM): the master stops its workers, which a SIGKILL of the
    /// master alone would leave running.
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        if wait_with_timeout(&mut self.child, Duration::from_secs(10)).is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn basic(user: &str) -> String {
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:secret"));
    format!("Basic {token}")
}

/// The daemon's configuration: every endpoint behind the guard, no developer login, the
/// proxy trusted from its address alone, `net-admins` operators and everyone else viewers.
fn config(dir: &Path) -> PathBuf {
    config_with(dir, "require_for_slices = true\ndeveloper_login = false")
}

/// The configuration with `auth` as the `[auth]` table's own keys.
fn config_with(dir: &Path, auth: &str) -> PathBuf {
    let path = dir.join("sliced.toml");
    let mut file = std::fs::File::create(&path).expect("the config file is created");
    writeln!(
        file,
        r#"[auth]
{auth}

[auth.roles]
operator = ["net-admins"]
default = "viewer"

[auth.proxy]
user_header = "X-Forwarded-User"
email_header = "X-Forwarded-Email"
role_header = "X-Forwarded-Groups"
trusted = ["{PROXY_SOURCE}"]
"#
    )
    .expect("the config file is written");
    path
}

/// The audit trail's lines in the daemon's log, as JSON.
fn audit_lines(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|line| line.contains("sliced::audit"))
        .filter_map(|line| line.find('{').map(|start| &line[start..]))
        .map(|entry| serde_json::from_str(entry).expect("an audit line is JSON"))
        .collect()
}

#[test]
fn the_proxy_names_the_user_roles_limit_them_and_every_write_is_audited() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("sliced.log");
    let config = config(dir.path());
    let daemon = Daemon::start_filtered_with(
        &data,
        &["--config", config.to_str().unwrap()],
        "warn,sliced::audit=info",
        &log,
    );
    let proxy = Nginx::start(daemon.http);
    let http = agent();
    let as_user = |user: &str, method: &str, path: &str, body: Option<Value>| {
        let request = http
            .request(method, &proxy.url(path))
            .set("Authorization", &basic(user))
            .set("Accept", "application/json");
        status_json(match body {
            Some(body) => request.send_json(body),
            None => request.call(),
        })
    };

    // The proxy's user, with the role their groups give.
    let (status, me) = as_user("ada", "GET", "/api/session", None);
    assert_eq!(status, 200);
    assert_eq!(
        me,
        json!({"name": "ada", "email": "ada@example.com", "role": "operator"})
    );
    let (status, _) = as_user("ada", "POST", "/slices", Some(json!({"name": "blue"})));
    assert_eq!(status, 201, "an operator writes");
    let (status, _) = as_user(
        "ada",
        "POST",
        "/api/slices/blue/ports",
        Some(json!({"dpid": 1, "port_no": 1})),
    );
    assert_eq!(status, 201);

    // A viewer reads everything and writes nothing, with or without the prefix.
    let (status, me) = as_user("bob", "GET", "/api/session", None);
    assert_eq!((status, me["role"].clone()), (200, json!("viewer")));
    let (status, slices) = as_user("bob", "GET", "/slices", None);
    assert_eq!((status, slices), (200, json!([{"name": "blue"}])));
    for (method, path, body) in [
        ("POST", "/slices", json!({"name": "red"})),
        ("POST", "/api/slices", json!({"name": "red"})),
        ("DELETE", "/slices", json!({"name": "blue"})),
        ("POST", "/api/slices:apply", json!({"slices": []})),
    ] {
        let (status, answer) = as_user("bob", method, path, Some(body));
        assert_eq!(
            (status, answer),
            (403, json!({"status": "forbidden"})),
            "{method} {path}"
        );
    }

    // Without the proxy's word nobody gets in: the proxy refuses strangers itself, and
    // the header from any other address than the proxy's is not believed.
    let stranger = http.get(&proxy.url("/slices")).call();
    assert_eq!(status_json(stranger).0, 401);
    for path in ["/slices", "/api/session"] {
        let forged = http
            .get(&daemon.url(path))
            .set("X-Forwarded-User", "ada")
            .set("X-Forwarded-Groups", "net-admins")
            .set("Accept", "application/json")
            .call();
        assert_eq!(
            status_json(forged),
            (403, json!({"status": "forbidden"})),
            "{path} with a forged header"
        );
    }
    let forged_write = http
        .post(&daemon.url("/slices"))
        .set("X-Forwarded-User", "ada")
        .set("X-Forwarded-Groups", "net-admins")
        .send_json(json!({"name": "mallory"}));
    assert_eq!(status_json(forged_write).0, 403);

    // The local socket's peer stays an operator, named as its Unix user.
    let listed = slice(&data, &["add", "green"]);
    assert!(listed.status.success(), "{listed:?}");

    // Each accepted write told once, with its user, source and result; the refused ones
    // (the viewer's, the forged header's) not at all.
    let deadline = Instant::now() + Duration::from_secs(10);
    let entries = loop {
        let entries = audit_lines(&log);
        if entries.len() >= 3 || Instant::now() > deadline {
            break entries;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let summary: Vec<(String, String, String, String)> = entries
        .iter()
        .map(|entry| {
            let text = |key: &str| entry[key].as_str().unwrap_or_default().to_owned();
            (text("user"), text("via"), text("operation"), text("result"))
        })
        .collect();
    let expected = |user: &str, via: &str, operation: &str| {
        (user.into(), via.into(), operation.into(), "ok".into())
    };
    assert_eq!(
        summary,
        vec![
            expected("ada", "proxy", "create_slice"),
            expected("ada", "proxy", "add_port"),
            expected(&crate::audit::unix_user(), "local_socket", "create_slice"),
        ],
        "{entries:#?}"
    );
    let first = &entries[0];
    assert_eq!(first["target"], json!({"slice": "blue"}));
    assert_eq!(first["email"], "ada@example.com");
    assert!(
        first["source"]
            .as_str()
            .is_some_and(|source| source.starts_with(&format!("{PROXY_SOURCE}:"))),
        "{first}"
    );
    assert!(first["time"]
        .as_str()
        .is_some_and(|time| time.ends_with('Z')));
    assert_eq!(entries[2]["source"], "local");
}

/// The developer login over HTTP as an attacker would use it: any name, from any address.
fn developer_login(daemon: &Daemon) -> u16 {
    let answer = agent()
        .post(&daemon.url("/auth/developer/callback"))
        .set("Origin", &daemon.url(""))
        .send_json(json!({"name": "anyone", "email": "anyone@example.com"}));
    status_json(answer).0
}

/// A proxy is a real login: with it the developer login, which lets anyone be anyone, is
/// off unless the settings ask for it by name; the start-up log says which logins are on.
#[test]
fn a_proxy_turns_the_developer_login_off_unless_the_settings_ask_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sliced.log");
    // No developer_login line at all.
    let config = config_with(dir.path(), "");
    let daemon = Daemon::start_filtered_with(
        &dir.path().join("data"),
        &["--config", config.to_str().unwrap()],
        "info",
        &log,
    );
    assert_eq!(developer_login(&daemon), 404, "the developer login is gone");
    let form = agent().get(&daemon.url("/auth/developer")).call();
    assert_eq!(status_json(form).0, 404);
    // The proxy's user still logs in.
    let proxy = Nginx::start(daemon.http);
    let me = agent()
        .get(&proxy.url("/api/session"))
        .set("Authorization", &basic("ada"))
        .call();
    assert_eq!(status_json(me).1["role"], "operator");
    let text = std::fs::read_to_string(&log).unwrap();
    let logins: Vec<&str> = text
        .lines()
        .filter(|line| line.contains("logins over HTTP"))
        .collect();
    assert_eq!(logins.len(), 1, "{text}");
    assert!(
        logins[0].contains(&format!("x-forwarded-user header from {PROXY_SOURCE}"))
            && !logins[0].contains("developer"),
        "{text}"
    );
    drop(proxy);
    drop(daemon);

    // Asked for by name, it is on beside the proxy, with a warning.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sliced.log");
    let config = config_with(dir.path(), "developer_login = true");
    let daemon = Daemon::start_filtered_with(
        &dir.path().join("data"),
        &["--config", config.to_str().unwrap()],
        "info",
        &log,
    );
    assert_eq!(developer_login(&daemon), 200);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.lines().any(|line| line.contains("WARN")
            && line.contains("developer login is on beside a real login")),
        "{text}"
    );
}

/// Sends the header lines `headers` (each ending in CRLF) with `GET path` from `source`, as
/// the proxy's own connection would come; the answer's status and JSON body.
fn from_address(
    daemon: &Daemon,
    source: std::net::Ipv4Addr,
    path: &str,
    headers: &[u8],
) -> (u16, Value) {
    use std::io::Read as _;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap();
    let mut connection = runtime
        .block_on(async {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.bind(SocketAddr::from((source, 0)))?;
            socket.connect(daemon.http).await?.into_std()
        })
        .expect("connects");
    connection.set_nonblocking(false).unwrap();
    connection
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut request = format!(
        "GET {path} HTTP/1.1\r\nHost: {}\r\nAccept: application/json\r\nConnection: close\r\n",
        daemon.http
    )
    .into_bytes();
    request.extend_from_slice(headers);
    request.extend_from_slice(b"\r\n");
    connection.write_all(&request).unwrap();
    let mut answer = Vec::new();
    connection.read_to_end(&mut answer).unwrap();
    let answer = String::from_utf8_lossy(&answer);
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {answer}"));
    let body = answer
        .split_once("\r\n\r\n")
        .and_then(|(_, body)| serde_json::from_str(body).ok())
        .unwrap_or(Value::Null);
    (status, body)
}

/// The proxy's own address, as the test connects from it.
fn proxy_source() -> std::net::Ipv4Addr {
    PROXY_SOURCE.parse().unwrap()
}

/// A listener on `[::]` sees the proxy's IPv4 address in its IPv6-mapped form
/// (`::ffff:127.0.0.2`); the daemon compares addresses in their canonical form, so the
/// proxy is trusted, and the trail names it as it knows itself.
#[test]
fn a_proxy_reaching_an_ipv6_listener_is_known_by_its_ipv4_address() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sliced.log");
    let config = config(dir.path());
    let port = free_port().port();
    let daemon = Daemon::start_filtered_on(
        &dir.path().join("data"),
        SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, port)),
        &["--config", config.to_str().unwrap()],
        "warn,sliced::audit=info",
        &log,
    );
    let proxy = Nginx::start(SocketAddr::from(([127, 0, 0, 1], port)));
    let me = agent()
        .get(&proxy.url("/api/session"))
        .set("Authorization", &basic("ada"))
        .set("Accept", "application/json");
    assert_eq!(
        status_json(me.call()),
        (
            200,
            json!({"name": "ada", "email": "ada@example.com", "role": "operator"})
        )
    );
    let created = agent()
        .post(&proxy.url("/slices"))
        .set("Authorization", &basic("ada"))
        .send_json(json!({"name": "blue"}));
    assert_eq!(status_json(created).0, 201);
    let deadline = Instant::now() + Duration::from_secs(10);
    let entries = loop {
        let entries = audit_lines(&log);
        if !entries.is_empty() || Instant::now() > deadline {
            break entries;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(entries.len(), 1, "{entries:#?}");
    assert_eq!(entries[0]["user"], "ada");
    assert!(
        entries[0]["source"]
            .as_str()
            .is_some_and(|source| source.starts_with(&format!("{PROXY_SOURCE}:"))),
        "{}",
        entries[0]
    );
    drop(daemon);
}

/// A header the proxy sent twice is two claims, of which the daemon cannot tell the
/// proxy's from one a client slipped past it; a value that is no text cannot be compared.
/// Either refuses the request, saying why (naming the header, never its value), and the
/// refusal is in the audit trail.
#[test]
fn repeated_or_unreadable_proxy_headers_are_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sliced.log");
    let config = config(dir.path());
    let daemon = Daemon::start_filtered_with(
        &dir.path().join("data"),
        &["--config", config.to_str().unwrap()],
        "warn,sliced::audit=info",
        &log,
    );
    let refused = |reason: &str| {
        (
            403,
            json!({ "error": format!("the proxy's headers are refused: {reason}") }),
        )
    };
    for (headers, reason) in [
        (
            &b"X-Forwarded-User: mallory\r\nX-Forwarded-User: bob\r\n"[..],
            "x-forwarded-user came 2 times; the proxy must send it once",
        ),
        (
            b"X-Forwarded-User: bob\r\nX-Forwarded-Groups: staff\r\nX-Forwarded-Groups: net-admins\r\n",
            "x-forwarded-groups came 2 times; the proxy must send it once",
        ),
        (
            b"X-Forwarded-User: bob\r\nX-Forwarded-Email: bob@example.com\r\nX-Forwarded-Email: mallory@example.com\r\n",
            "x-forwarded-email came 2 times; the proxy must send it once",
        ),
        (
            b"X-Forwarded-User: bob\r\nX-Forwarded-Groups: net-admins,caf\xe9\r\n",
            "x-forwarded-groups is not UTF-8 text",
        ),
    ] {
        for path in ["/api/session", "/slices"] {
            assert_eq!(
                from_address(&daemon, proxy_source(), path, headers),
                refused(reason),
                "{path}: {}",
                String::from_utf8_lossy(headers)
            );
        }
    }
    // Names and groups beyond ASCII, in UTF-8, are text like any other.
    assert_eq!(
        from_address(
            &daemon,
            proxy_source(),
            "/api/session",
            "X-Forwarded-User: José\r\nX-Forwarded-Groups: Ingénieurs, net-admins\r\n".as_bytes(),
        ),
        (
            200,
            json!({"name": "José", "email": "", "role": "operator"})
        )
    );
    // From another address the same headers are not the proxy's: ignored, as before.
    assert_eq!(
        from_address(
            &daemon,
            "127.0.0.1".parse().unwrap(),
            "/api/session",
            b"X-Forwarded-User: mallory\r\nX-Forwarded-User: bob\r\n",
        ),
        (403, json!({"status": "forbidden"}))
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let entries = loop {
        let entries = audit_lines(&log);
        if entries.len() >= 8 || Instant::now() > deadline {
            break entries;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(entries.len(), 8, "{entries:#?}");
    for entry in &entries {
        assert_eq!(
            (
                &entry["operation"],
                &entry["target"],
                &entry["via"],
                &entry["status"]
            ),
            (
                &json!("login"),
                &json!({"method": "proxy"}),
                &json!("proxy"),
                &json!(403)
            ),
            "{entry}"
        );
        assert!(
            entry["result"]
                .as_str()
                .is_some_and(|result| result.starts_with("the proxy's headers are refused: ")),
            "{entry}"
        );
        assert!(!entry.to_string().contains("mallory"), "{entry}");
    }
}

/// `role_separator` says what separates groups: with `;` an LDAP distinguished name is one
/// group, which maps only if listed whole, where `,` would have split it into parts of
/// which one (`net-admins`) maps.
#[test]
fn the_group_separator_is_configured_and_groups_count_only_whole() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&config)
        .unwrap();
    // The file ends in the [auth.proxy] table.
    writeln!(file, "role_separator = \";\"").unwrap();
    let daemon = Daemon::start_with(
        &dir.path().join("data"),
        &["--config", config.to_str().unwrap()],
    );
    let role = |groups: &str| {
        let headers = format!("X-Forwarded-User: ada\r\nX-Forwarded-Groups: {groups}\r\n");
        let (status, me) =
            from_address(&daemon, proxy_source(), "/api/session", headers.as_bytes());
        assert_eq!(status, 200, "{groups}: {me}");
        me["role"].clone()
    };
    assert_eq!(role("cn=x,net-admins,ou=groups"), "viewer");
    assert_eq!(role("cn=x,ou=groups; net-admins"), "operator");
    assert_eq!(role("cn=x,ou=groups"), "viewer");

    let bad = config.with_file_name("bad.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &bad,
        text.replace("role_separator = \";\"", "role_separator = \"ab\""),
    )
    .unwrap();
    let stderr = crate::common::refused_start(
        &dir.path().join("other"),
        &["--config", bad.to_str().unwrap()],
    );
    assert!(
        stderr.contains("auth.proxy.role_separator must be one ASCII punctuation character"),
        "{stderr}"
    );
}

/// Sends `method path` over HTTP/1.0 (no chunked answer) to `addr` with the header lines
/// `headers` (each ending in CRLF) and a JSON `body`; the answer's status and JSON body.
fn raw_request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &str,
    body: Option<Value>,
) -> (u16, Value) {
    use std::io::Read as _;
    let mut connection = TcpStream::connect(addr).expect("connects");
    connection
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let body = body.map(|body| body.to_string()).unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.0\r\nHost: {addr}\r\nAccept: application/json\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n{headers}\r\n{body}",
        body.len()
    );
    connection.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    connection.read_to_end(&mut answer).unwrap();
    let answer = String::from_utf8_lossy(&answer);
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {answer}"));
    let body = answer
        .split_once("\r\n\r\n")
        .and_then(|(_, body)| serde_json::from_str(body).ok())
        .unwrap_or(Value::Null);
    (status, body)
}

/// Without `require_for_slices` no guard stands on the unprefixed routes, yet a request
/// from the proxy whose identity headers are refused is refused on every route that asks
/// who it is from (a write, the fabric, `/events`), before anything changes, and is told
/// once in the trail. Before, the write went on as anonymous after a `login` refusal in
/// the trail. The probes answer as to anyone and tell the trail nothing.
#[test]
fn refused_proxy_headers_refuse_the_open_routes_too_and_probes_tell_the_trail_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let log = dir.path().join("sliced.log");
    let config = config_with(dir.path(), "developer_login = false");
    let daemon = Daemon::start_filtered_with(
        &data,
        &["--config", config.to_str().unwrap()],
        "warn,sliced::audit=info",
        &log,
    );
    let proxy = Nginx::start(daemon.http);
    let login = format!("Authorization: {}\r\n", basic("ada"));
    let twice = format!(
        "{login}X-Forwarded-User: ada\r\nX-Forwarded-User: ada\r\n\
         X-Forwarded-Groups: net-admins\r\n"
    );

    // The probes, through the proxy, with the refused headers and with the proxy's own:
    // they answer, and tell the trail nothing. Readiness with refused headers is told
    // what anyone is told, the status alone.
    assert_eq!(
        raw_request(proxy.addr, "GET", "/passing/readyz", &twice, None),
        (200, json!({"status": "ready"}))
    );
    for path in ["/passing/healthz", "/readyz", "/healthz"] {
        assert_eq!(
            raw_request(proxy.addr, "GET", path, &twice, None).0,
            200,
            "{path}"
        );
    }
    // An open read names no one, so it answers as it does to anyone.
    assert_eq!(
        raw_request(proxy.addr, "GET", "/passing/slices", &twice, None),
        (200, json!([]))
    );

    let refused = (
        403,
        json!({"error": "the proxy's headers are refused: \
                         x-forwarded-user came 2 times; the proxy must send it once"}),
    );
    for (method, path, body) in [
        ("POST", "/passing/slices", Some(json!({"name": "blue"}))),
        (
            "PUT",
            "/passing/topology/fabric",
            Some(json!({"declared": []})),
        ),
        ("GET", "/passing/events", None),
    ] {
        assert_eq!(
            raw_request(proxy.addr, method, path, &twice, body),
            refused,
            "{method} {path}"
        );
    }
    // The proxy's own headers, once each, write as before: the trail's last line.
    assert_eq!(
        raw_request(
            proxy.addr,
            "POST",
            "/slices",
            &login,
            Some(json!({"name": "green"}))
        )
        .0,
        201
    );
    let (status, slices) = status_json(agent().get(&daemon.url("/slices")).call());
    assert_eq!((status, slices), (200, json!([{"name": "green"}])));

    let deadline = Instant::now() + Duration::from_secs(10);
    let entries = loop {
        let entries = audit_lines(&log);
        let done = entries
            .iter()
            .any(|entry| entry["operation"] == "create_slice");
        if done || Instant::now() > deadline {
            break entries;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let summary: Vec<(Value, Value, Value)> = entries
        .iter()
        .map(|entry| {
            (
                entry["operation"].clone(),
                entry["target"].clone(),
                entry["status"].clone(),
            )
        })
        .collect();
    let proxy_refusal = (json!("login"), json!({"method": "proxy"}), json!(403));
    assert_eq!(
        summary,
        vec![
            proxy_refusal.clone(),
            proxy_refusal.clone(),
            proxy_refusal,
            (
                json!("create_slice"),
                json!({"slice": "green"}),
                Value::Null
            ),
        ],
        "{entries:#?}"
    );
}
