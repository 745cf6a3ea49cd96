//! What the media engine is given, checked before any runtime call: JPEG headers (DV7) and
//! picture layouts (DV8, DV9).

use crate::sys::bindings::{
    PIXEL_FORMAT_YUV_SEMIPLANAR_420, PIXEL_FORMAT_YVU_SEMIPLANAR_420, acldvppPixelFormat,
};
use crate::typed::error::{Error, Result};

/// The smallest and largest JPEG side JPEGD decodes on the board (DV7).
pub(crate) const JPEG_SIDE: std::ops::RangeInclusive<u32> = 32..=16384;
/// JPEGD output strides on the board (DV8): align(width, 64), align(height, 16).
const JPEGD_ALIGN: (u32, u32) = (64, 16);
/// VPC strides the typed layer uses (DV9): align(width, 16), align(height, 2).
const VPC_ALIGN: (u32, u32) = (16, 2);

/// A YUV 4:2:0 semi-planar format, the one JPEGD writes and VPC reads here (DV8, DV9).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum PixelFormat {
    /// NV12: the Y plane, then interleaved U, V (`PIXEL_FORMAT_YUV_SEMIPLANAR_420`).
    #[default]
    Nv12,
    /// NV21: the Y plane, then interleaved V, U (`PIXEL_FORMAT_YVU_SEMIPLANAR_420`).
    Nv21,
}

impl PixelFormat {
    pub(crate) fn raw(self) -> acldvppPixelFormat {
        match self {
            PixelFormat::Nv12 => PIXEL_FORMAT_YUV_SEMIPLANAR_420,
            PixelFormat::Nv21 => PIXEL_FORMAT_YVU_SEMIPLANAR_420,
        }
    }
}

/// The geometry of a YUV 4:2:0 semi-planar picture in media memory: its size in pixels, its
/// strides and format. Made only by [`FrameLayout::decoded`] (DV8) and
/// [`FrameLayout::resized`] (DV9), which check the board's documented ranges and alignments,
/// so a layout the engine would refuse is a typed error before any call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FrameLayout {
    width: u32,
    height: u32,
    width_stride: u32,
    height_stride: u32,
    format: PixelFormat,
}

fn align(value: u32, to: u32) -> Option<u32> {
    value.checked_next_multiple_of(to)
}

impl FrameLayout {
    /// What JPEGD writes for `jpeg` (DV8): odd sizes rounded down to even (the default
    /// `ACL_YUVOUT_ALIGN_DOWN_COMPAT`), strides align(width, 64) and align(height, 16).
    #[inline]
    pub fn decoded(jpeg: &JpegHeader, format: PixelFormat) -> FrameLayout {
        // At most 16384 (checked when the header was read): no overflow.
        Self::decoded_from(jpeg.width, jpeg.height, format)
    }

    /// What JPEGD writes for a `width` x `height` JPEG (at most 16384 each, so that nothing
    /// overflows).
    #[inline]
    pub(crate) fn decoded_from(width: u32, height: u32, format: PixelFormat) -> FrameLayout {
        let (width, height) = (width & !1, height & !1);
        FrameLayout {
            width,
            height,
            width_stride: width.next_multiple_of(JPEGD_ALIGN.0),
            height_stride: height.next_multiple_of(JPEGD_ALIGN.1),
            format,
        }
    }

    /// A VPC resize output of `width` x `height` (DV9): both even, 10x6 to 4096x8192;
    /// strides align(width, 16) and align(height, 2), valid on every product. Otherwise
    /// [`Error::PictureLayout`].
    pub fn resized(width: u32, height: u32, format: PixelFormat) -> Result<FrameLayout> {
        if !(10..=4096).contains(&width) || !(6..=8192).contains(&height) {
            return Err(Error::PictureLayout(
                "a resize output is 10x6 to 4096x8192 pixels (DV9)",
            ));
        }
        if !width.is_multiple_of(2) || !height.is_multiple_of(2) {
            return Err(Error::PictureLayout(
                "a YUV 4:2:0 resize output has an even width and height (DV9)",
            ));
        }
        match (align(width, VPC_ALIGN.0), align(height, VPC_ALIGN.1)) {
            (Some(width_stride), Some(height_stride)) => Ok(FrameLayout {
                width,
                height,
                width_stride,
                height_stride,
                format,
            }),
            _ => Err(Error::PictureLayout("a stride overflows (DV9)")),
        }
    }

    /// Whether VPC reads this picture as a resize input (DV9): 10x6 to 8192x8192, even.
    #[inline]
    pub(crate) fn check_resize_input(&self) -> Result<()> {
        if !(10..=8192).contains(&self.width)
            || !(6..=8192).contains(&self.height)
            || !self.width.is_multiple_of(2)
            || !self.height.is_multiple_of(2)
        {
            return Err(Error::PictureLayout(
                "a resize input is 10x6 to 8192x8192 pixels, even (DV9)",
            ));
        }
        Ok(())
    }

