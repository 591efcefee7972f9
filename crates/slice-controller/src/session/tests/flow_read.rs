//! Reading the flow table back.

use super::*;

fn sliced_path_flow(in_port: u32, out_port: u32) -> FlowMod {
    FlowMod {
        r#match: Match {
            in_port: Some(in_port),
            eth_src: Some([2, 0, 0, 0, 0, 1]),
            eth_dst: Some([2, 0, 0, 0, 0, 2]),
            ..Match::default()
        },
        cookie: crate::cookie::FlowKind::Path { endpoints: 7 }.cookie(),
        priority: 100,
        idle_timeout: 60,
        actions: vec![Action::Output {
            port: out_port,
            max_len: 0,
        }],
        ..FlowMod::default()
    }
}

fn stats_part(version: Version, xid: u32, flows: &[FlowMod], more: bool) -> Vec<u8> {
    let flows = flows
        .iter()
        .map(|flow| openflow::FlowStats::of_flow(version, flow).unwrap())
        .collect();
    wire(version, xid, &Message::FlowStatsReply { flows, more })
}

#[test]
fn reading_flows_asks_for_the_whole_table_once_at_a_time() {
    let now = Instant::now();
    for (_, mut session) in both_versions(now) {
        session.queue(Command::ReadFlows);
        session.queue(Command::ReadFlows);
        flow_stats_request(&mut session);
    }
}

#[test]
fn flow_stats_parts_become_one_read_in_the_engines_terms() {
    let now = Instant::now();
    for (version, mut session) in both_versions(now) {
        session.queue(Command::ReadFlows);
        let xid = flow_stats_request(&mut session);
        let foreign = FlowMod {
            r#match: Match {
                eth_type: Some(0x0806),
                ..Match::default()
            },
            priority: 7,
            ..FlowMod::default()
        };
        session.handle_bytes(
            &stats_part(version, xid, &[sliced_path_flow(1, 2)], true),
            now,
        );
        // Another transaction's part is not part of this read.
        session.handle_bytes(
            &stats_part(version, xid + 100, std::slice::from_ref(&foreign), false),
            now,
        );
        assert_eq!(
            events(&mut session),
            vec![],
            "{version:?}: more parts to come"
        );
        session.handle_bytes(
            &stats_part(version, xid, std::slice::from_ref(&foreign), false),
            now,
        );
        let events = events(&mut session);
        let [SwitchEvent::FlowsRead(read)] = &events[..] else {
            panic!("{version:?}: one read expected, got {events:?}");
        };
        assert!(read.complete);
        assert_eq!(read.entries.len(), 2);
        let path = &read.entries[0];
        assert_eq!(path.cookie, sliced_path_flow(1, 2).cookie);
        assert_eq!(path.in_port, Some(1));
        assert_eq!(path.eth_src, Some(MacAddress::new([2, 0, 0, 0, 0, 1])));
        assert_eq!(path.eth_dst, Some(MacAddress::new([2, 0, 0, 0, 0, 2])));
        assert_eq!(path.action, FlowAction::Output(2));
        assert!(!path.other_fields);
        let other = &read.entries[1];
        assert!(other.other_fields, "{version:?}: it matches the EtherType");
        assert_eq!(other.action, FlowAction::Drop);
        // The verifier gets the same two flows whole, in the switch's version.
        let raw = read
            .raw
            .as_ref()
            .expect("a complete read carries the raw table");
        assert_eq!(raw.version, version);
        let raw_flows: Vec<_> = raw.flows.iter().map(|flow| flow.cookie).collect();
        assert_eq!(raw_flows, [path.cookie, other.cookie]);
        assert_eq!(
            raw.flows[1].flow_mod(version).unwrap().r#match,
            foreign.r#match
        );

        // The foreign flow is deleted by exactly its own match and priority.
        session.queue(Command::FlowDeleteExact(other.handle.clone()));
        let sent = sent_messages(&mut session);
        let [Message::FlowMod(delete)] = &sent[..] else {
            panic!("{version:?}: one FLOW_MOD expected: {sent:?}");
        };
        assert_eq!(delete.command, FlowModCommand::DeleteStrict);
        assert_eq!(delete.r#match, foreign.r#match);
        assert_eq!(delete.priority, 7);

        // The read is over: a new one may start.
        session.queue(Command::ReadFlows);
        flow_stats_request(&mut session);
    }
}

