//! The vocabulary of a cluster of instances, shared by what elects the master (the etcd
//! backend), what acts on it (the controller) and what reports it (`GET /cluster`), none
//! of which depends on another.

/// This instance's place in the master election.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase", tag = "state"))]
pub enum Leadership {
    /// This instance is master of the network. `generation` only grows, cluster-wide,
    /// from one master to the next: the switches refuse a master whose generation is
    /// older than one they have seen.
    Master {
        /// This master's generation.
        generation: u64,
    },
    /// Another instance is master (`master`, with its `generation`), or none is known
    /// (no election result, or the election cannot be reached).
    Standby {
        /// The id the master instance stands in the election under, when one is known.
        master: Option<String>,
        /// The master's generation, when one is known.
        generation: Option<u64>,
    },
}

impl Leadership {
    /// What an instance is before it has heard from the election.
    pub const UNDECIDED: Leadership = Leadership::Standby {
        master: None,
        generation: None,
    };

    /// Whether this instance is the master.
    pub fn is_master(&self) -> bool {
        matches!(self, Leadership::Master { .. })
    }

    /// The generation of the current master, this instance or another, if known.
    pub fn generation(&self) -> Option<u64> {
        match self {
            Leadership::Master { generation } => Some(*generation),
            Leadership::Standby { generation, .. } => *generation,
        }
    }
}
