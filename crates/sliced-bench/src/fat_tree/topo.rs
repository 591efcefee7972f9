//! The shape of a k-ary fat tree (Al-Fares et al.): (k/2)² core switches, k pods of k/2
//! aggregation and k/2 edge switches, k/2 hosts on each edge switch. Every name, datapath
//! id and port number is fixed here, so that the bridges built in Open vSwitch and the
//! ports bound through sliced's API are the same ones.

use std::fmt;

/// One switch of the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Switch {
    Core(u32),
    Aggregation { pod: u32, index: u32 },
    Edge { pod: u32, index: u32 },
}

/// One end of a cable: a switch and its OpenFlow port number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct End {
    pub switch: Switch,
    pub port: u32,
}

/// A k-ary fat tree; `k` is even and at least 2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FatTree {
    pub k: u32,
}

impl FatTree {
    pub(crate) fn new(k: u32) -> anyhow::Result<Self> {
        anyhow::ensure!(
            k >= 2 && k % 2 == 0,
            "a fat tree's k is even and at least 2, not {k}"
        );
        Ok(Self { k })
    }

    fn half(&self) -> u32 {
        self.k / 2
    }

    pub(crate) fn switches(&self) -> Vec<Switch> {
        let half = self.half();
        let mut all: Vec<Switch> = (0..half * half).map(Switch::Core).collect();
        for pod in 0..self.k {
            all.extend((0..half).map(|index| Switch::Aggregation { pod, index }));
            all.extend((0..half).map(|index| Switch::Edge { pod, index }));
        }
        all
    }

    /// The datapath id: switches numbered from 1 in the order of [`FatTree::switches`].
    pub(crate) fn dpid(&self, switch: Switch) -> u64 {
        let half = self.half();
        let ordinal = match switch {
            Switch::Core(index) => index,
            Switch::Aggregation { pod, index } => half * half + pod * self.k + index,
            Switch::Edge { pod, index } => half * half + pod * self.k + half + index,
        };
        u64::from(ordinal) + 1
    }

    /// Every cable. An edge switch's ports 1..=k/2 go up to its pod's aggregation
    /// switches (edge j port i+1 to aggregation i port j+1); aggregation i's ports
    /// k/2+1..=k go up to cores i·k/2 .. i·k/2+k/2-1, whose port pod+1 comes down.
    pub(crate) fn cables(&self) -> Vec<(End, End)> {
        let half = self.half();
        let mut cables = Vec::new();
        for pod in 0..self.k {
            for agg in 0..half {
                for edge in 0..half {
                    cables.push((
                        End {
                            switch: Switch::Edge { pod, index: edge },
                            port: agg + 1,
                        },
                        End {
                            switch: Switch::Aggregation { pod, index: agg },
                            port: edge + 1,
                        },
                    ));
                }
                for up in 0..half {
                    cables.push((
                        End {
                            switch: Switch::Aggregation { pod, index: agg },
                            port: half + up + 1,
                        },
                        End {
                            switch: Switch::Core(agg * half + up),
                            port: pod + 1,
                        },
                    ));
                }
            }
        }
        cables
    }

    /// Every host port: edge switches' ports k/2+1..=k, host by host.
    pub(crate) fn host_ports(&self) -> Vec<End> {
        let half = self.half();
        let mut ports = Vec::new();
        for pod in 0..self.k {
            for index in 0..half {
                ports.extend((0..half).map(|h| End {
                    switch: Switch::Edge { pod, index },
                    port: half + h + 1,
                }));
            }
        }
        ports
    }
}

/// The bridge's name (at most 15 bytes: a bridge is a network device too).
impl fmt::Display for Switch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Switch::Core(index) => write!(f, "c{index}"),
            Switch::Aggregation { pod, index } => write!(f, "a{pod}x{index}"),
            Switch::Edge { pod, index } => write!(f, "e{pod}x{index}"),
        }
    }
}

/// Host `index`'s MAC address: locally administered, unicast.
pub(crate) fn host_mac(index: usize) -> String {
    let i = index as u32;
    format!(
        "02:00:00:{:02x}:{:02x}:{:02x}",
        (i >> 16) as u8,
        (i >> 8) as u8,
        i as u8
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn the_sizes_are_the_issues() {
        for (k, switches, cables, hosts) in
            [(4, 20, 32, 16), (8, 80, 256, 128), (16, 320, 2048, 1024)]
        {
            let tree = FatTree::new(k).expect("even");
            assert_eq!(tree.switches().len(), switches);
            assert_eq!(tree.cables().len(), cables);
            assert_eq!(tree.host_ports().len(), hosts);
        }
        assert!(FatTree::new(5).is_err());
    }

    #[test]
    fn every_port_is_used_once_and_every_switch_has_k_ports() {
        let tree = FatTree::new(8).expect("even");
        let mut ends: Vec<End> = tree
            .cables()
            .into_iter()
            .flat_map(|(a, b)| [a, b])
            .collect();
        ends.extend(tree.host_ports());
        let unique: HashSet<End> = ends.iter().copied().collect();
        assert_eq!(unique.len(), ends.len());
        for switch in tree.switches() {
            let ports: HashSet<u32> = ends
                .iter()
                .filter(|end| end.switch == switch)
                .map(|end| end.port)
                .collect();
            // A core switch has a port per pod; the others k/2 up and k/2 down.
            let wanted: HashSet<u32> = (1..=8).collect();
            assert_eq!(ports, wanted, "{switch}");
        }
        let dpids: HashSet<u64> = tree.switches().into_iter().map(|s| tree.dpid(s)).collect();
        assert_eq!(dpids.len(), 80);
        assert!(dpids.contains(&1) && dpids.contains(&80));
        assert!(tree.switches().iter().all(|s| s.to_string().len() <= 15));
        assert_eq!(host_mac(0x0102), "02:00:00:00:01:02");
    }
}
