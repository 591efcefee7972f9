//! The vocabulary of routes that every module registering one shares: where resources are
//! mounted ([`Mount`]), with which methods (`&[Method]`, as axum's method routing names
//! them), the route of a read, and the 405 of a method a resource lacks. A leaf: the
//! modules that mount routes use it, and it uses none of them.

use actix_web::http::header::{HeaderValue, ALLOW};
use actix_web::http::Method;
use actix_web::{guard, web, Resource};

use crate::ApiError;

/// A resource that is read: GET, and HEAD beside it.
pub(crate) const READ: &[Method] = &[Method::GET, Method::HEAD];
/// A resource that only takes a POST.
pub(crate) const POST: &[Method] = &[Method::POST];
/// A resource that is read and replaced whole.
pub(crate) const READ_REPLACE: &[Method] = &[Method::GET, Method::HEAD, Method::PUT];
/// A collection that is read, added to and removed from.
pub(crate) const READ_ADD_REMOVE: &[Method] =
    &[Method::GET, Method::HEAD, Method::POST, Method::DELETE];

/// Something resources are mounted on: the application's configuration (`mount`'s
/// `Mounting`), or a [`Listing`] that only records what would be mounted.
pub(crate) trait Mount {
    /// Mounts the resource at `path`, which answers the methods in `allow` (as its `Allow`
    /// header names them) and 405 to any other.
    fn mount(
        &mut self,
        path: &'static str,
        allow: &'static [Method],
        build: impl FnOnce(Resource) -> Resource,
    );
}

/// The pattern of a resource (`/api` + `/slices/{slice}`): the resource leaves it, inside
/// its request counter, in the request's data, so that the counter labels a request
/// without matching its path against the routing table a second time.
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
        allow: &'static [Method],
        _: impl FnOnce(Resource) -> Resource,
    ) {
        let methods = allow
            .iter()
            .map(|method| method.as_str().to_owned())
            .collect();
        self.routes
            .push((format!("{}{path}", self.prefix), methods));
    }
}

/// The route of a resource's GET, which answers HEAD too: HEAD is GET without the body
/// (RFC 9110), and actix's encoder leaves the body out of a HEAD response.
pub(crate) fn readable<F, Args>(handler: F) -> actix_web::Route
where
    F: actix_web::Handler<Args>,
    Args: actix_web::FromRequest + 'static,
    F::Output: actix_web::Responder + 'static,
{
    web::route().guard(GetOrHead).to(handler)
}

/// Passes GET and HEAD: one comparison, where `guard::Any` of two method guards makes
/// two calls through boxes on every request.
struct GetOrHead;

impl guard::Guard for GetOrHead {
    fn check(&self, ctx: &guard::GuardContext<'_>) -> bool {
        matches!(ctx.head().method, Method::GET | Method::HEAD)
    }
}

/// The answer to a method a resource does not have: 405 with the error body, and the
/// `Allow` header that HTTP requires on a 405, naming the methods it does have.
pub(crate) fn method_not_allowed(allow: &'static [Method]) -> actix_web::Route {
    let names: Vec<&str> = allow.iter().map(Method::as_str).collect();
    // Method names are tokens, which a header value always takes.
    let allow = HeaderValue::from_str(&names.join(", ")).unwrap_or(HeaderValue::from_static(""));
    web::to(move || {
        let allow = allow.clone();
        async move {
            let mut response =
                actix_web::ResponseError::error_response(&ApiError::MethodNotAllowed);
            response.headers_mut().insert(ALLOW, allow);
            response
        }
    })
}
