//! The audit trail: every write that reaches the store, and every login and logout, is
//! told once, as one JSON line under the log target [`AUDIT_LOG`] and as an `audit`
//! event on the event stream, with its time, requester, source, operation and result.
//!
//! Writes are told where they are carried out (`slices::write`), so a write is told
//! whichever route brought it (the slice API, its `/api/` twin, the local socket) and a
//! request the guard or the body check refused, which changes nothing, is not.
//!
//! An apply can remove every slice at once, so its entry alone (counts) cannot say who
//! removed a given slice. Its entry carries an id, and the log follows it with detail
//! entries (`apply_steps`) of the same requester and id, listing every step it carried
//! out, [`STEPS_PER_ENTRY`] to an entry so that no line grows with the apply. The
//! details go to the log only: the event stream, which readers follow live and which
//! drops a reader that falls 1,024 events behind, gets the one entry with its counts.
//! A declaration of the fabric replaces up to 16,384 entries at once and is told the
//! same way (`fabric_changes`), naming each entry it added or removed.

use actix_web::{web, HttpRequest};
use serde::Serialize;
use serde_json::{json, Value};
use slice_core::audit::{self as shared, ApplyOutcome};
use slice_core::{Write, Written};

use crate::identity::{LocalPeer, Requester, Via};
use crate::{ApiError, EventHub, Settings};

/// The log target of the audit trail (one line per write, at info level).
pub const AUDIT_LOG: &str = "sliced::audit";

/// How many steps of an apply (or entries of a fabric declaration) one detail entry lists:
/// at most about 16 KiB of JSON (a step names a slice of at most 64 bytes, a port and a
/// MAC address; an entry two ports), within what log pipelines keep as one line
/// (journald's `LineMax=` is 48 KiB by default).
pub(crate) const STEPS_PER_ENTRY: usize = shared::STEPS_PER_ENTRY;

/// What was done, in the trail's words, and to what.
pub(crate) struct Operation {
    name: &'static str,
    target: Value,
}

impl Operation {
    /// The operation a store write carries out, in the words the tool's trail shares.
    pub(crate) fn of(write: &Write) -> Self {
        Self::shared(shared::Operation::of(write))
    }

    /// An operation of the vocabulary both trails share (`slice_core::audit`).
    fn shared(operation: shared::Operation<'_>) -> Self {
        Self {
            name: operation.name,
            // Encoding identifiers and counts cannot fail; if it did, the entry would
            // still name the operation.
            target: serde_json::to_value(operation.target).unwrap_or(Value::Null),
        }
    }

    /// A declaration of the fabric with `entries` entries.
    pub(crate) fn declare_fabric(entries: usize) -> Self {
        Self::shared(shared::Operation::declare_fabric(entries))
    }

    /// Part `part` of `parts` of the entries the declaration `declaration` of the fabric
    /// added and removed.
    fn fabric_changes(
        declaration: &str,
        part: usize,
        parts: usize,
        changes: &[FabricChange],
    ) -> Self {
        Self {
            name: "fabric_changes",
            target: json!({
                "declaration": declaration, "part": part, "parts": parts, "changes": changes,
            }),
        }
    }

    /// A login, by `method` (`developer`, `oidc`).
    pub(crate) fn login(method: &'static str) -> Self {
        Self::shared(shared::Operation::login(method))
    }

    pub(crate) fn logout() -> Self {
        Self::shared(shared::Operation::logout())
    }

    /// Part `part` of `parts` of the steps of the apply `apply`.
    fn apply_steps(apply: &str, part: usize, parts: usize, steps: &[slice_core::Step]) -> Self {
        Self::shared(shared::Operation::apply_steps(apply, part, parts, steps))
    }
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
    let (result_text, status, outcome) = match result {
        Ok(value) => ("ok".to_owned(), None, outcome(value)),
        Err(err) => (
            err.to_string(),
            Some(actix_web::ResponseError::status_code(err).as_u16()),
            Value::Null,
        ),
    };
    let Some(line) = entry(req, requester, operation, result_text, status, outcome) else {
        return;
    };
    log::info!(target: AUDIT_LOG, "{line}");
    if let Some(settings) = req.app_data::<web::Data<Settings>>() {
        let hub: &EventHub = &settings.events;
        hub.publish("audit", &without_personal_data(line));
    }
}

/// Tells the trail of a store write: one entry, and for an apply that changed anything
/// its detail entries after it (see the module's documentation).
pub(crate) fn record_write(
    req: &HttpRequest,
    requester: &Requester,
    operation: Operation,
    written: &Result<Written, ApiError>,
) {
    let steps = match written {
        Ok(Written::Plan(plan)) if !plan.steps.is_empty() => &plan.steps,
        _ => return record(req, requester, operation, written, outcome_of),
    };
    let apply = apply_id();
    let parts = steps.len().div_ceil(STEPS_PER_ENTRY);
    record(req, requester, operation, written, |_| {
        to_json(ApplyOutcome::of(steps.len(), &apply))
    });
    record_details(req, requester, steps, |part, chunk| {
        Operation::apply_steps(&apply, part, parts, chunk)
    });
}

/// One entry the fabric's declaration gained or lost, for the trail.
#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FabricChange {
    Added(String),
    Removed(String),
}

