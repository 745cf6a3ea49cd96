//! Runs the C harness (tests/c/harness.c) against the built libascendcl.so, one process per
//! case so that every case starts from a fresh simulator. Test names cite protocol rules.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Directory holding libascendcl.so: the test binary lives in target/<profile>/deps, and so
/// does the cdylib (no target dir is hard-coded).
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let deps = exe.parent().expect("deps dir").to_path_buf();
    for d in [
        deps.clone(),
        deps.parent().map(Path::to_path_buf).unwrap_or_default(),
    ] {
        if d.join("libascendcl.so").exists() {
            return d;
        }
    }
    panic!("libascendcl.so not found next to {}", exe.display());
}

fn harness() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        std::fs::create_dir_all(&out_dir).expect("tmpdir");
        let bin = out_dir.join(format!("aclsim_harness_{}", std::process::id()));
        let lib = lib_dir();
        // The runtime's header is the repository's (one copy, shared with the crate's
        // bindings); the published package of the simulator does not carry it.
        let header = manifest.join("../include/ascendcl.h");
        assert!(
            header.is_file(),
            "the C harness builds against the repository's include/ascendcl.h, missing at {}: \
             run these tests from a checkout of the repository",
            header.display()
        );
        let status = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
            .args([
                "-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-pthread",
            ])
            .arg(format!("-I{}", manifest.join("include").display()))
            .arg(format!("-I{}", manifest.join("../include").display()))
            .arg(manifest.join("tests/c/harness.c"))
            .arg("-o")
            .arg(&bin)
            .arg(format!("-L{}", lib.display()))
            .arg("-lascendcl")
            .arg(format!("-Wl,-rpath,{}", lib.display()))
            .status()
            .expect("run the C compiler (cc)");
        assert!(status.success(), "compiling tests/c/harness.c failed");
        bin
    })
}

