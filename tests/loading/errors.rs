//! The error model (`src/typed/error.rs`).
//!
//! The list of codes is not repeated here: it is read from `docs/protocol.md` ("Error
//! codes"), the repository's copy of the protocol, and from `include/ascendcl.h`, and both
//! must agree with `AclError` exactly, in both directions.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use ascend_typestate::TriedPath;
use ascend_typestate::{AclError, Error, LoadError};

const PROTOCOL: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/protocol.md"));
const HEADER: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/include/ascendcl.h"));

/// The body of the `## Error codes` section of a protocol document.
fn error_codes_section(doc: &str) -> &str {
    let start = doc
        .find("\n## Error codes")
        .expect("protocol.md has an `## Error codes` section");
    let body = &doc[start + 1..];
    let body = &body[body.find('\n').map_or(body.len(), |i| i + 1)..];
    let end = body.find("\n## ").unwrap_or(body.len());
    &body[..end]
}

/// Every `` `NAME` VALUE `` pair of the section, by full C name.
///
/// A backticked pattern ending in `_*` (such as `` `ACL_ERROR_RT_*` ``) sets the prefix of
/// the short names that follow it (`` `PARAM_INVALID` 107000 `` is
/// `ACL_ERROR_RT_PARAM_INVALID`); a name starting with `ACL_` is already complete.
fn parse_error_codes(section: &str) -> BTreeMap<String, i32> {
    let mut codes = BTreeMap::new();
    let mut prefix = String::new();
    let mut rest = section;
    while let Some(open) = rest.find('`') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('`') else {
            break;
        };
        let name = &after[..close];
        rest = &after[close + 1..];
        if let Some(p) = name.strip_suffix('*') {
            prefix = p.to_owned();
            continue;
        }
        let digits: String = rest
            .trim_start_matches([' ', '\t'])
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if digits.is_empty() {
            continue;
        }
        let value: i32 = digits.parse().expect("an error code fits in an i32");
        let full = if name.starts_with("ACL_") {
            name.to_owned()
        } else {
            format!("{prefix}{name}")
        };
        let previous = codes.insert(full.clone(), value);
        assert!(previous.is_none(), "{full} is listed twice in protocol.md");
    }
    codes
}

/// Every `#define ACL_SUCCESS/ACL_ERROR_* VALUE` of the C header.
fn header_error_codes() -> BTreeMap<String, i32> {
    HEADER
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            (words.next()? == "#define").then_some(())?;
            let name = words.next()?;
            let value = words.next()?;
            (name == "ACL_SUCCESS" || name.starts_with("ACL_ERROR_"))
                .then(|| (name.to_owned(), value.parse().expect("a decimal code")))
        })
        .collect()
}

fn protocol_codes() -> BTreeMap<String, i32> {
    let codes = parse_error_codes(error_codes_section(PROTOCOL));
    // Guard against a parser that silently finds nothing (the list has 33 entries today).
    assert!(
        codes.len() >= 30,
        "parsed only {} codes from protocol.md: {codes:?}",
        codes.len()
    );
    assert_eq!(codes.get("ACL_SUCCESS"), Some(&0), "{codes:?}");
    codes
}

/// The named variants as `C name -> value`.
fn enum_codes() -> BTreeMap<String, i32> {
    AclError::ALL
        .iter()
        .map(|e| (e.c_name().to_owned(), e.code()))
        .collect()
}

#[test]
fn parser_reads_prefixed_short_names() {
    let parsed = parse_error_codes(
        "Generic: `ACL_A` 1, `ACL_B` 22.\nRuntime (`ACL_X_*`): `C` 3 (note), `D_E` 44.\n",
    );
    let expected: BTreeMap<String, i32> = [
        ("ACL_A", 1),
        ("ACL_B", 22),
        ("ACL_X_C", 3),
        ("ACL_X_D_E", 44),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(parsed, expected);
}

#[test]
fn every_protocol_code_is_a_named_variant_and_vice_versa() {
    let mut documented = protocol_codes();
    // ACL_SUCCESS is not an error: it has no variant (see `success_is_not_an_error`).
    documented.remove("ACL_SUCCESS");
    let named = enum_codes();
    let missing: Vec<_> = documented
        .iter()
        .filter(|(name, value)| named.get(*name) != Some(value))
        .collect();
    let extra: Vec<_> = named
        .iter()
        .filter(|(name, value)| documented.get(*name) != Some(value))
        .collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "AclError and docs/protocol.md disagree.\n  in protocol.md, not in AclError::ALL \
         (or another value): {missing:?}\n  in AclError::ALL, not in protocol.md: {extra:?}"
    );
}

