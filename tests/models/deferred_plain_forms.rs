//! Attacks on the model's clean-up (deferred model release, counted model objects, pipeline
//! resets, plain/try forms, `retry_cleanup`), written with safe code only.
//!
//! Every test runs in a child process of its own (`support::child`): an attack that makes
//! the library leak must not leave the process-wide runtime initialised for the next test.
//! Each test asserts the *correct* behaviour: a failing test is a library bug (see the
//! comment above it).
//!
//! This module: plain forms and `retry_cleanup`: every failure reported exactly once.

use crate::support;

use std::time::Duration;

use ascend_typestate::{Error, MallocPolicy};
use support::DropErrors;
use support::sim::Session;

use super::deferred_common::{
    CODE, child_ok, config, in_child, infer, model_file, rule_findings, sim_model,
};

/// Attack 4/5: the plain form of each give-back method, with 1 to 5 failures in a row of
/// each runtime call it makes. Correct: every failed call is returned or reported exactly
/// once (no loss, no double report), and no rule is broken.
#[test]
fn t08_plain_forms_report_every_failure_exactly_once() {
    if !in_child("t08_plain_forms_report_every_failure_exactly_once") {
        return;
    }
    let path = model_file("plain", &sim_model(&[], Duration::ZERO));
    let session = Session::start();
    let errors = DropErrors::capture();
    let device = session.acl().set_device(0).unwrap();
    let mut problems = Vec::new();
    type Op = fn(&ascend_typestate::Context<'_>, &std::path::Path) -> Result<(), Error>;
    let ops: &[(&str, &[&str], Op)] = &[
        (
            "Stream::destroy",
            &["aclrtSynchronizeStream", "aclrtDestroyStream"],
            |ctx, _| ctx.create_stream()?.destroy(),
        ),
        (
            "Event<Recorded>::destroy",
            &["aclrtSynchronizeEvent", "aclrtDestroyEvent"],
            |ctx, _| {
                let s = ctx.create_stream()?;
                ctx.create_event()?.record(&s)?.destroy()
            },
        ),
        (
            "Event::wait_and_reset then destroy",
            &["aclrtStreamWaitEvent", "aclrtDestroyEvent"],
            |ctx, _| {
                let (a, b) = (ctx.create_stream()?, ctx.create_stream()?);
                ctx.create_event()?
                    .record(&a)?
                    .wait_and_reset(&b)?
                    .destroy()
            },
        ),
        (
            "Event::reset_completed",
            &["aclrtQueryEventStatus", "aclrtResetEvent"],
            |ctx, _| {
                let s = ctx.create_stream()?;
                let e = ctx.create_event()?.record(&s)?;
                e.synchronize()?;
                e.reset_completed(&s)?.destroy()
            },
        ),
        (
            "DeviceBuffer::free / HostBuffer::free",
            &["aclrtFree", "aclrtFreeHost"],
            |ctx, _| {
                ctx.alloc::<u8>(64, MallocPolicy::HugeFirst)?.free()?;
                ctx.alloc_host::<u8>(64)?.free()
            },
        ),
        (
            "Model::unload / ModelIo drop",
            &[
                "aclmdlUnload",
                "aclmdlDestroyDesc",
                "aclmdlDestroyDataset",
                "aclDestroyDataBuffer",
            ],
            |ctx, path| {
                let model = ctx.load_model(path)?;
                drop(model.create_io(MallocPolicy::HugeFirst)?);
                model.unload()
            },
        ),
        (
            "HostFnStream::destroy",
            &["aclrtSynchronizeStream", "aclrtDestroyStream"],
            |ctx, _| {
                let s = ctx.create_stream()?.with_host_functions();
                s.launch(|| {})?;
                s.destroy()
            },
        ),
    ];
    let mut hit = 0;
    for (name, calls, op) in ops {
        for call in *calls {
            for times in 1u32..=5 {
                let ctx = device.create_context().unwrap();
                session.sim.clear_findings();
                session.sim.reset_call_counts();
                session.sim.inject_fault(call, CODE, times);
                let returned = op(&ctx, &path).err().map(|e| e.to_string());
                let made = session.sim.call_count(call) as u32;
                session.sim.clear_faults();
                let failures = made.min(times);
                hit += failures;
                let reported = errors.take();
                let seen = reported.iter().filter(|r| r.contains(call)).count()
                    + usize::from(returned.as_deref().is_some_and(|r| r.contains(call)));
                let case = format!("{name}, {call} x{times}");
                if seen as u32 != failures {
                    problems.push(format!(
                        "{case}: {failures} failures, {seen} returned or reported: \
                         returned {returned:?}, reported {reported:?}"
                    ));
                }
                let findings = session.sim.findings();
                if !rule_findings(&findings).is_empty() {
                    problems.push(format!("{case}: findings {findings:?}"));
                }
                match ctx.try_destroy() {
                    Ok(()) => {}
                    Err(failed) => {
                        if times < 4 {
                            problems.push(format!("{case}: context kept: {}", failed.error));
                        }
                        std::mem::forget(failed.value);
                    }
                }
            }
        }
    }
    assert!(hit > 60, "the faults were hit ({hit})");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    child_ok();
}

/// Attack 5b (BUG, reporting): a refusal is final (LiveChildren here: a child was leaked).
/// The plain `Context::destroy` / `Device::reset` return it, then the handle's `Drop`
/// fallback runs the same refused release again and reports the same refusal: one failure,
/// returned and reported. (`Model::unload`, refused with ModelInUse, gets this right: its
/// fallback defers silently.) Correct: a final refusal reaches the caller once.
#[test]
fn t09_plain_destroy_of_a_refused_release_reports_it_twice() {
    if !in_child("t09_plain_destroy_of_a_refused_release_reports_it_twice") {
        return;
    }
    let session = Session::start();
    let errors = DropErrors::capture();
    let mut problems = Vec::new();
    let device = session.acl().set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    std::mem::forget(ctx.create_stream().unwrap());
    let returned = ctx.destroy();
    assert!(
        matches!(returned, Err(Error::LiveChildren { count: 1 })),
        "{returned:?}"
    );
    let reported = errors.take();
    if !reported.is_empty() {
        problems.push(format!(
            "Context::destroy returned {returned:?} and reported {reported:?}"
        ));
    }
    let other = session.acl().set_device(1).unwrap();
    std::mem::forget(other.create_context().unwrap());
    let returned = other.reset().map(drop);
    assert!(
        matches!(returned, Err(Error::LiveChildren { count: 1 })),
        "{returned:?}"
    );
    let reported = errors.take();
    if !reported.is_empty() {
        problems.push(format!(
            "Device::reset returned {returned:?} and reported {reported:?}"
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    child_ok();
}

/// Attack 1f (BUG, leak): the pipeline's release saw both streams done (so every model
/// execution is proven done), then its events' resets are issued and the synchronisation
/// that waits for them fails four times. `release` returns early and leaks *everything*,
/// the slots' datasets included, so the model dropped while pending is never unloaded
/// (it and its memory stay, and keep the context) although its executions were proven
/// done before the failure. Correct: the executions proven done end the model's pending
/// count (its deferred unload runs); only what the unconfirmed resets touch (the events)
/// must be kept.
#[test]
fn t12_deferred_model_leaked_when_only_the_reset_settle_fails() {
    if !in_child("t12_deferred_model_leaked_when_only_the_reset_settle_fails") {
        return;
    }
    let path = model_file("reset_settle", &sim_model(&[], Duration::from_millis(2)));
    let session = Session::start();
    let errors = DropErrors::capture();
    let device = session.acl().set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    let model_calls;
    let returned;
    {
        let mut pipeline = ctx.create_pipeline::<f32, f32>(config()).unwrap();
        let mut model = ctx.load_model(&path).unwrap();
        let slot = pipeline.next_slot().unwrap();
        slot.submit(|l| l.execute(&mut model)).unwrap();
        // Frame 1: its wait cannot be issued, so `ready` stays recorded (set) and the slot
        // unsettled: the release will have to reset it.
        session.sim.inject_fault("aclrtStreamWaitEvent", CODE, 1);
        let slot = pipeline.next_slot().unwrap();
        let failed = slot.submit(|l| l.simulated_map(Duration::ZERO, infer));
        assert!(matches!(failed, Err(Error::Runtime { .. })), "{failed:?}");
        session.sim.clear_faults();
        drop(model);
        session.sim.reset_call_counts();
        // The two settles of the streams pass; the four tries of the reset's settle fail.
        session
            .sim
            .inject_fault_at("aclrtSynchronizeStream", CODE, 2, 4);
        returned = pipeline.destroy();
        session.sim.clear_faults();
        model_calls = session.sim.call_count("aclmdlUnload");
    }
    let _ = errors.take();
    assert!(returned.is_err(), "the fault was hit: {returned:?}");
    assert_eq!(
        model_calls, 1,
        "the model's executions were proven done (both streams synchronised) before the \
         failure, yet it was never unloaded: returned {returned:?}"
    );
    child_ok();
}

/// Attack 3b/4b (BUG, E4): the wait scope's reset fails three times in a row (fewer than
/// `CLEANUP_TRIES`), through `wait_and_reset` / `try_wait_and_reset` and `wait` whose body
/// returns an error. After its own three tries the scope *destroys* the event, which was
/// waited on and never reset: the checker reports E4, the rule the crate exists to make
/// impossible. The pipeline, for the same situation, keeps trying (four tries) and then
/// leaks the event rather than destroy it unreset. Correct: no E4 finding, whatever the
/// number of failures (kept and counted after the last try, like a pipeline's event), and
/// every failure returned or reported exactly once.
#[test]
fn t10_wait_scope_destroys_a_waited_event_unreset_after_three_failed_resets() {
    if !in_child("t10_wait_scope_destroys_a_waited_event_unreset_after_three_failed_resets") {
        return;
    }
    let session = Session::start();
    let errors = DropErrors::capture();
    let device = session.acl().set_device(0).unwrap();
    let mut problems = Vec::new();
    type Op = fn(&ascend_typestate::Context<'_>) -> Result<(), Error>;
    let ops: &[(&str, Op)] = &[
        ("plain wait_and_reset", |ctx| {
            let (a, b) = (ctx.create_stream()?, ctx.create_stream()?);
            ctx.create_event()?
                .record(&a)?
                .wait_and_reset(&b)?
                .destroy()
        }),
        ("try_wait_and_reset", |ctx| {
            let (a, b) = (ctx.create_stream()?, ctx.create_stream()?);
            let e = ctx.create_event()?.record(&a)?;
            match e.try_wait_and_reset(&b) {
                Ok(e) => e.destroy(),
                Err(ascend_typestate::WaitError::Reset(f)) => {
                    let (error, e) = f.into_parts();
                    e.destroy()?;
                    Err(error)
                }
                Err(other) => Err(other.into()),
            }
        }),
        ("plain wait, body error", |ctx| {
            let (a, b) = (ctx.create_stream()?, ctx.create_stream()?);
            let e = ctx.create_event()?.record(&a)?;
            e.wait(&b, |_w| Err(Error::InvalidArgument("rt23 body error")))
                .map(drop)
        }),
    ];
    for (name, op) in ops {
        for times in 1u32..=5 {
            let ctx = device.create_context().unwrap();
            session.sim.clear_findings();
            session.sim.reset_call_counts();
            session.sim.inject_fault("aclrtResetEvent", CODE, times);
            let returned = op(&ctx).err().map(|e| e.to_string());
            let made = session.sim.call_count("aclrtResetEvent") as u32;
            session.sim.clear_faults();
            ctx.synchronize_device().unwrap();
            let failures = made.min(times);
            let reported = errors.take();
            let seen = reported
                .iter()
                .filter(|r| r.contains("aclrtResetEvent"))
                .count()
                + usize::from(
                    returned
                        .as_deref()
                        .is_some_and(|r| r.contains("aclrtResetEvent")),
                );
            let case = format!("{name}, aclrtResetEvent x{times}");
            if seen as u32 != failures {
                problems.push(format!(
                    "{case}: {failures} failures, {seen} returned or reported: \
                     returned {returned:?}, reported {reported:?}"
                ));
            }
            let findings = session.sim.findings();
            if !findings.is_empty() {
                problems.push(format!("{case}: {findings:?}"));
            }
            match ctx.try_destroy() {
                Ok(()) => {}
                Err(failed) => std::mem::forget(failed.value),
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    child_ok();
}

/// Attack 3c (BUG, E4): the crate's own join events (an event recorded again on another
/// stream than the one that reset it, E5). The join's reset fails three times (twice, then
/// once more after its stream is synchronised): the join is put on the context's list and
/// destroyed by the next synchronisation, waited on and never reset: E4. Correct: no E4
/// finding (a join that could not be reset is kept, as a pipeline keeps its event), every
/// failure reported or returned once.
#[test]
fn t11_join_event_destroyed_unreset_after_three_failed_resets() {
    if !in_child("t11_join_event_destroyed_unreset_after_three_failed_resets") {
        return;
    }
    let session = Session::start();
    let errors = DropErrors::capture();
    let device = session.acl().set_device(0).unwrap();
    let mut problems = Vec::new();
    for times in 1u32..=5 {
        let ctx = device.create_context().unwrap();
        session.sim.clear_findings();
        let returned;
        let made;
        {
            let (s1, s2) = (ctx.create_stream().unwrap(), ctx.create_stream().unwrap());
            let event = ctx.create_event().unwrap().record(&s1).unwrap();
            // Waited and reset by s2: the next record on s1 is joined after that reset.
            let event = event.wait_and_reset(&s2).unwrap();
            session.sim.reset_call_counts();
            session.sim.inject_fault("aclrtResetEvent", CODE, times);
            returned = event.record(&s1).err().map(|e| e.to_string());
            made = session.sim.call_count("aclrtResetEvent") as u32;
            session.sim.clear_faults();
            s1.synchronize().unwrap();
            s2.synchronize().unwrap();
            s1.destroy().unwrap();
            s2.destroy().unwrap();
        }
        ctx.synchronize_device().unwrap();
        let failures = made.min(times);
        let reported = errors.take();
        let seen = reported
            .iter()
            .filter(|r| r.contains("aclrtResetEvent"))
            .count()
            + usize::from(
                returned
                    .as_deref()
                    .is_some_and(|r| r.contains("aclrtResetEvent")),
            );
        if seen as u32 != failures {
            problems.push(format!(
                "x{times}: {failures} failures, {seen} returned or reported: \
                 returned {returned:?}, reported {reported:?}"
            ));
        }
        let destroyed = ctx.try_destroy();
        let findings = session.sim.findings();
        if !findings.is_empty() {
            problems.push(format!("x{times}: {findings:?}"));
        }
        if let Err(failed) = destroyed {
            std::mem::forget(failed.value);
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    child_ok();
}

/// Attack 4c (liveness): `destroy_force` exists for streams that must not be waited for
/// (S8: "error paths that must not hang on a stuck stream"). Its try form gives the stream
/// back on failure; its plain form must not hand it to `Drop`, whose fallback is the
/// *waiting* release (synchronise, then destroy): after one failed
/// `aclrtDestroyStreamForce` it forces again. Checked by the calls made, not by time: the
/// simulator's forced destroy itself waits for a kernel already running (it cannot stop a
/// CPU thread mid-task), so how long the call takes depends on whether the kernel (200 ms
/// here) had started, which is scheduling, not the crate's choice.
#[test]
fn t13_plain_destroy_force_falls_back_to_a_waiting_destroy() {
    if !in_child("t13_plain_destroy_force_falls_back_to_a_waiting_destroy") {
        return;
    }
    let session = Session::start();
    let errors = DropErrors::capture();
    let device = session.acl().set_device(0).unwrap();
    let ctx = device.create_context().unwrap();
    let mut problems = Vec::new();
    for host_functions in [false, true] {
        let stream = ctx.create_stream().unwrap();
        session.sim.sleep_kernel(stream.as_raw(), 200_000);
        session.sim.reset_call_counts();
        session.sim.inject_fault("aclrtDestroyStreamForce", CODE, 1);
        let returned = if host_functions {
            stream.with_host_functions().destroy_force()
        } else {
            stream.destroy_force()
        };
        session.sim.clear_faults();
        let calls: Vec<u64> = [
            "aclrtDestroyStreamForce",
            "aclrtSynchronizeStream",
            "aclrtDestroyStream",
        ]
        .iter()
        .map(|call| session.sim.call_count(call))
        .collect();
        if calls != [2, 0, 0] {
            problems.push(format!(
                "host functions {host_functions}: calls (force, synchronize, destroy) {calls:?}, \
                 want [2, 0, 0]: the fallback must force again, never wait (returned {returned:?})"
            ));
        }
        if !matches!(returned, Err(ascend_typestate::Error::Runtime { .. })) {
            problems.push(format!(
                "host functions {host_functions}: the first failure is returned, not {returned:?}"
            ));
        }
    }
    let _ = errors.take();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    child_ok();
}
