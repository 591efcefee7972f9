//! `GET /ui` in a real browser: headless Chromium driven over WebDriver (chromedriver),
//! against the real daemon, emulated switches and the real `slice` tool. The tests leave
//! screenshots of the page under `target/` (`ui-screenshot.png`, `ui-legend.png`,
//! `ui-details.png`, `ui-small-network.png`; CI keeps them as artifacts). This file holds
//! the browser's helpers and the first look at the page; `network` the legend, the
//! details and the changes made by clicking, `layout` the graph's layout, zoom, labels and
//! colours, `lifecycle` the empty network, the redirects, the connection and viewers.

mod layout;
mod lifecycle;
mod network;
mod oidc;

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use openflow::Version;
use serde_json::{json, Value};

use crate::common::switch::{eventually, frame, Network, BROADCAST};
use crate::common::{agent, free_port, slice, status_json, Daemon};

/// How long the page may take to show something on a loaded two-core machine.
const WAIT: Duration = Duration::from_secs(30);

/// The Debian packages that provide the browser and its WebDriver server.
const PACKAGES: &str = "chromium chromium-driver";

fn on_path(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// A chromedriver of its own, on a free port, killed when dropped.
struct Driver {
    child: Child,
    url: String,
    chromium: PathBuf,
}

impl Driver {
    /// None (the test skips) when the browser is not installed, except in CI, where the
    /// test must run and fails naming the packages instead.
    fn start() -> Option<Self> {
        let (Some(driver), Some(chromium)) = (on_path("chromedriver"), on_path("chromium")) else {
            let message = format!(
                "the browser test needs chromium and chromedriver: apt-get install {PACKAGES}"
            );
            assert!(std::env::var("CI").as_deref() != Ok("true"), "{message}");
            eprintln!("skipped: {message}");
            return None;
        };
        let address = free_port();
        let child = Command::new(driver)
            .arg(format!("--port={}", address.port()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        assert!(
            eventually(WAIT, || TcpStream::connect(address).is_ok()),
            "chromedriver did not listen on {address}"
        );
        Some(Self {
            child,
            url: format!("http://{address}"),
            chromium,
        })
    }

    async fn browser(&self) -> Client {
        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": self.chromium,
                // --no-sandbox: CI runs as root, where Chromium's sandbox cannot start.
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1280,800"],
            }),
        );
        ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(capabilities)
            .connect(&self.url)
            .await
            .expect("chromedriver opens a browser session")
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until `condition`, a JavaScript expression, is true in the page; a script that
/// fails (the page is being replaced) counts as not yet.
async fn until(browser: &Client, condition: &str) {
    let script = format!("return Boolean({condition});");
    let deadline = Instant::now() + WAIT;
    loop {
        if browser.execute(&script, vec![]).await.ok() == Some(Value::Bool(true)) {
            return;
        }
        if Instant::now() > deadline {
            let page = browser
                .execute(
                    "return document.body ? document.body.innerText : location.href;",
                    vec![],
                )
                .await
                .unwrap_or_default();
            panic!("the page never showed `{condition}`; it shows: {page}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn script(browser: &Client, body: &str) -> Value {
    browser.execute(body, vec![]).await.expect(body)
}

async fn fill(browser: &Client, selector: &str, text: &str) {
    let field = browser.find(Locator::Css(selector)).await.expect(selector);
    field.clear().await.expect(selector);
    field.send_keys(text).await.expect(selector);
}

/// Clicks the element `selector` finds. The page redraws its lists whenever an event
/// comes, which can replace the element between finding and clicking it: then it is
/// found again.
async fn click(browser: &Client, selector: &str) {
    let deadline = Instant::now() + WAIT;
    loop {
        let element = browser.find(Locator::Css(selector)).await.expect(selector);
        match element.click().await {
            Ok(()) => return,
            Err(fantoccini::error::CmdError::Standard(error))
                if error.error == fantoccini::error::ErrorStatus::StaleElementReference
                    && Instant::now() < deadline => {}
            Err(other) => panic!("{selector}: {other}"),
        }
    }
}

/// `name` in the target directory, where the screenshots go.
fn target_file(name: &str) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"))
        .join(name)
}

/// Saves what the browser shows as `name` in the target directory.
async fn save_screenshot(browser: &Client, name: &str) {
    let png = browser.screenshot().await.expect("a screenshot");
    let path = target_file(name);
    std::fs::create_dir_all(path.parent().expect("a directory")).expect("target/ exists");
    std::fs::write(&path, png).expect("the screenshot is written");
}

/// Opens the view and logs in through the developer form it sends the browser to.
async fn log_in(browser: &Client, daemon: &Daemon) {
    browser
        .goto(&daemon.url("/ui"))
        .await
        .expect("the page opens");
    fill(browser, "input[name=name]", "Dev").await;
    fill(browser, "input[name=email]", "dev@example.com").await;
    click(browser, "button[type=submit]").await;
    until(
        browser,
        "location.pathname === '/ui' && window.sliced !== undefined",
    )
    .await;
}

/// Answers the page's confirmation dialog, which must be open or opening: yes (the
/// removal goes ahead) or no.
async fn answer_dialog(browser: &Client, yes: bool) {
    until(browser, "document.getElementById('confirm').open").await;
    click(browser, if yes { "#confirm-yes" } else { "#confirm-no" }).await;
    until(browser, "!document.getElementById('confirm').open").await;
}

/// An HTTP client with a developer session, for the test's own reads under `/api/`.
fn logged_in(daemon: &Daemon) -> ureq::Agent {
    let client = agent();
    let (status, body) = status_json(
        client
            .post(&daemon.url("/auth/developer/callback"))
            .send_form(&[("name", "Test"), ("email", "test@example.com")]),
    );
    assert_eq!(status, 200, "login: {body}");
    client
}

fn listed(dir: &Path) -> String {
    let out = slice(dir, &["list"]);
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_view_shows_the_network_and_follows_changes() {
    let Some(driver) = Driver::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // --require-auth: the page must work through /api/ alone, with its session.
    let daemon = Daemon::start_with(dir.path(), &["--lldp-interval-ms", "100", "--require-auth"]);
    let reader = logged_in(&daemon);
    let read = |path: &str| {
        let (status, body) = status_json(reader.get(&daemon.url(&format!("/api{path}"))).call());
        assert_eq!(status, 200, "GET /api{path}: {body}");
        body
    };
    // Switches 1 - 2 - 3 in a line, on ports 2 and 3; a host behind port 1 of switch 1.
    let mut network = Network::new();
    network.cable((1, 2), (2, 2));
    network.cable((2, 3), (3, 2));
    for dpid in 1..=3 {
        network.connect(daemon.openflow, dpid, Version::Of13, 3);
    }
    assert!(
        eventually(WAIT, || read("/topology/links").as_array().map(Vec::len)
            == Some(4)),
        "links discovered: {}",
        read("/topology/links")
    );
    network.switch(1).packet_in(1, frame(1, BROADCAST));
    assert!(
        eventually(WAIT, || read("/topology/hosts").as_array().map(Vec::len)
            == Some(1)),
        "host learned"
    );

    let browser = driver.browser().await;
    // Without a session the page sends the browser to the developer login, and back.
    browser
        .goto(&daemon.url("/ui"))
        .await
        .expect("the page opens");
    let at = browser.current_url().await.expect("a url");
    assert_eq!(at.path(), "/auth/developer", "{at}");
    fill(&browser, "input[name=name]", "Dev").await;
    fill(&browser, "input[name=email]", "dev@example.com").await;
    click(&browser, "button[type=submit]").await;
    until(&browser, "location.pathname === '/ui'").await;

    // The emulated switches and their cables, in the page's lists and in its graph.
    until(
        &browser,
        "document.querySelectorAll('[data-switch]').length === 3 \
         && document.querySelectorAll('[data-link]').length === 2 \
         && window.sliced.cy !== null",
    )
    .await;
    let listed_switches = script(
        &browser,
        "return [...document.querySelectorAll('[data-switch]')].map(e => e.dataset.switch).sort();",
    )
    .await;
    assert_eq!(listed_switches, json!(["0x1", "0x2", "0x3"]));
    let graph = script(
        &browser,
        "const cy = window.sliced.cy; return {
            switches: cy.nodes('[kind = \"switch\"]').map(n => n.id()).sort(),
            links: cy.edges('[kind = \"link\"]').map(e => [e.source().id(), e.target().id()].sort().join(' ')).sort(),
            hosts: cy.nodes('[kind = \"host\"]').map(n => n.id()) };",
    )
    .await;
    assert_eq!(
        graph,
        json!({"switches": ["sw:0x1", "sw:0x2", "sw:0x3"],
               "links": ["sw:0x1 sw:0x2", "sw:0x2 sw:0x3"],
               "hosts": ["host:00:00:00:00:00:01"]})
    );

    // A slice made in the page is in the store, as the `slice` tool sees it.
    fill(&browser, "#create-slice input[name=name]", "web").await;
    click(&browser, "#create-slice button[type=submit]").await;
    assert!(
        eventually(WAIT, || listed(dir.path())
            .lines()
            .any(|line| line.trim() == "web")),
        "`slice list` shows the slice made in the page: {}",
        listed(dir.path())
    );
    until(
        &browser,
        "document.querySelector('#slices [data-slice=\"web\"]') !== null",
    )
    .await;

    // Changes made with the tool appear in the page as they happen, without a reload: a
    // mark left in the page survives.
    script(&browser, "window.notReloaded = true; return null;").await;
    let made = slice(dir.path(), &["add", "red"]);
    assert!(made.status.success(), "{made:?}");
    let admitted = slice(
        dir.path(),
        &[
            "add_host",
            "--mac",
            "00:00:00:00:00:01",
            "--port",
            "0x1:1",
            "--slice",
            "red",
        ],
    );
    assert!(admitted.status.success(), "{admitted:?}");
    until(
        &browser,
        "document.querySelector('#slices [data-slice=\"red\"] [data-port=\"0x1:1\"] [data-mac=\"00:00:00:00:00:01\"]') !== null \
         && document.querySelector('[data-host=\"00:00:00:00:00:01\"]').dataset.slice === 'red'",
    )
    .await;
    assert_eq!(
        script(&browser, "return window.notReloaded === true;").await,
        json!(true)
    );
    // The host is drawn in its slice's colour, not the grey of hosts in no slice.
    let host = script(
        &browser,
        "const host = window.sliced.cy.getElementById('host:00:00:00:00:00:01');
         return {slice: host.data('slice'), grey: host.data('colour') === '#999999'};",
    )
    .await;
    assert_eq!(host, json!({"slice": "red", "grey": false}));

    // Nothing in the page, the vendored library included, broke its security policy.
    assert_eq!(
        script(&browser, "return window.sliced.refused;").await,
        json!([])
    );
    // The view with two slices and a host in one: the artifact CI keeps.
    save_screenshot(&browser, "ui-screenshot.png").await;

    // A host added with the page's form is in the store, its port brought along.
    let pick_red = "const select = document.querySelector('#add-host select'); \
                    select.value = 'red'; return select.value;";
    assert_eq!(script(&browser, pick_red).await, json!("red"));
    fill(&browser, "#add-host input[name=port]", "0x2:1").await;
    fill(&browser, "#add-host input[name=mac]", "00:00:00:00:00:02").await;
    click(&browser, "#add-host button[type=submit]").await;
    assert!(
        eventually(WAIT, || listed(dir.path()).contains("00:00:00:00:00:02")),
        "`slice list` shows the host added in the page: {}",
        listed(dir.path())
    );
    until(
        &browser,
        "document.querySelector('#slices [data-slice=\"red\"] [data-port=\"0x2:1\"] [data-mac=\"00:00:00:00:00:02\"]') !== null",
    )
    .await;

    // Removing a host and deleting a slice in the page change the store.
    click(
        &browser,
        "#slices [data-slice=\"red\"] [data-mac=\"00:00:00:00:00:01\"] button.remove",
    )
    .await;
    answer_dialog(&browser, true).await;
    let port_kept_host_gone = |list: &str| {
        list.contains("0x1:1") && !list.contains("00:00:00:00:00:01") && list.contains("red")
    };
    assert!(
        eventually(WAIT, || port_kept_host_gone(&listed(dir.path()))),
        "`slice list` after removing the host in the page: {}",
        listed(dir.path())
    );
    click(&browser, "#slices [data-slice=\"web\"] > button.remove").await;
    answer_dialog(&browser, true).await;
    assert!(
        eventually(WAIT, || !listed(dir.path())
            .lines()
            .any(|line| line.trim() == "web")),
        "`slice list` after deleting the slice in the page: {}",
        listed(dir.path())
    );
    until(
        &browser,
        "document.querySelector('#slices [data-slice=\"web\"]') === null \
         && document.querySelector('[data-host=\"00:00:00:00:00:01\"]').dataset.slice === 'red'",
    )
    .await;

    browser.close().await.expect("the browser closes");
}

/// Another web server on this host, the site a crafted login link would send the browser
/// to: it answers every request with a page and counts the requests.
struct Elsewhere {
    address: std::net::SocketAddr,
    visits: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Elsewhere {
    fn start() -> Self {
        use std::io::Write;
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind(free_port()).expect("a free port binds");
        let address = listener.local_addr().expect("a bound address");
        let visits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (counted, stopped) = (visits.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    return;
                }
                counted.fetch_add(1, Ordering::SeqCst);
                if let Ok(mut stream) = stream {
                    let _ = stream.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 6\r\n\
                          Connection: close\r\n\r\npwned!",
                    );
                }
            }
        });
        Self {
            address,
            visits,
            stop,
        }
    }
}

impl Drop for Elsewhere {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        // Wakes the accepting thread, which then sees the flag.
        let _ = TcpStream::connect(self.address);
    }
}

