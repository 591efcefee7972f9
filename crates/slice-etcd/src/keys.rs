//! Where each record lives in etcd, under the store's prefix.
//!
//! ```text
//! s/<slice>                          a slice; its create revision orders the slice list
//! p/<slice>/<dpid hex>-<port no>     a port of a slice; create revision = insertion order
//! m/<slice>/<dpid hex>-<port no>/<mac hex>
//!                                    a MAC address of a port; likewise
//! r/<session id hex>                 a revoked session; the value is its expiry (decimal)
//! not_before                         sessions issued before this time are refused
//! fabric                             the fabric the operator declared, one entry a line
//!                                    (`DeclaredFabric::to_text`); absent or empty: none
//! master                             the elected master: its member id, on its lease;
//!                                    the key's create revision is the generation
//! members/<member id>                a running instance (JSON), on its lease
//! session_key                        the login sessions' key, shared by every instance
//! ```
//!
//! The last three are the cluster's, not the store's: the copy skips them.
//!
//! Values of slice, port and MAC keys are empty: the key is the record, and etcd's
//! `create_revision` (global, only growing) is its place in the order, so a re-created
//! slice lists last and no counter has to be kept by hand. A slice name is letters, digits,
//! `-`, `_` and `.` only (see `SliceName`), so `/` can never occur in one and every slice's
//! keys are exactly those under `p/<slice>/` and `m/<slice>/`.

use std::fmt::Write as _;

use slice_core::{MacAddress, PortId, SliceName};

/// One key under the prefix, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Key {
    Slice(SliceName),
    Port(SliceName, PortId),
    Mac(SliceName, PortId, MacAddress),
    Revoked(Vec<u8>),
    NotBefore,
    /// The declared fabric (`fabric`).
    Fabric,
    /// One of the cluster's records (`master`, `members/...`, `session_key`).
    Cluster,
}

/// The prefix of every key of one store, and the encoding of keys under it.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    prefix: String,
}

impl Layout {
    /// `prefix` gets a trailing `/` when it has none, so that `/sliced` and `/sliced2`
    /// cannot read each other's keys.
    pub(crate) fn new(prefix: &str) -> Self {
        let mut prefix = prefix.to_owned();
        if !prefix.ends_with('/') {
            prefix.push('/');
        }
        Self { prefix }
    }

    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    pub(crate) fn slice(&self, slice: &SliceName) -> String {
        format!("{}s/{slice}", self.prefix)
    }

    pub(crate) fn ports_of(&self, slice: &SliceName) -> String {
        format!("{}p/{slice}/", self.prefix)
    }

    pub(crate) fn port(&self, slice: &SliceName, port: PortId) -> String {
        format!("{}{}", self.ports_of(slice), port_part(port))
    }

    pub(crate) fn macs_of_slice(&self, slice: &SliceName) -> String {
        format!("{}m/{slice}/", self.prefix)
    }

    pub(crate) fn macs_of_port(&self, slice: &SliceName, port: PortId) -> String {
        format!("{}{}/", self.macs_of_slice(slice), port_part(port))
    }

    pub(crate) fn mac(&self, slice: &SliceName, port: PortId, mac: MacAddress) -> String {
        let mut key = self.macs_of_port(slice, port);
        for octet in mac.octets() {
            // Writing to a String cannot fail.
            let _ = write!(key, "{octet:02x}");
        }
        key
    }

    /// The prefixes of every slice, port and MAC address record.
    pub(crate) fn slice_records(&self) -> [String; 3] {
        ["s/", "p/", "m/"].map(|kind| format!("{}{kind}", self.prefix))
    }

    pub(crate) fn revoked_sessions(&self) -> String {
        format!("{}r/", self.prefix)
    }

    pub(crate) fn revoked(&self, id: &[u8]) -> String {
        let mut key = self.revoked_sessions();
        for byte in id {
            let _ = write!(key, "{byte:02x}");
        }
        key
    }

    pub(crate) fn not_before(&self) -> String {
        format!("{}not_before", self.prefix)
    }

    /// The one key of the declared fabric: a declaration is replaced whole, so that a
    /// reader never sees half of one and a write is a single put.
    pub(crate) fn fabric(&self) -> String {
        format!("{}fabric", self.prefix)
    }

    pub(crate) fn master(&self) -> String {
        format!("{}master", self.prefix)
    }

    pub(crate) fn members(&self) -> String {
        format!("{}members/", self.prefix)
    }

    pub(crate) fn member(&self, id: &str) -> String {
        format!("{}{id}", self.members())
    }

    pub(crate) fn session_key(&self) -> String {
        format!("{}session_key", self.prefix)
    }

