//! The daemon's side of [`SliceDatabase`]: the slice API of `sliced`, spoken over its owner-only
//! Unix socket, where no session is needed.

use std::cell::Cell;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

use serde::de::DeserializeOwned;
use serde::Serialize;
use slice_core::wire::{
    Applied, Declaration, ErrorBody, MacBody, PortBody, PortRequest, SliceBody,
};
use slice_core::{MacAddress, Plan, PortId, Slice, SliceName};

use crate::backend::SliceDatabase;
use crate::http::{self, HttpError, Limits, Response};
use crate::CliError;

pub(crate) struct DaemonClient {
    socket: PathBuf,
    /// The connection that showed a daemon is there; the first request goes over it so
    /// that the probe costs the daemon nothing.
    probe: Cell<Option<UnixStream>>,
    limits: Limits,
}

impl DaemonClient {
    pub(crate) fn new(socket: PathBuf, probe: UnixStream) -> Self {
        Self {
            socket,
            probe: Cell::new(Some(probe)),
            limits: Limits::default(),
        }
    }

    /// The same client, giving up on an exchange after `timeout` (a completion must not
    /// keep the shell waiting).
    pub(crate) fn with_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.limits.timeout = timeout;
        self
    }

    /// The names of the slices, in creation order.
    pub(crate) fn slice_names(&self) -> Result<Vec<SliceName>, CliError> {
        self.slices()
    }

    fn connection(&self) -> Result<UnixStream, CliError> {
        match self.probe.take() {
            Some(stream) => Ok(stream),
            None => UnixStream::connect(&self.socket).map_err(|err| self.failed(err.into())),
        }
    }

    fn failed(&self, source: HttpError) -> CliError {
        CliError::Daemon {
            socket: self.socket.clone(),
            source,
        }
    }

    /// One request; the body of a 2xx answer, or the error the daemon reported.
    fn call(&self, method: &str, path: &str, body: Option<Vec<u8>>) -> Result<Vec<u8>, CliError> {
        let response = http::exchange(
            self.connection()?,
            method,
            path,
            body.as_deref(),
            self.limits,
        )
        .map_err(|err| self.failed(err))?;
        if response.is_success() {
            Ok(response.body)
        } else {
            Err(refusal(response))
        }
    }

    /// A write: `body` sent as JSON, the answer's body ignored.
    fn send(&self, method: &str, path: &str, body: &impl Serialize) -> Result<(), CliError> {
        let body = serde_json::to_vec(body).map_err(|err| CliError::Protocol {
            socket: self.socket.clone(),
            request: format!("{method} {path}"),
            detail: format!("cannot encode the request: {err}"),
        })?;
        self.call(method, path, Some(body)).map(drop)
    }

    /// A GET whose answer is wanted whatever its status (`/readyz` says "not ready"
    /// with a 503 and a body that says why): the status and the body as JSON.
    pub(crate) fn get_any(&self, path: &str) -> Result<(u16, serde_json::Value), CliError> {
        let response = http::exchange(self.connection()?, "GET", path, None, self.limits)
            .map_err(|err| self.failed(err))?;
        let json = serde_json::from_slice(&response.body).map_err(|err| CliError::Protocol {
            socket: self.socket.clone(),
            request: format!("GET {path}"),
            detail: format!("HTTP {}: {err}", response.status),
        })?;
        Ok((response.status, json))
    }

    /// A GET of JSON of any shape, a non-2xx answer being the error it reports.
    pub(crate) fn get_json(&self, path: &str) -> Result<serde_json::Value, CliError> {
        self.get(path)
    }

    fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, CliError> {
        let body = self.call("GET", path, None)?;
        serde_json::from_slice(&body).map_err(|err| CliError::Protocol {
            socket: self.socket.clone(),
            request: format!("GET {path}"),
            detail: err.to_string(),
        })
    }
}

