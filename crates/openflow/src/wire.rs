//! Byte-level helpers shared by every view, and the macros that declare views.
//!
//! Every read goes through [`read_field`] and every slice through [`sub`] or [`tail`],
//! which use `get` instead of indexing: a view over a buffer that is too short reads
//! zeros and empty slices instead of panicking. Views made with `new_checked` never hit
//! that case; the fallback is only there so that no input and no misuse of
//! `new_unchecked` can panic.

use crate::Error;

/// A fixed-size big-endian wire field.
pub(crate) trait Field: Sized {
    /// Reads the field at `offset`, or the zero value when the buffer is too short.
    fn read(buffer: &[u8], offset: usize) -> Self;
    /// Writes the field at `offset`; a write past the end of the buffer is dropped.
    fn write(self, buffer: &mut [u8], offset: usize);
}

fn read_array<const N: usize>(buffer: &[u8], offset: usize) -> [u8; N] {
    let mut out = [0u8; N];
    if let Some(bytes) = offset
        .checked_add(N)
        .and_then(|end| buffer.get(offset..end))
    {
        out.copy_from_slice(bytes);
    }
    out
}

fn write_bytes(buffer: &mut [u8], offset: usize, bytes: &[u8]) {
    let end = offset.checked_add(bytes.len());
    if let Some(slot) = end.and_then(|end| buffer.get_mut(offset..end)) {
        slot.copy_from_slice(bytes);
    }
}

macro_rules! int_field {
    ($($ty:ty),*) => {$(
        impl Field for $ty {
            fn read(buffer: &[u8], offset: usize) -> Self {
                <$ty>::from_be_bytes(read_array(buffer, offset))
            }
            fn write(self, buffer: &mut [u8], offset: usize) {
                write_bytes(buffer, offset, &self.to_be_bytes());
            }
        }
    )*};
}
int_field!(u8, u16, u32, u64);

impl<const N: usize> Field for [u8; N] {
    fn read(buffer: &[u8], offset: usize) -> Self {
        read_array(buffer, offset)
    }
    fn write(self, buffer: &mut [u8], offset: usize) {
        write_bytes(buffer, offset, &self);
    }
}

/// Reads a field; see [`Field::read`].
pub(crate) fn read_field<F: Field>(buffer: &[u8], offset: usize) -> F {
    F::read(buffer, offset)
}

/// Writes a field; see [`Field::write`].
pub(crate) fn write_field<F: Field>(buffer: &mut [u8], offset: usize, value: F) {
    value.write(buffer, offset)
}

/// `buffer[start..end]`, or an empty slice when that range is not inside `buffer`.
pub(crate) fn sub(buffer: &[u8], start: usize, end: usize) -> &[u8] {
    buffer.get(start..end).unwrap_or(&[])
}

/// `buffer[start..]`, or an empty slice when `start` is past the end.
pub(crate) fn tail(buffer: &[u8], start: usize) -> &[u8] {
    buffer.get(start..).unwrap_or(&[])
}

/// Mutable `buffer[start..]`, or an empty slice when `start` is past the end.
pub(crate) fn tail_mut(buffer: &mut [u8], start: usize) -> &mut [u8] {
    match buffer.get_mut(start..) {
        Some(rest) => rest,
        None => &mut [],
    }
}

/// Copies `bytes` into `buffer` at `offset`; bytes past the end of `buffer` are dropped.
pub(crate) fn write_slice(buffer: &mut [u8], offset: usize, bytes: &[u8]) {
    let room = tail_mut(buffer, offset);
    let n = room.len().min(bytes.len());
    if let (Some(slot), Some(src)) = (room.get_mut(..n), bytes.get(..n)) {
        slot.copy_from_slice(src);
    }
}

/// `length` rounded up to the next multiple of 8, as OpenFlow pads matches, elements and
/// instructions. Saturates instead of overflowing (no real length gets near).
pub(crate) fn pad8(length: usize) -> usize {
    length.saturating_add(7) & !7
}

/// A length as the 16-bit field it travels in.
pub(crate) fn length_u16(what: &'static str, length: usize) -> Result<u16, Error> {
    u16::try_from(length).map_err(|_| Error::TooLong { what, length })
}

/// Appends `length` zero bytes to `out` and returns the new bytes.
pub(crate) fn grow(out: &mut Vec<u8>, length: usize) -> &mut [u8] {
    let start = out.len();
    out.resize(start.saturating_add(length), 0);
    tail_mut(out, start)
}

/// Declares a zero-copy view over a byte buffer, smoltcp style: the struct and its
/// `new_unchecked`, `new_checked` and `into_inner`. The view's module writes
/// `check_len`.
macro_rules! view {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $name<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> $name<T> {
            /// Wraps `buffer` without looking at it. Accessors never panic: on a buffer
            /// that is too short they read zeros and empty slices, and setters drop what
            /// does not fit. Use [`Self::new_checked`] on untrusted input.
            pub const fn new_unchecked(buffer: T) -> Self {
                Self { buffer }
            }

            /// Wraps `buffer` once [`Self::check_len`] has accepted it, so every
            /// accessor then reads real bytes.
            pub fn new_checked(buffer: T) -> Result<Self, $crate::Error> {
                let view = Self::new_unchecked(buffer);
                view.check_len()?;
                Ok(view)
            }

            /// Gives back the wrapped buffer.
            pub fn into_inner(self) -> T {
                self.buffer
            }
        }
    };
}

/// Declares getters (and setters when the buffer is writable) for fixed-offset
/// big-endian fields of a view.
macro_rules! fields {
    ($view:ident { $( $(#[$doc:meta])* $get:ident / $set:ident : $ty:ty = $offset:expr; )* }) => {
        impl<T: AsRef<[u8]>> $view<T> {
            $(
                $(#[$doc])*
                pub fn $get(&self) -> $ty {
                    $crate::wire::read_field(self.buffer.as_ref(), $offset)
                }
            )*
        }

        impl<T: AsRef<[u8]> + AsMut<[u8]>> $view<T> {
            $(
                #[doc = concat!("Sets the field that [`Self::", stringify!($get), "`] reads.")]
                pub fn $set(&mut self, value: $ty) {
                    $crate::wire::write_field(self.buffer.as_mut(), $offset, value)
                }
            )*
        }
    };
}

/// Declares an enum for a wire field whose values are named by the specification,
/// with an `Unknown` arm for every other value, so that decoding a value nobody named
/// is not an error and encoding it gives back the same number.
///
/// The enum converts both ways with the field's integer type (`From`); those
/// conversions are the only place the numbers appear. `Unknown(n)` with a named `n`
/// converts to `n` and back to the named arm, so code that builds values should use the
/// named arms.
macro_rules! enum_with_unknown {
    (
        $(#[$doc:meta])*
        pub enum $name:ident($ty:ty) {
            $( $(#[$arm_doc:meta])* $arm:ident = $value:expr ),+ $(,)?
        }
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$arm_doc])* $arm, )+
            /// A value the specification does not name (or this crate does not model).
            Unknown($ty),
        }

        impl $name {
            /// Every named arm, in declaration order.
            pub const KNOWN: &'static [$name] = &[$($name::$arm),+];
        }

        impl ::core::convert::From<$ty> for $name {
            fn from(value: $ty) -> Self {
                match value {
                    $( $value => $name::$arm, )+
                    other => $name::Unknown(other),
                }
            }
        }

        impl ::core::convert::From<$name> for $ty {
            fn from(value: $name) -> Self {
                match value {
                    $( $name::$arm => $value, )+
                    $name::Unknown(other) => other,
                }
            }
        }
    };
}
