//! Identifiers: slice names, port ids and MAC addresses, each parsed once at the edge and
//! always shown in one canonical form afterwards.

use std::fmt;
use std::str::FromStr;

#[cfg(feature = "serde")]
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::ParseError;

/// The longest slice name accepted, in characters (all of them ASCII).
pub const SLICE_NAME_MAX_LEN: usize = 64;

/// The name of a slice: 1 to 64 ASCII letters, digits, `-`, `_` or `.`, other than `.`
/// and `..`.
///
/// The alphabet keeps names safe as URL path segments and as lines of `slice list`
/// without any quoting. Names are case-sensitive.
///
/// ```
/// use slice_core::SliceName;
/// assert!("lab.42_a-b".parse::<SliceName>().is_ok());
/// assert!("".parse::<SliceName>().is_err());
/// assert!("has space".parse::<SliceName>().is_err());
/// assert!("..".parse::<SliceName>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SliceName(String);

impl SliceName {
    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name as an owned `String`, without copying it.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl FromStr for SliceName {
    type Err = ParseError;

    fn from_str(input: &str) -> Result<Self, ParseError> {
        let fail = |reason| ParseError::SliceName {
            input: input.to_owned(),
            reason,
        };
        if input.is_empty() {
            return Err(fail("must not be empty"));
        }
        if input.len() > SLICE_NAME_MAX_LEN {
            return Err(fail("must be at most 64 characters long"));
        }
        let allowed = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
        if !input.bytes().all(allowed) {
            return Err(fail("may contain only letters, digits, '-', '_' and '.'"));
        }
        // A URL path normalises these segments away, so such a slice could not be named
        // in `/slices/{slice}`.
        if input == "." || input == ".." {
            return Err(fail("must not be '.' or '..'"));
        }
        Ok(Self(input.to_owned()))
    }
}

impl TryFrom<String> for SliceName {
    type Error = ParseError;

    fn try_from(value: String) -> Result<Self, ParseError> {
        // Validate in place so that the common case keeps the caller's allocation.
        value.parse::<SliceName>()?;
        Ok(Self(value))
    }
}

impl fmt::Display for SliceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A switch port: the datapath id of the switch and the port number on it.
///
/// Its name is `0x<lowercase hex dpid>:<decimal port_no>`. Parsing accepts either case of
/// the hex digits and the prefix, and leading zeros in both numbers, so `0X00AB:01` names
/// the same port as `0xab:1`.
///
/// ```
/// use slice_core::PortId;
/// let port: PortId = "0xAB:1".parse()?;
/// assert_eq!(port, PortId::new(0xab, 1));
/// assert_eq!(port.to_string(), "0xab:1");
/// # Ok::<(), slice_core::ParseError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PortId {
    /// The datapath id of the switch, as OpenFlow reports it.
    pub dpid: u64,
    /// The port's number on that switch.
    pub port_no: u32,
}

impl PortId {
    /// The port numbered `port_no` on the switch whose datapath id is `dpid`.
    pub const fn new(dpid: u64, port_no: u32) -> Self {
        Self { dpid, port_no }
    }
}

impl FromStr for PortId {
    type Err = ParseError;

    fn from_str(input: &str) -> Result<Self, ParseError> {
        let fail = |reason| ParseError::PortName {
            input: input.to_owned(),
            reason,
        };
        let expected = "expected 0x<hex dpid>:<decimal port number>";
        let (dpid, port_no) = input.split_once(':').ok_or_else(|| fail(expected))?;
        let hex = dpid
            .strip_prefix("0x")
            .or_else(|| dpid.strip_prefix("0X"))
            .ok_or_else(|| match meant_without_prefix(dpid, port_no) {
                Some(suggestion) => ParseError::PortNameWithoutPrefix {
                    input: input.to_owned(),
                    suggestion,
                },
                None => fail(expected),
            })?;
        // from_str_radix would also take a sign, which is not part of the form.
        if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(fail("the datapath id must be hexadecimal digits after 0x"));
        }
        if port_no.is_empty() || !port_no.bytes().all(|b| b.is_ascii_digit()) {
            return Err(fail("the port number must be decimal digits"));
        }
        let dpid = u64::from_str_radix(hex, 16)
            .map_err(|_| fail("the datapath id does not fit in 64 bits"))?;
        let port_no = port_no
            .parse::<u32>()
            .map_err(|_| fail("the port number does not fit in 32 bits"))?;
        Ok(Self { dpid, port_no })
    }
}

