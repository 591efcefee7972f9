//! The view as an operator uses it on a network with several slices: a legend with one
//! colour per slice, a host in two slices drawn in both, the details of a clicked switch
//! and host, a learned host put into a slice by clicking, and removals that ask first.

use std::time::Duration;

use fantoccini::actions::{InputSource, MouseActions, PointerAction, MOUSE_BUTTON_LEFT};
use fantoccini::Client;
use openflow::Version;
use serde_json::{json, Value};

use super::{
    answer_dialog, click, log_in, logged_in, save_screenshot, script, until, Driver, WAIT,
};
use crate::common::switch::{eventually, frame, Network, BROADCAST};
use crate::common::{status_json, Daemon};

/// Enough slices that hashed colours could collide; none of these names is a colour's.
const SLICES: [&str; 9] = [
    "engineering",
    "guests",
    "lab",
    "s4",
    "s5",
    "s6",
    "s7",
    "s8",
    "s9",
];

const SHAGUEST_HOST: &str = "00:00:00:00:00:01";
const GUEST_HOST: &str = "00:00:00:00:00:02";
const UNBOUND_HOST: &str = "00:00:00:00:00:03";

/// Clicks, with the real pointer, the graph's node `id` where Cytoscape drew it. A redraw
/// can move the node between reading its place and clicking: then it is clicked again,
/// until `opened` (a JavaScript condition) holds.
async fn click_node(browser: &Client, id: &str, opened: &str) {
    let place = format!(
        "const node = window.sliced.cy.getElementById('{id}');
         const frame = document.getElementById('graph').getBoundingClientRect();
         const at = node.renderedPosition();
         return [frame.left + at.x, frame.top + at.y];"
    );
    let check = format!("return Boolean({opened});");
    for _ in 0..10 {
        let at = script(browser, &place).await;
        let (x, y) = (at[0].as_f64().expect("x"), at[1].as_f64().expect("y"));
        let pointer = MouseActions::new("mouse".into())
            .then(PointerAction::MoveTo {
                duration: None,
                x: x.round(),
                y: y.round(),
            })
            .then(PointerAction::Down {
                button: MOUSE_BUTTON_LEFT,
            })
            .then(PointerAction::Up {
                button: MOUSE_BUTTON_LEFT,
            });
        browser
            .perform_actions(pointer)
            .await
            .expect("the pointer clicks");
        tokio::time::sleep(Duration::from_millis(300)).await;
        if script(browser, &check).await == json!(true) {
            return;
        }
    }
    panic!("clicking {id} never showed `{opened}`");
}

