//! A read-back that lacks a flow of a path the engine installed before asking: the path
//! is withdrawn (a full table refused the flow, or the switch lost it), so the pair's
//! next packet sets up a new one instead of dying at the hop.

use super::super::tests::{config, flow_deletes, line, mac, membership, p, send};
use super::*;

fn empty_table() -> FlowsRead {
    FlowsRead {
        entries: Vec::new(),
        complete: true,
        raw: None,
    }
}

#[test]
fn a_path_whose_flow_a_read_back_lacks_is_withdrawn_but_not_one_installed_after_asking() {
    let index = membership(&[("s", &[(1, 1, 1), (3, 1, 3)])]);
    let mut engine = line(config(), index);
    let now = Instant::now();
    // The read-backs of the connects, answered before any path.
    for dpid in 1..=3 {
        engine.flows_read(dpid, empty_table(), now);
    }
    send(&mut engine, p(3, 1), 3, MacAddress::new([0xff; 6]));
    send(&mut engine, p(1, 1), 1, mac(3));
    assert_eq!(engine.paths().len(), 1);

    // Switch 2 is read back, and the answer lacks the path's flow there.
    engine.reconcile(2);
    // A path set up after the request: its flows are not in the answer, rightly.
    send(&mut engine, p(3, 1), 3, mac(1));
    engine.take_commands();
    engine.flows_read(2, empty_table(), now);
    let withdrawn = flow_deletes(&engine.take_commands());
    assert_eq!(
        withdrawn,
        [
            (1, 1, mac(1), mac(3)),
            (2, 2, mac(1), mac(3)),
            (3, 2, mac(1), mac(3))
        ],
        "the lost path's flows go on every switch"
    );
    let left: Vec<HostPair> = engine
        .paths()
        .iter()
        .map(|path| (path.src, path.dst))
        .collect();
    assert_eq!(left, [(mac(3), mac(1))]);

    // Its next packet sets it up again.
    let again = send(&mut engine, p(1, 1), 1, mac(3));
    assert_eq!(super::super::tests::flow_adds(&again).len(), 3);
}