/// The port names `<dpid>:<port_no>` likely meant when it lacks the `0x`: the dpid read as
/// hexadecimal (how Open vSwitch prints it), and when it is all decimal digits that read
/// differently, also read as decimal (how Mininet numbers its switches, s10 being 0xa).
fn meant_without_prefix(dpid: &str, port_no: &str) -> Option<String> {
    let port_no = port_no
        .parse::<u32>()
        .ok()
        .filter(|_| port_no.bytes().all(|b| b.is_ascii_digit()))?;
    if dpid.is_empty() || !dpid.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let as_hex = PortId::new(u64::from_str_radix(dpid, 16).ok()?, port_no);
    let as_decimal = dpid
        .parse::<u64>()
        .ok()
        .map(|dpid| PortId::new(dpid, port_no))
        .filter(|port| *port != as_hex);
    Some(match as_decimal {
        Some(decimal) => format!("{as_hex} (hexadecimal {dpid}) or {decimal} (decimal {dpid})"),
        None => as_hex.to_string(),
    })
}

impl fmt::Display for PortId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}:{}", self.dpid, self.port_no)
    }
}

/// A 48-bit Ethernet address, shown as six lowercase two-digit groups joined by colons.
///
/// ```
/// use slice_core::MacAddress;
/// let mac: MacAddress = "AA:bb:CC:00:11:22".parse()?;
/// assert_eq!(mac.octets(), [0xaa, 0xbb, 0xcc, 0x00, 0x11, 0x22]);
/// assert_eq!(mac.to_string(), "aa:bb:cc:00:11:22");
/// # Ok::<(), slice_core::ParseError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MacAddress([u8; 6]);

impl MacAddress {
    /// The address made of these six octets, in transmission order.
    pub const fn new(octets: [u8; 6]) -> Self {
        Self(octets)
    }

    /// The six octets, in transmission order.
    pub const fn octets(&self) -> [u8; 6] {
        self.0
    }
}

impl From<[u8; 6]> for MacAddress {
    fn from(octets: [u8; 6]) -> Self {
        Self(octets)
    }
}

impl FromStr for MacAddress {
    type Err = ParseError;

    fn from_str(input: &str) -> Result<Self, ParseError> {
        let fail = || ParseError::MacAddress {
            input: input.to_owned(),
            reason: "expected six colon-separated pairs of hex digits",
        };
        let mut octets = [0u8; 6];
        let mut groups = input.split(':');
        for octet in &mut octets {
            let group = groups.next().ok_or_else(fail)?;
            if group.len() != 2 || !group.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(fail());
            }
            *octet = u8::from_str_radix(group, 16).map_err(|_| fail())?;
        }
        if groups.next().is_some() {
            return Err(fail());
        }
        Ok(Self(octets))
    }
}

impl MacAddress {
    /// The canonical text, `00:1b:21:3a:4f:5e`, built on the stack: every MAC address
    /// listed in a response passes through here, and one string is much cheaper to
    /// write (and to escape as JSON) than eleven formatted pieces.
    fn canonical(&self) -> [u8; 17] {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut text = [b':'; 17];
        for (i, octet) in self.0.iter().enumerate() {
            text[3 * i] = HEX[usize::from(octet >> 4)];
            text[3 * i + 1] = HEX[usize::from(octet & 0xf)];
        }
        text
    }
}

impl fmt::Display for MacAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.canonical();
        // Only ASCII hex digits and colons are written above.
        f.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?)
    }
}

