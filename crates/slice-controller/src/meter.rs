//! The switch-side PACKET_IN meter on OpenFlow 1.3.
//!
//! The token buckets of [`crate::limits`] drop a PACKET_IN flood only once it has crossed
//! the control channel. A 1.3 switch with meters can drop it before: the table-miss flow
//! (the one that sends to the controller what matches nothing) passes a meter whose drop
//! band is the switch's PACKET_IN rate. [`MeterSetup`] is the conversation that gets it
//! there: ask for the meter features, install the meter if they allow one, and only then
//! install the table-miss flow with the meter instruction; on 1.0, without meter support,
//! on an error or without an answer, the table-miss flow goes in as before and the token
//! buckets alone do the limiting.
//!
//! It owns no socket and no clock: the connection feeds it what the switch says and the
//! time, and writes what it hands back.

use std::time::{Duration, Instant};

use openflow::error_msg::MeterModFailedCode;
use openflow::meter::{METER_BAND_DROP, METER_FLAG_BURST, METER_FLAG_PKTPS, METER_FLAG_STATS};
use openflow::{
    port, Action, ErrorType, FlowMod, Message, MeterBand, MeterFeatures, MeterMod, MeterModCommand,
    Version,
};

/// The meter that limits PACKET_INs. Fixed, because sliced owns the switch's meters: it
/// replaces this one on every connect (and as a new master takes the switch over).
pub const PACKET_IN_METER_ID: u32 = 1;
/// The meter of the probes that arrive at confirmed link ends: a budget of their own, so
/// that no host flooding the table-miss flow or LLDP at its own port can starve the
/// probes that keep a cable alive (docs/controller.md, "The PACKET_IN meter").
pub const LINK_PROBE_METER_ID: u32 = 2;

// Transaction ids of the setup's requests, so that replies and errors can be told apart
// from those to the engine's commands (whose ids count up from 1). "MTR" and a step.
const XID_FEATURES: u32 = 0x4d54_5201;
const XID_FEATURES_BARRIER: u32 = 0x4d54_5202;
const XID_MODIFY: u32 = 0x4d54_5203;
const XID_ADD: u32 = 0x4d54_5204;
const XID_INSTALLED: u32 = 0x4d54_5205;
const XID_MODIFY_LINK: u32 = 0x4d54_5206;
const XID_ADD_LINK: u32 = 0x4d54_5207;
const OUR_XIDS: [u32; 7] = [
    XID_FEATURES,
    XID_FEATURES_BARRIER,
    XID_MODIFY,
    XID_ADD,
    XID_INSTALLED,
    XID_MODIFY_LINK,
    XID_ADD_LINK,
];

/// Which way a switch went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MeterDecision {
    /// The switch drops PACKET_INs above `rate` per second itself.
    Metered {
        meter_id: u32,
        rate: u32,
        /// The burst the switch allows, when it supports bursts.
        burst: Option<u32>,
    },
    /// No meter; the reason, for the log.
    Unmetered(String),
}

impl MeterDecision {
    pub fn is_metered(&self) -> bool {
        matches!(self, MeterDecision::Metered { .. })
    }
}

/// What the connection should do after feeding the setup something.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct MeterStep {
    /// Messages to write, in order, each with its transaction id.
    pub send: Vec<(u32, Message)>,
    /// The table-miss flow the engine asked for before the decision, to write after
    /// `send` with an id of the connection's own.
    pub table_miss: Option<Message>,
    /// Set once, when the setup comes to its decision.
    pub decided: Option<MeterDecision>,
}

#[derive(Debug)]
enum Phase {
    AskingFeatures,
    /// The meter is on its way; `burst` is the burst it allows, if the switch has bursts.
    Installing {
        burst: Option<u32>,
    },
    Decided {
        meter_id: Option<u32>,
    },
}

