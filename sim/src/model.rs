//! The simulator's model format (`aclsim-model 1`, sim/README.md "Models"): its parser and
//! its evaluator. Pure code: no runtime state, no FFI (the entry points are in
//! `api/model.rs`).

use crate::state::code;
use crate::state::extra::MAX_OP_EXEC_TIMEOUT_US;

/// The name of the dynamic-batch input (`ACL_DYNAMIC_TENSOR_NAME`).
pub const DYNAMIC_INPUT: &str = "ascend_mbatch_shape_data";
/// The recent error message for a file that is not in this format (a real `.om`).
pub const NOT_ACLSIM: &str = "not an aclsim model: a real .om needs the CANN runtime";
/// At most this many dims per tensor.
pub const MAX_DIMS: usize = 8;
/// At most this many batch gears: what `aclmdlBatch` holds (`ACL_MAX_BATCH_NUM`, 128; ATC
/// compiles at most 100).
pub const MAX_GEARS: usize = 128;
/// At most this many value operations per execution (see [`Model::eval_ops`]): about what
/// the evaluator does in 2176 s, the longest operator execution timeout (P5), at a
/// conservative 5 x 10^8 a second. A model whose evaluation could take longer is refused
/// at load (100015): it is too large to simulate.
pub const MAX_EVAL_OPS: u64 = 1 << 40;
/// At most this many characters of a word are quoted in an error message.
const SHOWN: usize = 40;

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
    pub input: Tensor,
    pub output: Tensor,
    /// Batch gears, ascending; empty for a static model.
    pub gears: Vec<u64>,
    pub time_us: u64,
    pub work: usize,
    pub weight: usize,
    pub ops: Vec<Op>,
    /// The most f32 values the evaluator holds at once (all items of the largest gear).
    pub peak_values: u64,
    /// The value operations of an execution of the largest gear: each op counts the values
    /// it reads (a matmul, each value times its columns), plus the input's and the output's
    /// conversions. At most [`MAX_EVAL_OPS`].
    pub eval_ops: u64,
}

/// A load failure: the error code and the reason (naming the line).
#[derive(Debug, PartialEq, Eq)]
pub struct ParseError {
    pub code: i32,
    pub message: String,
}

fn syntax(line: usize, msg: impl std::fmt::Display) -> ParseError {
    ParseError {
        code: code::PARSE_MODEL,
        message: format!("line {line}: {msg}"),
    }
}

/// `w`, or its first [`SHOWN`] characters and an ellipsis: an error message quotes no more
/// (a word may be megabytes long).
fn shown(w: &str) -> std::borrow::Cow<'_, str> {
    match w.char_indices().nth(SHOWN) {
        None => w.into(),
        Some((at, _)) => format!("{}...", &w[..at]).into(),
    }
}

fn num<T: std::str::FromStr>(line: usize, what: &str, s: Option<&str>) -> Result<T, ParseError> {
    let s = s.ok_or_else(|| syntax(line, format!("missing {what}")))?;
    s.parse()
        .map_err(|_| syntax(line, format!("bad {what} `{}`", shown(s))))
}

/// The words of a line after its directive, read lazily: a line is never split into a
/// vector (one of megabytes would take 16 bytes per word); each directive takes what it
/// needs and refuses what is left over.
type Words<'a> = std::str::SplitWhitespace<'a>;

fn tensor(line: usize, mut rest: Words<'_>) -> Result<Tensor, ParseError> {
    let (Some(name), Some(dtype), Some(dims), None) =
        (rest.next(), rest.next(), rest.next(), rest.next())
    else {
        return Err(syntax(line, "expected NAME DTYPE DIMS"));
    };
    if name == DYNAMIC_INPUT {
        return Err(syntax(
            line,
            format!("the name {DYNAMIC_INPUT} is reserved"),
        ));
    }
    let dtype = match dtype {
        "f32" => DType::F32,
        "u8" => DType::U8,
        "i32" => DType::I32,
        "f16" => DType::F16,
        "bf16" => DType::BF16,
        other => {
            return Err(syntax(
                line,
                format!("unknown dtype `{}` (f32, u8, i32, f16, bf16)", shown(other)),
            ));
        }
    };
    let mut parsed = Vec::new();
    for d in dims.split('x') {
        if parsed.len() == MAX_DIMS {
            return Err(syntax(line, format!("more than {MAX_DIMS} dims")));
        }
        match d.parse::<i64>() {
            Ok(v) if v >= 1 => parsed.push(v),
            _ => {
                return Err(syntax(
                    line,
                    format!("bad dim `{}` (an integer >= 1)", shown(d)),
                ));
            }
        }
    }
    let dims = parsed;
    let mut total: u64 = 1;
    for d in &dims {
        total = total
            .checked_mul(*d as u64)
            .filter(|t| *t <= 1 << 31)
            .ok_or_else(|| syntax(line, "tensor too large"))?;
    }
    Ok(Tensor {
        name: name.to_string(),
        dtype,
        dims,
    })
}

