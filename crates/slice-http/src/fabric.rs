//! `PUT /topology/fabric`: the operator declares where links between switches may form
//! (docs/security.md, "Links"). The declaration goes to the store, which keeps it durable
//! and tells every instance's controller; the answer is the declaration as stored.

use std::collections::BTreeSet;

use actix_web::{web, HttpRequest, HttpResponse};
use slice_core::wire::FabricBody;
use slice_core::{DeclaredFabric, SliceStore};

use crate::body::{Body, FABRIC_LIMIT};
use crate::{audit, auth, ApiError, Settings};

/// Declares the fabric in the body, replacing the one before; an empty list ends the
/// declaration. Refused (409) when the daemon's settings declare it, and (400) when an
/// entry is not a cable or a port, or a port is in two; nothing changes then.
pub(crate) async fn declare(
    req: HttpRequest,
    store: web::Data<dyn SliceStore>,
    settings: web::Data<Settings>,
    Body(body): Body<FabricBody, FABRIC_LIMIT>,
) -> Result<HttpResponse, ApiError> {
    let fabric = check(&settings, &body)?;
    let answer = FabricBody {
        declared: fabric.entries().iter().map(ToString::to_string).collect(),
    };
    let entries = answer.declared.len();
    // Asked before the store is touched, as for the slice writes (`slices::write`).
    let requester = auth::requester_seen(&req)?;
    // Told to the audit trail where it reaches the store, like the slice writes: a
    // refused body changes nothing. The trail names what changed against the declaration
    // before, as this instance's store holds it.
    let stored = match web::block(move || {
        let before = store.declared_fabric()?;
        store.declare_fabric(&fabric)?;
        Ok(changes(&before, &fabric))
    })
    .await
    {
        Ok(done) => done.map_err(|err: slice_core::StoreError| ApiError::from(err)),
        Err(blocked) => Err(ApiError::from(blocked)),
    };
    let (stored, changes) = match stored {
        Ok(changes) => (Ok(()), changes),
        Err(err) => (Err(err), Vec::new()),
    };
    audit::record_fabric(&req, &requester, entries, &changes, &stored);
    stored?;
    Ok(HttpResponse::Ok().json(answer))
}

fn check(settings: &Settings, body: &FabricBody) -> Result<DeclaredFabric, ApiError> {
    if settings.fabric_in_settings {
        return Err(ApiError::Conflict(
            "the daemon's settings declare the fabric (--fabric, controller.fabric): \
             change it there"
                .into(),
        ));
    }
    DeclaredFabric::parse(&body.declared).map_err(|err| ApiError::BadRequest(err.to_string()))
}

/// The entries `after` has that `before` lacks, then those it dropped.
fn changes(before: &DeclaredFabric, after: &DeclaredFabric) -> Vec<audit::FabricChange> {
    let (before, after): (BTreeSet<_>, BTreeSet<_>) = (
        before.entries().into_iter().collect(),
        after.entries().into_iter().collect(),
    );
    let added = after
        .difference(&before)
        .map(|entry| audit::FabricChange::Added(entry.to_string()));
    let removed = before
        .difference(&after)
        .map(|entry| audit::FabricChange::Removed(entry.to_string()));
    added.chain(removed).collect()
}
