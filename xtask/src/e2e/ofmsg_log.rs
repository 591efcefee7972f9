//! What Open vSwitch itself says about its controllers: its `vconn` module's debug log of
//! every OpenFlow message it received and sent, the `Controller` table's view of each
//! connection (connected, the role the switch gave it), and `dump-meters`. A leaf: the
//! standby-wakes and bundles scenarios read the switches' side of the story with it, not
//! sliced's.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::ovs::Ovs;

/// The messages a controller writes to a switch with: a slave's are refused (OpenFlow
/// 1.3.5, 6.3.5), so a standby must send none. A bundle carries any of them.
const WRITES: [&str; 7] = [
    "FLOW_MOD",
    "GROUP_MOD",
    "PACKET_OUT",
    "PORT_MOD",
    "TABLE_MOD",
    "METER_MOD",
    "BUNDLE_ADD_MESSAGE",
];

/// Turns the `vconn` debug log of ovs-vswitchd on (every message, no rate limit) for as
/// long as it lives; back to Open vSwitch's defaults on drop, so that the other scenarios
/// of the run log as before.
pub(super) struct MessageLog<'a> {
    ovs: &'a Ovs,
}

impl<'a> MessageLog<'a> {
    pub(super) fn on(ovs: &'a Ovs) -> anyhow::Result<MessageLog<'a>> {
        ovs.appctl(&["vlog/set", "vconn:file:dbg"])?;
        // A connection attempt is logged at info only while the backoff grows; at the
        // lab's `max_backoff=1000` every retry is a debug line.
        ovs.appctl(&["vlog/set", "rconn:file:dbg"])?;
        // At debug vconn logs at most a few hundred messages a minute; LLDP alone is more.
        ovs.appctl(&["vlog/disable-rate-limit", "vconn"])?;
        Ok(MessageLog { ovs })
    }
}

impl Drop for MessageLog<'_> {
    fn drop(&mut self) {
        let _ = self.ovs.appctl(&["vlog/set", "vconn:file:info"]);
        let _ = self.ovs.appctl(&["vlog/set", "rconn:file:info"]);
        let _ = self.ovs.appctl(&["vlog/enable-rate-limit", "vconn"]);
    }
}

/// What one controller connection target (`tcp:127.0.0.1:PORT`, the same on every bridge)
/// sent the switches and what they answered, within a stretch of the log.
#[derive(Debug, Default)]
pub(super) struct Traffic {
    /// Write messages received from it, by type (`METER_MOD`).
    pub writes: BTreeMap<String, usize>,
    /// The first write received, as logged.
    pub first_write: Option<String>,
    /// Role requests received from it, by role and generation as Open vSwitch shows them
    /// (`slave generation_id=7`; 1.0's Nicira request has no generation).
    pub asked: BTreeMap<String, usize>,
    /// Role replies sent to it, by role: what the switch confirmed.
    pub granted: BTreeMap<String, usize>,
    /// Errors sent to it, by code (`OFPRRFC_STALE`, `OFPBRC_IS_SLAVE`).
    pub errors: BTreeMap<String, usize>,
    /// Every message received from it, by type (`BUNDLE_CONTROL`, `FLOW_MOD`).
    pub received: BTreeMap<String, usize>,
    /// Every message sent to it, by type.
    pub sent: BTreeMap<String, usize>,
}

impl Traffic {
    pub(super) fn write_count(&self) -> usize {
        self.writes.values().sum()
    }

    pub(super) fn granted(&self, role: &str) -> usize {
        self.granted.get(role).copied().unwrap_or(0)
    }
}

/// `METER_MOD x1, PACKET_OUT x3`, or `none`.
pub(super) fn counts(map: &BTreeMap<String, usize>) -> String {
    if map.is_empty() {
        return "none".to_owned();
    }
    map.iter()
        .map(|(what, n)| format!("{what} x{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl std::fmt::Display for Traffic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "writes {} ({}); role requests {}; role replies {}; errors {}",
            self.write_count(),
            counts(&self.writes),
            counts(&self.asked),
            counts(&self.granted),
            counts(&self.errors)
        )?;
        write!(
            f,
            "; received {}; sent {}",
            counts(&self.received),
            counts(&self.sent)
        )
    }
}

