//! The operations every command is written against, whoever holds the database: this
//! process ([`Direct`]) or a running daemon ([`crate::daemon::DaemonClient`]).
//!
//! [`SliceDatabase`] is narrower than slice-core's `SliceStore`, which `Direct` wraps: the
//! daemon's REST API offers no change stream and no session revocations, and its
//! refusals and protocol failures are errors of their own that a `StoreError` cannot
//! carry without losing what they say. So the commands are written against the
//! operations both modes have, with the tool's error.

use slice_core::{
    MacAddress, Plan, Port, PortId, Slice, SliceError, SliceName, SliceStore, StoreError, Write,
    Written,
};

use crate::audit::Trail;
use crate::CliError;

/// Reads and writes of the slice database. Every write is durable when it returns and
/// changes nothing when it fails.
pub(crate) trait SliceDatabase {
    fn slices(&self) -> Result<Vec<SliceName>, CliError>;
    fn ports(&self, slice: &SliceName) -> Result<Vec<PortId>, CliError>;
    fn macs(&self, slice: &SliceName, port: PortId) -> Result<Vec<MacAddress>, CliError>;

    fn create_slice(&self, slice: &SliceName) -> Result<(), CliError>;
    fn delete_slice(&self, slice: &SliceName) -> Result<(), CliError>;
    fn add_port(&self, slice: &SliceName, port: PortId) -> Result<(), CliError>;
    fn delete_port(&self, slice: &SliceName, port: PortId) -> Result<(), CliError>;
    /// Adds the port to the slice first when it is not there.
    fn add_mac(&self, slice: &SliceName, port: PortId, mac: MacAddress) -> Result<(), CliError>;
    fn delete_mac(&self, slice: &SliceName, port: PortId, mac: MacAddress) -> Result<(), CliError>;

    /// Makes the slices equal to `declared` in one atomic write (only plans, on a dry
    /// run) and returns the plan.
    fn apply(&self, declared: &[Slice], dry_run: bool) -> Result<Plan, CliError>;

    /// Every slice with its ports and their MAC addresses, in order.
    ///
    /// Built from the three reads, one per slice and one per port. Those are separate
    /// requests, so a slice or port deleted by someone else while this runs is left out
    /// rather than failing the whole listing: every entry shown existed when it was read.
    fn tree(&self) -> Result<Vec<Slice>, CliError> {
        let mut tree = Vec::new();
        'slices: for name in self.slices()? {
            let ports = match self.ports(&name) {
                Err(CliError::Slice(SliceError::SliceNotFound(_))) => continue,
                other => other?,
            };
            let mut slice = Slice::empty(name);
            for id in ports {
                match self.macs(&slice.name, id) {
                    Ok(macs) => slice.ports.push(Port { id, macs }),
                    Err(CliError::Slice(SliceError::PortNotFound(_))) => {}
                    Err(CliError::Slice(SliceError::SliceNotFound(_))) => continue 'slices,
                    Err(other) => return Err(other),
                }
            }
            tree.push(slice);
        }
        Ok(tree)
    }
}

/// The database opened by this process, whichever backend it is: no daemon runs on it,
/// so no daemon audits its writes, and the tool does (see the audit module).
pub(crate) struct Direct {
    store: Box<dyn SliceStore>,
    /// Named in errors, so that the user knows which database failed.
    place: String,
    trail: Trail,
}

impl Direct {
    pub(crate) fn new(store: Box<dyn SliceStore>, place: String, trail: Trail) -> Self {
        Self {
            store,
            place,
            trail,
        }
    }

    /// Carries out `write`, audited: the trail is ready before the store is touched.
    fn write(&self, write: Write) -> Result<Written, CliError> {
        self.trail.ready()?;
        let result = self.check(write.clone().perform(&*self.store));
        match (self.trail.record(&write, &result), result) {
            (Err(CliError::Audit { path, source }), Ok(_)) => {
                Err(CliError::Unaudited { path, source })
            }
            (Err(unrecorded), Ok(_)) => Err(unrecorded),
            // The write's own failure says more; it changed nothing.
            (_, result) => result,
        }
    }