pub fn run_case_env(case: &str, env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = Command::new(harness());
    cmd.arg(case)
        .env("LD_LIBRARY_PATH", lib_dir())
        .env_remove("ACLSIM_CHECK")
        .env_remove("ACLSIM_TRACE")
        .env_remove("ACLSIM_DEVICE_COUNT")
        .env_remove("ACLSIM_RUN_MODE")
        .env_remove("ACLSIM_DEADLOCK_MS")
        .env_remove("ACLSIM_OP_WAIT_TIMEOUT")
        .env_remove("ACLSIM_SOC_NAME")
        .env_remove("ACLSIM_DEVICE_MEMORY")
        .env("ACLSIM_QUIET", "0");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run harness");
    if !out.status.success() {
        panic!(
            "case {case} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    out
}

fn run_case(case: &str) {
    run_case_env(case, &[]);
}

macro_rules! cases {
    ($($name:ident),* $(,)?) => {
        $( #[test] fn $name() { run_case(stringify!($name)); } )*
    };
}

cases!(
    seed000_event_sync,
    seed000_stream_sync_memcpy,
    seed000_stream_to_stream_wait,
    seed000_stream_to_stream_verbatim_is_clean,
    seed000_device_sync,
    seed001_callback_flow,
    p1_calls_before_init_return_100001,
    p1_null_handles_and_pointers_return_100000_first,
    p2_repeat_init_and_finalize_codes,
    p2_live_resources_at_finalize_are_one_leak_report,
    p3_wait_timeout_reported_by_synchronize_stream,
    d1_invalid_device_id_returns_107001,
    d1_d5_set_reset_are_reference_counted,
    d1_create_context_on_unset_device_is_supported,
    d2_d6_current_context_is_per_thread,
    d3_destroy_context_with_live_stream_and_event_is_flagged,
    d3_reset_device_with_live_resources_is_flagged,
    d5_destroy_default_context_returns_107002,
    d6_stream_outside_current_context_returns_107003,
    aclsim_extension_api_contract,
    aclsim_fault_injection,
    aclsim_fault_injection_at,
    aclsim_call_counts,
    s1_tasks_run_in_issue_order,
    s1_streams_are_independent,
    s3_synchronize_stream_with_timeout_codes,
    s4_destroy_stream_waits_for_pending_tasks,
    s4_destroy_stream_that_can_never_drain_is_diagnosed,
    e1_wait_on_never_recorded_plain_event_returns_107000,
    e1_wait_on_sync_event_is_released_by_a_later_record,
    e1_deadlock_on_never_recorded_sync_event_is_diagnosed,
    e1_deadlock_cycle_between_two_streams_is_diagnosed,
    e2_query_status_and_synchronize_event,
    e4_wait_without_reset_then_destroy_is_flagged,
    e4_rerecord_without_reset_is_flagged,
    e4_runtime_cross_stream_example_plain_event_is_clean,
    e4_reset_of_plain_event_is_flagged,
    e3_plain_event_wait_waits_for_the_latest_record,
    e5_reset_overtaking_another_streams_wait_is_flagged,
    e6_synchronize_event_with_timeout_codes,
    e7_event_flags_without_sync_cannot_wait_or_reset,
    e8_elapsed_time_needs_both_events_complete,
    e9_destroy_event_referenced_by_pending_task_is_flagged,
    c2_second_subscription_of_a_stream_returns_107011,
    c3_same_thread_on_two_devices_returns_107012,
    c4_more_than_1024_subscribed_threads_returns_107012,
    c5_launch_callback_errors,
    c5_block_holds_the_stream_and_no_block_does_not,
    c6_process_report_errors,
    c8_runtime_call_inside_callback_is_flagged,
    c1_synchronize_on_the_processing_thread_is_diagnosed,
    c9_unsubscribe_errors,
    m1_memcpy_violations_return_100000_and_are_flagged,
    m1_malloc_and_free_codes,
    m2_free_memory_used_by_pending_task_is_flagged,
    m2_free_with_wrong_pair_is_flagged,
    m1_async_task_on_another_devices_stream_returns_100000,
    stress_many_streams_events_threads,
    perf_synchronize_loop,
    race_destroy_stream_vs_finalize_no_crash,
    race_destroy_stream_vs_reset_device_no_crash,
    race_destroy_context_vs_finalize_no_crash,
    race_destroy_context_vs_reset_device_no_crash,
    p4_version_queries_and_recent_error_message,
    p5_op_execute_timeout_stops_long_kernels,
    d7_reset_device_force_releases_every_reference,
    d8_device_queries,
    s5_stream_query_not_ready_while_kernel_runs,
    s6_failure_mode_codes_and_continue_on_failure,
    s6_stop_on_failure_stops_every_stream_of_the_context,
    s7_create_stream_with_config_codes,
    s8_destroy_stream_force_drops_pending_tasks,
    s8_destroy_stream_force_drops_callbacks,
    c10_host_func_runs_in_order_on_a_runtime_thread,
    c11_report_callbacks_and_host_functions_are_never_mixed,
    c12_host_func_subscription_codes,
    s9_stream_config_handles_and_create_stream_v2,
    s10_stream_queries_flags_priority_id,
    s11_stream_stop_and_abort,
    s12_stream_state_callbacks,
    d9_d10_current_default_stream_and_thread_resources,
    p6_last_error_and_error_verbose,
    aclsim_inject_task_failure_and_new_names,
    md_load_and_execute_sync_and_async,
    md_real_om_and_bad_files_are_refused,
    md11_dynamic_batch,
    md13_data_types_and_formats,
    md7_unload_with_pending_execution_returns_107037,
    md6_dataset_destroyed_while_in_use_is_flagged,
    md8_execution_on_two_streams_is_flagged,
    md1_other_context_returns_107004,
    md10_wrong_buffer_sizes_return_100017_100018,
    md9_host_memory_in_a_data_buffer_is_flagged,
    md2_with_mem_work_freed_before_unload_is_flagged,
    md3_load_from_mem_bytes_freed_before_unload_is_flagged,
    md4_description_used_after_unload_is_flagged,
    md_p2_model_never_unloaded_is_a_leak,
    md_io_memory_in_use_and_device_reset,
    md6_add_buffer_while_pending_is_flagged,
    md6_set_batch_while_pending_is_flagged,
    md6_io_memory_of_a_pending_execution_touched_is_flagged,
    md2_md3_memory_held_by_a_loaded_model_written_is_flagged,
    md2_shared_work_memory_overlapping_executions_is_flagged,
    md6_set_batch_during_synchronous_execute_on_another_thread_is_flagged,
    md5_use_after_destroy_is_flagged,
    md8_serialised_executions_closing_an_event_cycle_are_diagnosed,
    md_model_file_read_never_blocks_other_threads,
    p5_limits_are_capped_at_2176_s_and_longer_kernels_refused,
    race_large_memset_vs_reset_device_no_crash,
    race_large_memset_vs_finalize_no_crash,
    m_large_copies_do_not_block_other_threads,
    md_synchronous_execute_and_device_reset,
);

/// Bad model files and bytes: error codes, never a panic, a hang or a huge allocation
/// (16 MiB devices, so that a small file can be larger than the device).
#[test]
fn md_bad_model_inputs_return_error_codes() {
    run_case_env(
        "md_bad_model_inputs_return_error_codes",
        &[("ACLSIM_DEVICE_MEMORY", "16777216")],
    );
}

/// D8: allocations and runtime-allocated model memory count against the device's memory
/// (64 MiB devices); beyond it, 207001.
#[test]
fn m_device_memory_is_enforced() {
    run_case_env(
        "m_device_memory_is_enforced",
        &[("ACLSIM_DEVICE_MEMORY", "67108864")],
    );
}

#[test]
fn d_run_mode_host_by_default_and_handles_are_validated() {
    run_case("d_run_mode_and_handles");
}

#[test]
fn d_run_mode_device_from_env() {
    run_case_env("d_run_mode_and_handles", &[("ACLSIM_RUN_MODE", "device")]);
}

#[test]
fn p3_op_wait_timeout_from_env() {
    run_case_env(
        "p3_op_wait_timeout_from_env",
        &[("ACLSIM_OP_WAIT_TIMEOUT", "1")],
    );
}

#[test]
fn d8_soc_name_and_device_memory_from_env() {
    run_case_env(
        "d8_device_queries",
        &[
            ("ACLSIM_SOC_NAME", "Ascend910B-aclsim-test"),
            ("ACLSIM_DEVICE_MEMORY", "1073741824"),
        ],
    );
}

#[test]
fn checker_disabled_by_aclsim_check_0_keeps_error_codes() {
    run_case_env(
        "check_disabled_by_env_keeps_error_codes",
        &[("ACLSIM_CHECK", "0")],
    );
}

#[test]
fn aclsim_quiet_silences_stderr() {
    let out = run_case_env(
        "e4_wait_without_reset_then_destroy_is_flagged",
        &[("ACLSIM_QUIET", "1")],
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("aclsim: [E4]"));
}

fn run_case_stderr(case: &str) -> String {
    String::from_utf8_lossy(&run_case_env(case, &[]).stderr).into_owned()
}

#[test]
fn e4_finding_is_printed_with_rule_prefix() {
    let err = run_case_stderr("e4_wait_without_reset_then_destroy_is_flagged");
    assert!(err.contains("aclsim: [E4] "), "stderr: {err}");
}

#[test]
fn trace_is_valid_chrome_trace_json_with_tracks_spans_and_flows() {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("aclsim_trace_test_{}.json", std::process::id()));
    let _ = std::fs::remove_file(&path);
    run_case_env(
        "trace_ping_pong",
        &[("ACLSIM_TRACE", path.to_str().expect("utf-8 path"))],
    );
    let text = std::fs::read_to_string(&path).expect("trace written at aclFinalize");
    let _ = std::fs::remove_file(&path);
    let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let evs = v["traceEvents"].as_array().expect("traceEvents array");
    let names = |ph: &str| -> Vec<String> {
        evs.iter()
            .filter(|e| e["ph"] == ph)
            .map(|e| e["name"].as_str().unwrap_or("").to_string())
            .collect()
    };
    let tracks: Vec<_> = evs
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .collect();
    assert!(tracks.len() >= 2, "one track per stream");
    let spans = names("X");
    assert!(
        spans.iter().any(|n| n == "memcpy_async H2D 4096 B"),
        "{spans:?}"
    );
    assert!(spans.iter().any(|n| n.starts_with("kernel")));
    assert!(spans.iter().any(|n| n.starts_with("record e")));
    assert!(spans.iter().any(|n| n.starts_with("wait e")));
    assert!(spans.iter().any(|n| n.starts_with("reset e")));
    assert!(spans.iter().any(|n| n.starts_with("callback")));
    for e in evs.iter().filter(|e| e["ph"] == "X") {
        assert!(e["ts"].as_f64().is_some() && e["dur"].as_f64().is_some());
        assert!(e["tid"].as_u64().is_some());
    }
    assert_eq!(
        check_flows(evs),
        6,
        "one arrow per released wait (3 iterations x 2)"
    );
}

/// Parses a trace written by the harness case `case`.
fn trace_of(case: &str) -> Vec<serde_json::Value> {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("aclsim_{case}_{}.json", std::process::id()));
    let _ = std::fs::remove_file(&path);
    run_case_env(
        case,
        &[("ACLSIM_TRACE", path.to_str().expect("utf-8 path"))],
    );
    let text = std::fs::read_to_string(&path).expect("trace written at aclFinalize");
    let _ = std::fs::remove_file(&path);
    let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    v["traceEvents"]
        .as_array()
        .expect("traceEvents array")
        .clone()
}

/// A trace timestamp ("ts", "dur": microseconds, three decimals) in whole nanoseconds.
fn ns(v: &serde_json::Value) -> i64 {
    (v.as_f64().expect("numeric timestamp") * 1000.0).round() as i64
}

/// Checks every flow arrow of a trace and returns how many there are. Chrome binds a flow
/// start ("s") to the slice enclosing its timestamp on its track, and a flow end with
/// "bp":"e" likewise, so: each arrow starts inside exactly one `record eN` slice, ends
/// inside exactly one `wait eN` slice of the same event on another track, at the end of
/// that slice (where the wait was released), and never goes back in time.
fn check_flows(evs: &[serde_json::Value]) -> usize {
    let slices: Vec<(u64, i64, i64, &str)> = evs
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| {
            let ts = ns(&e["ts"]);
            let tid = e["tid"].as_u64().expect("tid");
            (
                tid,
                ts,
                ts + ns(&e["dur"]),
                e["name"].as_str().expect("name"),
            )
        })
        .collect();
    let enclosing = |ev: &serde_json::Value| -> (i64, i64, &str) {
        let (tid, ts) = (ev["tid"].as_u64().expect("tid"), ns(&ev["ts"]));
        let inside: Vec<_> = slices
            .iter()
            .filter(|(t, a, b, _)| *t == tid && *a <= ts && ts <= *b)
            .collect();
        assert_eq!(
            inside.len(),
            1,
            "flow point {ev} binds to one slice: {inside:?}"
        );
        let (_, a, b, name) = inside[0];
        (*a, *b, name)
    };
    let starts: Vec<_> = evs.iter().filter(|e| e["ph"] == "s").collect();
    let finishes: Vec<_> = evs.iter().filter(|e| e["ph"] == "f").collect();
    assert_eq!(finishes.len(), starts.len(), "every arrow has both ends");
    for s in &starts {
        let id = &s["id"];
        let ends: Vec<_> = finishes.iter().filter(|f| &f["id"] == id).collect();
        assert_eq!(ends.len(), 1, "one flow end per id {id}");
        let f = ends[0];
        assert_eq!(f["bp"], "e", "the end binds to its enclosing slice: {f}");
        assert_ne!(s["tid"], f["tid"], "arrows go from one stream to another");
        let (_, _, record) = enclosing(s);
        let (_, wait_end, wait) = enclosing(f);
        let ev = record
            .strip_prefix("record ")
            .expect("starts in a record slice");
        assert_eq!(
            wait.strip_prefix("wait "),
            Some(ev),
            "arrow {s} -> {f} ends in a wait on the recorded event"
        );
        assert!(
            ns(&s["ts"]) <= ns(&f["ts"]),
            "arrow goes back in time: {s} -> {f}"
        );
        assert!(
            wait_end - ns(&f["ts"]) <= 1,
            "arrow ends where the wait was released (end of its slice): {f}"
        );
    }
    starts.len()
}

#[test]
fn trace_flow_arrows_go_forward_from_the_record_to_the_released_wait() {
    let evs = trace_of("trace_fan_out");
    // 2 iterations x (2 waits issued before the record + 1 after it).
    assert_eq!(check_flows(&evs), 6);
}
