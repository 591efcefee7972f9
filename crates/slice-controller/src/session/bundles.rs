//! A pipeline change written as bundles: OPEN, one ADD per FLOW_MOD in the engine's
//! order (deletes, then adds), COMMIT with `ATOMIC | ORDERED`. The switch applies all of
//! it or none, and parses it in one go: Open vSwitch took 37.2 s for a core switch's
//! 2,077 entries sent one FLOW_MOD each, 0.22 s as one bundle (issue 36).
//!
//! On 1.3 a bundle is Open vSwitch's ONF extension, which other switches may lack. The
//! first bundle finds out: a switch that answers its OPEN with `OFPBRC_BAD_TYPE`,
//! `BAD_EXPERIMENTER` or `BAD_EXP_TYPE` refused every message of it (a switch applies
//! no ADD of a bundle it never opened), is remembered as one without bundles for the
//! rest of the connection, and the engine reads it back and fills it again, now one
//! FLOW_MOD per entry ([`SwitchEvent::BundlesUnsupported`]). Any other error answering
//! a message of a bundle means the switch refused it as a whole, so it keeps the table
//! it had ([`SwitchEvent::BundleRefused`], once per bundle).
//!
//! Bounds: a change of more than [`MAX_BUNDLE_MESSAGES`] FLOW_MODs goes as several
//! bundles, each atomic, in order; the session follows at most
//! [`MAX_BUNDLES_IN_FLIGHT`] uncommitted bundles, forgetting the oldest past that (its
//! errors then read as errors of plain FLOW_MODs).

use std::collections::VecDeque;

use openflow::bundle::{self, FLAG_ATOMIC, FLAG_ORDERED};
use openflow::error_msg::{self, BadRequestCode};
use openflow::{BundleAdd, BundleControl, BundleCtrlType, ErrorType, FlowMod, Message, Version};

use super::SwitchSession;
use crate::protocol::SwitchEvent;

/// FLOW_MODs in one bundle. Open vSwitch sets no count of its own; it holds a bundle in
/// memory until the commit, and drops one idle for 10 s, so a bundle must be quick to
/// send. 4,096 entries (about 500 KiB on the wire) is twice the largest table of the k=16
/// fat tree (2,077 on a core switch), well within the outbound bound, and Open vSwitch
/// applies it in a fraction of a second.
pub(super) const MAX_BUNDLE_MESSAGES: usize = 4096;
/// Bundles sent and not yet answered that the session follows.
pub(super) const MAX_BUNDLES_IN_FLIGHT: usize = 64;

/// The flags of every bundle: all or nothing, in the order given.
const FLAGS: u16 = FLAG_ATOMIC | FLAG_ORDERED;

/// What the session knows of the switch's bundles.
#[derive(Debug, Default)]
pub(super) struct Bundles {
    /// None until the switch answers the first OPEN.
    supported: Option<bool>,
    next_id: u32,
    in_flight: VecDeque<InFlight>,
}

/// A bundle sent and not yet answered: its messages have the transaction ids from its
/// OPEN to its COMMIT.
#[derive(Debug)]
struct InFlight {
    open_xid: u32,
    commit_xid: u32,
    /// Its refusal was reported: later errors of it say nothing new.
    refused: bool,
}

impl InFlight {
    fn covers(&self, xid: u32) -> bool {
        xid.wrapping_sub(self.open_xid) <= self.commit_xid.wrapping_sub(self.open_xid)
    }
}

impl Bundles {
    /// Whether the switch is known to lack bundles.
    pub(super) fn unsupported(&self) -> bool {
        self.supported == Some(false)
    }

    /// A reply from the switch: an OPEN_REPLY says it has bundles, a COMMIT_REPLY ends
    /// the bundle.
    pub(super) fn reply(&mut self, xid: u32, control: &BundleControl) {
        match control.ctrl_type {
            BundleCtrlType::OpenReply if self.supported.is_none() => self.supported = Some(true),
            BundleCtrlType::CommitReply => self.in_flight.retain(|sent| sent.commit_xid != xid),
            _ => {}
        }
    }

