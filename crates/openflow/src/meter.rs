//! 1.3 meters: METER_MOD (`ofp_meter_mod` with its bands) and the body of the
//! `OFPMP_METER_FEATURES` multipart reply (`ofp_meter_features`). 1.0 has no meters.

use crate::wire::{length_u16, sub, tail, tail_mut, write_slice};
use crate::Error;

/// Byte offsets of `ofp_meter_mod`, header included.
mod field {
    pub(super) const COMMAND: usize = 8;
    pub(super) const FLAGS: usize = 10;
    pub(super) const METER_ID: usize = 12;
    pub(super) const BANDS: usize = 16;
}

/// Length of `ofp_meter_mod` before its bands, header included.
pub const METER_MOD_LEN: usize = field::BANDS;

/// Byte offsets of `ofp_meter_band_header` and the type-specific part after it.
mod band_field {
    pub(super) const TYPE: usize = 0;
    pub(super) const LEN: usize = 2;
    pub(super) const RATE: usize = 4;
    pub(super) const BURST_SIZE: usize = 8;
    /// `prec_level` of `ofp_meter_band_dscp_remark` (3 pad bytes follow).
    pub(super) const PREC_LEVEL: usize = 12;
    /// Where the type-specific part starts.
    pub(super) const BODY: usize = 12;
}

/// Length of `ofp_meter_band_drop` and `ofp_meter_band_dscp_remark`, and the least any
/// band may have.
pub const METER_BAND_LEN: usize = 16;

/// `OFPMF_KBPS`: rates in kilobits per second.
pub const METER_FLAG_KBPS: u16 = 1 << 0;
/// `OFPMF_PKTPS`: rates in packets per second.
pub const METER_FLAG_PKTPS: u16 = 1 << 1;
/// `OFPMF_BURST`: the bands' `burst_size` counts.
pub const METER_FLAG_BURST: u16 = 1 << 2;
/// `OFPMF_STATS`: the switch keeps statistics for the meter.
pub const METER_FLAG_STATS: u16 = 1 << 3;

/// `OFPMBT_DROP`.
pub const METER_BAND_DROP: u16 = 1;
/// `OFPMBT_DSCP_REMARK`.
pub const METER_BAND_DSCP_REMARK: u16 = 2;
/// `OFPMBT_EXPERIMENTER`.
pub const METER_BAND_EXPERIMENTER: u16 = 0xffff;

/// `OFPM_MAX`: the highest meter id a flow may name; the ids above are virtual meters.
pub const METER_MAX: u32 = 0xffff_0000;
/// `OFPM_ALL`: every meter, in a delete.
pub const METER_ALL: u32 = 0xffff_ffff;

/// `OFPMC_*`: what a METER_MOD does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MeterModCommand {
    /// Add a meter (an error if the id is taken).
    Add,
    /// Replace an existing meter's bands and flags.
    Modify,
    /// Remove the meter, and every flow that uses it.
    Delete,
    /// A command this crate does not know, kept so that it parses and emits back.
    Unknown(u16),
}

impl MeterModCommand {
    /// The wire number.
    pub fn to_wire(self) -> u16 {
        match self {
            MeterModCommand::Add => 0,
            MeterModCommand::Modify => 1,
            MeterModCommand::Delete => 2,
            MeterModCommand::Unknown(value) => value,
        }
    }

    /// The command with wire number `value`.
    pub fn from_wire(value: u16) -> Self {
        match value {
            0 => MeterModCommand::Add,
            1 => MeterModCommand::Modify,
            2 => MeterModCommand::Delete,
            other => MeterModCommand::Unknown(other),
        }
    }
}

view! {
    /// A view of a METER_MOD message, header included.
    MeterModView
}

fields!(MeterModView {
    /// `OFPMC_*` command.
    command / set_command: u16 = field::COMMAND;
    /// `OFPMF_*` flags.
    flags / set_flags: u16 = field::FLAGS;
    /// The meter.
    meter_id / set_meter_id: u32 = field::METER_ID;
});

impl<T: AsRef<[u8]>> MeterModView<T> {
    /// Checks that the buffer holds the fixed part.
    pub fn check_len(&self) -> Result<(), Error> {
        Error::need("METER_MOD", self.buffer.as_ref(), METER_MOD_LEN)
    }

    /// The band list.
    pub fn bands(&self) -> &[u8] {
        tail(self.buffer.as_ref(), field::BANDS)
    }
}

view! {
    /// A view of one meter band: `ofp_meter_band_header` and its type-specific part.
    MeterBandView
}

fields!(MeterBandView {
    /// `OFPMBT_*` band type.
    band_type / set_band_type: u16 = band_field::TYPE;
    /// Length of the band, header included.
    length / set_length: u16 = band_field::LEN;
    /// Rate above which the band applies, in the meter's unit.
    rate / set_rate: u32 = band_field::RATE;
    /// Burst size, in the meter's unit (with `OFPMF_BURST`).
    burst_size / set_burst_size: u32 = band_field::BURST_SIZE;
    /// DSCP remark bands: how much to raise the drop precedence.
    prec_level / set_prec_level: u8 = band_field::PREC_LEVEL;
});

