//! The simulator's model format (`aclsim-model 1`, sim/README.md "Models"): its parser and
//! its evaluator. Pure code: no runtime state, no FFI (the entry points are in
//! `api::model`).
//!
//! Split along its seams: the types, the element conversions and the evaluator here, the
//! parser in `parser`, the unit tests in `tests`.
//!
//! Layer: plain data (with `state` and `errmsg`); imports `state::code` and the P5 limit
//! (`state::extra`), nothing above.

use crate::state::code;

mod parser;
#[cfg(test)]
mod tests;

pub use parser::{ParseError, may_be_ours, parse};

/// The name of the dynamic-batch input (`ACL_DYNAMIC_TENSOR_NAME`).
pub const DYNAMIC_INPUT: &str = "ascend_mbatch_shape_data";
/// The recent error message for a file that is not in this format (a real `.om`).
pub const NOT_ACLSIM: &str = "not an aclsim model: a real .om needs the CANN runtime";
/// At most this many dims per tensor.
pub const MAX_DIMS: usize = 8;
/// At most this many data inputs, and this many outputs, per model.
pub const MAX_TENSORS: usize = 16;
/// At most this many batch gears: what `aclmdlBatch` holds (`ACL_MAX_BATCH_NUM`, 128; ATC
/// compiles at most 100).
pub const MAX_GEARS: usize = 128;
/// At most this many value operations per execution (see [`Model::eval_ops`]): about what
/// the evaluator does in 2176 s, the longest operator execution timeout (P5), at a
/// conservative 5 x 10^8 a second. A model whose evaluation could take longer is refused
/// at load (100015): it is too large to simulate.
pub const MAX_EVAL_OPS: u64 = 1 << 40;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DType {
    F32,
    U8,
    I32,
    /// IEEE 754 binary16 (`ACL_FLOAT16`).
    F16,
    /// bfloat16 (`ACL_BF16`).
    BF16,
}

/// `aclDataType` values (`acl_base_rt.h`).
pub mod acl_dt {
    pub const UNDEFINED: i32 = -1;
    pub const FLOAT: i32 = 0;
    pub const FLOAT16: i32 = 1;
    pub const INT32: i32 = 3;
    pub const UINT8: i32 = 4;
    pub const BF16: i32 = 27;
}

/// `aclFormat` values (`acl_base_rt.h`).
pub mod acl_format {
    pub const UNDEFINED: i32 = -1;
    pub const NCHW: i32 = 0;
    pub const ND: i32 = 2;
}

impl DType {
    pub fn size(self) -> usize {
        match self {
            DType::U8 => 1,
            DType::F16 | DType::BF16 => 2,
            DType::F32 | DType::I32 => 4,
        }
    }

    /// The `aclDataType` the description reports (MD13).
    pub fn acl(self) -> i32 {
        match self {
            DType::F32 => acl_dt::FLOAT,
            DType::U8 => acl_dt::UINT8,
            DType::I32 => acl_dt::INT32,
            DType::F16 => acl_dt::FLOAT16,
            DType::BF16 => acl_dt::BF16,
        }
    }
}

/// binary16 bits to f32 (exact).
pub fn f16_to_f32(h: u16) -> f32 {
    let h = h as u32;
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
        let mut e: i32 = 1;
        while man & 0x400 == 0 {
            man <<= 1;
            e -= 1;
        }
        sign | ((e + 112) as u32) << 23 | (man & 0x3ff) << 13
    };
    f32::from_bits(bits)
}

/// f32 to binary16 bits: round to nearest, ties to even; overflow to infinity.
pub fn f32_to_f16(value: f32) -> u16 {
    let x = value.to_bits();
    let sign = ((x >> 16) & 0x8000) as u16;
    let exp = ((x >> 23) & 0xff) as i32;
    let man = x & 0x7f_ffff;
    if exp == 0xff {
        return sign
            | 0x7c00
            | if man != 0 {
                0x0200 | (man >> 13) as u16
            } else {
                0
            };
    }
    let e = exp - 112;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    let (mut h, rest, half) = if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        (
            (m >> shift) as u16,
            m & ((1 << shift) - 1),
            1u32 << (shift - 1),
        )
    } else {
        (((e as u32) << 10 | man >> 13) as u16, man & 0x1fff, 0x1000)
    };
    if rest > half || (rest == half && h & 1 == 1) {
        h += 1;
    }
    sign | h
}

