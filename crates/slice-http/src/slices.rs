//! The slice endpoints of spec section 4 (endpoints 1 to 12).
//!
//! Path segments are parsed before anything is looked up, so a malformed identifier is a
//! 400 whatever exists; then the store checks the slice, the port and the MAC address in
//! that order. Writes go to the store's writer and the handler awaits the answer, which
//! comes once the write is durable; reads run on the worker, which the `SliceStore`
//! contract allows (they never wait on a peer).

use actix_web::http::header::{ContentType, LOCATION};
use actix_web::{web, FromRequest, HttpRequest, HttpResponse};
use serde::Serialize;
use slice_core::wire::{Applied, Declaration, MacBody, PortBody, PortRequest, SliceBody};
use slice_core::{MacAddress, PortId, SliceName, SliceStore, StoreError, Write, Written};

use crate::body::{Body, DECLARATION_LIMIT};
use crate::read_cache::ReadCache;
use crate::routing::{readable, Mount};
use crate::{audit, auth};
use crate::{ApiError, Settings, APPLIES_AT_ONCE};

/// Registers the slice routes on `cfg`; `prefix` is where they are mounted ("" or "/api"),
/// used to build `Location` headers.
pub(crate) fn routes(cfg: &mut impl Mount) {
    cfg.mount("/slices", crate::routing::READ_ADD_REMOVE, |r| {
        r.route(readable(list_slices))
            .post(create_slice)
            .delete(delete_slice)
    });
    cfg.mount("/slices/{slice}", crate::routing::READ, |r| {
        r.route(readable(get_slice))
    });
    cfg.mount(
        "/slices/{slice}/ports",
        crate::routing::READ_ADD_REMOVE,
        |r| {
            r.route(readable(list_ports))
                .post(add_port)
                .delete(delete_port)
        },
    );
    cfg.mount("/slices/{slice}/ports/{port}", crate::routing::READ, |r| {
        r.route(readable(get_port))
    });
    cfg.mount(
        "/slices/{slice}/ports/{port}/mac_addresses",
        crate::routing::READ_ADD_REMOVE,
        |r| {
            r.route(readable(list_macs))
                .post(add_mac)
                .delete(delete_mac)
        },
    );
    cfg.mount(
        "/slices/{slice}/ports/{port}/mac_addresses/{mac}",
        crate::routing::READ,
        |r| r.route(readable(get_mac)),
    );
    // After the reads, which are tried first: no pattern above matches these two (none
    // has a colon right after `/slices`), nor they any path above.
    cfg.mount("/slices:apply", crate::routing::POST, |r| r.post(apply));
    cfg.mount("/slices:export", crate::routing::READ, |r| {
        r.route(readable(export))
    });
}

type StoreData = web::Data<dyn SliceStore>;

/// The answers of the reads, kept per worker (see `read_cache`).
type CacheData = web::Data<ReadCache>;

/// Application data borrowed from the request. The reads take what they need this
/// way rather than as extractors, which clone the data's `Arc`: the store's count is
/// shared by every worker, and moving its cache line between cores on every request
/// costs more than the rest of a cached answer.
fn borrowed<T: 'static>(req: &HttpRequest) -> Result<&T, ApiError> {
    req.app_data::<T>().ok_or_else(|| {
        ApiError::Internal(format!(
            "the application has no {}",
            std::any::type_name::<T>()
        ))
    })
}

/// A 200 carrying `body`, which is JSON.
fn json_ok(body: web::Bytes) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(ContentType::json())
        .body(body)
}

fn encode<T: Serialize>(answer: &T) -> Result<Vec<u8>, ApiError> {
    serde_json::to_vec(answer)
        .map_err(|err| ApiError::Internal(format!("cannot encode the answer: {err}")))
}

// ---- path segments -----------------------------------------------------------------------

fn segment<'r>(req: &'r HttpRequest, name: &str) -> &'r str {
    // Every handler is mounted on a pattern that defines the segments it asks for.
    req.match_info().get(name).unwrap_or_default()
}

fn slice_of(req: &HttpRequest) -> Result<SliceName, ApiError> {
    Ok(segment(req, "slice").parse()?)
}

fn slice_and_port(req: &HttpRequest) -> Result<(SliceName, PortId), ApiError> {
    Ok((slice_of(req)?, segment(req, "port").parse()?))
}

/// The created resource's address: the collection's path in canonical form plus its id.
fn created<T: Serialize>(
    req: &HttpRequest,
    collection: String,
    id: &str,
    body: &T,
) -> HttpResponse {
    let prefix = if req.path().starts_with("/api/") {
        "/api"
    } else {
        ""
    };
    HttpResponse::Created()
        .insert_header((LOCATION, format!("{prefix}{collection}/{id}")))
        .json(body)
}

