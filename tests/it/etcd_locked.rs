//! sliced and the `slice` tool on an etcd locked down as in production: clients over TLS
//! only, with client certificates (`--client-cert-auth`), authentication on, and a role
//! that reads and writes the store's prefix and nothing else. The users and the role are
//! made with the `etcdctl` commands docs/cluster.md gives operators.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use slice_etcd::test_server::{LocalEtcd, ServerTls};

use crate::common::switch::eventually;
use crate::common::tls::Pki;
use crate::common::{agent, free_port, status_json, wait_with_timeout, Daemon, SLICE, SLICED};

/// Longer than a change takes to reach another instance on a loaded machine.
const PROPAGATION: Duration = Duration::from_secs(20);
/// How long a refused sliced may take to give up: seconds, never a hang.
const GIVES_UP_WITHIN: Duration = Duration::from_secs(20);

/// A locked-down etcd, its CA, and the client certificates of its users.
struct Locked {
    etcd: LocalEtcd,
    pki: Pki,
    dir: tempfile::TempDir,
}

/// A client certificate's files: (certificate, key).
type Identity = (PathBuf, PathBuf);

impl Locked {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let pki = Pki::new(&dir.path().join("pki"), "etcd");
        let etcd = LocalEtcd::start_tls(ServerTls {
            cert: pki.cert_file.clone(),
            key: pki.key_file.clone(),
            client_ca: pki.ca_file.clone(),
            client_cert_auth: true,
        });
        let locked = Self { etcd, pki, dir };
        let root = locked.identity("root");
        let etcdctl = |args: &[&str]| locked.etcd.etcdctl(Some((&root.0, &root.1)), args);
        // docs/cluster.md, "A locked-down etcd".
        etcdctl(&["user", "add", "root", "--new-user-password=root-secret"]);
        etcdctl(&["role", "add", "sliced"]);
        etcdctl(&[
            "role",
            "grant-permission",
            "sliced",
            "--prefix=true",
            "readwrite",
            "/sliced/",
        ]);
        etcdctl(&["user", "add", "sliced", "--new-user-password=sliced-secret"]);
        etcdctl(&["user", "grant-role", "sliced", "sliced"]);
        etcdctl(&[
            "user",
            "add",
            "outsider",
            "--new-user-password=outsider-secret",
        ]);
        etcdctl(&["auth", "enable"]);
        locked
    }

    fn identity(&self, user: &str) -> Identity {
        self.pki.client_files(user)
    }

    /// An owner-only file holding `password`.
    fn password_file(&self, name: &str, password: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, format!("{password}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        path
    }

    /// sliced's flags for this etcd with `identity` (none: no client certificate).
    fn flags(&self, identity: Option<&Identity>) -> Vec<String> {
        let mut flags = vec![
            "--etcd".to_owned(),
            self.etcd.endpoint(),
            "--etcd-cafile".to_owned(),
            self.pki.ca_file.display().to_string(),
        ];
        if let Some((cert, key)) = identity {
            flags.extend([
                "--etcd-certfile".to_owned(),
                cert.display().to_string(),
                "--etcd-keyfile".to_owned(),
                key.display().to_string(),
            ]);
        }
        flags
    }
}

fn start(data: &Path, flags: &[String]) -> Daemon {
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    Daemon::start_with(data, &flags)
}

/// sliced started with `flags` must stop by itself, with exit status 1 and one line that
/// names etcd; returns that line.
fn refused(data: &Path, flags: &[String]) -> String {
    let started = Instant::now();
    let mut child = Command::new(SLICED)
        .arg("--db")
        .arg(data)
        .args(["--http", &free_port().to_string()])
        .args(["--openflow", &free_port().to_string()])
        .args(flags)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_with_timeout(&mut child, GIVES_UP_WITHIN)
        .unwrap_or_else(|| panic!("sliced {flags:?} still runs after {GIVES_UP_WITHIN:?}"));
    assert_eq!(status.code(), Some(1), "sliced {flags:?}");
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|line| line.starts_with("sliced: "))
        .collect();
    assert_eq!(errors.len(), 1, "one line says why: {stderr}");
    assert!(errors[0].contains("etcd"), "{}", errors[0]);
    eprintln!(
        "refused in {} ms: {}",
        started.elapsed().as_millis(),
        errors[0]
    );
    errors[0].to_owned()
}

