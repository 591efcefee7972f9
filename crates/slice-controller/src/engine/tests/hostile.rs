//! What the network cannot fool the engine with: forged or relayed probes, chatter, MAC floods, spoofed moves, port caps.

use super::*;

fn dropped(engine: &Engine, dpid: u64) -> Dropped {
    engine
        .switches()
        .into_iter()
        .find(|switch| switch.dpid == dpid)
        .unwrap()
        .dropped
}

/// Two switches, not cabled, each with host ports 1 and 2.
fn two_switches() -> Engine {
    let mut engine = Engine::new(config(), Membership::default());
    engine.switch_connected(1, NEEDS_TABLE_MISS, ports(&[1, 2]), Instant::now());
    engine.switch_connected(2, NEEDS_TABLE_MISS, ports(&[1, 2]), Instant::now());
    engine.take_commands();
    engine
}

#[test]
fn unsigned_forged_and_stale_probes_make_no_link() {
    let mut engine = two_switches();
    let now = Instant::now();
    let unsigned = Probe {
        dpid: 1,
        port_no: 1,
        proof: None,
    };
    engine.packet_in(2, 1, discovery(unsigned), now);
    let mut forged = engine.probe_from(p(1, 1), now);
    forged.port_no = 2;
    engine.packet_in(2, 1, discovery(forged), now);
    let other_key = ProbeKey::with_clock(b"a guess", *START, 1_700_000_000_000);
    let guessed = Probe {
        proof: Some(other_key.sign(1, 1, now)),
        ..unsigned
    };
    engine.packet_in(2, 1, discovery(guessed), now);
    // A genuine probe signed past the discovery windows, replayed later than a link may
    // go unconfirmed. (One signed within a window proves its cable however late it
    // comes: `links::a_cable_whose_probes_came_late_within_the_window_forms_past_it`.)
    let past_windows = now + config().discovery_window;
    let recorded = engine.probe_from(p(1, 1), past_windows);
    let later = past_windows + config().link_max_age + Duration::from_millis(1);
    engine.packet_in(2, 1, discovery(recorded), later);
    assert!(engine.links().is_empty());
    let counts = dropped(&engine, 2);
    assert_eq!(
        (counts.lldp_unsigned, counts.lldp_forged, counts.lldp_stale),
        (1, 2, 1)
    );
    // A fresh genuine probe within the window does make the link.
    let genuine = engine.probe_from(p(1, 1), now);
    engine.packet_in(2, 1, discovery(genuine), now);
    assert_eq!(engine.links().len(), 1);
}

#[test]
fn genuine_probes_relayed_by_hosts_make_no_link_and_remove_no_host() {
    let mut engine = two_switches();
    let now = Instant::now();
    // Hosts on 0x1:1 and 0x2:1 have spoken to another host: both are host ports.
    send(&mut engine, p(1, 1), 1, mac(2));
    send(&mut engine, p(2, 1), 2, mac(1));
    let rounds = usize::from(PROBES_OVER_CHATTER) + 2;
    for round in 0..rounds {
        let at = now + Duration::from_secs(round as u64);
        let relayed = engine.probe_from(p(1, 1), at);
        engine.packet_in(2, 1, discovery(relayed), at);
        let back = engine.probe_from(p(2, 1), at);
        engine.packet_in(1, 1, discovery(back), at);
        // A silent port relaying a probe from a host port is refused too.
        engine.packet_in(2, 2, discovery(relayed), at);
    }
    assert!(engine.links().is_empty());
    assert_eq!(engine.hosts().len(), 2);
    assert_eq!(dropped(&engine, 2).lldp_at_host_port, 2 * rounds as u64);
    assert_eq!(dropped(&engine, 1).lldp_at_host_port, rounds as u64);
}

#[test]
fn a_bound_host_that_only_multicasts_still_makes_a_host_port() {
    let index = membership(&[("blue", &[(2, 1, 2)])]);
    let mut engine = Engine::new(config(), index);
    for dpid in [1, 2] {
        engine.switch_connected(dpid, NEEDS_TABLE_MISS, ports(&[1, 2]), Instant::now());
    }
    let now = Instant::now();
    // The slice's host at 0x2:1 sends an IPv6 router solicitation, nothing else.
    engine.packet_in(2, 1, frame(2, IPV6_ALL_ROUTERS), now);
    for round in 0..u64::from(PROBES_OVER_CHATTER) + 2 {
        let at = now + Duration::from_secs(round);
        let relayed = engine.probe_from(p(1, 1), at);
        engine.packet_in(2, 1, discovery(relayed), at);
    }
    assert!(engine.links().is_empty());
    assert_eq!(engine.hosts().len(), 1);
}

