//! `GET /events`: what changes, as a Server-Sent Events stream.
//!
//! Whatever happens (a committed slice change, a switch or link coming or going, a host
//! learned, a path set up) is [`EventHub::publish`]ed once: it gets the next id and is
//! rendered once into the bytes every client is sent. The hub keeps the last
//! [`RECENT_EVENTS`] for clients that come back with `Last-Event-ID`, and hands live ones
//! to every open stream through one bounded broadcast buffer. A client that falls
//! [`STREAM_BUFFER`] events behind (it stopped reading) is dropped, never buffered for;
//! it reconnects and resumes from its last id, or is told to re-read the state when the
//! events it missed are gone.
//!
//! When the daemon stops, [`EventHub::close`] ends every open stream at once with a last
//! [`SHUTDOWN_FRAME`], so that a client learns the stream is gone (and reconnects later)
//! rather than holding a connection the stop would wait for.
//!
//! Ids only grow, also across restarts: a hub starts counting at the time it was made,
//! in microseconds since the epoch, so a client holding an id from an earlier run is
//! behind every id of this one and is told to re-read.
//!
//! Streams are few and long, so nobody may hoard them: at most [`MAX_EVENT_STREAMS`]
//! are open, [`STREAMS_KEPT_FOR_LOGGED_IN`] of them only for clients with a session (or
//! on the local socket), so that the unauthenticated `/events` cannot starve the web
//! view's `/api/events`, and one client holds at most [`MAX_STREAMS_PER_CLIENT`]
//! ([`Client`] says who a client is). A stream gives its slot back the moment its client
//! hangs up (see `hangup`), and a HEAD takes none: it answers the GET's status and
//! headers without subscribing to anything.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use futures_util::stream::{self, Stream};
use parking_lot::Mutex;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use serde_json::json;
use slice_core::wire::ErrorBody;
use slice_core::Change;
use tokio::sync::{broadcast, watch};

use crate::error::ApiError;
use crate::hangup::Hangup;
use crate::routing::Mount;
use crate::LocalPeer;

/// How many past events a client can resume from.
pub const RECENT_EVENTS: usize = 4096;

/// How far a stream may fall behind the newest event before it is dropped.
pub const STREAM_BUFFER: usize = 1024;

/// The most event streams open at once; more are refused with 503.
pub const MAX_EVENT_STREAMS: usize = 256;

/// Of [`MAX_EVENT_STREAMS`], how many only logged-in clients may take: clients without a
/// session share the rest, and beyond it are refused with 503 while a logged-in client
/// still gets its stream.
pub const STREAMS_KEPT_FOR_LOGGED_IN: usize = 64;

/// The most streams one [`Client`] may hold open; its next is refused with 429. Above
/// what a browser opens (one per tab of the web view, and browsers keep at most six
/// connections per site), far below the share of clients without a session.
pub const MAX_STREAMS_PER_CLIENT: usize = 16;

// A logged-in client must fit in the slots kept for it, and those leave some for others.
const _: () = assert!(
    MAX_STREAMS_PER_CLIENT <= STREAMS_KEPT_FOR_LOGGED_IN
        && STREAMS_KEPT_FOR_LOGGED_IN < MAX_EVENT_STREAMS
);

/// The longest a new stream waits for the network's changes to be followed.
const RECORDER_WAIT: Duration = Duration::from_secs(1);

/// How often an idle stream gets a comment line, so that proxies between it and its
/// client keep it open. A client that hangs up is noticed at once, not at the next of
/// these (see `hangup`).
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The last frame of every stream open when the daemon stops: an event without an id,
/// so that a client resuming with `Last-Event-ID` resumes after the last real one.
pub const SHUTDOWN_FRAME: &str =
    "event: shutdown\ndata: {\"reason\": \"the daemon is stopping\"}\n\n";

/// One event, rendered once as the bytes of its SSE frame.
#[derive(Debug)]
struct Event {
    id: u64,
    frame: Bytes,
}

struct Recent {
    next_id: u64,
    events: VecDeque<Arc<Event>>,
    /// The first id from which every event was recorded: a client that saw one before it
    /// may have missed some. Events of the network are recorded only while someone
    /// follows the stream ([`EventHub::recording`]), since every flow set up is one.
    complete_from: u64,
}