/// Carries out a durable write without holding the async worker while it waits for an
/// fsync or a quorum: through the store's own writer when it has one, else on the
/// blocking pool.
async fn write(req: &HttpRequest, store: StoreData, write: Write) -> Result<Written, ApiError> {
    // Who asks is settled before the store is touched: a request refused for its proxy
    // headers is refused here, on the open routes too, and changes nothing.
    let requester = auth::requester_seen(req)?;
    // Bad input, like a name that does not parse: refused before the store's writer (whose
    // queue does not pass through `Write::perform`) and before the audit trail.
    write.check_bindings().map_err(StoreError::from)?;
    let operation = audit::Operation::of(&write);
    let written = perform(store, write).await;
    audit::record_write(req, &requester, operation, &written);
    written
}

async fn perform(store: StoreData, write: Write) -> Result<Written, ApiError> {
    match store.queue() {
        Some(queue) => {
            let (done, outcome) = tokio::sync::oneshot::channel();
            queue.submit(
                write,
                Box::new(move |result| {
                    // The request may be gone (its client hung up): nobody to tell.
                    let _ = done.send(result);
                }),
            );
            let written = outcome
                .await
                .map_err(|_| ApiError::Internal("the store dropped a write unanswered".into()))?;
            Ok(written?)
        }
        None => {
            let store = store.into_inner();
            Ok(web::block(move || write.perform(store.as_ref())).await??)
        }
    }
}

/// A write answered with another kind of result than its own: a bug in the store.
fn unexpected(written: Written) -> ApiError {
    ApiError::Internal(format!("the store answered {written:?}"))
}

// ---- slices ------------------------------------------------------------------------------

async fn list_slices(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    let (store, cache) = (borrowed::<StoreData>(&req)?, borrowed::<CacheData>(&req)?);
    let body = cache.answer(req.path(), store.get_ref(), || {
        // Encoded under the store's read lock, without copying the names.
        let mut encoded = None;
        store.read_slices(&mut |names| {
            let slices: Vec<SliceRef<'_>> = names.map(|name| SliceRef { name }).collect();
            encoded = Some(encode(&slices));
        })?;
        encoded.unwrap_or_else(|| {
            Err(ApiError::Internal(
                "the store did not show its list of slices".into(),
            ))
        })
    })?;
    Ok(json_ok(body))
}

/// A slice object that borrows its name, for lists.
#[derive(Serialize)]
struct SliceRef<'a> {
    name: &'a SliceName,
}

async fn create_slice(
    req: HttpRequest,
    store: StoreData,
    Body(body): Body<SliceBody>,
) -> Result<HttpResponse, ApiError> {
    write(&req, store, Write::CreateSlice(body.name.clone())).await?;
    Ok(created(&req, "/slices".into(), body.name.as_str(), &body))
}

async fn delete_slice(
    req: HttpRequest,
    store: StoreData,
    Body(body): Body<SliceBody>,
) -> Result<HttpResponse, ApiError> {
    write(&req, store, Write::DeleteSlice(body.name.clone())).await?;
    Ok(HttpResponse::Ok().json(body))
}

async fn get_slice(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    let (store, cache) = (borrowed::<StoreData>(&req)?, borrowed::<CacheData>(&req)?);
    let body = cache.answer(req.path(), store.get_ref(), || {
        let name = slice_of(&req)?;
        store.check_slice(&name)?;
        encode(&SliceBody { name })
    })?;
    Ok(json_ok(body))
}

// ---- the whole state at once -----------------------------------------------------------------

/// `?dry_run=true` plans without applying; other parameters are ignored, as everywhere.
#[derive(Debug, Default, serde::Deserialize)]
struct ApplyQuery {
    #[serde(default)]
    dry_run: bool,
}

async fn apply(
    req: HttpRequest,
    store: StoreData,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let query: ApplyQuery = serde_urlencoded::from_str(req.query_string())
        .map_err(|err| ApiError::BadRequest(format!("invalid query: {err}")))?;
    let settings = borrowed::<web::Data<Settings>>(&req)?;
    // Taken before the body is read: a refused client has sent its head only, and one
    // whose body is on its way holds a place, not the memory of another parsed state.
    let _place = settings.applies.try_acquire().map_err(|_| {
        ApiError::Unavailable(format!(
            "{APPLIES_AT_ONCE} declared states are being read, planned or applied; \
             try again when one is done"
        ))
    })?;
    let Body(declaration) =
        Body::<Declaration, DECLARATION_LIMIT>::from_request(&req, &mut payload.into_inner())
            .await?;
    let declared = declaration.into_slices();
    let records = slice_core::plan::records(&declared);
    if records > settings.max_apply_records {
        return Err(ApiError::TooManyRecords {
            records,
            limit: settings.max_apply_records,
        });
    }
    let dry_run = query.dry_run;
    let plan = if dry_run {
        web::block(move || -> Result<_, ApiError> {
            let current = store.snapshot()?;
            Ok(slice_core::Plan::between(&current, &declared)
                .map_err(slice_core::StoreError::from)?)
        })
        .await??
    } else {
        match write(&req, store, Write::Apply(declared)).await? {
            Written::Plan(plan) => plan,
            other => return Err(unexpected(other)),
        }
    };
    let applied = !dry_run && !plan.is_empty();
    Ok(HttpResponse::Ok().json(Applied { applied, plan }))
}