/// An IPv6 router solicitation's destination, and an MLDv2 report's.
const IPV6_ALL_ROUTERS: MacAddress = MacAddress::new([0x33, 0x33, 0, 0, 0, 2]);
const MLDV2_REPORTS: MacAddress = MacAddress::new([0x33, 0x33, 0, 0, 0, 0x16]);

/// Issue 23: the kernel's IPv6 stack on a switch-side veth (Mininet) sends router
/// solicitations and MLD reports into the neighbouring switch before its first probe.
#[test]
fn chatter_from_the_switches_own_interfaces_does_not_cost_a_cable() {
    let mut engine = two_switches();
    let now = Instant::now();
    // The veth behind 0x1:2 speaks into 0x2:2, and the one behind 0x2:2 into 0x1:2.
    engine.packet_in(2, 2, frame(0x12, IPV6_ALL_ROUTERS), now);
    engine.packet_in(2, 2, frame(0x12, MLDV2_REPORTS), now);
    engine.packet_in(1, 2, frame(0x22, MLDV2_REPORTS), now);
    engine.take_commands();
    let mut links_after = Vec::new();
    for round in 0..u64::from(PROBES_OVER_CHATTER) {
        let at = now + Duration::from_secs(round);
        let (from_1, from_2) = (
            engine.probe_from(p(1, 2), at),
            engine.probe_from(p(2, 2), at),
        );
        engine.packet_in(2, 2, discovery(from_1), at);
        // A recorded probe played again counts once.
        engine.packet_in(2, 2, discovery(from_1), at);
        engine.packet_in(1, 2, discovery(from_2), at);
        links_after.push(engine.links().len());
        // More chatter between the rounds changes nothing.
        engine.packet_in(2, 2, frame(0x12, IPV6_ALL_ROUTERS), at);
    }
    assert_eq!(links_after, [0, 0, 2], "both directions after three rounds");
    assert!(engine.hosts().is_empty(), "the veths were never hosts");
    assert_eq!(dropped(&engine, 1).lldp_at_host_port, 0);
    assert_eq!(dropped(&engine, 2).lldp_at_host_port, 0);
    // A genuine host plugged in elsewhere still makes its port a host port.
    send(&mut engine, p(2, 1), 7, mac(8));
    let relayed = engine.probe_from(p(1, 1), now + Duration::from_secs(3));
    engine.packet_in(2, 1, discovery(relayed), now + Duration::from_secs(3));
    assert_eq!(dropped(&engine, 2).lldp_at_host_port, 1);
}

#[test]
fn link_control_frames_teach_no_host_are_not_flooded_and_leave_the_port_clear() {
    // Without slicing every other edge port would get a flood.
    let unsliced = EngineConfig {
        slicing: false,
        ..config()
    };
    let mut engine = Engine::new(unsliced, Membership::default());
    for dpid in [1, 2] {
        engine.switch_connected(dpid, NEEDS_TABLE_MISS, ports(&[1, 2]), Instant::now());
    }
    engine.take_commands();
    let now = Instant::now();
    let stp = MacAddress::new([0x01, 0x80, 0xc2, 0, 0, 0]);
    let lacp = MacAddress::new([0x01, 0x80, 0xc2, 0, 0, 2]);
    let cdp = MacAddress::new([0x01, 0x00, 0x0c, 0xcc, 0xcc, 0xcc]);
    for dst in [stp, lacp, cdp] {
        engine.packet_in(2, 2, frame(0x12, dst), now);
    }
    assert!(engine.take_commands().is_empty(), "never forwarded");
    assert!(engine.hosts().is_empty());
    assert_eq!(dropped(&engine, 2).link_control_frames, 3);
    // The first genuine probe makes the link, as on a port that heard nothing.
    let probe = engine.probe_from(p(1, 2), now);
    engine.packet_in(2, 2, discovery(probe), now);
    assert_eq!(engine.links().len(), 1);
}

#[test]
fn a_host_port_that_goes_down_and_up_can_become_a_link() {
    let mut engine = two_switches();
    let now = Instant::now();
    send(&mut engine, p(2, 1), 2, BROADCAST);
    let probe = engine.probe_from(p(1, 1), now);
    engine.packet_in(2, 1, discovery(probe), now);
    assert!(engine.links().is_empty());
    for live in [false, true] {
        engine.port_changed(
            p(2, 1),
            Some(PortState {
                name: "eth1".into(),
                live,
            }),
            now,
        );
    }
    assert!(engine.hosts().is_empty(), "the host left with the port");
    let probe = engine.probe_from(p(1, 1), now);
    engine.packet_in(2, 1, discovery(probe), now);
    assert_eq!(engine.links().len(), 1, "re-cabled to a switch");
}