/// Where events are published and streams subscribe. Shared (`Arc`) by its publishers
/// and the application.
pub struct EventHub {
    recent: Mutex<Recent>,
    live: broadcast::Sender<Arc<Event>>,
    /// Who holds the open streams, for the bounds, and how many there are, for
    /// publishers that only publish while someone listens.
    streams: Arc<Streams>,
    /// Whether such a publisher exists, and whether it is recording now: a new stream
    /// starts only once it is, so that nothing the client does after the stream opened
    /// goes unreported.
    recorder: watch::Sender<Option<bool>>,
    /// Set once by [`EventHub::close`]; every stream waits on it beside its events.
    closed: watch::Sender<bool>,
}

impl Default for EventHub {
    fn default() -> Self {
        Self::new()
    }
}

impl EventHub {
    pub fn new() -> Self {
        let started = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |since| {
                u64::try_from(since.as_micros()).unwrap_or(u64::MAX / 2)
            });
        Self::starting_at(started)
    }

    fn starting_at(first_id: u64) -> Self {
        let (live, _) = broadcast::channel(STREAM_BUFFER);
        Self {
            recent: Mutex::new(Recent {
                next_id: first_id,
                events: VecDeque::with_capacity(RECENT_EVENTS),
                complete_from: first_id,
            }),
            live,
            streams: Arc::new(Streams::default()),
            recorder: watch::Sender::new(None),
            closed: watch::Sender::new(false),
        }
    }

    /// Ends every open stream with [`SHUTDOWN_FRAME`], and every stream opened from now
    /// on right after its backlog: the daemon is stopping. A stream whose client does not
    /// read is ended by the server's stop, as its frame cannot be written.
    pub fn close(&self) {
        self.closed.send_replace(true);
    }

    /// Publishes an event of type `kind` (a word: `slice_created`, `link_down`...) with
    /// `data` as its JSON. Never waits: the lock covers numbering and a push.
    pub fn publish(&self, kind: &str, data: &serde_json::Value) {
        let mut recent = self.recent.lock();
        let id = recent.next_id;
        recent.next_id += 1;
        let event = Arc::new(Event {
            id,
            frame: Bytes::from(format!("id: {id}\nevent: {kind}\ndata: {data}\n\n")),
        });
        if recent.events.len() == RECENT_EVENTS {
            recent.events.pop_front();
        }
        recent.events.push_back(Arc::clone(&event));
        // Sent under the lock, so that streams see events in id order; nobody
        // listening is no error.
        let _ = self.live.send(event);
    }

    /// Publishes a committed change of the slices.
    pub fn publish_change(&self, change: &Change) {
        let (kind, data) = match change {
            Change::SliceCreated(slice) => ("slice_created", json!({ "slice": slice })),
            Change::SliceDeleted(slice) => ("slice_deleted", json!({ "slice": slice.name })),
            Change::PortAdded { slice, port } => {
                ("port_added", json!({ "slice": slice, "port": port }))
            }
            Change::PortDeleted { slice, port } => {
                ("port_deleted", json!({ "slice": slice, "port": port.id }))
            }
            Change::MacAdded { slice, port, mac } => (
                "mac_added",
                json!({ "slice": slice, "port": port, "mac": mac }),
            ),
            Change::MacDeleted { slice, port, mac } => (
                "mac_deleted",
                json!({ "slice": slice, "port": port, "mac": mac }),
            ),
            // Told by the store on every instance, whichever one declared it: what the
            // store holds, which an instance whose settings declare the fabric ignores.
            Change::FabricDeclared(fabric) => (
                "fabric_declared",
                json!({
                    "mode": if fabric.is_unreadable() {
                        "unreadable"
                    } else if fabric.is_declared() {
                        "declared"
                    } else {
                        "discovered"
                    },
                    "declared": fabric.entries().iter().map(ToString::to_string).collect::<Vec<_>>(),
                }),
            ),
            // A kind of change slice-core may add later has no event kind in the API yet,
            // so none is sent for it.
            _ => return,
        };
        self.publish(kind, &data);
    }

    /// The id the next event will get.
    pub fn next_id(&self) -> u64 {
        self.recent.lock().next_id
    }

    /// The number of open streams, now and as it changes.
    pub fn open_streams(&self) -> watch::Receiver<usize> {
        self.streams.count.subscribe()
    }

    /// Registers the gauge of open streams (`event_streams{client}`, the client
    /// `logged_in` or `anonymous`) in `registry`.
    pub fn register_metrics(&self, registry: &mut Registry) {
        registry.register(
            "event_streams",
            "Event streams open, by whether their client is logged in",
            self.streams.gauges.family.clone(),
        );
    }

    /// Says whether a publisher that publishes only while streams are open is doing so
    /// (`true` from now on) or not (`false`): a client that comes back with an id from
    /// before the last `true` may have missed events, and is told to read again.
    pub fn recording(&self, complete: bool) {
        let mut recent = self.recent.lock();
        recent.complete_from = if complete { recent.next_id } else { u64::MAX };
        drop(recent);
        self.recorder.send_replace(Some(complete));
    }

    /// Waits, for at most [`RECORDER_WAIT`], until a publisher that records only while
    /// streams are open (if there is one) records.
    async fn recorder_ready(&self) {
        let mut recorder = self.recorder.subscribe();
        let ready = recorder.wait_for(|state| *state != Some(false));
        if tokio::time::timeout(RECORDER_WAIT, ready).await.is_err() {
            log::warn!("an event stream starts before the network's changes are followed");
        }
    }

    /// Publishes that events were lost (a publisher fell behind), as a `resync` event
    /// every open stream gets, and treats what came before as incomplete.
    pub fn publish_loss(&self, reason: &str) {
        self.publish("resync", &json!({ "reason": reason }));
        self.recording(true);
    }

    /// A stream for `client` of the events after `last_seen` (all new ones without it),
    /// unless a bound refuses it.
    fn subscribe(&self, client: Client, last_seen: Option<u64>) -> Result<Subscription, Refusal> {
        let slot = StreamSlot::take(&self.streams, client)?;
        let recent = self.recent.lock();
        let mut backlog: VecDeque<Bytes> = VecDeque::new();
        if let Some(last_seen) = last_seen {
            let oldest_kept = recent
                .events
                .front()
                .map_or(recent.next_id, |event| event.id);
            let resumable_from = oldest_kept.max(recent.complete_from);
            if last_seen.saturating_add(1) < resumable_from || last_seen >= recent.next_id {
                // What came after it is gone, or it is not an id of this hub.
                backlog.push_back(Bytes::from_static(
                    b"event: resync\ndata: {\"reason\": \"the events after the last one seen \
                      are no longer kept: read the state again\"}\n\n",
                ));
            } else {
                backlog.extend(
                    recent
                        .events
                        .iter()
                        .filter(|event| event.id > last_seen)
                        .map(|event| event.frame.clone()),
                );
            }
        }
        // Subscribed under the lock: nothing between the backlog and the live events is
        // lost or repeated.
        let live = self.live.subscribe();
        drop(recent);
        Ok(Subscription {
            backlog,
            live,
            closed: self.closed.subscribe(),
            _slot: slot,
        })
    }
}

