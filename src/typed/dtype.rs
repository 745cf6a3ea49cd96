//! Element types and layouts of a model's tensors (MD13): what the description says
//! ([`DataType`], [`Format`]), and the Rust types that may read or write a tensor of each
//! type ([`Element`], with [`F16`] and [`BF16`] for the 16-bit floats Rust lacks).

use bytemuck::{Pod, Zeroable};

/// Declares a C enum of the runtime as a Rust enum with an `Unknown(i32)` catch-all.
macro_rules! c_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $code:literal, $c_name:literal, $desc:literal; )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name {
            $(
                #[doc = concat!("`", $c_name, "` (", stringify!($code), "): ", $desc, ".")]
                $(#[$vmeta])*
                $variant,
            )*
            /// A value this crate does not know (a newer runtime's), carried intact.
            Unknown(i32),
        }

        impl $name {
            /// Every named value, in the header's order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The value for a number the runtime answered.
            pub const fn from_raw(raw: i32) -> Self {
                match raw {
                    $($code => $name::$variant,)*
                    other => $name::Unknown(other),
                }
            }

            /// The number the runtime uses for it.
            pub const fn raw(self) -> i32 {
                match self {
                    $($name::$variant => $code,)*
                    $name::Unknown(raw) => raw,
                }
            }

            /// The C name (`"unknown"` for [`Unknown`](Self::Unknown)).
            pub const fn c_name(self) -> &'static str {
                match self {
                    $($name::$variant => $c_name,)*
                    $name::Unknown(_) => "unknown",
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                match self {
                    $($name::$variant => write!(f, "{} ({})", $c_name, $desc),)*
                    $name::Unknown(raw) => write!(f, "unknown ({raw})"),
                }
            }
        }
    };
}

c_enum! {
    /// The element type of a model's input or output (`aclDataType`, `acl_base_rt.h`), from
    /// its description: [`TensorDesc::data_type`](crate::TensorDesc::data_type). The
    /// [`Element`] types read and write the ones Rust can hold.
    ///
    /// ```
    /// use ascend_typestate::{DataType, Element, F16};
    /// assert_eq!(DataType::from_raw(3), DataType::Int32);
    /// assert_eq!(f32::DATA_TYPE.raw(), 0);
    /// assert_eq!(F16::DATA_TYPE, DataType::Float16);
    /// assert_eq!(DataType::from_raw(99), DataType::Unknown(99));
    /// ```
    pub enum DataType {
        Undefined = -1, "ACL_DT_UNDEFINED", "no type: the runtime's answer when the query fails";
        Float = 0, "ACL_FLOAT", "f32";
        Float16 = 1, "ACL_FLOAT16", "float16, IEEE 754 binary16: F16";
        Int8 = 2, "ACL_INT8", "i8";
        Int32 = 3, "ACL_INT32", "i32";
        Uint8 = 4, "ACL_UINT8", "u8";
        Int16 = 6, "ACL_INT16", "i16";
        Uint16 = 7, "ACL_UINT16", "u16";
        Uint32 = 8, "ACL_UINT32", "u32";
        Int64 = 9, "ACL_INT64", "i64";
        Uint64 = 10, "ACL_UINT64", "u64";
        Double = 11, "ACL_DOUBLE", "f64";
        Bool = 12, "ACL_BOOL", "bool, one byte";
        String = 13, "ACL_STRING", "string";
        Complex64 = 16, "ACL_COMPLEX64", "complex of two f32";
        Complex128 = 17, "ACL_COMPLEX128", "complex of two f64";
        Bf16 = 27, "ACL_BF16", "bfloat16: BF16";
        Int4 = 29, "ACL_INT4", "4-bit integer";
        Uint1 = 30, "ACL_UINT1", "1-bit integer";
        Complex32 = 33, "ACL_COMPLEX32", "complex of two float16";
        HiFloat8 = 34, "ACL_HIFLOAT8", "HiFloat8 (Ascend 950 only)";
        Float8E5m2 = 35, "ACL_FLOAT8_E5M2", "8-bit float E5M2 (Ascend 950 only)";
        Float8E4m3fn = 36, "ACL_FLOAT8_E4M3FN", "8-bit float E4M3FN (Ascend 950 only)";
        Float8E8m0 = 37, "ACL_FLOAT8_E8M0", "8-bit float E8M0 (Ascend 950 only)";
        Float6E3m2 = 38, "ACL_FLOAT6_E3M2", "6-bit float E3M2 (Ascend 950 only)";
        Float6E2m3 = 39, "ACL_FLOAT6_E2M3", "6-bit float E2M3 (Ascend 950 only)";
        Float4E2m1 = 40, "ACL_FLOAT4_E2M1", "4-bit float E2M1 (Ascend 950 only)";
        Float4E1m2 = 41, "ACL_FLOAT4_E1M2", "4-bit float E1M2 (Ascend 950 only)";
    }
}

