//! The web view's login through a real OpenID provider, in a real browser (headless
//! Chromium over WebDriver): `/ui` sends the browser to the provider, whose login page it
//! fills in, and the provider sends it back to the view, which names the user. Leaves a
//! screenshot at `target/ui-oidc-screenshot.png` (or in `CARGO_TARGET_DIR`).

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

use crate::common::free_port;
use crate::oidc::{Provider, Sliced};

/// How long a page may take on a loaded two-core machine.
const WAIT: Duration = Duration::from_secs(30);

fn on_path(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// A chromedriver of its own on a free port, killed when dropped.
struct Driver {
    child: Child,
    url: String,
    chromium: PathBuf,
}

impl Driver {
    /// `None` (the test skips) without the browser, except in CI, where the test fails.
    fn start() -> Option<Self> {
        let (Some(driver), Some(chromium)) = (on_path("chromedriver"), on_path("chromium")) else {
            let message = "the browser test needs chromium and chromedriver: \
                           apt-get install chromium chromium-driver";
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
        let deadline = Instant::now() + WAIT;
        while TcpStream::connect(address).is_err() {
            assert!(
                Instant::now() < deadline,
                "chromedriver did not listen on {address}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
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

/// Waits until `condition`, a JavaScript expression, holds in the page.
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
                    "return location.href + ': ' + (document.body ? document.body.innerText : '');",
                    vec![],
                )
                .await
                .unwrap_or_default();
            panic!("the page never showed `{condition}`; it shows: {page}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oidc_the_web_view_logs_in_through_the_provider() {
    let Some(driver) = Driver::start() else {
        return;
    };
    let http = free_port();
    let Some(provider) = Provider::start(free_port(), &format!("http://{http}/auth/oidc/callback"))
    else {
        return;
    };
    let sliced = Sliced::start(http, &provider.issuer());
    let browser = driver.browser().await;

    browser
        .goto(&sliced.url("/ui"))
        .await
        .expect("the view opens");
    // Sent to the provider's login page.
    let provider_page = format!("location.origin === {:?}", provider.issuer());
    until(
        &browser,
        &format!("{provider_page} && document.querySelector('input[name=login]')"),
    )
    .await;
    let field = |name: &'static str| browser.find(Locator::Css(name));
    field("input[name=login]")
        .await
        .expect("a login field")
        .send_keys("ada")
        .await
        .unwrap();
    field("input[name=password]")
        .await
        .expect("a password field")
        .send_keys("any password")
        .await
        .unwrap();
    field("button[type=submit]")
        .await
        .expect("a sign-in button")
        .click()
        .await
        .unwrap();

    // Back on the view, logged in as the provider's user.
    let view = format!("location.href === {:?}", sliced.url("/ui"));
    until(
        &browser,
        &format!("{view} && document.getElementById('user').textContent.includes('Ada Lovelace')"),
    )
    .await;
    let shown = browser
        .find(Locator::Id("user"))
        .await
        .expect("the user's name")
        .text()
        .await
        .unwrap();
    assert_eq!(shown, "Ada Lovelace <ada@example.com>");

    let png = browser.screenshot().await.expect("a screenshot");
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    std::fs::create_dir_all(&dir).expect("target/ exists");
    let path = dir.join("ui-oidc-screenshot.png");
    std::fs::write(&path, png).expect("the screenshot is written");
    browser.close().await.expect("the browser closes");
    drop(sliced);
}
