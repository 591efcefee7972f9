//! The fabric the operator declared through the store (slice-core's `FabricDeclarations`),
//! kept whole at the one key `fabric` (see `keys`) as `DeclaredFabric::to_text` writes it.
//!
//! The copy holds the declaration in force ([`FabricInForce`]). A value that is not a
//! declaration is never read in part: it is `DeclaredFabric::unreadable`, which allows no
//! new link (failing closed, where none would let links be discovered again), and is
//! skipped like any record sliced would not write. A fresh instance reading it has
//! nothing older to fall back on, so every instance, whenever it started, agrees. A
//! fabric change is told to the listeners but is no slice content: `content_version`
//! does not move.

use etcd_client::TxnOp;
use slice_core::{Change, DeclaredFabric};

use crate::keys::Layout;
use crate::txn::put;

/// The declaration in force in the copy, and what it was before the revision being
/// applied changed it, until that is told.
#[derive(Default)]
pub(crate) struct FabricInForce {
    current: DeclaredFabric,
    /// The declaration before the first change of the revision being applied; `None`
    /// while the revision has not touched the key.
    before: Option<DeclaredFabric>,
}

impl FabricInForce {
    /// The declaration in force.
    pub(crate) fn get(&self) -> &DeclaredFabric {
        &self.current
    }

    /// Makes `fabric` the declaration in force, to be told by [`FabricInForce::told`].
    pub(crate) fn set(&mut self, fabric: DeclaredFabric) {
        let replaced = std::mem::replace(&mut self.current, fabric);
        self.before.get_or_insert(replaced);
    }

    /// What the listeners are told of the writes since the last call: the declaration now
    /// in force when it differs from the one before, so that the same declaration written
    /// again, or an unreadable one over none, tells nobody.
    pub(crate) fn told(&mut self) -> Option<Change> {
        let before = self.before.take()?;
        (before != self.current).then(|| Change::FabricDeclared(self.current.clone()))
    }
}

/// The declaration a value of the `fabric` key holds (an empty value holds none), or why
/// it holds none, for the warning.
pub(crate) fn decode(value: &[u8]) -> Result<DeclaredFabric, String> {
    let text = std::str::from_utf8(value)
        .map_err(|_| "its value is not a fabric declaration: not UTF-8 text".to_owned())?;
    DeclaredFabric::from_text(text)
        .map_err(|err| format!("its value is not a fabric declaration: {err}"))
}

