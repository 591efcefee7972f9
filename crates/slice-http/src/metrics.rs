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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::{web, App, HttpResponse, HttpServer};
use prometheus_client::encoding::{
    EncodeLabelSet, EncodeLabelValue, EncodeMetric, LabelValueEncoder, MetricEncoder, NoLabelSet,
};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::Registry;

use crate::routing::RoutePattern;
use crate::{ApiError, HostPolicy, Settings};

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
    requests: Family<RequestLabels, RequestCount>,
    latency: Family<RouteLabels, RouteLatency>,
    refresh: Refresh,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// Takes `registry` (filled by the binary) and adds the REST requests' metrics to it,
    /// named with `prefix`.
    pub fn new(mut registry: Registry, prefix: &str, refresh: Refresh) -> Self {
        let requests = Family::<RequestLabels, RequestCount>::default();
        let latency = Family::<RouteLabels, RouteLatency>::default();
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

    fn latency_of(&self, route: RoutePattern) -> RouteLatency {
        self.latency.get_or_create(&RouteLabels { route }).clone()
    }

    fn requests_of(&self, route: RoutePattern, method: &'static str, status: u16) -> RequestCount {
        self.requests
            .get_or_create(&RequestLabels {
                route,
                method,
                status,
            })
            .clone()
    }
}

// ---- the request metrics, counted per worker ---------------------------------------------
//
// Every worker answers requests on the same routes. Had they counted into the same atomics
// (or, for prometheus-client's histogram, taken the same lock), the cache lines holding
// them would move between cores on every request; that was a third of what sliced added
// to the framework's cost of a point read. So each worker counts into parts of its own,
// each alone on its cache line, and a scrape sums the parts.

/// One worker's part of a request count.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Count(AtomicU64);