/// Exactly `n` values from `words`: those beyond are counted, never stored.
fn floats(
    line: usize,
    what: &str,
    words: &mut Words<'_>,
    n: usize,
) -> Result<Vec<f32>, ParseError> {
    let v: Vec<f32> = words
        .by_ref()
        .take(n)
        .map(|w| num(line, what, Some(w)))
        .collect::<Result<_, _>>()?;
    let more = words.count();
    if v.len() != n || more > 0 {
        return Err(syntax(
            line,
            format!(
                "{what}: expected {n} values, got {}",
                v.len().saturating_add(more)
            ),
        ));
    }
    Ok(v)
}

/// Whether a file whose first bytes are `head` may be a model of this format: false when its
/// first directive (after blank and comment lines) visibly is not `aclsim-model` (a real
/// .om, a file of zeros), so that such a file is refused without being read whole. True
/// when unsure (`head` ends first, or a non-ASCII byte that may be Unicode whitespace).
pub fn may_be_ours(head: &[u8]) -> bool {
    const MAGIC: &[u8] = b"aclsim-model";
    let mut i = 0;
    loop {
        // Whitespace as `str::trim` sees it (ASCII part).
        while i < head.len() && head[i].is_ascii() && char::from(head[i]).is_whitespace() {
            i += 1;
        }
        match head.get(i) {
            None => return true,
            Some(b'#') => match head[i..].iter().position(|&b| b == b'\n') {
                Some(end) => i += end + 1,
                None => return true,
            },
            Some(b) if !b.is_ascii() => return true,
            Some(_) => {
                let word = &head[i..];
                let n = word.len().min(MAGIC.len());
                return word[..n] == MAGIC[..n];
            }
        }
    }
}

/// Parses a model file's bytes: the header line, the directives ([`Directives::read`]),
/// then the checks across lines (gears, P5 time, shapes, evaluation cost).
pub fn parse(bytes: &[u8]) -> Result<Model, ParseError> {
    let not_ours = || ParseError {
        code: code::PARSE_MODEL,
        message: NOT_ACLSIM.to_string(),
    };
    let text = std::str::from_utf8(bytes).map_err(|_| not_ours())?;
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.split('#').next().unwrap_or("").trim()))
        .filter(|(_, l)| !l.is_empty());
    match lines.next() {
        Some((_, first)) if first.split_whitespace().next() == Some("aclsim-model") => {
            check_version(first)?;
        }
        _ => return Err(not_ours()),
    }
    let d = Directives::read(lines)?;
    let missing = |what: &str| ParseError {
        code: code::MODEL_MISSING_ATTR,
        message: format!("the model has no `{what}` directive"),
    };
    let (in_line, input) = d.input.ok_or_else(|| missing("input"))?;
    let (out_line, output) = d.output.ok_or_else(|| missing("output"))?;
    let gears = match d.gears {
        Some((line, g)) => {
            check_gears_fit(line, &g, [(in_line, &input), (out_line, &output)])?;
            g
        }
        None => Vec::new(),
    };
    let max_batch = gears.last().copied().unwrap_or(1);
    check_time(d.time_us, d.time_line, max_batch)?;
    // At most 2^31: the first dim of the input (checked above).
    let max_batch = max_batch as usize;
    let shape = Shape::check(&input, &d.ops, &d.op_lines, max_batch)?;
    let out_item = output.elements() / max_batch;
    let n = shape.values;
    if n > out_item {
        return Err(syntax(
            out_line,
            format!("the ops produce {n} values per batch item, the output holds {out_item}"),
        ));
    }
    let peak_values = u64::try_from(shape.peak)
        .ok()
        .and_then(|p| p.checked_mul(max_batch as u64))
        .ok_or_else(|| too_many(out_line))?;
    let eval_ops = shape
        .item_ops
        .saturating_add(out_item as u64)
        .saturating_mul(max_batch as u64);
    if eval_ops > MAX_EVAL_OPS {
        return Err(ParseError {
            code: code::MODEL_SIZE_INVALID,
            message: format!(
                "an execution takes {eval_ops} value operations ({} ops over {} values per batch item, {max_batch} items), more than the simulator evaluates ({MAX_EVAL_OPS}: about 2176 s, the longest operator execution timeout, P5)",
                d.ops.len(),
                input.elements() / max_batch
            ),
        });
    }
    let weights: usize = d
        .ops
        .iter()
        .map(|op| match op {
            Op::Matmul { w, .. } => w.len(),
            _ => 0,
        })
        .sum();
    Ok(Model {
        input,
        output,
        gears,
        time_us: d.time_us,
        work: d.work.unwrap_or(4096),
        weight: d.weight.unwrap_or(weights.saturating_mul(4).max(4096)),
        ops: d.ops,
        peak_values,
        eval_ops,
    })
}

