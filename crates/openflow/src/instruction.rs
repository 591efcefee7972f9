//! 1.3 instructions. Only `OFPIT_APPLY_ACTIONS` is modelled: a flow's actions travel in
//! one such instruction, and other instructions are skipped on parsing.

use crate::action::{self, Action};
use crate::wire::{length_u16, sub, tail};
use crate::{Error, OFP13};

/// `OFPIT_APPLY_ACTIONS`.
pub const INSTRUCTION_APPLY_ACTIONS: u16 = 4;
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

    /// The action list of an `APPLY_ACTIONS` (or `WRITE_ACTIONS`) instruction.
    pub fn actions(&self) -> &[u8] {
        sub(
            self.buffer.as_ref(),
            ACTIONS_INSTRUCTION_HEADER_LEN,
            usize::from(self.length()),
        )
    }
}

/// Collects the actions of every `APPLY_ACTIONS` instruction in a list that fills
/// `bytes`; other instructions are skipped.
pub(crate) fn parse_apply_actions(mut bytes: &[u8]) -> Result<Vec<Action>, Error> {
    let mut actions = Vec::new();
    while !bytes.is_empty() {
        let instruction = Instruction::new_checked(bytes)?;
        if instruction.instruction_type() == INSTRUCTION_APPLY_ACTIONS {
            actions.extend(action::parse_list(OFP13, instruction.actions())?);
        }
        bytes = tail(bytes, usize::from(instruction.length()));
    }
    Ok(actions)
}

/// Bytes the instruction list for `actions` takes: none for no actions (a drop flow),
/// else one `APPLY_ACTIONS`.
pub(crate) fn apply_actions_len(actions: &[Action]) -> usize {
    if actions.is_empty() {
        0
    } else {
        ACTIONS_INSTRUCTION_HEADER_LEN.saturating_add(action::list_len(OFP13, actions))
    }
}

/// Writes the instruction list for `actions` into a zeroed buffer of
/// [`apply_actions_len`] bytes.
pub(crate) fn emit_apply_actions(actions: &[Action], buffer: &mut [u8]) -> Result<(), Error> {
    if actions.is_empty() {
        return Ok(());
    }
    let length = length_u16("APPLY_ACTIONS instruction", apply_actions_len(actions))?;
    let mut view = Instruction::new_unchecked(&mut *buffer);
    view.set_instruction_type(INSTRUCTION_APPLY_ACTIONS);
    view.set_length(length);
    action::emit_list(
        OFP13,
        actions,
        crate::wire::tail_mut(buffer, ACTIONS_INSTRUCTION_HEADER_LEN),
    )
}
