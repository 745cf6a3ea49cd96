//! Finding and opening the runtime library (`src/sys/loader.rs`).
//!
//! * `Api::load` on missing and broken files, and on C stubs compiled here with `cc` (a stub
//!   without the optional symbols, one without a required symbol), and as the process's
//!   runtime library, loaded once;
//! * the model API (MD): in the runtime, beside it (`libacl_mdl.so`), or unavailable.

use crate::support;

use ascend_typestate::result::CallError;
use ascend_typestate::sys::loader::{Api, LoadOptions, load_global};
use ascend_typestate::sys::{OPTIONAL_SYMBOLS, REQUIRED_SYMBOLS};
use ascend_typestate::{AclError, LoadError};

use super::library_common::{STUB_CODE, split_install, stub_source};

#[test]
fn nonexistent_explicit_path_is_not_found_and_listed() {
    let dir = support::scratch_dir("nonexistent");
    let path = dir.join("no-such-libascendcl.so");
    let err = Api::load(&LoadOptions::default().path(&path)).expect_err("nothing to load");
    let LoadError::NotFound { tried } = &err else {
        panic!("expected NotFound, got {err:?}");
    };
    assert_eq!(
        tried.len(),
        1,
        "an explicit path is the only candidate: {tried:?}"
    );
    assert_eq!(tried[0].path, path);
    assert_eq!(tried[0].source, "caller");
    assert!(!tried[0].reason.is_empty());
    let shown = err.to_string();
    assert!(
        shown.contains(&path.display().to_string()),
        "Display must list the path tried: {shown}"
    );
}

#[test]
fn explicit_path_that_is_not_a_library_reports_the_loader_answer() {
    let dir = support::scratch_dir("not-a-library");
    let path = dir.join("libascendcl.so");
    std::fs::write(&path, "this is not an ELF file\n").unwrap();
    let err = Api::load(&LoadOptions::default().path(&path)).expect_err("not a library");
    let LoadError::NotFound { tried } = &err else {
        panic!("expected NotFound, got {err:?}");
    };
    assert_eq!(tried.len(), 1, "{tried:?}");
    assert_eq!(tried[0].path, path);
    assert_ne!(
        tried[0].reason, "does not exist",
        "the file exists: {tried:?}"
    );
    assert!(err.to_string().contains(&tried[0].reason), "{err}");
}

