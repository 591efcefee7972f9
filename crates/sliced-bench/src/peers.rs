//! The flow-setup peers: Open vSwitch's test controller, a learning switch on os-ken, and
//! the floor (a controller with no logic, see `floor.rs`).

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::Context;

use crate::procs::{self, Server};
use crate::wire;

/// The os-ken app, kept as a data file of this crate.
pub(crate) const LEARNING_SWITCH_PY: &str = include_str!("../peers/learning_switch.py");

/// A controller the emulator can measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Peer {
    OvsTestController,
    OsKen,
    Floor,
}

impl Peer {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Peer::OvsTestController => "ovs-testcontroller",
            Peer::OsKen => "os-ken learning switch",
            Peer::Floor => "no-logic floor",
        }
    }

    /// The OpenFlow versions it is measured with.
    pub(crate) fn versions(self) -> &'static [u8] {
        match self {
            Peer::OvsTestController => &[wire::OFP13, wire::OFP10],
            // The app declares OpenFlow 1.3 only.
            Peer::OsKen => &[wire::OFP13],
            Peer::Floor => &[wire::OFP13, wire::OFP10],
        }
    }

    /// The most switches it serves at once, with where that limit comes from.
    pub(crate) fn max_switches(self) -> Option<(u64, &'static str)> {
        match self {
            // utilities/ovs-testcontroller.c: `#define MAX_SWITCHES 16`; it stops
            // accepting connections at that count.
            Peer::OvsTestController => Some((
                16,
                "ovs-testcontroller serves at most 16 switches (MAX_SWITCHES in its source)",
            )),
            Peer::OsKen | Peer::Floor => None,
        }
    }

    /// Starts the peer on a free loopback port and waits until it listens.
    pub(crate) fn start(self, dir: &Path) -> anyhow::Result<(Server, SocketAddr)> {
        std::fs::create_dir_all(dir)?;
        let addr = procs::free_addr()?;
        let (mut server, limit) = match self {
            Peer::OvsTestController => {
                let mut command = Command::new("ovs-testcontroller");
                command
                    .arg(format!("ptcp:{}:{}", addr.port(), addr.ip()))
                    .arg("--no-chdir")
                    .arg(format!(
                        "--unixctl={}",
                        dir.join("ovs-testcontroller.ctl").display()
                    ))
                    .arg("-vconsole:warn");
                let log = dir.join("ovs-testcontroller.log");
                (
                    Server::spawn(self.name(), command, &log)?,
                    Duration::from_secs(10),
                )
            }
            Peer::OsKen => {
                let app = dir.join("learning_switch.py");
                std::fs::write(&app, LEARNING_SWITCH_PY)
                    .with_context(|| format!("cannot write {}", app.display()))?;
                let mut command = Command::new("osken-manager");
                command
                    .arg("--ofp-tcp-listen-port")
                    .arg(addr.port().to_string())
                    .arg("--ofp-listen-host")
                    .arg(addr.ip().to_string())
                    .arg(&app)
                    .current_dir(dir);
                let log = dir.join("os-ken.log");
                (
                    Server::spawn(self.name(), command, &log)?,
                    Duration::from_secs(60),
                )
            }
            Peer::Floor => {
                let mut command = Command::new(std::env::current_exe()?);
                command
                    .arg("floor-controller")
                    .arg("--addr")
                    .arg(addr.to_string());
                let log = dir.join("floor.log");
                (
                    Server::spawn(self.name(), command, &log)?,
                    Duration::from_secs(10),
                )
            }
        };
        server.wait_for_port(addr, limit)?;
        Ok((server, addr))
    }
}

/// The programs the whole run needs, with the package that provides each; an error that
/// names every missing one.
pub(crate) fn check_prerequisites(need_peers: bool, need_wrk: bool) -> anyhow::Result<()> {
    let mut wanted = Vec::new();
    if need_wrk {
        wanted.push(("wrk", "apt-get install -y wrk"));
    }
    if need_peers {
        wanted.push((
            "ovs-testcontroller",
            "apt-get install -y openvswitch-testcontroller",
        ));
        wanted.push(("osken-manager", "pip install os-ken==2.11.2"));
    }
    let missing: Vec<String> = wanted
        .iter()
        .filter(|(program, _)| !procs::on_path(program))
        .map(|(program, install)| format!("  {program}: {install}"))
        .collect();
    if !missing.is_empty() {
        anyhow::bail!(
            "missing prerequisites (sliced-bench installs nothing itself):\n{}\n\
             see docs/benchmarks.md",
            missing.join("\n")
        );
    }
    Ok(())
}
