//! Views of the network for operators: switches, links, the fabric, hosts and paths;
//! all read-only but the fabric, which an operator declares (the `fabric` module).
//!
//! The application does not know the controller; the binary hands it a [`NetworkView`]
//! that answers with JSON, so this crate stays free of the switch-control code.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use actix_web::{web, HttpResponse};

use crate::routing::Mount;
use crate::ApiError;

/// Which view is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewKind {
    Switches,
    Links,
    Fabric,
    Hosts,
    Paths,
    /// What the data-plane verification last found (`GET /verification`).
    Verification,
}

/// The answer to a view: JSON, or None when the controller is not running.
pub type ViewFuture = Pin<Box<dyn Future<Output = Option<serde_json::Value>> + Send>>;

/// Something that can describe the network, in practice the running controller.
pub trait NetworkView: Send + Sync + 'static {
    fn view(&self, kind: ViewKind) -> ViewFuture;
}

pub(crate) type NetworkData = web::Data<Option<Arc<dyn NetworkView>>>;

pub(crate) fn routes(cfg: &mut impl Mount) {
    for (path, kind) in [
        ("/topology/switches", ViewKind::Switches),
        ("/topology/links", ViewKind::Links),
        ("/topology/fabric", ViewKind::Fabric),
        ("/topology/hosts", ViewKind::Hosts),
        ("/paths", ViewKind::Paths),
    ] {
        let read = crate::routing::readable(move |network: NetworkData| show(network, kind));
        if kind == ViewKind::Fabric {
            cfg.mount(path, crate::routing::READ_REPLACE, |r| {
                r.route(read).put(crate::fabric::declare)
            });
        } else {
            cfg.mount(path, crate::routing::READ, |r| r.route(read));
        }
    }
}

async fn show(network: NetworkData, kind: ViewKind) -> Result<HttpResponse, ApiError> {
    let view = match network.get_ref() {
        Some(network) => network.view(kind).await,
        None => None,
    };
    answer_view(view)
}

/// A view of the controller's as an answer: 200 with its JSON, or 503 while no
/// controller runs to give one. The cluster view answers the same way.
pub(crate) fn answer_view(view: Option<serde_json::Value>) -> Result<HttpResponse, ApiError> {
    match view {
        Some(json) => Ok(HttpResponse::Ok().json(json)),
        None => Err(ApiError::Unavailable(
            "the controller is not running".into(),
        )),
    }
}