#[test]
fn a_mac_flood_learns_up_to_the_caps_but_bound_hosts_always() {
    let index = membership(&[("blue", &[(1, 1, 200)])]);
    let config = EngineConfig {
        max_hosts_per_port: 3,
        max_hosts_per_switch: 4,
        ..config()
    };
    let mut engine = Engine::new(config, index);
    engine.switch_connected(1, NEEDS_TABLE_MISS, ports(&[1, 2]), Instant::now());
    for last in 1..=10 {
        send(&mut engine, p(1, 1), last, BROADCAST);
        send(&mut engine, p(1, 2), 100 + last, BROADCAST);
    }
    assert_eq!(engine.hosts().len(), 4);
    assert_eq!(dropped(&engine, 1).hosts_refused, 16);
    send(&mut engine, p(1, 1), 200, BROADCAST);
    assert!(engine.hosts().iter().any(|host| host.mac == mac(200)));
}

#[test]
fn idle_hosts_age_out_but_bound_ones_stay() {
    let index = membership(&[("blue", &[(1, 1, 1), (3, 1, 3)])]);
    let mut engine = line(config(), index);
    let start = Instant::now();
    engine.packet_in(2, 1, frame(2, BROADCAST), start);
    engine.packet_in(1, 1, frame(1, BROADCAST), start);
    engine.packet_in(3, 1, frame(3, BROADCAST), start);
    engine.take_commands();
    let later = start + config().host_idle + Duration::from_secs(1);
    engine.tick_kept_up(later);
    let hosts: Vec<MacAddress> = engine.hosts().iter().map(|host| host.mac).collect();
    assert_eq!(hosts, vec![mac(1), mac(3)], "bound hosts stay");
    assert_eq!(dropped(&engine, 2).hosts_aged_out, 1);
}

#[test]
fn a_port_beyond_the_limit_is_ignored() {
    let config = EngineConfig {
        max_ports_per_switch: 2,
        ..config()
    };
    let mut engine = Engine::new(config, Membership::default());
    engine.switch_connected(1, NEEDS_TABLE_MISS, ports(&[1, 2]), Instant::now());
    let up = PortState {
        name: "eth3".into(),
        live: true,
    };
    engine.port_changed(p(1, 3), Some(up), Instant::now());
    assert_eq!(engine.switches()[0].ports.len(), 2);
    assert_eq!(dropped(&engine, 1).ports_refused, 1);
}

fn packet_in_meter(engine: &Engine, dpid: u64) -> Option<bool> {
    engine
        .switches()
        .into_iter()
        .find(|switch| switch.dpid == dpid)
        .map(|switch| switch.packet_in_meter)
}

#[test]
fn the_packet_in_meter_is_shown_per_switch_until_it_reconnects() {
    let mut engine = two_switches();
    assert_eq!(packet_in_meter(&engine, 1), Some(false));
    engine.set_packet_in_meter(1, true);
    assert_eq!(packet_in_meter(&engine, 1), Some(true));
    assert_eq!(packet_in_meter(&engine, 2), Some(false));
    // A reconnect starts without a meter until its own setup says otherwise.
    engine.switch_connected(1, NEEDS_TABLE_MISS, ports(&[1, 2]), Instant::now());
    assert_eq!(packet_in_meter(&engine, 1), Some(false));
    // A late report for a switch that has gone is not kept.
    engine.switch_disconnected(2);
    engine.set_packet_in_meter(2, true);
    engine.switch_connected(2, NEEDS_TABLE_MISS, ports(&[1, 2]), Instant::now());
    assert_eq!(packet_in_meter(&engine, 2), Some(false));
}

/// Lets every link of `engine` expire: rounds of probes nobody answers, past the age
/// and past twice the ceiling (with no probe of any switch answered, silence is taken
/// for a stall that long, `LinkHealth::expiry_limit`).
fn expire_all_links(engine: &mut Engine, from: Instant) -> Instant {
    let mut now = from;
    for _ in 0..9 {
        now += Duration::from_secs(2);
        engine.tick_kept_up(now);
    }
    assert!(engine.links().is_empty());
    engine.take_commands();
    now
}

#[test]
fn a_link_port_with_traffic_right_after_its_link_went_still_gets_its_link_back() {
    let mut engine = line(config(), Membership::default());
    let now = expire_all_links(&mut engine, Instant::now());
    // A standalone switch's flood arrives at the former link ends meanwhile.
    engine.packet_in(1, 2, frame(9, BROADCAST), now);
    engine.packet_in(2, 2, frame(9, BROADCAST), now);
    let later = now + Duration::from_millis(500);
    let (from_1, from_2) = (
        engine.probe_from(p(1, 2), later),
        engine.probe_from(p(2, 2), later),
    );
    engine.packet_in(2, 2, discovery(from_1), later);
    engine.packet_in(1, 2, discovery(from_2), later);
    assert_eq!(
        engine.links().len(),
        2,
        "the link between 0x1 and 0x2 is back"
    );
    assert_eq!(dropped(&engine, 1).lldp_at_host_port, 0);
}