/// One message line of the log: `...|vconn|DBG|<peer>: received: <TYPE> ...` or
/// `...|vconn|DBG|<peer>: sent (<errno>): <TYPE> ...`. Returns the peer, whether the
/// switch received it, the type without its `OFPT_`/`NXT_` prefix, and what follows the
/// type's header (`role=slave generation_id=7`, an error's code).
fn message(line: &str) -> Option<(&str, bool, &str, &str)> {
    let (_, rest) = line.split_once("|vconn|DBG|")?;
    let (peer, received, text) = if let Some((peer, text)) = rest.split_once(": received: ") {
        (peer, true, text)
    } else {
        let (peer, sent) = rest.split_once(": sent (")?;
        let (_, text) = sent.split_once("): ")?;
        (peer, false, text)
    };
    let kind = text.split_whitespace().next()?;
    let kind = kind
        .strip_prefix("OFPT_")
        .or_else(|| kind.strip_prefix("NXT_"))
        .or_else(|| kind.strip_prefix("ONFT_"))
        .unwrap_or(kind);
    // The body follows the last "): " of the header (`(OF1.3) (xid=0x3): role=slave`).
    let body = text.split_once("): ").map_or("", |(_, body)| body);
    Some((peer, received, kind, body.trim()))
}

/// What the log says passed between the switches and `peer`.
pub(super) fn traffic(log: &str, peer: &str) -> Traffic {
    let mut traffic = Traffic::default();
    for line in log.lines() {
        let Some((from, received, kind, body)) = message(line) else {
            continue;
        };
        if from != peer {
            continue;
        }
        let bump = |map: &mut BTreeMap<String, usize>, key: &str| {
            *map.entry(key.to_owned()).or_default() += 1;
        };
        bump(
            if received {
                &mut traffic.received
            } else {
                &mut traffic.sent
            },
            kind,
        );
        match (received, kind) {
            (true, kind) if WRITES.contains(&kind) => {
                bump(&mut traffic.writes, kind);
                if traffic.first_write.is_none() {
                    traffic.first_write = Some(line.to_owned());
                }
            }
            (true, "ROLE_REQUEST") => bump(&mut traffic.asked, &role_of(body)),
            (false, "ROLE_REPLY") => {
                let role = role_of(body);
                let role = role.split_whitespace().next().unwrap_or("?").to_owned();
                bump(&mut traffic.granted, &role);
            }
            (false, "ERROR") => bump(
                &mut traffic.errors,
                body.split_whitespace().next().unwrap_or("?"),
            ),
            _ => {}
        }
    }
    traffic
}

