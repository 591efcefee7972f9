//! How the graph looks on a small network (two switches, four hosts, three slices): the
//! same layout on every load, a dragged node kept where it was put, zoom and pan, labels
//! with the hosts' announced addresses that do not overlap, and slice colours that follow
//! the slice's name alone.

use std::time::Duration;

use fantoccini::actions::{InputSource, MouseActions, PointerAction, MOUSE_BUTTON_LEFT};
use fantoccini::Client;
use openflow::Version;
use serde_json::{json, Value};

use super::{click, log_in, logged_in, save_screenshot, script, until, Driver, WAIT};
use crate::common::switch::{eventually, Network};
use crate::common::{agent, status_json, Daemon};
use crate::controller::arp_request;

/// Two switches on one cable (ports 2), hosts 1 and 2 behind switch 1 (ports 1 and 3),
/// hosts 3 and 4 behind switch 2; each host has said its IPv4 address with an ARP
/// request. Host 1 is in `red`, host 2 in `engineering`, host 3 in `guests`, host 4 in
/// no slice. The emulated switches and the data directory live as long as it does.
struct SmallNetwork {
    daemon: Daemon,
    _network: Network,
    _dir: tempfile::TempDir,
}

const HOSTS: [(u8, u64, u32, [u8; 4]); 4] = [
    (1, 1, 1, [10, 0, 0, 1]),
    (2, 1, 3, [10, 0, 0, 2]),
    (3, 2, 1, [10, 0, 0, 3]),
    (4, 2, 3, [10, 0, 0, 4]),
];

impl SmallNetwork {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let daemon = Daemon::start_with(dir.path(), &["--lldp-interval-ms", "100"]);
        daemon.add_host("red", "0x1:1", "00:00:00:00:00:01");
        daemon.add_host("engineering", "0x1:3", "00:00:00:00:00:02");
        daemon.add_host("guests", "0x2:1", "00:00:00:00:00:03");
        let mut network = Network::new();
        network.cable((1, 2), (2, 2));
        for dpid in 1..=2 {
            network.connect(daemon.openflow, dpid, Version::Of13, 3);
        }
        let reader = logged_in(&daemon);
        let read = |path: &str| {
            let (status, body) =
                status_json(reader.get(&daemon.url(&format!("/api{path}"))).call());
            assert_eq!(status, 200, "GET /api{path}: {body}");
            body
        };
        assert!(
            eventually(WAIT, || read("/topology/links").as_array().map(Vec::len)
                == Some(2)),
            "links: {}",
            read("/topology/links")
        );
        for (host, dpid, port, ip) in HOSTS {
            network.switch(dpid).packet_in(port, arp_request(host, ip));
        }
        assert!(
            eventually(WAIT, || read("/topology/hosts").as_array().map(Vec::len)
                == Some(HOSTS.len())),
            "hosts learned: {}",
            read("/topology/hosts")
        );
        Self {
            daemon,
            _network: network,
            _dir: dir,
        }
    }
}

/// Waits until the graph shows the small network's two switches and four hosts, each host
/// labelled with its address, and the three slices in the legend.
async fn drawn(browser: &Client) {
    until(
        browser,
        "window.sliced.cy !== null && window.sliced.cy.nodes('[kind = \"switch\"]').length === 2 \
         && window.sliced.cy.nodes('[kind = \"host\"]').length === 4 \
         && window.sliced.cy.nodes('[kind = \"host\"]').every(n => n.data('label').startsWith('10.0.0.')) \
         && document.querySelectorAll('[data-legend]').length === 3",
    )
    .await;
}

/// Every node's place in the graph's own coordinates, by id.
const POSITIONS: &str = "const at = {}; window.sliced.cy.nodes().forEach(n => { \
    const p = n.position(); at[n.id()] = [Math.round(p.x), Math.round(p.y)]; }); return at;";

/// The colour of each slice's swatch in the legend, by slice.
const LEGEND: &str = "const colours = {}; \
    document.querySelectorAll('#legend [data-legend]').forEach(entry => { \
      colours[entry.dataset.legend] = getComputedStyle(entry.querySelector('.swatch')).backgroundColor; }); \
    return colours;";

