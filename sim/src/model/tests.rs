//! Unit tests of the model format: the parser's messages, the evaluator, the element
//! conversions.
//!
//! Layer: test code of the plain-data module `model`; imports `model` and `state`.

use super::{
    MAX_GEARS, NOT_ACLSIM, bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16, may_be_ours, parse,
};
use crate::state::code;
use crate::state::extra::MAX_OP_EXEC_TIMEOUT_US;

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
    let mut out = vec![vec![0xAA; m.outputs[0].bytes()]];
    m.eval(&[input.to_vec()], batch, &mut out);
    out.remove(0)
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
    assert_eq!((m.inputs[0].bytes(), m.outputs[0].bytes()), (6, 6));
    assert_eq!((m.inputs[0].dtype.acl(), m.outputs[0].dtype.acl()), (1, 27));
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
    assert_eq!(m.output_dims(0, Some(2)), Some(vec![2, 1]));
    assert_eq!(m.output_dims(0, None), Some(vec![4, 1]));
    let inp = f32s(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
    assert_eq!(as_f32(&run(text, &inp, 2)), vec![3.0, 7.0, 0.0, 0.0]);
    assert_eq!(as_f32(&run(text, &inp, 4)), vec![3.0, 7.0, 11.0, 15.0]);
}

#[test]
fn sizes() {
    let m = parse(b"aclsim-model 1\ninput x f32 1x8\noutput y f32 1x4\nop matmul 8 4 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n").expect("parses");
    assert_eq!((m.work, m.weight), (4096, 4096));
    assert_eq!((m.inputs[0].bytes(), m.outputs[0].bytes()), (32, 16));
    let m =
        parse(b"aclsim-model 1\ninput x f32 1\noutput y f32 1\nwork 100\nweight 8192\ntime 5\n")
            .expect("parses");
    assert_eq!((m.work, m.weight, m.time_us), (100, 8192, 5));
}

#[test]
fn bounds_time_and_sizes() {
    // P5: time x largest gear beyond the longest operator timeout.
    let e = parse(b"aclsim-model 1\ninput x f32 1\noutput y f32 1\ntime 18446744073709551615\n")
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
    let m =
        parse(b"aclsim-model 1\ninput x f32 32768x65536\noutput y i32 1\nop argmax 2147483648\n")
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
    let e =
        parse(b"aclsim-model 1\ninput x f32 9223372036854775807x4\noutput y f32 1\n").unwrap_err();
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
        ("aclsim-model 1\ninput x f32 4\ninput x f32 4\n", 3),
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

#[test]
fn several_inputs_are_concatenated_and_the_values_fill_the_outputs_in_order() {
    let text = "aclsim-model 1\ninput a f32 2\ninput b i32 1\noutput x f32 1\n\
                output y i32 2\nop scale 2\n";
    let m = parse(text.as_bytes()).expect("parses");
    assert_eq!((m.inputs.len(), m.outputs.len()), (2, 2));
    let mut out = vec![vec![0xAA; 4], vec![0xAA; 8]];
    m.eval(
        &[f32s(&[1.0, 2.5]), 7i32.to_ne_bytes().to_vec()],
        1,
        &mut out,
    );
    assert_eq!(as_f32(&out[0]), vec![2.0]);
    assert_eq!(as_i32(&out[1]), vec![5, 14]);
    // Names are unique among inputs (and among outputs); at most 16 of each.
    let twice = "aclsim-model 1\ninput a f32 2\ninput a f32 2\noutput y f32 4\n";
    let e = parse(twice.as_bytes()).expect_err("a second input named a");
    assert!(
        e.message
            .contains("line 3: a second input named `a` (line 2)"),
        "{}",
        e.message
    );
    let mut many = String::from("aclsim-model 1\noutput y f32 17\n");
    for i in 0..17 {
        many.push_str(&format!("input i{i} f32 1\n"));
    }
    let e = parse(many.as_bytes()).expect_err("17 inputs");
    assert!(e.message.contains("more than 16 inputs"), "{}", e.message);
    // The ops see every input's values; the outputs together must hold the result.
    let small = "aclsim-model 1\ninput a f32 2\ninput b f32 2\noutput y f32 3\n";
    let e = parse(small.as_bytes()).expect_err("4 values, 3 places");
    assert!(e.message.contains("the outputs hold 3"), "{}", e.message);
}
