//! The pieces of etcd transactions the store writes with: compares that a key exists or
//! not, keys-only reads, puts and cascading deletes, and the one transaction that carries
//! out an apply's plan.

use std::collections::BTreeSet;

use etcd_client::{Compare, CompareOp, DeleteOptions, GetOptions, KeyValue, TxnOp, TxnOpResponse};
use slice_core::{Plan, Step};

use crate::keys::Layout;
use crate::mirror;

/// The most compares, and the most operations, of one transaction: etcd's default
/// `--max-txn-ops`.
pub(crate) const MAX_TXN_OPS: usize = 128;

/// The compares and operations of the one transaction that carries out `plan`, planned
/// against the copy at `revision`: no slice, port or MAC record may have been written
/// since, what the plan deletes must still exist and what it adds must not. `leftovers`
/// are the keys another writer left where the plan writes, read from the copy.
pub(crate) fn for_plan(
    layout: &Layout,
    leftovers: &BTreeSet<Vec<u8>>,
    plan: &Plan,
    revision: i64,
) -> (Vec<Compare>, Vec<TxnOp>) {
    // A key the plan writes that is left over is written over, not checked absent.
    let fresh = |key: &String| !leftovers.contains(key.as_bytes());
    let mut checks: Vec<Compare> = layout
        .slice_records()
        .into_iter()
        .map(|records| Compare::mod_revision(records, CompareOp::Less, revision + 1).with_prefix())
        .collect();
    let mut ops = Vec::new();
    let mut written = BTreeSet::new();
    // The records this transaction creates share its revision; their values number
    // them, so that every copy orders them as the plan does.
    let mut created = 0u32;
    let mut numbered = || {
        created += 1;
        created.to_string()
    };
    for step in &plan.steps {
        match step {
            Step::DeleteSlice { slice } => {
                checks.push(exists(layout.slice(slice)));
                ops.push(delete_under(layout.ports_of(slice)));
                ops.push(delete_under(layout.macs_of_slice(slice)));
                ops.push(TxnOp::delete(layout.slice(slice), None));
            }
            Step::DeletePort { slice, port } => {
                checks.push(exists(layout.port(slice, *port)));
                ops.push(delete_under(layout.macs_of_port(slice, *port)));
                ops.push(TxnOp::delete(layout.port(slice, *port), None));
            }
            Step::DeleteMac { slice, port, mac } => {
                let key = layout.mac(slice, *port, *mac);
                checks.push(exists(key.clone()));
                ops.push(TxnOp::delete(key, None));
            }
            Step::CreateSlice { slice } => {
                checks.push(absent(layout.slice(slice)));
                ops.push(put(layout.slice(slice), numbered()));
            }
            Step::AddPort { slice, port } => {
                let key = layout.port(slice, *port);
                checks.extend(fresh(&key).then(|| absent(key.clone())));
                written.insert(key.clone().into_bytes());
                ops.push(put(key, numbered()));
            }
            Step::AddMac { slice, port, mac } => {
                let key = layout.mac(slice, *port, *mac);
                checks.extend(fresh(&key).then(|| absent(key.clone())));
                written.insert(key.clone().into_bytes());
                ops.push(put(key, numbered()));
            }
        }
    }
    ops.extend(
        leftovers
            .difference(&written)
            .map(|key| TxnOp::delete(key.clone(), None)),
    );
    (checks, ops)
}

pub(crate) fn exists(key: String) -> Compare {
    Compare::version(key, CompareOp::Greater, 0)
}

pub(crate) fn absent(key: String) -> Compare {
    Compare::version(key, CompareOp::Equal, 0)
}

pub(crate) fn get(key: String) -> TxnOp {
    TxnOp::get(key, Some(GetOptions::new().with_keys_only()))
}

pub(crate) fn put(key: String, value: impl Into<Vec<u8>>) -> TxnOp {
    TxnOp::put(key, value, None)
}

pub(crate) fn delete_under(prefix: String) -> TxnOp {
    TxnOp::delete(
        prefix,
        Some(DeleteOptions::new().with_prefix().with_prev_key()),
    )
}

/// The records a delete returned, oldest first.
pub(crate) fn deleted(response: Option<&TxnOpResponse>) -> Vec<KeyValue> {
    let mut kvs = match response {
        Some(TxnOpResponse::Delete(delete)) => delete.prev_kvs().to_vec(),
        _ => Vec::new(),
    };
    kvs.sort_by_key(mirror::place_of_kv);
    kvs
}