/// The header line `aclsim-model 1`: any other version is refused.
fn check_version(first: &str) -> Result<(), ParseError> {
    let mut words = first.split_whitespace().skip(1);
    let version = words.next();
    if version != Some("1") || words.next().is_some() {
        let mut shown_words: Vec<String> = first
            .split_whitespace()
            .skip(1)
            .take(4)
            .map(|w| shown(w).into_owned())
            .collect();
        if first.split_whitespace().nth(5).is_some() {
            shown_words.push("...".into());
        }
        return Err(ParseError {
            code: code::PARSE_MODEL,
            message: format!(
                "unsupported aclsim model version `{}` (this simulator reads aclsim-model 1)",
                shown_words.join(" ")
            ),
        });
    }
    Ok(())
}

/// The directives of a model file after its header, each with its line where a later
/// check needs it.
struct Directives {
    input: Option<(usize, Tensor)>,
    output: Option<(usize, Tensor)>,
    gears: Option<(usize, Vec<u64>)>,
    time_us: u64,
    time_line: usize,
    work: Option<usize>,
    weight: Option<usize>,
    ops: Vec<Op>,
    /// The line of each op, for the shape check.
    op_lines: Vec<usize>,
}

impl Directives {
    /// Reads the (line number, trimmed non-empty line) pairs after the header.
    fn read<'a>(lines: impl Iterator<Item = (usize, &'a str)>) -> Result<Self, ParseError> {
        let mut d = Directives {
            input: None,
            output: None,
            gears: None,
            time_us: 0,
            time_line: 0,
            work: None,
            weight: None,
            ops: Vec::new(),
            op_lines: Vec::new(),
        };
        for (line, l) in lines {
            let mut rest = l.split_whitespace();
            // A line left non-empty by the trim has a first word.
            let Some(directive) = rest.next() else {
                continue;
            };
            let once = |set: bool| {
                if set {
                    Err(syntax(line, format!("second `{directive}` directive")))
                } else {
                    Ok(())
                }
            };
            match directive {
                "input" => {
                    once(d.input.is_some())?;
                    d.input = Some((line, tensor(line, rest)?));
                }
                "output" => {
                    once(d.output.is_some())?;
                    d.output = Some((line, tensor(line, rest)?));
                }
                "batch" => {
                    once(d.gears.is_some())?;
                    d.gears = Some((line, gears(line, rest)?));
                }
                "time" => {
                    d.time_us = num(line, "time", rest.next())?;
                    d.time_line = line;
                }
                "work" => d.work = Some(num(line, "work size", rest.next())?),
                "weight" => d.weight = Some(num(line, "weight size", rest.next())?),
                "op" => {
                    d.ops.push(op(line, rest)?);
                    d.op_lines.push(line);
                }
                "aclsim-model" => return Err(syntax(line, "second `aclsim-model` directive")),
                other => {
                    return Err(syntax(
                        line,
                        format!("unknown directive `{}`", shown(other)),
                    ));
                }
            }
        }
        Ok(d)
    }
}

/// The gears of a `batch` directive: ascending integers >= 1, at most `MAX_GEARS`.
fn gears(line: usize, rest: Words<'_>) -> Result<Vec<u64>, ParseError> {
    let mut g: Vec<u64> = Vec::new();
    for w in rest {
        if g.len() == MAX_GEARS {
            return Err(syntax(
                line,
                format!("more than {MAX_GEARS} gears (ACL_MAX_BATCH_NUM, what aclmdlBatch holds)"),
            ));
        }
        g.push(num(line, "gear", Some(w))?);
    }
    if g.is_empty() || g[0] == 0 || g.windows(2).any(|p| p[0] >= p[1]) {
        return Err(syntax(line, "gears must be ascending integers >= 1"));
    }
    Ok(g)
}

