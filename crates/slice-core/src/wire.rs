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
    /// The slice's name.
    pub name: SliceName,
}

/// `{"dpid": ..., "port_no": ...}`: the body of POST and DELETE `/slices/<s>/ports`.
///
/// Each number must be written as plain decimal digits: no sign, fraction or exponent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub struct PortRequest {
    /// The switch's datapath id.
    #[serde(deserialize_with = "dpid")]
    pub dpid: u64,
    /// The port's number on the switch.
    #[serde(deserialize_with = "port_no")]
    pub port_no: u32,
}

fn dpid<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    digits_only(deserializer, "dpid")
}

fn port_no<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
    digits_only(deserializer, "port_no")
}

/// Reads a number written as a plain run of decimal digits: `0`, `7311`, never `-0`,
/// `1.0`, `1e0` or `"1"`, and refuses a value out of `T`'s range; every refusal names
/// `field`.
///
/// A hardware identifier must arrive exactly as written. serde_json hands anything with a
/// sign, fraction or exponent over as a double, which no longer tells `1e-400` or `-0`
/// from `0`, nor a dpid above 2^53 from its neighbour; so none is taken, though JSON
/// Schema would count `1.0` as an integer.
fn digits_only<'de, D, T>(deserializer: D, field: &'static str) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: TryFrom<u64> + Bounded,
{
    struct Digits<T> {
        field: &'static str,
        target: std::marker::PhantomData<T>,
    }

    impl<T: TryFrom<u64> + Bounded> Digits<T> {
        fn not_plain<E: serde::de::Error>(&self) -> E {
            E::custom(format_args!(
                "{} must be written in decimal digits only, without a sign, fraction or \
                 exponent",
                self.field
            ))
        }

        /// `value` is named when it is what the request wrote.
        fn out_of_range<E: serde::de::Error>(&self, value: Option<u64>) -> E {
            let written = value.map(|value| format!(" {value}")).unwrap_or_default();
            E::custom(format_args!(
                "{}{written} is out of range: it must be from 0 to {}",
                self.field,
                T::MAX
            ))
        }
    }

    impl<T: TryFrom<u64> + Bounded> serde::de::Visitor<'_> for Digits<T> {
        type Value = T;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{} as decimal digits from 0 to {}", self.field, T::MAX)
        }

        /// A JSON number token of digits alone.
        fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<T, E> {
            T::try_from(value).map_err(|_| self.out_of_range(Some(value)))
        }

        /// serde_json calls this for a negative token only.
        fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<T, E> {
            match u64::try_from(value) {
                Ok(unsigned) => self.visit_u64(unsigned),
                Err(_) => Err(self.not_plain()),
            }
        }

        /// serde_json calls this for a token with a fraction or an exponent, for `-0`, and
        /// for digits beyond u64; only the last is told apart, as out of range.
        fn visit_f64<E: serde::de::Error>(self, value: f64) -> Result<T, E> {
            // 2^64 as a double: the smallest double that digits beyond u64 round to.
            const BEYOND_U64: f64 = 18_446_744_073_709_551_616.0;
            if value >= BEYOND_U64 {
                return Err(self.out_of_range(None));
            }
            Err(self.not_plain())
        }

        /// A form's value, which is text (see slice-http's body reader): `u64::from_str`
        /// would also take a leading `+`, so the digits are checked first.
        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<T, E> {
            if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
                return Err(self.not_plain());
            }
            let value: u64 = text.parse().map_err(|_| self.out_of_range(None))?;
            self.visit_u64(value)
        }
    }

    // JSON calls the visit_* its token's form calls for and refuses a string by itself;
    // a form's text arrives at visit_str.
    deserializer.deserialize_u64(Digits {
        field,
        target: std::marker::PhantomData,
    })
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
    /// The port in its text form, `0x<dpid>:<port_no>`.
    pub name: PortId,
    /// The switch's datapath id.
    pub dpid: u64,
    /// The port's number on the switch.
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
    /// The MAC address.
    pub name: MacAddress,
}

/// The form of `POST /auth/developer/callback`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct Credentials {
    /// The name to log in as; the daemon trims it and takes 1 to 200 characters.
    pub name: String,
    /// The e-mail address to log in with; the daemon checks its form.
    pub email: String,
}