/// bfloat16 bits to f32 (exact).
pub fn bf16_to_f32(b: u16) -> f32 {
    f32::from_bits((b as u32) << 16)
}

/// f32 to bfloat16 bits: round to nearest, ties to even.
pub fn f32_to_bf16(value: f32) -> u16 {
    let x = value.to_bits();
    if value.is_nan() {
        return (x >> 16) as u16 | 0x0040;
    }
    (x.wrapping_add(0x7fff + ((x >> 16) & 1)) >> 16) as u16
}

#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    pub name: String,
    pub dtype: DType,
    /// The dims of the largest gear (MD10).
    pub dims: Vec<i64>,
}

impl Tensor {
    pub fn elements(&self) -> usize {
        self.dims.iter().map(|d| *d as usize).product()
    }
    /// Size in bytes (largest gear).
    pub fn bytes(&self) -> usize {
        self.elements().saturating_mul(self.dtype.size())
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    Scale(f32),
    Add(f32),
    Relu,
    Matmul {
        rows: usize,
        cols: usize,
        w: Vec<f32>,
    },
    Bias(Vec<f32>),
    Argmax(usize),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    /// The data inputs, in order (at least one; the dynamic-batch input is not among them).
    pub inputs: Vec<Tensor>,
    /// The outputs, in order (at least one).
    pub outputs: Vec<Tensor>,
    /// Batch gears, ascending; empty for a static model.
    pub gears: Vec<u64>,
    pub time_us: u64,
    pub work: usize,
    pub weight: usize,
    pub ops: Vec<Op>,
    /// The most f32 values the evaluator holds at once (all items of the largest gear).
    pub peak_values: u64,
    /// The value operations of an execution of the largest gear: each op counts the values
    /// it reads (a matmul, each value times its columns), plus the inputs' and the outputs'
    /// conversions. At most [`MAX_EVAL_OPS`].
    pub eval_ops: u64,
}

/// An input of a model by its index in the runtime's order: the data inputs, then the
/// dynamic-batch input of a dynamic model.
pub enum InputAt<'a> {
    Data(&'a Tensor),
    Batch,
}

impl Model {
    /// The device memory the model needs to run: its I/O (the dynamic-batch input
    /// included), work and weight memory, and the evaluator's intermediate values (f32).
    /// `None` on overflow.
    pub fn device_bytes(&self) -> Option<u64> {
        let io = self
            .inputs
            .iter()
            .chain(&self.outputs)
            .map(Tensor::bytes)
            .chain([self.work, self.weight])
            .try_fold(0u64, |sum, n| sum.checked_add(u64::try_from(n).ok()?))?;
        io.checked_add(if self.dynamic() { 8 } else { 0 })?
            .checked_add(self.peak_values.checked_mul(4)?)
    }

    /// A model that cannot fit in a device of `device_memory` bytes: 100015
    /// (`ACL_ERROR_MODEL_SIZE_INVALID`), refused at load and by `aclmdlQuerySize`.
    pub fn check_fits(&self, device_memory: u64) -> Result<(), ParseError> {
        match self.device_bytes() {
            Some(n) if n <= device_memory => Ok(()),
            n => Err(ParseError {
                code: code::MODEL_SIZE_INVALID,
                message: format!(
                    "the model needs {} B of device memory (I/O, work, weight, intermediate values), the device has {device_memory} B",
                    n.map_or_else(|| "more than 2^64".to_string(), |n| n.to_string())
                ),
            }),
        }
    }

    pub fn dynamic(&self) -> bool {
        !self.gears.is_empty()
    }

    pub fn max_batch(&self) -> u64 {
        self.gears.last().copied().unwrap_or(1)
    }

    /// How many inputs the runtime reports: the data inputs, and the dynamic-batch input.
    pub fn input_count(&self) -> usize {
        self.inputs.len() + usize::from(self.dynamic())
    }

    /// Input `index` in the runtime's order (the dynamic-batch input last).
    pub fn input_at(&self, index: usize) -> Option<InputAt<'_>> {
        match self.inputs.get(index) {
            Some(t) => Some(InputAt::Data(t)),
            None if self.dynamic() && index == self.inputs.len() => Some(InputAt::Batch),
            None => None,
        }
    }

