//! `contrib/mininet/sliced_mininet.py` where a container runs it: in a network namespace
//! other than the first, with an Open vSwitch of its own there and sliced reached on that
//! namespace's loopback; and against a sliced that holds slices left from an earlier run.
//!
//! Checked: the script refuses to build anything while leftover slices would change the
//! network it prints (one of its slices' names, or a slice on its switches' ports),
//! naming them and `--replace`, and changes nothing; with `--replace` it deletes exactly
//! those, says so, brings the network up although the kernel's IPv6 neighbour limits do
//! not exist in that namespace (saying it left them), and every pair answers exactly as
//! the slices it printed say.

use std::collections::BTreeSet;
use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, bail, ensure, Context};
use serde_json::{json, Value};

use super::mininet_net::{self, check_pairs, Description, Mininet, SCRIPT};
use super::netns::Namespace;
use super::ovs::{OfVersion, Ovs};
use super::proxy::Proxy;
use super::stage::Stage;
use super::sys;

/// Four switches in a row, a host on each: h1 and h3 in red, h2 and h4 in blue.
const TOPO: &str = "linear,4";
const HOSTS: usize = 4;
/// The script builds the network, waits for every switch and makes its slices within this.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(120);
/// sliced finds every cable within this of the network being described.
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(30);

/// The leftovers of "an earlier run": `blue`, one of this run's names, holding h1 (so
/// that merging into it would let h1 reach the blue hosts); `old`, a slice of another
/// name on this network's ports (h3 and h4 would reach each other); `elsewhere`, on a
/// switch this network does not have, which is none of the script's business.
const LEFTOVERS: [(&str, &[(&str, &str)]); 3] = [
    ("blue", &[("0x1:1", "00:00:00:00:00:01")]),
    (
        "old",
        &[
            ("0x3:1", "00:00:00:00:00:03"),
            ("0x4:1", "00:00:00:00:00:04"),
        ],
    ),
    ("elsewhere", &[("0x99:1", "00:00:00:00:00:99")]),
];

pub(super) fn mininet_netns(stage: &mut Stage) -> anyhow::Result<()> {
    stage.start_controller()?;
    // Dropped in the reverse order: the network, the relays, Open vSwitch, then the
    // namespace.
    let name = format!("{}ct", stage.prefix());
    stage.step(format!(
        "ip netns add {name}; lo up (a container's namespace)"
    ));
    let namespace = Namespace::create(&name)?;
    let ovs = Ovs::start_in(&stage.dir().join("ovs-ct"), Some(&namespace.0))
        .context("cannot start Open vSwitch in the namespace")?;
    if let Some(pki) = stage.pki() {
        ovs.vsctl(&pki.set_ssl_args())?;
    }
    let (http, openflow_port, tls) = {
        let ctl = stage.ctl()?;
        (ctl.http, ctl.openflow_port, ctl.tls)
    };
    let openflow = SocketAddr::from((Ipv4Addr::LOCALHOST, openflow_port));
    stage.step(format!(
        "relay {http} and {openflow} into {name}'s loopback, same ports"
    ));
    let _relays = [
        Proxy::start_on(listen_in(&namespace.0, http.port())?, http)?,
        Proxy::start_on(listen_in(&namespace.0, openflow_port)?, openflow)?,
    ];

    for (slice, bindings) in LEFTOVERS {
        stage.rest("POST", "/slices", Some(json!({ "name": slice })), 201)?;
        for (port, mac) in bindings {
            let path = format!("/slices/{slice}/ports/{port}/mac_addresses");
            stage.rest("POST", &path, Some(json!({ "name": mac })), 201)?;
        }
    }
    let before = slice_state(stage)?;

    let describe = stage.dir().join("mininet-netns.json");
    let mut args = script_args(stage, openflow_port, tls, &describe);
    refused(stage, &ovs, &namespace.0, &args, &describe, &before)?;

    args.push("--replace".to_owned());
    let mut mininet = Mininet::start_on(stage, &ovs, Some(&namespace.0), &args)?;
    let net = wait_described(&mut mininet, &describe)?;
    mininet.switches = net.switches.iter().map(|s| s.name.clone()).collect();
    ensure!(
        net.hosts.len() == HOSTS,
        "{TOPO} made {} hosts",
        net.hosts.len()
    );
    let log = mininet.log_text();
    for line in [
        "left the IPv6 neighbour table limits as they are: \
         net.ipv6.neigh.default.gc_thresh1 (not in this network namespace)",
        "--replace: deleted slice blue (a name this run makes)",
        "--replace: deleted slice old (holds 0x3:1, 0x4:1)",
        "slice red: h1 h3",
        "slice blue: h2 h4",
    ] {
        ensure!(
            log.contains(line),
            "the script did not say {line:?}; its output:\n{log}"
        );
    }
    ensure!(
        !log.contains("elsewhere"),
        "the script named the slice elsewhere, on no switch of its network:\n{log}"
    );
    stage.step("the script said it left the IPv6 limits and which slices it replaced");

    let expected = json!({
        "elsewhere": ["0x99:1 00:00:00:00:00:99"],
        "red": ["0x1:1 00:00:00:00:00:01", "0x3:1 00:00:00:00:00:03"],
        "blue": ["0x2:1 00:00:00:00:00:02", "0x4:1 00:00:00:00:00:04"],
    });
    let after = slice_state(stage)?;
    ensure!(
        after == expected,
        "after --replace sliced holds {after}, not what the script printed plus the \
         untouched elsewhere: {expected}"
    );
    stage.step(format!("sliced holds {after}"));

    wait_links(stage, &net)?;
    // red holds the odd hosts, blue the even ones (indexes from 0: same parity).
    let everyone: Vec<usize> = (0..HOSTS).collect();
    check_pairs(
        stage,
        &net,
        &everyone,
        &|a, b| a % 2 == b % 2,
        "in a second namespace",
    )?;
    mininet.stop(stage)
}

