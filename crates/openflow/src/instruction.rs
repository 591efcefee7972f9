//! 1.3 instructions. `OFPIT_METER`, `OFPIT_APPLY_ACTIONS`, `OFPIT_WRITE_METADATA` and
//! `OFPIT_GOTO_TABLE` are modelled: a flow's meter travels in the first, its actions in
//! one of the second, what it tells the next table in the third and which table that is
//! in the fourth; other instructions are skipped on parsing.

use crate::action::{self, Action};
use crate::flow_match::Masked;
use crate::wire::{length_u16, read_field, sub, tail, write_field};
use crate::{Error, Version};

/// `OFPIT_GOTO_TABLE`.
pub const INSTRUCTION_GOTO_TABLE: u16 = 1;
/// `OFPIT_WRITE_METADATA`.
pub const INSTRUCTION_WRITE_METADATA: u16 = 2;
/// `OFPIT_APPLY_ACTIONS`.
pub const INSTRUCTION_APPLY_ACTIONS: u16 = 4;
/// Length of `ofp_instruction_goto_table` (type, length, table id, 3 pad bytes).
pub const GOTO_TABLE_INSTRUCTION_LEN: usize = 8;
/// Length of `ofp_instruction_write_metadata` (type, length, 4 pad bytes, metadata,
/// mask).
pub const WRITE_METADATA_INSTRUCTION_LEN: usize = 24;
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
    pub write_metadata: Option<Masked<u64>>,
    pub goto_table: Option<u8>,
}

/// An instruction list to emit, borrowed from a [`crate::FlowMod`].
#[derive(Clone, Copy)]
pub(crate) struct InstructionsRef<'a> {
    pub meter_id: Option<u32>,
    pub actions: &'a [Action],
    pub write_metadata: Option<Masked<u64>>,
    pub goto_table: Option<u8>,
}

/// Checks that a fixed-size instruction has its one length.
fn expect_len(
    what: &'static str,
    instruction: &Instruction<&[u8]>,
    len: usize,
) -> Result<(), Error> {
    let length = usize::from(instruction.length());
    if length == len {
        Ok(())
    } else {
        Err(Error::BadLength { what, length })
    }
}

/// Collects the actions of every `APPLY_ACTIONS` instruction, and the first `METER`,
/// `WRITE_METADATA` and `GOTO_TABLE` instruction's value, in a list that fills `bytes`;
/// other instructions are skipped.
pub(crate) fn parse_list(mut bytes: &[u8]) -> Result<Instructions, Error> {
    let mut actions = Vec::new();
    let mut meter_id = None;
    let mut write_metadata = None;
    let mut goto_table = None;
    while !bytes.is_empty() {
        let instruction = Instruction::new_checked(bytes)?;
        match instruction.instruction_type() {
            INSTRUCTION_APPLY_ACTIONS => {
                actions.extend(action::parse_list(Version::Of13, instruction.actions())?);
            }
            INSTRUCTION_METER => {
                expect_len("METER instruction", &instruction, METER_INSTRUCTION_LEN)?;
                meter_id = meter_id.or(Some(instruction.meter_id()));
            }
            INSTRUCTION_WRITE_METADATA => {
                let what = "WRITE_METADATA instruction";
                expect_len(what, &instruction, WRITE_METADATA_INSTRUCTION_LEN)?;
                let body = instruction.buffer;
                write_metadata = write_metadata.or(Some(Masked {
                    value: read_field(body, 8),
                    mask: read_field(body, 16),
                }));
            }
            INSTRUCTION_GOTO_TABLE => {
                expect_len(
                    "GOTO_TABLE instruction",
                    &instruction,
                    GOTO_TABLE_INSTRUCTION_LEN,
                )?;
                goto_table = goto_table.or(Some(read_field(instruction.buffer, 4)));
            }
            _ => {}
        }
        bytes = tail(bytes, usize::from(instruction.length()));
    }
    Ok(Instructions {
        meter_id,
        actions,
        write_metadata,
        goto_table,
    })
}

/// Bytes the instruction list takes: a `METER` instruction when there is a meter, one
/// `APPLY_ACTIONS` when there are actions (none and no next table: a drop flow), and a
/// `WRITE_METADATA` and a `GOTO_TABLE` when there are those.
pub(crate) fn list_len(list: InstructionsRef<'_>) -> usize {
    let when = |present: bool, len: usize| if present { len } else { 0 };
    when(list.meter_id.is_some(), METER_INSTRUCTION_LEN)
        .saturating_add(apply_actions_len(list.actions))
        .saturating_add(when(
            list.write_metadata.is_some(),
            WRITE_METADATA_INSTRUCTION_LEN,
        ))
        .saturating_add(when(list.goto_table.is_some(), GOTO_TABLE_INSTRUCTION_LEN))
}

fn apply_actions_len(actions: &[Action]) -> usize {
    if actions.is_empty() {
        0
    } else {
        ACTIONS_INSTRUCTION_HEADER_LEN.saturating_add(action::list_len(Version::Of13, actions))
    }
}

/// Writes the instruction list into a zeroed buffer of [`list_len`] bytes, in the order
/// in which the switch applies the instructions: meter, actions, metadata, next table.
pub(crate) fn emit_list(list: InstructionsRef<'_>, mut buffer: &mut [u8]) -> Result<(), Error> {
    let actions = list.actions;
    if let Some(meter_id) = list.meter_id {
        let mut view = Instruction::new_unchecked(&mut *buffer);
        view.set_instruction_type(INSTRUCTION_METER);
        view.set_length(METER_INSTRUCTION_LEN as u16);
        crate::wire::write_field(buffer, INSTRUCTION_HEADER_LEN, meter_id);
        buffer = crate::wire::tail_mut(buffer, METER_INSTRUCTION_LEN);
    }
    if !actions.is_empty() {
        let actions_len = apply_actions_len(actions);
        let length = length_u16("APPLY_ACTIONS instruction", actions_len)?;
        let mut view = Instruction::new_unchecked(&mut *buffer);
        view.set_instruction_type(INSTRUCTION_APPLY_ACTIONS);
        view.set_length(length);
        action::emit_list(
            Version::Of13,
            actions,
            crate::wire::tail_mut(buffer, ACTIONS_INSTRUCTION_HEADER_LEN),
        )?;
        buffer = crate::wire::tail_mut(buffer, actions_len);
    }
    if let Some(metadata) = list.write_metadata {
        let mut view = Instruction::new_unchecked(&mut *buffer);
        view.set_instruction_type(INSTRUCTION_WRITE_METADATA);
        view.set_length(WRITE_METADATA_INSTRUCTION_LEN as u16);
        write_field(buffer, 8, metadata.value);
        write_field(buffer, 16, metadata.mask);
        buffer = crate::wire::tail_mut(buffer, WRITE_METADATA_INSTRUCTION_LEN);
    }
    if let Some(table_id) = list.goto_table {
        let mut view = Instruction::new_unchecked(&mut *buffer);
        view.set_instruction_type(INSTRUCTION_GOTO_TABLE);
        view.set_length(GOTO_TABLE_INSTRUCTION_LEN as u16);
        write_field(buffer, 4, table_id);
    }
    Ok(())
}