#[test]
fn header_defines_exactly_the_protocol_codes() {
    assert_eq!(
        header_error_codes(),
        protocol_codes(),
        "include/ascendcl.h and docs/protocol.md list different error codes"
    );
}

#[test]
fn all_has_no_duplicates() {
    let codes: BTreeSet<i32> = AclError::ALL.iter().map(|e| e.code()).collect();
    let names: BTreeSet<&str> = AclError::ALL.iter().map(|e| e.c_name()).collect();
    assert_eq!(codes.len(), AclError::ALL.len());
    assert_eq!(names.len(), AclError::ALL.len());
    assert!(!codes.contains(&0));
}

#[test]
fn named_variants_round_trip() {
    for &e in AclError::ALL {
        assert!(!matches!(e, AclError::Unknown(_)), "{e:?} in ALL");
        assert_eq!(AclError::from_code(e.code()), e, "{e:?}");
        assert_eq!(AclError::check(e.code()), Err(e));
        assert!(e.c_name().starts_with("ACL_ERROR_"), "{e:?}");
        assert!(
            !e.description().trim().is_empty(),
            "{e:?} has no description"
        );
    }
}

#[test]
fn display_shows_c_name_code_and_description() {
    for &e in AclError::ALL {
        let shown = e.to_string();
        for part in [e.c_name(), &e.code().to_string(), e.description()] {
            assert!(
                shown.contains(part),
                "{e:?} displays as {shown:?}, lacking {part:?}"
            );
        }
    }
    assert_eq!(
        AclError::RtStreamContext.to_string(),
        format!(
            "ACL_ERROR_RT_STREAM_CONTEXT (107003): {}",
            AclError::RtStreamContext.description()
        )
    );
}

#[test]
fn unknown_codes_are_carried_intact() {
    for code in [42, -1, 1, 99_999, 107_006, 507_999, i32::MAX, i32::MIN] {
        let e = AclError::from_code(code);
        assert_eq!(e, AclError::Unknown(code));
        assert_eq!(e.code(), code);
        assert_eq!(AclError::check(code), Err(AclError::Unknown(code)));
        assert!(!e.description().is_empty());
        let shown = e.to_string();
        assert!(shown.contains(&code.to_string()), "{shown}");
        assert!(shown.contains(e.c_name()), "{shown}");
        let runtime = Error::Runtime {
            call: "aclrtSynchronizeStream",
            code: e,
            message: None,
        };
        assert_eq!(runtime.code(), Some(AclError::Unknown(code)));
        assert!(runtime.to_string().contains(&code.to_string()));
    }
}

#[test]
fn success_is_not_an_error() {
    assert_eq!(AclError::check(0), Ok(()));
    assert!(!AclError::ALL.iter().any(|e| e.code() == 0));
}

#[test]
fn runtime_error_names_the_call() {
    let e = Error::Runtime {
        call: "aclrtRecordEvent",
        code: AclError::RtStreamContext,
        message: None,
    };
    let shown = e.to_string();
    assert!(shown.contains("aclrtRecordEvent"), "{shown}");
    assert!(
        shown.contains(&AclError::RtStreamContext.to_string()),
        "{shown}"
    );
    assert_eq!(e.code(), Some(AclError::RtStreamContext));
}

#[test]
fn non_runtime_errors_have_no_code() {
    let unsupported = Error::Unsupported {
        symbol: "aclrtSynchronizeEventWithTimeout",
    };
    assert_eq!(unsupported.code(), None);
    assert!(
        unsupported
            .to_string()
            .contains("aclrtSynchronizeEventWithTimeout")
    );
    let load: Error = LoadError::NotFound { tried: Vec::new() }.into();
    assert_eq!(load.code(), None);
}

#[test]
fn not_found_lists_every_path_tried() {
    let tried = vec![
        TriedPath {
            path: PathBuf::from("/opt/a/lib64/libascendcl.so"),
            source: "$ASCEND_HOME_PATH",
            reason: "does not exist".to_owned(),
        },
        TriedPath {
            path: PathBuf::from("libascendcl.so"),
            source: "system loader",
            reason: "libascendcl.so: cannot open shared object file".to_owned(),
        },
        TriedPath {
            path: PathBuf::from("/t/debug/deps/libascendcl.so"),
            source: "beside the executable",
            reason: "wrong ELF class".to_owned(),
        },
    ];
    let e = LoadError::NotFound {
        tried: tried.clone(),
    };
    let shown = e.to_string();
    let mut last = 0;
    for t in &tried {
        let at = shown[last..]
            .find(&t.path.display().to_string())
            .map(|i| i + last)
            .unwrap_or_else(|| panic!("{} missing or out of order in {shown}", t.path.display()));
        assert!(shown[at..].contains(t.source), "{shown}");
        assert!(shown[at..].contains(&t.reason), "{shown}");
        last = at;
    }
    // Wrapped in Error, the message is unchanged.
    assert_eq!(Error::from(e).to_string(), shown);
}

