//! Bad input: every function that takes a path, a size or bytes
//! from the user answers bad input with a typed error (never a signal, a hang or an unbounded
//! allocation), and the simulator never blocks other threads on a slow file.
//!
//! One test per attack. Each asserts the correct behaviour, so it fails while the library or
//! the simulator is wrong. Attacks that could crash, hang or exhaust memory run in a child
//! process with a deadline (`tests/support/child.rs`): a signal or a hang fails that test only.
//! This module: `contents_*` model bytes.

use crate::support;

use std::ffi::OsStr;
use std::time::Duration;

use ascend_typestate::simulator::{SimDtype, SimModel};
use ascend_typestate::{AclError, Error, ModelSource};
use support::DropErrors;
use support::sim::Session;

use super::bad_inputs_common::{
    POLICY, PROBE_LIMIT, ends_clean, is_child, is_code, longest_probe_during, peak_rss, quickly,
    run_child, show,
};

/// A 60 MiB model on a 64 MiB device (`ACLSIM_DEVICE_MEMORY`), one line of 30 million
/// two-byte words: under the size bound, but the parser splits the line into a
/// `Vec<&str>` (16 bytes per word) before looking at it. The host memory a load takes must
/// stay within a small multiple of the device's memory, the bound the simulator documents.
#[test]
fn contents_a_long_line_is_parsed_within_the_documented_memory_bound() {
    if !is_child() {
        run_child(
            "contents_a_long_line_is_parsed_within_the_documented_memory_bound",
            &[("ACLSIM_DEVICE_MEMORY", OsStr::new("67108864"))],
            Duration::from_secs(120),
        );
        return;
    }
    let dir = support::scratch_dir("bad_input_long_line");
    let path = dir.join("long.om");
    {
        let mut text = String::from("aclsim-model 1\ninput x f32 1\noutput y f32 1\nop matmul 1 1");
        text.push_str(&" 0".repeat(30 << 20));
        std::fs::write(&path, text).unwrap();
    }
    let limit: u64 = 64 << 20;
    let session = Session::start();
    let reports = DropErrors::capture();
    let baseline = session.sim.live_objects();
    let (result, grew);
    {
        let device = session.default_device(0);
        let before = peak_rss();
        result = quickly("a 60 MiB line", Duration::from_secs(30), || {
            device.load_model(&path).map(drop)
        });
        grew = peak_rss().saturating_sub(before);
    }
    ends_clean(session, baseline, &reports);
    println!("long line: {} peak RSS +{} MiB", show(&result), grew >> 20);
    assert!(is_code(&result, AclError::ParseModel), "{}", show(&result));
    assert!(
        grew < 3 * limit,
        "loading a {} MiB file on a {} MiB device took {} MiB of host memory",
        std::fs::metadata(&path).unwrap().len() >> 20,
        limit >> 20,
        grew >> 20
    );
}