    /// Width in pixels.
    pub fn width(&self) -> u32 {
        self.width
    }
    /// Height in pixels.
    pub fn height(&self) -> u32 {
        self.height
    }
    /// Bytes per row of the Y plane (and of the interleaved chroma plane).
    pub fn width_stride(&self) -> u32 {
        self.width_stride
    }
    /// Rows reserved for the Y plane.
    pub fn height_stride(&self) -> u32 {
        self.height_stride
    }
    /// The format.
    pub fn format(&self) -> PixelFormat {
        self.format
    }
    /// The picture's size in bytes: widthStride * heightStride * 3/2 (DV8, DV9, DV11).
    pub fn byte_len(&self) -> usize {
        let plane = self.width_stride as usize * self.height_stride as usize;
        plane + plane / 2
    }
}

/// The chroma sampling of a JPEG frame (DV7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JpegSampling {
    /// 4:4:4.
    Yuv444,
    /// 4:2:2.
    Yuv422,
    /// 4:2:0.
    Yuv420,
    /// 4:4:0.
    Yuv440,
    /// One component, 4:0:0 (decoded with chroma bytes 0x80, DV8).
    Gray,
}

/// A JPEG header that JPEGD decodes (DV7): a Huffman-coded baseline or extended sequential
/// frame (SOF0, SOF1) of 8-bit samples, 4:4:4, 4:2:2, 4:2:0, 4:4:0 or gray, 32x32 to
/// 16384x16384 pixels, with a scan. Read in host memory by [`JpegHeader::parse`] without any
/// runtime call; what it refuses is [`Error::UnsupportedJpeg`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct JpegHeader {
    width: u32,
    height: u32,
    sampling: JpegSampling,
}

/// What [`JpegHeader::parse`] found in a segment.
enum Segment {
    /// The next segment starts here.
    Next(usize),
    /// The scan starts: the header is complete.
    Scan(JpegHeader),
}

/// Sampling factors (horizontal in the high nibble) of 1 to 4 each: the runtime refuses
/// others with 100000 (DV7).
fn factors_in_range(factors: u8) -> bool {
    (1..=4).contains(&(factors >> 4)) && (1..=4).contains(&(factors & 15))
}

fn refuse(why: &'static str) -> Error {
    Error::UnsupportedJpeg(why)
}

impl JpegHeader {
    /// Reads the frame header of the JPEG `bytes` (DV7). EXIF orientations are not applied:
    /// the width and height are the frame's.
    pub fn parse(bytes: &[u8]) -> Result<JpegHeader> {
        let [0xFF, 0xD8, ref body @ ..] = *bytes else {
            return Err(refuse("not a JPEG: no start-of-image marker"));
        };
        // Every file loaded into a pipeline is read here, so the usual segment (a marker
        // without fill bytes, whole) is read in a few compares; anything else by `segment`.
        let mut rest: &[u8] = body;
        let mut frame = None;
        loop {
            if let [0xFF, marker, hi, lo, ref after @ ..] = *rest {
                let length = usize::from(u16::from_be_bytes([hi, lo]));
                if let Some((segment, next)) = length
                    .checked_sub(2)
                    .and_then(|len| after.split_at_checked(len))
                {
                    match marker {
                        // Tables (DHT, DQT), restart interval, application data, comments.
                        0xC4 | 0xDB..=0xFE => {
                            rest = next;
                            continue;
                        }
                        0xC0 | 0xC1 if frame.is_none() => {
                            frame = Some(Self::frame(segment)?);
                            rest = next;
                            continue;
                        }
                        0xDA => {
                            if let Some(header) = frame {
                                return Ok(header);
                            }
                        }
                        _ => {}
                    }
                }
            }
            let at = bytes.len() - rest.len();
            match Self::segment(bytes, at, &mut frame)? {
                Segment::Next(next) => rest = bytes.get(next..).unwrap_or_default(),
                Segment::Scan(header) => return Ok(header),
            }
        }
    }