/// Who holds a stream, for [`MAX_STREAMS_PER_CLIENT`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Client {
    /// Over the local socket: the daemon's owner.
    Owner,
    /// A logged-in user, by e-mail address: every tab and browser of one user, however
    /// many sessions it logged in with. Clients on loopback share one address, so the
    /// user is what tells them apart.
    User(String),
    /// A client without a session, by its address; an IPv6 one by its /64, the block a
    /// host is given, so that its other addresses do not make it many clients. Behind a
    /// proxy every such client is the proxy (forwarded addresses are not trusted).
    Address(IpAddr),
}

impl Client {
    /// Who sent `req`: the local socket, the guard's session, or else the peer address.
    fn of(req: &HttpRequest) -> Result<Self, ApiError> {
        if req.conn_data::<LocalPeer>().is_some() {
            return Ok(Self::Owner);
        }
        // Without the session middleware (the unprefixed route, open) there is no
        // session to find: the client is anonymous.
        if let Some(user) = crate::auth::requester(req)?.and_then(|requester| requester.user) {
            // A proxy may name its users without an address.
            return Ok(Self::User(if user.email.is_empty() {
                format!("name:{}", user.name)
            } else {
                user.email
            }));
        }
        let address = req
            .peer_addr()
            .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |peer| peer.ip());
        Ok(Self::Address(match address.to_canonical() {
            IpAddr::V6(v6) => {
                let [a, b, c, d, ..] = v6.segments();
                IpAddr::V6(Ipv6Addr::new(a, b, c, d, 0, 0, 0, 0))
            }
            v4 => v4,
        }))
    }

    fn logged_in(&self) -> bool {
        !matches!(self, Self::Address(_))
    }
}

