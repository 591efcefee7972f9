//! Writes too large for one sled batch: cut into chunks, made atomic by a journal.
//!
//! sled applies a batch under one epoch guard, and each insert copies the leaf node it
//! lands in; the copies it replaces are freed only once the guard goes. One batch of a
//! declared state of 400,000 slices therefore held 3.5 GiB of dead nodes until it ended,
//! and the allocator kept most of them. So a round whose records do not fit in one
//! [`ONE_BATCH_MAX`] batch is written as batches of [`CHUNK_RECORDS`], each freeing its
//! garbage.
//!
//! Chunks are not atomic together, and sled writes any of them out in the background, so
//! such a round first makes durable one journal record that holds all its records, then
//! writes the chunks, makes them durable, and only then removes the journal. A store
//! that opens with a journal record writes the records again ([`replay`]) before it
//! reads anything: the round was never answered, and it ends complete, as if it had been
//! written whole before the stop. Replaying is safe however far the round got, since
//! every record is a final value.
//!
//! The journal lives in a tree of its own: in the slices' tree, the node holding it (the
//! first, with the meta records) was written out again, megabytes each time, whenever a
//! removal merged a neighbour into it. It costs one more write of the round's records
//! and two more fdatasyncs, only for rounds of more than a chunk (declared states,
//! deletes of very large slices).

use sled::IVec;

use crate::keys::Key;
use crate::{corrupt, Error};

/// The most records a round writes as one batch, without the journal: every round of
/// single writes (a group commit takes at most 1,024 jobs of at most 4 records), and a
/// small declared state. About 14 MiB of dead nodes at the most.
pub(crate) const ONE_BATCH_MAX: usize = 4096;

/// The records of each chunk of a larger round. Smaller chunks leave less garbage behind
/// each batch and so less scattered memory after the round: measured on 100,000 slices
/// in and out, chunks of 8,192 records peaked at 3 GiB, of 1,024 at 367 MiB and held
/// 170 MiB after the round, of 256 at 147 MiB and held 100 MiB, as much as a restart on
/// the same data (73 MiB) plus the model's own growth; 64 were no better.
pub(crate) const CHUNK_RECORDS: usize = 256;

/// The sled tree of the journal.
pub(crate) const TREE: &str = "journal";

/// The key of the journal's one record.
const JOURNAL: &[u8] = b"round";

/// The records of a round, in the order they were planned: a value to set, or `None` to
/// remove the key.
#[derive(Default)]
pub(crate) struct Records {
    ops: Vec<(IVec, Option<IVec>)>,
}

impl Records {
    pub(crate) fn insert(&mut self, key: Key, value: &[u8]) {
        self.ops
            .push((IVec::from(key.as_ref()), Some(IVec::from(value))));
    }

