//! Roles in a cluster: who asks for what, who writes, and takeover.

use super::*;

fn master(generation: u64) -> Leadership {
    Leadership::Master { generation }
}

fn standby(generation: Option<u64>) -> Leadership {
    Leadership::Standby {
        master: generation.map(|_| "other".to_owned()),
        generation,
    }
}

fn role_requests(commands: &[(u64, Command)]) -> Vec<(u64, Role, u64)> {
    commands
        .iter()
        .filter_map(|(dpid, command)| match command {
            Command::SetRole { role, generation } => Some((*dpid, *role, *generation)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_single_instance_asks_for_no_role() {
    let mut engine = Engine::new(config(), membership(&[]));
    engine.switch_connected(1, NEEDS_TABLE_MISS, ports(&[1]), Instant::now());
    let commands = engine.take_commands();
    assert_eq!(role_requests(&commands), []);
    assert_eq!(
        commands[..2],
        [(1, Command::TableMiss), (1, Command::ReadFlows)]
    );
}

#[test]
fn a_standby_asks_to_be_slave_and_writes_nothing() {
    let now = Instant::now();
    let mut engine = Engine::new(config(), membership(&[("blue", &[(1, 1, 1), (1, 2, 2)])]));
    engine.set_leadership(standby(Some(7)), now);
    engine.switch_connected(1, NEEDS_TABLE_MISS, ports(&[1, 2]), now);
    assert_eq!(
        engine.take_commands(),
        [(
            1,
            Command::SetRole {
                role: Role::Slave,
                generation: 7
            }
        )]
    );
    // PACKET_INs are ignored, ticks send no probes, but the switch and its ports are kept.
    assert_eq!(send(&mut engine, p(1, 1), 1, BROADCAST), []);
    assert_eq!(send(&mut engine, p(1, 2), 2, mac(1)), []);
    engine.tick_kept_up(now + Duration::from_secs(1));
    engine.port_changed(p(1, 2), None, now);
    assert_eq!(engine.take_commands(), []);
    assert_eq!(engine.hosts(), []);
    let switches = engine.switches();
    assert_eq!(switches.len(), 1);
    assert_eq!(switches[0].ports.len(), 1);
}

#[test]
fn a_standby_that_knows_no_generation_asks_nothing() {
    let now = Instant::now();
    let mut engine = Engine::new(config(), membership(&[]));
    engine.set_leadership(Leadership::UNDECIDED, now);
    engine.switch_connected(1, SENDS_MISSES, ports(&[1]), now);
    assert_eq!(engine.take_commands(), []);
}

#[test]
fn becoming_master_claims_every_switch_first_then_takes_it_over() {
    let now = Instant::now();
    let mut engine = Engine::new(config(), membership(&[]));
    engine.set_leadership(standby(Some(3)), now);
    engine.switch_connected(1, NEEDS_TABLE_MISS, ports(&[1, 2]), now);
    engine.switch_connected(2, SENDS_MISSES, ports(&[1]), now);
    engine.take_commands();
    engine.set_leadership(master(9), now);
    let commands = engine.take_commands();
    assert_eq!(
        role_requests(&commands),
        [(1, Role::Master, 9), (2, Role::Master, 9)]
    );
    // The role requests come before anything else.
    assert!(matches!(commands[0].1, Command::SetRole { .. }));
    assert!(matches!(commands[1].1, Command::SetRole { .. }));
    let rest: Vec<&(u64, Command)> = commands[2..].iter().collect();
    // Nothing is flushed; the 1.3 switch gets its table-miss flow; LLDP goes out at once.
    assert!(!rest.iter().any(|(_, c)| *c == Command::ClearFlows));
    assert!(rest.contains(&&(1, Command::TableMiss)));
    assert!(!rest
        .iter()
        .any(|(dpid, c)| *dpid == 2 && *c == Command::TableMiss));
    // Each switch's flow table is read back, to keep what the old master installed.
    assert!(rest.contains(&&(1, Command::ReadFlows)));
    assert!(rest.contains(&&(2, Command::ReadFlows)));
    let probes: Vec<(u64, u32)> = rest
        .iter()
        .filter_map(|(dpid, c)| match c {
            Command::Discovery { port_no, .. } => Some((*dpid, *port_no)),
            _ => None,
        })
        .collect();
    assert_eq!(probes, [(1, 1), (1, 2), (2, 1)]);
    // And the master acts on traffic: it learns the host.
    send(&mut engine, p(2, 1), 1, BROADCAST);
    assert_eq!(engine.hosts().len(), 1);
}

#[test]
fn a_standby_neither_reads_back_nor_judges_a_flow_table() {
    let now = Instant::now();
    let mut engine = blue_line();
    engine.set_leadership(standby(Some(3)), now);
    engine.take_commands();
    engine.reconcile(1);
    // A read that arrives for a standby (asked for before it was deposed) changes nothing:
    // a flow no slice allows stays, for the master to judge.
    let allowed = path_flow(3, (1, 2), (1, 2), (p(1, 1), p(2, 1)));
    let foreign = entry(7, 2, None, FlowAction::Drop);
    engine.flows_read(1, read(vec![table_miss(1), foreign, allowed]), now);
    assert_eq!(engine.take_commands(), []);
    assert_eq!(engine.adopted_flows(), 0);
}

#[test]
fn a_master_connecting_a_switch_claims_it_before_writing() {
    let now = Instant::now();
    let mut engine = Engine::new(config(), membership(&[]));
    engine.set_leadership(master(4), now);
    engine.switch_connected(1, NEEDS_TABLE_MISS, ports(&[1]), now);
    let commands = engine.take_commands();
    assert_eq!(
        commands[0],
        (
            1,
            Command::SetRole {
                role: Role::Master,
                generation: 4
            }
        )
    );
    assert!(commands.contains(&(1, Command::TableMiss)));
}

#[test]
fn a_deposed_master_stops_writing_at_once_and_asks_to_be_slave() {
    let now = Instant::now();
    let mut engine = line(config(), membership(&[("blue", &[(1, 1, 1), (3, 1, 3)])]));
    engine.set_leadership(master(5), now);
    send(&mut engine, p(1, 1), 1, BROADCAST);
    send(&mut engine, p(3, 1), 3, mac(1));
    assert_eq!(engine.paths().len(), 1);
    engine.set_leadership(standby(None), now);
    let commands = engine.take_commands();
    // Slave with the newest generation it knows (its own), and no flow deleted.
    assert_eq!(
        role_requests(&commands),
        [
            (1, Role::Slave, 5),
            (2, Role::Slave, 5),
            (3, Role::Slave, 5)
        ]
    );
    assert_eq!(commands.len(), 3);
    assert_eq!(engine.paths(), []);
    assert_eq!(send(&mut engine, p(1, 1), 1, mac(3)), []);
}

#[test]
fn a_stale_refusal_makes_the_switch_off_limits_until_the_next_election() {
    let now = Instant::now();
    let mut engine = Engine::new(config(), membership(&[]));
    engine.set_leadership(master(2), now);
    engine.switch_connected(1, SENDS_MISSES, ports(&[1]), now);
    engine.switch_connected(2, SENDS_MISSES, ports(&[1]), now);
    engine.take_commands();
    engine.role_changed(2, Role::Master);
    assert!(engine.role_refused(1, RoleRefusal::Stale), "ask etcd");
    // The refused request changed nothing: the new connection is still EQUAL.
    assert_eq!(
        engine.switch_roles().0.clone(),
        BTreeMap::from([(1, Role::Equal), (2, Role::Master)])
    );
    assert_eq!(send(&mut engine, p(1, 1), 1, BROADCAST), []);
    engine.tick_kept_up(now);
    let commands = engine.take_commands();
    assert!(commands.iter().all(|(dpid, _)| *dpid == 2), "{commands:?}");
    // A later election won claims it again.
    engine.set_leadership(master(8), now);
    let commands = engine.take_commands();
    assert!(role_requests(&commands).contains(&(1, Role::Master, 8)));
    assert!(commands.iter().any(|(dpid, c)| *dpid == 1 && c.writes()));
}

#[test]
fn confirmed_roles_are_versioned_and_forgotten_with_the_switch() {
    let now = Instant::now();
    let mut engine = Engine::new(config(), membership(&[]));
    engine.set_leadership(master(1), now);
    engine.switch_connected(1, SENDS_MISSES, ports(&[1]), now);
    let (_, before) = engine.switch_roles();
    engine.role_changed(1, Role::Master);
    let (roles, after) = engine.switch_roles();
    assert_eq!(roles.get(&1), Some(&Role::Master));
    assert_ne!(before, after);
    engine.role_changed(1, Role::Master);
    assert_eq!(engine.switch_roles().1, after);
    engine.switch_disconnected_at(1, now);
    assert!(engine.switch_roles().0.is_empty());
    // A role for a switch the engine does not know is ignored.
    engine.role_changed(9, Role::Master);
    assert!(engine.switch_roles().0.is_empty());
}

#[test]
fn a_stale_refusal_asks_etcd_once_per_leadership_and_a_newer_generation_asks_the_switch_again() {
    let now = Instant::now();
    let mut engine = Engine::new(config(), membership(&[]));
    // A standby woken from a pause, still with the generation it knew before.
    engine.set_leadership(standby(Some(4)), now);
    for dpid in [1, 2] {
        engine.switch_connected(dpid, SENDS_MISSES, ports(&[1]), now);
    }
    engine.take_commands();
    assert!(engine.role_refused(1, RoleRefusal::Stale), "ask etcd");
    assert!(
        !engine.role_refused(2, RoleRefusal::Stale),
        "once per leadership"
    );
    // The same answer from etcd changes nothing and asks nobody: no loop.
    engine.set_leadership(standby(Some(4)), now);
    assert_eq!(role_requests(&engine.take_commands()), []);
    // A newer generation from etcd asks every switch again.
    engine.set_leadership(standby(Some(9)), now);
    let mut asked = role_requests(&engine.take_commands());
    asked.sort_by_key(|(dpid, _, _)| *dpid);
    assert_eq!(asked, [(1, Role::Slave, 9), (2, Role::Slave, 9)]);
    assert!(
        engine.role_refused(1, RoleRefusal::Stale),
        "a new leadership, a new ask"
    );
    engine.role_changed(2, Role::Slave);
    assert_eq!(
        engine.switch_roles().0.clone(),
        BTreeMap::from([(1, Role::Equal), (2, Role::Slave)])
    );
}

#[test]
fn a_switch_that_cannot_give_roles_is_written_nothing_and_a_demoted_master_shows_slave() {
    let now = Instant::now();
    let mut engine = Engine::new(config(), membership(&[]));
    engine.set_leadership(master(2), now);
    engine.switch_connected(1, SENDS_MISSES, ports(&[1]), now);
    engine.switch_connected(2, SENDS_MISSES, ports(&[1]), now);
    engine.take_commands();
    engine.role_changed(2, Role::Master);
    assert!(
        !engine.role_refused(1, RoleRefusal::Unsupported),
        "etcd knows no better"
    );
    assert!(engine.role_refused(2, RoleRefusal::Stale));
    assert_eq!(
        engine.switch_roles().0.clone(),
        BTreeMap::from([(1, Role::Equal), (2, Role::Slave)])
    );
    engine.tick_kept_up(now);
    let commands = engine.take_commands();
    assert!(
        commands.iter().all(|(_, command)| !command.writes()),
        "{commands:?}"
    );
}