/// Why a stream is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// The client holds [`MAX_STREAMS_PER_CLIENT`]: 429.
    ClientAtItsBound,
    /// Clients without a session hold all the slots not kept for logged-in ones: 503.
    AnonymousShareTaken,
    /// [`MAX_EVENT_STREAMS`] are open: 503.
    Full,
}

impl Refusal {
    fn response(self) -> HttpResponse {
        let (status, error) = match self {
            Self::ClientAtItsBound => (
                StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "this client has {MAX_STREAMS_PER_CLIENT} event streams open, the most \
                     one client may: close one first"
                ),
            ),
            Self::AnonymousShareTaken => (
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "the {} event streams for clients without a session are all open; \
                     log in, or try again later",
                    MAX_EVENT_STREAMS - STREAMS_KEPT_FOR_LOGGED_IN
                ),
            ),
            Self::Full => (
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "{MAX_EVENT_STREAMS} event streams are open, the most this daemon \
                     serves; try again later"
                ),
            ),
        };
        HttpResponse::build(status).json(ErrorBody { error })
    }
}

/// The open streams and who holds them.
#[derive(Default)]
struct Streams {
    held: Mutex<Held>,
    /// The total, for publishers that publish only while someone listens; set under
    /// `held`'s lock, so it always agrees with it.
    count: watch::Sender<usize>,
    gauges: StreamGauges,
}

#[derive(Default)]
struct Held {
    logged_in: usize,
    anonymous: usize,
    /// Streams per client that holds any: at most [`MAX_EVENT_STREAMS`] entries.
    per_client: HashMap<Client, usize>,
}