#[test]
fn a_reconnecting_neighbour_gets_its_link_back_despite_a_flows_tail() {
    let mut engine = line(config(), Membership::default());
    let now = Instant::now();
    engine.switch_disconnected_at(2, now);
    // 0x1:2 is an edge port now, and carries a flow's tail before 0x2 is back.
    engine.packet_in(1, 2, frame(9, BROADCAST), now);
    let back = now + Duration::from_secs(1);
    engine.switch_connected(2, NEEDS_TABLE_MISS, ports(&[1, 2, 3]), back);
    let probe = engine.probe_from(p(2, 2), back);
    engine.packet_in(1, 2, discovery(probe), back);
    let probe = engine.probe_from(p(1, 2), back);
    engine.packet_in(2, 2, discovery(probe), back);
    assert_eq!(engine.links().len(), 2);
}

#[test]
fn hosts_that_talk_past_the_grace_still_cannot_relay_a_link() {
    let mut engine = line(config(), Membership::default());
    let now = expire_all_links(&mut engine, Instant::now());
    // Long after the link went, hosts speak at the ports: they are host ports.
    let late = now + Duration::from_secs(30);
    engine.packet_in(1, 2, frame(8, mac(9)), late);
    engine.packet_in(2, 2, frame(9, mac(8)), late);
    let relayed = engine.probe_from(p(1, 2), late);
    engine.packet_in(2, 2, discovery(relayed), late);
    assert!(engine.links().is_empty());
    assert_eq!(dropped(&engine, 2).lldp_at_host_port, 1);
}

#[test]
fn remembered_drops_expire_with_their_flows_and_stay_under_the_cap() {
    let capped = EngineConfig {
        max_drops_per_switch: 50,
        ..config()
    };
    // h1 and h3 share no slice: every frame between them gets a drop flow.
    let index = membership(&[("blue", &[(1, 1, 1)]), ("red", &[(3, 1, 3)])]);
    let mut engine = line(capped, index);
    let start = Instant::now();
    engine.packet_in(3, 1, frame(3, BROADCAST), start);
    for source in 0..200u8 {
        let rotated = Frame {
            src: MacAddress::new([2, 0, 0, 0, 1, source]),
            ..frame(0, mac(3))
        };
        engine.packet_in(1, 1, rotated, start);
    }
    assert_eq!(engine.remembered_drops(), 50, "capped per switch");
    let after = start + Duration::from_secs(u64::from(engine.config.drop_timeout) + 1);
    engine.tick_kept_up(after);
    assert_eq!(engine.remembered_drops(), 0, "gone with their hard timeout");
}

#[test]
fn a_spoofed_frame_does_not_move_a_bound_host() {
    let index = membership(&[("blue", &[(1, 1, 1), (3, 1, 3)])]);
    let mut engine = line(config(), index);
    send(&mut engine, p(3, 1), 3, BROADCAST);
    send(&mut engine, p(1, 1), 1, mac(3));
    assert_eq!(engine.paths().len(), 1);
    // An impostor on 0x2:1 with h1's MAC.
    let commands = send(&mut engine, p(2, 1), 1, mac(3));
    assert!(flow_deletes(&commands).is_empty(), "h1's path stays");
    assert!(flow_adds(&commands).is_empty());
    let h1 = engine
        .hosts()
        .into_iter()
        .find(|h| h.mac == mac(1))
        .unwrap();
    assert_eq!(h1.port, p(1, 1));
    assert_eq!(dropped(&engine, 2).hosts_spoofed, 1);
}

#[test]
fn a_legitimate_move_lifts_the_drops_judged_at_the_old_port() {
    // mac 1 is unbound at 0x1:1 (so h3 drops it) and bound with h3 at 0x2:1.
    let index = membership(&[("blue", &[(2, 1, 1), (3, 1, 3)])]);
    let mut engine = line(config(), index);
    send(&mut engine, p(1, 1), 1, BROADCAST);
    send(&mut engine, p(3, 1), 3, mac(1));
    assert_eq!(engine.remembered_drops(), 1);
    let commands = send(&mut engine, p(2, 1), 1, BROADCAST);
    assert_eq!(engine.remembered_drops(), 0);
    assert!(commands.iter().any(|(dpid, command)| *dpid == 3
        && matches!(command, Command::FlowDelete { priority, .. } if *priority == DROP_PRIORITY)));
}
