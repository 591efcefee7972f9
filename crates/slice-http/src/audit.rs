//! The audit trail: every write that reaches the store, and every login and logout, is
//! told once, as one JSON line under the log target [`AUDIT_LOG`] and as an `audit`
//! event on the event stream, with its time, requester, source, operation and result.
//!
//! Writes are told where they are carried out (`slices::write`), so a write is told
//! whichever route brought it (the slice API, its `/api/` twin, the local socket) and a
//! request the guard or the body check refused, which changes nothing, is not.

use actix_web::{web, HttpRequest};
use serde::Serialize;
use serde_json::{json, Value};
use slice_core::{Write, Written};

use crate::identity::{Requester, Via};
use crate::{ApiError, EventHub, Settings};

/// The log target of the audit trail (one line per write, at info level).
pub const AUDIT_LOG: &str = "sliced::audit";

/// What was done, in the trail's words, and to what.
pub(crate) struct Operation {
    name: &'static str,
    target: Value,
}

impl Operation {
    /// The operation a store write carries out.
    pub(crate) fn of(write: &Write) -> Self {
        let (name, target) = match write {
            Write::CreateSlice(slice) => ("create_slice", json!({ "slice": slice })),
            Write::DeleteSlice(slice) => ("delete_slice", json!({ "slice": slice })),
            Write::AddPort(slice, port) => ("add_port", json!({ "slice": slice, "port": port })),
            Write::DeletePort(slice, port) => {
                ("delete_port", json!({ "slice": slice, "port": port }))
            }
            Write::AddMac(slice, port, mac) => (
                "add_mac",
                json!({ "slice": slice, "port": port, "mac": mac }),
            ),
            Write::DeleteMac(slice, port, mac) => (
                "delete_mac",
                json!({ "slice": slice, "port": port, "mac": mac }),
            ),
            Write::Apply(declared) => (
                "apply",
                json!({
                    "slices": declared.len(),
                    "records": slice_core::plan::records(declared),
                }),
            ),
        };
        Self { name, target }
    }

    /// A declaration of the fabric with `entries` entries.
    pub(crate) fn declare_fabric(entries: usize) -> Self {
        Self {
            name: "declare_fabric",
            target: json!({ "entries": entries }),
        }
    }

    /// A login, by `method` (`developer`, `oidc`).
    pub(crate) fn login(method: &'static str) -> Self {
        Self {
            name: "login",
            target: json!({ "method": method }),
        }
    }

    pub(crate) fn logout() -> Self {
        Self {
            name: "logout",
            target: Value::Null,
        }
    }
}

/// One line of the trail.
#[derive(Serialize)]
struct Entry<'a> {
    /// RFC 3339, UTC.
    time: String,
    user: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    email: &'a str,
    via: &'static str,
    /// The peer's address and port, or `local` for the local socket.
    source: String,
    operation: &'static str,
    #[serde(skip_serializing_if = "Value::is_null")]
    target: Value,
    /// `ok`, or the error the requester was answered with.
    result: String,
    /// The status of a refused write's answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<u16>,
    #[serde(skip_serializing_if = "Value::is_null")]
    outcome: Value,
}

fn via_name(via: Via) -> &'static str {
    match via {
        Via::LocalSocket => "local_socket",
        Via::Session => "session",
        Via::Proxy => "proxy",
        Via::Anonymous => "anonymous",
    }
}

/// Tells the trail that `requester` did `operation` over `req` with `result`.
pub(crate) fn record<T>(
    req: &HttpRequest,
    requester: &Requester,
    operation: Operation,
    result: &Result<T, ApiError>,
    outcome: impl FnOnce(&T) -> Value,
) {
    let local = req.conn_data::<crate::LocalPeer>().is_some();
    let source = match (local, req.peer_addr()) {
        (true, _) => "local".to_owned(),
        (false, Some(peer)) => peer.to_string(),
        (false, None) => "unknown".to_owned(),
    };
    let (result_text, status, outcome) = match result {
        Ok(value) => ("ok".to_owned(), None, outcome(value)),
        Err(err) => (
            err.to_string(),
            Some(actix_web::ResponseError::status_code(err).as_u16()),
            Value::Null,
        ),
    };
    let entry = Entry {
        time: jiff::Timestamp::now().to_string(),
        user: requester.name(),
        email: requester.user.as_ref().map_or("", |user| &user.email),
        via: via_name(requester.via),
        source,
        operation: operation.name,
        target: operation.target,
        result: result_text,
        status,
        outcome,
    };
    let line = match serde_json::to_value(&entry) {
        Ok(line) => line,
        Err(err) => {
            log::error!(target: AUDIT_LOG, "cannot encode an audit entry: {err}");
            return;
        }
    };
    log::info!(target: AUDIT_LOG, "{line}");
    if let Some(settings) = req.app_data::<web::Data<Settings>>() {
        let hub: &EventHub = &settings.events;
        hub.publish("audit", &without_personal_data(line));
    }
}

/// The entry as the event stream tells it: without the e-mail address and the source
/// address, which the stream's readers need not see. Without `--require-auth` the
/// stream is open to anyone; the log keeps them.
fn without_personal_data(mut entry: Value) -> Value {
    if let Some(fields) = entry.as_object_mut() {
        fields.remove("email");
        fields.remove("source");
    }
    entry
}

/// What a write returned, for the trail: an apply's counts of steps.
pub(crate) fn outcome_of(written: &Written) -> Value {
    match written {
        Written::Plan(plan) => json!({ "steps": plan.steps.len() }),
        _ => Value::Null,
    }
}