/// `role=slave generation_id=7` as `slave generation_id=7`. Open vSwitch 2.16 and later
/// print the roles as `primary` and `secondary`; the report uses OpenFlow's names.
fn role_of(body: &str) -> String {
    body.split_whitespace()
        .filter(|word| word.starts_with("role=") || word.starts_with("generation_id="))
        .map(|word| match word.trim_start_matches("role=") {
            "primary" => "master",
            "secondary" => "slave",
            other => other,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether the log has bridge `bridge` losing its connection to `target`: the inactivity
/// probe unanswered, or the connection closed (`rconn`, whose connections are named
/// `<bridge><-><target>`).
pub(super) fn dropped(log: &str, bridge: &str, target: &str) -> bool {
    let name = format!("|{bridge}<->{target}: ");
    log.lines().any(|line| {
        line.contains("|rconn|")
            && line.contains(&name)
            && ["disconnecting", "dropped", "closed"]
                .iter()
                .any(|word| line.contains(word))
    })
}

/// Whether the log has bridge `bridge` connected to `target` (the OpenFlow HELLOs
/// exchanged).
pub(super) fn connected(log: &str, bridge: &str, target: &str) -> bool {
    states(log, bridge, target).any(|state| state == "connected")
}

/// Whether bridge `bridge`'s latest word on `target` is a connection attempt under way:
/// its TCP connection made (a stopped process's kernel accepts it) and its HELLO sent,
/// unanswered. A controller woken then finds the switch at once, before anything else.
pub(super) fn attempting(log: &str, bridge: &str, target: &str) -> bool {
    // At debug, `rconn` logs "connecting..." and then "entering CONNECTING"; the attempt
    // ends in "connected" or "connection timed out", each followed by the next state.
    matches!(
        states(log, bridge, target).last(),
        Some("connecting..." | "entering CONNECTING")
    )
}

/// What `rconn` logged about `bridge`'s connection to `target`, in order.
fn states<'l>(log: &'l str, bridge: &str, target: &str) -> impl Iterator<Item = &'l str> {
    let name = format!("|{bridge}<->{target}: ");
    log.lines().filter_map(move |line| {
        let (_, state) = line.split_once("|rconn|")?.1.split_once(&name)?;
        Some(state.trim_end())
    })
}

/// A bridge's record of one controller target, as the `Controller` table shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Connection {
    pub target: String,
    pub connected: bool,
    /// `master`, `slave` or `other` (equal); empty while Open vSwitch has not said.
    pub role: String,
}

/// Every controller record of `bridge`.
pub(super) fn connections(ovs: &Ovs, bridge: &str) -> anyhow::Result<Vec<Connection>> {
    let ids = ovs.vsctl(&[
        "--data=bare",
        "--no-headings",
        "--columns=controller",
        "list",
        "Bridge",
        bridge,
    ])?;
    let ids: Vec<&str> = ids.split_whitespace().collect();
    let table = ovs.vsctl(&[
        "--format=csv",
        "--data=bare",
        "--no-headings",
        "--columns=_uuid,target,is_connected,role",
        "list",
        "Controller",
    ])?;
    Ok(parse_connections(&table, &ids))
}

/// The rows of `list Controller` (CSV: uuid, target, is_connected, role) whose uuid is
/// one of `ids`.
fn parse_connections(table: &str, ids: &[&str]) -> Vec<Connection> {
    table
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line
                .split(',')
                .map(|c| c.trim().trim_matches('"'))
                .collect();
            let [id, target, connected, role] = cells.as_slice() else {
                return None;
            };
            ids.contains(id).then(|| Connection {
                target: (*target).to_owned(),
                connected: *connected == "true",
                role: (*role).to_owned(),
            })
        })
        .collect()
}

/// Meter `id`'s drop band in `ovs-ofctl dump-meters` output, as (rate, burst).
pub(super) fn meter(dump: &str, id: u32) -> Option<(u64, u64)> {
    let head = format!("meter={id} ");
    let mut lines = dump.lines().skip_while(|line| !line.starts_with(&head));
    let config = format!("{} {}", lines.next()?, lines.next().unwrap_or_default());
    let value = |key: &str| {
        config
            .split([' ', ','])
            .find_map(|word| word.strip_prefix(key))
            .and_then(|v| v.parse().ok())
    };
    Some((value("rate=")?, value("burst_size=").unwrap_or(0)))
}

/// A meter as the report shows it.
pub(super) fn shown(meter: Option<(u64, u64)>) -> String {
    match meter {
        Some((rate, burst)) => format!("{rate}/{burst}"),
        None => "none".to_owned(),
    }
}