#[test]
fn missing_symbol_names_symbol_and_library() {
    let e = LoadError::MissingSymbol {
        library: PathBuf::from("/opt/x/libascendcl.so"),
        symbol: "aclrtCreateStream",
        reason: "undefined symbol".to_owned(),
    };
    let shown = e.to_string();
    assert!(shown.contains("aclrtCreateStream"), "{shown}");
    assert!(shown.contains("/opt/x/libascendcl.so"), "{shown}");
}

/// `Failed` and `WaitError` carry a value beside their error and are transparent: they
/// display as the error and have its source, so an error chain never repeats the message.
#[test]
fn failed_is_transparent_in_error_chains() {
    let failed = ascend_typestate::Failed {
        error: ascend_typestate::Error::Runtime {
            call: "aclrtRecordEvent",
            code: AclError::RtStreamContext,
            message: None,
        },
        value: (),
    };
    assert_eq!(failed.to_string(), failed.error.to_string());
    assert!(std::error::Error::source(&failed).is_none());
    let mut chain = Vec::new();
    let mut next: Option<&dyn std::error::Error> = Some(&failed);
    while let Some(e) = next {
        chain.push(e.to_string());
        next = e.source();
    }
    assert_eq!(chain.len(), 1, "{chain:?}");
}

/// What `main() -> Result<(), Error>` prints for a failed load: `Error: {:?}`. It must be a
/// short multi-line message naming what was tried, the first reason, and both ways out.
#[test]
fn a_load_failure_reads_well_from_main() {
    let tried = vec![
        TriedPath {
            path: PathBuf::from("/usr/local/Ascend/ascend-toolkit/latest/lib64/libascendcl.so"),
            source: "default install",
            reason: "does not exist".to_owned(),
        },
        TriedPath {
            path: PathBuf::from("libascendcl.so"),
            source: "system loader",
            reason: "libruntime.so: cannot open shared object file".to_owned(),
        },
        TriedPath {
            path: PathBuf::from("/app/libascendcl.so"),
            source: "beside the executable",
            reason: "does not exist".to_owned(),
        },
    ];
    let error: Error = LoadError::NotFound { tried }.into();
    let shown = format!("{error:?}");
    // Debug is the readable message, not a struct dump.
    assert_eq!(shown, error.to_string());
    assert!(!shown.contains("TriedPath"), "{shown}");
    let lines: Vec<&str> = shown.lines().collect();
    assert!((5..=30).contains(&lines.len()), "{shown}");
    assert!(
        lines[0].starts_with("cannot load the AscendCL runtime library"),
        "{shown}"
    );
    // The first reason is the first answer that says more than "does not exist".
    assert!(
        lines[1].contains("first reason: libascendcl.so [system loader]: libruntime.so"),
        "{shown}"
    );
    assert!(
        shown.contains("/app/libascendcl.so [beside the executable]"),
        "{shown}"
    );
    assert!(shown.contains("ASCEND_ACL_LIB="), "{shown}");
    assert!(shown.contains("ascendcl-sim"), "{shown}");
}

/// A wrong `ASCEND_ACL_LIB` is named, and the message says it is never replaced; a path the
/// program chose says the variable is not used.
#[test]
fn a_load_failure_of_an_explicit_choice_says_whose_choice_it_was() {
    let env = LoadError::NotFound {
        tried: vec![TriedPath {
            path: PathBuf::from("/opt/x/libascendcl.so"),
            source: "ASCEND_ACL_LIB",
            reason: "does not exist".to_owned(),
        }],
    };
    let shown = format!("{env:?}");
    assert!(
        shown.contains("ASCEND_ACL_LIB=/opt/x/libascendcl.so was not loaded: does not exist"),
        "{shown}"
    );
    assert!(shown.contains("correct or unset it"), "{shown}");
    let caller = LoadError::NotFound {
        tried: vec![TriedPath {
            path: PathBuf::from("/opt/y/libascendcl.so"),
            source: "caller",
            reason: "does not exist".to_owned(),
        }],
    };
    let shown = format!("{caller:?}");
    assert!(shown.contains("/opt/y/libascendcl.so"), "{shown}");
    assert!(
        shown.contains("ASCEND_ACL_LIB and the search order are not used"),
        "{shown}"
    );
    assert!(!shown.contains("to fix it"), "{shown}");
}

