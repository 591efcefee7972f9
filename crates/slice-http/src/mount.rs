//! Where every resource of the application is registered, so that the list of what the
//! application serves comes from its registration itself: `GET /openapi.json` is checked
//! against that list (see `openapi`), and a resource registered without being documented,
//! or documented without being registered, fails the tests.

use actix_web::{web, Resource};

/// Something resources are mounted on: the application's configuration, or a [`Listing`]
/// that only records what would be mounted.
pub(crate) trait Mount {
    /// Mounts the resource at `path`, which answers the methods in `allow` (as its `Allow`
    /// header names them, comma-separated) and 405 to any other.
    fn mount(
        &mut self,
        path: &'static str,
        allow: &'static str,
        build: impl FnOnce(Resource) -> Resource,
    );
}

/// The application's configuration below `prefix` ("" or "/api"), where resources are
/// really mounted.
pub(crate) struct Mounting<'a> {
    cfg: &'a mut web::ServiceConfig,
    prefix: &'static str,
}

impl<'a> Mounting<'a> {
    pub(crate) fn new(cfg: &'a mut web::ServiceConfig, prefix: &'static str) -> Self {
        Self { cfg, prefix }
    }
}

impl Mount for Mounting<'_> {
    fn mount(
        &mut self,
        path: &'static str,
        allow: &'static str,
        build: impl FnOnce(Resource) -> Resource,
    ) {
        let pattern = RoutePattern {
            prefix: self.prefix,
            path,
        };
        self.cfg.service(
            build(web::resource(path))
                .app_data(crate::metrics::RouteMetrics::new(pattern))
                .default_service(crate::slices::method_not_allowed(allow)),
        );
    }
}

/// The pattern of a resource (`/api` + `/slices/{slice}`): the resource leaves its
/// [`crate::metrics::RouteMetrics`] in the request's data, so that the request counter
/// labels a request without matching its path against the routing table a second time.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq)]
pub(crate) struct RoutePattern {
    pub(crate) prefix: &'static str,
    pub(crate) path: &'static str,
}

impl RoutePattern {
    /// The label of requests that no resource answered.
    pub(crate) const UNMATCHED: RoutePattern = RoutePattern {
        prefix: "",
        path: "unmatched",
    };
}

/// The paths and methods resources would be mounted with, below `prefix`.
pub(crate) struct Listing {
    prefix: &'static str,
    pub(crate) routes: Vec<(String, Vec<String>)>,
}

impl Listing {
    pub(crate) fn new(prefix: &'static str) -> Self {
        Self {
            prefix,
            routes: Vec::new(),
        }
    }
}

impl Mount for Listing {
    fn mount(
        &mut self,
        path: &'static str,
        allow: &'static str,
        _: impl FnOnce(Resource) -> Resource,
    ) {
        let methods = allow
            .split(',')
            .map(|method| method.trim().to_owned())
            .collect();
        self.routes
            .push((format!("{}{path}", self.prefix), methods));
    }
}