/// The script's arguments for the network in the namespace: sliced's ports as the relays
/// show them there, no CLI, the description written to `describe`.
fn script_args(stage: &Stage, openflow_port: u16, tls: bool, describe: &Path) -> Vec<String> {
    let transport = if tls { "ssl" } else { "tcp" };
    let version = match stage.version {
        OfVersion::Of10 => "10",
        OfVersion::Of13 => "13",
    };
    let http = stage.ctl().map(|ctl| ctl.http.port()).unwrap_or_default();
    [
        "--topo",
        TOPO,
        "--of",
        version,
        "--controller",
        &format!("{transport}:127.0.0.1:{openflow_port}"),
        "--api",
        &format!("http://127.0.0.1:{http}"),
        "--no-cli",
        "--describe",
        &describe.display().to_string(),
    ]
    .map(str::to_owned)
    .to_vec()
}

/// Without `--replace` the script stops before building anything: it names `blue` and
/// `old` and the flag, and neither sliced's slices nor the namespace's interfaces change.
fn refused(
    stage: &mut Stage,
    ovs: &Ovs,
    netns: &str,
    args: &[String],
    describe: &Path,
    before: &Value,
) -> anyhow::Result<()> {
    stage.step(format!("ip netns exec {netns} {SCRIPT} {}", args.join(" ")));
    let script = crate::workspace_root().join(SCRIPT);
    let output = sys::output(&mut ovs.command(&script.display().to_string(), args))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    ensure!(
        !output.status.success(),
        "the script ran ({}) over the leftover slices instead of refusing; its output:\n{}{stderr}",
        output.status,
        String::from_utf8_lossy(&output.stdout)
    );
    for part in [
        "blue (a name this run makes)",
        "old (holds 0x3:1, 0x4:1)",
        "--replace",
        "Nothing was changed",
    ] {
        ensure!(
            stderr.contains(part),
            "the refusal does not say {part:?}: {stderr}"
        );
    }
    ensure!(
        !stderr.contains("elsewhere") && !stderr.contains("Traceback"),
        "the refusal names elsewhere or is a crash: {stderr}"
    );
    let after = slice_state(stage)?;
    ensure!(
        &after == before,
        "the refused run changed sliced's slices: {before} became {after}"
    );
    let switches: Vec<String> = mininet_net::interfaces(Some(netns))
        .into_iter()
        .filter(|name| name.starts_with('s') || name.starts_with('h'))
        .collect();
    ensure!(
        switches.is_empty() && !describe.exists(),
        "the refused run built something: {switches:?}"
    );
    let said = stderr.trim().lines().last().unwrap_or_default().to_owned();
    stage.step(format!("refused ({}): {said}", output.status));
    Ok(())
}