/// The one operation that makes `fabric` the declaration in force. An empty declaration
/// deletes the key rather than putting an empty value, so that a store whose declaration
/// ended looks like one that never had any. Either is the same when applied twice.
pub(crate) fn write(layout: &Layout, fabric: &DeclaredFabric) -> TxnOp {
    if fabric.is_declared() {
        put(layout.fabric(), fabric.to_text())
    } else {
        TxnOp::delete(layout.fabric(), None)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use slice_core::SliceName;

    use super::*;
    use crate::mirror::tests::{copy_with_values as copy_of, write};
    use crate::mirror::{Entry, Mirror};

    const FABRIC: &str = "/sliced/fabric";

    fn fabric(lines: &[&str]) -> DeclaredFabric {
        DeclaredFabric::parse(lines).unwrap()
    }

    fn taken(heard: &Arc<Mutex<Vec<Change>>>) -> Vec<Change> {
        std::mem::take(&mut *heard.lock().unwrap())
    }

    #[test]
    fn a_declaration_is_told_once_when_it_changes_and_moves_no_content_version() {
        let one = fabric(&["0x1:10-0x2:10", "0x3:1"]);
        let (mut mirror, heard) = copy_of(&[(FABRIC, &one.to_text())]);
        assert_eq!(*mirror.fabric.get(), one);
        assert_eq!(taken(&heard), [], "a snapshot read tells nothing itself");
        let version = mirror.content_version;
        write(&mut mirror, 101, &[(FABRIC, Some(&one.to_text()))]);
        assert_eq!(taken(&heard), [], "the same declaration again");
        let two = fabric(&["0x1:11-0x2:11"]);
        write(&mut mirror, 102, &[(FABRIC, Some(&two.to_text()))]);
        assert_eq!(taken(&heard), [Change::FabricDeclared(two.clone())]);
        assert_eq!(*mirror.fabric.get(), two);
        write(&mut mirror, 103, &[(FABRIC, None)]);
        assert_eq!(
            taken(&heard),
            [Change::FabricDeclared(DeclaredFabric::default())]
        );
        // An empty value is no declaration either: nothing changed.
        write(&mut mirror, 104, &[(FABRIC, Some(""))]);
        assert_eq!(taken(&heard), []);
        assert_eq!(mirror.content_version, version, "no slice changed");
        assert_eq!(mirror.skipped_keys(), 0);
    }

    #[test]
    fn a_fabric_change_is_told_after_the_slice_changes_of_its_revision() {
        let (mut mirror, heard) = copy_of(&[]);
        let one = fabric(&["0x3:1"]);
        write(
            &mut mirror,
            101,
            &[(FABRIC, Some(&one.to_text())), ("/sliced/s/a", Some(""))],
        );
        let a: SliceName = "a".parse().unwrap();
        assert_eq!(
            taken(&heard),
            [Change::SliceCreated(a), Change::FabricDeclared(one)]
        );
    }

    #[test]
    fn an_unreadable_declaration_allows_no_link_and_is_skipped_until_replaced() {
        let one = fabric(&["0x1:10-0x2:10"]);
        let (mut mirror, heard) = copy_of(&[(FABRIC, &one.to_text())]);
        // A valid line before a bad one: none of it is read.
        write(
            &mut mirror,
            101,
            &[(FABRIC, Some("0x1:10-0x2:10\nnot a port\n"))],
        );
        assert_eq!(*mirror.fabric.get(), DeclaredFabric::unreadable());
        assert_eq!(
            taken(&heard),
            [Change::FabricDeclared(DeclaredFabric::unreadable())]
        );
        assert_eq!(mirror.skipped_keys(), 1);
        // Unreadable over unreadable: nothing changes.
        write(&mut mirror, 102, &[(FABRIC, Some("\u{0}\u{ff}"))]);
        write(&mut mirror, 103, &[(FABRIC, Some("0x1:1\n0x1:1-0x2:1\n"))]);
        assert_eq!(taken(&heard), []);
        assert_eq!(mirror.skipped_keys(), 1);
        write(&mut mirror, 104, &[(FABRIC, Some(&one.to_text()))]);
        assert_eq!(taken(&heard), [Change::FabricDeclared(one)]);
        assert_eq!(mirror.skipped_keys(), 0);
        // Deleted while unreadable: no longer skipped.
        write(&mut mirror, 105, &[(FABRIC, Some("x"))]);
        write(&mut mirror, 106, &[(FABRIC, None)]);
        assert_eq!(mirror.skipped_keys(), 0);

        let invalid_utf8 = Entry {
            key: FABRIC.as_bytes(),
            value: b"0x1:1\n\xff",
            create_revision: 1,
        };
        let read = Mirror::from_entries(&Layout::new("/sliced/"), 100, [invalid_utf8].into_iter());
        assert_eq!(*read.fabric.get(), DeclaredFabric::unreadable());
        assert_eq!(read.skipped_keys(), 1);
    }

    #[test]
    fn a_resynchronisation_tells_a_changed_declaration_once() {
        let (one, two) = (fabric(&["0x3:1"]), fabric(&["0x4:1"]));
        let (mut mirror, heard) = copy_of(&[(FABRIC, &one.to_text())]);
        let (same, _) = copy_of(&[(FABRIC, &one.to_text())]);
        mirror.resynchronise(same);
        assert_eq!(taken(&heard), []);
        let (fresh, _) = copy_of(&[(FABRIC, &two.to_text()), ("/sliced/s/b", "")]);
        mirror.resynchronise(fresh);
        let b: SliceName = "b".parse().unwrap();
        assert_eq!(
            taken(&heard),
            [Change::SliceCreated(b), Change::FabricDeclared(two.clone())]
        );
        assert_eq!(*mirror.fabric.get(), two);
        // The resynchronised copy goes on telling revisions as before.
        write(&mut mirror, 101, &[(FABRIC, Some(&one.to_text()))]);
        assert_eq!(taken(&heard), [Change::FabricDeclared(one)]);
    }
}