    pub(crate) fn remove(&mut self, key: Key) {
        self.ops.push((IVec::from(key.as_ref()), None));
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// The records as batches of at most [`CHUNK_RECORDS`]; within one, a later record
    /// of a key wins, as it does across them. A round of at most [`ONE_BATCH_MAX`] is
    /// one batch.
    fn into_batches(self) -> impl Iterator<Item = sled::Batch> {
        let size = if self.ops.len() <= ONE_BATCH_MAX {
            ONE_BATCH_MAX
        } else {
            CHUNK_RECORDS
        };
        let mut ops = self.ops.into_iter().peekable();
        std::iter::from_fn(move || {
            ops.peek()?;
            let mut batch = sled::Batch::default();
            for (key, value) in ops.by_ref().take(size) {
                match value {
                    Some(value) => batch.insert(key, value),
                    None => batch.remove(key),
                }
            }
            Some(batch)
        })
    }

    /// The journal's encoding: per record a flag byte (1 set, 0 remove), the key's
    /// length (u32, big-endian) and the key, then for a set the value's length and value.
    fn encode(&self) -> Vec<u8> {
        let size = self
            .ops
            .iter()
            .map(|(key, value)| 9 + key.len() + value.as_ref().map_or(0, |value| value.len()))
            .sum();
        let mut bytes = Vec::with_capacity(size);
        for (key, value) in &self.ops {
            bytes.push(u8::from(value.is_some()));
            put_bytes(&mut bytes, key);
            if let Some(value) = value {
                put_bytes(&mut bytes, value);
            }
        }
        bytes
    }

    fn decode(mut bytes: &[u8]) -> Result<Self, Error> {
        let mut ops = Vec::new();
        while let Some((&flag, rest)) = bytes.split_first() {
            bytes = rest;
            let key = take_bytes(&mut bytes)?;
            let value = match flag {
                1 => Some(take_bytes(&mut bytes)?),
                0 => None,
                _ => return Err(corrupt("journal record")),
            };
            ops.push((key, value));
        }
        Ok(Self { ops })
    }
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    // A key or value over 4 GiB cannot be built here: keys are at most 65 bytes, values
    // a slice name or a few numbers.
    let len = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(bytes);
}

fn take_bytes(bytes: &mut &[u8]) -> Result<IVec, Error> {
    let (len, rest) = bytes
        .split_first_chunk::<4>()
        .ok_or_else(|| corrupt("journal length"))?;
    let len = usize::try_from(u32::from_be_bytes(*len)).map_err(|_| corrupt("journal length"))?;
    if rest.len() < len {
        return Err(corrupt("journal record"));
    }
    let (value, rest) = rest.split_at(len);
    *bytes = rest;
    Ok(IVec::from(value))
}

/// Writes `records` into `tree`: as one batch when they fit in one, else behind a
/// record in `journal` made durable first with `sync` (see the module documentation).
/// `chunk_done` is told of each chunk written, and may stop the write there (tests stand
/// in a crash with it). Durability of the whole is the caller's next sync.
pub(crate) fn write(
    tree: &sled::Tree,
    journal: &sled::Tree,
    records: Records,
    sync: impl Fn() -> Result<(), Error>,
    mut chunk_done: impl FnMut() -> Result<(), Error>,
) -> Result<(), Error> {
    if records.ops.len() <= ONE_BATCH_MAX {
        return match records.into_batches().next() {
            Some(batch) => Ok(tree.apply_batch(batch)?),
            None => Ok(()),
        };
    }
    journal.insert(JOURNAL, records.encode())?;
    sync()?;
    write_chunks(tree, journal, records, sync, &mut chunk_done)
}

fn write_chunks(
    tree: &sled::Tree,
    journal: &sled::Tree,
    records: Records,
    sync: impl Fn() -> Result<(), Error>,
    chunk_done: &mut impl FnMut() -> Result<(), Error>,
) -> Result<(), Error> {
    for batch in records.into_batches() {
        tree.apply_batch(batch)?;
        chunk_done()?;
    }
    sync()?;
    journal.remove(JOURNAL)?;
    Ok(())
}

/// Finishes the round a record in `journal` describes, if there is one, and makes it
/// durable with `sync`; says whether there was one.
pub(crate) fn replay(
    tree: &sled::Tree,
    journal: &sled::Tree,
    sync: impl Fn() -> Result<(), Error>,
) -> Result<bool, Error> {
    let Some(record) = journal.get(JOURNAL)? else {
        return Ok(false);
    };
    let records = Records::decode(&record)?;
    drop(record);
    write_chunks(tree, journal, records, &sync, &mut || Ok(()))?;
    sync()?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Tag;

    /// A database with a tree of records and a journal.
    struct Trees {
        _dir: tempfile::TempDir,
        _db: sled::Db,
        tree: sled::Tree,
        journal: sled::Tree,
    }

    fn trees() -> Trees {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::Config::new().path(dir.path()).open().unwrap();
        Trees {
            tree: db.open_tree("t").unwrap(),
            journal: db.open_tree(TREE).unwrap(),
            _db: db,
            _dir: dir,
        }
    }

    fn records(count: u64, remove_every: u64) -> Records {
        let mut records = Records::default();
        for id in 0..count {
            records.insert(Key::tag(Tag::SliceOrder).id(id), &id.to_be_bytes());
            if id % remove_every == 0 {
                records.remove(Key::tag(Tag::SliceOrder).id(id));
            }
        }
        records
    }

    fn contents(tree: &sled::Tree) -> Vec<(IVec, IVec)> {
        tree.iter().map(Result::unwrap).collect()
    }

    #[test]
    fn the_journal_encoding_reads_back_and_refuses_a_cut_one() {
        let original = records(100, 7);
        let bytes = original.encode();
        let read = Records::decode(&bytes).unwrap();
        assert_eq!(read.ops, original.ops);
        for cut in [1, 5, bytes.len() - 1] {
            assert!(Records::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad_flag = bytes.clone();
        bad_flag[0] = 2;
        assert!(Records::decode(&bad_flag).is_err());
    }

    #[test]
    fn a_chunked_write_ends_as_one_batch_would_and_leaves_no_journal() {
        let count = 2 * ONE_BATCH_MAX as u64;
        let chunked = trees();
        let mut chunks = 0;
        let write_counting = || {
            chunks += 1;
            Ok(())
        };
        write(
            &chunked.tree,
            &chunked.journal,
            records(count, 5),
            || Ok(()),
            write_counting,
        )
        .unwrap();
        assert!(chunks > 1, "{chunks} chunks");
        let whole = trees();
        let mut batch = sled::Batch::default();
        for (key, value) in records(count, 5).ops {
            match value {
                Some(value) => batch.insert(key, value),
                None => batch.remove(key),
            }
        }
        whole.tree.apply_batch(batch).unwrap();
        assert_eq!(contents(&chunked.tree), contents(&whole.tree));
        assert!(chunked.journal.is_empty());
        assert!(!replay(&chunked.tree, &chunked.journal, || Ok(())).unwrap());
    }

    #[test]
    fn a_write_stopped_after_its_first_chunk_is_finished_by_replay() {
        let count = 2 * ONE_BATCH_MAX as u64;
        let expected = trees();
        write(
            &expected.tree,
            &expected.journal,
            records(count, 5),
            || Ok(()),
            || Ok(()),
        )
        .unwrap();

        let stopped = trees();
        let mut chunks = 0;
        let crash_after_one = || {
            chunks += 1;
            match chunks {
                1 => Ok(()),
                _ => Err(Error::Corrupt("stopped here".into())),
            }
        };
        let crash = write(
            &stopped.tree,
            &stopped.journal,
            records(count, 5),
            || Ok(()),
            crash_after_one,
        );
        assert!(crash.is_err());
        assert_ne!(contents(&stopped.tree), contents(&expected.tree));
        assert!(replay(&stopped.tree, &stopped.journal, || Ok(())).unwrap());
        assert_eq!(contents(&stopped.tree), contents(&expected.tree));
        assert!(stopped.journal.is_empty());
    }

    #[test]
    fn a_small_write_is_one_batch_without_a_journal() {
        let small = trees();
        let mut chunks = 0;
        let synced = std::cell::Cell::new(0);
        write(
            &small.tree,
            &small.journal,
            records(ONE_BATCH_MAX as u64 / 2, 3),
            || {
                synced.set(synced.get() + 1);
                Ok(())
            },
            || {
                chunks += 1;
                Ok(())
            },
        )
        .unwrap();
        assert_eq!((chunks, synced.get()), (0, 0));
        assert!(!contents(&small.tree).is_empty());
    }
}
