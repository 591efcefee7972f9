//! `GET /cluster`: this instance, the master, every member and the roles its switches
//! gave it, the store's revision and etcd's health. Not in the specification: sliced's
//! own extension (docs/api.md).
//!
//! As with the network views, the application does not know the election or the store's
//! backend: the binary hands it a [`ClusterView`] that answers with JSON.

use std::sync::Arc;

use actix_web::{web, HttpResponse};

use crate::network::ViewFuture;
use crate::routing::Mount;
use crate::ApiError;

/// Something that can describe the cluster this instance belongs to (or, alone, itself).
/// It answers from what the instance knows, without waiting on etcd.
pub trait ClusterView: Send + Sync + 'static {
    fn view(&self) -> ViewFuture;
}

pub(crate) type ClusterData = web::Data<Option<Arc<dyn ClusterView>>>;

pub(crate) fn routes(cfg: &mut impl Mount) {
    cfg.mount("/cluster", crate::routing::READ, |r| {
        r.route(crate::routing::readable(show))
    });
}

async fn show(cluster: ClusterData) -> Result<HttpResponse, ApiError> {
    let view = match cluster.get_ref() {
        Some(cluster) => cluster.view().await,
        None => None,
    };
    crate::network::answer_view(view)
}
