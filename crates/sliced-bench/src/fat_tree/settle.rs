//! "Every table right": each bridge holds exactly as many of sliced's pipeline entries
//! (counted by their cookie with an OpenFlow aggregate request, as `ovs-ofctl
//! dump-aggregate` does) as sliced says it holds there
//! (`pipeline_entries` of `GET /topology/switches`), and, after a change, that count is
//! not the one before it on any switch, so that a switch the change has not reached yet
//! does not pass for right. A confirming round over every bridge follows the last one
//! found right; the time is when the last was found right.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::bail;

/// Tables found right.
#[derive(Debug, Clone)]
pub(crate) struct TablesRight {
    /// From the change to the last bridge found right.
    pub took: Duration,
    /// Each switch's entries, by datapath id.
    pub entries: HashMap<u64, usize>,
    /// The resolution of `took`: how long before the last bridge was found right it had
    /// last been seen not right yet.
    pub round: Duration,
}

impl TablesRight {
    pub(crate) fn total(&self) -> usize {
        self.entries.values().sum()
    }

    pub(crate) fn largest(&self) -> usize {
        self.entries.values().copied().max().unwrap_or_default()
    }
}

/// Waits until every table of `bridges` (datapath id, bridge name) is right, against
/// `before` when a change was made; `held` reads sliced's counts, `count` the counts of
/// the bridges named, in their order (asked of all before any answer is read).
pub(crate) fn settle(
    bridges: &[(u64, String)],
    before: Option<&HashMap<u64, usize>>,
    started: Instant,
    held: &dyn Fn() -> anyhow::Result<HashMap<u64, usize>>,
    count: &mut dyn FnMut(&[&str]) -> anyhow::Result<Vec<usize>>,
    limit: Duration,
) -> anyhow::Result<TablesRight> {
    let deadline = Instant::now() + limit;
    let mut right: HashMap<u64, usize> = HashMap::new();
    let mut last_right = started;
    let mut resolution = Duration::ZERO;
    // When each bridge was last seen not right yet.
    let mut seen: HashMap<u64, Instant> = HashMap::new();
    loop {
        let says = held()?;
        let said_at = Instant::now();
        // The bridges worth reading: not right yet, and with a count sliced gives. A
        // switch that reconnects is not right until it is listed again: the wait covers
        // its return (the collapse under load disconnects switches).
        let mut to_read: Vec<(u64, &str, usize)> = Vec::new();
        for (dpid, bridge) in bridges {
            if right.contains_key(dpid) {
                continue;
            }
            match says.get(dpid) {
                Some(&want) if before.map_or(true, |before| before.get(dpid) != Some(&want)) => {
                    to_read.push((*dpid, bridge, want))
                }
                _ => {
                    seen.insert(*dpid, said_at);
                }
            }
        }
        if !to_read.is_empty() {
            let names: Vec<&str> = to_read.iter().map(|(_, bridge, _)| *bridge).collect();
            let asked_at = Instant::now();
            let counts = count(&names)?;
            let answered_at = Instant::now();
            for ((dpid, _, want), counted) in to_read.into_iter().zip(counts) {
                if counted == want {
                    right.insert(dpid, want);
                    last_right = answered_at;
                    resolution = answered_at.duration_since(*seen.get(&dpid).unwrap_or(&started));
                } else {
                    seen.insert(dpid, asked_at);
                }
            }
        }
        if right.len() == bridges.len() {
            // Confirm: nothing moved since each was found right.
            let says = held()?;
            let names: Vec<&str> = bridges.iter().map(|(_, bridge)| bridge.as_str()).collect();
            let counts = count(&names)?;
            let moved: Vec<u64> = bridges
                .iter()
                .zip(counts)
                .filter(|((dpid, _), counted)| {
                    says.get(dpid) != right.get(dpid) || Some(counted) != right.get(dpid)
                })
                .map(|((dpid, _), _)| *dpid)
                .collect();
            if moved.is_empty() {
                return Ok(TablesRight {
                    took: last_right.duration_since(started),
                    entries: right,
                    round: resolution,
                });
            }
            for dpid in moved {
                right.remove(&dpid);
            }
        }
        if Instant::now() > deadline {
            let absent = bridges
                .iter()
                .filter(|(dpid, _)| !says.contains_key(dpid))
                .count();
            bail!(
                "{} of {} tables right after {} s ({absent} switches not connected at the end)",
                right.len(),
                bridges.len(),
                limit.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn bridges() -> Vec<(u64, String)> {
        vec![(1, "c0".into()), (2, "c1".into())]
    }

    #[test]
    fn a_table_the_change_has_not_reached_is_not_right() {
        // sliced has not counted the change on switch 2 yet: its table still equals the
        // count from before, which must not pass for right.
        let before = HashMap::from([(1, 5), (2, 5)]);
        let held = || Ok(HashMap::from([(1, 9), (2, 5)]));
        let mut count = |bridges: &[&str]| {
            Ok(bridges
                .iter()
                .map(|bridge| if *bridge == "c0" { 9 } else { 5 })
                .collect())
        };
        let result = settle(
            &bridges(),
            Some(&before),
            Instant::now(),
            &held,
            &mut count,
            Duration::from_millis(100),
        );
        let err = result.expect_err("switch 2 never changed");
        assert!(
            format!("{err:#}").contains("1 of 2 tables right"),
            "{err:#}"
        );
    }

    #[test]
    fn tables_are_right_once_every_bridge_holds_what_sliced_says() {
        let before = HashMap::from([(1, 5), (2, 5)]);
        let rounds = Cell::new(0);
        // The switch catches up on the third read of bridge c1.
        let held = || Ok(HashMap::from([(1, 9), (2, 7)]));
        let mut count = |bridges: &[&str]| {
            Ok(bridges
                .iter()
                .map(|bridge| {
                    if *bridge == "c0" {
                        return 9;
                    }
                    rounds.set(rounds.get() + 1);
                    if rounds.get() >= 3 {
                        7
                    } else {
                        5
                    }
                })
                .collect())
        };
        let right = settle(
            &bridges(),
            Some(&before),
            Instant::now(),
            &held,
            &mut count,
            Duration::from_secs(60),
        )
        .expect("right");
        assert_eq!(right.total(), 16);
        assert_eq!(right.largest(), 9);
        assert!(rounds.get() >= 4, "the confirming round reads c1 again");
    }
}
