//! The JSON bodies of the REST API, defined once for the daemon that sends them and the
//! `slice` tool that reads them, so that the two cannot drift apart.
//!
//! Identifiers travel in their canonical text form (see [`SliceName`], [`PortId`],
//! [`MacAddress`]), so a body that decodes holds only valid identifiers.
//!
//! ```
//! use slice_core::wire::{ErrorBody, PortBody};
//! use slice_core::{PortId, SliceError};
//!
//! let body = serde_json::to_string(&PortBody::from(PortId::new(0xab, 1)))?;
//! assert_eq!(body, r#"{"name":"0xab:1","dpid":171,"port_no":1}"#);
//!
//! let refusal: ErrorBody = serde_json::from_str(r#"{"error":"Port 0xab:1 not found"}"#)?;
//! assert_eq!(refusal.slice_error(404), Some(SliceError::PortNotFound(PortId::new(0xab, 1))));
//! # Ok::<(), serde_json::Error>(())
//! ```

use serde::{Deserialize, Serialize};

use crate::{MacAddress, PortId, SliceError, SliceName};

/// `{"name": ...}`: the body of POST and DELETE `/slices`, of a slice's GET, and each
/// element of `GET /slices`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct SliceBody {
    pub name: SliceName,
}

/// `{"dpid": ..., "port_no": ...}`: the body of POST and DELETE `/slices/<s>/ports`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub struct PortRequest {
    #[serde(deserialize_with = "whole_number")]
    pub dpid: u64,
    #[serde(deserialize_with = "whole_number")]
    pub port_no: u32,
}

/// Reads a whole number however JSON writes it: `1`, but also `1.0` or `1e3`, which
/// JSON (RFC 8259) and JSON Schema's `integer` treat as the same number, and which
/// clients that keep every number as a double send. A fraction, a sign or a value out of
/// `T`'s range is refused.
fn whole_number<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: TryFrom<u64> + Bounded,
{
    struct Whole<T>(std::marker::PhantomData<T>);

    impl<T: TryFrom<u64> + Bounded> serde::de::Visitor<'_> for Whole<T> {
        type Value = T;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "a whole number from 0 to {}", T::MAX)
        }

        fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<T, E> {
            T::try_from(value)
                .map_err(|_| E::invalid_value(serde::de::Unexpected::Unsigned(value), &self))
        }

        fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<T, E> {
            let unsigned = u64::try_from(value)
                .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(value), &self))?;
            self.visit_u64(unsigned)
        }

        fn visit_f64<E: serde::de::Error>(self, value: f64) -> Result<T, E> {
            // 2^64 as a double: every whole double below it is a u64, exactly.
            const LIMIT: f64 = 18_446_744_073_709_551_616.0;
            if value.fract() != 0.0 || !(0.0..LIMIT).contains(&value) {
                return Err(E::invalid_value(serde::de::Unexpected::Float(value), &self));
            }
            // The checks above make the conversion exact.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            self.visit_u64(value as u64)
        }
    }

    // JSON hands a number to whichever visit_* its form calls for; a form parses its text
    // as a u64.
    deserializer.deserialize_u64(Whole(std::marker::PhantomData))
}

/// The largest value of a number type, for messages.
trait Bounded {
    const MAX: u64;
}

impl Bounded for u64 {
    const MAX: u64 = u64::MAX;
}

impl Bounded for u32 {
    const MAX: u64 = u32::MAX as u64;
}

impl From<PortId> for PortRequest {
    fn from(port: PortId) -> Self {
        Self {
            dpid: port.dpid,
            port_no: port.port_no,
        }
    }
}

impl From<PortRequest> for PortId {
    fn from(port: PortRequest) -> Self {
        PortId::new(port.dpid, port.port_no)
    }
}

/// `{"name": "0x<dpid>:<port_no>", "dpid": ..., "port_no": ...}`: a port as the daemon
/// answers it; `name` is the form the port takes in a URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub struct PortBody {
    pub name: PortId,
    pub dpid: u64,
    pub port_no: u32,
}

impl From<PortId> for PortBody {
    fn from(port: PortId) -> Self {
        Self {
            name: port,
            dpid: port.dpid,
            port_no: port.port_no,
        }
    }
}

impl From<PortBody> for PortId {
    /// The numeric fields are what the specification defines; `name` only repeats them.
    fn from(port: PortBody) -> Self {
        PortId::new(port.dpid, port.port_no)
    }
}

/// `{"name": ...}`: the body of POST and DELETE `.../mac_addresses`, and of a MAC
/// address's GET.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub struct MacBody {
    pub name: MacAddress,
}

/// The form of `POST /auth/developer/callback`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct Credentials {
    pub name: String,
    pub email: String,
}

/// `{"error": "<message>"}`: the body of every error response, exactly as the
/// specification fixes it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct ErrorBody {
    pub error: String,
}