/// Malformed model bytes, through a file (`load_model`, `load_dynamic_model`,
/// `model_memory_size`) and through `ModelSource::bytes`: truncated, empty, absurd or
/// negative dims, overflowing numbers, gears of 0 or `u64::MAX`, times beyond 2176 s,
/// unicode, NUL bytes, invalid UTF-8, a BOM, very long lines. Each a typed error within a
/// second (NaN weights and unicode names load), no panic, no finding, nothing left behind.
#[test]
fn contents_malformed_model_bytes_are_typed_errors() {
    if !is_child() {
        run_child(
            "contents_malformed_model_bytes_are_typed_errors",
            &[],
            Duration::from_secs(120),
        );
        return;
    }
    let io = "input x f32 4\noutput y f32 4\n";
    let head = "aclsim-model 1\n";
    let long_name = "é".repeat(100);
    let mut cases: Vec<(String, Vec<u8>)> = vec![
        ("empty".into(), Vec::new()),
        ("magic cut".into(), b"aclsim-mod".to_vec()),
        ("magic only".into(), b"aclsim-model 1".to_vec()),
        ("cut mid-line".into(), format!("{head}input x f32 4\noutput y f3").into_bytes()),
        ("negative dim".into(), format!("{head}input x f32 -1\noutput y f32 4\n").into_bytes()),
        ("zero dim".into(), format!("{head}input x f32 4x0\noutput y f32 4\n").into_bytes()),
        ("i64::MAX dims".into(), format!("{head}input x f32 9223372036854775807x9223372036854775807\noutput y f32 4\n").into_bytes()),
        ("dim beyond u64".into(), format!("{head}input x f32 99999999999999999999999\noutput y f32 4\n").into_bytes()),
        ("9 dims".into(), format!("{head}input x f32 1x1x1x1x1x1x1x1x1\noutput y f32 4\n").into_bytes()),
        ("2^31 elements of f32".into(), format!("{head}input x f32 2147483648\noutput y f32 1\n").into_bytes()),
        ("gear 0".into(), format!("{head}input x f32 4\noutput y f32 4\nbatch 0 4\n").into_bytes()),
        ("gear u64::MAX".into(), format!("{head}input x f32 4\noutput y f32 4\nbatch 1 18446744073709551615\n").into_bytes()),
        ("gear beyond u64".into(), format!("{head}input x f32 4\noutput y f32 4\nbatch 1 18446744073709551616\n").into_bytes()),
        ("gear -1".into(), format!("{head}input x f32 4\noutput y f32 4\nbatch -1\n").into_bytes()),
        ("no gears".into(), format!("{head}input x f32 4\noutput y f32 4\nbatch\n").into_bytes()),
        ("gear 2^31 x time 1 s".into(), format!("{head}input x u8 2147483648\noutput y u8 2147483648\nbatch 2147483648\ntime 1000000\n").into_bytes()),
        ("time -1".into(), format!("{head}{io}time -1\n").into_bytes()),
        ("time u64::MAX".into(), format!("{head}{io}time 18446744073709551615\n").into_bytes()),
        ("time 2176 s + 1 µs".into(), format!("{head}{io}time 2176000001\n").into_bytes()),
        ("time NaN".into(), format!("{head}{io}time NaN\n").into_bytes()),
        ("work u64::MAX".into(), format!("{head}{io}work 18446744073709551615\n").into_bytes()),
        ("weight beyond u64".into(), format!("{head}{io}weight 99999999999999999999999\n").into_bytes()),
        ("work -1".into(), format!("{head}{io}work -1\n").into_bytes()),
        ("matmul 2^32 x 2^32".into(), format!("{head}{io}op matmul 4294967296 4294967296\n").into_bytes()),
        ("matmul u64::MAX".into(), format!("{head}{io}op matmul 18446744073709551615 18446744073709551615 1\n").into_bytes()),
        ("bias u64::MAX".into(), format!("{head}{io}op bias 18446744073709551615 1\n").into_bytes()),
        ("argmax 0".into(), format!("{head}{io}op argmax 0\n").into_bytes()),
        ("argmax u64::MAX".into(), format!("{head}{io}op argmax 18446744073709551615\n").into_bytes()),
        ("NUL bytes".into(), format!("{head}input x\0 f32 4\noutput y f32 4\0\n").into_bytes()),
        ("invalid UTF-8".into(), [head.as_bytes(), b"input x f32 4\n\xff\xfe\n"].concat()),
        ("BOM".into(), format!("\u{feff}{head}{io}").into_bytes()),
        ("second magic".into(), format!("{head}{io}{head}").into_bytes()),
        ("10 MiB comment line".into(), format!("{head}# {}\n", "x".repeat(10 << 20)).into_bytes()),
        ("10 MiB unknown directive".into(), format!("{head}{io}zz {}\n", "y ".repeat(5 << 20)).into_bytes()),
        ("1 million blank lines".into(), format!("{head}{}", "\n".repeat(1 << 20)).into_bytes()),
    ];
    // These load (NaN weights compute NaN; names are opaque).
    let loads: Vec<(String, Vec<u8>)> = vec![
        (
            "NaN and inf weights".into(),
            format!("{head}{io}op scale NaN\nop add inf\nop matmul 1 1 -inf\n").into_bytes(),
        ),
        (
            "unicode names".into(),
            format!("{head}input 名前😀 f32 4\noutput {long_name} f32 4\n").into_bytes(),
        ),
        (
            "CRLF".into(),
            format!("{head}{io}").replace('\n', "\r\n").into_bytes(),
        ),
    ];
    let dir = support::scratch_dir("bad_input_contents");
    let session = Session::start();
    session.expect_findings();
    let reports = DropErrors::capture();
    let baseline = session.sim.live_objects();
    let mut failures = Vec::new();
    {
        let device = session.default_device(0);
        let live = session.sim.live_objects();
        let expected_codes = [
            AclError::ParseModel,
            AclError::ModelSizeInvalid,
            AclError::ModelMissingAttr,
        ];
        for (i, (what, bytes)) in cases.drain(..).chain(loads.clone()).enumerate() {
            let path = dir.join(format!("case{i}.om"));
            std::fs::write(&path, &bytes).unwrap();
            let should_load = loads.iter().any(|(w, _)| *w == what);
            let outcomes = [
                ("load_model(file)", device.load_model(&path).map(drop)),
                (
                    "load_dynamic_model(file)",
                    device.load_dynamic_model(&path).map(drop),
                ),
                (
                    "model_memory_size(file)",
                    device.model_memory_size(&path).map(drop),
                ),
                (
                    "load_model(bytes)",
                    device
                        .load_model(ModelSource::bytes(bytes.clone()))
                        .map(drop),
                ),
            ];
            for (entry, outcome) in &outcomes {
                let fine = match outcome {
                    Ok(()) => should_load,
                    Err(Error::WrongModelKind(_)) => should_load,
                    Err(Error::InvalidArgument(_)) => bytes.is_empty(),
                    // An empty file is refused before the runtime is called.
                    Err(Error::ModelFile {
                        why: ascend_typestate::ModelFileProblem::Empty,
                        ..
                    }) => bytes.is_empty(),
                    Err(e) => e.code().is_some_and(|c| expected_codes.contains(&c)) && !should_load,
                };
                if !fine {
                    failures.push(format!("{what}: {entry}: {}", show(outcome)));
                }
            }
            if session.sim.live_objects() != live {
                failures.push(format!(
                    "{what}: left {} objects",
                    session.sim.live_objects() - live
                ));
            }
        }
    }
    let findings = session.sim.findings();
    ends_clean(session, baseline, &reports);
    assert!(findings.is_empty(), "{findings:#?}");
    assert!(failures.is_empty(), "{failures:#?}");
}

