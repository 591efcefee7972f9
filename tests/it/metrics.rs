//! `GET /metrics`: its content after real traffic from emulated switches, who may read
//! it, a real Prometheus server scraping it, and the Grafana dashboard built on it.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::switch::{eventually, frame, host, Network, BROADCAST};
use crate::common::{agent, free_port, status_json, Daemon};
use openflow::Version;
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(10);
/// Prometheus takes a few seconds to start and scrape on a loaded two-core machine.
const PROMETHEUS_WAIT: Duration = Duration::from_secs(60);

/// Starts `sliced` with its scraper's listener on a free port; returns that address.
fn daemon_with_metrics(dir: &Path, extra: &[&str]) -> (Daemon, SocketAddr) {
    let metrics = free_port();
    let mut args = vec!["--metrics".to_owned(), metrics.to_string()];
    args.extend(extra.iter().map(|arg| (*arg).to_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    (Daemon::start_with(dir, &args), metrics)
}

fn scrape(url: &str) -> (u16, String) {
    match agent().get(url).call() {
        Ok(response) => (response.status(), response.into_string().unwrap()),
        Err(ureq::Error::Status(status, response)) => (status, response.into_string().unwrap()),
        Err(err) => panic!("GET {url}: {err}"),
    }
}

/// The value of the sample `name` (with its labels, as written) in an OpenMetrics text.
fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .map(|value| value.trim().parse().unwrap())
}

/// The names of the samples in an OpenMetrics text.
fn sample_names(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .map(|line| line.split(['{', ' ']).next().unwrap().to_owned())
        .collect()
}

#[test]
fn metrics_count_switches_slices_packet_ins_and_requests() {
    let dir = tempfile::tempdir().unwrap();
    let (daemon, _) = daemon_with_metrics(dir.path(), &[]);
    daemon.add_host("blue", "0x1:1", "00:00:00:00:00:01");
    daemon.add_host("blue", "0x1:2", "00:00:00:00:00:02");
    let mut network = Network::new();
    let switch = network.connect(daemon.openflow, 1, Version::Of13, 3);
    network.connect(daemon.openflow, 2, Version::Of10, 1);
    assert!(eventually(WAIT, || daemon
        .get_json("/topology/switches")
        .as_array()
        .is_some_and(|switches| switches.len() == 2)));
    switch.packet_in(1, frame(1, BROADCAST));
    switch.packet_in(2, frame(2, host(1)));
    let url = daemon.url("/metrics");
    let mut text = String::new();
    let counted = eventually(WAIT, || {
        let (status, body) = scrape(&url);
        assert_eq!(status, 200, "{body}");
        text = body;
        // The network's gauges are read from the engine as the scrape starts, the
        // counters as it is written: a PACKET_IN handled between the two shows in the
        // counters only, until the next scrape.
        sample(&text, r#"sliced_packet_ins_total{outcome="routed"}"#) == Some(1.0)
            && sample(&text, r#"sliced_switches{version="1.3"}"#) == Some(1.0)
            && sample(&text, "sliced_paths") == Some(1.0)
    });
    assert!(counted, "{text}");
    for (name, value) in [
        (r#"sliced_switches{version="1.0"}"#, 1.0),
        ("sliced_ports", 4.0),
        ("sliced_hosts", 2.0),
        ("sliced_paths", 1.0),
        ("sliced_slices", 1.0),
        ("sliced_bound_ports", 2.0),
        ("sliced_bound_mac_addresses", 2.0),
        (r#"sliced_packet_ins_total{outcome="flooded"}"#, 1.0),
        ("sliced_flow_setups_total", 1.0),
        ("sliced_paths_installed_total", 1.0),
        (r#"sliced_build_info{version="0.1.0"}"#, 1.0),
    ] {
        assert_eq!(sample(&text, name), Some(value), "{name} in\n{text}");
    }
    for counter in [
        "sliced_flow_mods_sent_total",
        "sliced_packet_outs_sent_total",
    ] {
        assert!(
            sample(&text, counter).unwrap() >= 1.0,
            "{counter} in\n{text}"
        );
    }
    // Three writes (the slice, then each MAC address with its port), each durable before
    // its answer.
    let writes = sample(&text, "sliced_store_commit_batch_size_sum").unwrap();
    assert_eq!(writes, 3.0, "{text}");
    assert!(sample(&text, "sliced_store_commit_duration_seconds_count").unwrap() >= 1.0);
    let created = r#"sliced_http_requests_total{route="/slices",method="POST",status="201"}"#;
    assert_eq!(sample(&text, created), Some(1.0), "{text}");
    // A path with a name in it is counted under its route's pattern, not the name.
    let (status, _) = status_json(agent().get(&daemon.url("/slices/nosuch")).call());
    assert_eq!(status, 404);
    let (_, text) = scrape(&url);
    let missing =
        r#"sliced_http_requests_total{route="/slices/{slice}",method="GET",status="404"}"#;
    assert_eq!(sample(&text, missing), Some(1.0), "{text}");
    assert!(sample(
        &text,
        r#"sliced_http_request_duration_seconds_count{route="/slices"}"#
    )
    .is_some_and(|count| count >= 1.0));
    assert!(sample(&text, "process_resident_memory_bytes").unwrap() > 0.0);
    assert!(sample(&text, "process_open_fds").unwrap() > 0.0);
}

#[test]
fn metrics_on_the_main_listener_follow_the_read_only_views_and_the_scrapers_listener_is_open() {
    let dir = tempfile::tempdir().unwrap();
    let (daemon, metrics) = daemon_with_metrics(dir.path(), &["--require-auth"]);
    for path in ["/metrics", "/api/metrics", "/topology/switches"] {
        let (status, _) = scrape(&daemon.url(path));
        assert_eq!(status, 403, "GET {path} without a session");
    }
    let (status, text) = scrape(&format!("http://{metrics}/metrics"));
    assert_eq!(status, 200);
    assert!(text.contains("sliced_packet_ins_total"), "{text}");
    assert!(
        text.ends_with("# EOF\n"),
        "OpenMetrics text ends with # EOF"
    );
    // The scraper's listener serves nothing else, and nothing but reads.
    let (status, body) = status_json(agent().get(&format!("http://{metrics}/slices")).call());
    assert_eq!((status, body), (404, json!({"error": "not found"})));
    let (status, body) = status_json(
        agent()
            .post(&format!("http://{metrics}/metrics"))
            .send_string(""),
    );
    assert_eq!(
        (status, body),
        (405, json!({"error": "method not allowed"}))
    );
    drop(daemon);

    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    let response = agent().get(&daemon.url("/metrics")).call().unwrap();
    assert_eq!(
        response.header("Content-Type"),
        Some(slice_http_content_type())
    );
}

/// GET /metrics on `addr` naming the daemon `host` in `Host`, over a raw connection (an
/// HTTP client names the address it connects to); the status and the body.
fn scrape_as(addr: SocketAddr, host: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(WAIT)).unwrap();
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {answer:?}"));
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    (status, body.to_owned())
}

/// The scraper's listener has no session, so a page that rebinds a name of its own to
/// the listener's address would read it: it answers only the names the API's listener
/// would (its own address, the loopback names, `--allowed-host`), as the API refuses
/// others (403 with an error and nothing else).
#[test]
fn the_scrapers_listener_refuses_a_host_that_does_not_name_the_daemon() {
    let dir = tempfile::tempdir().unwrap();
    let (_daemon, metrics) = daemon_with_metrics(dir.path(), &["--allowed-host", "scrape.example"]);
    let port = metrics.port();
    for host in [
        format!("rebind.attacker.example:{port}"),
        "rebind.attacker.example".to_owned(),
        format!("127.0.0.1.attacker.example:{port}"),
        format!("10.9.8.7:{port}"),
    ] {
        let (status, body) = scrape_as(metrics, &host);
        assert_eq!(status, 403, "Host: {host}: {body}");
        let error: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        assert!(error["error"].is_string(), "Host: {host}: {body}");
        assert!(!body.contains("sliced_"), "Host: {host} read the metrics");
    }
    for host in [
        metrics.to_string(),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        "127.0.0.1".to_owned(),
        format!("scrape.example:{port}"),
    ] {
        let (status, body) = scrape_as(metrics, &host);
        assert_eq!(status, 200, "Host: {host}: {body}");
        assert!(body.contains("sliced_packet_ins_total"), "Host: {host}");
    }
}

fn slice_http_content_type() -> &'static str {
    "application/openmetrics-text; version=1.0.0; charset=utf-8"
}

/// A Prometheus server of the test's own, on a free port and a temporary database.
struct Prometheus {
    child: Child,
    api: String,
}

impl Prometheus {
    fn start(dir: &Path, target: SocketAddr) -> Self {
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
                 scrape_configs:\n  - job_name: sliced\n    static_configs:\n      \
                 - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let listen = free_port();
        let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={listen}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|err| {
                panic!(
                    "cannot run `prometheus` ({err}): this test needs it \
                     (apt-get install prometheus; .ci/run installs it)"
                )
            });
        Self {
            child,
            api: format!("http://{listen}/api/v1"),
        }
    }

    /// The value of an instant query that returns one sample, if it does.
    fn query(&self, query: &str) -> Option<f64> {
        let response = agent()
            .get(&format!("{}/query", self.api))
            .query("query", query)
            .call()
            .ok()?;
        let body: Value = response.into_json().ok()?;
        let result = body["data"]["result"].as_array()?;
        match result.as_slice() {
            [one] => one["value"][1].as_str()?.parse().ok(),
            _ => None,
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_real_prometheus_scrapes_sliced_and_sees_packet_ins_move() {
    let dir = tempfile::tempdir().unwrap();
    let (daemon, metrics) = daemon_with_metrics(dir.path(), &[]);
    let prometheus_dir = tempfile::tempdir().unwrap();
    let prometheus = Prometheus::start(prometheus_dir.path(), metrics);
    let up = eventually(PROMETHEUS_WAIT, || {
        prometheus.query(r#"up{job="sliced"}"#) == Some(1.0)
    });
    let log = || std::fs::read_to_string(prometheus_dir.path().join("prometheus.log"));
    assert!(up, "the target is up: {:?}", log());
    let flooded = r#"sum(sliced_packet_ins_total{outcome="flooded"})"#;
    assert!(
        eventually(PROMETHEUS_WAIT, || prometheus.query(flooded) == Some(0.0)),
        "Prometheus has scraped the counter at 0"
    );
    let mut network = Network::new();
    let switch = network.connect(daemon.openflow, 1, Version::Of13, 2);
    assert!(eventually(WAIT, || daemon
        .get_json("/topology/switches")
        .as_array()
        .is_some_and(|switches| switches.len() == 1)));
    for last in 1..=3 {
        switch.packet_in(1, frame(last, BROADCAST));
    }
    assert!(
        eventually(PROMETHEUS_WAIT, || prometheus.query(flooded) == Some(3.0)),
        "the counter moved in Prometheus: {:?}",
        prometheus.query(flooded)
    );
}

/// The metric names a PromQL expression mentions: identifiers that are neither
/// functions, keywords, label names nor inside label matchers or strings.
fn metric_names(expr: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut in_braces = false;
    let mut in_string = false;
    let mut word = String::new();
    let mut chars = expr.chars().peekable();
    while let Some(c) = chars.next() {
        if in_string {
            in_string = c != '"';
            continue;
        }
        if c.is_ascii_alphanumeric() || c == '_' || c == ':' {
            word.push(c);
            continue;
        }
        if !word.is_empty() && !in_braces {
            let next = if c == ' ' {
                chars.peek().copied()
            } else {
                Some(c)
            };
            let is_call = next == Some('(') || c == '(';
            if (word.starts_with("sliced_") || word.starts_with("process_")) && !is_call {
                names.insert(word.clone());
            }
        }
        word.clear();
        match c {
            '"' => in_string = true,
            '{' => in_braces = true,
            '}' => in_braces = false,
            _ => {}
        }
    }
    if word.starts_with("sliced_") || word.starts_with("process_") {
        names.insert(word);
    }
    names
}

fn exprs(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("expr", Value::String(expr)) => found.push(expr.clone()),
                    _ => exprs(value, found),
                }
            }
        }
        Value::Array(values) => values.iter().for_each(|value| exprs(value, found)),
        _ => {}
    }
}

#[test]
fn the_grafana_dashboard_uses_only_metrics_that_sliced_exports() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/grafana/sliced-dashboard.json");
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut found = Vec::new();
    exprs(&dashboard, &mut found);
    assert!(found.len() >= 10, "the dashboard has its panels: {found:?}");
    let dir = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(dir.path());
    // One request of each kind, so that the labelled HTTP families have samples.
    daemon.get_json("/slices");
    let (_, text) = scrape(&daemon.url("/metrics"));
    let exported = sample_names(&text);
    let mut used = BTreeSet::new();
    for expr in &found {
        used.extend(metric_names(expr));
    }
    let unknown: Vec<_> = used.difference(&exported).collect();
    assert!(
        unknown.is_empty(),
        "the dashboard names metrics sliced does not export: {unknown:?}"
    );
    assert!(used.contains("sliced_packet_ins_total"), "{used:?}");
}

#[test]
fn metric_names_are_read_out_of_promql() {
    let names = metric_names(
        r#"sum by (outcome) (rate(sliced_packet_ins_total{outcome!="x_total"}[5m])) / ignoring (le) sliced_ports"#,
    );
    assert_eq!(
        names,
        BTreeSet::from(["sliced_packet_ins_total".into(), "sliced_ports".into()])
    );
}
