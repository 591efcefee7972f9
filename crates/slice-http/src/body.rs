//! Request bodies: JSON as the spec says, or an HTML form with the same fields, as the
//! clients of the original service sent. The body types themselves are
//! [`slice_core::wire`]'s, shared with the `slice` tool.

use std::future::Future;
use std::pin::Pin;

use actix_web::dev::Payload;
use actix_web::http::header::CONTENT_TYPE;
use actix_web::web::{Bytes, BytesMut};
use actix_web::{web, FromRequest, HttpRequest};
use serde::de::value::MapDeserializer;
use serde::de::DeserializeOwned;

use crate::{ApiError, Settings, DEFAULT_REQUEST_TIMEOUT};

/// The largest body accepted. The biggest legitimate body is a 64-character slice name
/// in JSON; this leaves room for whitespace and unknown fields without inviting abuse.
pub const BODY_LIMIT: usize = 16 * 1024;

/// The most bytes the body of `POST /slices:apply` may have: a whole declared state.
pub(crate) const DECLARATION_LIMIT: usize = 8 * 1024 * 1024;

/// The most bytes the body of `PUT /topology/fabric` may have: [`MAX_FABRIC_ENTRIES`] of
/// the longest entries, each with its quotes, comma and room for indentation, plus
/// [`BODY_LIMIT`] for the rest; about 1.1 MiB, where [`DECLARATION_LIMIT`] would let a body
/// of empty strings grow eight times as far.
///
/// [`MAX_FABRIC_ENTRIES`]: slice_core::fabric::MAX_FABRIC_ENTRIES
pub(crate) const FABRIC_LIMIT: usize = slice_core::fabric::MAX_FABRIC_ENTRIES
    * (slice_core::fabric::LONGEST_FABRIC_ENTRY + 3 + 8)
    + BODY_LIMIT;

/// A request body decoded into `T` from JSON or `application/x-www-form-urlencoded`, of at
/// most `LIMIT` bytes.
pub(crate) struct Body<T, const LIMIT: usize = BODY_LIMIT>(pub T);

/// What a body type looks like, for the error that refuses a body of another shape: a
/// client sees what to send instead of only serde's complaint (`curl -d garbage` sends a
/// form, which then lacks every field).
pub trait BodyShape {
    /// The body as JSON, with placeholders: `{"name": "<slice name>"}`.
    const JSON: &'static str;
    /// The same as a form, or None where only JSON is taken.
    const FORM: Option<&'static str>;
}

impl BodyShape for slice_core::wire::SliceBody {
    const JSON: &'static str = r#"{"name": "<slice name>"}"#;
    const FORM: Option<&'static str> = Some("name=<slice name>");
}

impl BodyShape for slice_core::wire::PortRequest {
    const JSON: &'static str = r#"{"dpid": <integer>, "port_no": <integer>}"#;
    const FORM: Option<&'static str> = Some("dpid=<integer>&port_no=<integer>");
}

impl BodyShape for slice_core::wire::MacBody {
    const JSON: &'static str = r#"{"name": "<MAC address, 00:1b:21:3a:4f:0c>"}"#;
    const FORM: Option<&'static str> = Some("name=<MAC address>");
}

impl BodyShape for slice_core::wire::Credentials {
    const JSON: &'static str = r#"{"name": "<name>", "email": "<e-mail address>"}"#;
    const FORM: Option<&'static str> = Some("name=<name>&email=<e-mail address>");
}

impl BodyShape for slice_core::wire::Declaration {
    const JSON: &'static str = r#"{"slices": [{"name": "<slice name>", "ports": [{"name": "0x1:1", "mac_addresses": ["00:1b:21:3a:4f:0c"]}]}]}"#;
    const FORM: Option<&'static str> = None;
}

impl BodyShape for slice_core::wire::FabricBody {
    const JSON: &'static str = r#"{"declared": ["0x1:10-0x2:10", "0x3:1", ...]}"#;
    const FORM: Option<&'static str> = None;
}

