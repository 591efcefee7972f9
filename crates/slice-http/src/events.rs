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
//! Ids only grow, also across restarts: a hub starts counting at the time it was made,
//! in microseconds since the epoch, so a client holding an id from an earlier run is
//! behind every id of this one and is told to re-read.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use actix_web::http::header::{self, HeaderValue};
use actix_web::web::{self, Bytes};
use actix_web::{HttpRequest, HttpResponse};
use futures_util::stream::{self, Stream};
use parking_lot::Mutex;
use serde_json::json;
use slice_core::Change;
use tokio::sync::{broadcast, watch};

use crate::error::ApiError;
use crate::mount::Mount;

/// How many past events a client can resume from.
pub const RECENT_EVENTS: usize = 4096;

/// How far a stream may fall behind the newest event before it is dropped.
pub const STREAM_BUFFER: usize = 1024;

/// The most event streams open at once; more are refused with 503.
pub const MAX_EVENT_STREAMS: usize = 256;

/// The longest a new stream waits for the network's changes to be followed.
const RECORDER_WAIT: Duration = Duration::from_secs(1);

/// How often an idle stream gets a comment line, so that proxies keep it open and a
/// client that went away is noticed.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

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
    /// How many streams are open, for the bound and for publishers that only publish
    /// while someone listens.
    open_streams: Arc<watch::Sender<usize>>,
    /// Whether such a publisher exists, and whether it is recording now: a new stream
    /// starts only once it is, so that nothing the client does after the stream opened
    /// goes unreported.
    recorder: watch::Sender<Option<bool>>,
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
            open_streams: Arc::new(watch::Sender::new(0)),
            recorder: watch::Sender::new(None),
        }
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
        };
        self.publish(kind, &data);
    }

    /// The id the next event will get.
    pub fn next_id(&self) -> u64 {
        self.recent.lock().next_id
    }

    /// The number of open streams, now and as it changes.
    pub fn open_streams(&self) -> watch::Receiver<usize> {
        self.open_streams.subscribe()
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

    /// A stream of the events after `last_seen` (all new ones without it), or None when
    /// [`MAX_EVENT_STREAMS`] are open.
    fn subscribe(&self, last_seen: Option<u64>) -> Option<Subscription> {
        let slot = StreamSlot::take(&self.open_streams)?;
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
        Some(Subscription {
            backlog,
            live,
            _slot: slot,
        })
    }
}

/// One place among the open streams, given back when the stream ends.
struct StreamSlot(Arc<watch::Sender<usize>>);

impl StreamSlot {
    fn take(open: &Arc<watch::Sender<usize>>) -> Option<Self> {
        let taken = open.send_if_modified(|count| {
            let room = *count < MAX_EVENT_STREAMS;
            if room {
                *count += 1;
            }
            room
        });
        taken.then(|| Self(Arc::clone(open)))
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.0.send_modify(|count| *count = count.saturating_sub(1));
    }
}

struct Subscription {
    backlog: VecDeque<Bytes>,
    live: broadcast::Receiver<Arc<Event>>,
    _slot: StreamSlot,
}

impl Subscription {
    /// The frames to send: the backlog, then live events and keep-alive comments, until
    /// the client falls too far behind or the hub goes.
    fn into_stream(self) -> impl Stream<Item = Result<Bytes, actix_web::Error>> {
        stream::unfold(self, |mut subscription| async move {
            if let Some(frame) = subscription.backlog.pop_front() {
                return Some((Ok(frame), subscription));
            }
            let next = tokio::time::timeout(KEEP_ALIVE, subscription.live.recv()).await;
            let frame = match next {
                Ok(Ok(event)) => event.frame.clone(),
                Ok(Err(broadcast::error::RecvError::Lagged(missed))) => {
                    log::info!("dropping an event stream {missed} events behind");
                    return None;
                }
                Ok(Err(broadcast::error::RecvError::Closed)) => return None,
                Err(_idle) => Bytes::from_static(b": keep-alive\n\n"),
            };
            Some((Ok(frame), subscription))
        })
    }
}

pub(crate) fn routes(cfg: &mut impl Mount) {
    cfg.mount("/events", "GET, HEAD", |r| {
        r.route(crate::slices::readable(stream_events))
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
    let subscription = hub.subscribe(last_seen).ok_or_else(|| {
        ApiError::Unavailable(format!(
            "{MAX_EVENT_STREAMS} event streams are open, the most this daemon serves; try again later"
        ))
    })?;
    hub.recorder_ready().await;
    Ok(HttpResponse::Ok()
        .insert_header((
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        ))
        .insert_header((header::CACHE_CONTROL, HeaderValue::from_static("no-cache")))
        // nginx buffers responses unless told not to; an event held back is no event.
        .insert_header(("x-accel-buffering", HeaderValue::from_static("no")))
        .streaming(subscription.into_stream()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    fn frames(subscription: Subscription, count: usize) -> Vec<String> {
        let stream = subscription.into_stream();
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
        let resumed = frames(hub.subscribe(Some(10)).unwrap(), 2);
        assert_eq!(
            resumed,
            [
                "id: 11\nevent: slice_created\ndata: {\"slice\":\"s1\"}\n\n",
                "id: 12\nevent: slice_created\ndata: {\"slice\":\"s2\"}\n\n",
            ]
        );
        // Ids from before this hub began, or from the future, cannot be resumed from.
        for stale in [3, 13] {
            let told = frames(hub.subscribe(Some(stale)).unwrap(), 1);
            assert!(told[0].starts_with("event: resync\n"), "{stale}: {told:?}");
        }
        for n in 0..RECENT_EVENTS {
            hub.publish("slice_created", &json!({ "n": n }));
        }
        let told = frames(hub.subscribe(Some(11)).unwrap(), 1);
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
        let told = frames(hub.subscribe(Some(1)).unwrap(), 1);
        assert!(told[0].starts_with("event: resync\n"), "{told:?}");
        // Seen 2, after which all was recorded: resumes.
        let resumed = frames(hub.subscribe(Some(2)).unwrap(), 1);
        assert!(resumed[0].starts_with("id: 3\n"), "{resumed:?}");
        hub.publish_loss("lost some");
        let told = frames(hub.subscribe(Some(3)).unwrap(), 1);
        assert!(told[0].starts_with("event: resync\n"), "{told:?}");
    }

    #[test]
    fn a_stream_that_falls_too_far_behind_ends_instead_of_growing() {
        let hub = EventHub::starting_at(1);
        let subscription = hub.subscribe(None).unwrap();
        for n in 0..=STREAM_BUFFER {
            hub.publish("slice_created", &json!({ "n": n }));
        }
        let sent = frames(subscription, STREAM_BUFFER + 2);
        assert!(sent.is_empty(), "{} frames", sent.len());
    }

    #[test]
    fn streams_are_bounded_and_a_closed_one_frees_its_place() {
        let hub = EventHub::starting_at(1);
        let open: Vec<Subscription> = (0..MAX_EVENT_STREAMS)
            .map(|_| hub.subscribe(None).unwrap())
            .collect();
        assert!(hub.subscribe(None).is_none());
        assert_eq!(*hub.open_streams().borrow(), MAX_EVENT_STREAMS);
        drop(open);
        assert_eq!(*hub.open_streams().borrow(), 0);
        assert!(hub.subscribe(None).is_some());
    }
}
