//! Where every resource of the application is registered, so that the list of what the
//! application serves comes from its registration itself: `GET /openapi.json` is checked
//! against that list (see `openapi`), and a resource registered without being documented,
//! or documented without being registered, fails the tests. The modules that register
//! routes see only `routing`'s [`Mount`]; this is where they are really mounted.

use actix_web::http::Method;
use actix_web::{web, Resource};

use crate::metrics::RouteMetrics;
use crate::routing::{method_not_allowed, Mount, RoutePattern};

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
        allow: &'static [Method],
        build: impl FnOnce(Resource) -> Resource,
    ) {
        let pattern = RoutePattern {
            prefix: self.prefix,
            path,
        };
        self.cfg.service(
            build(web::resource(path))
                .app_data(RouteMetrics::new(pattern))
                .default_service(method_not_allowed(allow)),
        );
    }
}
