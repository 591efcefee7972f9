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
    pub dpid: u64,
    pub port_no: u32,
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