    fn check<T>(&self, result: Result<T, StoreError>) -> Result<T, CliError> {
        result.map_err(|err| match err {
            StoreError::Slice(err) => CliError::Slice(err),
            StoreError::Plan(err) => CliError::Plan(err),
            StoreError::Unbindable(err) => CliError::Unbindable(err),
            source => CliError::Store {
                place: self.place.clone(),
                source,
            },
        })
    }
}

impl SliceDatabase for Direct {
    fn slices(&self) -> Result<Vec<SliceName>, CliError> {
        self.check(self.store.slices())
    }

    fn ports(&self, slice: &SliceName) -> Result<Vec<PortId>, CliError> {
        self.check(self.store.ports(slice))
    }

    fn macs(&self, slice: &SliceName, port: PortId) -> Result<Vec<MacAddress>, CliError> {
        self.check(self.store.macs(slice, port))
    }

    fn create_slice(&self, slice: &SliceName) -> Result<(), CliError> {
        self.write(Write::CreateSlice(slice.clone())).map(drop)
    }

    fn delete_slice(&self, slice: &SliceName) -> Result<(), CliError> {
        self.write(Write::DeleteSlice(slice.clone())).map(drop)
    }

    fn add_port(&self, slice: &SliceName, port: PortId) -> Result<(), CliError> {
        self.write(Write::AddPort(slice.clone(), port)).map(drop)
    }

    fn delete_port(&self, slice: &SliceName, port: PortId) -> Result<(), CliError> {
        self.write(Write::DeletePort(slice.clone(), port)).map(drop)
    }

    fn add_mac(&self, slice: &SliceName, port: PortId, mac: MacAddress) -> Result<(), CliError> {
        self.write(Write::AddMac(slice.clone(), port, mac))
            .map(drop)
    }

    fn delete_mac(&self, slice: &SliceName, port: PortId, mac: MacAddress) -> Result<(), CliError> {
        self.write(Write::DeleteMac(slice.clone(), port, mac))
            .map(drop)
    }

    fn apply(&self, declared: &[Slice], dry_run: bool) -> Result<Plan, CliError> {
        if dry_run {
            let current = self.check(self.store.snapshot())?;
            return Plan::between(&current, declared).map_err(CliError::Plan);
        }
        match self.write(Write::Apply(declared.to_vec()))? {
            Written::Plan(plan) => Ok(plan),
            other => Err(CliError::Store {
                place: self.place.clone(),
                source: StoreError::Failed(format!("the store answered {other:?}").into()),
            }),
        }
    }

