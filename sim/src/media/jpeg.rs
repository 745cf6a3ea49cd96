//! The JPEG header, parsed from the bytes alone (DV7): what `acldvppJpegGetImageInfo(V2)`
//! and `acldvppJpegPredictDecSize` report, and what `acldvppJpegDecodeAsync` checks at
//! submission. The walk reads marker segments by their lengths up to the first SOS: its cost
//! is the number of segments, never an allocation of a size the file claims.
//!
//! Layer: plain data (part of `media`); imports nothing of the crate.

/// Why a header is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeaderError {
    /// Not a JPEG, or cut short or corrupt before the first scan.
    Malformed(String),
    /// A JPEG JPEGD does not decode (DV7): progressive, lossless, hierarchical or
    /// arithmetic-coded frames, more than 8 bits per sample, another sampling.
    Unsupported(String),
}

/// The frame kinds of the SOF markers (ITU T.81, table B.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame {
    /// SOF0, SOF1: Huffman, sequential DCT: what JPEGD decodes.
    Baseline,
    /// SOF2.
    Progressive,
    /// SOF3.
    Lossless,
    /// SOF5 to SOF7.
    Hierarchical,
    /// SOF9 to SOF15.
    Arithmetic,
}

/// The sampling, as `acldvppJpegFormat` names it.
pub const CSS_444: i32 = 0;
pub const CSS_422: i32 = 1;
pub const CSS_420: i32 = 2;
pub const CSS_GRAY: i32 = 3;
pub const CSS_440: i32 = 4;
pub const CSS_411: i32 = 5;
pub const CSS_UNKNOWN: i32 = 1000;

/// What the header says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// As stored in the frame header (before any EXIF orientation).
    pub width: u32,
    pub height: u32,
    /// Components of the frame.
    pub components: u8,
    /// Bits per sample.
    pub precision: u8,
    pub frame: Frame,
    /// `ACL_JPEG_CSS_*`.
    pub format: i32,
    /// The EXIF orientation (1 to 8; 1 when absent or unreadable).
    pub orientation: u8,
    /// An SOS marker follows the frame header.
    pub has_scan: bool,
}

impl Header {
    /// Width and height as displayed: swapped for EXIF orientations 5 to 8.
    pub fn oriented(&self) -> (u32, u32) {
        if self.orientation >= 5 {
            (self.height, self.width)
        } else {
            (self.width, self.height)
        }
    }

    /// Whether JPEGD decodes this frame (DV7): Huffman sequential, 8 bits, 1 or 3
    /// components of a sampling it knows.
    pub fn check_supported(&self) -> Result<(), HeaderError> {
        if self.frame != Frame::Baseline {
            return Err(HeaderError::Unsupported(format!(
                "a {:?} frame: JPEGD decodes Huffman sequential frames (SOF0, SOF1) only",
                self.frame
            )));
        }
        if self.precision != 8 {
            return Err(HeaderError::Unsupported(format!(
                "{} bits per sample: JPEGD decodes 8",
                self.precision
            )));
        }
        if !matches!(
            self.format,
            CSS_444 | CSS_422 | CSS_420 | CSS_GRAY | CSS_440
        ) {
            return Err(HeaderError::Unsupported(format!(
                "sampling {} ({} components): JPEGD decodes 4:4:4, 4:2:2, 4:2:0, 4:0:0 and 4:4:0",
                self.format, self.components
            )));
        }
        Ok(())
    }
}

