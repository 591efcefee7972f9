//! `PUT /topology/fabric`: the operator declares where links between switches may form
//! (docs/security.md, "Links"). The declaration goes to the store, which keeps it durable
//! and tells every instance's controller; the answer is the declaration as stored.

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
    // refused body changes nothing.
    let stored = match web::block(move || store.declare_fabric(&fabric)).await {
        Ok(done) => done.map_err(ApiError::from),
        Err(blocked) => Err(ApiError::from(blocked)),
    };
    audit::record(
        &req,
        &requester,
        audit::Operation::declare_fabric(entries),
        &stored,
        |()| serde_json::Value::Null,
    );
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