impl<T: AsRef<[u8]>> MeterBandView<T> {
    /// Checks that the length is a multiple of 8 of at least [`METER_BAND_LEN`] and
    /// that the buffer holds that many bytes.
    pub fn check_len(&self) -> Result<(), Error> {
        let buffer = self.buffer.as_ref();
        Error::need("meter band header", buffer, METER_BAND_LEN)?;
        let length = usize::from(self.length());
        if length < METER_BAND_LEN || length % 8 != 0 {
            return Err(Error::BadLength {
                what: "meter band",
                length,
            });
        }
        Error::need("meter band", buffer, length)
    }

    /// The bytes after the common band header, up to the band's length.
    pub fn body(&self) -> &[u8] {
        sub(
            self.buffer.as_ref(),
            band_field::BODY,
            usize::from(self.length()),
        )
    }
}

/// What a meter does to the traffic above a rate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MeterBand {
    /// `OFPMBT_DROP`: drop what exceeds `rate`.
    Drop {
        /// Rate in the meter's unit.
        rate: u32,
        /// Burst in the meter's unit.
        burst_size: u32,
    },
    /// `OFPMBT_DSCP_REMARK`: raise the drop precedence of what exceeds `rate`.
    DscpRemark {
        /// Rate in the meter's unit.
        rate: u32,
        /// Burst in the meter's unit.
        burst_size: u32,
        /// How much to raise the precedence.
        prec_level: u8,
    },
    /// Any other band type (experimenter bands, ...), with the bytes after the 12-byte
    /// common header. The band must come out a multiple of 8 long, at least 16 bytes:
    /// `body` 4 + 8n bytes, else emitting fails.
    Other {
        /// `OFPMBT_*` type.
        band_type: u16,
        /// Rate in the meter's unit.
        rate: u32,
        /// Burst in the meter's unit.
        burst_size: u32,
        /// The type-specific bytes.
        body: Vec<u8>,
    },
}

impl MeterBand {
    /// Reads one band.
    pub fn parse<T: AsRef<[u8]>>(view: &MeterBandView<T>) -> Result<Self, Error> {
        view.check_len()?;
        let (rate, burst_size) = (view.rate(), view.burst_size());
        Ok(match view.band_type() {
            METER_BAND_DROP => MeterBand::Drop { rate, burst_size },
            METER_BAND_DSCP_REMARK => MeterBand::DscpRemark {
                rate,
                burst_size,
                prec_level: view.prec_level(),
            },
            band_type => MeterBand::Other {
                band_type,
                rate,
                burst_size,
                body: view.body().to_vec(),
            },
        })
    }

    /// Length of the band on the wire.
    pub fn buffer_len(&self) -> usize {
        match self {
            MeterBand::Drop { .. } | MeterBand::DscpRemark { .. } => METER_BAND_LEN,
            MeterBand::Other { body, .. } => band_field::BODY.saturating_add(body.len()),
        }
    }

    /// Writes the band into a zeroed view of [`Self::buffer_len`] bytes. Fails for an
    /// [`MeterBand::Other`] whose length the layout does not allow.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        view: &mut MeterBandView<T>,
    ) -> Result<(), Error> {
        let length = self.buffer_len();
        if length < METER_BAND_LEN || length % 8 != 0 {
            return Err(Error::BadLength {
                what: "meter band",
                length,
            });
        }
        view.set_length(length_u16("meter band", length)?);
        match self {
            MeterBand::Drop { rate, burst_size } => {
                view.set_band_type(METER_BAND_DROP);
                view.set_rate(*rate);
                view.set_burst_size(*burst_size);
            }
            MeterBand::DscpRemark {
                rate,
                burst_size,
                prec_level,
            } => {
                view.set_band_type(METER_BAND_DSCP_REMARK);
                view.set_rate(*rate);
                view.set_burst_size(*burst_size);
                view.set_prec_level(*prec_level);
            }
            MeterBand::Other {
                band_type,
                rate,
                burst_size,
                body,
            } => {
                view.set_band_type(*band_type);
                view.set_rate(*rate);
                view.set_burst_size(*burst_size);
                write_slice(view.buffer.as_mut(), band_field::BODY, body);
            }
        }
        Ok(())
    }
}

/// A meter table change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MeterMod {
    /// What to do.
    pub command: MeterModCommand,
    /// `OFPMF_*` flags: the unit ([`METER_FLAG_PKTPS`] or [`METER_FLAG_KBPS`]), and
    /// [`METER_FLAG_BURST`], [`METER_FLAG_STATS`].
    pub flags: u16,
    /// The meter (1 to [`METER_MAX`], or a virtual meter).
    pub meter_id: u32,
    /// The bands; none for a delete.
    pub bands: Vec<MeterBand>,
}