impl DaemonClient {
    /// Asks the daemon which store it serves (`GET /cluster`) and refuses, before any
    /// command is sent, one that does not serve `etcd`: a sled daemon, another cluster
    /// (no endpoint in common) or another prefix. A daemon that cannot say is refused
    /// too.
    pub(crate) fn check_serves(&self, etcd: &crate::EtcdTarget) -> Result<(), CliError> {
        let named = format!(
            "the store this command names (etcd at {} under {})",
            etcd.endpoints.join(","),
            etcd.prefix
        );
        let other = |serves: String| CliError::OtherStore {
            socket: self.socket.clone(),
            serves,
            named: named.clone(),
        };
        let view: serde_json::Value = match self.get("/cluster") {
            Ok(view) => view,
            Err(CliError::Refused { status, message }) => {
                return Err(other(format!(
                    "a store it does not name (GET /cluster: HTTP {status}, {message})"
                )))
            }
            Err(err) => return Err(err),
        };
        let served = &view["etcd"];
        let endpoints: Vec<String> = served["endpoints"]
            .as_array()
            .map(|list| {
                list.iter()
                    .filter_map(|e| e.as_str())
                    .map(normalize)
                    .collect()
            })
            .unwrap_or_default();
        let prefix = served["prefix"].as_str();
        let same = view["store"] == "etcd"
            && prefix == Some(etcd.prefix.as_str())
            && etcd
                .endpoints
                .iter()
                .any(|endpoint| endpoints.contains(&normalize(endpoint)));
        if same {
            return Ok(());
        }
        Err(other(match view["store"].as_str() {
            Some("etcd") => format!(
                "etcd at {} under {}",
                endpoints.join(","),
                prefix.unwrap_or("a prefix it does not name")
            ),
            Some("sled") => "the sled database of its data directory".to_owned(),
            _ => format!("a store it does not name ({view})"),
        }))
    }
}

/// An endpoint as written in two places can differ in case and a final slash only.
fn normalize(endpoint: &str) -> String {
    endpoint.trim().trim_end_matches('/').to_ascii_lowercase()
}

/// How long [`daemon_answers`] waits for an answer: a serving daemon answers at once.
const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// Whether a `sliced` answers HTTP on `socket`: any response counts, an error status too.
/// A socket file nobody listens on, or a peer that does not speak HTTP, does not.
pub fn daemon_answers(socket: &std::path::Path) -> bool {
    let Ok(stream) = UnixStream::connect(socket) else {
        return false;
    };
    let limits = Limits {
        timeout: PROBE_TIMEOUT,
        ..Limits::default()
    };
    http::exchange(stream, "GET", "/slices", None, limits).is_ok()
}

/// The error a non-2xx answer stands for: the slice-contract error it reports, read back
/// by [`ErrorBody::slice_error`] (so that both modes fail alike), otherwise the message
/// as sent.
fn refusal(response: Response) -> CliError {
    let body = match serde_json::from_slice::<ErrorBody>(&response.body) {
        Ok(body) => body,
        Err(_) if response.body.is_empty() => ErrorBody {
            error: "no error message".to_owned(),
        },
        Err(_) => {
            let text = String::from_utf8_lossy(&response.body);
            ErrorBody {
                error: text.chars().take(200).collect(),
            }
        }
    };
    match body.slice_error(response.status) {
        Some(err) => CliError::Slice(err),
        None => CliError::Refused {
            status: response.status,
            message: body.error,
        },
    }
}

// The identifiers' alphabets need no percent-encoding in a path segment (a colon may
// appear in any segment but the first); see slice_core, which refuses "." and "..", the
// two segments a URL path would resolve away.
fn slice_path(slice: &SliceName) -> String {
    format!("/slices/{slice}")
}

fn port_path(slice: &SliceName, port: PortId) -> String {
    format!("/slices/{slice}/ports/{port}/mac_addresses")
}

impl SliceDatabase for DaemonClient {
    fn slices(&self) -> Result<Vec<SliceName>, CliError> {
        let slices: Vec<SliceBody> = self.get("/slices")?;
        Ok(slices.into_iter().map(|slice| slice.name).collect())
    }

    fn ports(&self, slice: &SliceName) -> Result<Vec<PortId>, CliError> {
        let ports: Vec<PortBody> = self.get(&format!("{}/ports", slice_path(slice)))?;
        Ok(ports.into_iter().map(PortId::from).collect())
    }

    fn macs(&self, slice: &SliceName, port: PortId) -> Result<Vec<MacAddress>, CliError> {
        let macs: Vec<MacBody> = self.get(&port_path(slice, port))?;
        Ok(macs.into_iter().map(|mac| mac.name).collect())
    }

    fn create_slice(&self, slice: &SliceName) -> Result<(), CliError> {
        let body = SliceBody {
            name: slice.clone(),
        };
        self.send("POST", "/slices", &body)
    }

