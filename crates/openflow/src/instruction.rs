//! 1.3 instructions. `OFPIT_METER` and `OFPIT_APPLY_ACTIONS` are modelled: a flow's
//! meter travels in the first, its actions in one of the second, and other instructions
//! are skipped on parsing.

use crate::action::{self, Action};
use crate::wire::{length_u16, sub, tail};
use crate::{Error, Version};

/// `OFPIT_APPLY_ACTIONS`.
pub const INSTRUCTION_APPLY_ACTIONS: u16 = 4;
/// `OFPIT_METER`.
pub const INSTRUCTION_METER: u16 = 6;
/// Length of `ofp_instruction_meter` (type, length, meter id).
pub const METER_INSTRUCTION_LEN: usize = 8;
/// Length of `ofp_instruction_actions` before its actions (type, length, 4 pad bytes).
pub const ACTIONS_INSTRUCTION_HEADER_LEN: usize = 8;
/// Length of the type-and-length header every instruction starts with.
const INSTRUCTION_HEADER_LEN: usize = 4;

view! {
    /// A view of one instruction: type, length, then a type-specific body.
    Instruction
}

fields!(Instruction {
    /// `OFPIT_*` instruction type.
    instruction_type / set_instruction_type: u16 = 0;
    /// Length of the whole instruction, header included.
    length / set_length: u16 = 2;
});

impl<T: AsRef<[u8]>> Instruction<T> {
    /// Checks that the length is a non-zero multiple of 8 (every instruction is at least
    /// 8 bytes) and that the buffer holds that many bytes.
    pub fn check_len(&self) -> Result<(), Error> {
        let buffer = self.buffer.as_ref();
        Error::need("instruction header", buffer, INSTRUCTION_HEADER_LEN)?;
        let length = usize::from(self.length());
        if length == 0 || length % 8 != 0 {
            return Err(Error::BadLength {
                what: "instruction",
                length,
            });
        }
        Error::need("instruction", buffer, length)
    }

    /// The meter id of a `METER` instruction.
    pub fn meter_id(&self) -> u32 {
        crate::wire::read_field(self.buffer.as_ref(), INSTRUCTION_HEADER_LEN)
    }

    /// The action list of an `APPLY_ACTIONS` (or `WRITE_ACTIONS`) instruction.
    pub fn actions(&self) -> &[u8] {
        sub(
            self.buffer.as_ref(),
            ACTIONS_INSTRUCTION_HEADER_LEN,
            usize::from(self.length()),
        )
    }
}

/// What a flow's instruction list says, in the terms [`crate::FlowMod`] keeps.
pub(crate) struct Instructions {
    pub meter_id: Option<u32>,
    pub actions: Vec<Action>,
}

/// Collects the actions of every `APPLY_ACTIONS` instruction and the meter of the
/// first `METER` instruction in a list that fills `bytes`; other instructions are
/// skipped.
pub(crate) fn parse_list(mut bytes: &[u8]) -> Result<Instructions, Error> {
    let mut actions = Vec::new();
    let mut meter_id = None;
    while !bytes.is_empty() {
        let instruction = Instruction::new_checked(bytes)?;
        match instruction.instruction_type() {
            INSTRUCTION_APPLY_ACTIONS => {
                actions.extend(action::parse_list(Version::Of13, instruction.actions())?);
            }
            INSTRUCTION_METER => {
                if usize::from(instruction.length()) != METER_INSTRUCTION_LEN {
                    return Err(Error::BadLength {
                        what: "METER instruction",
                        length: usize::from(instruction.length()),
                    });
                }
                meter_id = meter_id.or(Some(instruction.meter_id()));
            }
            _ => {}
        }
        bytes = tail(bytes, usize::from(instruction.length()));
    }
    Ok(Instructions { meter_id, actions })
}

/// Bytes the instruction list takes: a `METER` instruction when there is a meter, and
/// one `APPLY_ACTIONS` when there are actions (none: a drop flow).
pub(crate) fn list_len(meter_id: Option<u32>, actions: &[Action]) -> usize {
    let meter = if meter_id.is_some() {
        METER_INSTRUCTION_LEN
    } else {
        0
    };
    meter.saturating_add(apply_actions_len(actions))
}

fn apply_actions_len(actions: &[Action]) -> usize {
    if actions.is_empty() {
        0
    } else {
        ACTIONS_INSTRUCTION_HEADER_LEN.saturating_add(action::list_len(Version::Of13, actions))
    }
}

/// Writes the instruction list into a zeroed buffer of [`list_len`] bytes. The meter
/// goes first, the order in which the switch applies the instructions.
pub(crate) fn emit_list(
    meter_id: Option<u32>,
    actions: &[Action],
    mut buffer: &mut [u8],
) -> Result<(), Error> {
    if let Some(meter_id) = meter_id {
        let mut view = Instruction::new_unchecked(&mut *buffer);
        view.set_instruction_type(INSTRUCTION_METER);
        view.set_length(METER_INSTRUCTION_LEN as u16);
        crate::wire::write_field(buffer, INSTRUCTION_HEADER_LEN, meter_id);
        buffer = crate::wire::tail_mut(buffer, METER_INSTRUCTION_LEN);
    }
    if actions.is_empty() {
        return Ok(());
    }
    let length = length_u16("APPLY_ACTIONS instruction", apply_actions_len(actions))?;
    let mut view = Instruction::new_unchecked(&mut *buffer);
    view.set_instruction_type(INSTRUCTION_APPLY_ACTIONS);
    view.set_length(length);
    action::emit_list(
        Version::Of13,
        actions,
        crate::wire::tail_mut(buffer, ACTIONS_INSTRUCTION_HEADER_LEN),
    )
}
