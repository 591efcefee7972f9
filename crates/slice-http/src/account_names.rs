//! The account names of the local socket's peers, looked up once per user id.
//!
//! A lookup goes through NSS, which may ask a directory over the network and hang there;
//! it runs on tokio's blocking pool, which the daemon's other blocking work shares, and a
//! lookup that outlives its wait cannot be cancelled. So each user id is looked up at most
//! once at a time (later connections wait on the lookup under way), a name found is
//! reused for [`NAME_TTL`], and at most [`CAPACITY`] user ids are kept: a hung NSS holds at
//! most that many threads, however many connections arrive. Local peers are a handful of
//! accounts, so the bound is never reached in use.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::watch;

/// How many user ids are kept, found or being looked up.
pub(crate) const CAPACITY: usize = 64;

/// How long a name found is used before it is looked up again: an account renamed or
/// removed is seen within this.
const NAME_TTL: Duration = Duration::from_secs(300);

/// A user id's account name; `Ok(None)` for an id without an account.
type Lookup = dyn Fn(u32) -> Result<Option<String>, String> + Send + Sync;

/// What a lookup found, once it has: `Some(name)`, where `name` is `None` for an id whose
/// account is unknown (none, or the lookup failed).
type Found = Option<Option<String>>;

enum Entry {
    /// A lookup is under way; its result comes on this channel.
    Pending(watch::Receiver<Found>),
    Known {
        name: Option<String>,
        at: Instant,
    },
}

pub(crate) struct AccountNames {
    entries: Arc<Mutex<HashMap<u32, Entry>>>,
    lookup: Arc<Lookup>,
}

impl AccountNames {
    /// Names from the system's account database.
    pub(crate) fn system() -> Self {
        Self::with_lookup(|uid| {
            nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
                .map(|account| account.map(|account| account.name))
                .map_err(|err| err.to_string())
        })
    }

    fn with_lookup(
        lookup: impl Fn(u32) -> Result<Option<String>, String> + Send + Sync + 'static,
    ) -> Self {
        Self {
            entries: Arc::default(),
            lookup: Arc::new(lookup),
        }
    }

    /// The account name of `uid`, waiting at most `wait` for a lookup; `None` when it has
    /// none, or it is not known in time.
    pub(crate) async fn name(&self, uid: u32, wait: Duration) -> Option<String> {
        let mut found = match self.known_or_pending(uid) {
            Ok(name) => return name,
            Err(found) => found,
        };
        let waited = tokio::time::timeout(wait, found.wait_for(Option::is_some)).await;
        match waited {
            Ok(Ok(name)) => name.clone().flatten(),
            // The lookup ended without a word: it has logged why.
            Ok(Err(_)) => None,
            Err(_) => {
                log::warn!("no account name for user id {uid} within {wait:?}");
                None
            }
        }
    }