impl Held {
    fn admits(&self, client: &Client) -> Result<(), Refusal> {
        let held_by_client = self.per_client.get(client).copied().unwrap_or(0);
        if held_by_client >= MAX_STREAMS_PER_CLIENT {
            Err(Refusal::ClientAtItsBound)
        } else if self.logged_in + self.anonymous >= MAX_EVENT_STREAMS {
            Err(Refusal::Full)
        } else if !client.logged_in()
            && self.anonymous >= MAX_EVENT_STREAMS - STREAMS_KEPT_FOR_LOGGED_IN
        {
            Err(Refusal::AnonymousShareTaken)
        } else {
            Ok(())
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StreamLabels {
    client: &'static str,
}

/// `event_streams{client}`: the two series, set where the counts change.
struct StreamGauges {
    family: Family<StreamLabels, Gauge>,
    logged_in: Gauge,
    anonymous: Gauge,
}

impl Default for StreamGauges {
    fn default() -> Self {
        let family = Family::<StreamLabels, Gauge>::default();
        let series = |client| family.get_or_create(&StreamLabels { client }).clone();
        let (logged_in, anonymous) = (series("logged_in"), series("anonymous"));
        Self {
            family,
            logged_in,
            anonymous,
        }
    }
}

impl Streams {
    /// Moves `client`'s count by `by` (+1 or -1) and the totals with it.
    fn count(&self, held: &mut Held, client: &Client, by: isize) {
        let (class, gauge) = if client.logged_in() {
            (&mut held.logged_in, &self.gauges.logged_in)
        } else {
            (&mut held.anonymous, &self.gauges.anonymous)
        };
        *class = class.saturating_add_signed(by);
        gauge.set(i64::try_from(*class).unwrap_or(i64::MAX));
        let per_client = held.per_client.entry(client.clone()).or_default();
        *per_client = per_client.saturating_add_signed(by);
        if *per_client == 0 {
            held.per_client.remove(client);
        }
        self.count.send_replace(held.logged_in + held.anonymous);
    }
}

/// One place among the open streams, given back when the stream ends.
struct StreamSlot {
    streams: Arc<Streams>,
    client: Client,
}

impl StreamSlot {
    fn take(streams: &Arc<Streams>, client: Client) -> Result<Self, Refusal> {
        let mut held = streams.held.lock();
        held.admits(&client)?;
        streams.count(&mut held, &client, 1);
        drop(held);
        Ok(Self {
            streams: Arc::clone(streams),
            client,
        })
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut held = self.streams.held.lock();
        self.streams.count(&mut held, &self.client, -1);
    }
}

struct Subscription {
    backlog: VecDeque<Bytes>,
    live: broadcast::Receiver<Arc<Event>>,
    closed: watch::Receiver<bool>,
    _slot: StreamSlot,
}

impl Subscription {
    /// The frames to send: the backlog, then live events and keep-alive comments, until
    /// the client falls too far behind, hangs up, or the hub goes or closes (then with
    /// [`SHUTDOWN_FRAME`] last).
    fn into_stream(
        self,
        hangup: Option<Hangup>,
    ) -> impl Stream<Item = Result<Bytes, actix_web::Error>> {
        stream::unfold(Some((self, hangup)), |state| async move {
            let (mut subscription, mut hangup) = state?;
            if let Some(frame) = subscription.backlog.pop_front() {
                return Some((Ok(frame), Some((subscription, hangup))));
            }
            let hung_up = async {
                match hangup.as_mut() {
                    Some(hangup) => hangup.wait().await,
                    None => std::future::pending().await,
                }
            };
            // An error is the hub gone, which ends the stream through `live` too.
            let closed = subscription.closed.wait_for(|closed| *closed);
            let next = tokio::time::timeout(KEEP_ALIVE, subscription.live.recv());
            // Events published before the hub closed go out before its last frame.
            let next = tokio::select! {
                biased;
                () = hung_up => return None,
                next = next => next,
                Ok(_) = closed => {
                    let last = Bytes::from_static(SHUTDOWN_FRAME.as_bytes());
                    return Some((Ok(last), None));
                }
            };
            let frame = match next {
                Ok(Ok(event)) => event.frame.clone(),
                Ok(Err(broadcast::error::RecvError::Lagged(missed))) => {
                    log::info!("dropping an event stream {missed} events behind");
                    return None;
                }
                Ok(Err(broadcast::error::RecvError::Closed)) => return None,
                Err(_idle) => Bytes::from_static(b": keep-alive\n\n"),
            };
            Some((Ok(frame), Some((subscription, hangup))))
        })
    }
}

pub(crate) fn routes(cfg: &mut impl Mount) {
    cfg.mount("/events", crate::routing::READ, |r| {
        r.route(crate::routing::readable(stream_events))
    });
}

async fn stream_events(
    req: HttpRequest,
    hub: web::Data<EventHub>,
) -> Result<HttpResponse, ApiError> {
    let last_seen = req
        .headers()
        .get("last-event-id")
        .map(|value| {
            value
                .to_str()
                .ok()
                .and_then(|text| text.trim().parse::<u64>().ok())
                .ok_or_else(|| {
                    ApiError::BadRequest("Last-Event-ID must be an event id (a number)".into())
                })
        })
        .transpose()?;
    if let Some(site) = req.headers().get("sec-fetch-site") {
        // A page of another origin, another port of this host included, cannot read a
        // stream (the daemon allows no cross-origin reads), only hold one: the browser
        // says when it sends such a request, and it is refused before it takes a slot.
        if !matches!(site.as_bytes(), b"same-origin" | b"none") {
            return Err(ApiError::Forbidden(
                "cross-origin request refused: event streams are for this daemon's own pages"
                    .into(),
            ));
        }
    }
    let client = Client::of(&req)?;
    if req.method() == Method::HEAD {
        // What a GET would be answered now, without taking anything: a HEAD's answer has
        // no body, so a stream behind it would only hold a slot.
        if let Err(refused) = hub.streams.held.lock().admits(&client) {
            return Ok(refused.response());
        }
        return Ok(stream_response().streaming(stream::empty::<Result<Bytes, ApiError>>()));
    }
    let subscription = match hub.subscribe(client, last_seen) {
        Ok(subscription) => subscription,
        Err(refused) => return Ok(refused.response()),
    };
    hub.recorder_ready().await;
    let hangup = req.conn_data::<Hangup>().cloned();
    Ok(stream_response().streaming(subscription.into_stream(hangup)))
}

/// The head of a stream's answer.
fn stream_response() -> actix_web::HttpResponseBuilder {
    let mut response = HttpResponse::Ok();
    response
        .insert_header((
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        ))
        .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-cache")))
        // nginx buffers responses unless told not to; an event held back is no event.
        .insert_header(("x-accel-buffering", HeaderValue::from_static("no")));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    fn anyone() -> Client {
        Client::Address(IpAddr::V4(Ipv4Addr::LOCALHOST))
    }

    fn frames(subscription: Subscription, count: usize) -> Vec<String> {
        let stream = subscription.into_stream(None);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        runtime.block_on(async {
            stream
                .take(count)
                .map(|frame| String::from_utf8(frame.unwrap().to_vec()).unwrap())
                .collect()
                .await
        })
    }

    #[test]
    fn a_client_resumes_after_its_last_id_and_one_too_far_behind_is_told_to_reread() {
        let hub = EventHub::starting_at(10);
        for n in 0..3 {
            hub.publish("slice_created", &json!({ "slice": format!("s{n}") }));
        }
        let resumed = frames(hub.subscribe(anyone(), Some(10)).unwrap(), 2);
        assert_eq!(
            resumed,
            [
                "id: 11\nevent: slice_created\ndata: {\"slice\":\"s1\"}\n\n",
                "id: 12\nevent: slice_created\ndata: {\"slice\":\"s2\"}\n\n",
            ]
        );
        // Ids from before this hub began, or from the future, cannot be resumed from.
        for stale in [3, 13] {
            let told = frames(hub.subscribe(anyone(), Some(stale)).unwrap(), 1);
            assert!(told[0].starts_with("event: resync\n"), "{stale}: {told:?}");
        }
        for n in 0..RECENT_EVENTS {
            hub.publish("slice_created", &json!({ "n": n }));
        }
        let told = frames(hub.subscribe(anyone(), Some(11)).unwrap(), 1);
        assert!(told[0].starts_with("event: resync\n"), "{told:?}");
    }

    #[test]
    fn a_client_that_saw_an_event_from_before_recording_resumed_is_told_to_reread() {
        let hub = EventHub::starting_at(1);
        hub.publish("slice_created", &json!({ "slice": "a" }));
        hub.recording(false);
        hub.publish("slice_created", &json!({ "slice": "b" }));
        hub.recording(true);
        hub.publish("slice_created", &json!({ "slice": "c" }));
        // Seen 1: what came after it while nothing was recorded may be missing.
        let told = frames(hub.subscribe(anyone(), Some(1)).unwrap(), 1);
        assert!(told[0].starts_with("event: resync\n"), "{told:?}");
        // Seen 2, after which all was recorded: resumes.
        let resumed = frames(hub.subscribe(anyone(), Some(2)).unwrap(), 1);
        assert!(resumed[0].starts_with("id: 3\n"), "{resumed:?}");
        hub.publish_loss("lost some");
        let told = frames(hub.subscribe(anyone(), Some(3)).unwrap(), 1);
        assert!(told[0].starts_with("event: resync\n"), "{told:?}");
    }

    #[test]
    fn closing_the_hub_ends_every_stream_with_the_shutdown_frame_after_what_was_sent() {
        let hub = EventHub::starting_at(1);
        let open = hub.subscribe(anyone(), None).unwrap();
        hub.publish("slice_created", &json!({ "slice": "a" }));
        hub.close();
        // More than the stream ends with: nothing follows the last frame.
        let sent = frames(open, 3);
        assert_eq!(
            sent,
            [
                "id: 1\nevent: slice_created\ndata: {\"slice\":\"a\"}\n\n",
                SHUTDOWN_FRAME
            ]
        );
        // One opened while the daemon stops gets its backlog, then the same last frame.
        let late = frames(hub.subscribe(anyone(), Some(0)).unwrap(), 3);
        assert_eq!(late.last().map(String::as_str), Some(SHUTDOWN_FRAME));
        assert_eq!(late.len(), 2, "{late:?}");
        assert_eq!(*hub.open_streams().borrow(), 0);
    }

    #[test]
    fn a_stream_that_falls_too_far_behind_ends_instead_of_growing() {
        let hub = EventHub::starting_at(1);
        let subscription = hub.subscribe(anyone(), None).unwrap();
        for n in 0..=STREAM_BUFFER {
            hub.publish("slice_created", &json!({ "n": n }));
        }
        let sent = frames(subscription, STREAM_BUFFER + 2);
        assert!(sent.is_empty(), "{} frames", sent.len());
    }

    #[test]
    fn streams_are_bounded_per_client_and_for_clients_without_a_session() {
        let hub = EventHub::starting_at(1);
        let address =
            |n: usize| Client::Address(IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + n as u32)));
        let user = |n: usize| Client::User(format!("user{n}@example.com"));
        let open = |client: Client, count: usize| -> Vec<Subscription> {
            (0..count)
                .map(|_| hub.subscribe(client.clone(), None).unwrap())
                .collect()
        };
        let refusal = |client: Client| hub.subscribe(client, None).err();
        let gauge = |gauge: &Gauge| usize::try_from(gauge.get()).unwrap();

        let mut held = open(user(0), MAX_STREAMS_PER_CLIENT);
        assert_eq!(refusal(user(0)), Some(Refusal::ClientAtItsBound));
        // Clients without a session fill their share, one address after another.
        let share = MAX_EVENT_STREAMS - STREAMS_KEPT_FOR_LOGGED_IN;
        for n in 0..share.div_ceil(MAX_STREAMS_PER_CLIENT) {
            let count = MAX_STREAMS_PER_CLIENT.min(share - n * MAX_STREAMS_PER_CLIENT);
            held.extend(open(address(n), count));
        }
        assert_eq!(refusal(address(9999)), Some(Refusal::AnonymousShareTaken));
        assert_eq!(gauge(&hub.streams.gauges.anonymous), share);
        // The slots kept for logged-in clients are still theirs, up to the total.
        let mut n = 1;
        while *hub.open_streams().borrow() < MAX_EVENT_STREAMS {
            held.push(hub.subscribe(user(n), None).unwrap());
            n += 1;
        }
        assert_eq!(refusal(user(n)), Some(Refusal::Full));
        assert_eq!(refusal(Client::Owner), Some(Refusal::Full));
        assert_eq!(
            gauge(&hub.streams.gauges.logged_in),
            MAX_EVENT_STREAMS - share
        );
        drop(held);
        assert_eq!(*hub.open_streams().borrow(), 0);
        assert!(hub.streams.held.lock().per_client.is_empty());
        assert_eq!(gauge(&hub.streams.gauges.logged_in), 0);
        assert_eq!(gauge(&hub.streams.gauges.anonymous), 0);
        assert!(hub.subscribe(address(0), None).is_ok());
    }

    #[test]
    fn the_document_names_the_bounds_on_streams() {
        let document: serde_json::Value =
            serde_json::from_str(include_str!("../openapi.json")).unwrap();
        let answers = &document["paths"]["/events"]["get"]["responses"];
        let says = |status: &str| answers[status]["description"].as_str().unwrap().to_owned();
        assert!(says("429").contains(&format!("({MAX_STREAMS_PER_CLIENT})")));
        let full = says("503");
        let share = MAX_EVENT_STREAMS - STREAMS_KEPT_FOR_LOGGED_IN;
        assert!(full.contains(&format!("({MAX_EVENT_STREAMS})")), "{full}");
        assert!(full.contains(&format!("({share}:")), "{full}");
        assert!(
            full.contains(&format!("other {STREAMS_KEPT_FOR_LOGGED_IN} ")),
            "{full}"
        );
    }

    #[test]
    fn an_ipv6_client_is_its_64_and_a_mapped_ipv4_one_its_address() {
        use actix_web::test::TestRequest;
        let client = |peer: &str| {
            let req = TestRequest::default()
                .peer_addr(peer.parse().unwrap())
                .to_http_request();
            Client::of(&req).unwrap()
        };
        assert_eq!(
            client("[2001:db8:1:2:3:4:5:6]:4000"),
            client("[2001:db8:1:2:ffff::1]:4001")
        );
        assert_ne!(
            client("[2001:db8:1:2::1]:4000"),
            client("[2001:db8:1:3::1]:4000")
        );
        assert_eq!(
            client("[::ffff:192.0.2.7]:4000"),
            Client::Address("192.0.2.7".parse().unwrap())
        );
    }
}