c_enum! {
    /// The layout of a model's input or output (`aclFormat`, `acl_base_rt.h`), from its
    /// description: [`TensorDesc::format`](crate::TensorDesc::format). Informative: the crate
    /// checks element types and sizes, not layouts (an NCHW and an NHWC tensor of the same
    /// type and size are the same bytes to a copy).
    pub enum Format {
        Undefined = -1, "ACL_FORMAT_UNDEFINED", "no format: the runtime's answer when the query fails";
        Nchw = 0, "ACL_FORMAT_NCHW", "4 dims: batch, channels, height, width";
        Nhwc = 1, "ACL_FORMAT_NHWC", "4 dims: batch, height, width, channels";
        Nd = 2, "ACL_FORMAT_ND", "any number of dims, no layout implied";
        Nc1hwc0 = 3, "ACL_FORMAT_NC1HWC0", "5 dims, channels split in blocks of C0";
        FractalZ = 4, "ACL_FORMAT_FRACTAL_Z", "convolution weights";
        Nc1hwc0C04 = 12, "ACL_FORMAT_NC1HWC0_C04", "5 dims, C0 = 4";
        Hwcn = 16, "ACL_FORMAT_HWCN", "4 dims: height, width, channels, batch";
        Ndhwc = 27, "ACL_FORMAT_NDHWC", "5 dims with depth";
        FractalNz = 29, "ACL_FORMAT_FRACTAL_NZ", "internal fractal layout";
        Ncdhw = 30, "ACL_FORMAT_NCDHW", "5 dims with depth";
        Ndc1hwc0 = 32, "ACL_FORMAT_NDC1HWC0", "6 dims: NC1HWC0 with depth";
        FractalZ3d = 33, "ACL_FRACTAL_Z_3D", "3-D convolution weights";
        Nc = 35, "ACL_FORMAT_NC", "2 dims";
        Ncl = 47, "ACL_FORMAT_NCL", "3 dims";
        FractalNzC0x16 = 50, "ACL_FORMAT_FRACTAL_NZ_C0_16", "internal fractal layout, C0 = 16 (Ascend 950 only)";
        FractalNzC0x32 = 51, "ACL_FORMAT_FRACTAL_NZ_C0_32", "internal fractal layout, C0 = 32 (Ascend 950 only)";
        FractalNzC0x2 = 52, "ACL_FORMAT_FRACTAL_NZ_C0_2", "internal fractal layout, C0 = 2 (Ascend 950 only)";
        FractalNzC0x4 = 53, "ACL_FORMAT_FRACTAL_NZ_C0_4", "internal fractal layout, C0 = 4 (Ascend 950 only)";
        FractalNzC0x8 = 54, "ACL_FORMAT_FRACTAL_NZ_C0_8", "internal fractal layout, C0 = 8 (Ascend 950 only)";
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A Rust type that holds one element of a model tensor of type
/// [`DATA_TYPE`](Self::DATA_TYPE), byte for byte (MD13). Every typed read and write of model
/// memory names one: [`ModelIo::write_input`](crate::ModelIo::write_input),
/// [`ModelIo::read_output`](crate::ModelIo::read_output),
/// [`ModelIo::output_view`](crate::ModelIo::output_view), and the `I` and `O` of a
/// [`Pipeline`](crate::Pipeline) that executes a model
/// ([`Launch::execute`](crate::Launch::execute)). A tensor of another type is refused before
/// anything runs ([`Error::ModelTypeMismatch`](crate::Error::ModelTypeMismatch)): an `i32`
/// output read as `f32` would be plausible-looking garbage, not an error.
///
/// | Rust | [`DataType`] |
/// |---|---|
/// | `f32` | `Float` |
/// | `f64` | `Double` |
/// | `i8`, `i16`, `i32`, `i64` | `Int8`, `Int16`, `Int32`, `Int64` |
/// | `u8`, `u16`, `u32`, `u64` | `Uint8`, `Uint16`, `Uint32`, `Uint64` |
/// | [`F16`] | `Float16` |
/// | [`BF16`] | `Bf16` |
///
/// Sealed: the mapping is a fact about the runtime, not a choice (a `u16` is never a
/// `float16`: use [`F16`]). Types without a Rust equivalent (`Bool`, `String`, complex and
/// sub-byte types) have no `Element`; such tensors are reached through the raw layer.
pub trait Element: Pod + sealed::Sealed {
    /// The runtime's name for this element type.
    const DATA_TYPE: DataType;
}

macro_rules! elements {
    ($($t:ty => $dt:ident),* $(,)?) => {
        $(
            impl sealed::Sealed for $t {}
            impl Element for $t {
                const DATA_TYPE: DataType = DataType::$dt;
            }
        )*
    };
}

elements! {
    f32 => Float,
    f64 => Double,
    i8 => Int8,
    u8 => Uint8,
    i16 => Int16,
    u16 => Uint16,
    i32 => Int32,
    u32 => Uint32,
    i64 => Int64,
    u64 => Uint64,
    F16 => Float16,
    BF16 => Bf16,
}

/// One IEEE 754 binary16 value (`ACL_FLOAT16`, the runtime's `aclFloat16`), as its bits: the
/// [`Element`] of `float16` tensors, which ATC produces for many NPU models
/// (`--input_fp16_nodes`, or an ONNX graph in float16). Converts to and from `f32`
/// ([`from_f32`](Self::from_f32): round to nearest, ties to even; overflow gives infinity).
///
/// ```
/// use ascend_typestate::F16;
/// assert_eq!(F16::from_f32(1.0).to_bits(), 0x3c00);
/// assert_eq!(F16::from_f32(-2.5).to_f32(), -2.5);
/// assert_eq!(F16::from_f32(1e6).to_f32(), f32::INFINITY);
/// ```
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct F16(u16);

/// One bfloat16 value (`ACL_BF16`: the upper half of an `f32`), as its bits: the [`Element`]
/// of `bfloat16` tensors. [`from_f32`](Self::from_f32) rounds to nearest, ties to even.
///
/// ```
/// use ascend_typestate::BF16;
/// assert_eq!(BF16::from_f32(1.0).to_bits(), 0x3f80);
/// assert_eq!(BF16::from_f32(3.0).to_f32(), 3.0);
/// ```
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct BF16(u16);

// SAFETY: `#[repr(transparent)]` over `u16`, which is `Zeroable` and `Pod`: every bit pattern
// is a value, no padding, no pointers.
unsafe impl Zeroable for F16 {}
// SAFETY: as above.
unsafe impl Pod for F16 {}
// SAFETY: as above.
unsafe impl Zeroable for BF16 {}
// SAFETY: as above.
unsafe impl Pod for BF16 {}

impl F16 {
    /// The value with these bits.
    pub const fn from_bits(bits: u16) -> F16 {
        F16(bits)
    }

    /// Its bits.
    pub const fn to_bits(self) -> u16 {
        self.0
    }

    /// The nearest `float16` (ties to even); beyond its range, infinity; NaN stays NaN.
    pub const fn from_f32(value: f32) -> F16 {
        let x = value.to_bits();
        let sign = ((x >> 16) & 0x8000) as u16;
        let exp = ((x >> 23) & 0xff) as i32;
        let man = x & 0x7f_ffff;
        if exp == 0xff {
            // Infinity, or NaN (kept quiet, with the top bits of its payload).
            let nan = if man != 0 {
                0x0200 | (man >> 13) as u16
            } else {
                0
            };
            return F16(sign | 0x7c00 | nan);
        }
        // The exponent in float16's bias.
        let e = exp - 127 + 15;
        if e >= 0x1f {
            return F16(sign | 0x7c00);
        }
        if e <= 0 {
            // Subnormal (or zero): units of 2^-24, from the 24-bit significand.
            if e < -10 {
                return F16(sign);
            }
            let m = man | 0x80_0000;
            let shift = (14 - e) as u32;
            let half = 1u32 << (shift - 1);
            let rest = m & ((1u32 << shift) - 1);
            let mut h = (m >> shift) as u16;
            if rest > half || (rest == half && h & 1 == 1) {
                // May carry into the smallest normal: the bits are right as they are.
                h += 1;
            }
            return F16(sign | h);
        }
        let mut h = ((e as u32) << 10 | man >> 13) as u16;
        let rest = man & 0x1fff;
        if rest > 0x1000 || (rest == 0x1000 && h & 1 == 1) {
            // May carry into the exponent, up to infinity: the bits are right as they are.
            h += 1;
        }
        F16(sign | h)
    }

    /// The `f32` of the same value (exact).
    pub const fn to_f32(self) -> f32 {
        let h = self.0 as u32;
        let sign = (h & 0x8000) << 16;
        let exp = (h >> 10) & 0x1f;
        let mut man = h & 0x3ff;
        let bits = if exp == 0x1f {
            sign | 0x7f80_0000 | man << 13
        } else if exp != 0 {
            sign | (exp + 112) << 23 | man << 13
        } else if man == 0 {
            sign
        } else {
            // Subnormal: normalise.
            let mut e: i32 = 1;
            while man & 0x400 == 0 {
                man <<= 1;
                e -= 1;
            }
            sign | ((e + 112) as u32) << 23 | (man & 0x3ff) << 13
        };
        f32::from_bits(bits)
    }
}

impl BF16 {
    /// The value with these bits.
    pub const fn from_bits(bits: u16) -> BF16 {
        BF16(bits)
    }

    /// Its bits.
    pub const fn to_bits(self) -> u16 {
        self.0
    }

    /// The nearest `bfloat16` (ties to even); NaN stays NaN.
    pub const fn from_f32(value: f32) -> BF16 {
        let x = value.to_bits();
        if value.is_nan() {
            return BF16((x >> 16) as u16 | 0x0040);
        }
        let rounding = 0x7fff + ((x >> 16) & 1);
        BF16((x.wrapping_add(rounding) >> 16) as u16)
    }

    /// The `f32` of the same value (exact).
    pub const fn to_f32(self) -> f32 {
        f32::from_bits((self.0 as u32) << 16)
    }
}

impl From<F16> for f32 {
    fn from(value: F16) -> f32 {
        value.to_f32()
    }
}

impl From<BF16> for f32 {
    fn from(value: BF16) -> f32 {
        value.to_f32()
    }
}

impl std::fmt::Debug for F16 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "F16({})", self.to_f32())
    }
}

