//! Which ports and MAC addresses a slice can hold at all.
//!
//! Every port and MAC address that parses is a valid name, and a slice may hold any of
//! them as far as the contract goes. But some can never match a frame: the controller
//! learns a host by the source address of what it sends, which is never a group address,
//! and a switch sends frames from physical ports, never from the reserved numbers
//! OpenFlow gives its logical ones. A binding of such a name would be stored, listed and
//! do nothing, so writes that add one are refused, naming the reason. Deleting one stays
//! possible, so that a store written before this rule can be cleaned.

use crate::{MacAddress, PortId, Slice, Write};

/// The highest number OpenFlow 1.3 gives a physical port (`OFPP_MAX`); the numbers above
/// it are unassigned or name the reserved ports (`OFPP_IN_PORT` .. `OFPP_ANY`).
pub const MAX_SWITCH_PORT: u32 = 0xffff_ff00;

/// A port or MAC address that no frame can ever match, with the reason. Its text is the
/// message a client sees (HTTP 400, the tool's stderr).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BindingError {
    /// A port number that no switch gives a physical port.
    #[error("port {port} cannot be bound to a slice: {reason}")]
    Port {
        /// The port as named.
        port: PortId,
        /// What makes it unusable.
        reason: &'static str,
    },
    /// An address that no host sends from.
    #[error("MAC address {mac} cannot be bound to a slice: {reason}")]
    Mac {
        /// The address as named.
        mac: MacAddress,
        /// What makes it unusable.
        reason: &'static str,
    },
}

impl PortId {
    /// `Ok` when a switch can have a physical port of this number.
    pub fn check_bindable(&self) -> Result<(), BindingError> {
        let reason = match self.port_no {
            0 => "port number 0 is no switch port (OpenFlow numbers ports from 1)",
            n if n > MAX_SWITCH_PORT => {
                "port numbers above 4294967040 (0xffffff00) are OpenFlow's reserved ports \
                 (ANY, CONTROLLER, FLOOD, ...), never a switch's physical port"
            }
            _ => return Ok(()),
        };
        Err(BindingError::Port {
            port: *self,
            reason,
        })
    }
}

impl MacAddress {
    /// `Ok` when a host can send frames from this address.
    pub fn check_bindable(&self) -> Result<(), BindingError> {
        let octets = self.octets();
        let reason = if octets == [0xff; 6] {
            "the broadcast address is no host's source address"
        } else if octets[0] & 0x01 != 0 {
            // The group bit: IPv4 and IPv6 multicast (01:00:5e, 33:33) and every other.
            "a multicast address (the low bit of its first octet set) is no host's source address"
        } else if octets == [0; 6] {
            "00:00:00:00:00:00 is no host's address"
        } else {
            return Ok(());
        };
        Err(BindingError::Mac { mac: *self, reason })
    }
}

impl Write {
    /// `Ok` unless the write would add a port or MAC address that can never match
    /// ([`PortId::check_bindable`], [`MacAddress::check_bindable`]), in a declared state
    /// too (which [`crate::Plan::between`] also checks). Deletes always pass.
    pub fn check_bindings(&self) -> Result<(), BindingError> {
        match self {
            Write::AddPort(_, port) => port.check_bindable(),
            Write::AddMac(_, port, mac) => {
                port.check_bindable()?;
                mac.check_bindable()
            }
            Write::Apply(declared) => check_declared(declared),
            Write::CreateSlice(_)
            | Write::DeleteSlice(_)
            | Write::DeletePort(..)
            | Write::DeleteMac(..) => Ok(()),
        }
    }
}

/// `Ok` unless a declared state holds a port or MAC address that can never match.
pub(crate) fn check_declared(declared: &[Slice]) -> Result<(), BindingError> {
    declared.iter().try_for_each(|slice| {
        slice.ports.iter().try_for_each(|port| {
            port.id.check_bindable()?;
            port.macs.iter().try_for_each(MacAddress::check_bindable)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SliceName;

    fn mac(text: &str) -> MacAddress {
        text.parse().unwrap()
    }

    #[test]
    fn group_and_zero_addresses_are_refused_with_their_reason() {
        for (text, says) in [
            ("ff:ff:ff:ff:ff:ff", "broadcast"),
            ("01:00:5e:00:00:01", "multicast"),
            ("33:33:00:00:00:01", "multicast"),
            ("03:00:00:00:00:00", "multicast"),
            ("00:00:00:00:00:00", "no host's address"),
        ] {
            let err = mac(text).check_bindable().unwrap_err();
            assert!(err.to_string().contains(says), "{text}: {err}");
            assert!(err.to_string().starts_with(&format!("MAC address {text} ")));
        }
        for text in [
            "00:00:00:00:00:01",
            "02:00:00:00:00:00",
            "fe:ff:ff:ff:ff:ff",
        ] {
            assert_eq!(mac(text).check_bindable(), Ok(()), "{text}");
        }
    }

    #[test]
    fn port_zero_and_the_reserved_numbers_are_refused() {
        for port_no in [0, MAX_SWITCH_PORT + 1, 0xffff_fffc, u32::MAX] {
            let err = PortId::new(1, port_no).check_bindable().unwrap_err();
            assert!(matches!(err, BindingError::Port { .. }), "{port_no}");
        }
        for port_no in [1, 65535, MAX_SWITCH_PORT] {
            assert_eq!(PortId::new(1, port_no).check_bindable(), Ok(()));
        }
    }

    #[test]
    fn only_additions_are_checked() {
        let slice: SliceName = "s".parse().unwrap();
        let bad_port = PortId::new(1, 0);
        let good_port = PortId::new(1, 1);
        let bad_mac = mac("ff:ff:ff:ff:ff:ff");
        assert!(Write::AddPort(slice.clone(), bad_port)
            .check_bindings()
            .is_err());
        assert!(Write::AddMac(slice.clone(), good_port, bad_mac)
            .check_bindings()
            .is_err());
        assert!(
            Write::AddMac(slice.clone(), bad_port, mac("00:00:00:00:00:01"))
                .check_bindings()
                .is_err()
        );
        assert!(Write::DeletePort(slice.clone(), bad_port)
            .check_bindings()
            .is_ok());
        assert!(Write::DeleteMac(slice, good_port, bad_mac)
            .check_bindings()
            .is_ok());
    }
}