    /// An error answering message `xid`: None when it is no message of a bundle, else
    /// the event it makes, if any.
    pub(super) fn error(
        &mut self,
        version: Version,
        xid: u32,
        err_type: ErrorType,
        code: u16,
        data: &[u8],
    ) -> Option<Option<SwitchEvent>> {
        let index = self.in_flight.iter().position(|sent| sent.covers(xid))?;
        let sent = &mut self.in_flight[index];
        let lacks_bundles = xid == sent.open_xid
            && self.supported != Some(true)
            && err_type == ErrorType::BadRequest
            && matches!(
                BadRequestCode::from(code),
                BadRequestCode::BadType
                    | BadRequestCode::BadExperimenter
                    | BadRequestCode::BadExpType
            );
        let event = if sent.refused {
            None
        } else if lacks_bundles {
            Some(SwitchEvent::BundlesUnsupported)
        } else {
            let table_full = error_msg::is_table_full(version, err_type, code);
            log::debug!(
                "bundle refused: error type {err_type:?} code {code} ({:?})",
                bundle::bundle_failure(err_type, code, data)
            );
            Some(SwitchEvent::BundleRefused { table_full })
        };
        sent.refused = true;
        if lacks_bundles {
            self.supported = Some(false);
        }
        if xid == sent.commit_xid {
            self.in_flight.remove(index);
        }
        Some(event)
    }

    fn open(&mut self, open_xid: u32) -> u32 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        if self.in_flight.len() >= MAX_BUNDLES_IN_FLIGHT {
            self.in_flight.pop_front();
        }
        self.in_flight.push_back(InFlight {
            open_xid,
            commit_xid: open_xid,
            refused: false,
        });
        id
    }

    fn committed(&mut self, commit_xid: u32) {
        if let Some(sent) = self.in_flight.back_mut() {
            sent.commit_xid = commit_xid;
        }
    }
}

impl SwitchSession {
    /// Writes one pipeline change: as bundles unless the switch lacks them, else one
    /// FLOW_MOD each.
    /// Either way a barrier follows, whose reply tells the engine that the switch has
    /// taken the change ([`SwitchEvent::PipelineWritten`]): the engine writes a switch
    /// that answers late no faster than it answers.
    pub(super) fn write_pipeline(&mut self, flow_mods: Vec<FlowMod>) {
        let bundled = self
            .open_mut()
            .is_some_and(|open| !open.bundles.unsupported());
        if bundled {
            for part in flow_mods.chunks(MAX_BUNDLE_MESSAGES) {
                self.send_bundle(part);
            }
        } else {
            for flow_mod in flow_mods {
                self.send(&Message::FlowMod(flow_mod));
            }
        }
        self.send(&Message::BarrierRequest);
        let barrier = self.next_xid;
        if let Some(open) = self.open_mut() {
            open.pipeline_barrier = Some(barrier);
        }
    }

    fn send_bundle(&mut self, flow_mods: &[FlowMod]) {
        let open_xid = self.next_xid.wrapping_add(1);
        let Some(bundle_id) = self.open_mut().map(|open| open.bundles.open(open_xid)) else {
            return;
        };
        let control = |ctrl_type| {
            Message::BundleControl(BundleControl {
                bundle_id,
                ctrl_type,
                flags: FLAGS,
            })
        };
        self.send(&control(BundleCtrlType::OpenRequest));
        for flow_mod in flow_mods {
            // The message inside carries its add's xid: the one `send` gives next.
            let xid = self.next_xid.wrapping_add(1);
            let mut message = Vec::new();
            let flow_mod = Message::FlowMod(flow_mod.clone());
            if let Err(err) = flow_mod.emit(self.version, xid, &mut message) {
                return self.close(err.into());
            }
            self.send(&Message::BundleAdd(BundleAdd {
                bundle_id,
                flags: FLAGS,
                message,
            }));
        }
        self.send(&control(BundleCtrlType::CommitRequest));
        let commit_xid = self.next_xid;
        if let Some(open) = self.open_mut() {
            open.bundles.committed(commit_xid);
        }
    }
}
