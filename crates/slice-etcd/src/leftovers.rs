//! What another writer of the prefix left under a slice or a port that sliced creates.
//!
//! The copy skips keys that are not the store's and records without their parent
//! (`mirror`), and a parent written by another writer adopts the records already under
//! it. A slice or a port that sliced creates (a POST, the port of a MAC address's add, an
//! apply) starts with nothing but what the write itself puts: its transaction deletes
//! the leftovers under it, so that a user never gets records nobody asked for, and an
//! apply leaves the store equal to the declaration.

use std::collections::BTreeSet;

use etcd_client::{DeleteOptions, TxnOp};
use slice_core::{Plan, Step};

use crate::keys::Layout;
use crate::mirror::Mirror;

/// Deletes every key under `prefix`.
pub(crate) fn clear_under(prefix: String) -> TxnOp {
    TxnOp::delete(prefix, Some(DeleteOptions::new().with_prefix()))
}

/// Deletes every key under `prefix` but `kept`, as the two ranges around it: etcd refuses
/// a transaction that puts a key inside a range it also deletes.
pub(crate) fn clear_around(prefix: &str, kept: &str) -> [TxnOp; 2] {
    let mut end = prefix.as_bytes().to_vec();
    // Every prefix here ends with `/`, so the last byte has room to grow.
    if let Some(last) = end.last_mut() {
        *last = last.saturating_add(1);
    }
    let mut after = kept.as_bytes().to_vec();
    after.push(0);
    [
        TxnOp::delete(prefix, Some(DeleteOptions::new().with_range(kept))),
        TxnOp::delete(after, Some(DeleteOptions::new().with_range(end))),
    ]
}

/// The keys under the slices and ports `plan` creates that do not count in `mirror`.
pub(crate) fn of_plan(mirror: &Mirror, layout: &Layout, plan: &Plan) -> BTreeSet<Vec<u8>> {
    plan.steps
        .iter()
        .flat_map(|step| match step {
            Step::CreateSlice { slice } => mirror.skipped_under(layout, slice, None),
            Step::AddPort { slice, port } => mirror.skipped_under(layout, slice, Some(*port)),
            _ => Vec::new(),
        })
        .collect()
}