    /// The dims of output `index` for `batch` (MD12; the largest gear for a static model or
    /// `None`).
    pub fn output_dims(&self, index: usize, batch: Option<u64>) -> Option<Vec<i64>> {
        let mut d = self.outputs.get(index)?.dims.clone();
        if let Some(b) = batch.filter(|_| self.dynamic()) {
            d[0] = b as i64;
        }
        Some(d)
    }

    /// Runs the model on `inputs` (each input buffer's bytes, at least its described size)
    /// for `batch` items, writing `outputs` (each at least its described size): the inputs'
    /// first `batch` items converted to f32 and concatenated in order, the ops applied, the
    /// values handed to the outputs in order (each its first `batch` items, converted to its
    /// type: rounded, saturated), the rest of every output zeroed.
    pub fn eval(&self, inputs: &[Vec<u8>], batch: u64, outputs: &mut [Vec<u8>]) {
        let max = self.max_batch() as usize;
        let batch = (batch as usize).clamp(1, max);
        let mut x: Vec<f32> = Vec::new();
        for (tensor, bytes) in self.inputs.iter().zip(inputs) {
            let n_in = tensor.elements() / max * batch;
            x.extend(read_values(tensor.dtype, bytes, n_in));
        }
        for op in &self.ops {
            x = apply(op, x);
        }
        let mut values = x.iter();
        for (tensor, output) in self.outputs.iter().zip(outputs) {
            let size = tensor.dtype.size();
            let n_out = (output.len() / size).min(tensor.elements());
            output[..n_out * size].fill(0);
            let items = (tensor.elements() / max * batch).min(n_out);
            for (i, v) in values.by_ref().take(items).enumerate() {
                write_value(tensor.dtype, *v, &mut output[i * size..(i + 1) * size]);
            }
        }
    }
}

/// The first `n` values of `bytes`, elements of `dtype`, as f32.
fn read_values(dtype: DType, bytes: &[u8], n: usize) -> Vec<f32> {
    match dtype {
        DType::F32 => bytes
            .chunks_exact(4)
            .take(n)
            .map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        DType::I32 => bytes
            .chunks_exact(4)
            .take(n)
            .map(|c| i32::from_ne_bytes([c[0], c[1], c[2], c[3]]) as f32)
            .collect(),
        DType::U8 => bytes.iter().take(n).map(|b| *b as f32).collect(),
        DType::F16 => bytes
            .chunks_exact(2)
            .take(n)
            .map(|c| f16_to_f32(u16::from_ne_bytes([c[0], c[1]])))
            .collect(),
        DType::BF16 => bytes
            .chunks_exact(2)
            .take(n)
            .map(|c| bf16_to_f32(u16::from_ne_bytes([c[0], c[1]])))
            .collect(),
    }
}

/// `v` converted to `dtype` into `at` (its size).
fn write_value(dtype: DType, v: f32, at: &mut [u8]) {
    match dtype {
        DType::F32 => at.copy_from_slice(&v.to_ne_bytes()),
        // `as` saturates (NaN gives 0).
        DType::I32 => at.copy_from_slice(&(v.round() as i32).to_ne_bytes()),
        DType::U8 => at[0] = v.round() as u8,
        DType::F16 => at.copy_from_slice(&f32_to_f16(v).to_ne_bytes()),
        DType::BF16 => at.copy_from_slice(&f32_to_bf16(v).to_ne_bytes()),
    }
}

fn apply(op: &Op, mut x: Vec<f32>) -> Vec<f32> {
    match op {
        Op::Scale(a) => x.iter_mut().for_each(|v| *v *= a),
        Op::Add(b) => x.iter_mut().for_each(|v| *v += b),
        Op::Relu => x.iter_mut().for_each(|v| *v = v.max(0.0)),
        Op::Bias(b) => {
            for row in x.chunks_mut(b.len()) {
                row.iter_mut().zip(b).for_each(|(v, b)| *v += b);
            }
        }
        Op::Matmul { rows, cols, w } => {
            return x
                .chunks(*rows)
                .flat_map(|row| {
                    (0..*cols).map(move |j| {
                        row.iter()
                            .enumerate()
                            .map(|(i, v)| v * w[i * cols + j])
                            .sum::<f32>()
                    })
                })
                .collect();
        }
        Op::Argmax(c) => {
            return x
                .chunks(*c)
                .map(|row| {
                    let mut best = 0;
                    for (i, v) in row.iter().enumerate() {
                        if *v > row[best] {
                            best = i;
                        }
                    }
                    best as f32
                })
                .collect();
        }
    }
    x
}