/// The meter conversation with one switch.
#[derive(Debug)]
pub struct MeterSetup {
    phase: Phase,
    rate: u32,
    burst: u32,
    deadline: Instant,
    /// The engine asked for the table-miss flow before the decision.
    table_miss_held: bool,
    /// The meters being installed (PACKET_INs, link probes), to modify those the switch
    /// has already.
    meter_mods: Vec<MeterMod>,
}

impl MeterSetup {
    /// Starts the setup for a switch speaking wire `version`, for a meter of `rate`
    /// PACKET_INs per second with bursts of `burst`. A switch that has not settled it
    /// by `now + patience` goes without a meter.
    pub fn start(
        version: Version,
        rate: u32,
        burst: u32,
        now: Instant,
        patience: Duration,
    ) -> (Self, MeterStep) {
        let mut setup = Self {
            phase: Phase::AskingFeatures,
            rate,
            burst,
            deadline: now + patience,
            table_miss_held: false,
            meter_mods: Vec::new(),
        };
        if version == Version::Of10 {
            let step = setup.decide(MeterDecision::Unmetered(
                "OpenFlow 1.0 has no meters".into(),
            ));
            return (setup, step);
        }
        // The barrier settles it for a switch that ignores the request instead of
        // answering it or refusing it, as the specification would have it.
        let step = MeterStep {
            send: vec![
                (XID_FEATURES, Message::MeterFeaturesRequest),
                (XID_FEATURES_BARRIER, Message::BarrierRequest),
            ],
            ..MeterStep::default()
        };
        (setup, step)
    }

    /// Whether the setup came to a decision, either way.
    pub fn is_decided(&self) -> bool {
        matches!(self.phase, Phase::Decided { .. })
    }

    /// A setup decided without a meter and without asking the switch anything, for a
    /// switch this instance may not write to yet; [`MeterSetup::start`] again once it
    /// may.
    pub fn deferred(reason: &str, now: Instant) -> (Self, MeterStep) {
        let mut setup = Self {
            phase: Phase::AskingFeatures,
            rate: 0,
            burst: 0,
            deadline: now,
            table_miss_held: false,
            meter_mods: Vec::new(),
        };
        let step = setup.decide(MeterDecision::Unmetered(reason.to_owned()));
        (setup, step)
    }

    /// The meter of the table-miss flow, once decided (None: no meter).
    pub fn meter_id(&self) -> Option<u32> {
        match self.phase {
            Phase::Decided { meter_id } => meter_id,
            _ => None,
        }
    }

    /// The table-miss flow, when the engine asks for it: at once when the decision is
    /// made, else None, and the flow comes in the step that makes the decision.
    pub fn table_miss(&mut self) -> Option<Message> {
        match self.phase {
            Phase::Decided { meter_id } => Some(table_miss_flow(meter_id)),
            _ => {
                self.table_miss_held = true;
                None
            }
        }
    }

