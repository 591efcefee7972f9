//! The flow tables as `ovs-ofctl --no-stats --no-names dump-flows` prints them.

use std::collections::BTreeMap;

/// One flow entry: its priority, its match and settings (`in_port=1`, `dl_src=...`,
/// `idle_timeout=60`, bare words such as `arp`), and its actions as printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Flow {
    pub priority: u32,
    pub fields: BTreeMap<String, String>,
    pub actions: String,
    pub line: String,
}

/// The default priority of OpenFlow, which ovs-ofctl leaves out.
const DEFAULT_PRIORITY: u32 = 32768;

impl Flow {
    pub(super) fn field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }

    /// Matches `mac` as source or destination.
    pub(super) fn mentions(&self, mac: &str) -> bool {
        self.field("dl_src") == Some(mac) || self.field("dl_dst") == Some(mac)
    }

    /// Drops what it matches (no actions).
    pub(super) fn drops(&self) -> bool {
        self.actions == "drop" || self.actions.is_empty()
    }

    /// The ports it outputs to.
    pub(super) fn outputs(&self) -> Vec<u32> {
        self.actions
            .split(',')
            .filter_map(|action| action.strip_prefix("output:"))
            .filter_map(|port| port.parse().ok())
            .collect()
    }

    /// How long the flow has been in the switch, from a dump with statistics
    /// (`duration=12.345s`).
    pub(super) fn duration(&self) -> Option<std::time::Duration> {
        let seconds: f64 = self.field("duration")?.strip_suffix('s')?.parse().ok()?;
        std::time::Duration::try_from_secs_f64(seconds).ok()
    }

    /// The path flow from `src` to `dst` entering at `in_port`, if this is one.
    pub(super) fn is_path(&self, src: &str, dst: &str) -> bool {
        self.field("dl_src") == Some(src) && self.field("dl_dst") == Some(dst) && !self.drops()
    }
}

/// Parses a dump; lines that are not flows (the reply header) are skipped.
pub(super) fn parse(dump: &str) -> Vec<Flow> {
    dump.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Flow> {
    let trimmed = line.trim();
    let (matches, actions) = if let Some(actions) = trimmed.strip_prefix("actions=") {
        ("", actions)
    } else {
        trimmed.split_once(" actions=")?
    };
    let mut fields = BTreeMap::new();
    for token in matches.split([',', ' ']).filter(|t| !t.is_empty()) {
        let (key, value) = token.split_once('=').unwrap_or((token, ""));
        let key = match key {
            "eth_src" => "dl_src",
            "eth_dst" => "dl_dst",
            other => other,
        };
        fields.insert(key.to_owned(), value.to_owned());
    }
    let priority = fields
        .get("priority")
        .and_then(|p| p.parse().ok())
        .unwrap_or(DEFAULT_PRIORITY);
    Some(Flow {
        priority,
        fields,
        actions: actions.trim().to_owned(),
        line: trimmed.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_path_drop_and_table_miss_flows() {
        let dump = "NXST_FLOW reply (xid=0x4):
 idle_timeout=60, priority=100,in_port=1,dl_src=00:00:00:00:00:01,dl_dst=00:00:00:00:00:03 actions=output:2
 hard_timeout=10, priority=50,in_port=3,dl_src=00:00:00:00:00:03,dl_dst=00:00:00:00:00:01 actions=drop
 priority=0 actions=CONTROLLER:65535
";
        let flows = parse(dump);
        assert_eq!(flows.len(), 3);
        assert_eq!(flows[0].priority, 100);
        assert_eq!(flows[0].field("in_port"), Some("1"));
        assert_eq!(flows[0].outputs(), vec![2]);
        assert!(flows[0].is_path("00:00:00:00:00:01", "00:00:00:00:00:03"));
        assert!(flows[0].mentions("00:00:00:00:00:03"));
        assert!(flows[1].drops());
        assert!(!flows[1].is_path("00:00:00:00:00:03", "00:00:00:00:00:01"));
        assert_eq!(flows[1].field("hard_timeout"), Some("10"));
        assert_eq!(flows[2].priority, 0);
        assert!(!flows[2].fields.contains_key("dl_src"));
    }

    #[test]
    fn oxm_names_and_default_priority() {
        let flows = parse(" in_port=2,eth_src=00:00:00:00:00:02,eth_dst=00:00:00:00:00:01 actions=output:1,output:3");
        assert_eq!(flows[0].priority, 32768);
        assert_eq!(flows[0].field("dl_src"), Some("00:00:00:00:00:02"));
        assert_eq!(flows[0].outputs(), vec![1, 3]);
        assert!(parse("").is_empty());
    }

    #[test]
    fn a_dump_with_statistics_gives_each_flows_age() {
        let flows = parse(" cookie=0x5c1c020012345678, duration=12.5s, table=0, n_packets=3, n_bytes=294, idle_timeout=60, idle_age=0, priority=100,in_port=1,dl_src=00:00:00:00:00:01,dl_dst=00:00:00:00:00:02 actions=output:2");
        assert_eq!(
            flows[0].duration(),
            Some(std::time::Duration::from_millis(12_500))
        );
        assert_eq!(flows[0].priority, 100);
        assert!(parse(" priority=0 actions=drop")[0].duration().is_none());
    }
}