/// Moves the real pointer from `from` to `to` (page coordinates) with the button down.
async fn drag(browser: &Client, from: (f64, f64), to: (f64, f64)) {
    let pointer = MouseActions::new("mouse".into())
        .then(PointerAction::MoveTo {
            duration: None,
            x: from.0.round(),
            y: from.1.round(),
        })
        .then(PointerAction::Down {
            button: MOUSE_BUTTON_LEFT,
        })
        // In steps, as a hand moves it: each step is a move event of its own.
        .then(PointerAction::MoveBy {
            duration: Some(Duration::from_millis(100)),
            x: ((to.0 - from.0) / 4.0).round(),
            y: ((to.1 - from.1) / 4.0).round(),
        })
        .then(PointerAction::MoveBy {
            duration: Some(Duration::from_millis(100)),
            x: ((to.0 - from.0) / 4.0).round(),
            y: ((to.1 - from.1) / 4.0).round(),
        })
        .then(PointerAction::MoveTo {
            duration: Some(Duration::from_millis(100)),
            x: to.0.round(),
            y: to.1.round(),
        })
        .then(PointerAction::Pause {
            duration: Duration::from_millis(100),
        })
        .then(PointerAction::Up {
            button: MOUSE_BUTTON_LEFT,
        });
    browser
        .perform_actions(pointer)
        .await
        .expect("the pointer drags");
    browser
        .release_actions()
        .await
        .expect("the pointer lets go");
}

