//! A `ping` left running in a host's namespace while a scenario does something else (a
//! kill, a pause, a cut), read afterwards for its first reply and its losses.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{ensure, Context};

use super::Stage;
use crate::e2e::net;
use crate::e2e::sys::{self, Daemon};

/// 50 packets per second.
const PING_INTERVAL: &str = "0.02";

/// A `ping` running in a host's namespace, its output in a file.
pub(crate) struct PingRun {
    daemon: Daemon,
    output: PathBuf,
    label: String,
}

impl PingRun {
    /// `ping -D -i INTERVAL -c COUNT` from one host to another (timestamps on each reply).
    pub(crate) fn start(
        stage: &Stage,
        (from, to): (u8, u8),
        count: u32,
    ) -> anyhow::Result<PingRun> {
        let ns = stage.net()?.namespace(from);
        let output = stage.dir().join(format!("ping-h{from}-h{to}.txt"));
        let file = std::fs::File::create(&output)
            .with_context(|| format!("cannot create {}", output.display()))?;
        let count = count.to_string();
        let target = net::ipv4(to);
        let mut command = sys::command(
            "ip",
            &[
                "netns",
                "exec",
                &ns,
                "ping",
                "-n",
                "-D",
                "-i",
                PING_INTERVAL,
                "-c",
                &count,
                &target,
            ],
        );
        command
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(Stdio::null());
        let label = format!("ping h{from}->h{to}");
        let daemon = Daemon::spawn(&mut command, &label)?;
        Ok(PingRun {
            daemon,
            output,
            label,
        })
    }

    pub(crate) fn text(&self) -> String {
        std::fs::read_to_string(&self.output).unwrap_or_default()
    }

    /// The time of the first reply, in seconds since the epoch (ping's `-D` stamp).
    pub(crate) fn first_reply(&self) -> Option<f64> {
        self.text()
            .lines()
            .find(|line| line.contains("bytes from"))
            .and_then(stamp)
    }

    /// Waits until a reply came; false at the deadline.
    pub(crate) fn wait_reply(&self, timeout: Duration) -> anyhow::Result<bool> {
        Ok(sys::poll(timeout, Duration::from_millis(20), || {
            Ok(self.first_reply().map(|_| ()))
        })?
        .is_some())
    }

    /// Waits until ping ends; returns (transmitted, received).
    pub(crate) fn finish(mut self, timeout: Duration) -> anyhow::Result<(u32, u32)> {
        let ended = sys::poll(timeout, Duration::from_millis(50), || {
            Ok(self.daemon.exited())
        })?;
        ensure!(
            ended.is_some(),
            "{} did not end within {timeout:?}",
            self.label
        );
        let text = self.text();
        summary(&text).with_context(|| format!("{} printed no summary: {text}", self.label))
    }
}

/// `[1700000000.123456] 64 bytes from ...`: the stamp.
fn stamp(line: &str) -> Option<f64> {
    line.strip_prefix('[')?.split(']').next()?.parse().ok()
}

/// `300 packets transmitted, 298 received, ...`: (300, 298).
fn summary(text: &str) -> Option<(u32, u32)> {
    let line = text.lines().find(|l| l.contains("packets transmitted"))?;
    let mut numbers = line
        .split(',')
        .filter_map(|part| part.split_whitespace().next()?.parse::<u32>().ok());
    Some((numbers.next()?, numbers.next()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pings_stamps_and_summary() {
        assert_eq!(
            stamp("[1700000000.250000] 64 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=0.3 ms"),
            Some(1_700_000_000.25)
        );
        assert_eq!(
            stamp("PING 10.0.0.2 (10.0.0.2) 56(84) bytes of data."),
            None
        );
        let text = "--- 10.0.0.2 ping statistics ---\n\
                    300 packets transmitted, 297 received, +3 duplicates, 1% packet loss, time 5980ms\n";
        assert_eq!(summary(text), Some((300, 297)));
        assert_eq!(summary("nothing"), None);
    }
}