/// The op of an `op` directive, which takes exactly its values.
fn op(line: usize, mut rest: Words<'_>) -> Result<Op, ParseError> {
    let op = match rest.next() {
        Some("scale") => Op::Scale(num(line, "scale factor", rest.next())?),
        Some("add") => Op::Add(num(line, "addend", rest.next())?),
        Some("relu") => Op::Relu,
        Some("matmul") => {
            let r: usize = num(line, "matmul R", rest.next())?;
            let c: usize = num(line, "matmul C", rest.next())?;
            if r == 0 || c == 0 || r.saturating_mul(c) > 1 << 24 {
                return Err(syntax(line, "matmul: R and C must be >= 1"));
            }
            let w = floats(line, "matmul weights", &mut rest, r * c)?;
            Op::Matmul {
                rows: r,
                cols: c,
                w,
            }
        }
        Some("bias") => {
            let c: usize = num(line, "bias C", rest.next())?;
            if c == 0 {
                return Err(syntax(line, "bias: C must be >= 1"));
            }
            Op::Bias(floats(line, "bias values", &mut rest, c)?)
        }
        Some("argmax") => {
            let c: usize = num(line, "argmax C", rest.next())?;
            if c == 0 {
                return Err(syntax(line, "argmax: C must be >= 1"));
            }
            Op::Argmax(c)
        }
        Some(other) => {
            return Err(syntax(line, format!("unknown op `{}`", shown(other))));
        }
        None => return Err(syntax(line, "missing op name")),
    };
    // Matmul and bias took exactly their values; the others take no more.
    if rest.next().is_some() {
        return Err(syntax(line, "too many values"));
    }
    Ok(op)
}

/// With gears (declared on line `line`), the first dim of the input and of the output is
/// the largest gear.
fn check_gears_fit(
    line: usize,
    g: &[u64],
    tensors: [(usize, &Tensor); 2],
) -> Result<(), ParseError> {
    let max = *g.last().unwrap_or(&1) as i64;
    for (l, t) in tensors {
        if t.dims[0] != max {
            return Err(syntax(
                l,
                format!(
                    "the first dim of `{}` ({}) must be the largest gear ({max}, line {line})",
                    t.name, t.dims[0]
                ),
            ));
        }
    }
    Ok(())
}

/// P5: an execution longer than any operator execution timeout could never complete.
fn check_time(time_us: u64, time_line: usize, max_batch: u64) -> Result<(), ParseError> {
    if time_us
        .checked_mul(max_batch)
        .is_none_or(|t| t > MAX_OP_EXEC_TIMEOUT_US)
    {
        return Err(syntax(
            time_line,
            format!(
                "time {time_us} us x batch {max_batch} exceeds the longest operator execution timeout ({} s, P5): the execution could never complete",
                MAX_OP_EXEC_TIMEOUT_US / 1_000_000
            ),
        ));
    }
    Ok(())
}

fn too_many(line: usize) -> ParseError {
    syntax(line, "the ops produce too many values")
}

/// The shape of the evaluation, per batch item.
struct Shape {
    /// Values the last op produces.
    values: usize,
    /// The most values any step holds.
    peak: usize,
    /// The evaluation's value operations (saturating: compared with `MAX_EVAL_OPS`).
    item_ops: u64,
}

impl Shape {
    /// Shape check, per batch item (so that every gear works); checked arithmetic.
    fn check(
        input: &Tensor,
        ops: &[Op],
        op_lines: &[usize],
        max_batch: usize,
    ) -> Result<Shape, ParseError> {
        let mut n = input.elements() / max_batch;
        let mut peak = n;
        // The evaluation's value operations per batch item (saturating: compared below).
        let mut item_ops = n as u64;
        for (op, line) in ops.iter().zip(op_lines) {
            item_ops = item_ops.saturating_add(match op {
                Op::Matmul { cols, .. } => (n as u64).saturating_mul(*cols as u64),
                _ => n as u64,
            });
            n = match op {
                Op::Matmul { rows, cols, .. } => {
                    if !n.is_multiple_of(*rows) {
                        return Err(syntax(
                            *line,
                            format!("matmul: {n} values per batch item are not rows of {rows}"),
                        ));
                    }
                    (n / rows)
                        .checked_mul(*cols)
                        .ok_or_else(|| too_many(*line))?
                }
                Op::Bias(b) if !n.is_multiple_of(b.len()) => {
                    return Err(syntax(
                        *line,
                        format!(
                            "bias: {n} values per batch item are not rows of {}",
                            b.len()
                        ),
                    ));
                }
                Op::Argmax(c) => {
                    if !n.is_multiple_of(*c) {
                        return Err(syntax(
                            *line,
                            format!("argmax: {n} values per batch item are not rows of {c}"),
                        ));
                    }
                    n / c
                }
                _ => n,
            };
            peak = peak.max(n);
        }
        Ok(Shape {
            values: n,
            peak,
            item_ops,
        })
    }
}

