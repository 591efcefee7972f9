//! `GET /metrics`: the daemon's metrics in the OpenMetrics text format, and the REST
//! requests' own counters and latency histogram.
//!
//! The binary owns what is measured; this module holds the [`Registry`] it filled, adds
//! the HTTP metrics, and renders it on request, after a refresh that lets the binary set
//! the gauges it reads at scrape time (the network's size, the process).

use std::future::Future;
use std::io;
use std::net::TcpListener;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::middleware::Next;
use actix_web::{web, App, HttpResponse, HttpServer};
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::mount::RoutePattern;
use crate::{ApiError, Settings};

/// The media type of the OpenMetrics text format, which Prometheus asks for first.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Sets the gauges that are read when a scrape comes, before the registry is rendered.
pub type Refresh = Box<dyn Fn() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    /// The route's pattern (`/slices/{name}`), never the path itself, so that the label
    /// set stays as small as the routing table whatever clients send.
    route: RoutePattern,
    method: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: RoutePattern,
}

/// Written as the whole pattern; built from static parts, so counting a request
/// allocates nothing.
impl EncodeLabelValue for RoutePattern {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        use std::fmt::Write;
        encoder.write_str(self.prefix)?;
        encoder.write_str(self.path)
    }
}

/// Every metric of the daemon, ready to render.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabels, Histogram, fn() -> Histogram>,
    refresh: Refresh,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

/// Request durations from half a millisecond to about eight seconds, doubling.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0005, 2.0, 15))
}

impl Metrics {
    /// Takes `registry` (filled by the binary) and adds the REST requests' metrics to it,
    /// named with `prefix`.
    pub fn new(mut registry: Registry, prefix: &str, refresh: Refresh) -> Self {
        let requests = Family::<RequestLabels, Counter>::default();
        let latency: Family<RouteLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(latency_histogram);
        let ours = registry.sub_registry_with_prefix(prefix);
        ours.register(
            "http_requests",
            "REST requests answered, by route pattern, method and status",
            requests.clone(),
        );
        ours.register_with_unit(
            "http_request_duration",
            "Time to answer a REST request (until the response head), by route pattern",
            prometheus_client::registry::Unit::Seconds,
            latency.clone(),
        );
        Self {
            registry,
            requests,
            latency,
            refresh,
        }
    }

    /// The metrics as OpenMetrics text, the scrape-time gauges refreshed first.
    pub async fn render(&self) -> Result<String, std::fmt::Error> {
        (self.refresh)().await;
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }

    fn record(&self, route: RoutePattern, method: &'static str, status: u16, elapsed: f64) {
        self.latency_of(route).observe(elapsed);
        self.requests_of(route, method, status).inc();
    }

    fn latency_of(&self, route: RoutePattern) -> Histogram {
        self.latency.get_or_create(&RouteLabels { route }).clone()
    }

    fn requests_of(&self, route: RoutePattern, method: &'static str, status: u16) -> Counter {
        self.requests
            .get_or_create(&RequestLabels {
                route,
                method,
                status,
            })
            .clone()
    }
}

/// The method as a label, any method HTTP does not define counted as one.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// Counts every request the application answers, with its latency; the outermost
/// middleware, so that refusals by the other middleware count too.
pub(crate) async fn count_requests(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let started = Instant::now();
    let method = method_label(req.method());
    let response = next.call(req).await?.map_into_boxed_body();
    // Borrowed from the request, not cloned before the call: the `Arc` of the metrics is
    // shared by every worker, and counting a clone would move its cache line between
    // cores on every request.
    let request = response.request();
    let Some(metrics) = request
        .app_data::<web::Data<Settings>>()
        .and_then(|settings| settings.metrics.as_deref())
    else {
        return Ok(response);
    };
    let status = response.status().as_u16();
    let elapsed = started.elapsed().as_secs_f64();
    match request.app_data::<RouteMetrics>() {
        Some(route) => route.record(metrics, method, status, elapsed),
        None => metrics.record(RoutePattern::UNMATCHED, method, status, elapsed),
    }
    Ok(response)
}

/// A resource's handles to its own series, resolved on its first request and kept beside
/// it (one per worker, as the application is), so that counting a request takes no
/// lock, hashes no label set and compares no string.
pub(crate) struct RouteMetrics {
    pattern: RoutePattern,
    latency: std::cell::OnceCell<Histogram>,
    requests: std::cell::RefCell<Vec<(&'static str, u16, Counter)>>,
}

/// Method and status pairs a resource keeps handles for; further pairs (a client trying
/// every method) are counted through the family's lookup instead.
const KEPT_REQUEST_SERIES: usize = 16;

impl RouteMetrics {
    pub(crate) fn new(pattern: RoutePattern) -> Self {
        Self {
            pattern,
            latency: std::cell::OnceCell::new(),
            requests: std::cell::RefCell::new(Vec::new()),
        }
    }

    fn record(&self, metrics: &Metrics, method: &'static str, status: u16, elapsed: f64) {
        self.latency
            .get_or_init(|| metrics.latency_of(self.pattern))
            .observe(elapsed);
        let mut requests = self.requests.borrow_mut();
        if let Some((_, _, counter)) = requests
            .iter()
            .find(|(kept_method, kept_status, _)| *kept_method == method && *kept_status == status)
        {
            counter.inc();
            return;
        }
        let counter = metrics.requests_of(self.pattern, method, status);
        counter.inc();
        if requests.len() < KEPT_REQUEST_SERIES {
            requests.push((method, status, counter));
        }
    }
}

pub(crate) fn routes(cfg: &mut impl crate::mount::Mount) {
    cfg.mount("/metrics", "GET, HEAD", |r| {
        r.route(crate::slices::readable(show))
    });
}

async fn show(settings: web::Data<Settings>) -> Result<HttpResponse, ApiError> {
    match &settings.metrics {
        Some(metrics) => answer(metrics).await,
        None => Err(ApiError::NoRoute),
    }
}

async fn answer(metrics: &Metrics) -> Result<HttpResponse, ApiError> {
    let text = metrics
        .render()
        .await
        .map_err(|err| ApiError::Internal(format!("cannot render the metrics: {err}")))?;
    Ok(HttpResponse::Ok().content_type(CONTENT_TYPE).body(text))
}

/// A plain listener for the scraper: `GET /metrics` and nothing else, no session, no
/// `Host` check; one worker, as a scrape every few seconds needs no more.
pub fn metrics_server(
    metrics: Arc<Metrics>,
    listener: TcpListener,
) -> io::Result<actix_web::dev::Server> {
    let metrics = web::Data::from(metrics);
    Ok(HttpServer::new(move || {
        App::new()
            .app_data(metrics.clone())
            .service(
                web::resource("/metrics")
                    .route(crate::slices::readable(
                        |metrics: web::Data<Metrics>| async move { answer(&metrics).await },
                    ))
                    .default_service(crate::slices::method_not_allowed("GET, HEAD")),
            )
            .default_service(web::to(|| async {
                Err::<HttpResponse, _>(ApiError::NoRoute)
            }))
    })
    .workers(1)
    .disable_signals()
    .listen(listener)?
    .run())
}
