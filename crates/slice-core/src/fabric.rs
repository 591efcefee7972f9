//! The fabric an operator declares: the cables between switches, or the ports that may
//! carry them. With a declaration, links form there and nowhere else, whatever probes
//! arrive; without one, the controller discovers links within a window after each switch
//! connects (docs/security.md, "Links").
//!
//! A declaration comes from the daemon's settings or from the store (`PUT
//! /topology/fabric`), which keeps it as [`DeclaredFabric::to_text`]: one entry a line.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

use crate::PortId;

/// The most entries one declaration holds: sixteen cables for each of a thousand
/// switches, and more. It bounds what one request makes the store and every instance
/// keep; even of the longest entries it stays under a mebibyte of text, within what etcd
/// takes in one request (1.5 MiB by default).
pub const MAX_FABRIC_ENTRIES: usize = 16_384;

/// The longest text of one entry in its canonical form: a cable between two ports with
/// the largest datapath id and port number.
pub const LONGEST_FABRIC_ENTRY: usize = 2 * "0xffffffffffffffff:4294967295".len() + 1;

/// Reads a list of entries' texts, refusing the list as soon as it holds more than
/// [`MAX_FABRIC_ENTRIES`]: a body of a million empty strings is refused after the
/// first [`MAX_FABRIC_ENTRIES`], not kept whole and counted after.
#[cfg(feature = "serde")]
pub fn deserialize_bounded_entries<'de, D>(deserializer: D) -> Result<Vec<String>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    struct Bounded;

    impl<'de> serde::de::Visitor<'de> for Bounded {
        type Value = Vec<String>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "a list of at most {MAX_FABRIC_ENTRIES} fabric entries")
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut entries =
                Vec::with_capacity(seq.size_hint().unwrap_or(0).min(MAX_FABRIC_ENTRIES));
            while let Some(entry) = seq.next_element::<String>()? {
                if entries.len() == MAX_FABRIC_ENTRIES {
                    return Err(serde::de::Error::custom(FabricError::TooLarge));
                }
                entries.push(entry);
            }
            Ok(entries)
        }
    }

    deserializer.deserialize_seq(Bounded)
}

/// One line of a declaration: `0x1:10-0x2:10` for a cable, `0x1:10` for a fabric port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FabricEntry {
    /// Exactly these two ends are cabled together.
    Cable(PortId, PortId),
    /// The port leads to another switch: a link may form with any other fabric port.
    Port(PortId),
}

/// Why a declaration line is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FabricEntryError {
    /// A side is not a port name (`0x<hex dpid>:<port no>`).
    #[error("fabric entry {entry:?}: {reason}")]
    Port {
        /// The line as given.
        entry: String,
        /// What is wrong with the port in it.
        reason: String,
    },
    /// Both ends of a cable are the same port.
    #[error("{entry:?}: a cable joins two different ports")]
    Loop {
        /// The line as given.
        entry: String,
    },
}

impl FromStr for FabricEntry {
    type Err = FabricEntryError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let entry = text.trim();
        let port = |part: &str| {
            let part = part.trim();
            part.parse::<PortId>()
                .map_err(|err| FabricEntryError::Port {
                    entry: entry.to_string(),
                    reason: err.to_string(),
                })
        };
        match entry.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (port(a)?, port(b)?);
                if a == b {
                    return Err(FabricEntryError::Loop {
                        entry: entry.to_string(),
                    });
                }
                Ok(FabricEntry::Cable(a.min(b), a.max(b)))
            }
            None => Ok(FabricEntry::Port(port(entry)?)),
        }
    }
}

impl fmt::Display for FabricEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FabricEntry::Cable(a, b) => write!(f, "{a}-{b}"),
            FabricEntry::Port(port) => write!(f, "{port}"),
        }
    }
}

/// Two declarations of one port that cannot both hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("port {port} is declared twice: in {first} and in {second}")]
pub struct FabricConflict {
    /// The port in both.
    pub port: PortId,
    /// The entry that declared it first.
    pub first: FabricEntry,
    /// The entry that declared it again.
    pub second: FabricEntry,
}