impl ErrorBody {
    /// The slice-contract error this answer reports, if its message is one of the
    /// specification's and `status` is the one the daemon sends with it; `None` for any
    /// other refusal, which a client shows with the daemon's own message.
    pub fn slice_error(&self, status: u16) -> Option<SliceError> {
        SliceError::from_message(&self.error).filter(|err| err.http_status() == status)
    }
}

impl From<&SliceError> for ErrorBody {
    fn from(err: &SliceError) -> Self {
        Self {
            error: err.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_have_the_fields_of_the_specification() {
        let slice: SliceName = "blue".parse().unwrap();
        let port = PortId::new(u64::MAX, 2);
        let mac = MacAddress::new([0xaa, 0xbb, 0, 0, 0, 1]);
        assert_eq!(json(&SliceBody { name: slice }), r#"{"name":"blue"}"#);
        assert_eq!(
            json(&PortRequest::from(port)),
            r#"{"dpid":18446744073709551615,"port_no":2}"#
        );
        assert_eq!(
            json(&PortBody::from(port)),
            r#"{"name":"0xffffffffffffffff:2","dpid":18446744073709551615,"port_no":2}"#
        );
        assert_eq!(
            json(&MacBody { name: mac }),
            r#"{"name":"aa:bb:00:00:00:01"}"#
        );
        assert_eq!(
            json(&ErrorBody::from(&SliceError::MacNotFound(mac))),
            r#"{"error":"MAC address aa:bb:00:00:00:01 not found"}"#
        );
    }

    #[test]
    fn a_contract_message_with_another_status_is_not_a_contract_error() {
        let body = ErrorBody {
            error: "Slice blue already exists".into(),
        };
        let blue = "blue".parse().unwrap();
        assert_eq!(body.slice_error(409), Some(SliceError::SliceExists(blue)));
        assert_eq!(body.slice_error(404), None);
        assert_eq!(body.slice_error(400), None);
    }

    #[test]
    fn a_port_number_may_be_written_as_any_json_number_that_is_whole() {
        let read =
            |text: &str| serde_json::from_str::<PortRequest>(text).map_err(|e| e.to_string());
        let expected = PortRequest {
            dpid: 7311,
            port_no: 193_737,
        };
        assert_eq!(read(r#"{"dpid": 7311, "port_no": 193737}"#), Ok(expected));
        assert_eq!(
            read(r#"{"dpid": 7311.0, "port_no": 1.93737e5}"#),
            Ok(expected)
        );
        let max = r#"{"dpid": 18446744073709551615, "port_no": 4294967295}"#;
        assert_eq!(
            read(max),
            Ok(PortRequest {
                dpid: u64::MAX,
                port_no: u32::MAX
            })
        );
        for bad in [
            r#"{"dpid": 1.5, "port_no": 1}"#,
            r#"{"dpid": -1, "port_no": 1}"#,
            r#"{"dpid": -0.0e0, "port_no": 4294967296}"#,
            r#"{"dpid": 1.8446744073709552e19, "port_no": 1}"#,
            r#"{"dpid": 18446744073709551616, "port_no": 1}"#,
            r#"{"dpid": "1", "port_no": 1}"#,
            r#"{"dpid": 1, "port_no": 4294967296.0}"#,
        ] {
            let err = read(bad).expect_err(bad);
            assert!(err.contains("a whole number from 0 to"), "{bad}: {err}");
        }
    }

    fn json<T: Serialize>(body: &T) -> String {
        serde_json::to_string(body).unwrap()
    }
}

/// The body of `POST /slices:apply` and the answer of `GET /slices:export`: every slice,
/// with its ports and their MAC addresses, in order.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Declaration {
    pub slices: Vec<DeclaredSlice>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DeclaredSlice {
    pub name: SliceName,
    #[serde(default)]
    pub ports: Vec<DeclaredPort>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DeclaredPort {
    pub name: PortId,
    #[serde(default)]
    pub mac_addresses: Vec<MacAddress>,
}

/// The answer of `POST /slices:apply`: the plan, and whether it was carried out (not on a
/// dry run, nor when it is empty).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct Applied {
    pub applied: bool,
    pub plan: crate::Plan,
}

impl Declaration {
    pub fn of(slices: &[crate::Slice]) -> Self {
        Self {
            slices: slices
                .iter()
                .map(|slice| DeclaredSlice {
                    name: slice.name.clone(),
                    ports: slice
                        .ports
                        .iter()
                        .map(|port| DeclaredPort {
                            name: port.id,
                            mac_addresses: port.macs.clone(),
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    pub fn into_slices(self) -> Vec<crate::Slice> {
        self.slices
            .into_iter()
            .map(|slice| crate::Slice {
                name: slice.name,
                ports: slice
                    .ports
                    .into_iter()
                    .map(|port| crate::Port {
                        id: port.name,
                        macs: port.mac_addresses,
                    })
                    .collect(),
            })
            .collect()
    }
}