fn malformed(what: impl Into<String>) -> HeaderError {
    HeaderError::Malformed(what.into())
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// The sampling of a frame's components (horizontal, vertical factors of each).
fn sampling(factors: &[(u8, u8)]) -> i32 {
    match factors {
        [_] => CSS_GRAY,
        [(yh, yv), (1, 1), (1, 1)] => match (yh, yv) {
            (1, 1) => CSS_444,
            (2, 1) => CSS_422,
            (2, 2) => CSS_420,
            (1, 2) => CSS_440,
            (4, 1) => CSS_411,
            _ => CSS_UNKNOWN,
        },
        _ => CSS_UNKNOWN,
    }
}

/// The orientation tag of an APP1 "Exif" segment's TIFF data; 1 when absent or unreadable.
fn exif_orientation(tiff: &[u8]) -> u8 {
    let read16 = |at: usize, le: bool| -> Option<u16> {
        let b = [*tiff.get(at)?, *tiff.get(at + 1)?];
        Some(if le {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        })
    };
    let read32 = |at: usize, le: bool| -> Option<u32> {
        let b: [u8; 4] = tiff.get(at..at + 4)?.try_into().ok()?;
        Some(if le {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        })
    };
    let found = || -> Option<u8> {
        let le = match tiff.get(..2)? {
            b"II" => true,
            b"MM" => false,
            _ => return None,
        };
        let ifd = usize::try_from(read32(4, le)?).ok()?;
        let count = usize::from(read16(ifd, le)?);
        // At most the entries the segment holds (12 bytes each).
        for i in 0..count.min(tiff.len() / 12) {
            let entry = ifd.checked_add(2 + 12 * i)?;
            if read16(entry, le)? == 0x0112 {
                let value = read16(entry + 8, le)?;
                return u8::try_from(value).ok().filter(|v| (1..=8).contains(v));
            }
        }
        None
    };
    found().unwrap_or(1)
}

/// Parses the header of `bytes` up to the first SOS (or the end of the data).
pub fn parse(bytes: &[u8]) -> Result<Header, HeaderError> {
    if bytes.get(..2) != Some(&[0xFF, 0xD8]) {
        return Err(malformed("no SOI marker (FF D8) at the start: not a JPEG"));
    }
    let mut at = 2;
    let mut orientation = 1;
    let mut frame: Option<Header> = None;
    // Fill bytes (FF) may precede a marker.
    while let Some(&ff) = bytes.get(at) {
        if ff != 0xFF {
            return Err(malformed(format!(
                "a byte {ff:#04x} at offset {at} where a marker should start"
            )));
        }
        let mut m = at + 1;
        while bytes.get(m) == Some(&0xFF) {
            m += 1;
        }
        let Some(&marker) = bytes.get(m) else {
            break;
        };
        at = m + 1;
        match marker {
            // Markers without a length.
            0x01 | 0xD0..=0xD7 => continue,
            0xD8 => return Err(malformed(format!("a second SOI at offset {m}"))),
            0xD9 => break,
            0x00 => {
                return Err(malformed(format!(
                    "a stuffed byte at offset {m} before any scan"
                )));
            }
            _ => {}
        }
        let Some(len) = be16(bytes, at) else {
            return Err(malformed(format!(
                "marker FF {marker:02X} at offset {m} is cut short (no length)"
            )));
        };
        let len = usize::from(len);
        if len < 2 {
            return Err(malformed(format!(
                "marker FF {marker:02X} at offset {m} has length {len}"
            )));
        }
        let Some(segment) = bytes.get(at + 2..at + len) else {
            return Err(malformed(format!(
                "marker FF {marker:02X} at offset {m} claims {len} bytes, the data ends first"
            )));
        };
        match marker {
            0xC0..=0xCF if !matches!(marker, 0xC4 | 0xC8 | 0xCC) => {
                if frame.is_some() {
                    return Err(malformed(format!("a second frame header at offset {m}")));
                }
                frame = Some(frame_header(marker, segment)?);
            }
            0xE1 if segment.starts_with(b"Exif\0\0") => {
                orientation = exif_orientation(&segment[6..]);
            }
            0xDA => {
                let Some(mut h) = frame.take() else {
                    return Err(malformed(format!(
                        "a scan at offset {m} before any frame header"
                    )));
                };
                h.orientation = orientation;
                h.has_scan = true;
                return Ok(h);
            }
            _ => {}
        }
        at += len;
    }
    match frame {
        Some(mut h) => {
            h.orientation = orientation;
            Ok(h)
        }
        None => Err(malformed(
            "no frame header (SOFn) before the end of the data",
        )),
    }
}

/// A frame header's segment (after its length).
fn frame_header(marker: u8, s: &[u8]) -> Result<Header, HeaderError> {
    let frame = match marker {
        0xC0 | 0xC1 => Frame::Baseline,
        0xC2 => Frame::Progressive,
        0xC3 => Frame::Lossless,
        0xC5..=0xC7 => Frame::Hierarchical,
        _ => Frame::Arithmetic,
    };
    let (Some(&precision), Some(height), Some(width), Some(&count)) =
        (s.first(), be16(s, 1), be16(s, 3), s.get(5))
    else {
        return Err(malformed("a frame header cut short"));
    };
    if width == 0 || height == 0 {
        return Err(malformed(format!(
            "a frame of {width}x{height}: a height given by a DNL marker is not supported"
        )));
    }
    if count == 0 || s.len() < 6 + 3 * usize::from(count) {
        return Err(malformed(format!(
            "a frame header of {count} component(s) in {} bytes",
            s.len()
        )));
    }
    let factors: Vec<(u8, u8)> = (0..usize::from(count))
        .map(|i| {
            let f = s[6 + 3 * i + 1];
            (f >> 4, f & 0x0F)
        })
        .collect();
    if factors
        .iter()
        .any(|&(h, v)| !(1..=4).contains(&h) || !(1..=4).contains(&v))
    {
        return Err(malformed("a sampling factor outside 1 to 4"));
    }
    Ok(Header {
        width: u32::from(width),
        height: u32::from(height),
        components: count,
        precision,
        frame,
        format: sampling(&factors),
        orientation: 1,
        has_scan: false,
    })
}

#[cfg(test)]
mod tests {
    use super::{CSS_411, CSS_420, CSS_422, CSS_440, CSS_GRAY, Frame, HeaderError, parse};

    fn sof(marker: u8, w: u16, h: u16, factors: &[u8]) -> Vec<u8> {
        let mut v = vec![0xFF, 0xD8, 0xFF, marker];
        let len = 8 + 3 * factors.len() as u16;
        v.extend_from_slice(&len.to_be_bytes());
        v.push(8);
        v.extend_from_slice(&h.to_be_bytes());
        v.extend_from_slice(&w.to_be_bytes());
        v.push(factors.len() as u8);
        for (i, f) in factors.iter().enumerate() {
            v.extend_from_slice(&[i as u8 + 1, *f, 0]);
        }
        v.extend_from_slice(&[0xFF, 0xDA, 0, 2]);
        v
    }

    #[test]
    fn frame_kinds_and_samplings() {
        let h = parse(&sof(0xC0, 640, 480, &[0x22, 0x11, 0x11])).unwrap();
        assert_eq!(
            (h.width, h.height, h.format, h.frame),
            (640, 480, CSS_420, Frame::Baseline)
        );
        assert!(h.has_scan && h.check_supported().is_ok());
        assert_eq!(parse(&sof(0xC0, 8, 8, &[0x11])).unwrap().format, CSS_GRAY);
        assert_eq!(
            parse(&sof(0xC1, 8, 8, &[0x21, 0x11, 0x11])).unwrap().format,
            CSS_422
        );
        assert_eq!(
            parse(&sof(0xC0, 8, 8, &[0x12, 0x11, 0x11])).unwrap().format,
            CSS_440
        );
        for (m, f) in [
            (0xC2, Frame::Progressive),
            (0xC3, Frame::Lossless),
            (0xC5, Frame::Hierarchical),
            (0xC9, Frame::Arithmetic),
        ] {
            let h = parse(&sof(m, 64, 64, &[0x11])).unwrap();
            assert_eq!(h.frame, f);
            assert!(matches!(
                h.check_supported(),
                Err(HeaderError::Unsupported(_))
            ));
        }
        let h = parse(&sof(0xC0, 64, 64, &[0x41, 0x11, 0x11])).unwrap();
        assert_eq!(h.format, CSS_411);
        assert!(h.check_supported().is_err());
    }

    #[test]
    fn every_prefix_is_an_error_or_a_header_never_a_panic() {
        let full = sof(0xC0, 65535, 65535, &[0x22, 0x11, 0x11]);
        for n in 0..full.len() {
            let _ = parse(&full[..n]);
        }
        let h = parse(&full).unwrap();
        assert_eq!((h.width, h.height), (65535, 65535));
        assert!(matches!(
            parse(b"\xFF\xD8\xFF\xC0\x00\x01"),
            Err(HeaderError::Malformed(_))
        ));
        assert!(matches!(parse(b"GIF89a"), Err(HeaderError::Malformed(_))));
    }

    #[test]
    fn exif_orientation_swaps_the_reported_size() {
        let mut v = vec![0xFF, 0xD8, 0xFF, 0xE1];
        let mut tiff = b"MM\0\x2a\0\0\0\x08".to_vec();
        tiff.extend_from_slice(&1u16.to_be_bytes());
        tiff.extend_from_slice(&[0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 6, 0, 0]);
        tiff.extend_from_slice(&[0, 0, 0, 0]);
        let len = (2 + 6 + tiff.len()) as u16;
        v.extend_from_slice(&len.to_be_bytes());
        v.extend_from_slice(b"Exif\0\0");
        v.extend_from_slice(&tiff);
        v.extend_from_slice(&sof(0xC0, 100, 50, &[0x11])[2..]);
        let h = parse(&v).unwrap();
        assert_eq!(h.orientation, 6);
        assert_eq!(h.oriented(), (50, 100));
    }
}