    /// Decodes a key of this store; `None` for anything else found under the prefix
    /// (which the store ignores, with a warning, rather than guess at). A record is only
    /// its one canonical spelling: `p/a/01-1` or a MAC address in upper-case hex would
    /// name the record `p/a/1-1` names, yet no write of sliced addresses that key, so a
    /// delete would leave it behind to come back.
    pub(crate) fn decode(&self, key: &[u8]) -> Option<Key> {
        let text = std::str::from_utf8(key).ok()?;
        let decoded = self.parse(text)?;
        match self.encode(&decoded) {
            Some(canonical) if canonical != text => None,
            _ => Some(decoded),
        }
    }

    /// The key sliced writes for a record; `None` for the keys of fixed or free form.
    pub(crate) fn encode(&self, key: &Key) -> Option<String> {
        match key {
            Key::Slice(slice) => Some(self.slice(slice)),
            Key::Port(slice, port) => Some(self.port(slice, *port)),
            Key::Mac(slice, port, mac) => Some(self.mac(slice, *port, *mac)),
            Key::Revoked(id) => Some(self.revoked(id)),
            Key::NotBefore | Key::Fabric | Key::Cluster => None,
        }
    }

    fn parse(&self, key: &str) -> Option<Key> {
        let key = key.strip_prefix(&self.prefix)?;
        if key == "not_before" {
            return Some(Key::NotBefore);
        }
        if key == "fabric" {
            return Some(Key::Fabric);
        }
        if key == "master" || key == "session_key" || key.starts_with("members/") {
            return Some(Key::Cluster);
        }
        let (kind, rest) = key.split_once('/')?;
        match kind {
            "s" => Some(Key::Slice(rest.parse().ok()?)),
            "p" => {
                let (slice, port) = rest.split_once('/')?;
                Some(Key::Port(slice.parse().ok()?, parse_port(port)?))
            }
            "m" => {
                let (slice, rest) = rest.split_once('/')?;
                let (port, mac) = rest.split_once('/')?;
                Some(Key::Mac(
                    slice.parse().ok()?,
                    parse_port(port)?,
                    parse_mac(mac)?,
                ))
            }
            "r" => Some(Key::Revoked(parse_hex(rest)?)),
            _ => None,
        }
    }
}

fn port_part(port: PortId) -> String {
    format!("{:x}-{}", port.dpid, port.port_no)
}

fn parse_port(text: &str) -> Option<PortId> {
    let (dpid, port_no) = text.split_once('-')?;
    // No sign, no space; the spelling itself is checked by `Layout::decode`.
    let digits = |s: &str, radix| !s.is_empty() && s.chars().all(|c| c.is_digit(radix));
    if !digits(dpid, 16) || !digits(port_no, 10) {
        return None;
    }
    Some(PortId::new(
        u64::from_str_radix(dpid, 16).ok()?,
        port_no.parse().ok()?,
    ))
}

fn parse_mac(text: &str) -> Option<MacAddress> {
    let octets: [u8; 6] = parse_hex(text)?.try_into().ok()?;
    Some(MacAddress::new(octets))
}

fn parse_hex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&text[at..at + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_decodes_to_what_was_encoded() {
        let layout = Layout::new("/sliced");
        let slice: SliceName = "a.b-c_d".parse().unwrap();
        let port = PortId::new(0xab, 7);
        let mac = MacAddress::new([0, 0x1b, 0x21, 0x3a, 0x4f, 0xc]);
        let cases = [
            (layout.slice(&slice), Key::Slice(slice.clone())),
            (layout.port(&slice, port), Key::Port(slice.clone(), port)),
            (
                layout.mac(&slice, port, mac),
                Key::Mac(slice.clone(), port, mac),
            ),
            (
                layout.revoked(b"\x00\xffid"),
                Key::Revoked(b"\x00\xffid".to_vec()),
            ),
            (layout.not_before(), Key::NotBefore),
            (layout.fabric(), Key::Fabric),
            (layout.master(), Key::Cluster),
            (layout.member("host:6653"), Key::Cluster),
            (layout.session_key(), Key::Cluster),
        ];
        for (key, decoded) in cases {
            assert!(key.starts_with("/sliced/"), "{key}");
            assert_eq!(layout.decode(key.as_bytes()), Some(decoded), "{key}");
        }
    }

    #[test]
    fn foreign_keys_decode_to_nothing() {
        let layout = Layout::new("/sliced/");
        for key in [
            "/other/s/a",
            "/sliced/x/a",
            "/sliced/s/bad name",
            "/sliced/p/a/zz-1",
            "/sliced/p/a/1-",
            "/sliced/m/a/1-1/0011",
            "/sliced/r/abc",
            // Another spelling of a record sliced writes otherwise.
            "/sliced/p/a/01-1",
            "/sliced/p/a/1-01",
            "/sliced/p/a/AB-1",
            "/sliced/p/a/1-+1",
            "/sliced/m/a/1-1/00000000000A",
            "/sliced/m/a/01-1/00000000000a",
            "/sliced/r/AB",
            // Only the fixed key itself.
            "/sliced/fabric/",
            "/sliced/fabric/x",
            "/sliced/fabrics",
        ] {
            assert_eq!(layout.decode(key.as_bytes()), None, "{key}");
        }
    }
}
