//! What the engine says of its work: the cookies of its flows and the notices of the network.

use super::*;

#[test]
fn every_flow_the_engine_installs_says_what_it_is_in_its_cookie() {
    let mut engine = blue_line();
    send(&mut engine, p(2, 1), 2, BROADCAST);
    let commands = send(&mut engine, p(1, 1), 1, mac(2));
    let cookies: Vec<u64> = commands
        .iter()
        .filter_map(|(_, command)| match command {
            Command::FlowAdd { cookie, .. } => Some(*cookie),
            _ => None,
        })
        .collect();
    let path = FlowKind::path(p(1, 1), p(2, 1)).cookie();
    assert_eq!(cookies, vec![path, path]);
    send(&mut engine, p(3, 1), 3, BROADCAST);
    let commands = send(&mut engine, p(1, 1), 1, mac(3));
    assert!(commands.iter().any(|(_, command)| matches!(
        command,
        Command::FlowAdd { cookie, .. } if *cookie == FlowKind::Drop.cookie()
    )));
}

#[test]
fn every_change_of_the_network_is_noticed_in_order() {
    let index = membership(&[("blue", &[(1, 1, 1), (3, 1, 3)])]);
    let mut engine = line(config(), index);
    let set_up: Vec<Notice> = engine.drain_notices().collect();
    assert_eq!(
        set_up[..3],
        [
            Notice::SwitchUp { dpid: 1 },
            Notice::SwitchUp { dpid: 2 },
            Notice::SwitchUp { dpid: 3 }
        ]
    );
    let links: Vec<&Notice> = set_up[3..].iter().collect();
    assert_eq!(links.len(), 4, "{links:?}");
    assert!(links
        .iter()
        .all(|notice| matches!(notice, Notice::LinkUp { .. })));
    assert!(links.contains(&&Notice::LinkUp {
        src: p(1, 2),
        dst: p(2, 2)
    }));

    send(&mut engine, p(3, 1), 3, BROADCAST);
    send(&mut engine, p(1, 1), 1, mac(3));
    assert_eq!(
        engine.drain_notices().collect::<Vec<_>>(),
        [
            Notice::HostLearned {
                mac: mac(3),
                port: p(3, 1)
            },
            Notice::HostLearned {
                mac: mac(1),
                port: p(1, 1)
            },
            Notice::PathInstalled {
                src: mac(1),
                dst: mac(3)
            },
        ]
    );
    // The same path again is no news.
    send(&mut engine, p(1, 1), 1, mac(3));
    assert_eq!(engine.drain_notices().count(), 0);

    engine.switch_disconnected_at(2, Instant::now());
    let gone: Vec<Notice> = engine.drain_notices().collect();
    assert_eq!(
        gone.iter()
            .filter(|notice| matches!(notice, Notice::LinkDown { .. }))
            .count(),
        4,
        "{gone:?}"
    );
    assert!(gone.contains(&Notice::PathDeleted {
        src: mac(1),
        dst: mac(3)
    }));
    assert_eq!(gone.last(), Some(&Notice::SwitchDown { dpid: 2 }));
}

#[test]
fn a_host_that_moves_is_noticed_with_both_ports() {
    let mut engine = line(config(), membership(&[]));
    send(&mut engine, p(1, 1), 1, BROADCAST);
    engine.drain_notices().for_each(drop);
    send(&mut engine, p(3, 1), 1, BROADCAST);
    assert_eq!(
        engine.drain_notices().collect::<Vec<_>>(),
        [Notice::HostMoved {
            mac: mac(1),
            from: p(1, 1),
            to: p(3, 1)
        }]
    );
}