/// Tells the trail of a declaration of the fabric: one entry with the counts of entries
/// added and removed, and, when it changed anything, detail entries (`fabric_changes`,
/// log only) naming each, as for an apply, so that no line grows with the declaration.
pub(crate) fn record_fabric(
    req: &HttpRequest,
    requester: &Requester,
    entries: usize,
    changes: &[FabricChange],
    stored: &Result<(), ApiError>,
) {
    let operation = Operation::declare_fabric(entries);
    let count = |added: bool| {
        changes
            .iter()
            .filter(|change| matches!(change, FabricChange::Added(_)) == added)
            .count()
    };
    if changes.is_empty() || stored.is_err() {
        return record(
            req,
            requester,
            operation,
            stored,
            |()| json!({ "added": 0, "removed": 0 }),
        );
    }
    let declaration = apply_id();
    let parts = changes.len().div_ceil(STEPS_PER_ENTRY);
    record(req, requester, operation, stored, |()| {
        json!({
            "added": count(true), "removed": count(false),
            "declaration": declaration, "parts": parts,
        })
    });
    record_details(req, requester, changes, |part, chunk| {
        Operation::fabric_changes(&declaration, part, parts, chunk)
    });
}

/// Logs `items` as detail entries after their write's entry, [`STEPS_PER_ENTRY`] to an
/// entry, each the operation `detail` makes of its part (counted from 1) and items.
fn record_details<T>(
    req: &HttpRequest,
    requester: &Requester,
    items: &[T],
    detail: impl Fn(usize, &[T]) -> Operation,
) {
    for (index, chunk) in items.chunks(STEPS_PER_ENTRY).enumerate() {
        let operation = detail(index + 1, chunk);
        if let Some(line) = entry(req, requester, operation, "ok".into(), None, Value::Null) {
            log::info!(target: AUDIT_LOG, "{line}");
        }
    }
}

/// Tells the trail of an answer that refused a trusted proxy's headers
/// ([`ApiError::ProxyRefused`]): 403 with the reason, which names headers, never their
/// values (those are the client's, and go nowhere). Called where answers leave
/// (`front_door`), so each refused request is told once, whichever route refused it,
/// and a request whose handler answered otherwise (a probe) is not told.
pub(crate) fn proxy_refused(response: &actix_web::dev::ServiceResponse<impl Sized>) {
    let Some(ApiError::ProxyRefused(reason)) = response
        .response()
        .error()
        .and_then(|err| err.as_error::<ApiError>())
    else {
        return;
    };
    let requester = Requester {
        user: None,
        via: Via::Proxy,
    };
    let refused: Result<(), ApiError> = Err(ApiError::ProxyRefused(reason.clone()));
    record(
        response.request(),
        &requester,
        Operation::login("proxy"),
        &refused,
        |_| Value::Null,
    );
}

/// An apply's id in the trail, which links its entry to its details: 64 random bits in
/// hex, unique across restarts and the instances of a cluster without a counter.
fn apply_id() -> String {
    let mut bytes = [0u8; 8];
    if getrandom::getrandom(&mut bytes).is_err() {
        // No randomness (it never fails on Linux once booted): the time still tells
        // this apply's details from another's in the same log.
        let nanos = jiff::Timestamp::now().as_nanosecond();
        bytes = (nanos as u64).to_be_bytes();
    }
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// One entry of the trail, as JSON; `None` (and an error logged) if it cannot be encoded.
fn entry(
    req: &HttpRequest,
    requester: &Requester,
    operation: Operation,
    result: String,
    status: Option<u16>,
    outcome: Value,
) -> Option<Value> {
    let source = match (req.conn_data::<LocalPeer>(), req.peer_addr()) {
        (Some(_), _) => "local".to_owned(),
        // A listener on [::] sees an IPv4 peer as ::ffff:a.b.c.d; the trail names it as
        // the peer knows itself.
        (None, Some(peer)) => {
            std::net::SocketAddr::new(peer.ip().to_canonical(), peer.port()).to_string()
        }
        (None, None) => "unknown".to_owned(),
    };
    let entry = shared::Entry {
        time: jiff::Timestamp::now().to_string(),
        user: requester.name(),
        email: requester.user.as_ref().map_or("", |user| &user.email),
        uid: None,
        via: via_name(requester.via),
        source: &source,
        store: None,
        operation: operation.name,
        target: (!operation.target.is_null()).then_some(operation.target),
        result: &result,
        status,
        outcome: (!outcome.is_null()).then_some(outcome),
    };
    match serde_json::to_value(&entry) {
        Ok(line) => Some(line),
        Err(err) => {
            log::error!(target: AUDIT_LOG, "cannot encode an audit entry: {err}");
            None
        }
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
fn outcome_of(written: &Written) -> Value {
    match written {
        Written::Plan(plan) => to_json(ApplyOutcome::of(plan.steps.len(), "")),
        _ => Value::Null,
    }
}

/// An outcome as the entry holds it; encoding counts and an id cannot fail.
fn to_json(outcome: ApplyOutcome<'_>) -> Value {
    serde_json::to_value(outcome).unwrap_or(Value::Null)
}