/// A login link whose `?next=` names another site (through tabs and newlines the URL
/// parser drops, backslashes it reads as slashes, absolute and script URLs) ends, in a
/// real browser, on the web view of the daemon's own origin, never on the other site.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_login_returns_only_to_the_daemons_own_origin() {
    let Some(driver) = Driver::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let elsewhere = Elsewhere::start();
    let own_origin = format!("http://{}", daemon.http);
    let browser = driver.browser().await;
    for query in crate::auth::foreign_next_queries(&elsewhere.address.to_string()) {
        let login = daemon.url(&format!("/auth/developer?next={query}"));
        browser.goto(&login).await.expect("the login opens");
        fill(&browser, "input[name=name]", "Dev").await;
        fill(&browser, "input[name=email]", "dev@example.com").await;
        click(&browser, "button[type=submit]").await;
        until(
            &browser,
            &format!("location.origin !== '{own_origin}' || location.pathname === '/ui'"),
        )
        .await;
        let at = browser.current_url().await.expect("a url");
        assert_eq!(
            (at.origin().ascii_serialization(), at.path()),
            (own_origin.clone(), "/ui"),
            "after the login with next={query}"
        );
    }
    assert_eq!(
        elsewhere.visits.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the other site was visited"
    );
    browser.close().await.expect("the browser closes");
}