#[test]
fn two_instances_and_the_tool_share_slices_through_a_locked_down_etcd() {
    let locked = Locked::start();
    let sliced = locked.identity("sliced");
    let (dir_a, dir_b, dir_tool) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    // One logs in by its certificate's common name, the other by user and password.
    let a = start(dir_a.path(), &locked.flags(Some(&sliced)));
    let outsider = locked.identity("outsider");
    let mut by_password = locked.flags(Some(&outsider));
    by_password.extend([
        "--etcd-user".to_owned(),
        "sliced".to_owned(),
        "--etcd-password-file".to_owned(),
        locked
            .password_file("sliced.password", "sliced-secret")
            .display()
            .to_string(),
    ]);
    let b = start(dir_b.path(), &by_password);

    let (status, body) = status_json(
        agent()
            .post(&a.url("/slices"))
            .send_json(json!({ "name": "locked" })),
    );
    assert_eq!(status, 201, "{body}");
    assert!(
        eventually(PROPAGATION, || {
            status_json(agent().get(&b.url("/slices")).call()).1 == json!([{ "name": "locked" }])
        }),
        "the other instance sees the slice"
    );

    // The tool, configured by SLICED_ETCD_* as an operator's shell would be.
    let listed = Command::new(SLICE)
        .args(["--db", &dir_tool.path().display().to_string(), "list"])
        .env("SLICED_ETCD", locked.etcd.endpoint())
        .env("SLICED_ETCD_CAFILE", &locked.pki.ca_file)
        .env("SLICED_ETCD_CERTFILE", &sliced.0)
        .env("SLICED_ETCD_KEYFILE", &sliced.1)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("locked"),
        "{}",
        String::from_utf8_lossy(&listed.stdout)
    );
}

#[test]
fn no_certificate_a_wrong_password_or_a_user_without_the_role_stops_sliced() {
    let locked = Locked::start();
    let data = tempfile::tempdir().unwrap();

    let no_certificate = refused(data.path(), &locked.flags(None));
    let outsider = locked.identity("outsider");
    let no_role = refused(data.path(), &locked.flags(Some(&outsider)));
    let mut wrong_password = locked.flags(Some(&outsider));
    wrong_password.extend([
        "--etcd-user".to_owned(),
        "sliced".to_owned(),
        "--etcd-password-file".to_owned(),
        locked
            .password_file("wrong.password", "not-the-password")
            .display()
            .to_string(),
    ]);
    let wrong = refused(data.path(), &wrong_password);
    assert!(
        no_role.contains("permission denied"),
        "the cause is named: {no_role}"
    );
    assert!(
        wrong.contains("authentication failed"),
        "the cause is named: {wrong}"
    );
    assert!(
        no_certificate.contains("client certificate"),
        "{no_certificate}"
    );
    // A certificate of a CA etcd does not trust.
    let stranger = Pki::new(&locked.dir.path().join("stranger"), "stranger").client_files("sliced");
    let untrusted = refused(data.path(), &locked.flags(Some(&stranger)));
    assert!(
        untrusted.contains("may not accept this client certificate"),
        "{untrusted}"
    );

    // A password file others may read is refused before etcd is asked.
    let open = locked.password_file("open.password", "sliced-secret");
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut open_flags = locked.flags(Some(&outsider));
    open_flags.extend([
        "--etcd-user".to_owned(),
        "sliced".to_owned(),
        "--etcd-password-file".to_owned(),
        open.display().to_string(),
    ]);
    let line = refused(data.path(), &open_flags);
    assert!(line.contains("chmod 600"), "{line}");
}