/// Why a list of lines is not a declaration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FabricError {
    /// A line is not an entry.
    #[error(transparent)]
    Entry(#[from] FabricEntryError),
    /// A port is in two entries.
    #[error(transparent)]
    Conflict(#[from] FabricConflict),
    /// More entries than [`MAX_FABRIC_ENTRIES`].
    #[error("a fabric declaration holds at most {MAX_FABRIC_ENTRIES} entries")]
    TooLarge,
}

/// The operator's fabric: empty (the default) lets the engine discover links.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeclaredFabric {
    /// Each end of a declared cable, with the entry that declared it.
    cable_ends: BTreeMap<PortId, (PortId, FabricEntry)>,
    ports: BTreeSet<PortId>,
    /// A store holds a declaration that cannot be read: declared, with nothing in it.
    unreadable: bool,
}

impl DeclaredFabric {
    /// The declaration of `entries`; a port in two entries is refused, since a port
    /// carries one cable.
    pub fn new(entries: impl IntoIterator<Item = FabricEntry>) -> Result<Self, FabricConflict> {
        let mut fabric = DeclaredFabric::default();
        let mut declared_in: BTreeMap<PortId, FabricEntry> = BTreeMap::new();
        for entry in entries {
            let ports = match entry {
                FabricEntry::Cable(a, b) => vec![a, b],
                FabricEntry::Port(port) => vec![port],
            };
            for port in ports {
                if let Some(first) = declared_in.insert(port, entry) {
                    if first != entry {
                        return Err(FabricConflict {
                            port,
                            first,
                            second: entry,
                        });
                    }
                }
            }
            match entry {
                FabricEntry::Cable(a, b) => {
                    fabric.cable_ends.insert(a, (b, entry));
                    fabric.cable_ends.insert(b, (a, entry));
                }
                FabricEntry::Port(port) => {
                    fabric.ports.insert(port);
                }
            }
        }
        Ok(fabric)
    }

    /// What a store holds when its declaration cannot be read (a foreign writer, a later
    /// release's form): declared, and allowing no link, so that every instance reading it
    /// agrees and none falls back to discovering links. Only a store's read makes one; a
    /// store never writes it.
    pub fn unreadable() -> Self {
        Self {
            unreadable: true,
            ..Self::default()
        }
    }

    /// Whether this is [`DeclaredFabric::unreadable`].
    pub fn is_unreadable(&self) -> bool {
        self.unreadable
    }

    /// Whether the operator declared anything: then only what is declared makes links.
    pub fn is_declared(&self) -> bool {
        self.unreadable || !self.cable_ends.is_empty() || !self.ports.is_empty()
    }

    /// Whether a link may join `a` and `b`: a declared cable between exactly these two,
    /// or two declared fabric ports.
    pub fn allows(&self, a: PortId, b: PortId) -> bool {
        match self.cable_ends.get(&a) {
            Some((other, _)) => *other == b,
            None => self.ports.contains(&a) && self.ports.contains(&b),
        }
    }

    /// The entries, cables first, each once.
    pub fn entries(&self) -> Vec<FabricEntry> {
        let cables: BTreeSet<FabricEntry> = self.cable_ends.values().map(|(_, e)| *e).collect();
        cables
            .into_iter()
            .chain(self.ports.iter().map(|port| FabricEntry::Port(*port)))
            .collect()
    }

    /// The declaration of the entries written as `lines` (an entry's text each), bounded
    /// by [`MAX_FABRIC_ENTRIES`]: what a request body or a setting gives.
    pub fn parse<S: AsRef<str>>(lines: &[S]) -> Result<Self, FabricError> {
        if lines.len() > MAX_FABRIC_ENTRIES {
            return Err(FabricError::TooLarge);
        }
        let entries = lines
            .iter()
            .map(|line| line.as_ref().parse())
            .collect::<Result<Vec<FabricEntry>, _>>()?;
        Ok(Self::new(entries)?)
    }

