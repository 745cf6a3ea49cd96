//! The picture processing behind the DVPP V1 tasks (DV7-DV9), pure functions over bytes:
//! the JPEG header ([`jpeg`]), decoding to YUV420SP ([`decode`], with `zune-jpeg`), and the
//! VPC resize of a YUV420SP picture ([`resize`], OpenCV 3.4.2's `INTER_LINEAR` and
//! `INTER_NEAREST`). The entry points (`api::dvpp`) check the geometry and call them.
//!
//! Layer: plain data, with `state` and `model`: it imports nothing of the crate.

pub mod decode;
pub mod jpeg;
pub mod resize;

/// `x` rounded up to a multiple of `to` (a power of two or not), in `u64` (no overflow for
/// `u32` inputs).
pub fn align_up(x: u64, to: u64) -> u64 {
    x.div_ceil(to) * to
}

/// JPEGD on the board (DV8): the Y plane's row stride for a picture `w` wide.
pub const JPEGD_WIDTH_ALIGN: u64 = 64;
/// JPEGD on the board (DV8): the rows reserved per plane for a picture `h` high.
pub const JPEGD_HEIGHT_ALIGN: u64 = 16;
/// JPEGD input sizes on the board (DV7): 32x32 to 16384x16384.
pub const JPEGD_MIN: u32 = 32;
pub const JPEGD_MAX: u32 = 16384;

/// The byte a decode writes into padding (beyond the width of a row, below the height of a
/// plane): fixed and non-zero, so that a reader of padding sees it (sim choice, DV8).
pub const PADDING: u8 = 0xA5;

/// `ws * hs * 3 / 2`: the bytes of a YUV420SP picture with these strides.
pub fn yuv420sp_size(ws: u64, hs: u64) -> u64 {
    ws * hs * 3 / 2
}
