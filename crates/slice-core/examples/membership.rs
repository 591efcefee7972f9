//! Following a store's changes with a [`Membership`] index, as the controller does, and
//! asking it whether two hosts may talk.
//!
//! Run with `cargo run -p slice-core --example membership`.

use slice_core::{Change, Host, Membership, Port, PortId, Slice, SliceName};

fn main() -> Result<(), slice_core::ParseError> {
    // Identifiers are parsed once, at the edge; from here on they are valid.
    let lab: SliceName = "lab".parse()?;
    let alice = Host {
        port: "0x1:1".parse()?,
        mac: "00:00:00:00:00:0a".parse()?,
    };
    let bob = Host {
        port: "0x2:1".parse()?,
        mac: "00:00:00:00:00:0b".parse()?,
    };

    // A snapshot first (what `MembershipSource::snapshot` returns): alice alone in `lab`.
    let snapshot = [Slice {
        name: lab.clone(),
        ports: vec![Port {
            id: alice.port,
            macs: vec![alice.mac],
        }],
    }];
    let mut index = Membership::from_slices(&snapshot);
    println!(
        "alice and bob share a slice: {}",
        index.shares_slice(&alice, &bob)
    );
    assert!(!index.shares_slice(&alice, &bob));

    // Then the changes a store tells its listeners. Adding a MAC address to a port the
    // slice does not hold yet adds the port too.
    index.apply(&Change::MacAdded {
        slice: lab.clone(),
        port: bob.port,
        mac: bob.mac,
    });
    println!("after bob joins: {}", index.shares_slice(&alice, &bob));
    assert!(index.shares_slice(&alice, &bob));
    for port in index.peer_ports(&alice) {
        println!("a broadcast from alice may go out of {port}");
    }

    // The same MAC address behind another port is another host, and not a member.
    let moved = Host {
        port: PortId::new(0x2, 7),
        mac: bob.mac,
    };
    assert!(!index.is_member(&moved));

    // Deleting the port takes bob with it; applying a change twice is harmless.
    let bob_leaves = Change::PortDeleted {
        slice: lab.clone(),
        port: Port {
            id: bob.port,
            macs: vec![bob.mac],
        },
    };
    index.apply(&bob_leaves);
    index.apply(&bob_leaves);
    println!(
        "after bob's port goes: {}",
        index.shares_slice(&alice, &bob)
    );
    assert!(!index.shares_slice(&alice, &bob));
    assert_eq!(index.slices_of(&alice), std::slice::from_ref(&lab));
    assert_eq!(index.bound_mac_count(), 1);
    Ok(())
}
