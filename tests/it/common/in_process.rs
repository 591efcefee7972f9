//! The REST application in-process: `slice_http::app` on a real sled store in a temporary
//! directory, called through actix-web's test utilities, without a socket or a process.
//!
//! For the contract tests that are pure request and response (statuses, bodies, error
//! messages and their order, cascades, the session guard, the cross-site checks). What
//! needs the real daemon stays with [`super::Daemon`]: start-up, signals, the local
//! socket, restarts, the head guard and connection caps below actix, and anything that
//! depends on the addresses a listener is bound to.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;

use actix_web::cookie::Key;
use actix_web::http::header::HeaderMap;
use actix_web::http::Method;
use actix_web::{test, App};
use serde_json::Value;
use slice_http::Settings;
use slice_store::Store;

/// The `Host` every request names unless it says otherwise: a loopback name, which every
/// daemon answers to whatever it is bound to.
pub(crate) const HOST: &str = "127.0.0.1:9292";

/// The application as `sliced` assembles it, on the store in `store_dir`, without a
/// controller behind the topology endpoints. The one place the in-process tests build it.
pub(crate) fn app(store_dir: &Path, settings: Settings) -> App<impl slice_http::AppFactory> {
    let store = Store::open(store_dir).expect("a store opens in a fresh temporary directory");
    slice_http::app(Arc::new(store), None, settings)
}

/// Calls the initialised application with a request and reads the whole response.
type Call = Box<dyn Fn(test::TestRequest) -> Pin<Box<dyn Future<Output = Answer>>>>;

/// The application, initialised, with the directory its store lives in.
pub(crate) struct Api {
    call: Call,
    _dir: tempfile::TempDir,
}

/// A response, read to its end.
#[derive(Debug)]
pub(crate) struct Answer {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: String,
}

impl Answer {
    /// The body as JSON (Null when it is not JSON).
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }

    /// The session cookie as a client sends it back (`name=value`), if one was set.
    pub(crate) fn cookie(&self) -> Option<String> {
        let set = self.header("set-cookie")?;
        set.split(';').next().map(str::to_owned)
    }
}

impl Api {
    /// The application with the daemon's default settings and a fresh session key.
    pub(crate) async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    /// The application with the default settings as `configure` changes them.
    pub(crate) async fn start_with(configure: impl FnOnce(&mut Settings)) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut settings = Settings::new(Key::generate());
        configure(&mut settings);
        let service = Rc::new(test::init_service(app(&dir.path().join("store"), settings)).await);
        let call: Call = Box::new(move |request| {
            let service = Rc::clone(&service);
            Box::pin(async move {
                let response = request.send_request(service.as_ref()).await;
                let status = response.status().as_u16();
                let headers = response.headers().clone();
                let body = test::read_body(response).await;
                Answer {
                    status,
                    headers,
                    body: String::from_utf8_lossy(&body).into_owned(),
                }
            })
        });
        Self { call, _dir: dir }
    }

    /// Sends a request as written: `headers` are `Name: value` lines, and `Host` is
    /// [`HOST`] unless one of them names another.
    pub(crate) async fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[&str],
        body: &str,
    ) -> Answer {
        let method = Method::from_bytes(method.as_bytes()).expect("a valid method");
        let mut request = test::TestRequest::default()
            .method(method.clone())
            .uri(path);
        let mut has_host = false;
        for line in headers {
            let (name, value) = line
                .split_once(':')
                .expect("a header line is `Name: value`");
            has_host |= name.eq_ignore_ascii_case("host");
            request = request.append_header((name.trim(), value.trim()));
        }
        if !has_host {
            request = request.insert_header(("Host", HOST));
        }
        if !body.is_empty() || !matches!(method, Method::GET | Method::HEAD) {
            request = request.set_payload(body.to_owned());
        }
        (self.call)(request).await
    }

    pub(crate) async fn get(&self, path: &str) -> (u16, Value) {
        let answer = self.send("GET", path, &[], "").await;
        (answer.status, answer.json())
    }

    pub(crate) async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.raw("POST", path, "application/json", &body.to_string())
            .await
    }

    pub(crate) async fn delete(&self, path: &str, body: Value) -> (u16, Value) {
        self.raw("DELETE", path, "application/json", &body.to_string())
            .await
    }

    /// A request with a body of the given type, as a script would send it.
    pub(crate) async fn raw(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: &str,
    ) -> (u16, Value) {
        let content_type = format!("Content-Type: {content_type}");
        let answer = self.send(method, path, &[&content_type], body).await;
        (answer.status, answer.json())
    }

    /// The whole tree as the GET endpoints show it, to prove that nothing changed.
    pub(crate) async fn tree(&self) -> Value {
        let (_, slices) = self.get("/slices").await;
        let mut tree = Vec::new();
        for slice in slices.as_array().expect("the slice list is a list") {
            let name = slice["name"].as_str().expect("a slice has a name");
            let (_, ports) = self.get(&format!("/slices/{name}/ports")).await;
            let mut port_tree = Vec::new();
            for port in ports.as_array().expect("the port list is a list") {
                let port_name = port["name"].as_str().expect("a port has a name");
                let (_, macs) = self
                    .get(&format!("/slices/{name}/ports/{port_name}/mac_addresses"))
                    .await;
                port_tree.push(serde_json::json!({"port": port, "macs": macs}));
            }
            tree.push(serde_json::json!({"slice": name, "ports": port_tree}));
        }
        Value::Array(tree)
    }
}