/// The other variants keep a structured `Debug`.
#[test]
fn other_errors_debug_as_their_variant() {
    let e = Error::Runtime {
        call: "aclrtSetDevice",
        code: AclError::RtInvalidDeviceId,
        message: None,
    };
    assert_eq!(
        format!("{e:?}"),
        "Runtime { call: \"aclrtSetDevice\", code: RtInvalidDeviceId }"
    );
    // The Debug form (what `.expect()` prints) carries the Display form's hint.
    let debug = format!("{:?}", Error::AlreadyInitialized);
    assert!(debug.starts_with("AlreadyInitialized { hint: "), "{debug}");
    assert!(debug.contains("Acl::shared"), "{debug}");
}

/// A user's first program: every call, teardown included, propagates with `?`
/// into `Box<dyn Error + Send + Sync>` (what `anyhow` and most applications use), because
/// each method's usual form returns the `'static` [`Error`]; the `try_` forms give the handle
/// back. This test fails to compile if one of them returns a borrowing error again.
#[test]
fn question_mark_works_into_a_boxed_error_through_teardown() {
    type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;
    fn program(acl: ascend_typestate::Acl) -> Result<(), BoxError> {
        use ascend_typestate::{CallbackMode, MallocPolicy, ReportThread};
        let device = acl.set_device(0)?.into_default_context()?;
        let (a, b) = (device.create_stream()?, device.create_stream()?);
        let event = device.create_event()?.record(&a)?;
        let event = event.wait_and_reset(&b)?;
        let event = event.record(&a)?;
        let event = event.wait(&b, |w| w.reset())?;
        let event = event.record(&a)?;
        event.synchronize()?;
        let event = event.reset_completed(&a)?;
        event.destroy()?;
        let buffer = device.alloc::<u32>(16, MallocPolicy::HugeFirst)?;
        buffer.free()?;
        device.alloc_host::<u32>(16)?.free()?;
        let thread = ReportThread::spawn(&device)?;
        let subscribed = thread.subscribe(b)?;
        subscribed.launch(CallbackMode::Blocking, || {})?;
        let b = subscribed.unsubscribe()?;
        thread.stop()?;
        let host = a.with_host_functions();
        host.launch(|| {})?;
        host.destroy()?;
        b.destroy_force()?;
        let device = device.release_default_context()?;
        let ctx = device.create_context()?;
        ctx.create_stream()?.destroy()?;
        ctx.destroy()?;
        let device = device.reset()?.set()?;
        device.reset()?;
        acl.finalize()?;
        Ok(())
    }
    let mut session = support::sim::Session::start();
    let acl = session.acl.take().expect("the session's runtime");
    if let Err(error) = program(acl) {
        panic!("{error}");
    }
    assert_eq!(session.sim.live_objects(), 0);
    let findings = session.sim.findings();
    assert!(findings.is_empty(), "{findings:?}");
}

/// The runtime's own explanation travels with the error: a failed call reads
/// `aclGetRecentErrMsg` at once, on the failing thread, and the error displays it.
#[test]
fn a_runtime_error_carries_the_runtimes_message() {
    let session = support::sim::Session::start();
    {
        let device = session.default_device(0);
        let error = device
            .load_model(ascend_typestate::ModelSource::bytes(
                b"not a model".to_vec(),
            ))
            .unwrap_err();
        let Error::Runtime { call, message, .. } = &error else {
            panic!("{error:?}");
        };
        assert_eq!(*call, "aclmdlLoadFromMem");
        let message = message
            .as_ref()
            .expect("the simulator explains its refusals");
        assert!(!message.as_str().is_empty());
        let shown = error.to_string();
        assert!(
            shown.contains("; the runtime says: ") && shown.contains(message.as_str()),
            "{shown}"
        );
        assert!(format!("{error:?}").contains("message: "), "{error:?}");
        // Taken into the error: the thread's message is gone.
        assert_eq!(session.acl().recent_error_message(), None);
    }
    let findings = session.finish();
    assert!(findings.is_empty(), "{findings:?}");
}
