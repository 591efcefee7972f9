//! A cut cable on a path: traffic resumes over another.

use anyhow::{ensure, Context};

use super::net::{mac, Port};
use super::stage::Stage;
use super::topologies::MESH4;

/// Scenario 5, reroute: on the full mesh, h1 and h2 talk over the direct link s1-s2; cutting that link
/// (whichever one the path uses) moves the traffic to another path within a few pings,
/// and the new flows avoid the cut port.
pub(super) fn reroute(stage: &mut Stage) -> anyhow::Result<()> {
    stage.start_controller()?;
    stage.build(MESH4)?;
    let (p1, p2) = (stage.port_of(1)?, stage.port_of(2)?);
    stage.tool(&["add", "mesh"])?;
    stage.tool(&["add_host", "-m", &mac(1), "-p", &p1, "-s", "mesh"])?;
    stage.tool(&["add_host", "-m", &mac(2), "-p", &p2, "-s", "mesh"])?;
    stage.reach_both(1, 2)?;
    // The shortest path is the direct cable.
    stage.expect_path(1, 2, &[(1, 1, 2), (2, 2, 1)])?;
    stage.expect_path(2, 1, &[(2, 1, 2), (1, 2, 1)])?;

    let used = first_hop(stage, 1, 2)?;
    let peer = stage
        .net()?
        .peer(used)
        .with_context(|| format!("the path leaves s1 at {used}, which is not a link"))?;
    stage.step(format!("the path h1->h2 uses the link {used}-{peer}"));
    stage.set_port(used, false)?;

    // Traffic resumes: the controller dropped the broken path, the next packet is routed.
    let attempts = 8;
    let mut resumed = None;
    for attempt in 1..=attempts {
        if stage.net()?.ping(1, 2)? {
            resumed = Some(attempt);
            break;
        }
    }
    let Some(attempt) = resumed else {
        anyhow::bail!("h1 still cannot reach h2 after {attempts} pings with {used} down");
    };
    stage.step(format!(
        "h1 reaches h2 again with the link down (attempt {attempt})"
    ));
    stage.reach(2, 1)?;
    let now = first_hop(stage, 1, 2)?;
    ensure!(
        now != used,
        "the path h1->h2 still leaves s1 at {used}, the cut link"
    );
    let back = first_hop(stage, 2, 1)?;
    ensure!(
        back != peer,
        "the path h2->h1 still leaves s2 at {peer}, the cut link"
    );
    stage.step(format!(
        "h1->h2 now leaves s1 at {now}, h2->h1 leaves s2 at {back}"
    ));
    Ok(())
}

/// The port where the path flow from `src` leaves the switch of `src`.
fn first_hop(stage: &Stage, src: u8, dst: u8) -> anyhow::Result<Port> {
    let at = stage.net()?.host_port(src)?;
    let flows = stage.flows(at.dpid)?;
    let flow = stage
        .path_flow(&flows, src, dst, at.port)
        .with_context(|| format!("no path flow h{src}->h{dst} on s{}", at.dpid))?;
    match flow.outputs()[..] {
        [port] => Ok(Port {
            dpid: at.dpid,
            port,
        }),
        _ => anyhow::bail!(
            "the path flow h{src}->h{dst} has odd actions: {}",
            flow.line
        ),
    }
}