async fn export(store: StoreData) -> Result<HttpResponse, ApiError> {
    let slices = web::block(move || store.snapshot()).await??;
    Ok(HttpResponse::Ok().json(Declaration::of(&slices)))
}

// ---- ports -------------------------------------------------------------------------------

async fn list_ports(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    let (store, cache) = (borrowed::<StoreData>(&req)?, borrowed::<CacheData>(&req)?);
    let body = cache.answer(req.path(), store.get_ref(), || {
        let slice = slice_of(&req)?;
        let ports: Vec<PortBody> = store
            .ports(&slice)?
            .into_iter()
            .map(PortBody::from)
            .collect();
        encode(&ports)
    })?;
    Ok(json_ok(body))
}

async fn add_port(
    req: HttpRequest,
    store: StoreData,
    Body(body): Body<PortRequest>,
) -> Result<HttpResponse, ApiError> {
    let slice = slice_of(&req)?;
    let port = PortId::new(body.dpid, body.port_no);
    let collection = format!("/slices/{slice}/ports");
    write(&req, store, Write::AddPort(slice, port)).await?;
    Ok(created(
        &req,
        collection,
        &port.to_string(),
        &PortBody::from(port),
    ))
}

async fn delete_port(
    req: HttpRequest,
    store: StoreData,
    Body(body): Body<PortRequest>,
) -> Result<HttpResponse, ApiError> {
    let slice = slice_of(&req)?;
    let port = PortId::new(body.dpid, body.port_no);
    write(&req, store, Write::DeletePort(slice, port)).await?;
    Ok(HttpResponse::Ok().json(PortBody::from(port)))
}

async fn get_port(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    let (store, cache) = (borrowed::<StoreData>(&req)?, borrowed::<CacheData>(&req)?);
    let body = cache.answer(req.path(), store.get_ref(), || {
        let (slice, port) = slice_and_port(&req)?;
        store.check_port(&slice, port)?;
        encode(&PortBody::from(port))
    })?;
    Ok(json_ok(body))
}

// ---- MAC addresses -----------------------------------------------------------------------

async fn list_macs(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    let (store, cache) = (borrowed::<StoreData>(&req)?, borrowed::<CacheData>(&req)?);
    let body = cache.answer(req.path(), store.get_ref(), || {
        let (slice, port) = slice_and_port(&req)?;
        let macs: Vec<MacBody> = store
            .macs(&slice, port)?
            .into_iter()
            .map(|name| MacBody { name })
            .collect();
        encode(&macs)
    })?;
    Ok(json_ok(body))
}

async fn add_mac(
    req: HttpRequest,
    store: StoreData,
    Body(body): Body<MacBody>,
) -> Result<HttpResponse, ApiError> {
    let (slice, port) = slice_and_port(&req)?;
    let mac = body.name;
    let collection = format!("/slices/{slice}/ports/{port}/mac_addresses");
    write(&req, store, Write::AddMac(slice, port, mac)).await?;
    Ok(created(&req, collection, &mac.to_string(), &body))
}

async fn delete_mac(
    req: HttpRequest,
    store: StoreData,
    Body(body): Body<MacBody>,
) -> Result<HttpResponse, ApiError> {
    let (slice, port) = slice_and_port(&req)?;
    let mac = body.name;
    write(&req, store, Write::DeleteMac(slice, port, mac)).await?;
    Ok(HttpResponse::Ok().json(body))
}

async fn get_mac(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    let (store, cache) = (borrowed::<StoreData>(&req)?, borrowed::<CacheData>(&req)?);
    let body = cache.answer(req.path(), store.get_ref(), || {
        let (slice, port) = slice_and_port(&req)?;
        let mac: MacAddress = segment(&req, "mac").parse()?;
        store.check_mac(&slice, port, mac)?;
        encode(&MacBody { name: mac })
    })?;
    Ok(json_ok(body))
}