/// `ModelSource::bytes` of 512 MiB (a comment line: no model, refused with 100016 after the
/// parse): the simulator copies the caller's bytes under its global lock before parsing them
/// without it. Other threads' calls must not wait for a copy whose length the user chose.
#[test]
fn contents_loading_large_model_bytes_does_not_block_other_threads() {
    if !is_child() {
        let out = run_child(
            "contents_loading_large_model_bytes_does_not_block_other_threads",
            &[],
            Duration::from_secs(120),
        );
        eprintln!(
            "{}",
            out.lines()
                .filter(|l| l.contains("bytes:"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        return;
    }
    let mut text = String::from("aclsim-model 1\n# ");
    text.push_str(&"x".repeat(512 << 20));
    let bytes = text.into_bytes();
    let session = Session::start();
    let reports = DropErrors::capture();
    let baseline = session.sim.live_objects();
    let (result, took, longest);
    {
        let device = session.default_device(0);
        (result, took, longest) = longest_probe_during(
            || {
                session.acl().device_count().unwrap();
            },
            || device.load_model(ModelSource::bytes(bytes)).map(drop),
        );
    }
    ends_clean(session, baseline, &reports);
    println!(
        "bytes: load of 512 MiB = {} in {took:?}; longest other call {longest:?}",
        show(&result)
    );
    assert!(
        is_code(&result, AclError::ModelMissingAttr),
        "{}",
        show(&result)
    );
    assert!(
        longest < PROBE_LIMIT,
        "another thread's call waited {longest:?} while 512 MiB of model bytes were loaded"
    );
}

/// More gears than `aclmdlBatch` holds (`ACL_MAX_BATCH_NUM`, 128; ATC allows 100): the model
/// is refused at load, or its gears are listed whole; never silently cut so that its largest
/// gear (the one its sizes are for, MD10) is "not a gear". A refusal is the runtime's (the
/// simulator's 100013 at load) or the crate's refusal of a `batchCount` beyond the array
/// (`aclmdlGetDynamicBatch` failing): an error of a truncated list (`WrongModelKind`,
/// `NotAGear`, ...) is not accepted.
#[test]
fn contents_more_gears_than_acl_max_batch_num() {
    let gears: Vec<u64> = (1..=200).collect();
    let text = SimModel::new(SimDtype::F32, &[200, 1], SimDtype::F32, &[200, 1])
        .batch_gears(&gears)
        .to_text();
    let session = Session::start();
    let reports = DropErrors::capture();
    let baseline = session.sim.live_objects();
    let outcome;
    {
        let device = session.default_device(0);
        outcome = match device.load_dynamic_model(ModelSource::bytes(text.into_bytes())) {
            Err(e) => Err(e),
            Ok(mut model) => {
                let listed = model.gears().to_vec();
                let mut io = model.create_io(POLICY).unwrap();
                let largest = model.execute_batch(&mut io, 200);
                drop(io);
                model.unload().unwrap();
                Ok((listed, largest))
            }
        };
    }
    ends_clean(session, baseline, &reports);
    match outcome {
        Err(e) => {
            let refused = match &e {
                Error::Runtime {
                    call: "aclmdlLoadFromMem",
                    code: AclError::ParseModel,
                    message,
                } => message
                    .as_ref()
                    .is_some_and(|m| m.as_str().contains("more than 128 gears")),
                Error::Runtime {
                    call: "aclmdlGetDynamicBatch",
                    ..
                } => true,
                _ => false,
            };
            assert!(
                refused,
                "a model with 200 gears: {e:?}, not a refusal of its gear count"
            );
        }
        Ok((listed, largest)) => {
            assert_eq!(
                listed,
                gears,
                "a model with 200 gears loaded with {} listed (last {:?})",
                listed.len(),
                listed.last()
            );
            assert!(
                largest.is_ok(),
                "execute_batch(200), its largest gear: {}",
                show(&largest)
            );
        }
    }
}
