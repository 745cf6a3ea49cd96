//! The VPC resize of a YUV420SP picture (DV9): OpenCV 3.4.2's `cv::resize` on `uint8`
//! planes, applied to the Y plane (w x h to W x H) and to the interleaved chroma plane as a
//! 2-channel image (w/2 x h/2 to W/2 x H/2). Bilinear is `INTER_LINEAR` with half-pixel
//! centres and 11-bit fixed-point weights (an exact 2x reduction takes `INTER_AREA`'s 2x2
//! mean, as OpenCV does); nearest is `INTER_NEAREST` (`floor(x * src / dst)`).
//!
//! Layer: plain data (part of `media`); imports nothing of the crate.

/// OpenCV's `INTER_RESIZE_COEF_BITS`: weights are fixed-point with 11 fraction bits.
const COEF_BITS: u32 = 11;
const COEF_SCALE: f32 = (1 << COEF_BITS) as f32;

/// A plane: `width` pixels of `channels` bytes per row, rows `stride` bytes apart.
#[derive(Clone, Copy, Debug)]
pub struct Plane {
    pub width: usize,
    pub height: usize,
    pub stride: usize,
    pub channels: usize,
}

/// Source index and the fixed-point weights of it and of its next neighbour, per destination
/// index (OpenCV's `xofs` / `ialpha` for a linear kernel: each weight rounded half to even,
/// as `saturate_cast<short>` does).
fn linear_taps(src: usize, dst: usize) -> Vec<(usize, i32, i32)> {
    let scale = src as f64 / dst as f64;
    (0..dst)
        .map(|d| {
            let f = ((d as f64 + 0.5) * scale - 0.5) as f32;
            let mut s = f.floor() as i64;
            let mut frac = f - s as f32;
            if s < 0 {
                s = 0;
                frac = 0.0;
            }
            if s >= src as i64 - 1 {
                s = src as i64 - 1;
                frac = 0.0;
            }
            let a0 = ((1.0 - frac) * COEF_SCALE).round_ties_even() as i32;
            let a1 = (frac * COEF_SCALE).round_ties_even() as i32;
            (s as usize, a0, a1)
        })
        .collect()
}

/// `INTER_LINEAR` (or its 2x `INTER_AREA` shortcut) from `src` into `dst`.
pub fn bilinear(src: &[u8], sp: Plane, dst: &mut [u8], dp: Plane) {
    if sp.width == 2 * dp.width && sp.height == 2 * dp.height {
        return halve(src, sp, dst, dp);
    }
    let cn = sp.channels;
    let xs = linear_taps(sp.width, dp.width);
    let ys = linear_taps(sp.height, dp.height);
    let one = 1i32 << COEF_BITS;
    // The horizontal pass of a source row: values scaled by 2^11.
    let hpass = |row: usize, out: &mut Vec<i32>| {
        out.clear();
        let r = &src[row * sp.stride..];
        for &(sx, a0, a1) in &xs {
            for c in 0..cn {
                let p0 = i32::from(r[sx * cn + c]);
                let v = if sx + 1 < sp.width {
                    let p1 = i32::from(r[(sx + 1) * cn + c]);
                    p0 * a0 + p1 * a1
                } else {
                    p0 * one
                };
                out.push(v);
            }
        }
    };
    let (mut r0, mut r1) = (Vec::new(), Vec::new());
    for (dy, &(sy, b0, b1)) in ys.iter().enumerate() {
        let sy1 = (sy + 1).min(sp.height - 1);
        hpass(sy, &mut r0);
        hpass(sy1, &mut r1);
        let out = &mut dst[dy * dp.stride..dy * dp.stride + dp.width * cn];
        for (i, o) in out.iter_mut().enumerate() {
            // OpenCV's VResizeLinear<uchar, int, short, FixedPtCast<.., 22>> for uint8.
            let v = ((b0 * (r0[i] >> 4)) >> 16) + ((b1 * (r1[i] >> 4)) >> 16) + 2;
            *o = (v >> 2).clamp(0, 255) as u8;
        }
    }
}