/// Where node `id` is drawn, in page coordinates.
async fn on_page(browser: &Client, id: &str) -> (f64, f64) {
    let at = script(
        browser,
        &format!(
            "const at = window.sliced.cy.getElementById('{id}').renderedPosition(); \
             const frame = document.getElementById('graph').getBoundingClientRect(); \
             return [frame.left + at.x, frame.top + at.y];"
        ),
    )
    .await;
    (at[0].as_f64().expect("x"), at[1].as_f64().expect("y"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_network_is_laid_out_the_same_and_labels_hosts_by_address_apart() {
    let Some(driver) = Driver::start() else {
        return;
    };
    let small = SmallNetwork::start();
    // Two browsers, each with its own empty storage: nothing carries over but the
    // network itself.
    let mut layouts = Vec::new();
    for _ in 0..2 {
        let browser = driver.browser().await;
        log_in(&browser, &small.daemon).await;
        drawn(&browser).await;
        layouts.push(script(&browser, POSITIONS).await);
        if layouts.len() == 2 {
            save_screenshot(&browser, "ui-small-network.png").await;
            // Host 1's label: its announced address over its MAC.
            let label = script(
                &browser,
                "return window.sliced.cy.getElementById('host:00:00:00:00:00:01').data('label');",
            )
            .await;
            assert_eq!(label, json!("10.0.0.1\n00:00:00:00:00:01"));
            // No two nodes' boxes, labels included, overlap, and the labels are at least
            // 10 px tall on the screen.
            let overlaps = script(
                &browser,
                "const cy = window.sliced.cy; const boxes = cy.nodes().map(n => [n.id(), n.renderedBoundingBox({includeLabels: true})]);
                 const hits = [];
                 for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
                   const [a, b] = [boxes[i][1], boxes[j][1]];
                   if (a.x1 < b.x2 && b.x1 < a.x2 && a.y1 < b.y2 && b.y1 < a.y2) hits.push(boxes[i][0] + ' ' + boxes[j][0]);
                 }
                 return {hits, font: 12 * cy.zoom() >= 10};",
            )
            .await;
            assert_eq!(overlaps, json!({"hits": [], "font": true}));
            // The graph is fitted: it spans most of the canvas one way or the other.
            let filled = script(
                &browser,
                "const cy = window.sliced.cy; const box = cy.elements().renderedBoundingBox({includeLabels: true});
                 return Math.max(box.w / cy.width(), box.h / cy.height());",
            )
            .await;
            assert!(
                filled.as_f64().expect("a ratio") > 0.8,
                "the graph fills {filled} of the canvas"
            );
        }
        browser.close().await.expect("the browser closes");
    }
    assert_eq!(
        layouts[0], layouts[1],
        "the two loads laid the network out differently"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dragged_node_stays_put_and_zoom_and_pan_move_the_view() {
    let Some(driver) = Driver::start() else {
        return;
    };
    let small = SmallNetwork::start();
    let browser = driver.browser().await;
    log_in(&browser, &small.daemon).await;
    drawn(&browser).await;

    // The zoom buttons zoom; a drag on the background pans.
    let zoom = "return window.sliced.cy.zoom();";
    let before = script(&browser, zoom).await.as_f64().expect("a zoom");
    click(&browser, "#graph-tools [data-tool=zoom-in]").await;
    let after = script(&browser, zoom).await.as_f64().expect("a zoom");
    assert!(after > before * 1.1, "zoom {before} -> {after}");
    click(&browser, "#graph-tools [data-tool=zoom-out]").await;
    let pan = "const p = window.sliced.cy.pan(); return [Math.round(p.x), Math.round(p.y)];";
    let panned_from = script(&browser, pan).await;
    let corner = script(
        &browser,
        "const frame = document.getElementById('graph').getBoundingClientRect(); \
         return [frame.left + 15, frame.bottom - 15];",
    )
    .await;
    let corner = (corner[0].as_f64().unwrap(), corner[1].as_f64().unwrap());
    drag(&browser, corner, (corner.0 + 120.0, corner.1 - 60.0)).await;
    let panned_to = script(&browser, pan).await;
    assert_ne!(panned_from, panned_to, "the background drag did not pan");
    click(&browser, "#graph-tools [data-tool=fit]").await;

    // Switch 2 dragged by the pointer keeps its new place through a reload, and its
    // hosts come along.
    let placed = script(&browser, POSITIONS).await;
    let from = on_page(&browser, "sw:0x2").await;
    drag(&browser, from, (from.0 - 40.0, from.1 + 50.0)).await;
    let dragged = script(&browser, POSITIONS).await;
    assert_ne!(
        dragged["sw:0x2"], placed["sw:0x2"],
        "the switch did not move"
    );
    let moved = |id: &str| {
        [0, 1].map(|i| dragged[id][i].as_i64().unwrap() - placed[id][i].as_i64().unwrap())
    };
    assert_eq!(moved("host:00:00:00:00:00:03"), moved("sw:0x2"));
    assert_eq!(dragged["sw:0x1"], placed["sw:0x1"]);
    browser.refresh().await.expect("the page reloads");
    until(&browser, "window.sliced !== undefined").await;
    drawn(&browser).await;
    let reloaded = script(&browser, POSITIONS).await;
    for id in ["sw:0x1", "sw:0x2", "host:00:00:00:00:00:03"] {
        let near = (0..2).all(|i| {
            (reloaded[id][i].as_i64().unwrap() - dragged[id][i].as_i64().unwrap()).abs() <= 1
        });
        assert!(
            near,
            "{id}: {} after the reload, {} before",
            reloaded[id], dragged[id]
        );
    }
    // "Reset layout" forgets it.
    click(&browser, "#graph-tools [data-tool=reset]").await;
    assert_eq!(script(&browser, POSITIONS).await, placed);
    browser.close().await.expect("the browser closes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slice_named_red_is_red_and_a_new_slice_changes_no_colour() {
    let Some(driver) = Driver::start() else {
        return;
    };
    let small = SmallNetwork::start();
    let browser = driver.browser().await;
    log_in(&browser, &small.daemon).await;
    drawn(&browser).await;
    let legend = script(&browser, LEGEND).await;
    // `red` is drawn red (the browser writes colours as rgb()), and so is its host.
    assert_eq!(legend["red"], json!("rgb(214, 39, 40)"), "{legend}");
    let host = script(
        &browser,
        "return window.sliced.cy.getElementById('host:00:00:00:00:00:01').style('pie-1-background-color');",
    )
    .await;
    assert_eq!(host, json!("rgb(214,39,40)"));
    // A slice named before the others in every order changes none of their colours.
    let (status, body) = status_json(
        agent()
            .post(&small.daemon.url("/slices"))
            .send_json(json!({ "name": "alpha" })),
    );
    assert_eq!(status, 201, "{body}");
    until(
        &browser,
        "document.querySelectorAll('[data-legend]').length === 4",
    )
    .await;
    let grown = script(&browser, LEGEND).await;
    for slice in ["red", "engineering", "guests"] {
        assert_eq!(
            grown[slice], legend[slice],
            "{slice}: {legend} then {grown}"
        );
    }
    let grey = script(
        &browser,
        "return getComputedStyle(document.querySelector('#legend [data-legend-none] .swatch')).backgroundColor;",
    )
    .await;
    let colours: std::collections::BTreeSet<String> = grown
        .as_object()
        .unwrap()
        .values()
        .map(Value::to_string)
        .collect();
    assert_eq!(colours.len(), 4, "colours repeat: {grown}");
    assert!(!colours.contains(&grey.to_string()), "{grey} in {grown}");
    browser.close().await.expect("the browser closes");
}
