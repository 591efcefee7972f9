//! The view around its content: the hint on a network without switches, the addresses
//! that lead to the view, the connection indicator when the event stream is cut and
//! comes back, and a viewer's page without write controls.

use openflow::Version;
use serde_json::json;

use super::{click, fill, log_in, script, until, Driver, WAIT};
use crate::common::switch::{eventually, frame, Network, BROADCAST};
use crate::common::{slice, status_json, Daemon};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_root_leads_to_the_view_which_names_the_openflow_address_while_empty() {
    let Some(driver) = Driver::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let browser = driver.browser().await;
    // `/` leads to the view, which (without a session) leads to the login, and back.
    browser.goto(&daemon.url("/")).await.expect("/ opens");
    until(&browser, "location.pathname === '/auth/developer'").await;
    let at = browser.current_url().await.expect("a url");
    assert_eq!(at.query(), Some("next=%2Fui"), "{at}");
    fill(&browser, "input[name=name]", "Dev").await;
    fill(&browser, "input[name=email]", "dev@example.com").await;
    click(&browser, "button[type=submit]").await;
    until(&browser, "location.pathname === '/ui'").await;
    for path in ["/", "/ui/"] {
        browser
            .goto(&daemon.url(path))
            .await
            .expect("the path opens");
        until(
            &browser,
            "location.pathname === '/ui' && window.sliced !== undefined",
        )
        .await;
    }

    // No switch yet: the hint names the listener the test's daemon was started on.
    let openflow = daemon.openflow.to_string();
    until(
        &browser,
        "document.body.dataset.refreshed !== undefined && !document.getElementById('empty').hidden",
    )
    .await;
    let hint = script(
        &browser,
        "const hint = document.getElementById('empty');
         return [[...hint.querySelectorAll('[data-openflow]')].map(e => e.dataset.openflow),
                 hint.textContent, hint.offsetParent !== null];",
    )
    .await;
    assert_eq!(hint[0], json!([openflow]), "{hint}");
    let text = hint[1].as_str().unwrap();
    assert!(
        text.contains(&format!("ovs-vsctl set-controller br0 tcp:{openflow}")),
        "{text}"
    );
    assert_eq!(hint[2], json!(true), "the hint is visible");

    // Once a switch is connected the hint is gone.
    let mut network = Network::new();
    network.connect(daemon.openflow, 1, Version::Of13, 2);
    until(
        &browser,
        "document.getElementById('empty').hidden \
         && document.querySelectorAll('[data-switch]').length === 1",
    )
    .await;
    browser.close().await.expect("the browser closes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_indicator_leaves_live_when_the_stream_is_cut_and_returns_with_the_daemon() {
    let Some(driver) = Driver::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let http = daemon.http;
    let browser = driver.browser().await;
    log_in(&browser, &daemon).await;
    until(
        &browser,
        "document.getElementById('connection').dataset.state === 'live'",
    )
    .await;

    // The daemon dies: its streams end without a word, as a cut connection does.
    daemon.kill9();
    until(
        &browser,
        "document.getElementById('connection').dataset.state === 'disconnected' \
         && document.getElementById('connection').textContent.includes('disconnected')",
    )
    .await;
    // While it is down the page keeps saying so (its retries fail).
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    assert_eq!(
        script(
            &browser,
            "return document.getElementById('connection').dataset.state;"
        )
        .await,
        json!("disconnected")
    );
    // A change made while no daemon runs sends no event; the page reads it on return.
    let made = slice(dir.path(), &["add", "offline"]);
    assert!(made.status.success(), "{made:?}");

    let _back = Daemon::start_with_http(dir.path(), http);
    until(
        &browser,
        "document.getElementById('connection').dataset.state === 'live' \
         && document.querySelector('#slices [data-slice=\"offline\"]') !== null",
    )
    .await;
    browser.close().await.expect("the browser closes");
}

/// Sends the DevTools command `cmd` to the browser's page through chromedriver
/// (`goog/cdp/execute`).
async fn devtools(
    driver: &Driver,
    browser: &fantoccini::Client,
    cmd: &str,
    params: serde_json::Value,
) {
    let session = browser
        .session_id()
        .await
        .expect("a session")
        .expect("a session id");
    let url = format!("{}/session/{session}/goog/cdp/execute", driver.url);
    let body = json!({ "cmd": cmd, "params": params });
    let (status, answer) =
        tokio::task::spawn_blocking(move || status_json(ureq::post(&url).send_json(body)))
            .await
            .expect("the request runs");
    assert_eq!(status, 200, "goog/cdp/execute {cmd}: {answer}");
}

/// The page of a viewer, whom an authenticating proxy names (the browser sends the
/// proxy's headers from the proxy's address, loopback) with a group that the daemon's
/// roles make a viewer: no control that changes anything, and a write the page would
/// not offer is refused by the daemon anyway.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_gets_no_control_that_changes_anything() {
    let Some(driver) = Driver::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("sliced.toml");
    std::fs::write(
        &config,
        "[auth.roles]\noperator = [\"net-admins\"]\ndefault = \"viewer\"\n\n\
         [auth.proxy]\nuser_header = \"X-Forwarded-User\"\n\
         email_header = \"X-Forwarded-Email\"\nrole_header = \"X-Forwarded-Groups\"\n\
         trusted = [\"127.0.0.1\"]\n",
    )
    .unwrap();
    let data = dir.path().join("data");
    let daemon = Daemon::start_with(&data, &["--config", config.to_str().unwrap()]);
    daemon.add_host("blue", "0x1:1", "00:00:00:00:00:01");
    let mut network = Network::new();
    network.connect(daemon.openflow, 1, Version::Of13, 3);
    assert!(
        eventually(WAIT, || daemon.switch_view(1).is_some()),
        "the switch connects"
    );
    network.switch(1).packet_in(2, frame(2, BROADCAST));
    assert!(
        eventually(WAIT, || daemon
            .get_json("/topology/hosts")
            .as_array()
            .is_some_and(|hosts| !hosts.is_empty())),
        "the host is learned"
    );
    let browser = driver.browser().await;
    devtools(&driver, &browser, "Network.enable", json!({})).await;
    devtools(
        &driver,
        &browser,
        "Network.setExtraHTTPHeaders",
        json!({"headers": {
            "X-Forwarded-User": "Vera",
            "X-Forwarded-Email": "vera@example.com",
            "X-Forwarded-Groups": "staff",
        }}),
    )
    .await;
    // No login: the proxy's word is the login.
    browser
        .goto(&daemon.url("/ui"))
        .await
        .expect("the page opens");
    until(
        &browser,
        "document.querySelector('#slices [data-slice=\"blue\"] [data-mac]') !== null \
         && document.querySelector('[data-details=\"host:00:00:00:00:00:02\"]') !== null",
    )
    .await;
    // The details of the host in no slice, which offer an operator to add it, opened
    // from the lists as text.
    click(&browser, "#network details summary").await;
    click(&browser, "[data-details=\"host:00:00:00:00:00:02\"]").await;
    until(
        &browser,
        "document.getElementById('details').dataset.name === '00:00:00:00:00:02'",
    )
    .await;
    let page = script(
        &browser,
        "const visible = e => e.offsetParent !== null;
         const controls = [...document.querySelectorAll('button, input, select, form')]
           .filter(e => visible(e) && !e.disabled)
           // The graph's zoom and layout buttons change only the viewer's own view.
           .filter(e => !e.closest('#logout, #graph-tools') && !e.matches('button.link, #details .close'));
         return {role: window.sliced.role,
                 note: visible(document.getElementById('view-only')),
                 user: document.getElementById('user').textContent,
                 writes: controls.map(e => e.outerHTML.slice(0, 80))};",
    )
    .await;
    assert_eq!(
        page,
        json!({"role": "viewer", "note": true, "user": "Vera <vera@example.com>", "writes": []})
    );
    let refused = script(
        &browser,
        "return fetch('/api/slices', {method: 'POST', credentials: 'same-origin',
           headers: {'Content-Type': 'application/json', Accept: 'application/json'},
           body: JSON.stringify({name: 'red'})})
           .then(async r => [r.status, await r.json()]);",
    )
    .await;
    assert_eq!(refused, json!([403, {"status": "forbidden"}]));
    browser.close().await.expect("the browser closes");
}