    /// Reads the segment at `at` (its marker included): where the next one starts, or the
    /// header once the scan starts.
    fn segment(bytes: &[u8], mut at: usize, frame: &mut Option<JpegHeader>) -> Result<Segment> {
        // A marker: 0xFF, any fill bytes 0xFF, then its code.
        if bytes.get(at) != Some(&0xFF) {
            return Err(refuse("a segment does not start with a marker"));
        }
        while bytes.get(at) == Some(&0xFF) {
            at += 1;
        }
        let Some(&marker) = bytes.get(at) else {
            return Err(refuse("the header ends before a scan"));
        };
        at += 1;
        if marker == 0x01 || (0xD0..=0xD7).contains(&marker) {
            return Ok(Segment::Next(at)); // no length
        }
        // As the runtime's reader (DV7): no second SOI, no stuffed byte before the scan.
        match marker {
            0xD8 => return Err(refuse("a second start-of-image marker")),
            0x00 => return Err(refuse("a stuffed byte before the scan")),
            _ => {}
        }
        let Some(&[hi, lo]) = bytes.get(at..at + 2) else {
            return Err(refuse("a segment's length is cut off"));
        };
        let length = usize::from(u16::from_be_bytes([hi, lo]));
        let Some(segment) = bytes.get(at + 2..at + length).filter(|_| length >= 2) else {
            return Err(refuse("a segment is cut off"));
        };
        match marker {
            0xC0 | 0xC1 if frame.is_some() => {
                return Err(refuse("a second frame header"));
            }
            0xC0 | 0xC1 => *frame = Some(Self::frame(segment)?),
            0xC2 | 0xC6 | 0xCA | 0xCE => {
                return Err(refuse("a progressive JPEG (JPEGD decodes sequential ones)"));
            }
            0xC3 | 0xC7 | 0xCB | 0xCF => return Err(refuse("a lossless JPEG")),
            0xC5 | 0xCD => return Err(refuse("a hierarchical JPEG")),
            0xC9 => return Err(refuse("an arithmetic-coded JPEG (JPEGD decodes Huffman)")),
            0xDA => {
                return frame
                    .map(Segment::Scan)
                    .ok_or_else(|| refuse("a scan before the frame header"));
            }
            0xD9 => return Err(refuse("the image ends before a scan")),
            _ => {}
        }
        Ok(Segment::Next(at + length))
    }

    /// A SOF0/SOF1 segment's contents (after the length).
    fn frame(segment: &[u8]) -> Result<JpegHeader> {
        let Some(&[precision, h1, h0, w1, w0, components]) = segment.get(..6) else {
            return Err(refuse("a frame header is cut off"));
        };
        if precision != 8 {
            return Err(refuse("samples of other than 8 bits"));
        }
        let (height, width) = (
            u32::from(u16::from_be_bytes([h1, h0])),
            u32::from(u16::from_be_bytes([w1, w0])),
        );
        if !JPEG_SIDE.contains(&width) || !JPEG_SIDE.contains(&height) {
            return Err(refuse("JPEGD decodes 32x32 to 16384x16384 pixels"));
        }
        // Every component's specification present (3 bytes: id, factors, table), its
        // sampling factors 1 to 4 (the runtime refuses others with 100000, DV7).
        let Some(specs) = segment.get(6..6 + 3 * usize::from(components)) else {
            return Err(refuse("a frame header is cut off"));
        };
        let sampling = match *specs {
            [_, factors, _] if factors_in_range(factors) => JpegSampling::Gray,
            // Chroma factors 1x1, luma's as the sampling.
            [_, luma, _, _, 0x11, _, _, 0x11, _] => match luma {
                0x11 => JpegSampling::Yuv444,
                0x21 => JpegSampling::Yuv422,
                0x22 => JpegSampling::Yuv420,
                0x12 => JpegSampling::Yuv440,
                _ => return Err(Self::refused_sampling(specs)),
            },
            _ => return Err(Self::refused_sampling(specs)),
        };
        Ok(JpegHeader {
            width,
            height,
            sampling,
        })
    }

    /// Why a frame header's component specifications are refused (each 3 bytes: id,
    /// factors, table), most basic first.
    #[cold]
    #[inline(never)]
    fn refused_sampling(specs: &[u8]) -> Error {
        if !specs
            .chunks_exact(3)
            .all(|spec| spec.get(1).copied().is_some_and(factors_in_range))
        {
            refuse("a sampling factor outside 1 to 4")
        } else if specs.len() == 9 {
            refuse("a sampling other than 4:4:4, 4:2:2, 4:2:0, 4:4:0")
        } else {
            refuse("a JPEG of other than 1 or 3 components")
        }
    }

    /// Width in pixels (the frame's).
    pub fn width(&self) -> u32 {
        self.width
    }
    /// Height in pixels (the frame's).
    pub fn height(&self) -> u32 {
        self.height
    }
    /// The chroma sampling.
    pub fn sampling(&self) -> JpegSampling {
        self.sampling
    }
    /// The header with the sizes the runtime reports (an EXIF orientation of 5 to 8 swaps
    /// them, DV7).
    pub(crate) fn oriented(self, width: u32, height: u32) -> Result<JpegHeader> {
        if (width, height) == (self.width, self.height)
            || (width, height) == (self.height, self.width)
        {
            Ok(JpegHeader {
                width,
                height,
                ..self
            })
        } else {
            Err(refuse(
                "the runtime reads other sizes than the frame header's",
            ))
        }
    }
}