    /// Feeds the setup a message from the switch. None: not part of the setup, the
    /// connection handles it as usual. Some: the setup took it.
    pub fn handle(&mut self, xid: u32, message: &Message) -> Option<MeterStep> {
        match (&self.phase, message) {
            (Phase::AskingFeatures, Message::MeterFeaturesReply(features)) => {
                Some(match install(features, self.rate, self.burst) {
                    Ok(meter_mods) => {
                        let burst =
                            (meter_mods[0].flags & METER_FLAG_BURST != 0).then_some(self.burst);
                        self.phase = Phase::Installing { burst };
                        // Never a delete first: deleting a meter deletes every flow that
                        // uses it, the table-miss flow another instance (or this one,
                        // before a restart) set up among them. A meter already there is
                        // modified instead, when the add says so.
                        let adds = [XID_ADD, XID_ADD_LINK]
                            .into_iter()
                            .zip(meter_mods.iter().cloned().map(Message::MeterMod));
                        let step = MeterStep {
                            send: adds
                                .chain([(XID_INSTALLED, Message::BarrierRequest)])
                                .collect(),
                            ..MeterStep::default()
                        };
                        self.meter_mods = meter_mods.to_vec();
                        step
                    }
                    Err(reason) => self.decide(MeterDecision::Unmetered(reason)),
                })
            }
            (Phase::AskingFeatures, Message::Error { err_type, code, .. })
                if xid == XID_FEATURES =>
            {
                Some(self.decide(MeterDecision::Unmetered(format!(
                    "the switch refused the meter features request \
                     (error type {err_type:?} code {code})"
                ))))
            }
            (Phase::AskingFeatures, Message::BarrierReply) if xid == XID_FEATURES_BARRIER => {
                Some(self.decide(MeterDecision::Unmetered(
                    "the switch did not answer the meter features request".into(),
                )))
            }
            (Phase::Installing { .. }, Message::Error { err_type, code, .. })
                if (xid == XID_ADD || xid == XID_ADD_LINK)
                    && *err_type == ErrorType::MeterModFailed
                    && MeterModFailedCode::from(*code) == MeterModFailedCode::MeterExists =>
            {
                // The meter is there: the modify brings it to this setup's rate. The
                // add's barrier decides, as it would have.
                let (which, modify_xid) = if xid == XID_ADD {
                    (0, XID_MODIFY)
                } else {
                    (1, XID_MODIFY_LINK)
                };
                let modify = self
                    .meter_mods
                    .get(which)
                    .cloned()
                    .map(|meter_mod| MeterMod {
                        command: MeterModCommand::Modify,
                        ..meter_mod
                    });
                Some(MeterStep {
                    send: modify
                        .map(|modify| (modify_xid, Message::MeterMod(modify)))
                        .into_iter()
                        .chain([(XID_INSTALLED, Message::BarrierRequest)])
                        .collect(),
                    ..MeterStep::default()
                })
            }
            (Phase::Installing { .. }, Message::Error { err_type, code, .. })
                if [XID_ADD, XID_MODIFY, XID_ADD_LINK, XID_MODIFY_LINK].contains(&xid) =>
            {
                let what = if *err_type == ErrorType::MeterModFailed {
                    "meter mod failed"
                } else {
                    "error"
                };
                Some(self.decide(MeterDecision::Unmetered(format!(
                    "the switch refused the meter ({what}: type {err_type:?} code {code})"
                ))))
            }
            (&Phase::Installing { burst }, Message::BarrierReply) if xid == XID_INSTALLED => {
                let decision = MeterDecision::Metered {
                    meter_id: PACKET_IN_METER_ID,
                    rate: self.rate,
                    burst,
                };
                Some(self.decide(decision))
            }
            // Late or stray answers to the setup's own requests (the delete's error, the
            // features barrier after the features) are the setup's to swallow.
            (_, Message::MeterFeaturesReply(_)) => Some(MeterStep::default()),
            (_, Message::Error { .. } | Message::BarrierReply) if OUR_XIDS.contains(&xid) => {
                Some(MeterStep::default())
            }
            _ => None,
        }
    }

    /// When [`Self::expire`] gives up on the switch, while the setup is undecided.
    pub fn deadline(&self) -> Option<Instant> {
        (!matches!(self.phase, Phase::Decided { .. })).then_some(self.deadline)
    }

    /// Gives up on a switch that has not settled the setup by its deadline.
    pub fn expire(&mut self, now: Instant) -> Option<MeterStep> {
        if matches!(self.phase, Phase::Decided { .. }) || now < self.deadline {
            return None;
        }
        Some(self.decide(MeterDecision::Unmetered(
            "the switch did not complete the meter setup in time".into(),
        )))
    }

    fn decide(&mut self, decision: MeterDecision) -> MeterStep {
        let meter_id = match decision {
            MeterDecision::Metered { meter_id, .. } => Some(meter_id),
            MeterDecision::Unmetered(_) => None,
        };
        self.phase = Phase::Decided { meter_id };
        MeterStep {
            send: Vec::new(),
            table_miss: std::mem::take(&mut self.table_miss_held)
                .then(|| table_miss_flow(meter_id)),
            decided: Some(decision),
        }
    }
}