    fn delete_slice(&self, slice: &SliceName) -> Result<(), CliError> {
        let body = SliceBody {
            name: slice.clone(),
        };
        self.send("DELETE", "/slices", &body)
    }

    fn add_port(&self, slice: &SliceName, port: PortId) -> Result<(), CliError> {
        let path = format!("{}/ports", slice_path(slice));
        self.send("POST", &path, &PortRequest::from(port))
    }

    fn delete_port(&self, slice: &SliceName, port: PortId) -> Result<(), CliError> {
        let path = format!("{}/ports", slice_path(slice));
        self.send("DELETE", &path, &PortRequest::from(port))
    }

    fn add_mac(&self, slice: &SliceName, port: PortId, mac: MacAddress) -> Result<(), CliError> {
        self.send("POST", &port_path(slice, port), &MacBody { name: mac })
    }

    fn delete_mac(&self, slice: &SliceName, port: PortId, mac: MacAddress) -> Result<(), CliError> {
        self.send("DELETE", &port_path(slice, port), &MacBody { name: mac })
    }

    fn apply(&self, declared: &[Slice], dry_run: bool) -> Result<Plan, CliError> {
        let path = format!("/slices:apply?dry_run={dry_run}");
        let protocol = |detail: String| CliError::Protocol {
            socket: self.socket.clone(),
            request: format!("POST {path}"),
            detail,
        };
        let body = serde_json::to_vec(&Declaration::of(declared))
            .map_err(|err| protocol(format!("cannot encode the request: {err}")))?;
        let answer = self.call("POST", &path, Some(body))?;
        let applied: Applied =
            serde_json::from_slice(&answer).map_err(|err| protocol(err.to_string()))?;
        Ok(applied.plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use slice_core::SliceError;
    use std::io::{Read, Write};
    use std::os::unix::net::UnixListener;
    use std::thread::JoinHandle;

    /// A daemon stand-in that answers each connection with the next canned response and
    /// returns the requests it saw, heads and bodies.
    fn fake_daemon(
        replies: Vec<&'static str>,
    ) -> (tempfile::TempDir, DaemonClient, JoinHandle<Vec<String>>) {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("sliced.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        let probe = UnixStream::connect(&socket).unwrap();
        let server = std::thread::spawn(move || {
            replies
                .into_iter()
                .map(|reply| {
                    let (mut conn, _) = listener.accept().unwrap();
                    let mut request = vec![0; 4096];
                    let n = conn.read(&mut request).unwrap();
                    conn.write_all(reply.as_bytes()).unwrap();
                    String::from_utf8_lossy(&request[..n]).into_owned()
                })
                .collect()
        });
        (dir, DaemonClient::new(socket, probe), server)
    }

    fn json_reply(status: &str, body: &str) -> String {
        format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
    }

    fn leak(text: String) -> &'static str {
        Box::leak(text.into_boxed_str())
    }

    #[test]
    fn the_listing_is_read_with_one_request_per_slice_and_port() {
        let (_dir, client, server) = fake_daemon(vec![
            leak(json_reply("200 OK", r#"[{"name":"blue"}]"#)),
            leak(json_reply(
                "200 OK",
                r#"[{"name":"0xab:1","dpid":171,"port_no":1}]"#,
            )),
            leak(json_reply("200 OK", r#"[{"name":"00:00:00:00:00:0a"}]"#)),
        ]);
        let tree = client.tree().unwrap();
        assert_eq!(tree.len(), 1);
        assert_eq!(tree[0].name.as_str(), "blue");
        assert_eq!(tree[0].ports[0].id, PortId::new(0xab, 1));
        assert_eq!(
            tree[0].ports[0].macs,
            [MacAddress::new([0, 0, 0, 0, 0, 10])]
        );
        let requests = server.join().unwrap();
        let lines: Vec<&str> = requests.iter().map(|r| r.lines().next().unwrap()).collect();
        assert_eq!(
            lines,
            [
                "GET /slices HTTP/1.1",
                "GET /slices/blue/ports HTTP/1.1",
                "GET /slices/blue/ports/0xab:1/mac_addresses HTTP/1.1",
            ]
        );
    }

    #[test]
    fn writes_send_the_api_bodies() {
        let created = leak(json_reply("201 Created", "{}"));
        let done = leak(json_reply("200 OK", "{}"));
        let (_dir, client, server) = fake_daemon(vec![created, done, created, done, created, done]);
        let slice: SliceName = "blue".parse().unwrap();
        let port = PortId::new(u64::MAX, 2);
        let mac = MacAddress::new([0xaa, 0xbb, 0, 0, 0, 1]);
        client.create_slice(&slice).unwrap();
        client.delete_slice(&slice).unwrap();
        client.add_port(&slice, port).unwrap();
        client.delete_port(&slice, port).unwrap();
        client.add_mac(&slice, port, mac).unwrap();
        client.delete_mac(&slice, port, mac).unwrap();
        let requests = server.join().unwrap();
        let summary: Vec<(String, String)> = requests
            .iter()
            .map(|r| {
                let first = r.lines().next().unwrap().to_owned();
                let body = r.split("\r\n\r\n").nth(1).unwrap().to_owned();
                (first, body)
            })
            .collect();
        let mac_path = "/slices/blue/ports/0xffffffffffffffff:2/mac_addresses";
        let port_body = r#"{"dpid":18446744073709551615,"port_no":2}"#;
        let expected = [
            ("POST /slices", r#"{"name":"blue"}"#),
            ("DELETE /slices", r#"{"name":"blue"}"#),
            ("POST /slices/blue/ports", port_body),
            ("DELETE /slices/blue/ports", port_body),
            (
                &format!("POST {mac_path}"),
                r#"{"name":"aa:bb:00:00:00:01"}"#,
            ),
            (
                &format!("DELETE {mac_path}"),
                r#"{"name":"aa:bb:00:00:00:01"}"#,
            ),
        ];
        for ((first, body), (want_first, want_body)) in summary.iter().zip(expected) {
            assert_eq!(first, &format!("{want_first} HTTP/1.1"));
            assert_eq!(body, want_body);
        }
    }

    #[test]
    fn refusals_become_the_same_errors_as_in_direct_mode() {
        let (_dir, client, server) = fake_daemon(vec![
            leak(json_reply(
                "409 Conflict",
                r#"{"error":"Slice blue already exists"}"#,
            )),
            leak(json_reply(
                "400 Bad Request",
                r#"{"error":"invalid request body: x"}"#,
            )),
            "HTTP/1.1 500 Internal Server Error\r\ncontent-length: 4\r\n\r\noops",
            leak(json_reply("200 OK", r#"{"not":"a list"}"#)),
        ]);
        let slice: SliceName = "blue".parse().unwrap();
        match client.create_slice(&slice) {
            Err(CliError::Slice(SliceError::SliceExists(name))) => assert_eq!(name, slice),
            other => panic!("{other:?}"),
        }
        let err = client.create_slice(&slice).unwrap_err();
        assert_eq!(
            err.to_string(),
            "sliced refused the request (HTTP 400): invalid request body: x"
        );
        let err = client.create_slice(&slice).unwrap_err();
        assert_eq!(
            err.to_string(),
            "sliced refused the request (HTTP 500): oops"
        );
        let err = client.slices().unwrap_err().to_string();
        assert!(err.contains("unexpected answer to GET /slices"), "{err}");
        server.join().unwrap();
    }

    #[test]
    fn a_contract_message_with_the_wrong_status_stays_the_daemons_refusal() {
        let (_dir, client, server) = fake_daemon(vec![leak(json_reply(
            "400 Bad Request",
            r#"{"error":"Slice blue not found"}"#,
        ))]);
        let err = client.delete_slice(&"blue".parse().unwrap()).unwrap_err();
        assert!(
            matches!(&err, CliError::Refused { status: 400, message } if message == "Slice blue not found"),
            "{err:?}"
        );
        server.join().unwrap();
    }

    #[test]
    fn a_daemon_gone_after_the_probe_is_reported_with_its_socket() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("sliced.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        let probe = UnixStream::connect(&socket).unwrap();
        drop(listener);
        let client = DaemonClient::new(socket.clone(), probe);
        let err = client.slices().unwrap_err().to_string();
        assert!(err.contains(&socket.display().to_string()), "{err}");
        // The probe connection is spent; the next request finds nobody listening.
        let err = client.slices().unwrap_err().to_string();
        assert!(err.contains("did not answer properly"), "{err}");
    }
}
