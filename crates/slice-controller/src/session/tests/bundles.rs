//! A pipeline change written as bundles: the messages on the wire, the switch's answers
//! (a reply, a refusal, no bundles at all), the fallback and the bounds.

use openflow::bundle::{FLAG_ATOMIC, FLAG_ORDERED, ONF_ID};
use openflow::{BundleControl, BundleCtrlType, BundleFailedCode};

use super::super::bundles::{MAX_BUNDLES_IN_FLIGHT, MAX_BUNDLE_MESSAGES};
use super::*;

/// The FLOW_MODs of each bundle in `messages`, which must be nothing but whole bundles
/// (an OPEN, ADDs of one FLOW_MOD each, a COMMIT, all of one id with `ATOMIC | ORDERED`)
/// and the barrier that ends a pipeline write.
pub(super) fn unbundle(messages: &[Message]) -> Vec<Vec<FlowMod>> {
    let Some((Message::BarrierRequest, messages)) = messages.split_last() else {
        panic!("a pipeline write not ended by a barrier: {messages:?}");
    };
    let mut bundles = Vec::new();
    let mut open: Option<(u32, Vec<FlowMod>)> = None;
    for message in messages {
        match (message, &mut open) {
            (Message::BundleControl(control), None) => {
                assert_eq!(
                    control.ctrl_type,
                    BundleCtrlType::OpenRequest,
                    "{message:?}"
                );
                assert_eq!(control.flags, FLAG_ATOMIC | FLAG_ORDERED);
                open = Some((control.bundle_id, Vec::new()));
            }
            (Message::BundleAdd(add), Some((id, flow_mods))) => {
                assert_eq!(add.bundle_id, *id);
                assert_eq!(add.flags, FLAG_ATOMIC | FLAG_ORDERED);
                let (_, Message::FlowMod(flow_mod)) = Message::parse(&add.message).unwrap() else {
                    panic!("a bundle of something else than FLOW_MODs: {add:?}");
                };
                flow_mods.push(flow_mod);
            }
            (Message::BundleControl(control), Some((id, _))) => {
                assert_eq!(control.ctrl_type, BundleCtrlType::CommitRequest);
                assert_eq!(
                    (control.bundle_id, control.flags),
                    (*id, FLAG_ATOMIC | FLAG_ORDERED)
                );
                bundles.push(open.take().unwrap().1);
            }
            _ => panic!("{message:?} outside a bundle"),
        }
    }
    assert!(open.is_none(), "a bundle left open");
    bundles
}

/// A pipeline change: deletes of table 2 first, then adds, as the engine orders them.
fn change(deletes: u16, adds: u16) -> Vec<FlowMod> {
    let flow = |command, priority| FlowMod {
        command,
        table_id: 2,
        priority,
        ..FlowMod::default()
    };
    (0..deletes)
        .map(|n| flow(FlowModCommand::DeleteStrict, n))
        .chain((0..adds).map(|n| flow(FlowModCommand::Add, 1000 + n)))
        .collect()
}

fn error(err_type: ErrorType, code: u16, data: Vec<u8>) -> Message {
    Message::Error {
        err_type,
        code,
        data,
    }
}

/// 1.3's ONF experimenter error for a bundle, as Open vSwitch sends it.
fn onf_bundle_error(code: BundleFailedCode) -> Message {
    let mut data = ONF_ID.to_be_bytes().to_vec();
    data.extend_from_slice(&[4, 4, 0, 24, 0, 0, 0, 0]);
    error(ErrorType::Experimenter, 2300 + u16::from(code), data)
}

#[test]
fn a_pipeline_change_goes_as_one_atomic_ordered_bundle_deletes_first() {
    let now = Instant::now();
    let mut session = connected_1_3(config(), now);
    let flow_mods = change(2, 3);
    session.queue(Command::Pipeline(flow_mods.clone()));
    let out = sent(&mut session);
    let messages: Vec<Message> = out.iter().map(|(_, m)| m.clone()).collect();
    assert_eq!(unbundle(&messages), [flow_mods]);
    // Each message inside has its add's xid, as the switch checks.
    for (header, message) in &out {
        if let Message::BundleAdd(add) = message {
            assert_eq!(&add.message[4..8], &header.xid.to_be_bytes());
        }
    }
    let (commit, _) = out.last().unwrap();
    let reply = Message::BundleControl(BundleControl {
        bundle_id: 0,
        ctrl_type: BundleCtrlType::CommitReply,
        flags: FLAG_ATOMIC | FLAG_ORDERED,
    });
    session.handle_bytes(&wire(OF13, commit.xid, &reply), now);
    assert_eq!(events(&mut session), []);
    // The bundle is over: an error with its commit's xid is no longer its.
    session.handle_bytes(
        &wire(
            OF13,
            commit.xid,
            &onf_bundle_error(BundleFailedCode::Timeout),
        ),
        now,
    );
    assert_eq!(events(&mut session), []);
    assert_eq!(session.close_reason(), None);
}