/// The METER_MODs for a switch with `features` (the PACKET_IN meter, then the link
/// probes' meter), or why there are none.
fn install(features: &MeterFeatures, rate: u32, burst: u32) -> Result<[MeterMod; 2], String> {
    if features.max_meter < PACKET_IN_METER_ID {
        return Err("the switch has no meters".into());
    }
    if features.max_meter < LINK_PROBE_METER_ID {
        return Err("the switch has one meter, and sliced needs two".into());
    }
    if !features.supports_band(METER_BAND_DROP) {
        return Err("the switch's meters have no drop band".into());
    }
    if !features.supports_flags(METER_FLAG_PKTPS) {
        return Err("the switch's meters do not count packets".into());
    }
    let mut flags = METER_FLAG_PKTPS;
    let mut burst_size = 0;
    if features.supports_flags(METER_FLAG_BURST) {
        flags |= METER_FLAG_BURST;
        burst_size = burst;
    }
    if features.supports_flags(METER_FLAG_STATS) {
        // So that an operator can read what the switch dropped.
        flags |= METER_FLAG_STATS;
    }
    // The link probes get the PACKET_IN budget again: one probe per link end and LLDP
    // interval needs far less, and no host can send into it.
    Ok(
        [PACKET_IN_METER_ID, LINK_PROBE_METER_ID].map(|meter_id| MeterMod {
            command: MeterModCommand::Add,
            flags,
            meter_id,
            bands: vec![MeterBand::Drop { rate, burst_size }],
        }),
    )
}