/// Every slice with its bindings (`port mac`), as sliced's REST API lists them.
fn slice_state(stage: &Stage) -> anyhow::Result<Value> {
    let ctl = stage.ctl()?;
    let mut state = serde_json::Map::new();
    for slice in ctl.view("/slices")?.as_array().into_iter().flatten() {
        let name = slice
            .get("name")
            .and_then(Value::as_str)
            .with_context(|| format!("a slice without a name: {slice}"))?;
        let mut bindings = Vec::new();
        for port in ctl
            .view(&format!("/slices/{name}/ports"))?
            .as_array()
            .into_iter()
            .flatten()
        {
            let port = port
                .get("name")
                .and_then(Value::as_str)
                .with_context(|| format!("a port without a name: {port}"))?
                .to_ascii_lowercase();
            let macs = ctl.view(&format!("/slices/{name}/ports/{port}/mac_addresses"))?;
            for mac in macs.as_array().into_iter().flatten() {
                let mac = mac.get("name").and_then(Value::as_str).unwrap_or_default();
                bindings.push(Value::from(format!("{port} {mac}")));
            }
        }
        bindings.sort_by_key(Value::to_string);
        state.insert(name.to_owned(), Value::Array(bindings));
    }
    Ok(Value::Object(state))
}

/// Waits until the script has described its network (it does once every switch is
/// connected and its slices are made).
fn wait_described(mininet: &mut Mininet, describe: &Path) -> anyhow::Result<Description> {
    let described = sys::poll(STARTUP_TIMEOUT, Duration::from_millis(100), || {
        mininet.check_running()?;
        Ok(describe.exists().then_some(()))
    })?;
    ensure!(
        described.is_some(),
        "{SCRIPT} did not describe its network within {} s; the end of its output:\n{}",
        STARTUP_TIMEOUT.as_secs(),
        mininet.log_tail(20)
    );
    Description::read(describe)
}

/// Waits until sliced knows every cable of the network in both directions.
fn wait_links(stage: &mut Stage, net: &Description) -> anyhow::Result<()> {
    let directed = net.directed_links();
    let found = sys::poll(DISCOVERY_TIMEOUT, Duration::from_millis(50), || {
        Ok(directed.is_subset(&stage.ctl()?.links()?).then_some(()))
    })?;
    if found.is_none() {
        let known: BTreeSet<_> = stage.ctl()?.links()?;
        bail!(
            "sliced did not find the cables {directed:?} within {} s; it knows {known:?}",
            DISCOVERY_TIMEOUT.as_secs()
        );
    }
    stage.step(format!(
        "sliced knows all {} directed links",
        directed.len()
    ));
    Ok(())
}

/// A TCP listener on `port` of the loopback of the namespace `netns`: a socket stays in
/// the namespace it was made in, so a thread of its own enters the namespace, binds, and
/// ends; the rest of the lab stays where it is.
fn listen_in(netns: &str, port: u16) -> anyhow::Result<TcpListener> {
    let path = Path::new("/run/netns").join(netns);
    let handle = File::open(&path).with_context(|| format!("cannot open {}", path.display()))?;
    std::thread::scope(|scope| {
        scope
            .spawn(|| -> anyhow::Result<TcpListener> {
                // SAFETY: setns takes an open descriptor of a network namespace (the
                // file is open for the whole call) and changes only this thread's
                // namespace; the thread ends once the socket is bound.
                if unsafe { libc::setns(handle.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    return Err(std::io::Error::last_os_error())
                        .with_context(|| format!("cannot enter {netns}"));
                }
                TcpListener::bind((Ipv4Addr::LOCALHOST, port))
                    .with_context(|| format!("cannot listen on 127.0.0.1:{port} in {netns}"))
            })
            .join()
            .map_err(|_| anyhow!("the thread that binds in {netns} panicked"))?
    })
}