#[test]
fn a_flow_table_over_the_bound_reads_as_incomplete() {
    let now = Instant::now();
    for (version, mut session) in both_versions(now) {
        session.queue(Command::ReadFlows);
        let xid = flow_stats_request(&mut session);
        // As many flows as fit one message, in as many parts as cross the bound.
        let per_part = 500;
        let part: Vec<FlowMod> = (0..per_part).map(|n| sliced_path_flow(n + 1, 1)).collect();
        let parts = MAX_FLOWS_READ / per_part as usize + 1;
        let part_bytes = stats_part(version, xid, &part, true);
        for _ in 0..parts {
            session.handle_bytes(&part_bytes, now);
        }
        assert_eq!(events(&mut session), vec![]);
        session.handle_bytes(&stats_part(version, xid, &[], false), now);
        assert_eq!(
            events(&mut session),
            vec![SwitchEvent::FlowsRead(FlowsRead {
                entries: Vec::new(),
                complete: false,
                raw: None,
            })],
            "{version:?}"
        );
        assert!(
            !session.is_closed(),
            "a large table is no reason to disconnect"
        );
    }
}

#[test]
fn a_read_the_switch_never_answers_is_given_up_as_incomplete() {
    // Other deadlines run meanwhile (the 1.3 meter setup gives up too): only the reads
    // matter here.
    fn reads(session: &mut SwitchSession) -> Vec<SwitchEvent> {
        events(session)
            .into_iter()
            .filter(|event| matches!(event, SwitchEvent::FlowsRead(_)))
            .collect()
    }
    let now = Instant::now();
    let given_up_at = now + super::FLOW_READ_TIMEOUT;
    for (version, mut session) in both_versions(now) {
        session.queue(Command::ReadFlows);
        let xid = flow_stats_request(&mut session);
        // The switch keeps answering echoes, but never lists its flows.
        let mut at = now;
        while at < given_up_at {
            session.handle_timeout(at);
            let _ = sent_messages(&mut session);
            session.handle_bytes(&wire(version, 0, &Message::EchoReply(Vec::new())), at);
            assert_eq!(reads(&mut session), vec![], "{version:?}: given up early");
            assert!(session.poll_timeout().is_some_and(|due| due <= given_up_at));
            at += Duration::from_millis(500);
        }
        session.handle_timeout(given_up_at);
        assert_eq!(
            reads(&mut session),
            vec![SwitchEvent::FlowsRead(FlowsRead {
                entries: Vec::new(),
                complete: false,
                raw: None,
            })],
            "{version:?}"
        );
        assert!(
            !session.is_closed(),
            "{version:?}: a slow read is no reason to disconnect"
        );
        // A part that comes after all is of a read that is over.
        let late = given_up_at + SECOND;
        session.handle_bytes(
            &stats_part(version, xid, &[sliced_path_flow(1, 2)], false),
            late,
        );
        assert_eq!(reads(&mut session), vec![], "{version:?}");
        // And the next read is asked for.
        session.queue(Command::ReadFlows);
        flow_stats_request(&mut session);
    }
}

#[test]
fn a_refused_read_reads_as_incomplete() {
    let now = Instant::now();
    for (version, mut session) in both_versions(now) {
        session.queue(Command::ReadFlows);
        let xid = flow_stats_request(&mut session);
        let refusal = Message::Error {
            err_type: ErrorType::BadRequest,
            code: BadRequestCode::BadMultipart.into(),
            data: Vec::new(),
        };
        session.handle_bytes(&wire(version, xid, &refusal), now);
        assert_eq!(
            events(&mut session),
            vec![SwitchEvent::FlowsRead(FlowsRead {
                entries: Vec::new(),
                complete: false,
                raw: None,
            })],
            "{version:?}"
        );
    }
}

#[test]
fn a_flow_add_and_the_table_miss_flow_carry_their_cookies() {
    let now = Instant::now();
    for (_, mut session) in both_versions(now) {
        session.queue(Command::FlowAdd {
            rule: Rule {
                in_port: 1,
                eth_src: MacAddress::new([2, 0, 0, 0, 0, 1]),
                eth_dst: MacAddress::new([2, 0, 0, 0, 0, 2]),
            },
            out_port: Some(2),
            priority: 100,
            idle_timeout: 60,
            hard_timeout: 0,
            notify_removal: true,
            cookie: 0x5c1c_0200_0000_0007,
        });
        let sent = sent_messages(&mut session);
        let [Message::FlowMod(add)] = &sent[..] else {
            panic!("one FLOW_MOD expected: {sent:?}");
        };
        assert_eq!(add.cookie, 0x5c1c_0200_0000_0007);
    }
    let Message::FlowMod(table_miss) = crate::meter::table_miss_flow(None) else {
        panic!("the table-miss flow is a FLOW_MOD");
    };
    assert_eq!(
        table_miss.cookie,
        crate::cookie::FlowKind::TableMiss.cookie()
    );
}