/// Switch by switch, `(s1 800/1600, s2 ...)`.
pub(super) fn per_switch(values: &[(u64, String)]) -> String {
    let mut out = String::new();
    for (dpid, value) in values {
        if !out.is_empty() {
            out.push_str(", ");
        }
        let _ = write!(out, "s{dpid} {value}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\
2026-11-27T17:10:01.100Z|00100|vconn|DBG|tcp:127.0.0.1:6001: received: OFPT_ROLE_REQUEST (OF1.3) (xid=0x3): role=slave generation_id=7
2026-11-27T17:10:01.101Z|00101|vconn|DBG|tcp:127.0.0.1:6001: sent (Success): OFPT_ERROR (OF1.3) (xid=0x3): OFPRRFC_STALE
OFPT_ROLE_REQUEST (OF1.3) (xid=0x3): role=slave generation_id=7
2026-11-27T17:10:01.102Z|00102|vconn|DBG|tcp:127.0.0.1:6001: received: OFPT_METER_MOD (OF1.3) (xid=0x4): ADD meter=1 pktps burst stats bands=
type=drop rate=1000 burst_size=2000
2026-11-27T17:10:01.103Z|00103|vconn|DBG|tcp:127.0.0.1:6002: received: OFPT_PACKET_OUT (OF1.3) (xid=0x9): in_port=CONTROLLER actions=output:2 data_len=60
2026-11-27T17:10:01.104Z|00104|vconn|DBG|tcp:127.0.0.1:6002: sent (Success): OFPT_ROLE_REPLY (OF1.3) (xid=0x5): role=master generation_id=8
2026-11-27T17:10:01.105Z|00105|vconn|DBG|tcp:127.0.0.1:6001: sent (Success): NXT_ROLE_REPLY (xid=0x6): role=slave
2026-11-27T17:10:01.106Z|00106|vconn|DBG|unix#4: received: OFPST_METER_CONFIG request (OF1.3) (xid=0x2): meter=all
2026-11-27T17:10:01.107Z|00107|rconn|INFO|sl1s1<->tcp:127.0.0.1:6001: connected
2026-11-27T17:10:01.108Z|00108|vconn|DBG|tcp:127.0.0.1:6002: sent (Success): OFPT_ROLE_REPLY (OF1.3) (xid=0x7): role=primary generation_id=8
2026-11-27T17:10:01.109Z|00109|vconn|DBG|tcp:127.0.0.1:6001: received: OFPT_ROLE_REQUEST (OF1.3) (xid=0x8): role=secondary generation_id=8
2026-11-27T17:10:01.110Z|00110|rconn|ERR|sl1s2<->tcp:127.0.0.1:6001: no response to inactivity probe after 5 seconds, disconnecting
2026-11-27T17:10:01.111Z|00111|rconn|DBG|sl1s2<->tcp:127.0.0.1:6001: entering BACKOFF
2026-11-27T17:10:02.110Z|00112|rconn|DBG|sl1s2<->tcp:127.0.0.1:6001: connecting...
2026-11-27T17:10:02.110Z|00113|rconn|DBG|sl1s2<->tcp:127.0.0.1:6001: entering CONNECTING
2026-11-27T17:10:02.111Z|00114|rconn|DBG|sl1s3<->tcp:127.0.0.1:6001: connecting...
2026-11-27T17:10:02.111Z|00115|rconn|DBG|sl1s3<->tcp:127.0.0.1:6001: entering CONNECTING
2026-11-27T17:10:03.111Z|00116|rconn|DBG|sl1s3<->tcp:127.0.0.1:6001: connection timed out
2026-11-27T17:10:03.111Z|00117|rconn|DBG|sl1s3<->tcp:127.0.0.1:6001: entering BACKOFF
";

    #[test]
    fn messages_are_told_apart_by_their_peer_and_direction() {
        let woken = traffic(LOG, "tcp:127.0.0.1:6001");
        assert_eq!(woken.write_count(), 1);
        assert_eq!(woken.writes.get("METER_MOD"), Some(&1));
        assert!(woken
            .first_write
            .as_deref()
            .is_some_and(|line| line.contains("00102")));
        assert_eq!(woken.asked.get("slave generation_id=7"), Some(&1));
        assert_eq!(woken.errors.get("OFPRRFC_STALE"), Some(&1));
        assert_eq!(woken.granted("slave"), 1);
        assert_eq!(woken.granted("master"), 0);

        assert_eq!(woken.asked.get("slave generation_id=8"), Some(&1));

        let master = traffic(LOG, "tcp:127.0.0.1:6002");
        assert_eq!(master.writes.get("PACKET_OUT"), Some(&1));
        assert_eq!(master.granted("master"), 2);
        assert!(master.errors.is_empty());

        // ovs-ofctl's own connection is nobody's controller.
        assert_eq!(traffic(LOG, "unix#4").write_count(), 0);
    }

    #[test]
    fn bundle_messages_are_counted_by_type_and_their_contents_are_not() {
        let log = "\
2026-11-27T17:10:01.100Z|00100|vconn|DBG|tcp:127.0.0.1:6001: received: ONFT_BUNDLE_CONTROL (OF1.3) (xid=0x3):
 bundle_id=0 type=OPEN_REQUEST flags=atomic ordered
2026-11-27T17:10:01.101Z|00101|vconn|DBG|tcp:127.0.0.1:6001: received: ONFT_BUNDLE_ADD_MESSAGE (OF1.3) (xid=0x4):
 bundle_id=0 flags=atomic ordered
OFPT_FLOW_MOD (OF1.3) (xid=0x4): ADD table:2 priority=100 actions=output:3
2026-11-27T17:10:01.102Z|00102|vconn|DBG|tcp:127.0.0.1:6001: sent (Success): ONFT_BUNDLE_CONTROL (OF1.3) (xid=0x3):
 bundle_id=0 type=OPEN_REPLY flags=0
";
        let traffic = traffic(log, "tcp:127.0.0.1:6001");
        assert_eq!(traffic.received.get("BUNDLE_CONTROL"), Some(&1));
        assert_eq!(traffic.received.get("BUNDLE_ADD_MESSAGE"), Some(&1));
        assert_eq!(traffic.received.get("FLOW_MOD"), None);
        assert_eq!(traffic.sent.get("BUNDLE_CONTROL"), Some(&1));
        assert_eq!(traffic.writes.get("BUNDLE_ADD_MESSAGE"), Some(&1));
    }

    #[test]
    fn connections_made_and_lost_are_read_per_bridge() {
        let target = "tcp:127.0.0.1:6001";
        assert!(connected(LOG, "sl1s1", target));
        assert!(!connected(LOG, "sl1s2", target));
        assert!(!connected(LOG, "sl1s1", "tcp:127.0.0.1:6002"));
        assert!(dropped(LOG, "sl1s2", target));
        assert!(!dropped(LOG, "sl1s1", target));
        // A bridge whose name another's begins with is not that one.
        assert!(!dropped(LOG, "l1s2", target));
        assert!(attempting(LOG, "sl1s2", target));
        assert!(!attempting(LOG, "sl1s3", target));
        assert!(!attempting(LOG, "sl1s1", target));
    }

    #[test]
    fn the_controller_table_is_read_per_bridge() {
        let table = "\
aaa,\"tcp:127.0.0.1:6001\",true,slave
bbb,\"tcp:127.0.0.1:6002\",false,
ccc,\"tcp:127.0.0.1:6001\",true,master
";
        let rows = parse_connections(table, &["aaa", "bbb"]);
        assert_eq!(
            rows,
            vec![
                Connection {
                    target: "tcp:127.0.0.1:6001".into(),
                    connected: true,
                    role: "slave".into()
                },
                Connection {
                    target: "tcp:127.0.0.1:6002".into(),
                    connected: false,
                    role: String::new()
                },
            ]
        );
    }

    #[test]
    fn a_meter_is_read_from_dump_meters() {
        let dump = "\
OFPST_METER_CONFIG reply (OF1.3) (xid=0x2):
meter=1 pktps burst stats bands=
type=drop rate=800 burst_size=1600

meter=2 pktps burst stats bands=
type=drop rate=50 burst_size=100
";
        assert_eq!(meter(dump, 1), Some((800, 1600)));
        assert_eq!(meter(dump, 2), Some((50, 100)));
        assert_eq!(meter(dump, 3), None);
        assert_eq!(shown(meter(dump, 1)), "800/1600");
    }
}