impl Model {
    /// The device memory the model needs to run: its I/O (the dynamic-batch input
    /// included), work and weight memory, and the evaluator's intermediate values (f32).
    /// `None` on overflow.
    pub fn device_bytes(&self) -> Option<u64> {
        let io = [
            self.input.bytes(),
            self.output.bytes(),
            self.work,
            self.weight,
        ]
        .into_iter()
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

    /// The output dims for `batch` (MD12; the largest gear for a static model or `None`).
    pub fn output_dims(&self, batch: Option<u64>) -> Vec<i64> {
        let mut d = self.output.dims.clone();
        if let Some(b) = batch.filter(|_| self.dynamic()) {
            d[0] = b as i64;
        }
        d
    }

    /// Runs the model on `input` (the input buffer's bytes, at least the described size)
    /// for `batch` items, writing `output` (at least the described size): converted to f32,
    /// ops applied, converted to the output type (rounded, saturated), the rest zeroed.
    pub fn eval(&self, input: &[u8], batch: u64, output: &mut [u8]) {
        let max = self.max_batch() as usize;
        let batch = (batch as usize).clamp(1, max);
        let n_in = self.input.elements() / max * batch;
        let mut x: Vec<f32> = match self.input.dtype {
            DType::F32 => input
                .chunks_exact(4)
                .take(n_in)
                .map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
            DType::I32 => input
                .chunks_exact(4)
                .take(n_in)
                .map(|c| i32::from_ne_bytes([c[0], c[1], c[2], c[3]]) as f32)
                .collect(),
            DType::U8 => input.iter().take(n_in).map(|b| *b as f32).collect(),
            DType::F16 => input
                .chunks_exact(2)
                .take(n_in)
                .map(|c| f16_to_f32(u16::from_ne_bytes([c[0], c[1]])))
                .collect(),
            DType::BF16 => input
                .chunks_exact(2)
                .take(n_in)
                .map(|c| bf16_to_f32(u16::from_ne_bytes([c[0], c[1]])))
                .collect(),
        };
        for op in &self.ops {
            x = apply(op, x);
        }
        let size = self.output.dtype.size();
        let n_out = (output.len() / size).min(self.output.elements());
        output[..n_out * size].fill(0);
        for (i, v) in x.iter().take(n_out).enumerate() {
            let at = &mut output[i * size..(i + 1) * size];
            match self.output.dtype {
                DType::F32 => at.copy_from_slice(&v.to_ne_bytes()),
                // `as` saturates (NaN gives 0).
                DType::I32 => at.copy_from_slice(&(v.round() as i32).to_ne_bytes()),
                DType::U8 => at[0] = v.round() as u8,
                DType::F16 => at.copy_from_slice(&f32_to_f16(*v).to_ne_bytes()),
                DType::BF16 => at.copy_from_slice(&f32_to_bf16(*v).to_ne_bytes()),
            }
        }
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

#[cfg(test)]
mod tests {
    use super::{
        MAX_GEARS, MAX_OP_EXEC_TIMEOUT_US, NOT_ACLSIM, bf16_to_f32, code, f16_to_f32, f32_to_bf16,
        f32_to_f16, may_be_ours, parse,
    };

    fn f32s(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|f| f.to_ne_bytes()).collect()
    }
    fn as_f32(b: &[u8]) -> Vec<f32> {
        b.chunks_exact(4)
            .map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    }
    fn as_i32(b: &[u8]) -> Vec<i32> {
        b.chunks_exact(4)
            .map(|c| i32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    }
    fn run(text: &str, input: &[u8], batch: u64) -> Vec<u8> {
        let m = parse(text.as_bytes()).expect("parses");
        let mut out = vec![0xAA; m.output.bytes()];
        m.eval(input, batch, &mut out);
        out
    }

    #[test]
    fn matmul_bias_and_argmax() {
        let text = "aclsim-model 1\n# comment\n\ninput x f32 2x3\noutput y f32 2x2\n\
                    op matmul 3 2 1 0 0 1 1 1 # weights\nop bias 2 10 20\n";
        let out = as_f32(&run(text, &f32s(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), 1));
        assert_eq!(
            out,
            vec![
                1.0 + 3.0 + 10.0,
                2.0 + 3.0 + 20.0,
                4.0 + 6.0 + 10.0,
                5.0 + 6.0 + 20.0
            ]
        );
        let text = "aclsim-model 1\ninput x f32 2x3\noutput y i32 2\nop argmax 3\n";
        let out = as_i32(&run(text, &f32s(&[1.0, 7.0, 7.0, 9.0, 2.0, 3.0]), 1));
        assert_eq!(out, vec![1, 0], "first index on ties");
    }

    #[test]
    fn relu_scale_add_and_copy() {
        let text = "aclsim-model 1\ninput x f32 4\noutput y f32 4\nop relu\nop scale 2\nop add 1\n";
        let out = as_f32(&run(text, &f32s(&[-1.0, 0.5, 2.0, -3.0]), 1));
        assert_eq!(out, vec![1.0, 2.0, 5.0, 1.0]);
        let text = "aclsim-model 1\ninput x u8 3\noutput y f32 4\n";
        let out = as_f32(&run(text, &[1, 2, 255], 1));
        assert_eq!(out, vec![1.0, 2.0, 255.0, 0.0], "a copy, the rest zeroed");
    }

    #[test]
    fn float16_and_bfloat16_tensors() {
        let text = "aclsim-model 1\ninput x f16 3\noutput y bf16 3\nop scale 2\n";
        let m = parse(text.as_bytes()).expect("parses");
        assert_eq!((m.input.bytes(), m.output.bytes()), (6, 6));
        assert_eq!((m.input.dtype.acl(), m.output.dtype.acl()), (1, 27));
        let inp: Vec<u8> = [1.5f32, -0.25, 1000.0]
            .iter()
            .flat_map(|v| f32_to_f16(*v).to_ne_bytes())
            .collect();
        let out: Vec<f32> = run(text, &inp, 1)
            .chunks_exact(2)
            .map(|c| bf16_to_f32(u16::from_ne_bytes([c[0], c[1]])))
            .collect();
        assert_eq!(out, vec![3.0, -0.5, 2000.0]);
        // The conversions: exact both ways for every finite float16; ties to even.
        for bits in 0..=u16::MAX {
            let v = f16_to_f32(bits);
            if !v.is_nan() {
                assert_eq!(f32_to_f16(v), bits, "{bits:#06x}");
            }
        }
        assert_eq!(f32_to_f16(65520.0), 0x7c00);
        assert_eq!(f32_to_f16(1.0 + 1.0 / 2048.0), 0x3c00);
        assert_eq!(f32_to_bf16(1.0 + 1.0 / 256.0), 0x3f80);
    }

    #[test]
    fn saturation_and_rounding() {
        let text = "aclsim-model 1\ninput x f32 4\noutput y u8 4\n";
        assert_eq!(
            run(text, &f32s(&[-5.0, 2.6, 300.0, f32::NAN]), 1),
            vec![0, 3, 255, 0]
        );
        let text = "aclsim-model 1\ninput x i32 2\noutput y i32 2\nop scale 1e10\n";
        let inp: Vec<u8> = [3i32, -3].iter().flat_map(|v| v.to_ne_bytes()).collect();
        assert_eq!(as_i32(&run(text, &inp, 1)), vec![i32::MAX, i32::MIN]);
    }

    #[test]
    fn gears_use_the_first_items_and_zero_the_rest() {
        let text = "aclsim-model 1\ninput x f32 4x2\noutput y f32 4x1\nbatch 1 2 4\n\
                    op matmul 2 1 1 1\n";
        let m = parse(text.as_bytes()).expect("parses");
        assert!(m.dynamic());
        assert_eq!(m.max_batch(), 4);
        assert_eq!(m.output_dims(Some(2)), vec![2, 1]);
        assert_eq!(m.output_dims(None), vec![4, 1]);
        let inp = f32s(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
        assert_eq!(as_f32(&run(text, &inp, 2)), vec![3.0, 7.0, 0.0, 0.0]);
        assert_eq!(as_f32(&run(text, &inp, 4)), vec![3.0, 7.0, 11.0, 15.0]);
    }

    #[test]
    fn sizes() {
        let m = parse(b"aclsim-model 1\ninput x f32 1x8\noutput y f32 1x4\nop matmul 8 4 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n").expect("parses");
        assert_eq!((m.work, m.weight), (4096, 4096));
        assert_eq!((m.input.bytes(), m.output.bytes()), (32, 16));
        let m = parse(
            b"aclsim-model 1\ninput x f32 1\noutput y f32 1\nwork 100\nweight 8192\ntime 5\n",
        )
        .expect("parses");
        assert_eq!((m.work, m.weight, m.time_us), (100, 8192, 5));
    }

    #[test]
    fn bounds_time_and_sizes() {
        // P5: time x largest gear beyond the longest operator timeout.
        let e =
            parse(b"aclsim-model 1\ninput x f32 1\noutput y f32 1\ntime 18446744073709551615\n")
                .unwrap_err();
        assert_eq!(e.code, code::PARSE_MODEL);
        assert!(e.message.starts_with("line 4:"), "{}", e.message);
        let limit = MAX_OP_EXEC_TIMEOUT_US;
        let ok = format!("aclsim-model 1\ninput x f32 1\noutput y f32 1\ntime {limit}\n");
        assert!(parse(ok.as_bytes()).is_ok());
        let gears = format!(
            "aclsim-model 1\ntime {}\ninput x f32 2\noutput y f32 2\nbatch 1 2\n",
            limit / 2 + 1
        );
        let e = parse(gears.as_bytes()).unwrap_err();
        assert!(e.message.starts_with("line 2:"), "{}", e.message);
        // 2^31 elements parse, but need 8 GiB for the input alone.
        let m = parse(
            b"aclsim-model 1\ninput x f32 32768x65536\noutput y i32 1\nop argmax 2147483648\n",
        )
        .expect("parses");
        assert_eq!(m.peak_values, 1 << 31);
        let need = m.device_bytes().expect("no overflow");
        assert_eq!(need, (8 << 30) + 4 + 4096 + 4096 + (8 << 30));
        assert_eq!(m.check_fits(need), Ok(()));
        assert_eq!(
            m.check_fits(need - 1).unwrap_err().code,
            code::MODEL_SIZE_INVALID
        );
        // Declared work and weight sizes are checked without overflow.
        let m = parse(
            b"aclsim-model 1\ninput x f32 1\noutput y f32 1\nwork 18446744073709551615\nweight 18446744073709551615\n",
        )
        .expect("parses");
        assert_eq!(m.device_bytes(), None);
        assert_eq!(
            m.check_fits(u64::MAX).unwrap_err().code,
            code::MODEL_SIZE_INVALID
        );
        // Intermediate values count: 4 values become 4 * 2^20 per item.
        let text = format!(
            "aclsim-model 1\ninput x f32 4\noutput y f32 4\nop matmul 1 {} {}\nop argmax {}\n",
            1 << 20,
            "0 ".repeat(1 << 20),
            1 << 20
        );
        let m = parse(text.as_bytes()).expect("parses");
        assert_eq!(m.peak_values, 4 << 20);
        // More than 2^31 elements, or dims overflowing: a syntax error.
        let e = parse(b"aclsim-model 1\ninput x f32 65536x65536\noutput y f32 1\n").unwrap_err();
        assert_eq!(
            (e.code, e.message.starts_with("line 2:")),
            (code::PARSE_MODEL, true)
        );
        let e = parse(b"aclsim-model 1\ninput x f32 9223372036854775807x4\noutput y f32 1\n")
            .unwrap_err();
        assert_eq!(e.code, code::PARSE_MODEL);
    }

    #[test]
    fn at_most_128_gears() {
        let gears = |n: u64| {
            let list: Vec<String> = (1..=n).map(|g| g.to_string()).collect();
            format!(
                "aclsim-model 1\ninput x f32 {n}\noutput y f32 {n}\nbatch {}\n",
                list.join(" ")
            )
        };
        let m = parse(gears(MAX_GEARS as u64).as_bytes()).expect("128 gears parse");
        assert_eq!(m.gears.len(), MAX_GEARS);
        let e = parse(gears(MAX_GEARS as u64 + 1).as_bytes()).unwrap_err();
        assert_eq!(e.code, code::PARSE_MODEL);
        assert!(
            e.message.starts_with("line 4: more than 128 gears"),
            "{}",
            e.message
        );
    }

    #[test]
    fn the_evaluation_is_bounded() {
        // 2^20 relu over 2^20 values: 2^40 + 2^21 value operations.
        let many = format!(
            "aclsim-model 1\ninput x f32 1048576\noutput y f32 1048576\n{}",
            "op relu\n".repeat(1 << 20)
        );
        let e = parse(many.as_bytes()).unwrap_err();
        assert_eq!(e.code, code::MODEL_SIZE_INVALID, "{}", e.message);
        let fewer = format!(
            "aclsim-model 1\ninput x f32 1048576\noutput y f32 1048576\n{}",
            "op relu\n".repeat((1 << 20) - 2)
        );
        let m = parse(fewer.as_bytes()).expect("parses");
        assert_eq!(m.eval_ops, (1 << 40) - (1 << 21) + (1 << 21));
        // A matmul counts each value times its columns, and every item of the largest gear.
        let m = parse(
            b"aclsim-model 1\ninput x f32 4x2\noutput y f32 4x3\nbatch 2 4\nop matmul 2 3 1 1 1 1 1 1\n",
        )
        .expect("parses");
        assert_eq!(m.eval_ops, 4 * (2 + 2 * 3 + 3));
    }

    #[test]
    fn long_lines_are_not_split_into_vectors() {
        // Extra values are counted, not stored: the message says how many.
        let text = format!(
            "aclsim-model 1\ninput x f32 1\noutput y f32 1\nop matmul 1 1{}",
            " 0".repeat(1000)
        );
        let e = parse(text.as_bytes()).unwrap_err();
        assert_eq!(
            e.message,
            "line 4: matmul weights: expected 1 values, got 1000"
        );
        // Long words are quoted shortened.
        let text = format!("aclsim-model 1\n{}\n", "z".repeat(1000));
        let e = parse(text.as_bytes()).unwrap_err();
        assert_eq!(
            e.message,
            format!("line 2: unknown directive `{}...`", "z".repeat(40))
        );
        let e = parse(b"aclsim-model 1 2 3 4 5 6\n").unwrap_err();
        assert!(e.message.contains("`1 2 3 4 ...`"), "{}", e.message);
    }

    #[test]
    fn first_bytes_that_cannot_start_a_model() {
        for head in [
            &b"aclsim-model 1\n"[..],
            b"acl",
            b"",
            b"   \n\t# comment\n\x0b aclsim-model 1",
            b"# a comment longer than the head",
            "\u{feff}aclsim-model 1".as_bytes(),
            "\u{3000}aclsim-model 1".as_bytes(),
        ] {
            assert!(may_be_ours(head), "{head:?}");
        }
        for head in [
            &[0u8; 4096][..],
            b"\x7fELF",
            b"# comment\ninput x f32 1\n",
            b"aclsim-mode!",
            b"IMOD",
        ] {
            assert!(!may_be_ours(head), "{head:?}");
        }
        // What `may_be_ours` refuses, `parse` refuses the same way.
        for text in [&b"# c\ninput x f32 1\n"[..], b"\0\0\0\0"] {
            assert_eq!(parse(text).unwrap_err().message, NOT_ACLSIM);
        }
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse(b"\x00\x01ATC om").unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (code::PARSE_MODEL, NOT_ACLSIM)
        );
        let e = parse(b"input x f32 1\n").unwrap_err();
        assert_eq!(e.message, NOT_ACLSIM);
        let e = parse(b"aclsim-model 2\n").unwrap_err();
        assert_eq!(e.code, code::PARSE_MODEL);
        let e = parse(b"aclsim-model 1\ninput x f32 1\n").unwrap_err();
        assert_eq!(e.code, code::MODEL_MISSING_ATTR);
        let e = parse(b"aclsim-model 1\noutput y f32 1\n").unwrap_err();
        assert_eq!(e.code, code::MODEL_MISSING_ATTR);
        for (text, line) in [
            ("aclsim-model 1\ninput x f64 1\noutput y f32 1\n", 2),
            ("aclsim-model 1\ninput x f32 0\noutput y f32 1\n", 2),
            ("aclsim-model 1\ninput x f32 1\noutput y f32 1\nop foo\n", 4),
            (
                "aclsim-model 1\ninput x f32 3\noutput y f32 1\n\nop matmul 2 1 1 1\n",
                5,
            ),
            (
                "aclsim-model 1\ninput x f32 2\noutput y f32 1\nop matmul 2 1 1\n",
                4,
            ),
            (
                "aclsim-model 1\ninput x f32 2x2\noutput y f32 2\nbatch 1 3\n",
                2,
            ),
            (
                "aclsim-model 1\ninput x f32 2\noutput y f32 2\nbatch 2 1\n",
                4,
            ),
            ("aclsim-model 1\ninput x f32 4\noutput y f32 2\n", 3),
            ("aclsim-model 1\ninput x f32 4\ninput z f32 4\n", 3),
            ("aclsim-model 1\ninput x f32 4\noutput y f32 4\nwhat 1\n", 4),
        ] {
            let e = parse(text.as_bytes()).unwrap_err();
            assert_eq!(e.code, code::PARSE_MODEL, "{text}");
            assert!(
                e.message.starts_with(&format!("line {line}:")),
                "{text}: {}",
                e.message
            );
        }
    }
}
