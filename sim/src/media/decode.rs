//! JPEG to YUV420SP (DV8): the frame decoded by `zune-jpeg` to full-resolution YCbCr (or
//! luma), turned by its EXIF orientation, the chroma averaged over 2x2 blocks, written with
//! the strides of the output description. A gray JPEG gives chroma bytes 0x80.
//!
//! Layer: plain data (part of `media`); imports only its parent.

use zune_jpeg::JpegDecoder;
use zune_jpeg::zune_core::bytestream::ZCursor;
use zune_jpeg::zune_core::colorspace::ColorSpace;
use zune_jpeg::zune_core::options::DecoderOptions;

use super::PADDING;
use super::jpeg::Header;

/// The output a decode writes: its size after rounding, its strides, the chroma order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Output {
    pub width: u32,
    pub height: u32,
    pub width_stride: u32,
    pub height_stride: u32,
    /// NV21 (V first) rather than NV12 (U first).
    pub nv21: bool,
}

impl Output {
    /// The bytes of the picture (`ws * hs * 3 / 2`).
    pub fn bytes(&self) -> usize {
        let (ws, hs) = (self.width_stride as usize, self.height_stride as usize);
        ws * hs * 3 / 2
    }
}

/// The source pixel of displayed pixel `(x, y)` under EXIF orientation `o`, for a stored
/// picture of `w` x `h`.
fn source(o: u8, x: usize, y: usize, w: usize, h: usize) -> (usize, usize) {
    match o {
        2 => (w - 1 - x, y),
        3 => (w - 1 - x, h - 1 - y),
        4 => (x, h - 1 - y),
        5 => (y, x),
        6 => (y, h - 1 - x),
        7 => (w - 1 - y, h - 1 - x),
        8 => (w - 1 - y, x),
        _ => (x, y),
    }
}

/// Decodes `bytes` (whose header, `header`, was checked: a supported frame of at most
/// 16384 x 16384) into `out`'s layout. The decoder's allocations are bounded by the
/// header's size: it is told that size as its maximum. An error says why the data does
/// not decode (corrupt or cut-short entropy data, a header that changed since the check).
pub fn to_yuv420sp(bytes: &[u8], header: &Header, out: &Output) -> Result<Vec<u8>, String> {
    let gray = header.components == 1;
    let (w, h) = (header.width as usize, header.height as usize);
    let options = DecoderOptions::default()
        .set_max_width(w)
        .set_max_height(h)
        .set_strict_mode(true)
        .jpeg_set_out_colorspace(if gray {
            ColorSpace::Luma
        } else {
            ColorSpace::YCbCr
        });
    let mut decoder = JpegDecoder::new_with_options(ZCursor::new(bytes), options);
    decoder
        .decode_headers()
        .map_err(|e| format!("the header does not decode: {e:?}"))?;
    let Some(info) = decoder.info() else {
        return Err("the header does not decode".into());
    };
    if (usize::from(info.width), usize::from(info.height)) != (w, h) {
        return Err(format!(
            "the frame is {}x{}, the header checked at submission said {w}x{h}",
            info.width, info.height
        ));
    }
    let channels = if gray { 1 } else { 3 };
    let mut pixels = vec![0u8; w * h * channels];
    decoder
        .decode_into(&mut pixels)
        .map_err(|e| format!("the data does not decode: {e:?}"))?;
    let (dw, dh) = if header.orientation >= 5 {
        (h, w)
    } else {
        (w, h)
    };
    let at = |x: usize, y: usize, c: usize| -> u8 {
        let (x, y) = (x.min(dw - 1), y.min(dh - 1));
        let (sx, sy) = source(header.orientation, x, y, w, h);
        pixels[(sy * w + sx) * channels + c]
    };
    let (ow, oh) = (out.width as usize, out.height as usize);
    let (ws, hs) = (out.width_stride as usize, out.height_stride as usize);
    let mut yuv = vec![PADDING; out.bytes()];
    for y in 0..oh {
        let row = &mut yuv[y * ws..y * ws + ow];
        for (x, p) in row.iter_mut().enumerate() {
            *p = at(x, y, 0);
        }
    }
    let (first, second) = if out.nv21 { (2, 1) } else { (1, 2) };
    let uv = ws * hs;
    for by in 0..oh / 2 {
        for bx in 0..ow / 2 {
            let (u, v) = if gray {
                (0x80, 0x80)
            } else {
                let avg = |c: usize| -> u8 {
                    let (x, y) = (2 * bx, 2 * by);
                    let sum = u32::from(at(x, y, c))
                        + u32::from(at(x + 1, y, c))
                        + u32::from(at(x, y + 1, c))
                        + u32::from(at(x + 1, y + 1, c));
                    ((sum + 2) / 4) as u8
                };
                (avg(first), avg(second))
            };
            let p = uv + by * ws + 2 * bx;
            yuv[p] = u;
            yuv[p + 1] = v;
        }
    }
    Ok(yuv)
}