/// `{"error": "<message>"}`: the body of every error response, exactly as the
/// specification fixes it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct ErrorBody {
    /// What went wrong; for a slice-contract error, the specification's message.
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

    /// What serde_json hands a visitor that asks for a u64, token by token: the rule of
    /// [`digits_only`] rests on it.
    #[test]
    fn serde_json_hands_over_a_token_with_a_sign_fraction_or_exponent_as_a_double() {
        #[derive(Debug, PartialEq)]
        enum Seen {
            Unsigned(u64),
            Signed(i64),
            /// The bits, so that -0.0 differs from 0.0.
            Double(u64),
        }
        struct Record;
        impl serde::de::Visitor<'_> for Record {
            type Value = Seen;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a number")
            }
            fn visit_u64<E>(self, value: u64) -> Result<Seen, E> {
                Ok(Seen::Unsigned(value))
            }
            fn visit_i64<E>(self, value: i64) -> Result<Seen, E> {
                Ok(Seen::Signed(value))
            }
            fn visit_f64<E>(self, value: f64) -> Result<Seen, E> {
                Ok(Seen::Double(value.to_bits()))
            }
        }
        let seen = |token: &str| {
            let mut reader = serde_json::Deserializer::from_str(token);
            serde::Deserializer::deserialize_u64(&mut reader, Record).unwrap()
        };
        let double = |value: f64| Seen::Double(value.to_bits());
        assert_eq!(seen("0"), Seen::Unsigned(0));
        assert_eq!(seen("18446744073709551615"), Seen::Unsigned(u64::MAX));
        assert_eq!(seen("-1"), Seen::Signed(-1));
        assert_eq!(seen("-0"), double(-0.0));
        assert_eq!(seen("1e0"), double(1.0));
        assert_eq!(seen("1.0"), double(1.0));
        assert_eq!(seen("1e-400"), double(0.0));
        assert_eq!(
            seen("18446744073709551616"),
            double(18_446_744_073_709_551_616.0)
        );
    }

    #[test]
    fn a_port_number_in_json_is_decimal_digits_only() {
        let read =
            |text: &str| serde_json::from_str::<PortRequest>(text).map_err(|e| e.to_string());
        assert_eq!(
            read(r#"{"dpid": 7311, "port_no": 0}"#),
            Ok(PortRequest {
                dpid: 7311,
                port_no: 0
            })
        );
        let max = r#"{"dpid": 18446744073709551615, "port_no": 4294967295}"#;
        assert_eq!(
            read(max),
            Ok(PortRequest {
                dpid: u64::MAX,
                port_no: u32::MAX
            })
        );
        let not_plain = [
            "-0", "1e0", "1.0", "1e-400", "-0.0", "0e0", "1E+0", "-1", "1.5", "2.00",
        ];
        for token in not_plain {
            for (field, body) in [
                ("dpid", format!(r#"{{"dpid": {token}, "port_no": 1}}"#)),
                ("port_no", format!(r#"{{"dpid": 1, "port_no": {token}}}"#)),
            ] {
                let err = read(&body).expect_err(&body);
                let expected = format!("{field} must be written in decimal digits only");
                assert!(err.starts_with(&expected), "{body}: {err}");
            }
        }
        for (body, expected) in [
            (
                r#"{"dpid": 18446744073709551616, "port_no": 1}"#,
                "dpid is out of range: it must be from 0 to 18446744073709551615",
            ),
            (
                r#"{"dpid": 1e20, "port_no": 1}"#,
                "dpid is out of range: it must be from 0 to 18446744073709551615",
            ),
            (
                r#"{"dpid": 1, "port_no": 4294967296}"#,
                "port_no 4294967296 is out of range: it must be from 0 to 4294967295",
            ),
            (
                r#"{"dpid": "1", "port_no": 1}"#,
                r#"invalid type: string "1", expected dpid as decimal digits"#,
            ),
            (
                r#"{"dpid": 1, "port_no": null}"#,
                "invalid type: null, expected port_no as decimal digits",
            ),
        ] {
            let err = read(body).expect_err(body);
            assert!(err.starts_with(expected), "{body}: {err}");
        }
    }

    /// A form's values reach the body type as text (slice-http reads them so).
    #[test]
    fn a_port_number_in_a_form_is_decimal_digits_only() {
        let read = |dpid: &str, port_no: &str| {
            let fields = [("dpid", dpid.to_owned()), ("port_no", port_no.to_owned())];
            let form = serde::de::value::MapDeserializer::<_, serde::de::value::Error>::new(
                fields.into_iter(),
            );
            PortRequest::deserialize(form).map_err(|e| e.to_string())
        };
        assert_eq!(
            read("007", "4294967295"),
            Ok(PortRequest {
                dpid: 7,
                port_no: u32::MAX
            })
        );
        for token in ["+1", "-0", "1.0", "1e0", "", " 1", "1 ", "0x1", "١"] {
            let err = read(token, "1").expect_err(token);
            assert!(
                err.starts_with("dpid must be written in decimal digits only"),
                "{token}: {err}"
            );
            let err = read("1", token).expect_err(token);
            assert!(
                err.starts_with("port_no must be written in decimal digits only"),
                "{token}: {err}"
            );
        }
        assert_eq!(
            read("18446744073709551616", "1"),
            Err("dpid is out of range: it must be from 0 to 18446744073709551615".into())
        );
        assert_eq!(
            read("1", "4294967296"),
            Err("port_no 4294967296 is out of range: it must be from 0 to 4294967295".into())
        );
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
    /// Every slice, in order.
    pub slices: Vec<DeclaredSlice>,
}

/// One slice of a [`Declaration`]; a missing `ports` means none.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DeclaredSlice {
    /// The slice's name.
    pub name: SliceName,
    /// The slice's ports, in order.
    #[serde(default)]
    pub ports: Vec<DeclaredPort>,
}

/// One port of a [`DeclaredSlice`]; a missing `mac_addresses` means none.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DeclaredPort {
    /// The port in its text form, `0x<dpid>:<port_no>`.
    pub name: PortId,
    /// The MAC addresses admitted behind the port, in order.
    #[serde(default)]
    pub mac_addresses: Vec<MacAddress>,
}

/// The body of `PUT /topology/fabric` and its answer: the cables (`0x1:10-0x2:10`) and
/// fabric ports (`0x1:10`) where links may form; empty ends the declaration. Entries
/// travel as text and are checked by [`crate::DeclaredFabric::parse`], whose message
/// names a bad one.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FabricBody {
    /// The entries; the answer lists them cables first, each once.
    #[serde(deserialize_with = "crate::fabric::deserialize_bounded_entries")]
    pub declared: Vec<String>,
}

/// The answer of `POST /slices:apply`: the plan, and whether it was carried out (not on a
/// dry run, nor when it is empty).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct Applied {
    /// Whether the plan was carried out.
    pub applied: bool,
    /// The steps from the state before to the declared one.
    pub plan: crate::Plan,
}

impl Declaration {
    /// The declaration of these slices, as `GET /slices:export` answers it.
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

    /// The declared slices as the model's tree, for [`crate::Plan::between`].
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