#[test]
fn a_switch_without_bundles_is_told_once_and_then_written_one_flow_mod_per_entry() {
    let now = Instant::now();
    // BAD_EXPERIMENTER: no ONF extension; BAD_TYPE: a 1.3 switch that knows no
    // experimenter messages at all.
    for code in [BadRequestCode::BadExperimenter, BadRequestCode::BadType] {
        let mut session = connected_1_3(config(), now);
        session.queue(Command::Pipeline(change(1, 2)));
        let out = sent(&mut session);
        assert_eq!(out.len(), 6);
        assert_eq!(out[5].1, Message::BarrierRequest);
        // The switch refuses every message of the bundle; only the first error says
        // something.
        for (header, _) in &out[..5] {
            let refusal = error(ErrorType::BadRequest, u16::from(code), Vec::new());
            session.handle_bytes(&wire(OF13, header.xid, &refusal), now);
        }
        assert_eq!(
            events(&mut session),
            [SwitchEvent::BundlesUnsupported],
            "{code:?}"
        );
        let flow_mods = change(1, 2);
        session.queue(Command::Pipeline(flow_mods.clone()));
        let plain: Vec<Message> = flow_mods
            .into_iter()
            .map(Message::FlowMod)
            .chain([Message::BarrierRequest])
            .collect();
        assert_eq!(sent_messages(&mut session), plain);
    }
}

#[test]
fn a_refused_bundle_is_reported_once_and_a_full_table_says_so() {
    let now = Instant::now();
    let mut session = connected_1_3(config(), now);
    // The switch took an OPEN before: BAD_TYPE for a later one is a refusal, not a lack of
    // bundles.
    let table_full = error(ErrorType::from(5), 1, Vec::new());
    let bad_match = error(ErrorType::from(4), 6, Vec::new());
    for (first, expected) in [(&bad_match, false), (&table_full, true)] {
        session.queue(Command::Pipeline(change(0, 3)));
        let out = sent(&mut session);
        let (open, add, commit) = (out[0].0.xid, out[2].0.xid, out[4].0.xid);
        let open_reply = Message::BundleControl(BundleControl {
            bundle_id: 0,
            ctrl_type: BundleCtrlType::OpenReply,
            flags: FLAG_ATOMIC | FLAG_ORDERED,
        });
        session.handle_bytes(&wire(OF13, open, &open_reply), now);
        session.handle_bytes(&wire(OF13, add, first), now);
        let failed = onf_bundle_error(BundleFailedCode::MsgFailed);
        session.handle_bytes(&wire(OF13, commit, &failed), now);
        assert_eq!(
            events(&mut session),
            [SwitchEvent::BundleRefused {
                table_full: expected
            }]
        );
    }
    // A refusal is no reason to stop bundling.
    session.queue(Command::Pipeline(change(0, 1)));
    let out = sent(&mut session);
    let open = out[0].0.xid;
    let messages: Vec<Message> = out.into_iter().map(|(_, m)| m).collect();
    assert_eq!(unbundle(&messages).len(), 1);
    let refusal = error(ErrorType::BadRequest, 1, Vec::new());
    session.handle_bytes(&wire(OF13, open, &refusal), now);
    assert_eq!(
        events(&mut session),
        [SwitchEvent::BundleRefused { table_full: false }]
    );
}

#[test]
fn a_change_larger_than_a_bundle_goes_as_several_in_order() {
    let now = Instant::now();
    let mut session = connected_1_3(config(), now);
    let count = u16::try_from(MAX_BUNDLE_MESSAGES).unwrap();
    let flow_mods = change(1, count);
    session.queue(Command::Pipeline(flow_mods.clone()));
    let bundles = unbundle(&sent_messages(&mut session));
    assert_eq!(bundles.len(), 2);
    assert_eq!(bundles[0].len(), MAX_BUNDLE_MESSAGES);
    assert_eq!(bundles.concat(), flow_mods);
    assert_eq!(session.close_reason(), None);
}

#[test]
fn the_bundles_followed_are_bounded() {
    let now = Instant::now();
    let mut session = connected_1_3(config(), now);
    let mut opens = Vec::new();
    for _ in 0..=MAX_BUNDLES_IN_FLIGHT {
        session.queue(Command::Pipeline(change(0, 1)));
        opens.push(sent(&mut session)[0].0.xid);
    }
    let refusal = error(ErrorType::from(4), 6, Vec::new());
    // The oldest was forgotten: its error is an error of no bundle, and is only logged.
    session.handle_bytes(&wire(OF13, opens[0], &refusal), now);
    assert_eq!(events(&mut session), []);
    session.handle_bytes(&wire(OF13, opens[1], &refusal), now);
    assert_eq!(
        events(&mut session),
        [SwitchEvent::BundleRefused { table_full: false }]
    );
}

#[test]
fn bundle_messages_are_not_added_for_a_1_0_switch() {
    let now = Instant::now();
    let mut session = connected_1_0(config(), now);
    session.queue(Command::Pipeline(change(0, 2)));
    assert_eq!(sent_messages(&mut session), []);
    assert_eq!(session.close_reason(), None);
}

/// The barrier after a pipeline write tells the engine the switch has taken it; the
/// reply to an earlier write's barrier says nothing once a later write is out.
#[test]
fn the_barrier_after_a_pipeline_write_says_when_the_switch_has_taken_it() {
    let now = Instant::now();
    let mut session = connected_1_3(config(), now);
    session.queue(Command::Pipeline(change(0, 1)));
    let (first_barrier, message) = sent(&mut session).pop().unwrap();
    assert_eq!(message, Message::BarrierRequest);
    session.queue(Command::Pipeline(change(0, 1)));
    let (last_barrier, _) = sent(&mut session).pop().unwrap();
    session.handle_bytes(&wire(OF13, first_barrier.xid, &Message::BarrierReply), now);
    assert_eq!(events(&mut session), []);
    session.handle_bytes(&wire(OF13, last_barrier.xid, &Message::BarrierReply), now);
    assert_eq!(events(&mut session), [SwitchEvent::PipelineWritten]);
    // Once only.
    session.handle_bytes(&wire(OF13, last_barrier.xid, &Message::BarrierReply), now);
    assert_eq!(events(&mut session), []);
}
