//! The REST peer: a bare actix-web server that answers fixed JSON bodies from memory.
//!
//! It runs as `sliced-bench bare-server` in a process of its own, with actix-web's
//! defaults (one worker per core, like sliced), and routes through the same six GET
//! resource patterns as sliced's slice API, in the same order, so that its throughput is
//! the framework's ceiling for the same requests and responses on the same machine: what
//! is left once sliced's own work (middleware, validation, storage, JSON) is taken away.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use anyhow::Context;

/// Serves `routes` (request path -> file holding the response body) on `addr` until
/// SIGINT or SIGTERM.
pub(crate) fn serve(addr: &str, routes: &[(String, PathBuf)]) -> anyhow::Result<()> {
    let mut bodies = HashMap::new();
    for (path, file) in routes {
        let body = std::fs::read(file)
            .with_context(|| format!("cannot read the body for {path} from {}", file.display()))?;
        bodies.insert(path.clone(), web::Bytes::from(body));
    }
    let bodies = Arc::new(bodies);
    actix_web::rt::System::new().block_on(async move {
        HttpServer::new(move || {
            let mut app = App::new().app_data(web::Data::from(Arc::clone(&bodies)));
            for pattern in ROUTES {
                app = app.route(pattern, web::get().to(answer));
            }
            app.default_service(web::to(HttpResponse::NotFound))
        })
        .bind(addr)
        .with_context(|| format!("cannot listen on {addr}"))?
        .run()
        .await
        .context("the bare server failed")
    })
}

/// The resource patterns of sliced's slice API (crates/slice-http/src/slices.rs).
const ROUTES: [&str; 6] = [
    "/slices",
    "/slices/{slice}",
    "/slices/{slice}/ports",
    "/slices/{slice}/ports/{port}",
    "/slices/{slice}/ports/{port}/mac_addresses",
    "/slices/{slice}/ports/{port}/mac_addresses/{mac}",
];

async fn answer(
    request: HttpRequest,
    bodies: web::Data<HashMap<String, web::Bytes>>,
) -> HttpResponse {
    match bodies.get(request.path()) {
        Some(body) => HttpResponse::Ok()
            .content_type("application/json")
            .body(body.clone()),
        None => HttpResponse::NotFound().finish(),
    }
}

/// Parses a `PATH=FILE` route argument.
pub(crate) fn parse_route(text: &str) -> Result<(String, PathBuf), String> {
    let (path, file) = text
        .split_once('=')
        .ok_or_else(|| format!("expected PATH=FILE, got {text:?}"))?;
    Ok((path.to_owned(), PathBuf::from(file)))
}
