//! The README's three-node cluster, run as written: the shell block under "A three-node
//! cluster on one machine" is read from README.md and run by bash, word for word, in a
//! network namespace of its own (its fixed ports then collide with nothing) with an Open
//! vSwitch of its own there, and with the lab's binaries first on PATH.
//!
//! Checked: the block succeeds; the three instances form one cluster with one master;
//! br0 exists and is connected to all three, each instance seeing the switch in the role
//! the cluster gave it; `blue`, made by the block's last line through etcd, is served by
//! every instance; and once the master is killed with SIGKILL, as the README then
//! suggests, another instance becomes master.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::{bail, ensure, Context};
use serde_json::Value;

use super::netns::Namespace;
use super::ovs::Ovs;
use super::stage::Stage;
use super::sys;

/// The heading of the README's section; its first `sh` block is the example.
const HEADING: &str = "## A three-node cluster on one machine";
/// The instances' HTTP ports, as the example gives them (`127.0.0.1:929$i`).
const HTTP_PORTS: [u16; 3] = [9291, 9292, 9293];
/// The scratch directories the example names, removed before and after the run.
const SCRATCH: [&str; 6] = [
    "/tmp/etcd1",
    "/tmp/etcd2",
    "/tmp/etcd3",
    "/tmp/sliced1",
    "/tmp/sliced2",
    "/tmp/sliced3",
];
/// The block starts three etcd members and three daemons; it returns once each daemon
/// serves, far within this.
const BLOCK_TIMEOUT: Duration = Duration::from_secs(120);
/// Every instance sees the others, the switch and the slice within this.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(60);

pub(super) fn readme_cluster(stage: &mut Stage) -> anyhow::Result<()> {
    let readme = std::fs::read_to_string(crate::workspace_root().join("README.md"))
        .context("cannot read README.md")?;
    let block = example(&readme)?;
    remove_scratch();
    let name = format!("{}rc", stage.prefix());
    stage.step(format!("ip netns add {name}; lo up"));
    let namespace = Namespace::create(&name)?;
    let ovs = Ovs::start_in(&stage.dir().join("ovs-rc"), Some(&namespace.0))
        .context("cannot start Open vSwitch in the namespace")?;
    let result = run_and_check(stage, &ovs, &namespace, &block);
    // Whatever happened: the block's etcd members and daemons live in the namespace.
    kill_everything_in(&namespace);
    remove_scratch();
    result
}

fn run_and_check(
    stage: &mut Stage,
    ovs: &Ovs,
    namespace: &Namespace,
    block: &str,
) -> anyhow::Result<()> {
    let bins = stage.shared_bins();
    let bin_dir = bins
        .sliced
        .parent()
        .context("the sliced binary has no directory")?
        .to_path_buf();
    ensure!(
        bins.slice.parent() == Some(bin_dir.as_path()),
        "sliced and slice are in different directories"
    );
    let script = format!("set -e\nexport PATH={}:$PATH\n{block}", bin_dir.display());
    stage.step(format!(
        "bash -e: the README's block, {} lines, in {}",
        block.lines().count(),
        namespace.0
    ));
    let log = stage.dir().join("readme-cluster.log");
    let mut command = ovs.command("bash", &["-c", &script]);
    command
        .stdout(std::fs::File::create(&log)?)
        .stderr(std::fs::File::create(
            stage.dir().join("readme-cluster.err"),
        )?);
    let mut child = command.spawn().context("cannot run bash")?;
    let status = sys::poll(BLOCK_TIMEOUT, Duration::from_millis(200), || {
        Ok(child.try_wait()?)
    })?;
    let Some(status) = status else {
        let _ = child.kill();
        bail!("the README's block did not finish within {BLOCK_TIMEOUT:?}");
    };
    ensure!(
        status.success(),
        "the README's block failed ({status}); see {}",
        stage.dir().join("readme-cluster.err").display()
    );

    let curl = |port: u16, path: &str| -> anyhow::Result<Value> {
        let url = format!("http://127.0.0.1:{port}{path}");
        let text = sys::run(&mut sys::command(
            "ip",
            &["netns", "exec", &namespace.0, "curl", "-sf", &url],
        ))?;
        serde_json::from_str(&text).with_context(|| format!("{url} answered {text:?}"))
    };
    let settled = sys::poll(SETTLE_TIMEOUT, Duration::from_millis(250), || {
        let views: Vec<Value> = HTTP_PORTS
            .iter()
            .map(|port| curl(*port, "/cluster"))
            .collect::<anyhow::Result<_>>()?;
        Ok(one_cluster(&views).then_some(views))
    })?;
    let Some(views) = settled else {
        bail!(
            "the three instances never agreed on three members, one master and br0's \
             roles; instance n1 says {}",
            curl(HTTP_PORTS[0], "/cluster").map_or_else(|e| e.to_string(), |v| v.to_string())
        );
    };
    let master = views[0]["master"].as_str().unwrap_or_default().to_owned();
    stage.step(format!(
        "one cluster: n1, n2, n3, master {master}; br0 connected to all three"
    ));
    // Open vSwitch updates the column every few seconds, not on each change.
    let connected = sys::poll(SETTLE_TIMEOUT, Duration::from_millis(500), || {
        let connected = ovs.vsctl(&["--columns=is_connected", "list", "controller"])?;
        Ok((connected.matches("true").count() == 3).then_some(()))
    })?;
    ensure!(
        connected.is_some(),
        "br0 is not connected to all three instances: {}",
        ovs.vsctl(&["--columns=target,is_connected", "list", "controller"])?
    );
    for port in HTTP_PORTS {
        let slices = curl(port, "/slices")?;
        ensure!(
            slices == serde_json::json!([{"name": "blue"}]),
            "127.0.0.1:{port} serves {slices}, not the slice blue the block made"
        );
    }
    stage.step("blue, made by `slice --etcd`, served by every instance");

    let (index, pid) = master_pid(&views, &master)?;
    stage.step(format!("kill -9 the master {master} (pid {pid})"));
    sys::run(&mut sys::command("kill", &["-9", &pid.to_string()]))?;
    let survivors: Vec<u16> = HTTP_PORTS
        .iter()
        .enumerate()
        .filter(|(at, _)| *at != index)
        .map(|(_, port)| *port)
        .collect();
    let taken_over = sys::poll(SETTLE_TIMEOUT, Duration::from_millis(250), || {
        let view = curl(survivors[0], "/cluster")?;
        let now = view["master"].as_str().unwrap_or_default().to_owned();
        Ok((!now.is_empty() && now != master).then_some(now))
    })?;
    let Some(new_master) = taken_over else {
        bail!("no instance took over from {master}");
    };
    stage.step(format!("{new_master} is master"));
    Ok(())
}