/// Decodes `bytes` as the body of a request with this Content-Type from a script (not a
/// browser), as the handlers do once the body has arrived: everything but the I/O.
pub fn decode_body<T: DeserializeOwned + BodyShape>(
    content_type: Option<&str>,
    bytes: &[u8],
) -> Result<T, ApiError> {
    if bytes.len() > BODY_LIMIT {
        return Err(ApiError::PayloadTooLarge { limit: BODY_LIMIT });
    }
    BodyKind::of_content_type(content_type, false)?.decode(bytes)
}

impl<T: DeserializeOwned + BodyShape + 'static, const LIMIT: usize> FromRequest for Body<T, LIMIT> {
    type Error = ApiError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, ApiError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let kind = BodyKind::of(req);
        let timeout = req
            .app_data::<web::Data<Settings>>()
            .map_or(DEFAULT_REQUEST_TIMEOUT, |settings| settings.request_timeout);
        let mut payload = payload.take();
        Box::pin(async move {
            let kind = kind?;
            // actix's client_request_timeout covers the request head only: without this a
            // client that never sends its body holds the connection forever.
            let bytes = actix_web::rt::time::timeout(timeout, read_limited(&mut payload, LIMIT))
                .await
                .map_err(|_| ApiError::RequestTimeout {
                    seconds: timeout.as_secs(),
                })??;
            kind.decode(&bytes).map(Body)
        })
    }
}

enum BodyKind {
    Json,
    Form,
}

impl BodyKind {
    fn of(req: &HttpRequest) -> Result<Self, ApiError> {
        // A header that is not text is no media type we know: the error names it empty.
        let content_type = req
            .headers()
            .get(CONTENT_TYPE)
            .map(|value| value.to_str().unwrap_or_default());
        Self::of_content_type(content_type, crate::browser::from_browser(req))
    }

    fn of_content_type(content_type: Option<&str>, from_browser: bool) -> Result<Self, ApiError> {
        let Some(value) = content_type else {
            // A page can send an unlabelled body cross-site without a preflight; scripts
            // and the slice tool never send browser headers and keep the JSON default.
            if from_browser {
                return Err(ApiError::MissingContentType);
            }
            return Ok(Self::Json);
        };
        let essence = value.split(';').next().unwrap_or_default().trim();
        if essence.eq_ignore_ascii_case("application/json") || essence.ends_with("+json") {
            Ok(Self::Json)
        } else if essence.eq_ignore_ascii_case("application/x-www-form-urlencoded") {
            Ok(Self::Form)
        } else {
            Err(ApiError::UnsupportedMediaType(value.to_owned()))
        }
    }

    fn decode<T: DeserializeOwned + BodyShape>(self, bytes: &[u8]) -> Result<T, ApiError> {
        // `curl -d '{"name":"a"}'` labels JSON as a form; a form field cannot start with
        // `{`, so such a body is read as the JSON it is.
        let looks_like_json = bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
        let as_form = matches!(self, Self::Form) && !looks_like_json;
        let invalid = |err: &dyn std::fmt::Display| {
            let expected = match T::FORM {
                Some(form) if as_form => format!(
                    "read as a form (Content-Type: application/x-www-form-urlencoded, what \
                     curl -d sends unless told otherwise), expected {form}; or send JSON \
                     {} with Content-Type: application/json",
                    T::JSON
                ),
                _ => format!("expected {}", T::JSON),
            };
            ApiError::BadRequest(format!("invalid request body: {err}; {expected}"))
        };
        match self {
            Self::Form if !looks_like_json => {
                // A form's values are text and reach the body type as text: it checks a
                // number's digits itself (serde_urlencoded would read one with
                // u64::from_str, which also takes a `+`).
                let fields: Vec<(String, String)> =
                    serde_urlencoded::from_bytes(bytes).map_err(|err| invalid(&err))?;
                let form = MapDeserializer::<_, serde::de::value::Error>::new(fields.into_iter());
                T::deserialize(form).map_err(|err| invalid(&err))
            }
            _ => serde_json::from_slice(bytes).map_err(|err| invalid(&err)),
        }
    }
}

async fn read_limited(payload: &mut Payload, limit: usize) -> Result<Bytes, ApiError> {
    use futures_util::StreamExt;

    let mut body = BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|err| ApiError::BadRequest(format!("unreadable body: {err}")))?;
        if body.len() + chunk.len() > limit {
            return Err(ApiError::PayloadTooLarge { limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}
