//! The parser of the model format (`aclsim-model 1`): the header, the directives, and the
//! checks across lines (gears, the P5 time limit, shapes, the evaluation's cost).
//!
//! Layer: plain data; imports its parent (`model`), `state::code` and the P5 limit.

use super::{
    DType, DYNAMIC_INPUT, MAX_DIMS, MAX_EVAL_OPS, MAX_GEARS, MAX_TENSORS, Model, NOT_ACLSIM, Op,
    Tensor,
};
use crate::state::code;
use crate::state::extra::MAX_OP_EXEC_TIMEOUT_US;

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

/// At most this many characters of a word are quoted in an error message.
const SHOWN: usize = 40;

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

/// Parses a model file's bytes: the header line, the directives (`Directives::read`),
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
    if d.inputs.is_empty() {
        return Err(missing("input"));
    }
    let Some(&(out_line, _)) = d.outputs.last() else {
        return Err(missing("output"));
    };
    let gears = match d.gears {
        Some((line, g)) => {
            check_gears_fit(line, &g, d.inputs.iter().chain(&d.outputs))?;
            g
        }
        None => Vec::new(),
    };
    let max_batch = gears.last().copied().unwrap_or(1);
    check_time(d.time_us, d.time_line, max_batch)?;
    // At most 2^31: the first dim of each tensor (checked above), and at most
    // `MAX_TENSORS` tensors of at most 2^31 elements each: no overflow below.
    let max_batch = max_batch as usize;
    let per_item = |tensors: &[(usize, Tensor)]| -> usize {
        tensors.iter().map(|(_, t)| t.elements() / max_batch).sum()
    };
    let in_item = per_item(&d.inputs);
    let shape = Shape::check(in_item, &d.ops, &d.op_lines)?;
    let out_item = per_item(&d.outputs);
    let n = shape.values;
    if n > out_item {
        return Err(syntax(
            out_line,
            format!("the ops produce {n} values per batch item, the outputs hold {out_item}"),
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
                in_item
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
        inputs: d.inputs.into_iter().map(|(_, t)| t).collect(),
        outputs: d.outputs.into_iter().map(|(_, t)| t).collect(),
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
    /// The data inputs and the outputs, in order, with their lines.
    inputs: Vec<(usize, Tensor)>,
    outputs: Vec<(usize, Tensor)>,
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
            inputs: Vec::new(),
            outputs: Vec::new(),
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
                    let t = tensor(line, rest)?;
                    add_tensor(line, "input", &mut d.inputs, t)?;
                }
                "output" => {
                    let t = tensor(line, rest)?;
                    add_tensor(line, "output", &mut d.outputs, t)?;
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

/// Appends tensor `t` of line `line` to the inputs or outputs: at most [`MAX_TENSORS`] of
/// each, names unique among them.
fn add_tensor(
    line: usize,
    what: &str,
    tensors: &mut Vec<(usize, Tensor)>,
    t: Tensor,
) -> Result<(), ParseError> {
    if tensors.len() == MAX_TENSORS {
        return Err(syntax(line, format!("more than {MAX_TENSORS} {what}s")));
    }
    if let Some((first, _)) = tensors.iter().find(|(_, o)| o.name == t.name) {
        return Err(syntax(
            line,
            format!("a second {what} named `{}` (line {first})", shown(&t.name)),
        ));
    }
    tensors.push((line, t));
    Ok(())
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

/// With gears (declared on line `line`), the first dim of every input and output is the
/// largest gear.
fn check_gears_fit<'a>(
    line: usize,
    g: &[u64],
    tensors: impl Iterator<Item = &'a (usize, Tensor)>,
) -> Result<(), ParseError> {
    let max = *g.last().unwrap_or(&1) as i64;
    for (l, t) in tensors {
        let l = *l;
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
    fn check(in_item: usize, ops: &[Op], op_lines: &[usize]) -> Result<Shape, ParseError> {
        let mut n = in_item;
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