/// The flow that sends what matches nothing to the controller, through `meter_id`.
pub fn table_miss_flow(meter_id: Option<u32>) -> Message {
    Message::FlowMod(FlowMod {
        cookie: crate::cookie::FlowKind::TableMiss.cookie(),
        meter_id,
        actions: vec![Action::Output {
            port: port::CONTROLLER,
            max_len: openflow::action::WHOLE_PACKET,
        }],
        ..FlowMod::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use openflow::error_msg::{BadRequestCode, MeterModFailedCode};
    use openflow::meter::{METER_BAND_DSCP_REMARK, METER_FLAG_KBPS};

    const RATE: u32 = 1000;
    const BURST: u32 = 2000;

    fn ovs_like() -> MeterFeatures {
        MeterFeatures {
            max_meter: 65536,
            band_types: 1 << METER_BAND_DROP,
            capabilities: u32::from(
                METER_FLAG_KBPS | METER_FLAG_PKTPS | METER_FLAG_BURST | METER_FLAG_STATS,
            ),
            max_bands: 1,
            max_color: 0,
        }
    }

    fn start(version: Version) -> (MeterSetup, MeterStep, Instant) {
        let now = Instant::now();
        let (setup, step) = MeterSetup::start(version, RATE, BURST, now, Duration::from_secs(10));
        (setup, step, now)
    }

    fn metered(table_miss: &Message) -> Option<u32> {
        match table_miss {
            Message::FlowMod(flow_mod) => flow_mod.meter_id,
            other => panic!("not a FLOW_MOD: {other:?}"),
        }
    }

    #[test]
    fn a_switch_with_meters_gets_the_meter_then_the_metered_table_miss() {
        let (mut setup, step, _) = start(Version::Of13);
        assert_eq!(
            step.send,
            [
                (XID_FEATURES, Message::MeterFeaturesRequest),
                (XID_FEATURES_BARRIER, Message::BarrierRequest),
            ]
        );
        // The engine's table-miss request waits for the decision.
        assert_eq!(setup.table_miss(), None);

        let step = setup
            .handle(XID_FEATURES, &Message::MeterFeaturesReply(ovs_like()))
            .unwrap();
        let add = MeterMod {
            command: MeterModCommand::Add,
            flags: METER_FLAG_PKTPS | METER_FLAG_BURST | METER_FLAG_STATS,
            meter_id: PACKET_IN_METER_ID,
            bands: vec![MeterBand::Drop {
                rate: RATE,
                burst_size: BURST,
            }],
        };
        let add_link = MeterMod {
            meter_id: LINK_PROBE_METER_ID,
            ..add.clone()
        };
        // Two adds (PACKET_INs, link probes) and their barrier, never a delete: a delete
        // would take every flow using the meter with it (another instance's table-miss
        // flow among them).
        assert_eq!(
            step.send,
            [
                (XID_ADD, Message::MeterMod(add.clone())),
                (XID_ADD_LINK, Message::MeterMod(add_link.clone())),
                (XID_INSTALLED, Message::BarrierRequest),
            ]
        );
        assert_eq!((step.table_miss, step.decided), (None, None));

        // The features barrier answers late: it decides nothing.
        assert_eq!(
            setup.handle(XID_FEATURES_BARRIER, &Message::BarrierReply),
            Some(MeterStep::default())
        );
        // The switch has a meter 1 (an earlier connection's): it is modified, not
        // deleted and added again.
        let exists = Message::Error {
            err_type: ErrorType::MeterModFailed,
            code: MeterModFailedCode::MeterExists.into(),
            data: Vec::new(),
        };
        let step = setup.handle(XID_ADD, &exists).unwrap();
        let modify = MeterMod {
            command: MeterModCommand::Modify,
            ..add
        };
        assert_eq!(
            step.send,
            [
                (XID_MODIFY, Message::MeterMod(modify)),
                (XID_INSTALLED, Message::BarrierRequest),
            ]
        );
        assert_eq!(step.decided, None);
        // And its meter 2.
        let step = setup.handle(XID_ADD_LINK, &exists).unwrap();
        let modify_link = MeterMod {
            command: MeterModCommand::Modify,
            ..add_link
        };
        assert_eq!(
            step.send,
            [
                (XID_MODIFY_LINK, Message::MeterMod(modify_link)),
                (XID_INSTALLED, Message::BarrierRequest),
            ]
        );
        assert_eq!(step.decided, None);

        let step = setup.handle(XID_INSTALLED, &Message::BarrierReply).unwrap();
        assert_eq!(
            step.decided,
            Some(MeterDecision::Metered {
                meter_id: PACKET_IN_METER_ID,
                rate: RATE,
                burst: Some(BURST)
            })
        );
        assert_eq!(step.table_miss.as_ref().and_then(metered), Some(1));
        assert_eq!(setup.table_miss().as_ref().and_then(metered), Some(1));
        assert_eq!(setup.meter_id(), Some(1));
    }

    #[test]
    fn without_burst_support_the_meter_has_no_burst() {
        let (mut setup, _, _) = start(Version::Of13);
        let features = MeterFeatures {
            capabilities: u32::from(METER_FLAG_PKTPS),
            ..ovs_like()
        };
        let step = setup
            .handle(1, &Message::MeterFeaturesReply(features))
            .unwrap();
        let Message::MeterMod(add) = &step.send[0].1 else {
            panic!("{step:?}")
        };
        assert_eq!(add.flags, METER_FLAG_PKTPS);
        assert_eq!(
            add.bands,
            [MeterBand::Drop {
                rate: RATE,
                burst_size: 0
            }]
        );
    }

    fn unmetered_after(features: MeterFeatures) -> MeterStep {
        let (mut setup, _, _) = start(Version::Of13);
        setup.table_miss();
        let step = setup
            .handle(XID_FEATURES, &Message::MeterFeaturesReply(features))
            .unwrap();
        assert!(step.send.is_empty(), "{step:?}");
        assert_eq!(setup.meter_id(), None);
        step
    }

    #[test]
    fn switches_whose_meters_cannot_do_it_get_the_plain_table_miss() {
        let cases = [
            MeterFeatures::default(),
            MeterFeatures {
                max_meter: 0,
                ..ovs_like()
            },
            // One meter: the link probes would share the PACKET_INs' budget.
            MeterFeatures {
                max_meter: 1,
                ..ovs_like()
            },
            MeterFeatures {
                band_types: 1 << METER_BAND_DSCP_REMARK,
                ..ovs_like()
            },
            MeterFeatures {
                capabilities: u32::from(METER_FLAG_KBPS),
                ..ovs_like()
            },
        ];
        for features in cases {
            let step = unmetered_after(features);
            assert!(
                matches!(step.decided, Some(MeterDecision::Unmetered(_))),
                "{features:?}"
            );
            assert_eq!(step.table_miss.as_ref().and_then(metered), None);
            assert!(step.table_miss.is_some());
        }
    }

    #[test]
    fn openflow_1_0_decides_at_once_without_a_word() {
        let (mut setup, step, _) = start(Version::Of10);
        assert!(step.send.is_empty());
        assert!(matches!(step.decided, Some(MeterDecision::Unmetered(_))));
        assert_eq!(setup.table_miss().as_ref().and_then(metered), None);
    }

    #[test]
    fn a_refused_request_or_meter_falls_back() {
        let error = Message::Error {
            err_type: ErrorType::BadRequest,
            code: BadRequestCode::BadMultipart.into(),
            data: Vec::new(),
        };
        let (mut setup, _, _) = start(Version::Of13);
        let step = setup.handle(XID_FEATURES, &error).unwrap();
        assert!(matches!(step.decided, Some(MeterDecision::Unmetered(_))));

        let (mut setup, _, _) = start(Version::Of13);
        assert!(setup
            .handle(XID_FEATURES_BARRIER, &Message::BarrierReply)
            .unwrap()
            .decided
            .is_some());

        let (mut setup, _, _) = start(Version::Of13);
        setup.handle(XID_FEATURES, &Message::MeterFeaturesReply(ovs_like()));
        setup.table_miss();
        let bad_rate = Message::Error {
            err_type: ErrorType::MeterModFailed,
            code: MeterModFailedCode::BadRate.into(),
            data: Vec::new(),
        };
        let step = setup.handle(XID_ADD, &bad_rate).unwrap();
        assert!(matches!(step.decided, Some(MeterDecision::Unmetered(_))));
        assert_eq!(step.table_miss.as_ref().and_then(metered), None);
        // The barrier after the refused meter changes nothing.
        assert_eq!(
            setup.handle(XID_INSTALLED, &Message::BarrierReply),
            Some(MeterStep::default())
        );
        assert_eq!(setup.meter_id(), None);
    }

    #[test]
    fn a_silent_switch_goes_unmetered_at_the_deadline() {
        let (mut setup, _, now) = start(Version::Of13);
        setup.table_miss();
        assert_eq!(setup.expire(now + Duration::from_secs(9)), None);
        let step = setup.expire(now + Duration::from_secs(10)).unwrap();
        assert!(matches!(step.decided, Some(MeterDecision::Unmetered(_))));
        assert!(step.table_miss.is_some());
        assert_eq!(setup.expire(now + Duration::from_secs(20)), None);
        // A reply after the deadline changes nothing.
        assert_eq!(
            setup.handle(XID_FEATURES, &Message::MeterFeaturesReply(ovs_like())),
            Some(MeterStep::default())
        );
        assert_eq!(setup.meter_id(), None);
    }

    #[test]
    fn messages_not_for_the_setup_are_left_to_the_connection() {
        let (mut setup, _, _) = start(Version::Of13);
        assert_eq!(setup.handle(7, &Message::BarrierReply), None);
        let error = Message::Error {
            err_type: ErrorType::BadAction,
            code: 0,
            data: Vec::new(),
        };
        assert_eq!(setup.handle(7, &error), None);
        assert_eq!(
            setup.handle(XID_FEATURES, &Message::EchoRequest(Vec::new())),
            None
        );
    }
}