impl std::fmt::Debug for BF16 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BF16({})", self.to_f32())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_values_round_trip() {
        for dt in DataType::ALL {
            assert_eq!(DataType::from_raw(dt.raw()), *dt);
        }
        for format in Format::ALL {
            assert_eq!(Format::from_raw(format.raw()), *format);
        }
        assert_eq!(DataType::from_raw(-1), DataType::Undefined);
        assert_eq!(DataType::from_raw(5), DataType::Unknown(5));
        assert_eq!(Format::from_raw(2), Format::Nd);
        assert_eq!(DataType::Int32.to_string(), "ACL_INT32 (i32)");
    }

    /// The `NAME = VALUE` lines of the C enum `name` of `include/ascendcl.h`.
    fn header_enum(name: &str) -> Vec<(String, i32)> {
        let header = include_str!("../../include/ascendcl.h");
        let start = header
            .find(&format!("typedef enum {name} {{"))
            .expect("the enum is in the header");
        let body = &header[start..];
        let body = &body[body.find('{').unwrap_or(0) + 1..body.find('}').unwrap_or(0)];
        body.lines()
            .filter_map(|line| {
                let (c_name, value) = line.trim().trim_end_matches(',').split_once(" = ")?;
                Some((c_name.to_string(), value.parse().ok()?))
            })
            .collect()
    }

    #[test]
    fn the_enums_are_the_headers() {
        let ours = |all: &[(&str, i32)]| -> Vec<(String, i32)> {
            all.iter().map(|(n, v)| (n.to_string(), *v)).collect()
        };
        let types: Vec<(&str, i32)> = DataType::ALL
            .iter()
            .map(|t| (t.c_name(), t.raw()))
            .collect();
        assert_eq!(ours(&types), header_enum("aclDataType"));
        let formats: Vec<(&str, i32)> = Format::ALL.iter().map(|f| (f.c_name(), f.raw())).collect();
        assert_eq!(ours(&formats), header_enum("aclFormat"));
        assert_eq!(
            DataType::Float16.raw(),
            crate::sys::bindings::ACL_FLOAT16,
            "the bindings agree"
        );
        assert_eq!(Format::Nchw.raw(), crate::sys::bindings::ACL_FORMAT_NCHW);
    }

    #[test]
    fn f16_conversions() {
        for (value, bits) in [
            (0.0f32, 0x0000u16),
            (-0.0, 0x8000),
            (1.0, 0x3c00),
            (-2.0, 0xc000),
            (65504.0, 0x7bff),
            (65520.0, 0x7c00), // rounds up to infinity
            (f32::INFINITY, 0x7c00),
            (6.103_515_6e-5, 0x0400), // smallest normal
            (5.960_464_5e-8, 0x0001), // smallest subnormal
            (2.980_232_2e-8, 0x0000), // half of it: ties to even, zero
            (4.470_348_4e-8, 0x0001), // 0.75 of it: one
            (1.000_488_3, 0x3c00),    // halfway between 1 and the next: even
            (1.001_464_8, 0x3c02),    // halfway between the next two: even, up
        ] {
            assert_eq!(F16::from_f32(value).to_bits(), bits, "{value}");
        }
        assert!(F16::from_f32(f32::NAN).to_f32().is_nan());
        // Every finite float16 converts to f32 and back unchanged.
        for bits in 0..=u16::MAX {
            let h = F16::from_bits(bits);
            let back = F16::from_f32(h.to_f32());
            if h.to_f32().is_nan() {
                assert!(back.to_f32().is_nan());
            } else {
                assert_eq!(back.to_bits(), bits, "{bits:#06x}");
            }
        }
    }

    #[test]
    fn bf16_conversions() {
        assert_eq!(BF16::from_f32(1.0).to_bits(), 0x3f80);
        assert_eq!(BF16::from_f32(-1.5).to_f32(), -1.5);
        // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even.
        assert_eq!(BF16::from_f32(1.0 + 1.0 / 256.0).to_f32(), 1.0);
        assert_eq!(
            BF16::from_f32(1.0 + 3.0 / 256.0).to_f32(),
            1.0 + 4.0 / 256.0
        );
        assert!(BF16::from_f32(f32::NAN).to_f32().is_nan());
        for bits in 0..=u16::MAX {
            let b = BF16::from_bits(bits);
            if !b.to_f32().is_nan() {
                assert_eq!(BF16::from_f32(b.to_f32()).to_bits(), bits);
            }
        }
    }
}