async fn text_of(browser: &Client, selector: &str) -> String {
    let found = script(
        browser,
        &format!(
            "const e = document.querySelector('{selector}'); return e ? e.textContent : null;"
        ),
    )
    .await;
    found
        .as_str()
        .unwrap_or_else(|| panic!("nothing matches {selector}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_view_colours_slices_details_what_is_clicked_and_asks_before_removing() {
    let Some(driver) = Driver::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start_with(dir.path(), &["--lldp-interval-ms", "100"]);
    let reader = logged_in(&daemon);
    let read = |path: &str| {
        let (status, body) = status_json(reader.get(&daemon.url(&format!("/api{path}"))).call());
        assert_eq!(status, 200, "GET /api{path}: {body}");
        body
    };
    // Two switches on one cable (ports 2); hosts 1 and 2 behind switch 1, host 3 behind
    // switch 2. Host 1 is in engineering and lab, host 2 in guests, host 3 in no slice.
    daemon.add_host("engineering", "0x1:1", SHAGUEST_HOST);
    daemon.add_host("lab", "0x1:1", SHAGUEST_HOST);
    daemon.add_host("guests", "0x1:3", GUEST_HOST);
    for name in &SLICES[3..] {
        let (status, body) = status_json(
            reader
                .post(&daemon.url("/api/slices"))
                .send_json(json!({ "name": name })),
        );
        assert_eq!(status, 201, "POST /api/slices {name}: {body}");
    }
    let mut network = Network::new();
    network.cable((1, 2), (2, 2));
    for dpid in 1..=2 {
        network.connect(daemon.openflow, dpid, Version::Of13, 3);
    }
    assert!(
        eventually(WAIT, || read("/topology/links").as_array().map(Vec::len)
            == Some(2)),
        "links: {}",
        read("/topology/links")
    );
    network.switch(1).packet_in(1, frame(1, BROADCAST));
    network.switch(1).packet_in(3, frame(2, BROADCAST));
    network.switch(2).packet_in(1, frame(3, BROADCAST));
    assert!(
        eventually(WAIT, || read("/topology/hosts").as_array().map(Vec::len)
            == Some(3)),
        "hosts learned: {}",
        read("/topology/hosts")
    );

    let browser = driver.browser().await;
    log_in(&browser, &daemon).await;
    until(
        &browser,
        "document.querySelectorAll('[data-legend]').length === 9 \
         && window.sliced.cy !== null && window.sliced.cy.nodes('[kind = \"host\"]').length === 3",
    )
    .await;

    // The legend: every slice once, in name order, each in a colour of its own.
    let legend = script(
        &browser,
        "return [...document.querySelectorAll('#legend [data-legend]')].map(entry => [
            entry.dataset.legend,
            getComputedStyle(entry.querySelector('.swatch')).backgroundColor]);",
    )
    .await;
    let entries = legend.as_array().expect("legend entries");
    let names: Vec<&str> = entries.iter().map(|e| e[0].as_str().unwrap()).collect();
    assert_eq!(names, SLICES);
    let colours: std::collections::BTreeSet<&str> =
        entries.iter().map(|e| e[1].as_str().unwrap()).collect();
    assert_eq!(colours.len(), SLICES.len(), "colours repeat: {legend}");
    let colour_of = |slice: &str| {
        entries
            .iter()
            .find(|e| e[0] == slice)
            // Cytoscape writes its colours without the spaces the browser puts in.
            .map(|e| e[1].as_str().unwrap().replace(' ', ""))
            .unwrap()
    };
    // Hosts in no slice are grey, in a colour no slice has.
    let grey = script(
        &browser,
        "return getComputedStyle(document.querySelector('#legend [data-legend-none] .swatch')).backgroundColor;",
    )
    .await;
    assert!(!colours.contains(grey.as_str().unwrap()), "{grey}");

    // Host 1 is drawn as a pie of engineering's and lab's colours, and listed in both.
    let pie = script(
        &browser,
        &format!(
            "const host = window.sliced.cy.getElementById('host:{SHAGUEST_HOST}');
             return [1, 2, 3].map(i => [host.style(`pie-${{i}}-background-color`),
                                        host.style(`pie-${{i}}-background-size`)]);"
        ),
    )
    .await;
    assert_eq!(
        pie,
        json!([
            [colour_of("engineering"), "50%"],
            [colour_of("lab"), "50%"],
            ["rgb(153,153,153)", "0%"]
        ])
    );
    let listed = script(
        &browser,
        &format!(
            "const entry = document.querySelector('#hosts [data-host=\"{SHAGUEST_HOST}\"]');
             return [entry.dataset.slice, [...entry.querySelectorAll('.slice-tag')].map(t => t.textContent)];"
        ),
    )
    .await;
    assert_eq!(listed, json!(["engineering lab", ["engineering", "lab"]]));
    save_screenshot(&browser, "ui-legend.png").await;

    // A click on switch 1 details its ports and its flows, as the REST views say.
    click_node(
        &browser,
        "sw:0x1",
        "document.getElementById('details').dataset.name === '0x1'",
    )
    .await;
    let switch = read("/topology/switches")
        .as_array()
        .unwrap()
        .iter()
        .find(|sw| sw["dpid"] == 1)
        .cloned()
        .unwrap();
    let entries = switch["pipeline_entries"]
        .as_u64()
        .expect("a 1.3 switch runs the pipeline");
    assert!(
        text_of(&browser, "#details [data-detail=\"flows\"]")
            .await
            .starts_with(&format!("{entries} ")),
        "flows: {}",
        text_of(&browser, "#details").await
    );
    let ports = script(
        &browser,
        "return [document.getElementById('details').dataset.kind,
                 [...document.querySelectorAll('#details tr[data-port]')].map(r => r.dataset.port)];",
    )
    .await;
    assert_eq!(ports, json!(["switch", ["0x1:1", "0x1:2", "0x1:3"]]));
    assert!(text_of(&browser, "#details tr[data-port=\"0x1:2\"]")
        .await
        .contains("cable to 0x2:2"));

    // A click on host 1 details its MAC, its port and both its slices.
    click_node(
        &browser,
        &format!("host:{SHAGUEST_HOST}"),
        &format!("document.getElementById('details').dataset.name === '{SHAGUEST_HOST}'"),
    )
    .await;
    let host = script(
        &browser,
        "return [document.getElementById('details').dataset.kind,
                 document.querySelector('#details [data-detail=\"mac\"]').textContent,
                 document.querySelector('#details [data-detail=\"port\"]').textContent,
                 [...document.querySelectorAll('#details .host-slices [data-slice]')].map(t => t.dataset.slice)];",
    )
    .await;
    assert_eq!(
        host,
        json!([
            "host",
            SHAGUEST_HOST,
            "0x1:1 (switch 0x1)",
            ["engineering", "lab"]
        ])
    );
    save_screenshot(&browser, "ui-details.png").await;

    // Host 3, in no slice, is put into guests from its details: pick the slice, click.
    click_node(
        &browser,
        &format!("host:{UNBOUND_HOST}"),
        "document.querySelector('#details [data-detail=\"no-slice\"]') !== null",
    )
    .await;
    script(
        &browser,
        "const select = document.querySelector('#details .add-to-slice select');
         select.value = 'guests'; select.dispatchEvent(new Event('change')); return null;",
    )
    .await;
    click(&browser, "#details button.add-to-slice").await;
    // The port is not in the slice (404) until the click's request is carried out.
    let guest_macs = |port: &str| {
        status_json(
            reader
                .get(&daemon.url(&format!("/api/slices/guests/ports/{port}/mac_addresses")))
                .call(),
        )
    };
    assert!(
        eventually(WAIT, || guest_macs("0x2:1")
            == (200, json!([{ "name": UNBOUND_HOST }]))),
        "host 3 in guests: {}",
        read("/slices/guests/ports")
    );
    until(
        &browser,
        "[...document.querySelectorAll('#details .host-slices [data-slice]')].map(t => t.dataset.slice).join() === 'guests'",
    )
    .await;

    // Every removal asks first: no leaves it, yes removes.
    let guest_ports = || read("/slices/guests/ports");
    let has_port =
        |ports: &Value, port: &str| ports.as_array().unwrap().iter().any(|p| p["name"] == port);
    let remove_port = "#slices [data-slice=\"guests\"] [data-port=\"0x1:3\"] > button.remove";
    click(&browser, remove_port).await;
    answer_dialog(&browser, false).await;
    // What an unasked removal would have done by now, had it been sent.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(has_port(&guest_ports(), "0x1:3"), "{}", guest_ports());
    click(&browser, remove_port).await;
    answer_dialog(&browser, true).await;
    assert!(
        eventually(WAIT, || !has_port(&guest_ports(), "0x1:3")),
        "{}",
        guest_ports()
    );
    let remove_mac = format!(
        "#slices [data-slice=\"engineering\"] [data-mac=\"{SHAGUEST_HOST}\"] button.remove"
    );
    click(&browser, &remove_mac).await;
    answer_dialog(&browser, false).await;
    let remove_slice = "#slices [data-slice=\"s9\"] > button.remove";
    click(&browser, remove_slice).await;
    answer_dialog(&browser, false).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        read("/slices/engineering/ports/0x1:1/mac_addresses"),
        json!([{ "name": SHAGUEST_HOST }])
    );
    assert_eq!(read("/slices").as_array().map(Vec::len), Some(SLICES.len()));
    click(&browser, remove_slice).await;
    answer_dialog(&browser, true).await;
    assert!(
        eventually(WAIT, || read("/slices").as_array().map(Vec::len)
            == Some(SLICES.len() - 1)),
        "{}",
        read("/slices")
    );
    assert_eq!(
        script(&browser, "return window.sliced.refused;").await,
        json!([])
    );
    browser.close().await.expect("the browser closes");
}