/// An exact 2x reduction: the rounded mean of each 2x2 block (OpenCV's fast `INTER_AREA`).
fn halve(src: &[u8], sp: Plane, dst: &mut [u8], dp: Plane) {
    let cn = sp.channels;
    for dy in 0..dp.height {
        let (a, b) = (&src[2 * dy * sp.stride..], &src[(2 * dy + 1) * sp.stride..]);
        for dx in 0..dp.width {
            for c in 0..cn {
                let (x0, x1) = (2 * dx * cn + c, (2 * dx + 1) * cn + c);
                let sum = u32::from(a[x0]) + u32::from(a[x1]) + u32::from(b[x0]) + u32::from(b[x1]);
                dst[dy * dp.stride + dx * cn + c] = ((sum + 2) >> 2) as u8;
            }
        }
    }
}

/// `INTER_NEAREST` from `src` into `dst`.
pub fn nearest(src: &[u8], sp: Plane, dst: &mut [u8], dp: Plane) {
    let cn = sp.channels;
    let fx = sp.width as f64 / dp.width as f64;
    let fy = sp.height as f64 / dp.height as f64;
    let xs: Vec<usize> = (0..dp.width)
        .map(|x| ((x as f64 * fx).floor() as usize).min(sp.width - 1))
        .collect();
    for dy in 0..dp.height {
        let sy = ((dy as f64 * fy).floor() as usize).min(sp.height - 1);
        let r = &src[sy * sp.stride..];
        for (dx, &sx) in xs.iter().enumerate() {
            for c in 0..cn {
                dst[dy * dp.stride + dx * cn + c] = r[sx * cn + c];
            }
        }
    }
}

/// Resizes a YUV420SP picture: `src` holds `sp`'s Y plane (`sp.height` rows reserved:
/// `src_rows`) followed by its chroma plane; `dst` likewise. Padding of `dst` is filled with
/// `pad`. `nearest_kernel` picks `INTER_NEAREST`, else `INTER_LINEAR`.
#[allow(clippy::too_many_arguments)]
pub fn yuv420sp(
    src: &[u8],
    sp: Plane,
    src_rows: usize,
    dst: &mut [u8],
    dp: Plane,
    dst_rows: usize,
    nearest_kernel: bool,
    pad: u8,
) {
    dst.fill(pad);
    let run = if nearest_kernel { nearest } else { bilinear };
    run(src, sp, dst, dp);
    let half = |p: Plane| Plane {
        width: p.width / 2,
        height: p.height / 2,
        stride: p.stride,
        channels: 2,
    };
    let (suv, duv) = (sp.stride * src_rows, dp.stride * dst_rows);
    run(&src[suv..], half(sp), &mut dst[duv..], half(dp));
}

#[cfg(test)]
mod tests {
    use super::{Plane, bilinear, nearest};

    fn plane(w: usize, h: usize) -> Plane {
        Plane {
            width: w,
            height: h,
            stride: w,
            channels: 1,
        }
    }

    #[test]
    fn identity_and_constant_planes() {
        let src: Vec<u8> = (0..64u8).collect();
        let mut dst = vec![0u8; 64];
        bilinear(&src, plane(8, 8), &mut dst, plane(8, 8));
        assert_eq!(src, dst);
        nearest(&src, plane(8, 8), &mut dst, plane(8, 8));
        assert_eq!(src, dst);
        let flat = vec![77u8; 30 * 20];
        let mut out = vec![0u8; 13 * 7];
        bilinear(&flat, plane(30, 20), &mut out, plane(13, 7));
        assert!(out.iter().all(|&v| v == 77));
    }

    #[test]
    fn halving_is_the_mean_of_each_block() {
        let src = [0u8, 4, 8, 12, 100, 104, 108, 112];
        let mut dst = [0u8; 2];
        bilinear(&src, plane(4, 2), &mut dst, plane(2, 1));
        assert_eq!(dst, [52, 60]);
    }
}