/// All three identifiers travel as their canonical strings in JSON.
#[cfg(feature = "serde")]
macro_rules! serde_as_string {
    ($ty:ty) => {
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

/// As its canonical string, written in one piece (see `MacAddress::canonical`).
#[cfg(feature = "serde")]
impl Serialize for MacAddress {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let text = self.canonical();
        match std::str::from_utf8(&text) {
            Ok(text) => serializer.serialize_str(text),
            Err(_) => serializer.collect_str(self),
        }
    }
}

#[cfg(feature = "serde")]
impl<'de> Deserialize<'de> for MacAddress {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(feature = "serde")]
serde_as_string!(SliceName);
#[cfg(feature = "serde")]
serde_as_string!(PortId);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_names_follow_the_alphabet_and_length() {
        for ok in ["a", "A-b_c.d", "0", "...", ".a", &"x".repeat(64)] {
            assert_eq!(ok.parse::<SliceName>().unwrap().as_str(), ok);
        }
        for bad in [
            "",
            &"x".repeat(65),
            "a b",
            "a/b",
            "é",
            "a:b",
            "a\n",
            ".",
            "..",
        ] {
            assert!(bad.parse::<SliceName>().is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn slice_name_error_says_why() {
        let err = "a b".parse::<SliceName>().unwrap_err().to_string();
        assert_eq!(
            err,
            "invalid slice name \"a b\": may contain only letters, digits, '-', '_' and '.'"
        );
    }

    #[test]
    fn port_ids_parse_leniently_and_print_canonically() {
        let cases = [
            ("0x1:1", 1, 1),
            ("0xAB:1", 0xab, 1),
            ("0X00ab:007", 0xab, 7),
            ("0xffffffffffffffff:4294967295", u64::MAX, u32::MAX),
            ("0x0:0", 0, 0),
        ];
        for (text, dpid, port_no) in cases {
            let port: PortId = text.parse().unwrap();
            assert_eq!(port, PortId::new(dpid, port_no), "{text}");
        }
        assert_eq!(PortId::new(0xAB, 1).to_string(), "0xab:1");
        assert_eq!(PortId::new(0, 0).to_string(), "0x0:0");
        assert_eq!(
            PortId::new(u64::MAX, u32::MAX).to_string(),
            "0xffffffffffffffff:4294967295"
        );
    }

    #[test]
    fn malformed_port_ids_are_rejected() {
        for bad in [
            "",
            "1:1",
            "0x:1",
            "0x1:",
            "0x1",
            "0xg:1",
            "0x+1:1",
            "0x1:+1",
            "0x1:-1",
            "0x10000000000000000:1",
            "0x1:4294967296",
            "0x1:1:1",
            " 0x1:1",
        ] {
            assert!(bad.parse::<PortId>().is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn a_port_without_0x_suggests_what_it_meant() {
        let said = |text: &str| text.parse::<PortId>().unwrap_err().to_string();
        assert!(
            said("1:1").ends_with("did you mean 0x1:1?"),
            "{}",
            said("1:1")
        );
        assert!(
            said("10:2").ends_with("did you mean 0x10:2 (hexadecimal 10) or 0xa:2 (decimal 10)?"),
            "{}",
            said("10:2")
        );
        assert!(said("ab:3").ends_with("did you mean 0xab:3?"));
        for unsuggested in ["x:1", "1:x", "1:+1", ":1", "1:99999999999"] {
            assert!(!said(unsuggested).contains("did you mean"), "{unsuggested}");
        }
    }

    #[test]
    fn mac_addresses_are_case_insensitive_and_print_lowercase() {
        let mac: MacAddress = "0A:bC:00:ff:10:9e".parse().unwrap();
        assert_eq!(mac.octets(), [0x0a, 0xbc, 0x00, 0xff, 0x10, 0x9e]);
        assert_eq!(mac.to_string(), "0a:bc:00:ff:10:9e");
        for octets in [[0; 6], [0xff; 6], [0x01, 0x23, 0x45, 0x67, 0x89, 0xab]] {
            assert_eq!(MacAddress::new(octets).to_string(), mac_text(octets));
        }
        for bad in [
            "",
            "00:11:22:33:44",
            "00:11:22:33:44:55:66",
            "0:11:22:33:44:55",
            "000:11:22:33:44:55",
            "00-11-22-33-44-55",
            "00:11:22:33:44:5g",
            "00:11:22:33:44:+5",
            "00:11:22:33:44:55:",
        ] {
            assert!(bad.parse::<MacAddress>().is_err(), "{bad:?} accepted");
        }
    }

    fn mac_text(octets: [u8; 6]) -> String {
        format!(
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            octets[0], octets[1], octets[2], octets[3], octets[4], octets[5]
        )
    }

    #[cfg(feature = "serde")]
    #[test]
    fn identifiers_travel_as_strings_in_json() {
        for octets in [[0; 6], [0xff; 6], [0x01, 0x23, 0x45, 0x67, 0x89, 0xab]] {
            let mac = MacAddress::new(octets);
            let json = serde_json::to_string(&mac).unwrap();
            assert_eq!(json, format!("\"{}\"", mac_text(octets)));
            assert_eq!(serde_json::from_str::<MacAddress>(&json).unwrap(), mac);
        }
        let port: PortId = serde_json::from_str("\"0xAB:2\"").unwrap();
        assert_eq!(serde_json::to_string(&port).unwrap(), "\"0xab:2\"");
        let mac: MacAddress = serde_json::from_str("\"AA:BB:CC:DD:EE:FF\"").unwrap();
        assert_eq!(
            serde_json::to_string(&mac).unwrap(),
            "\"aa:bb:cc:dd:ee:ff\""
        );
        assert!(serde_json::from_str::<SliceName>("\"a b\"").is_err());
    }
}
