//! What an operator does: `sliced -d`, slices with the tool, SIGTERM via the pid file.

use anyhow::{ensure, Context};

use super::net::mac;
use super::stage::Stage;
use super::sys;
use super::topologies::SINGLE;

/// Scenario 6, what an operator does: `sliced -d --pid-file`, slices with the tool, traffic,
/// then SIGTERM to the pid in the pid file. The daemon exits, removes its pid file and
/// socket, and the slices are still in the database (read by the tool without daemon).
pub(super) fn daemon(stage: &mut Stage) -> anyhow::Result<()> {
    let pid_file = stage.dir().join("sliced.pid");
    let printed = stage.start_daemon(&pid_file)?;
    let recorded = std::fs::read_to_string(&pid_file)
        .with_context(|| format!("sliced -d returned but wrote no {}", pid_file.display()))?;
    ensure!(
        recorded.trim() == printed.to_string(),
        "sliced -d printed pid {printed} but the pid file says {recorded:?}"
    );
    stage.build(SINGLE)?;
    let (p1, p2) = (stage.port_of(1)?, stage.port_of(2)?);
    stage.tool(&["add", "ops"])?;
    stage.tool(&["add_host", "-m", &mac(1), "-p", &p1, "-s", "ops"])?;
    stage.tool(&["add_host", "-m", &mac(2), "-p", &p2, "-s", "ops"])?;
    stage.reach_both(1, 2)?;
    stage.isolated(&[(3, 1), (3, 2), (1, 3)])?;

    let pid: u32 = std::fs::read_to_string(&pid_file)?
        .trim()
        .parse()
        .context("the pid file holds no pid")?;
    stage.step(format!("kill -TERM {pid} (from {})", pid_file.display()));
    sys::signal(pid, libc::SIGTERM);
    let exited = sys::wait_gone(pid, std::time::Duration::from_secs(10));
    ensure!(exited, "sliced (pid {pid}) still runs 10 s after SIGTERM");
    stage.step("sliced exited");
    let data = stage.ctl()?.data_dir().to_owned();
    ensure!(
        !pid_file.exists(),
        "sliced left its pid file {}",
        pid_file.display()
    );
    let socket = data.join("sliced.sock");
    ensure!(
        !socket.exists(),
        "sliced left its socket {}",
        socket.display()
    );
    let listed = stage.tool(&["list"])?;
    let expected = format!("ops\n  {p1}\n    {}\n  {p2}\n    {}\n", mac(1), mac(2));
    ensure!(
        listed == expected,
        "after the stop, slice list printed {listed:?}, expected {expected:?}"
    );
    Ok(())
}