/// The first `sh` block after the heading.
fn example(readme: &str) -> anyhow::Result<String> {
    let section = readme
        .split_once(HEADING)
        .with_context(|| format!("README.md has no {HEADING:?}"))?
        .1;
    let start = section
        .split_once("```sh\n")
        .context("the section has no sh block")?
        .1;
    let block = start
        .split_once("\n```")
        .context("the sh block does not end")?
        .0;
    Ok(format!("{block}\n"))
}

/// Whether the three views agree: three members, the same master, and each instance
/// sees br0 (one switch) connected to it.
fn one_cluster(views: &[Value]) -> bool {
    let names = |view: &Value| -> BTreeSet<String> {
        view["members"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["name"].as_str().map(str::to_owned))
            .collect()
    };
    let expected: BTreeSet<String> = ["n1", "n2", "n3"].map(str::to_owned).into();
    let master = views[0]["master"].as_str();
    master.is_some()
        && views.iter().all(|view| {
            names(view) == expected
                && view["master"].as_str() == master
                && view["members"].as_array().is_some_and(|members| {
                    members
                        .iter()
                        .all(|m| m["switches"].as_array().is_some_and(|s| s.len() == 1))
                })
        })
}

/// The position of `master` among the instances, and its process id (from the pid the
/// daemon wrote: `sliced -d` writes `<data dir>/sliced.pid`).
fn master_pid(views: &[Value], master: &str) -> anyhow::Result<(usize, u32)> {
    let index = ["n1", "n2", "n3"]
        .iter()
        .position(|name| *name == master)
        .with_context(|| format!("the master {master} is none of n1, n2, n3 ({views:?})"))?;
    let pid_file = format!("{}/sliced.pid", SCRATCH[3 + index]);
    let text =
        std::fs::read_to_string(&pid_file).with_context(|| format!("cannot read {pid_file}"))?;
    let pid = text
        .trim()
        .parse()
        .with_context(|| format!("{pid_file} holds {text:?}"))?;
    Ok((index, pid))
}

/// Kills every process the block left in the namespace (etcd members, daemons).
fn kill_everything_in(namespace: &Namespace) {
    let listed = sys::output_always(&mut sys::command("ip", &["netns", "pids", &namespace.0]));
    let Ok(listed) = listed else { return };
    for pid in String::from_utf8_lossy(&listed.stdout).split_whitespace() {
        let _ = sys::output_always(&mut sys::command("kill", &["-9", pid]));
    }
}

fn remove_scratch() {
    for dir in SCRATCH {
        let _ = std::fs::remove_dir_all(dir);
    }
}
