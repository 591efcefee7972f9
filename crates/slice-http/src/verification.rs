//! `GET /verification`: what the data-plane verification last proved from the switches'
//! own flow tables (leaks, black holes, loops, the entries that cause them, the foreign
//! entries removed and the repairs made). Not in the specification: sliced's own
//! extension (docs/api.md, "Verification"). The controller answers it, through the
//! [`NetworkView`](crate::NetworkView) the binary hands in.

use actix_web::HttpResponse;

use crate::network::{NetworkData, ViewKind};
use crate::routing::Mount;
use crate::ApiError;

pub(crate) fn routes(cfg: &mut impl Mount) {
    cfg.mount("/verification", crate::routing::READ, |r| {
        r.route(crate::routing::readable(show))
    });
}

async fn show(network: NetworkData) -> Result<HttpResponse, ApiError> {
    let view = match network.get_ref() {
        Some(network) => network.view(ViewKind::Verification).await,
        None => None,
    };
    crate::network::answer_view(view)
}