impl MeterMod {
    /// Reads a METER_MOD.
    pub fn parse<T: AsRef<[u8]>>(view: &MeterModView<T>) -> Result<Self, Error> {
        view.check_len()?;
        let mut bands = Vec::new();
        let mut rest = view.bands();
        while !rest.is_empty() {
            let band = MeterBandView::new_checked(rest)?;
            bands.push(MeterBand::parse(&band)?);
            rest = tail(rest, usize::from(band.length()));
        }
        Ok(MeterMod {
            command: MeterModCommand::from_wire(view.command()),
            flags: view.flags(),
            meter_id: view.meter_id(),
            bands,
        })
    }

    /// Length of the message, header included.
    pub fn buffer_len(&self) -> usize {
        self.bands.iter().fold(METER_MOD_LEN, |len, band| {
            len.saturating_add(band.buffer_len())
        })
    }

    /// Writes the body into a zeroed view of [`Self::buffer_len`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        view: &mut MeterModView<T>,
    ) -> Result<(), Error> {
        view.set_command(self.command.to_wire());
        view.set_flags(self.flags);
        view.set_meter_id(self.meter_id);
        let mut offset = field::BANDS;
        for band in &self.bands {
            // Each band writes only its own bytes, so a view over the rest will do.
            let rest = tail_mut(view.buffer.as_mut(), offset);
            band.emit(&mut MeterBandView::new_unchecked(rest))?;
            offset = offset.saturating_add(band.buffer_len());
        }
        Ok(())
    }
}

/// Byte offsets of `ofp_meter_features` (2 pad bytes at the end).
mod features_field {
    pub(super) const MAX_METER: usize = 0;
    pub(super) const BAND_TYPES: usize = 4;
    pub(super) const CAPABILITIES: usize = 8;
    pub(super) const MAX_BANDS: usize = 12;
    pub(super) const MAX_COLOR: usize = 13;
}

/// Length of `ofp_meter_features`.
pub const METER_FEATURES_LEN: usize = 16;

view! {
    /// A view of `ofp_meter_features`, the body of an `OFPMP_METER_FEATURES` reply.
    MeterFeaturesView
}

fields!(MeterFeaturesView {
    /// How many meters the switch has room for.
    max_meter / set_max_meter: u32 = features_field::MAX_METER;
    /// Bit n set: band type n (`OFPMBT_*`) is supported.
    band_types / set_band_types: u32 = features_field::BAND_TYPES;
    /// `OFPMF_*` flags the switch supports.
    capabilities / set_capabilities: u32 = features_field::CAPABILITIES;
    /// Most bands per meter.
    max_bands / set_max_bands: u8 = features_field::MAX_BANDS;
    /// Most colours a meter can give.
    max_color / set_max_color: u8 = features_field::MAX_COLOR;
});

impl<T: AsRef<[u8]>> MeterFeaturesView<T> {
    /// Checks that the buffer holds the whole structure.
    pub fn check_len(&self) -> Result<(), Error> {
        Error::need(
            "ofp_meter_features",
            self.buffer.as_ref(),
            METER_FEATURES_LEN,
        )
    }
}

/// What meters a switch offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MeterFeatures {
    /// How many meters the switch has room for (0: none).
    pub max_meter: u32,
    /// Bit n set: band type n (`OFPMBT_*`) is supported.
    pub band_types: u32,
    /// `OFPMF_*` flags the switch supports.
    pub capabilities: u32,
    /// Most bands per meter.
    pub max_bands: u8,
    /// Most colours a meter can give.
    pub max_color: u8,
}

impl MeterFeatures {
    /// Whether band type `band_type` (`OFPMBT_*`) is supported.
    pub fn supports_band(&self, band_type: u16) -> bool {
        1u32.checked_shl(u32::from(band_type))
            .is_some_and(|bit| self.band_types & bit != 0)
    }

    /// Whether every `OFPMF_*` flag in `flags` is supported.
    pub fn supports_flags(&self, flags: u16) -> bool {
        self.capabilities & u32::from(flags) == u32::from(flags)
    }

    /// Reads the structure.
    pub fn parse<T: AsRef<[u8]>>(view: &MeterFeaturesView<T>) -> Result<Self, Error> {
        view.check_len()?;
        Ok(MeterFeatures {
            max_meter: view.max_meter(),
            band_types: view.band_types(),
            capabilities: view.capabilities(),
            max_bands: view.max_bands(),
            max_color: view.max_color(),
        })
    }

    /// Writes the structure into a zeroed view of [`METER_FEATURES_LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut MeterFeaturesView<T>) {
        view.set_max_meter(self.max_meter);
        view.set_band_types(self.band_types);
        view.set_capabilities(self.capabilities);
        view.set_max_bands(self.max_bands);
        view.set_max_color(self.max_color);
    }
}