    /// One consistent read of the store, rather than the default's many.
    fn tree(&self) -> Result<Vec<Slice>, CliError> {
        self.check(self.store.snapshot())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    fn name(text: &str) -> SliceName {
        text.parse().unwrap()
    }

    fn mac(last: u8) -> MacAddress {
        MacAddress::new([0, 0, 0, 0, 0, last])
    }

    /// A backend whose reads come from a fixed tree, and which can make a slice or port
    /// vanish between the list of slices and the reads that follow, as a concurrent
    /// delete through a daemon would.
    struct Racing {
        tree: Vec<Slice>,
        vanished_slice: Option<SliceName>,
        vanished_port: Option<PortId>,
        calls: RefCell<usize>,
    }

    impl SliceDatabase for Racing {
        fn slices(&self) -> Result<Vec<SliceName>, CliError> {
            *self.calls.borrow_mut() += 1;
            Ok(self.tree.iter().map(|s| s.name.clone()).collect())
        }

        fn ports(&self, slice: &SliceName) -> Result<Vec<PortId>, CliError> {
            *self.calls.borrow_mut() += 1;
            if self.vanished_slice.as_ref() == Some(slice) {
                return Err(SliceError::SliceNotFound(slice.clone()).into());
            }
            let found = self.tree.iter().find(|s| &s.name == slice).unwrap();
            Ok(found.ports.iter().map(|p| p.id).collect())
        }

        fn macs(&self, slice: &SliceName, port: PortId) -> Result<Vec<MacAddress>, CliError> {
            *self.calls.borrow_mut() += 1;
            if self.vanished_port == Some(port) {
                return Err(SliceError::PortNotFound(port).into());
            }
            let found = self.tree.iter().find(|s| &s.name == slice).unwrap();
            Ok(found
                .ports
                .iter()
                .find(|p| p.id == port)
                .unwrap()
                .macs
                .clone())
        }

        fn create_slice(&self, _: &SliceName) -> Result<(), CliError> {
            unreachable!()
        }
        fn delete_slice(&self, _: &SliceName) -> Result<(), CliError> {
            unreachable!()
        }
        fn add_port(&self, _: &SliceName, _: PortId) -> Result<(), CliError> {
            unreachable!()
        }
        fn delete_port(&self, _: &SliceName, _: PortId) -> Result<(), CliError> {
            unreachable!()
        }
        fn add_mac(&self, _: &SliceName, _: PortId, _: MacAddress) -> Result<(), CliError> {
            unreachable!()
        }
        fn delete_mac(&self, _: &SliceName, _: PortId, _: MacAddress) -> Result<(), CliError> {
            unreachable!()
        }
        fn apply(&self, _: &[Slice], _: bool) -> Result<Plan, CliError> {
            unreachable!("the listing never applies")
        }
    }

    fn sample() -> Vec<Slice> {
        vec![
            Slice {
                name: name("b"),
                ports: vec![
                    Port {
                        id: PortId::new(2, 1),
                        macs: vec![mac(2), mac(1)],
                    },
                    Port {
                        id: PortId::new(1, 1),
                        macs: vec![],
                    },
                ],
            },
            Slice::empty(name("a")),
        ]
    }

    #[test]
    fn the_default_tree_makes_one_read_per_slice_and_port() {
        let backend = Racing {
            tree: sample(),
            vanished_slice: None,
            vanished_port: None,
            calls: RefCell::new(0),
        };
        assert_eq!(backend.tree().unwrap(), sample());
        assert_eq!(*backend.calls.borrow(), 1 + 2 + 2);
    }

    #[test]
    fn what_vanishes_during_a_listing_is_left_out() {
        let backend = Racing {
            tree: sample(),
            vanished_slice: Some(name("a")),
            vanished_port: Some(PortId::new(2, 1)),
            calls: RefCell::new(0),
        };
        let mut expected = sample();
        expected.pop();
        expected[0].ports.remove(0);
        assert_eq!(backend.tree().unwrap(), expected);
    }

    #[test]
    fn direct_maps_contract_errors_and_keeps_the_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = slice_store::Store::open(&dir.path().join("store")).unwrap();
        let place = dir.path().display().to_string();
        let trail = Trail::new(crate::DataDir::new(dir.path()), place.clone());
        let direct = Direct::new(Box::new(store), place, trail);
        let s = name("s");
        direct.create_slice(&s).unwrap();
        match direct.create_slice(&s) {
            Err(CliError::Slice(SliceError::SliceExists(n))) => assert_eq!(n, s),
            other => panic!("{other:?}"),
        }
        direct.add_mac(&s, PortId::new(9, 9), mac(3)).unwrap();
        direct.add_port(&s, PortId::new(1, 1)).unwrap();
        direct.add_mac(&s, PortId::new(9, 9), mac(1)).unwrap();
        let tree = direct.tree().unwrap();
        assert_eq!(tree[0].ports[0].macs, [mac(3), mac(1)]);
        assert_eq!(tree[0].ports[1].id, PortId::new(1, 1));
        direct.delete_mac(&s, PortId::new(9, 9), mac(3)).unwrap();
        direct.delete_port(&s, PortId::new(1, 1)).unwrap();
        assert_eq!(direct.ports(&s).unwrap(), [PortId::new(9, 9)]);
        assert_eq!(direct.macs(&s, PortId::new(9, 9)).unwrap(), [mac(1)]);
        direct.delete_slice(&s).unwrap();
        assert!(direct.slices().unwrap().is_empty());
    }
}