#[test]
fn stub_without_optional_symbols_loads_and_reports_unsupported_at_the_call() {
    let path = support::compile_shared_library("stub_no_optional", &stub_source(&[], false));
    let api = Api::load(&LoadOptions::default().path(&path)).expect("the stub loads");
    assert_eq!(api.path(), path);
    assert_eq!(api.source(), "caller");

    // Required calls work, arguments and results cross the boundary.
    assert_eq!(api.get_device_count().unwrap(), 3);
    // SAFETY (this block and the raw calls below): a stub library, not a runtime any typed
    // handle uses.
    unsafe { api.set_device(0) }.unwrap();
    let err = unsafe { api.set_device(1) }.expect_err("the stub rejects device 1");
    assert!(
        matches!(
            err,
            CallError::Failed {
                call: "aclrtSetDevice",
                code: AclError::RtInvalidDeviceId,
                ..
            }
        ),
        "{err:?}"
    );
    // An unknown code travels intact through the whole path.
    let err = unsafe { api.init(None) }.expect_err("the stub's aclInit returns STUB_CODE");
    assert!(
        matches!(
            err,
            CallError::Failed {
                call: "aclInit",
                code: AclError::Unknown(STUB_CODE),
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(err.code().map(AclError::code), Some(STUB_CODE));

    // The optional symbols are absent: reported by has_symbol, and only at their call.
    for symbol in OPTIONAL_SYMBOLS {
        assert!(!api.has_symbol(symbol), "{symbol} should be absent");
    }
    for symbol in REQUIRED_SYMBOLS {
        assert!(api.has_symbol(symbol), "{symbol} should be present");
    }
    assert!(!api.has_symbol("aclNoSuchFunction"));
    assert!(api.functions().aclrtSynchronizeEventWithTimeout.is_none());

    let err =
        unsafe { api.synchronize_device_with_timeout(10) }.expect_err("optional symbol absent");
    assert!(
        matches!(
            err,
            CallError::Unsupported {
                symbol: "aclrtSynchronizeDeviceWithTimeout"
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("aclrtSynchronizeDeviceWithTimeout"),
        "{err}"
    );

    // SAFETY: the stub lacks the symbol, so nothing is called and the null handle is never
    // dereferenced.
    let err = unsafe { api.synchronize_event_with_timeout(std::ptr::null_mut(), 10) }
        .expect_err("optional symbol absent");
    assert!(
        matches!(
            err,
            CallError::Unsupported {
                symbol: "aclrtSynchronizeEventWithTimeout"
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("aclrtSynchronizeEventWithTimeout"),
        "{err}"
    );

    // Still usable after an Unsupported answer.
    assert_eq!(api.get_device_count().unwrap(), 3);
}

#[test]
fn stub_with_optional_symbols_calls_them() {
    let path = support::compile_shared_library("stub_with_optional", &stub_source(&[], true));
    let api = Api::load(&LoadOptions::default().path(&path)).expect("the stub loads");
    for symbol in OPTIONAL_SYMBOLS {
        assert!(api.has_symbol(symbol), "{symbol} should be present");
    }
    // SAFETY: a stub library, not a runtime any typed handle uses.
    unsafe { api.synchronize_device_with_timeout(0) }.unwrap();
    // SAFETY: as above.
    let err = unsafe { api.synchronize_device_with_timeout(507_046) }.unwrap_err();
    assert!(
        matches!(
            err,
            CallError::Failed {
                call: "aclrtSynchronizeDeviceWithTimeout",
                code: AclError::RtStreamSyncTimeout,
                ..
            }
        ),
        "{err:?}"
    );
    // SAFETY: the stub ignores the handle.
    let result = unsafe { api.synchronize_event_with_timeout(std::ptr::null_mut(), 507_047) };
    assert!(
        matches!(
            result,
            Err(CallError::Failed {
                call: "aclrtSynchronizeEventWithTimeout",
                code: AclError::RtEventSyncTimeout,
                ..
            })
        ),
        "{result:?}"
    );
    // The thread's last runtime error (P6), read with the failure when it differs from the
    // code returned: carried by the error, shown in its message.
    let err = result.unwrap_err();
    let message = err.message().expect("the last runtime error is kept");
    assert_eq!(
        message.last_runtime_error(),
        Some(AclError::RtStreamContext)
    );
    assert_eq!(message.as_str(), "");
    let typed: ascend_typestate::Error = err.into();
    assert!(
        typed.to_string().contains("last runtime error: "),
        "{typed}"
    );
    assert!(typed.to_string().contains("107003"), "{typed}");
}

#[test]
fn stub_missing_a_required_symbol_is_rejected_naming_it() {
    let path = support::compile_shared_library(
        "stub_no_create_stream",
        &stub_source(&["aclrtCreateStream"], true),
    );
    let err = Api::load(&LoadOptions::default().path(&path)).expect_err("missing symbol");
    let LoadError::MissingSymbol {
        library,
        symbol,
        reason,
    } = &err
    else {
        panic!("expected MissingSymbol, got {err:?}");
    };
    assert_eq!(*symbol, "aclrtCreateStream");
    assert_eq!(library, &path);
    assert!(!reason.is_empty());
    let shown = err.to_string();
    assert!(shown.contains("aclrtCreateStream"), "{shown}");
    assert!(shown.contains(&path.display().to_string()), "{shown}");
}

#[test]
fn every_required_symbol_is_checked_at_load() {
    // Dropping any one required symbol fails the load, naming that symbol.
    // (A handful, not all 38: each needs a compile.)
    for (i, &missing) in REQUIRED_SYMBOLS
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 9 == 0 || *i == REQUIRED_SYMBOLS.len() - 1)
    {
        let path = support::compile_shared_library(
            &format!("stub_missing_{i}"),
            &stub_source(&[missing], true),
        );
        match Api::load(&LoadOptions::default().path(&path)) {
            Err(LoadError::MissingSymbol { symbol, .. }) => assert_eq!(symbol, missing),
            other => panic!("without {missing}: expected MissingSymbol, got {other:?}"),
        }
    }
}

#[test]
fn global_runtime_is_loaded_once() {
    if support::child::own_process("global_runtime_is_loaded_once") {
        return;
    }
    // The only test of this executable that touches the process-wide runtime.
    let path = support::compile_shared_library("stub_global", &stub_source(&[], false));
    let first = load_global(&LoadOptions::default().path(&path)).expect("the stub loads");
    assert_eq!(first.path(), path);
    let again = load_global(&LoadOptions::default().path(&path)).unwrap();
    assert!(std::ptr::eq(first, again));
    let default = load_global(&LoadOptions::default()).unwrap();
    assert!(std::ptr::eq(first, default), "the loaded runtime is reused");
    assert!(std::ptr::eq(
        first,
        ascend_typestate::sys::loader::global().unwrap()
    ));

    let other = path.with_file_name("libother.so");
    match load_global(&LoadOptions::default().path(&other)) {
        Err(LoadError::AlreadyLoaded { loaded, requested }) => {
            assert_eq!(loaded, path);
            assert_eq!(requested, other);
        }
        res => panic!("expected AlreadyLoaded, got {res:?}"),
    }
    support::child::passed("global_runtime_is_loaded_once");
}

/// A C stub model library exporting every model function except those in `omit`; each
/// returns [`STUB_CODE`] (only `aclmdlQuerySize`, which returns a code, is called).
fn model_stub_source(omit: &[&str]) -> String {
    let mut source = String::from("/* generated by tests/loading/library_stubs.rs */\n");
    for &name in ascend_typestate::sys::model::MODEL_SYMBOLS {
        if !omit.contains(&name) {
            source.push_str(&format!("int {name}(void) {{ return {STUB_CODE}; }}\n"));
        }
    }
    source
}

#[test]
fn model_functions_are_found_in_libacl_mdl_beside_the_runtime() {
    let runtime = split_install("split_runtime", Some(&model_stub_source(&[])));
    let api = Api::load(&LoadOptions::default().path(&runtime)).expect("the stub loads");
    if let Err(missing) = api.models() {
        panic!("{missing}");
    }
    // The call reaches the model library's function.
    let err = api
        .model_query_size(c"model.om")
        .expect_err("the stub answers STUB_CODE");
    assert!(
        matches!(
            err,
            CallError::Failed {
                call: "aclmdlQuerySize",
                code: AclError::Unknown(STUB_CODE),
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn a_missing_model_library_makes_only_the_model_api_unavailable() {
    let runtime = split_install("runtime_without_models", None);
    let api = Api::load(&LoadOptions::default().path(&runtime)).expect("the runtime still loads");
    let Err(missing) = api.models() else {
        panic!("no model functions anywhere, yet found");
    };
    assert_eq!(missing.symbol, "aclmdlCreateDesc");
    assert_eq!(missing.tried[0].0, api.resolved_path());
    assert!(
        missing.to_string().contains("aclmdlCreateDesc"),
        "{missing}"
    );
    let err = api.model_query_size(c"model.om").expect_err("unavailable");
    assert!(
        matches!(
            err,
            CallError::Unsupported {
                symbol: "aclmdlCreateDesc"
            }
        ),
        "{err:?}"
    );
    // The runtime itself is untouched.
    assert_eq!(api.get_device_count().unwrap(), 3);
}

#[test]
fn a_model_library_missing_a_function_is_named_by_that_function() {
    let runtime = split_install(
        "split_runtime_incomplete",
        Some(&model_stub_source(&["aclmdlExecuteAsync"])),
    );
    let api = Api::load(&LoadOptions::default().path(&runtime)).expect("the stub loads");
    let Err(missing) = api.models() else {
        panic!("one model function is missing, yet found");
    };
    assert_eq!(missing.symbol, "aclmdlExecuteAsync");
    assert!(
        missing
            .tried
            .iter()
            .any(|(path, _)| path.ends_with("libacl_mdl.so")),
        "{missing}"
    );
    let err =
        ascend_typestate::Error::from(api.model_query_size(c"model.om").expect_err("unavailable"));
    assert!(
        matches!(
            err,
            ascend_typestate::Error::Unsupported {
                symbol: "aclmdlExecuteAsync"
            }
        ),
        "{err:?}"
    );
}