impl Count {
    fn add_one(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// The `http_requests` series of one route, method and status.
#[derive(Debug, Default, Clone)]
struct RequestCount(Arc<Parts<Count>>);

/// The parts of one series: one per worker that asked for its own (see [`RouteMetrics`]),
/// and one shared by the requests counted without one.
#[derive(Debug, Default)]
struct Parts<P> {
    shared: P,
    workers: Mutex<Vec<Arc<P>>>,
}

impl<P: Default> Parts<P> {
    fn add_worker(&self) -> Arc<P> {
        let part = Arc::new(P::default());
        self.workers().push(Arc::clone(&part));
        part
    }

    /// The shared part and every worker's.
    fn each(&self, mut look: impl FnMut(&P)) {
        look(&self.shared);
        for part in self.workers().iter() {
            look(part);
        }
    }

    fn workers(&self) -> MutexGuard<'_, Vec<Arc<P>>> {
        // A push cannot leave the list half changed: a panic elsewhere leaves it sound.
        self.workers
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

impl TypedMetric for RequestCount {
    const TYPE: MetricType = MetricType::Counter;
}

impl EncodeMetric for RequestCount {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let mut total = 0u64;
        self.0
            .each(|part| total = total.wrapping_add(part.0.load(Ordering::Relaxed)));
        encoder.encode_counter::<NoLabelSet, _, u64>(&total, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

/// Upper bounds of the latency buckets, in seconds: half a millisecond to about eight
/// seconds, doubling. A last bucket above them takes the rest.
const LATENCY_BOUNDS: [f64; 15] = {
    let mut bounds = [0.0; 15];
    let mut bound = 0.0005;
    let mut at = 0;
    while at < bounds.len() {
        bounds[at] = bound;
        bound *= 2.0;
        at += 1;
    }
    bounds
};

/// One worker's part of a route's latency histogram.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Latency {
    nanos: AtomicU64,
    buckets: [AtomicU64; LATENCY_BOUNDS.len() + 1],
}

impl Latency {
    fn observe(&self, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        let bucket = LATENCY_BOUNDS
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(LATENCY_BOUNDS.len());
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        self.nanos.fetch_add(nanos, Ordering::Relaxed);
    }
}

/// The `http_request_duration_seconds` histogram of one route.
#[derive(Debug, Default, Clone)]
struct RouteLatency(Arc<Parts<Latency>>);

impl TypedMetric for RouteLatency {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for RouteLatency {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let mut nanos = 0u64;
        let mut counts = [0u64; LATENCY_BOUNDS.len() + 1];
        self.0.each(|part| {
            nanos = nanos.wrapping_add(part.nanos.load(Ordering::Relaxed));
            for (count, bucket) in counts.iter_mut().zip(&part.buckets) {
                *count = count.wrapping_add(bucket.load(Ordering::Relaxed));
            }
        });
        // The count is the buckets' sum, so that a scrape in the middle of an observation
        // still reads a histogram whose last bucket equals its count.
        let count = counts.iter().fold(0u64, |sum, n| sum.wrapping_add(*n));
        // The encoder writes the last bucket, bounded by f64::MAX, as +Inf.
        let buckets: Vec<(f64, u64)> = LATENCY_BOUNDS
            .iter()
            .copied()
            .chain(std::iter::once(f64::MAX))
            .zip(counts)
            .collect();
        // Nanoseconds to seconds: the sum loses precision past 2^53 ns (104 days), which
        // a rate over it does not notice.
        let seconds = nanos as f64 / 1e9;
        encoder.encode_histogram::<NoLabelSet>(seconds, count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
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

/// A request on its way through the application, as the counters see it: taken as it
/// arrives, told of its answer (see `front_door`).
pub(crate) struct Arrival {
    started: Instant,
    method: &'static str,
}

impl Arrival {
    pub(crate) fn of(req: &ServiceRequest) -> Self {
        Self {
            started: Instant::now(),
            method: method_label(req.method()),
        }
    }

    /// Counts the request under its route, method and status, with its latency.
    pub(crate) fn answered<B>(self, response: &ServiceResponse<B>) {
        // Borrowed from the request, never cloned: the `Arc` of the metrics is shared by
        // every worker, and counting a clone would move its cache line between cores on
        // every request.
        let request = response.request();
        let Some(metrics) = request
            .app_data::<web::Data<Settings>>()
            .and_then(|settings| settings.metrics.as_deref())
        else {
            return;
        };
        let status = response.status().as_u16();
        let elapsed = self.started.elapsed();
        // Resources carry their own; the application's, for the unmatched, comes after them.
        match request.app_data::<RouteMetrics>() {
            Some(route) => route.record(metrics, self.method, status, elapsed),
            None => {
                let route = RoutePattern::UNMATCHED;
                metrics.latency_of(route).0.shared.observe(elapsed);
                metrics
                    .requests_of(route, self.method, status)
                    .0
                    .shared
                    .add_one();
            }
        }
    }
}

/// A route's parts of its own series (see above), one per worker, as the application is:
/// resolved on the route's first request and kept beside it, so that counting a request
/// takes no lock, hashes no label set and writes no cache line another worker writes.
pub(crate) struct RouteMetrics {
    pattern: RoutePattern,
    latency: std::cell::OnceCell<Arc<Latency>>,
    requests: std::cell::RefCell<Vec<(&'static str, u16, Arc<Count>)>>,
}

/// Method and status pairs a route keeps parts of its own for; further pairs (a client
/// trying every method) are counted in the series' shared part.
const KEPT_REQUEST_SERIES: usize = 16;

impl RouteMetrics {
    pub(crate) fn new(pattern: RoutePattern) -> Self {
        Self {
            pattern,
            latency: std::cell::OnceCell::new(),
            requests: std::cell::RefCell::new(Vec::new()),
        }
    }

    fn record(&self, metrics: &Metrics, method: &'static str, status: u16, elapsed: Duration) {
        self.latency
            .get_or_init(|| metrics.latency_of(self.pattern).0.add_worker())
            .observe(elapsed);
        let mut requests = self.requests.borrow_mut();
        if let Some((_, _, count)) = requests
            .iter()
            .find(|(kept_method, kept_status, _)| *kept_method == method && *kept_status == status)
        {
            count.add_one();
            return;
        }
        let series = metrics.requests_of(self.pattern, method, status);
        if requests.len() < KEPT_REQUEST_SERIES {
            let count = series.0.add_worker();
            count.add_one();
            requests.push((method, status, count));
        } else {
            series.0.shared.add_one();
        }
    }
}

pub(crate) fn routes(cfg: &mut impl crate::routing::Mount) {
    cfg.mount("/metrics", crate::routing::READ, |r| {
        r.route(crate::routing::readable(show))
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

/// A plain listener for the scraper: `GET /metrics` and nothing else, no session; one
/// worker, as a scrape every few seconds needs no more. Its requests pass the
/// application's front door, with `hosts` as the names allowed in `Host` (a page that
/// rebinds a name of its own to this address reads nothing), and are not counted.
pub fn metrics_server(
    metrics: Arc<Metrics>,
    listener: TcpListener,
    hosts: HostPolicy,
) -> io::Result<actix_web::dev::Server> {
    let metrics = web::Data::from(metrics);
    Ok(HttpServer::new(move || {
        App::new()
            .app_data(metrics.clone())
            .app_data(hosts.clone())
            .app_data(crate::browser::AllowedHost::default())
            .service(
                web::resource("/metrics")
                    .route(crate::routing::readable(
                        |metrics: web::Data<Metrics>| async move { answer(&metrics).await },
                    ))
                    .default_service(crate::routing::method_not_allowed(crate::routing::READ)),
            )
            .default_service(web::to(|| async {
                Err::<HttpResponse, _>(ApiError::NoRoute)
            }))
            .wrap(actix_web::middleware::from_fn(crate::front_door))
    })
    .workers(1)
    .disable_signals()
    // A scrape takes milliseconds; a scraper that stalls must not hold the daemon's stop.
    .shutdown_timeout(crate::serve::STOP_GRACE_SECS)
    .listen(listener)?
    .run())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics() -> Metrics {
        Metrics::new(Registry::default(), "t", Box::new(|| Box::pin(async {})))
    }

    fn sample(text: &str, name: &str) -> Option<f64> {
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
    }

    const ROUTE: RoutePattern = RoutePattern {
        prefix: "",
        path: "/slices",
    };

    #[actix_web::test]
    async fn the_parts_of_every_worker_add_up_to_one_series() {
        let metrics = metrics();
        let workers = [RouteMetrics::new(ROUTE), RouteMetrics::new(ROUTE)];
        workers[0].record(&metrics, "GET", 200, Duration::from_micros(300));
        workers[1].record(&metrics, "GET", 200, Duration::from_micros(300));
        workers[1].record(&metrics, "GET", 200, Duration::from_micros(300));
        workers[0].record(&metrics, "GET", 200, Duration::from_millis(3));
        let text = metrics.render().await.unwrap();
        let series = |labels: &str| sample(&text, &format!("t_http_requests_total{{{labels}}}"));
        assert_eq!(
            series(r#"route="/slices",method="GET",status="200""#),
            Some(4.0)
        );
        let latency = |part: &str| {
            sample(
                &text,
                &format!("t_http_request_duration_seconds_{part}route=\"/slices\"}}"),
            )
        };
        assert_eq!(latency("count{"), Some(4.0), "{text}");
        assert_eq!(latency("bucket{le=\"0.0005\","), Some(3.0), "{text}");
        assert_eq!(latency("bucket{le=\"0.002\","), Some(3.0), "{text}");
        assert_eq!(latency("bucket{le=\"0.004\","), Some(4.0), "{text}");
        assert_eq!(latency("bucket{le=\"+Inf\","), Some(4.0), "{text}");
        let sum = latency("sum{").unwrap();
        assert!((sum - 0.0039).abs() < 1e-9, "{sum}");
    }

    #[actix_web::test]
    async fn a_route_keeps_parts_for_a_bounded_number_of_series_and_counts_the_rest_shared() {
        let metrics = metrics();
        let worker = RouteMetrics::new(ROUTE);
        let statuses = 400..400 + KEPT_REQUEST_SERIES as u16 + 3;
        for status in statuses.clone() {
            worker.record(&metrics, "POST", status, Duration::ZERO);
            worker.record(&metrics, "POST", status, Duration::ZERO);
        }
        let text = metrics.render().await.unwrap();
        for status in statuses {
            let name = format!(
                "t_http_requests_total{{route=\"/slices\",method=\"POST\",status=\"{status}\"}}"
            );
            assert_eq!(sample(&text, &name), Some(2.0), "{name} in {text}");
            let parts = metrics.requests_of(ROUTE, "POST", status).0.workers().len();
            let kept = usize::from(status - 400) < KEPT_REQUEST_SERIES;
            assert_eq!(parts, usize::from(kept), "parts of status {status}");
        }
    }
}