    /// The entries one a line, in [`DeclaredFabric::entries`]' order: how a store keeps
    /// the declaration. Empty when nothing is declared.
    pub fn to_text(&self) -> String {
        let mut text = String::new();
        for entry in self.entries() {
            text.push_str(&entry.to_string());
            text.push('\n');
        }
        text
    }

    /// Reads back what [`DeclaredFabric::to_text`] wrote.
    pub fn from_text(text: &str) -> Result<Self, FabricError> {
        let lines: Vec<&str> = text
            .lines()
            .filter(|line| !line.trim().is_empty())
            .collect();
        Self::parse(&lines)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(dpid: u64, port_no: u32) -> PortId {
        PortId::new(dpid, port_no)
    }

    #[test]
    fn entries_read_as_cables_or_ports_and_say_what_is_wrong() {
        assert_eq!(
            "0x2:10-0x1:10".parse(),
            Ok(FabricEntry::Cable(p(1, 10), p(2, 10)))
        );
        assert_eq!(" 0xa:3 ".parse(), Ok(FabricEntry::Port(p(10, 3))));
        assert_eq!(
            FabricEntry::Cable(p(1, 10), p(2, 10)).to_string(),
            "0x1:10-0x2:10"
        );
        let err = "1:10-0x2:10".parse::<FabricEntry>().unwrap_err();
        assert!(err.to_string().contains("\"1:10\""), "{err}");
        assert!(matches!(
            "0x1:1-0x1:1".parse::<FabricEntry>(),
            Err(FabricEntryError::Loop { .. })
        ));
    }

    #[test]
    fn only_declared_cables_and_pairs_of_fabric_ports_make_links() {
        let fabric = DeclaredFabric::new([
            "0x1:10-0x2:10".parse().unwrap(),
            "0x3:1".parse().unwrap(),
            "0x4:1".parse().unwrap(),
        ])
        .unwrap();
        assert!(fabric.is_declared());
        assert!(fabric.allows(p(1, 10), p(2, 10)) && fabric.allows(p(2, 10), p(1, 10)));
        assert!(fabric.allows(p(3, 1), p(4, 1)));
        // A cable end is tied to its other end, even towards a fabric port.
        assert!(!fabric.allows(p(1, 10), p(3, 1)) && !fabric.allows(p(3, 1), p(1, 10)));
        assert!(!fabric.allows(p(1, 5), p(2, 5)));
        assert!(!fabric.allows(p(3, 1), p(4, 2)));
        assert!(!DeclaredFabric::default().is_declared());
    }

    #[test]
    fn a_port_declared_twice_is_refused() {
        let conflict = DeclaredFabric::new([
            "0x1:10-0x2:10".parse().unwrap(),
            "0x1:10-0x3:10".parse().unwrap(),
        ])
        .unwrap_err();
        assert_eq!(conflict.port, p(1, 10));
        // The same line twice is one declaration.
        let twice = ["0x1:10-0x2:10".parse().unwrap(); 2];
        assert_eq!(DeclaredFabric::new(twice).unwrap().entries().len(), 1);
    }

    #[test]
    fn a_declaration_reads_back_from_its_text_and_a_bad_one_says_why() {
        let fabric = DeclaredFabric::parse(&["0x3:1", "0x2:10-0x1:10"]).unwrap();
        assert_eq!(fabric.to_text(), "0x1:10-0x2:10\n0x3:1\n");
        assert_eq!(DeclaredFabric::from_text(&fabric.to_text()), Ok(fabric));
        assert_eq!(DeclaredFabric::from_text(""), Ok(DeclaredFabric::default()));
        assert!(matches!(
            DeclaredFabric::parse(&["0x1:1", "0x1:1-0x2:1"]),
            Err(FabricError::Conflict(_))
        ));
        assert!(matches!(
            DeclaredFabric::from_text("0x1:1\nnot a port\n"),
            Err(FabricError::Entry(_))
        ));
        let too_many = vec!["0x1:1"; MAX_FABRIC_ENTRIES + 1];
        assert_eq!(DeclaredFabric::parse(&too_many), Err(FabricError::TooLarge));
    }
}