    /// The name kept for `uid`, or the channel of the lookup under way for it (started
    /// here when there is none). A new id finds room by dropping the oldest name found;
    /// with every place taken by a lookup under way, it is named by its id at once.
    fn known_or_pending(&self, uid: u32) -> Result<Option<String>, watch::Receiver<Found>> {
        let mut entries = self.entries.lock();
        match entries.get(&uid) {
            Some(Entry::Known { name, at }) if at.elapsed() < NAME_TTL => return Ok(name.clone()),
            Some(Entry::Pending(found)) => return Err(found.clone()),
            Some(Entry::Known { .. }) => {}
            None if entries.len() < CAPACITY => {}
            None => {
                let oldest = entries
                    .iter()
                    .filter_map(|(uid, entry)| match entry {
                        Entry::Known { at, .. } => Some((*uid, *at)),
                        Entry::Pending(_) => None,
                    })
                    .min_by_key(|(_, at)| *at);
                let Some((oldest, _)) = oldest else {
                    log::warn!(
                        "{CAPACITY} account name lookups are under way; user id {uid} is \
                         named by its id"
                    );
                    return Ok(None);
                };
                entries.remove(&oldest);
            }
        }
        let (tell, found) = watch::channel(None);
        entries.insert(uid, Entry::Pending(found.clone()));
        drop(entries);
        let entries = Arc::clone(&self.entries);
        let lookup = Arc::clone(&self.lookup);
        // Not awaited: the callers wait on the channel, each as long as it may.
        drop(tokio::task::spawn_blocking(move || {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| lookup(uid)))
                .unwrap_or_else(|_| Err("the lookup panicked".to_owned()));
            let name = {
                let mut entries = entries.lock();
                match result {
                    Ok(name) => {
                        let at = Instant::now();
                        entries.insert(
                            uid,
                            Entry::Known {
                                name: name.clone(),
                                at,
                            },
                        );
                        name
                    }
                    Err(err) => {
                        // Not kept: the next connection of this id tries again.
                        entries.remove(&uid);
                        log::warn!("cannot look up the account of user id {uid}: {err}");
                        None
                    }
                }
            };
            tell.send_replace(Some(name));
        }));
        Err(found)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Long enough never to run out in a test that expects a name.
    const PATIENT: Duration = Duration::from_secs(60);

    fn counting(
        lookup: impl Fn(u32) -> Result<Option<String>, String> + Send + Sync + 'static,
    ) -> (AccountNames, Arc<AtomicUsize>) {
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&calls);
        let names = AccountNames::with_lookup(move |uid| {
            counted.fetch_add(1, Ordering::SeqCst);
            lookup(uid)
        });
        (names, calls)
    }

    #[tokio::test]
    async fn each_user_id_is_looked_up_once_and_its_name_reused() {
        let (names, calls) = counting(|uid| Ok((uid != 7).then(|| format!("user{uid}"))));
        for _ in 0..3 {
            assert_eq!(names.name(1000, PATIENT).await.as_deref(), Some("user1000"));
            assert_eq!(names.name(7, PATIENT).await, None);
        }
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_hung_lookup_is_waited_on_by_every_connection_not_started_again() {
        let (release, hold) = std::sync::mpsc::channel::<()>();
        let hold = std::sync::Mutex::new(hold);
        let (names, calls) = counting(move |_| {
            hold.lock().unwrap().recv().ok();
            Ok(Some("late".to_owned()))
        });
        for _ in 0..5 {
            assert_eq!(names.name(1000, Duration::from_millis(10)).await, None);
        }
        release.send(()).unwrap();
        assert_eq!(names.name(1000, PATIENT).await.as_deref(), Some("late"));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn the_ids_kept_are_bounded_and_hung_lookups_start_no_more_threads() {
        let (names, calls) = counting(|uid| Ok(Some(format!("user{uid}"))));
        for uid in 0..(CAPACITY as u32 * 2) {
            assert_eq!(names.name(uid, PATIENT).await, Some(format!("user{uid}")));
            assert!(names.len() <= CAPACITY);
        }
        // Every place taken by a lookup that never ends: a new id costs no thread.
        let (_never, hold) = std::sync::mpsc::channel::<()>();
        let hold = std::sync::Mutex::new(hold);
        let (hung, hung_calls) = counting(move |_| {
            hold.lock().unwrap().recv().ok();
            Ok(None)
        });
        for uid in 0..=(CAPACITY as u32) {
            assert_eq!(hung.name(uid, Duration::from_millis(1)).await, None);
        }
        assert_eq!(hung.len(), CAPACITY);
        // The threads count their lookup once they run; one more would be a bug.
        let started = Instant::now();
        while hung_calls.load(Ordering::SeqCst) < CAPACITY && started.elapsed() < PATIENT {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(hung_calls.load(Ordering::SeqCst), CAPACITY);
        assert_eq!(calls.load(Ordering::SeqCst), CAPACITY * 2);
    }
}
