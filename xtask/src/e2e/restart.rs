//! `kill -9` and restart of sliced under traffic: flows kept, nothing lost, a pair
//! forbidden meanwhile loses its flows.

use std::time::{Duration, Instant};

use anyhow::{ensure, Context};

use super::net::{self, mac};
use super::stage::Stage;
use super::sys;
use super::topologies::LINE3;

/// How often the restart scenario's ping goes out, and how many: long enough to span the
/// kill, the restart and the reconnection of every switch with time to spare.
const RESTART_PING_INTERVAL: Duration = Duration::from_millis(20);
const RESTART_PING_COUNT: u32 = 750;
/// Pings that must still go out after sliced has the network back, for the loss count to
/// prove anything about the reconciliation.
const PINGS_AFTER_RESTART: Duration = Duration::from_secs(2);

/// Scenario, a restart: on the line of three, h1 and h2 share slice "r" and h1 and h3 slice
/// "gone", both pairs talk, with static ARP so that no packet of the ping needs the
/// controller. While h1 pings h2 every 20 ms, sliced is killed with SIGKILL, h3 is taken
/// out of "gone" with the slice tool directly on the database, and sliced starts again
/// on the same data directory. Asserted: the ping lost nothing; the path flows of h1 and
/// h2 on every switch are older than the restart (kept, not flushed and installed
/// again); the flows of h1 and h3 are gone and the pair no longer reaches.
pub(super) fn restart(stage: &mut Stage) -> anyhow::Result<()> {
    stage.start_controller()?;
    stage.build(LINE3)?;
    let (p1, p2, p3) = (stage.port_of(1)?, stage.port_of(2)?, stage.port_of(3)?);
    for (slice, members) in [("r", [(1, &p1), (2, &p2)]), ("gone", [(1, &p1), (3, &p3)])] {
        stage.tool(&["add", slice])?;
        for (host, port) in members {
            stage.tool(&["add_host", "-m", &mac(host), "-p", port, "-s", slice])?;
        }
    }
    for (a, b) in [(1, 2), (2, 1), (1, 3), (3, 1)] {
        stage.net()?.pin_neighbour(a, b)?;
    }
    stage.reach_both(1, 2)?;
    stage.reach_both(1, 3)?;
    let path_12 = [(1, 1, 2), (2, 2, 1)];
    stage.expect_path(1, 2, &path_12)?;
    stage.expect_path(1, 3, &[(1, 1, 2), (2, 2, 3), (3, 2, 1)])?;

    let summary = stage.dir().join("ping-h1-h2.txt");
    stage.step(format!(
        "h1 pings h2 {RESTART_PING_COUNT} times, every {} ms",
        RESTART_PING_INTERVAL.as_millis()
    ));
    let ping_started = Instant::now();
    let mut ping =
        stage
            .net()?
            .ping_stream(1, 2, RESTART_PING_INTERVAL, RESTART_PING_COUNT, &summary)?;
    stage.kill_controller()?;
    let killed = Instant::now();
    stage.tool(&["delete_host", "-m", &mac(3), "-p", &p3, "-s", "gone"])?;
    stage.restart_controller()?;
    let back = ping_started.elapsed();
    stage.expect_no_flows(&[3])?;

    let ping_length = RESTART_PING_INTERVAL * RESTART_PING_COUNT;
    ensure!(
        back + PINGS_AFTER_RESTART <= ping_length,
        "sliced had the network back only {} ms into a {} ms ping: too late to judge",
        back.as_millis(),
        ping_length.as_millis()
    );
    for &(dpid, in_port, _) in &path_12 {
        let flows = stage.flows_with_stats(dpid)?;
        let flow = stage
            .path_flow(&flows, 1, 2, in_port)
            .with_context(|| format!("the path flow h1->h2 on s{dpid} is gone"))?;
        let age = flow.duration().context("a flow without its age")?;
        ensure!(
            age > killed.elapsed(),
            "the path flow h1->h2 on s{dpid} is {} ms old, younger than the restart \
             ({} ms ago): it was installed again, not kept: {}",
            age.as_millis(),
            killed.elapsed().as_millis(),
            flow.line
        );
    }
    stage.step("the path flows of h1 -> h2 predate the restart");

    let finished = sys::poll(ping_length * 2, Duration::from_millis(100), || {
        Ok(ping.exited())
    })?;
    ensure!(finished.is_some(), "the ping did not end");
    let output = std::fs::read_to_string(&summary)?;
    let (sent, received) = net::ping_summary(&output)
        .with_context(|| format!("no summary in the ping's output: {output}"))?;
    ensure!(
        sent == RESTART_PING_COUNT && received == sent,
        "h1 -> h2 across the restart: {received} of {sent} pings answered"
    );
    stage.step(format!(
        "h1 -> h2: {received} of {sent} pings answered across the restart"
    ));
    stage.isolated(&[(1, 3), (3, 1)])?;
    stage.reach_both(1, 2)
}