/// `slice --etcd http://... --etcd-user ... --etcd-password-file ...` sent the password in
/// clear, where sliced refuses the same settings. Both now apply one rule (slice-etcd's
/// `Access::refuse_plaintext`): refused with the same words and nothing sent (a listener
/// standing in for etcd sees no connection), unless `--etcd-allow-plaintext` says the
/// network is trusted, when the tool logs in to a real etcd with authentication on.
#[test]
fn the_tool_refuses_credentials_over_plain_http_as_sliced_does_unless_allowed() {
    let etcd = LocalEtcd::start();
    etcd.etcdctl(
        None,
        &["user", "add", "root", "--new-user-password=root-secret"],
    );
    etcd.etcdctl(None, &["auth", "enable"]);
    let dir = tempfile::tempdir().unwrap();
    let password = dir.path().join("root.password");
    std::fs::write(&password, "root-secret\n").unwrap();
    std::fs::set_permissions(&password, std::fs::Permissions::from_mode(0o600)).unwrap();
    let data = dir.path().join("data");
    let tool = |endpoint: &str, extra: &[&str], args: &[&str]| {
        let password = password.display().to_string();
        let mut all = vec!["--etcd", endpoint, "--etcd-user", "root"];
        all.extend(["--etcd-password-file", password.as_str()]);
        all.extend_from_slice(extra);
        all.extend_from_slice(args);
        crate::common::slice(&data, &all)
    };

    let spy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    spy.set_nonblocking(true).unwrap();
    let spy_endpoint = format!("http://{}", spy.local_addr().unwrap());
    let refused = tool(&spy_endpoint, &[], &["add", "blue"]);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    let stderr = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert!(
        stderr.starts_with(&format!(
            "slice: etcd at {spy_endpoint} is reached without TLS"
        )) && stderr.contains("--etcd-allow-plaintext"),
        "{stderr}"
    );
    assert!(
        matches!(spy.accept(), Err(err) if err.kind() == std::io::ErrorKind::WouldBlock),
        "the tool connected to etcd"
    );
    assert!(!data.exists(), "the tool made a data directory");

    // sliced refuses the same settings with the same words.
    let password_flag = password.display().to_string();
    let daemon = crate::common::refused_start(
        &data,
        &[
            "--etcd",
            &spy_endpoint,
            "--etcd-user",
            "root",
            "--etcd-password-file",
            &password_flag,
        ],
    );
    let rule = stderr.trim_start_matches("slice: ").trim_end();
    assert!(daemon.contains(rule), "{daemon}\nis not\n{rule}");

    let allowed = ["--etcd-allow-plaintext"];
    let added = tool(&etcd.endpoint(), &allowed, &["add", "blue"]);
    assert!(added.status.success(), "{added:?}");
    let listed = tool(&etcd.endpoint(), &allowed, &["list"]);
    assert_eq!(
        String::from_utf8_lossy(&listed.stdout),
        "blue\n",
        "{listed:?}"
    );
}

/// A password file another user owns (owner-only, theirs) would have the tool and sliced
/// log in with a password that user chose: both refuse it before etcd is asked anything.
#[test]
fn a_password_file_another_user_owns_is_refused_by_the_tool_and_sliced() {
    if !crate::common::running_as_root("the planted password file test") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let password = dir.path().join("planted.password");
    crate::common::plant(&password, b"chosen-by-them\n", 0o600);
    let spy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    spy.set_nonblocking(true).unwrap();
    let endpoint = format!("http://{}", spy.local_addr().unwrap());
    let password = password.display().to_string();
    let flags = [
        "--etcd",
        endpoint.as_str(),
        "--etcd-allow-plaintext",
        "--etcd-user",
        "sliced",
        "--etcd-password-file",
        password.as_str(),
    ];
    let data = dir.path().join("data");
    let expected = format!(
        "the etcd password file {password} belongs to uid {}",
        crate::common::ANOTHER_UID
    );
    let mut args = flags.to_vec();
    args.push("list");
    let tool = crate::common::slice(&data, &args);
    assert_eq!(tool.status.code(), Some(1), "{tool:?}");
    let stderr = String::from_utf8_lossy(&tool.stderr);
    assert!(
        stderr.starts_with(&format!("slice: {expected}")),
        "{stderr}"
    );
    let daemon = crate::common::refused_start(&data, &flags);
    assert!(daemon.contains(&format!("sliced: {expected}")), "{daemon}");
    assert!(
        matches!(spy.accept(), Err(err) if err.kind() == std::io::ErrorKind::WouldBlock),
        "etcd was asked"
    );
}
