/*
 * C test programs for the simulator (sim/tests/sim.rs compiles this file with the system C
 * compiler against include/ascendcl.h + sim/include/aclsim.h, links it to the built
 * libascendcl.so and runs one case per process: `harness <case>`).
 *
 * A case exits 0 on success; on failure it prints what went wrong and exits 1.
 * Cases are named after the protocol rule they exercise (docs/protocol.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "aclsim.h"

#define CHECK(expr, expected)                                                                \
    do {                                                                                     \
        int r_ = (int)(expr);                                                                \
        if (r_ != (int)(expected)) {                                                         \
            fprintf(stderr, "%s:%d: %s returned %d, expected %d\n", __FILE__, __LINE__,      \
                    #expr, r_, (int)(expected));                                             \
            dump_findings();                                                                 \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)
#define OK(expr) CHECK(expr, ACL_SUCCESS)
#define ASSERT(cond)                                                                         \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__, __LINE__, #cond);    \
            dump_findings();                                                                 \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

static void dump_findings(void) {
    size_t n = aclsimFindingCount();
    for (size_t i = 0; i < n; i++) {
        char rule[8], msg[1024];
        if (aclsimGetFinding(i, rule, sizeof rule, msg, sizeof msg) == 0)
            fprintf(stderr, "  finding %zu: [%s] %s\n", i, rule, msg);
    }
}

static int count_rule(const char *rule) {
    int c = 0;
    size_t n = aclsimFindingCount();
    for (size_t i = 0; i < n; i++) {
        char r[8], msg[16];
        if (aclsimGetFinding(i, r, sizeof r, msg, sizeof msg) == 0 && strcmp(r, rule) == 0) c++;
    }
    return c;
}

/* Exactly the findings of `rule` (n >= 1 if n < 0 means "at least one") and none other. */
static void expect_only(const char *rule, int n) {
    int c = count_rule(rule);
    int total = (int)aclsimFindingCount();
    if ((n >= 0 && c != n) || (n < 0 && c < 1) || c != total) {
        fprintf(stderr, "expected %d finding(s) of rule %s (and no other), got %d of %d:\n", n,
                rule, c, total);
        dump_findings();
        exit(1);
    }
}

static void expect_clean(void) {
    if (aclsimFindingCount() != 0) {
        fprintf(stderr, "expected no finding, got %zu:\n", aclsimFindingCount());
        dump_findings();
        exit(1);
    }
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void sleep_ms(int ms) { usleep((useconds_t)ms * 1000); }

/* A kernel body writing `*(int*)userData` into the first int of buffer 0. */
static void k_store(void *ud, void *const *bufs, size_t n) {
    if (n > 0) *(int *)bufs[0] = *(int *)ud;
}

static void setup(void) {
    OK(aclInit(NULL));
    OK(aclrtSetDevice(0));
}

static void teardown_clean(void) {
    OK(aclrtResetDevice(0));
    ASSERT(aclsimLiveObjectCount() == 0);
    OK(aclFinalize());
    expect_clean();
}

/* ---- Seed 000: the four samples (with the protocol's required additions) ------------- */

/* Event sample: create, record, synchronize, destroy (E2; no reset needed). */
static void seed000_event_sync(void) {
    setup();
    aclrtEvent ev;
    aclrtStream s;
    OK(aclrtCreateEvent(&ev));
    OK(aclrtCreateStream(&s));
    OK(aclrtRecordEvent(ev, s));
    OK(aclrtSynchronizeEvent(ev));
    aclrtEventRecordedStatus st = 0;
    OK(aclrtQueryEventStatus(ev, &st));
    ASSERT(st == ACL_EVENT_RECORDED_STATUS_COMPLETE);
    OK(aclrtDestroyStream(s));
    OK(aclrtDestroyEvent(ev));
    teardown_clean();
}

/* Stream sample: memcpy_async then synchronize_stream (S2, M1). */
static void seed000_stream_sync_memcpy(void) {
    setup();
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    size_t n = 4096;
    unsigned char *host = malloc(n), *back = NULL;
    for (size_t i = 0; i < n; i++) host[i] = (unsigned char)(i * 7);
    void *dev;
    OK(aclrtMalloc(&dev, n, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclrtMallocHost((void **)&back, n));
    OK(aclrtMemcpyAsync(dev, n, host, n, ACL_MEMCPY_HOST_TO_DEVICE, s));
    OK(aclrtMemcpyAsync(back, n, dev, n, ACL_MEMCPY_DEVICE_TO_HOST, s));
    OK(aclrtSynchronizeStream(s));
    ASSERT(memcmp(host, back, n) == 0);
    OK(aclrtDestroyStream(s));
    OK(aclrtFree(dev));
    OK(aclrtFreeHost(back));
    free(host);
    teardown_clean();
}

/* Stream-to-stream sample: s2 waits for s1's event (E3). A plain event (aclrtCreateEvent)
 * is not reset (E4 applies to ACL_EVENT_SYNC events only). The data proves the order: s1's
 * kernel writes 42 after 30 ms, s2 copies it back. */
static void seed000_stream_to_stream_wait(void) {
    setup();
    aclrtEvent ev;
    aclrtStream s1, s2;
    OK(aclrtCreateEvent(&ev));
    OK(aclrtCreateStream(&s1));
    OK(aclrtCreateStream(&s2));
    int *dev;
    OK(aclrtMalloc((void **)&dev, sizeof(int), ACL_MEM_MALLOC_HUGE_FIRST));
    int val = 42, out = 0;
    void *bufs[1] = {dev};
    OK(aclsimLaunchKernel(s1, 30000, k_store, &val, bufs, 1));
    OK(aclrtRecordEvent(ev, s1));
    OK(aclrtStreamWaitEvent(s2, ev));
    OK(aclrtMemcpyAsync(&out, sizeof out, dev, sizeof out, ACL_MEMCPY_DEVICE_TO_HOST, s2));
    OK(aclrtSynchronizeStream(s2));
    ASSERT(out == 42);
    OK(aclrtSynchronizeStream(s1));
    OK(aclrtDestroyStream(s2));
    OK(aclrtDestroyStream(s1));
    OK(aclrtDestroyEvent(ev));
    OK(aclrtFree(dev));
    teardown_clean();
}

/* The stream-to-stream sample verbatim (plain event: record, wait, destroy; no reset, no
 * synchronize): no finding. A plain event is not reset (E4 applies to ACL_EVENT_SYNC
 * events), and aclrtDestroyStream waits for the pending tasks (S4). */
static void seed000_stream_to_stream_verbatim_is_clean(void) {
    setup();
    aclrtEvent ev;
    aclrtStream s1, s2;
    OK(aclrtCreateEvent(&ev));
    OK(aclrtCreateStream(&s1));
    OK(aclrtCreateStream(&s2));
    OK(aclrtRecordEvent(ev, s1));
    OK(aclrtStreamWaitEvent(s2, ev));
    OK(aclrtDestroyStream(s2));
    OK(aclrtDestroyStream(s1));
    OK(aclrtDestroyEvent(ev));
    OK(aclrtResetDevice(0));
    OK(aclFinalize());
    expect_clean();
}

/* The runtime's own cross-stream example: a plain event is created, recorded after work on
 * s1, waited for by s2 (whose work depends on it), and destroyed; never reset. No finding. */
static void e4_runtime_cross_stream_example_plain_event_is_clean(void) {
    setup();
    aclrtStream s1, s2;
    aclrtEvent ev;
    OK(aclrtCreateStream(&s1));
    OK(aclrtCreateStream(&s2));
    OK(aclrtCreateEvent(&ev));
    int *dev, val = 7, out = 0;
    OK(aclrtMalloc((void **)&dev, sizeof(int), ACL_MEM_MALLOC_HUGE_FIRST));
    void *bufs[1] = {dev};
    OK(aclsimLaunchKernel(s1, 20000, k_store, &val, bufs, 1));
    OK(aclrtRecordEvent(ev, s1));
    OK(aclrtStreamWaitEvent(s2, ev));
    OK(aclrtMemcpyAsync(&out, sizeof out, dev, sizeof out, ACL_MEMCPY_DEVICE_TO_HOST, s2));
    OK(aclrtSynchronizeStream(s1));
    OK(aclrtSynchronizeStream(s2));
    ASSERT(out == 7);
    OK(aclrtDestroyEvent(ev));
    OK(aclrtDestroyStream(s1));
    OK(aclrtDestroyStream(s2));
    OK(aclrtFree(dev));
    teardown_clean();
}

/* E4 (current CANN): a plain event must not be reset; the reset is the finding (and is
 * ignored), waiting without one is not. */
static void e4_reset_of_plain_event_is_flagged(void) {
    setup();
    aclrtEvent e;
    aclrtStream s1, s2;
    OK(aclrtCreateEvent(&e));
    OK(aclrtCreateStream(&s1));
    OK(aclrtCreateStream(&s2));
    OK(aclrtRecordEvent(e, s1));
    OK(aclrtStreamWaitEvent(s2, e));
    OK(aclrtResetEvent(e, s2));
    expect_only("E4", 1);
    OK(aclrtSynchronizeStream(s2));
    OK(aclrtDestroyEvent(e));
    OK(aclrtDestroyStream(s1));
    OK(aclrtDestroyStream(s2));
    OK(aclrtResetDevice(0));
    OK(aclFinalize());
    expect_only("E4", 1);
}

/* E3 on a plain event re-recorded without reset: each wait waits for the record issued
 * before it (not for a flag left set by an earlier record). */
static void e3_plain_event_wait_waits_for_the_latest_record(void) {
    setup();
    aclrtEvent e;
    aclrtStream s1, s2;
    OK(aclrtCreateEvent(&e));
    OK(aclrtCreateStream(&s1));
    OK(aclrtCreateStream(&s2));
    int *dev;
    OK(aclrtMalloc((void **)&dev, sizeof(int), ACL_MEM_MALLOC_HUGE_FIRST));
    void *bufs[1] = {dev};
    int vals[3] = {1, 2, 3}, out[3] = {0, 0, 0};
    aclrtEvent back;
    OK(aclrtCreateEvent(&back));
    for (int i = 0; i < 3; i++) {
        OK(aclsimLaunchKernel(s1, 20000, k_store, &vals[i], bufs, 1));
        OK(aclrtRecordEvent(e, s1));
        OK(aclrtStreamWaitEvent(s2, e));
        OK(aclrtMemcpyAsync(&out[i], sizeof(int), dev, sizeof(int), ACL_MEMCPY_DEVICE_TO_HOST, s2));
        /* s1 must not overwrite the value before s2 has read it. */
        OK(aclrtRecordEvent(back, s2));
        OK(aclrtStreamWaitEvent(s1, back));
    }
    OK(aclrtSynchronizeStream(s1));
    OK(aclrtSynchronizeStream(s2));
    ASSERT(out[0] == 1 && out[1] == 2 && out[2] == 3);
    OK(aclrtDestroyEvent(back));
    OK(aclrtDestroyEvent(e));
    OK(aclrtDestroyStream(s1));
    OK(aclrtDestroyStream(s2));
    OK(aclrtFree(dev));
    teardown_clean();
}

/* Device sample: set device, create context, create stream, synchronize device (D4). The
 * sample never destroys its stream; D3 requires it before the context. */
static void seed000_device_sync(void) {
    OK(aclInit(NULL));
    OK(aclrtSetDevice(0));
    aclrtContext ctx;
    OK(aclrtCreateContext(&ctx, 0));
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    int *dev;
    OK(aclrtMalloc((void **)&dev, sizeof(int), ACL_MEM_MALLOC_HUGE_FIRST));
    int val = 7;
    void *bufs[1] = {dev};
    OK(aclsimLaunchKernel(s, 30000, k_store, &val, bufs, 1));
    OK(aclsimLaunchKernel(NULL, 10000, NULL, NULL, NULL, 0)); /* default stream too */
    OK(aclrtSynchronizeDevice());
    ASSERT(*dev == 7); /* the simulator's device memory is host memory */
    OK(aclrtSynchronizeStream(s));
    OK(aclrtDestroyStream(s));
    OK(aclrtFree(dev));
    OK(aclrtDestroyContext(ctx));
    teardown_clean();
}

/* ---- Seed 001: the callback flow (C1) ------------------------------------------------ */

/* The stop flag of the report loops, behind a mutex (no bare atomics: helgrind runs these). */
static pthread_mutex_t cb_stop_m = PTHREAD_MUTEX_INITIALIZER;
static int cb_stop_flag;
static int cb_stopped(void) {
    pthread_mutex_lock(&cb_stop_m);
    int v = cb_stop_flag;
    pthread_mutex_unlock(&cb_stop_m);
    return v;
}
static void cb_set_stop(int v) {
    pthread_mutex_lock(&cb_stop_m);
    cb_stop_flag = v;
    pthread_mutex_unlock(&cb_stop_m);
}
static pthread_t cb_seen_thread;
static int cb_seen_value;

static void *report_loop(void *ctx) {
    OK(aclrtSetCurrentContext((aclrtContext)ctx));
    while (!cb_stopped()) {
        int r = aclrtProcessReport(20);
        if (r == ACL_ERROR_RT_THREAD_SUBSCRIBE) { /* not (or no longer) subscribed (C6) */
            sleep_ms(1);
            continue;
        }
        if (r != 0 && r != ACL_ERROR_RT_REPORT_TIMEOUT) {
            fprintf(stderr, "aclrtProcessReport: %d\n", r);
            exit(1);
        }
    }
    return NULL;
}

static void cb_record(void *ud) {
    cb_seen_thread = pthread_self();
    cb_seen_value = *(int *)ud;
}

static void seed001_callback_flow(void) {
    setup();
    aclrtContext ctx;
    OK(aclrtGetCurrentContext(&ctx));
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    pthread_t th;
    cb_set_stop(0);
    pthread_create(&th, NULL, report_loop, ctx);                /* (1) */
    OK(aclrtSubscribeReport((uint64_t)th, s));                  /* (2) */
    int host[256], *dev;
    for (int i = 0; i < 256; i++) host[i] = i;
    OK(aclrtMalloc((void **)&dev, sizeof host, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclrtMemcpyAsync(dev, sizeof host, host, sizeof host, ACL_MEMCPY_HOST_TO_DEVICE, s)); /* (3) */
    OK(aclrtLaunchCallback(cb_record, dev + 255, ACL_CALLBACK_BLOCK, s));                     /* (4) */
    OK(aclrtSynchronizeStream(s));
    ASSERT(pthread_equal(cb_seen_thread, th));
    ASSERT(cb_seen_value == 255);
    OK(aclrtUnSubscribeReport((uint64_t)th, s));                /* (5) */
    cb_set_stop(1);
    pthread_join(th, NULL);
    OK(aclrtDestroyStream(s));
    OK(aclrtFree(dev));
    teardown_clean();
}

/* ---- P: process ---------------------------------------------------------------------- */

static void p1_calls_before_init_return_100001(void) {
    aclrtStream s;
    CHECK(aclrtSetDevice(0), ACL_ERROR_UNINITIALIZE);
    CHECK(aclrtCreateStream(&s), ACL_ERROR_UNINITIALIZE);
    CHECK(aclrtSynchronizeDevice(), ACL_ERROR_UNINITIALIZE);
    CHECK(aclrtProcessReport(-1), ACL_ERROR_UNINITIALIZE);
    CHECK(aclFinalize(), ACL_ERROR_UNINITIALIZE);
    expect_clean();
}

/* Current CANN: NULL handles and NULL pointers are rejected with 100000 before any other
 * check (before P1, C8 and injected failures too). */
static void p1_null_handles_and_pointers_return_100000_first(void) {
    CHECK(aclrtFree(NULL), ACL_ERROR_INVALID_PARAM); /* before aclInit too */
    CHECK(aclrtDestroyStream(NULL), ACL_ERROR_INVALID_PARAM);
    setup();
    aclrtStream s;
    aclrtEvent e;
    aclrtContext c;
    OK(aclrtCreateStream(&s));
    OK(aclrtCreateEventWithFlag(&e, ACL_EVENT_SYNC));
    OK(aclsimInjectFault("aclrtFreeHost", 507000, 1));
    CHECK(aclrtFreeHost(NULL), ACL_ERROR_INVALID_PARAM); /* the fault stays armed */
    void *h;
    OK(aclrtMallocHost(&h, 16));
    CHECK(aclrtFreeHost(h), 507000);
    OK(aclrtFreeHost(h));
    CHECK(aclrtFree(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtMalloc(NULL, 16, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtMallocHost(NULL, 16), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtDestroyStream(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtCreateStream(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtCreateEvent(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtCreateEventWithFlag(NULL, ACL_EVENT_SYNC), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtDestroyEvent(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtRecordEvent(NULL, s), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtResetEvent(NULL, s), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtStreamWaitEvent(s, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtSynchronizeEvent(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtSynchronizeEventWithTimeout(NULL, 10), ACL_ERROR_INVALID_PARAM);
    aclrtEventRecordedStatus st;
    CHECK(aclrtQueryEventStatus(NULL, &st), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtQueryEventStatus(e, NULL), ACL_ERROR_INVALID_PARAM);
    float ms;
    CHECK(aclrtEventElapsedTime(NULL, e, e), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtEventElapsedTime(&ms, NULL, e), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtEventElapsedTime(&ms, e, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtCreateContext(NULL, 0), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtCreateContext(NULL, 99), ACL_ERROR_INVALID_PARAM); /* before the device id */
    CHECK(aclrtDestroyContext(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtSetCurrentContext(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtGetCurrentContext(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtGetDevice(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtGetDeviceCount(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtGetRunMode(NULL), ACL_ERROR_INVALID_PARAM);
    /* The runtime still works, and nothing was flagged. */
    OK(aclrtGetCurrentContext(&c));
    OK(aclrtDestroyEvent(e));
    OK(aclrtDestroyStream(s));
    teardown_clean();
}

static void p2_repeat_init_and_finalize_codes(void) {
    OK(aclInit(NULL));
    CHECK(aclInit(NULL), ACL_ERROR_REPEAT_INITIALIZE);
    CHECK(aclsimSetDeviceCount(4), ACL_ERROR_REPEAT_INITIALIZE);
    OK(aclFinalize());
    CHECK(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
    CHECK(aclrtSetDevice(0), ACL_ERROR_UNINITIALIZE);
    /* aclInit again after aclFinalize: documented behaviour of current CANN (P2). */
    OK(aclInit(NULL));
    OK(aclrtSetDevice(0));
    OK(aclrtResetDevice(0));
    OK(aclFinalize());
    expect_clean();
}

static void p2_live_resources_at_finalize_are_one_leak_report(void) {
    setup();
    aclrtStream s;
    aclrtEvent e;
    void *d, *h;
    OK(aclrtCreateStream(&s));
    OK(aclrtCreateEvent(&e));
    OK(aclrtMalloc(&d, 1 << 20, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclrtMallocHost(&h, 64));
    ASSERT(aclsimLiveObjectCount() == 4);
    OK(aclFinalize());
    expect_only("P2", 1);
    ASSERT(aclsimLiveObjectCount() == 0);
    /* The next init starts clean; findings survive until cleared. */
    OK(aclInit(NULL));
    ASSERT(aclsimLiveObjectCount() == 0);
    ASSERT(aclsimFindingCount() == 1);
    aclsimClearFindings();
    OK(aclFinalize());
    expect_clean();
}

static void p3_wait_timeout_reported_by_synchronize_stream(void) {
    setup();
    OK(aclrtSetOpWaitTimeout(1));
    aclrtEvent e;
    aclrtStream s;
    OK(aclrtCreateEventWithFlag(&e, ACL_EVENT_SYNC));
    OK(aclrtCreateStream(&s));
    OK(aclrtStreamWaitEvent(s, e)); /* never recorded: times out after 1 s */
    OK(aclrtResetEvent(e, s));
    double t0 = now_ms();
    CHECK(aclrtSynchronizeStream(s), ACL_ERROR_RT_WAIT_TIMEOUT);
    ASSERT(now_ms() - t0 >= 900);
    OK(aclrtSynchronizeStream(s)); /* the error was reported once and cleared */
    OK(aclrtDestroyStream(s));
    OK(aclrtDestroyEvent(e));
    teardown_clean();
}

/* Run with ACLSIM_OP_WAIT_TIMEOUT=1: aclInit starts with a 1 s op wait timeout (P3), so a
 * wait that is released only after 1.3 s times out (107019 at the next synchronisation);
 * aclrtSetOpWaitTimeout(0) disarms it for the waits issued afterwards. */
static void p3_op_wait_timeout_from_env(void) {
    setup();
    aclrtStream s1, s2;
    OK(aclrtCreateStream(&s1));
    OK(aclrtCreateStream(&s2));
    for (int round = 0; round < 2; round++) {
        if (round == 1) OK(aclrtSetOpWaitTimeout(0)); /* disarmed: the same wait succeeds */
        aclrtEvent e;
        OK(aclrtCreateEventWithFlag(&e, ACL_EVENT_SYNC));
        OK(aclrtStreamWaitEvent(s1, e)); /* released by the record below, 1.3 s later */
        OK(aclrtResetEvent(e, s1));
        sleep_ms(1300);
        OK(aclrtRecordEvent(e, s2));
        OK(aclrtSynchronizeStream(s2));
        CHECK(aclrtSynchronizeStream(s1), round == 0 ? ACL_ERROR_RT_WAIT_TIMEOUT : ACL_SUCCESS);
        OK(aclrtSynchronizeStream(s1));
        OK(aclrtDestroyEvent(e));
    }
    OK(aclrtDestroyStream(s1));
    OK(aclrtDestroyStream(s2));
    teardown_clean();
}

/* ---- D: device and context ----------------------------------------------------------- */

static void d1_invalid_device_id_returns_107001(void) {
    OK(aclsimSetDeviceCount(3));
    OK(aclInit(NULL));
    uint32_t n = 0;
    OK(aclrtGetDeviceCount(&n));
    ASSERT(n == 3);
    CHECK(aclrtSetDevice(3), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK(aclrtSetDevice(-1), ACL_ERROR_RT_INVALID_DEVICEID);
    aclrtContext c;
    CHECK(aclrtCreateContext(&c, 7), ACL_ERROR_RT_INVALID_DEVICEID);
    OK(aclFinalize());
    expect_clean();
}

static void d1_d5_set_reset_are_reference_counted(void) {
    OK(aclInit(NULL));
    CHECK(aclrtResetDevice(1), ACL_ERROR_RT_CONTEXT_RELEASE_ERROR); /* never set */
    OK(aclrtSetDevice(1));
    OK(aclrtSetDevice(1));
    int32_t d = -1;
    OK(aclrtGetDevice(&d));
    ASSERT(d == 1);
    OK(aclrtResetDevice(1));
    OK(aclrtResetDevice(1));
    CHECK(aclrtResetDevice(1), ACL_ERROR_RT_CONTEXT_RELEASE_ERROR); /* already reset */
    OK(aclFinalize());
    expect_clean();
}

/* Current CANN documents creating a context on a device that was not set as supported:
 * no finding, and the context is usable. */
static void d1_create_context_on_unset_device_is_supported(void) {
    OK(aclInit(NULL));
    aclrtContext c;
    OK(aclrtCreateContext(&c, 1));
    int32_t d = -1;
    OK(aclrtGetDevice(&d));
    ASSERT(d == 1);
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    OK(aclsimLaunchKernel(s, 1000, NULL, NULL, NULL, 0));
    OK(aclrtSynchronizeStream(s));
    OK(aclrtDestroyStream(s));
    OK(aclrtDestroyContext(c));
    CHECK(aclrtResetDevice(1), ACL_ERROR_RT_CONTEXT_RELEASE_ERROR); /* still never set (D5) */
    ASSERT(aclsimLiveObjectCount() == 0);
    OK(aclFinalize());
    expect_clean();
}

static void *no_context_thread(void *arg) {
    (void)arg;
    aclrtStream s;
    aclrtEvent e;
    aclrtContext c;
    CHECK(aclrtCreateStream(&s), ACL_ERROR_RT_CONTEXT_NULL);
    CHECK(aclrtCreateEvent(&e), ACL_ERROR_RT_CONTEXT_NULL);
    CHECK(aclrtGetCurrentContext(&c), ACL_ERROR_RT_CONTEXT_NULL);
    CHECK(aclrtSynchronizeStream(NULL), ACL_ERROR_RT_CONTEXT_NULL);
    return NULL;
}

static void d2_d6_current_context_is_per_thread(void) {
    OK(aclInit(NULL));
    aclrtStream s;
    CHECK(aclrtCreateStream(&s), ACL_ERROR_RT_CONTEXT_NULL); /* no device set yet */
    OK(aclrtSetDevice(0));
    aclrtContext dflt, c;
    OK(aclrtGetCurrentContext(&dflt));
    OK(aclrtCreateContext(&c, 0)); /* D2: becomes current */
    aclrtContext cur;
    OK(aclrtGetCurrentContext(&cur));
    ASSERT(cur == c && cur != dflt);
    pthread_t th;
    pthread_create(&th, NULL, no_context_thread, NULL);
    pthread_join(th, NULL);
    OK(aclrtSetCurrentContext(dflt)); /* D6 */
    OK(aclrtGetCurrentContext(&cur));
    ASSERT(cur == dflt);
    OK(aclrtDestroyContext(c));
    teardown_clean();
}

static void d3_destroy_context_with_live_stream_and_event_is_flagged(void) {
    setup();
    aclrtContext c;
    OK(aclrtCreateContext(&c, 0));
    aclrtStream s;
    aclrtEvent e;
    OK(aclrtCreateStream(&s));
    OK(aclrtCreateEvent(&e));
    OK(aclrtDestroyContext(c));
    expect_only("D3", 1);
    CHECK(aclrtDestroyStream(s), ACL_ERROR_RT_PARAM_INVALID); /* already released */
    ASSERT(aclsimLiveObjectCount() == 0);
    OK(aclrtResetDevice(0));
    OK(aclFinalize());
    expect_only("D3", 1);
}

static void d3_reset_device_with_live_resources_is_flagged(void) {
    setup();
    aclrtContext c;
    OK(aclrtCreateContext(&c, 0));
    aclrtStream s;
    void *d;
    OK(aclrtCreateStream(&s));
    OK(aclrtMalloc(&d, 100, ACL_MEM_MALLOC_NORMAL_ONLY));
    OK(aclrtResetDevice(0));
    expect_only("D3", 1);
    ASSERT(aclsimLiveObjectCount() == 0);
    OK(aclFinalize());
    expect_only("D3", 1);
}

static void d5_destroy_default_context_returns_107002(void) {
    setup();
    aclrtContext dflt;
    OK(aclrtGetCurrentContext(&dflt));
    CHECK(aclrtDestroyContext(dflt), ACL_ERROR_RT_CONTEXT_NULL);
    CHECK(aclrtDestroyContext((aclrtContext)0x1234), ACL_ERROR_RT_PARAM_INVALID);
    teardown_clean();
}

static void d6_stream_outside_current_context_returns_107003(void) {
    setup();
    aclrtContext a, b;
    OK(aclrtCreateContext(&a, 0));
    aclrtStream sa;
    aclrtEvent e;
    OK(aclrtCreateStream(&sa));
    OK(aclrtCreateEvent(&e));
    OK(aclrtCreateContext(&b, 0)); /* b is current now */
    CHECK(aclrtRecordEvent(e, sa), ACL_ERROR_RT_STREAM_CONTEXT);
    CHECK(aclrtStreamWaitEvent(sa, e), ACL_ERROR_RT_STREAM_CONTEXT);
    CHECK(aclrtResetEvent(e, sa), ACL_ERROR_RT_STREAM_CONTEXT);
    CHECK(aclrtDestroyStream(sa), ACL_ERROR_RT_STREAM_CONTEXT);
    CHECK(aclrtLaunchCallback(cb_record, NULL, ACL_CALLBACK_BLOCK, sa), ACL_ERROR_RT_STREAM_CONTEXT);
    OK(aclrtSetCurrentContext(a));
    OK(aclrtDestroyStream(sa));
    OK(aclrtDestroyEvent(e));
    OK(aclrtDestroyContext(a));
    OK(aclrtDestroyContext(b));
    teardown_clean();
}

static void d_run_mode_and_handles(void) {
    OK(aclInit(NULL));
    aclrtRunMode m = 7;
    OK(aclrtGetRunMode(&m));
    const char *env = getenv("ACLSIM_RUN_MODE");
    ASSERT(m == ((env && strcmp(env, "device") == 0) ? ACL_DEVICE : ACL_HOST));
    OK(aclrtSetDevice(0));
    /* A garbage handle is never dereferenced: 107000. */
    CHECK(aclrtSynchronizeStream((aclrtStream)0xdeadbeef), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(aclrtDestroyEvent((aclrtEvent)0x10), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(aclrtGetDevice(NULL), ACL_ERROR_INVALID_PARAM);
    teardown_clean();
}

static void aclsim_extension_api_contract(void) {
    ASSERT(aclsimApiVersion() == ACLSIM_API_VERSION);
    CHECK(aclsimSetDeviceCount(0), ACL_ERROR_INVALID_PARAM);
    CHECK(aclsimSetDeviceCount(65), ACL_ERROR_INVALID_PARAM);
    char rule[8], msg[64];
    CHECK(aclsimGetFinding(0, rule, sizeof rule, msg, sizeof msg), ACL_ERROR_INVALID_PARAM);
    ASSERT(aclsimLiveObjectCount() == 0);
    setup();
    aclrtContext c;
    OK(aclrtCreateContext(&c, 1)); /* supported: no finding */
    CHECK(aclrtMemsetAsync(NULL, 4, 0, 4, NULL), ACL_ERROR_INVALID_PARAM); /* M1 finding */
    CHECK(aclsimGetFinding(0, NULL, 8, msg, sizeof msg), ACL_ERROR_INVALID_PARAM);
    OK(aclsimGetFinding(0, rule, sizeof rule, msg, 10)); /* truncated message */
    ASSERT(strcmp(rule, "M1") == 0 && strlen(msg) == 9);
    OK(aclsimGetFinding(0, NULL, 0, NULL, 0));
    ASSERT(aclsimLiveObjectCount() == 1);
    CHECK(aclsimLaunchKernel(NULL, 0, NULL, NULL, (void *const *)&c, 1), ACL_ERROR_INVALID_PARAM); /* M1 */
    ASSERT(count_rule("M1") == 2);
    aclsimClearFindings();
    OK(aclrtDestroyContext(c));
    OK(aclrtSetCurrentContext(NULL) == ACL_ERROR_INVALID_PARAM ? 0 : 1);
    teardown_clean();
}

static void aclsim_fault_injection(void) {
    CHECK(aclsimInjectFault("aclrtResetEvent", 507000, 1), ACL_ERROR_UNINITIALIZE);
    /* Argument errors come first, before aclInit too (aclsim.h). */
    CHECK(aclsimInjectFault("noSuchFunction", 507000, 1), ACL_ERROR_INVALID_PARAM);
    CHECK(aclsimInjectFault("aclrtResetEvent", 0, 1), ACL_ERROR_INVALID_PARAM);
    /* Every other runtime call before aclInit: 100001 (P1), aclsimLaunchKernel included. */
    CHECK(aclsimLaunchKernel(NULL, 0, NULL, NULL, NULL, 0), ACL_ERROR_UNINITIALIZE);
    aclsimClearFaults(); /* nothing armed, nothing to do */
    setup();
    CHECK(aclsimInjectFault(NULL, 507000, 1), ACL_ERROR_INVALID_PARAM);
    CHECK(aclsimInjectFault("aclrtResetEvent", 0, 1), ACL_ERROR_INVALID_PARAM);
    CHECK(aclsimInjectFault("aclrtResetEvent", 507000, 0), ACL_ERROR_INVALID_PARAM);
    aclrtStream s;
    aclrtEvent e;
    OK(aclrtCreateStream(&s));
    OK(aclrtCreateEventWithFlag(&e, ACL_EVENT_SYNC));
    OK(aclrtRecordEvent(e, s));
    OK(aclrtStreamWaitEvent(s, e));
    /* Twice: the next two resets fail without effect, the third is real. */
    OK(aclsimInjectFault("aclrtResetEvent", 507000, 2));
    CHECK(aclrtResetEvent(e, s), 507000);
    CHECK(aclrtResetEvent(e, s), 507000);
    OK(aclrtResetEvent(e, s));
    /* Disarmed by aclsimClearFaults. */
    OK(aclsimInjectFault("aclrtSynchronizeStream", 107019, 5));
    CHECK(aclrtSynchronizeStream(s), 107019);
    aclsimClearFaults();
    OK(aclrtSynchronizeStream(s));
    OK(aclrtDestroyEvent(e));
    OK(aclrtDestroyStream(s));
    /* Disarmed by aclFinalize. */
    OK(aclsimInjectFault("aclrtCreateStream", 107000, 1));
    teardown_clean();
    setup();
    OK(aclrtCreateStream(&s));
    OK(aclrtDestroyStream(s));
    teardown_clean();
}

/* aclsimInjectFaultAt: the calls after the next `skip` fail `times` times; several faults on
 * one function each count every call; the fault check comes before argument checks;
 * aclFinalize and aclsimLaunchKernel can fail too. */
static void aclsim_fault_injection_at(void) {
    CHECK(aclsimInjectFaultAt("aclrtCreateStream", 507000, 1, 1), ACL_ERROR_UNINITIALIZE);
    setup();
    CHECK(aclsimInjectFaultAt(NULL, 507000, 0, 1), ACL_ERROR_INVALID_PARAM);
    CHECK(aclsimInjectFaultAt("aclrtCreateStream", 0, 0, 1), ACL_ERROR_INVALID_PARAM);
    CHECK(aclsimInjectFaultAt("aclrtCreateStream", 507000, 3, 0), ACL_ERROR_INVALID_PARAM);
    CHECK(aclsimInjectFaultAt("\xff\xfe", 507000, 0, 1), ACL_ERROR_INVALID_PARAM);
    /* A name that can never fire: no exported runtime function, or aclInit. */
    CHECK(aclsimInjectFaultAt("noSuchFunction", 507000, 0, 1), ACL_ERROR_INVALID_PARAM);
    CHECK(aclsimInjectFault("noSuchFunction", 507000, 1), ACL_ERROR_INVALID_PARAM);
    CHECK(aclsimInjectFault("aclInit", 507000, 1), ACL_ERROR_INVALID_PARAM);
    CHECK(aclsimInjectFault("aclsimFindingCount", 507000, 1), ACL_ERROR_INVALID_PARAM);
    CHECK(aclsimInjectFault("", 507000, 1), ACL_ERROR_INVALID_PARAM);
    CHECK(aclsimInjectFault("aclrtcreatestream", 507000, 1), ACL_ERROR_INVALID_PARAM);
    /* skip = 2, times = 2: calls 3 and 4 fail, without effect. */
    aclrtStream s[3];
    OK(aclsimInjectFaultAt("aclrtCreateStream", 507000, 2, 2));
    OK(aclrtCreateStream(&s[0]));
    OK(aclrtCreateStream(&s[1]));
    CHECK(aclrtCreateStream(&s[2]), 507000);
    CHECK(aclrtCreateStream(&s[2]), 507000);
    ASSERT(aclsimLiveObjectCount() == 2);
    OK(aclrtCreateStream(&s[2]));
    /* Two faults on one function: A (skip 1, once) and B (skip 0, twice). Call 1: B (A
     * skips it); call 2: A and B are both due, A was armed first; call 3: B; call 4 runs. */
    OK(aclsimInjectFaultAt("aclrtSynchronizeStream", 107019, 1, 1));
    OK(aclsimInjectFaultAt("aclrtSynchronizeStream", 507000, 0, 2));
    CHECK(aclrtSynchronizeStream(s[0]), 507000);
    CHECK(aclrtSynchronizeStream(s[0]), 107019);
    CHECK(aclrtSynchronizeStream(s[0]), 507000);
    OK(aclrtSynchronizeStream(s[0]));
    /* The fault check comes first: even an invalid timeout fails with the armed code. */
    OK(aclsimInjectFaultAt("aclrtSynchronizeStreamWithTimeout", 507046, 0, 1));
    CHECK(aclrtSynchronizeStreamWithTimeout(s[1], 0), 507046);
    CHECK(aclrtSynchronizeStreamWithTimeout(s[1], 0), ACL_ERROR_RT_PARAM_INVALID);
    OK(aclsimInjectFaultAt("aclrtMalloc", 207001, 0, 1));
    void *d = NULL;
    CHECK(aclrtMalloc(&d, 64, 7), 207001);
    CHECK(aclrtMalloc(&d, 64, 7), ACL_ERROR_INVALID_PARAM);
    /* aclsimLaunchKernel can fail too, without enqueuing anything. */
    OK(aclsimInjectFaultAt("aclsimLaunchKernel", 507000, 1, 1));
    OK(aclsimLaunchKernel(s[2], 10, NULL, NULL, NULL, 0));
    CHECK(aclsimLaunchKernel(s[2], 10, NULL, NULL, NULL, 0), 507000);
    OK(aclrtSynchronizeStream(s[2]));
    /* Disarmed by aclsimClearFaults. */
    OK(aclsimInjectFaultAt("aclrtDestroyStream", 507000, 0, 3));
    aclsimClearFaults();
    for (int i = 0; i < 3; i++) OK(aclrtDestroyStream(s[i]));
    /* aclFinalize: a failing one leaves the runtime initialized (and its faults armed). */
    OK(aclrtResetDevice(0));
    OK(aclsimInjectFaultAt("aclFinalize", 507000, 1, 1));
    OK(aclsimInjectFaultAt("aclFinalize", 500000, 0, 1));
    CHECK(aclFinalize(), 500000);
    CHECK(aclFinalize(), 507000);
    uint32_t n = 0;
    OK(aclrtGetDeviceCount(&n));
    ASSERT(aclsimLiveObjectCount() == 0);
    OK(aclFinalize());
    CHECK(aclFinalize(), ACL_ERROR_REPEAT_FINALIZE);
    expect_clean();
}

/* aclsimCallCount: every acl* call counts (failing ones, before aclInit, across aclFinalize),
 * aclsim* calls other than aclsimLaunchKernel do not; aclsimResetCallCounts zeroes them. */
static void aclsim_call_counts(void) {
    aclsimResetCallCounts();
    ASSERT(aclsimCallCount("aclInit") == 0);
    CHECK(aclrtSetDevice(0), ACL_ERROR_UNINITIALIZE); /* before init: counted */
    ASSERT(aclsimCallCount("aclrtSetDevice") == 1);
    ASSERT(aclsimCallCount(NULL) == 0);
    ASSERT(aclsimCallCount("noSuchFunction") == 0);
    ASSERT(aclsimCallCount("aclsimFindingCount") == 0);
    (void)aclsimFindingCount();
    ASSERT(aclsimCallCount("aclsimFindingCount") == 0);
    setup();
    ASSERT(aclsimCallCount("aclInit") == 1);
    ASSERT(aclsimCallCount("aclrtSetDevice") == 2);
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    OK(aclsimInjectFault("aclrtRecordEvent", 507000, 1));
    aclrtEvent e;
    OK(aclrtCreateEventWithFlag(&e, ACL_EVENT_SYNC));
    CHECK(aclrtRecordEvent(e, s), 507000); /* failing: counted */
    OK(aclrtRecordEvent(e, s));
    CHECK(aclrtRecordEvent(NULL, s), ACL_ERROR_INVALID_PARAM); /* rejected: counted */
    ASSERT(aclsimCallCount("aclrtRecordEvent") == 3);
    for (int i = 0; i < 5; i++) OK(aclsimLaunchKernel(s, 1, NULL, NULL, NULL, 0));
    ASSERT(aclsimCallCount("aclsimLaunchKernel") == 5);
    OK(aclrtSynchronizeStream(s));
    OK(aclrtDestroyEvent(e));
    OK(aclrtDestroyStream(s));
    ASSERT(aclsimCallCount("aclrtCreateStream") == 1);
    ASSERT(aclsimCallCount("aclrtCreateEvent") == 0);
    teardown_clean();
    /* They survive aclFinalize; aclInit does not reset them. */
    ASSERT(aclsimCallCount("aclFinalize") == 1);
    ASSERT(aclsimCallCount("aclrtRecordEvent") == 3);
    OK(aclInit(NULL));
    ASSERT(aclsimCallCount("aclInit") == 2);
    ASSERT(aclsimCallCount("aclrtSynchronizeStream") == 1);
    aclsimResetCallCounts();
    ASSERT(aclsimCallCount("aclrtRecordEvent") == 0);
    ASSERT(aclsimCallCount("aclInit") == 0);
    OK(aclFinalize());
    ASSERT(aclsimCallCount("aclFinalize") == 1);
    expect_clean();
}

/* ---- S: streams ---------------------------------------------------------------------- */

static void s1_tasks_run_in_issue_order(void) {
    setup();
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    unsigned char *d;
    unsigned char h[64];
    OK(aclrtMalloc((void **)&d, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    for (int i = 1; i <= 100; i++) OK(aclrtMemsetAsync(d, 64, i, 64, s));
    OK(aclrtMemcpyAsync(h, 64, d, 64, ACL_MEMCPY_DEVICE_TO_HOST, s));
    OK(aclrtSynchronizeStream(s));
    for (int i = 0; i < 64; i++) ASSERT(h[i] == 100);
    OK(aclrtDestroyStream(s));
    OK(aclrtFree(d));
    teardown_clean();
}

static void s1_streams_are_independent(void) {
    setup();
    aclrtStream slow, fast;
    OK(aclrtCreateStream(&slow));
    OK(aclrtCreateStream(&fast));
    OK(aclsimLaunchKernel(slow, 600000, NULL, NULL, NULL, 0));
    double t0 = now_ms();
    OK(aclsimLaunchKernel(fast, 1000, NULL, NULL, NULL, 0));
    OK(aclrtSynchronizeStream(fast));
    ASSERT(now_ms() - t0 < 500); /* fast did not wait for slow */
    aclrtEventRecordedStatus st;
    aclrtEvent e;
    OK(aclrtCreateEvent(&e));
    OK(aclrtRecordEvent(e, slow));
    OK(aclrtQueryEventStatus(e, &st));
    ASSERT(st == ACL_EVENT_RECORDED_STATUS_NOT_READY);
    OK(aclrtSynchronizeStream(slow));
    OK(aclrtDestroyEvent(e));
    OK(aclrtDestroyStream(slow));
    OK(aclrtDestroyStream(fast));
    teardown_clean();
}

static void s3_synchronize_stream_with_timeout_codes(void) {
    setup();
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    CHECK(aclrtSynchronizeStreamWithTimeout(s, 0), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(aclrtSynchronizeStreamWithTimeout(s, -2), ACL_ERROR_RT_PARAM_INVALID);
    OK(aclsimLaunchKernel(s, 300000, NULL, NULL, NULL, 0));
    CHECK(aclrtSynchronizeStreamWithTimeout(s, 20), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
    CHECK(aclrtSynchronizeDeviceWithTimeout(20), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
    CHECK(aclrtSynchronizeDeviceWithTimeout(0), ACL_ERROR_RT_PARAM_INVALID);
    OK(aclrtSynchronizeStreamWithTimeout(s, -1));
    OK(aclrtSynchronizeDeviceWithTimeout(1000));
    OK(aclrtDestroyStream(s));
    teardown_clean();
}

/* S4 (current CANN): aclrtDestroyStream waits for the pending tasks, then destroys the
 * stream; no finding. (Only aclrtDestroyStreamForce would drop them.) */
static void s4_destroy_stream_waits_for_pending_tasks(void) {
    setup();
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    int *dev, val = 5, out = 0;
    OK(aclrtMalloc((void **)&dev, sizeof(int), ACL_MEM_MALLOC_HUGE_FIRST));
    void *bufs[1] = {dev};
    double t0 = now_ms();
    OK(aclsimLaunchKernel(s, 100000, NULL, NULL, NULL, 0));
    OK(aclsimLaunchKernel(s, 100000, k_store, &val, bufs, 1));
    OK(aclrtMemcpyAsync(&out, sizeof out, dev, sizeof out, ACL_MEMCPY_DEVICE_TO_HOST, s));
    OK(aclrtDestroyStream(s));
    ASSERT(now_ms() - t0 >= 190); /* both kernels ran */
    ASSERT(out == 5);             /* and the copy behind them */
    expect_clean();
    CHECK(aclrtSynchronizeStream(s), ACL_ERROR_RT_PARAM_INVALID); /* gone */
    OK(aclrtFree(dev));
    teardown_clean();
}

/* S4: a destroy whose wait can never end is diagnosed like a synchronize (507000, the
 * stream stays); aclFinalize then releases it with a leak report. */
static void s4_destroy_stream_that_can_never_drain_is_diagnosed(void) {
    setup();
    aclrtEvent e;
    aclrtStream s;
    OK(aclrtCreateEventWithFlag(&e, ACL_EVENT_SYNC));
    OK(aclrtCreateStream(&s));
    OK(aclrtStreamWaitEvent(s, e)); /* never recorded */
    CHECK(aclrtDestroyStream(s), ACL_ERROR_RT_INTERNAL_ERROR);
    expect_only("E1", 1);
    aclsimClearFindings();
    /* The stream stays: still a valid handle. */
    CHECK(aclrtSynchronizeStreamWithTimeout(s, 10), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
    OK(aclFinalize());
    expect_only("P2", 1);
}

/* ---- E: events ----------------------------------------------------------------------- */

static void e1_wait_on_never_recorded_plain_event_returns_107000(void) {
    setup();
    aclrtEvent e;
    aclrtStream s;
    OK(aclrtCreateEvent(&e));
    OK(aclrtCreateStream(&s));
    CHECK(aclrtStreamWaitEvent(s, e), ACL_ERROR_RT_PARAM_INVALID);
    OK(aclrtDestroyStream(s));
    OK(aclrtDestroyEvent(e));
    teardown_clean();
}

static void e1_wait_on_sync_event_is_released_by_a_later_record(void) {
    setup();
    aclrtEvent e;
    aclrtStream s1, s2;
    OK(aclrtCreateEventWithFlag(&e, ACL_EVENT_SYNC));
    OK(aclrtCreateStream(&s1));
    OK(aclrtCreateStream(&s2));
    OK(aclrtStreamWaitEvent(s2, e)); /* queued: only a later record releases it */
    OK(aclrtResetEvent(e, s2));
    sleep_ms(30);
    CHECK(aclrtSynchronizeStreamWithTimeout(s2, 20), ACL_ERROR_RT_STREAM_SYNC_TIMEOUT);
    OK(aclrtRecordEvent(e, s1));
    OK(aclrtSynchronizeStream(s2));
    OK(aclrtSynchronizeStream(s1));
    OK(aclrtDestroyStream(s1));
    OK(aclrtDestroyStream(s2));
    OK(aclrtDestroyEvent(e));
    teardown_clean();
}

static void e1_deadlock_on_never_recorded_sync_event_is_diagnosed(void) {
    setup();
    aclrtEvent e;
    aclrtStream s;
    OK(aclrtCreateEventWithFlag(&e, ACL_EVENT_SYNC));
    OK(aclrtCreateStream(&s));
    OK(aclrtStreamWaitEvent(s, e));
    OK(aclrtResetEvent(e, s));
    CHECK(aclrtSynchronizeStream(s), ACL_ERROR_RT_INTERNAL_ERROR); /* watchdog, not a hang */
    CHECK(aclrtSynchronizeDevice(), ACL_ERROR_RT_INTERNAL_ERROR);
    expect_only("E1", 2);
    aclsimClearFindings();
    OK(aclrtRecordEvent(e, s)); /* queued behind the wait: a self-cycle */
    CHECK(aclrtSynchronizeEvent(e), ACL_ERROR_RT_INTERNAL_ERROR);
    expect_only("E1", 1);
    aclsimClearFindings();
    CHECK(aclrtDestroyStream(s), ACL_ERROR_RT_INTERNAL_ERROR); /* S4: waits, diagnosed */
    expect_only("E1", 1);
    aclsimClearFindings();
    OK(aclFinalize()); /* leak report frees the blocked stream */
    expect_only("P2", 1);
}

static void e1_deadlock_cycle_between_two_streams_is_diagnosed(void) {
    setup();
    aclrtEvent a, b;
    aclrtStream s1, s2;
    OK(aclrtCreateEventWithFlag(&a, ACL_EVENT_SYNC));
    OK(aclrtCreateEventWithFlag(&b, ACL_EVENT_SYNC));
    OK(aclrtCreateStream(&s1));
    OK(aclrtCreateStream(&s2));
    OK(aclrtStreamWaitEvent(s1, b));
    OK(aclrtResetEvent(b, s1));
    OK(aclrtRecordEvent(a, s1));
    OK(aclrtStreamWaitEvent(s2, a));
    OK(aclrtResetEvent(a, s2));
    OK(aclrtRecordEvent(b, s2));
    CHECK(aclrtSynchronizeStream(s1), ACL_ERROR_RT_INTERNAL_ERROR);
    expect_only("E1", 1);
    aclsimClearFindings();
    OK(aclFinalize()); /* leak report frees everything, blocked workers included */
    expect_only("P2", 1);
}

static void e2_query_status_and_synchronize_event(void) {
    setup();
    aclrtEvent e;
    aclrtStream s;
    OK(aclrtCreateEvent(&e));
    OK(aclrtCreateStream(&s));
    aclrtEventRecordedStatus st = 7;
    OK(aclrtQueryEventStatus(e, &st));
    ASSERT(st == ACL_EVENT_RECORDED_STATUS_NOT_READY); /* never recorded: NOT_READY */
    OK(aclrtSynchronizeEvent(e));                     /* never recorded: returns at once */
    OK(aclsimLaunchKernel(s, 100000, NULL, NULL, NULL, 0));
    OK(aclrtRecordEvent(e, s));
    OK(aclrtQueryEventStatus(e, &st));
    ASSERT(st == ACL_EVENT_RECORDED_STATUS_NOT_READY);
    OK(aclrtSynchronizeEvent(e));
    OK(aclrtQueryEventStatus(e, &st));
    ASSERT(st == ACL_EVENT_RECORDED_STATUS_COMPLETE);
    OK(aclrtDestroyStream(s));
    OK(aclrtDestroyEvent(e));
    teardown_clean();
}

static void e4_wait_without_reset_then_destroy_is_flagged(void) {
    setup();
    aclrtEvent e;
    aclrtStream s1, s2;
    OK(aclrtCreateEventWithFlag(&e, ACL_EVENT_SYNC));
    OK(aclrtCreateStream(&s1));
    OK(aclrtCreateStream(&s2));
    OK(aclrtRecordEvent(e, s1));
    OK(aclrtStreamWaitEvent(s2, e));
    OK(aclrtSynchronizeStream(s1));
    OK(aclrtSynchronizeStream(s2));
    OK(aclrtDestroyEvent(e));
    expect_only("E4", 1);
    OK(aclrtDestroyStream(s1));
    OK(aclrtDestroyStream(s2));
    OK(aclrtResetDevice(0));
    OK(aclFinalize());
    expect_only("E4", 1);
}

static void e4_rerecord_without_reset_is_flagged(void) {
    setup();
    aclrtEvent e;
    aclrtStream s1, s2;
    OK(aclrtCreateEventWithFlag(&e, ACL_EVENT_SYNC));
    OK(aclrtCreateStream(&s1));
    OK(aclrtCreateStream(&s2));
    OK(aclrtRecordEvent(e, s1));
    OK(aclrtStreamWaitEvent(s2, e));
    OK(aclrtRecordEvent(e, s1)); /* E4 */
    OK(aclrtStreamWaitEvent(s2, e));
    OK(aclrtResetEvent(e, s2));
    OK(aclrtSynchronizeDevice());
    OK(aclrtDestroyEvent(e));
    OK(aclrtDestroyStream(s1));
    OK(aclrtDestroyStream(s2));
    OK(aclrtResetDevice(0));
    OK(aclFinalize());
    expect_only("E4", 1);
}

/* Two streams wait on one event; the reset issued on s3 overtakes s2's earlier wait (s2 is
 * busy with a kernel): E5 at the reset, then the synchronize of s2 is a diagnosed deadlock. */
static void e5_reset_overtaking_another_streams_wait_is_flagged(void) {
    setup();
    aclrtEvent e;
    aclrtStream s1, s2, s3;
    OK(aclrtCreateEventWithFlag(&e, ACL_EVENT_SYNC));
    OK(aclrtCreateStream(&s1));
    OK(aclrtCreateStream(&s2));
    OK(aclrtCreateStream(&s3));
    OK(aclsimLaunchKernel(s2, 100000, NULL, NULL, NULL, 0));
    OK(aclrtRecordEvent(e, s1));
    OK(aclrtStreamWaitEvent(s2, e));
    OK(aclrtStreamWaitEvent(s3, e));
    OK(aclrtResetEvent(e, s3));
    OK(aclrtSynchronizeStream(s3));
    OK(aclrtSynchronizeStream(s1));
    ASSERT(count_rule("E5") == 1);
    CHECK(aclrtSynchronizeStream(s2), ACL_ERROR_RT_INTERNAL_ERROR);
    expect_only("E5", 2);
    aclsimClearFindings();
    OK(aclrtRecordEvent(e, s1)); /* a new record releases s2 */
    OK(aclrtSynchronizeStream(s2));
    OK(aclrtResetEvent(e, s2));
    OK(aclrtSynchronizeDevice());
    OK(aclrtDestroyStream(s1));
    OK(aclrtDestroyStream(s2));
    OK(aclrtDestroyStream(s3));
    OK(aclrtDestroyEvent(e));
    teardown_clean();
}

static void e6_synchronize_event_with_timeout_codes(void) {
    setup();
    aclrtEvent e;
    aclrtStream s;
    OK(aclrtCreateEvent(&e));
    OK(aclrtCreateStream(&s));
    OK(aclsimLaunchKernel(s, 300000, NULL, NULL, NULL, 0));
    OK(aclrtRecordEvent(e, s));
    CHECK(aclrtSynchronizeEventWithTimeout(e, 0), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(aclrtSynchronizeEventWithTimeout(e, -5), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(aclrtSynchronizeEventWithTimeout(e, 20), ACL_ERROR_RT_EVENT_SYNC_TIMEOUT);
    OK(aclrtSynchronizeEventWithTimeout(e, -1));
    OK(aclrtDestroyStream(s));
    OK(aclrtDestroyEvent(e));
    teardown_clean();
}

static void e7_event_flags_without_sync_cannot_wait_or_reset(void) {
    setup();
    aclrtEvent e, t;
    aclrtStream s;
    CHECK(aclrtCreateEventWithFlag(&e, 0), ACL_ERROR_RT_PARAM_INVALID);
    OK(aclrtCreateEventWithFlag(&t, ACL_EVENT_TIME_LINE));
    OK(aclrtCreateStream(&s));
    OK(aclrtRecordEvent(t, s));
    CHECK(aclrtStreamWaitEvent(s, t), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    CHECK(aclrtResetEvent(t, s), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    OK(aclrtSynchronizeEvent(t));
    OK(aclrtDestroyStream(s));
    OK(aclrtDestroyEvent(t));
    teardown_clean();
}

static void e8_elapsed_time_needs_both_events_complete(void) {
    setup();
    aclrtEvent a, b;
    aclrtStream s;
    OK(aclrtCreateEvent(&a));
    OK(aclrtCreateEvent(&b));
    OK(aclrtCreateStream(&s));
    float ms = -1;
    CHECK(aclrtEventElapsedTime(&ms, a, b), ACL_ERROR_RT_INTERNAL_ERROR);
    OK(aclrtRecordEvent(a, s));
    OK(aclsimLaunchKernel(s, 50000, NULL, NULL, NULL, 0));
    OK(aclrtRecordEvent(b, s));
    CHECK(aclrtEventElapsedTime(&ms, a, b), ACL_ERROR_RT_INTERNAL_ERROR); /* b not complete */
    OK(aclrtSynchronizeEvent(b));
    OK(aclrtEventElapsedTime(&ms, a, b));
    ASSERT(ms >= 45.0f && ms < 2000.0f);
    OK(aclrtDestroyStream(s));
    OK(aclrtDestroyEvent(a));
    OK(aclrtDestroyEvent(b));
    teardown_clean();
}

static void e9_destroy_event_referenced_by_pending_task_is_flagged(void) {
    setup();
    aclrtEvent e;
    aclrtStream s;
    OK(aclrtCreateEvent(&e));
    OK(aclrtCreateStream(&s));
    OK(aclsimLaunchKernel(s, 100000, NULL, NULL, NULL, 0));
    OK(aclrtRecordEvent(e, s));
    OK(aclrtDestroyEvent(e));
    expect_only("E9", 1);
    CHECK(aclrtSynchronizeEvent(e), ACL_ERROR_RT_PARAM_INVALID); /* handle is dead */
    OK(aclrtSynchronizeStream(s));                               /* no crash */
    OK(aclrtDestroyStream(s));
    ASSERT(aclsimLiveObjectCount() == 0);
    OK(aclrtResetDevice(0));
    OK(aclFinalize());
    expect_only("E9", 1);
}

/* ---- C: callbacks -------------------------------------------------------------------- */

static void c2_second_subscription_of_a_stream_returns_107011(void) {
    setup();
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    OK(aclrtSubscribeReport(1111, s));
    CHECK(aclrtSubscribeReport(2222, s), ACL_ERROR_RT_STREAM_SUBSCRIBE);
    CHECK(aclrtSubscribeReport(1111, s), ACL_ERROR_RT_STREAM_SUBSCRIBE);
    OK(aclrtUnSubscribeReport(1111, s));
    OK(aclrtDestroyStream(s));
    teardown_clean();
}

static void c3_same_thread_on_two_devices_returns_107012(void) {
    setup();
    aclrtStream s0a, s0b, s1;
    OK(aclrtCreateStream(&s0a));
    OK(aclrtCreateStream(&s0b));
    OK(aclrtSubscribeReport(77, s0a));
    OK(aclrtSubscribeReport(77, s0b)); /* several streams of one device: fine */
    OK(aclrtSetDevice(1));
    OK(aclrtCreateStream(&s1));
    CHECK(aclrtSubscribeReport(77, s1), ACL_ERROR_RT_THREAD_SUBSCRIBE);
    OK(aclrtDestroyStream(s1));
    OK(aclrtResetDevice(1));
    OK(aclrtSetDevice(0));
    OK(aclrtUnSubscribeReport(77, s0a));
    OK(aclrtUnSubscribeReport(77, s0b));
    OK(aclrtDestroyStream(s0a));
    OK(aclrtDestroyStream(s0b));
    OK(aclrtResetDevice(0));
    teardown_clean();
}

static void c4_more_than_1024_subscribed_threads_returns_107012(void) {
    setup();
    enum { N = 1025 };
    static aclrtStream s[N];
    for (int i = 0; i < N; i++) OK(aclrtCreateStream(&s[i]));
    for (int i = 0; i < 1024; i++) OK(aclrtSubscribeReport(10000 + i, s[i]));
    CHECK(aclrtSubscribeReport(10000 + 1024, s[1024]), ACL_ERROR_RT_THREAD_SUBSCRIBE);
    OK(aclrtSubscribeReport(10000, s[1024])); /* an already-subscribed thread is fine */
    OK(aclrtUnSubscribeReport(10000, s[1024]));
    for (int i = 0; i < 1024; i++) OK(aclrtUnSubscribeReport(10000 + i, s[i]));
    for (int i = 0; i < N; i++) OK(aclrtDestroyStream(s[i]));
    teardown_clean();
}

static void c5_launch_callback_errors(void) {
    setup();
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    CHECK(aclrtLaunchCallback(cb_record, NULL, ACL_CALLBACK_BLOCK, s), ACL_ERROR_RT_STREAM_NO_CB_REG);
    OK(aclrtSubscribeReport(5, s));
    CHECK(aclrtLaunchCallback(cb_record, NULL, (aclrtCallbackBlockType)2, s), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtLaunchCallback(NULL, NULL, ACL_CALLBACK_BLOCK, s), ACL_ERROR_INVALID_PARAM);
    OK(aclrtUnSubscribeReport(5, s));
    OK(aclrtDestroyStream(s));
    teardown_clean();
}

static volatile int order_flag;
static pthread_mutex_t gate_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_c = PTHREAD_COND_INITIALIZER;
static int gate_open;

static void cb_slow_set(void *ud) {
    (void)ud;
    sleep_ms(50);
    __atomic_store_n(&order_flag, 1, __ATOMIC_RELEASE);
}
static void k_see_flag(void *ud, void *const *b, size_t n) {
    (void)b;
    (void)n;
    *(int *)ud = __atomic_load_n(&order_flag, __ATOMIC_ACQUIRE);
}
/* NO_BLOCK: the callback waits for the kernel launched after it. */
static void cb_wait_gate(void *ud) {
    (void)ud;
    pthread_mutex_lock(&gate_m);
    while (!gate_open) pthread_cond_wait(&gate_c, &gate_m);
    pthread_mutex_unlock(&gate_m);
    __atomic_store_n(&order_flag, 2, __ATOMIC_RELEASE);
}
static void k_open_gate(void *ud, void *const *b, size_t n) {
    (void)ud;
    (void)b;
    (void)n;
    pthread_mutex_lock(&gate_m);
    gate_open = 1;
    pthread_cond_broadcast(&gate_c);
    pthread_mutex_unlock(&gate_m);
}

static void c5_block_holds_the_stream_and_no_block_does_not(void) {
    setup();
    aclrtContext ctx;
    OK(aclrtGetCurrentContext(&ctx));
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    pthread_t th;
    cb_set_stop(0);
    pthread_create(&th, NULL, report_loop, ctx);
    OK(aclrtSubscribeReport((uint64_t)th, s));
    int seen = -1;
    order_flag = 0;
    OK(aclrtLaunchCallback(cb_slow_set, NULL, ACL_CALLBACK_BLOCK, s));
    OK(aclsimLaunchKernel(s, 0, k_see_flag, &seen, NULL, 0));
    OK(aclrtSynchronizeStream(s));
    ASSERT(seen == 1); /* the kernel ran after the blocking callback */
    gate_open = 0;
    OK(aclrtLaunchCallback(cb_wait_gate, NULL, ACL_CALLBACK_NO_BLOCK, s));
    OK(aclsimLaunchKernel(s, 0, k_open_gate, NULL, NULL, 0));
    OK(aclrtSynchronizeStream(s)); /* waits for the non-blocking callback too */
    ASSERT(__atomic_load_n(&order_flag, __ATOMIC_ACQUIRE) == 2);
    OK(aclrtUnSubscribeReport((uint64_t)th, s));
    cb_set_stop(1);
    pthread_join(th, NULL);
    OK(aclrtDestroyStream(s));
    teardown_clean();
}

static void *process_report_no_ctx(void *arg) {
    (void)arg;
    CHECK(aclrtProcessReport(10), ACL_ERROR_RT_CONTEXT_NULL);
    return NULL;
}

static void c6_process_report_errors(void) {
    setup();
    CHECK(aclrtProcessReport(0), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtProcessReport(-2), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtProcessReport(10), ACL_ERROR_RT_THREAD_SUBSCRIBE);
    pthread_t th;
    pthread_create(&th, NULL, process_report_no_ctx, NULL);
    pthread_join(th, NULL);
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    OK(aclrtSubscribeReport((uint64_t)pthread_self(), s));
    CHECK(aclrtProcessReport(20), ACL_ERROR_RT_REPORT_TIMEOUT);
    /* The calling thread itself can serve its own stream (non-blocking callback). */
    cb_seen_value = 0;
    int v = 9;
    OK(aclrtLaunchCallback(cb_record, &v, ACL_CALLBACK_NO_BLOCK, s));
    OK(aclrtProcessReport(1000));
    ASSERT(cb_seen_value == 9);
    OK(aclrtSynchronizeStream(s));
    OK(aclrtUnSubscribeReport((uint64_t)pthread_self(), s));
    OK(aclrtDestroyStream(s));
    teardown_clean();
}

static int inner_rc;
static void cb_calls_runtime(void *ud) { inner_rc = aclrtSynchronizeStream((aclrtStream)ud); }

static void c8_runtime_call_inside_callback_is_flagged(void) {
    setup();
    aclrtContext ctx;
    OK(aclrtGetCurrentContext(&ctx));
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    pthread_t th;
    cb_set_stop(0);
    pthread_create(&th, NULL, report_loop, ctx);
    OK(aclrtSubscribeReport((uint64_t)th, s));
    OK(aclrtLaunchCallback(cb_calls_runtime, s, ACL_CALLBACK_BLOCK, s));
    OK(aclrtSynchronizeStream(s)); /* no deadlock */
    ASSERT(inner_rc == ACL_ERROR_RT_PARAM_INVALID);
    OK(aclrtUnSubscribeReport((uint64_t)th, s));
    cb_set_stop(1);
    pthread_join(th, NULL);
    OK(aclrtDestroyStream(s));
    OK(aclrtResetDevice(0));
    OK(aclFinalize());
    expect_only("C8", 1);
}

static void c1_synchronize_on_the_processing_thread_is_diagnosed(void) {
    setup();
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    OK(aclrtSubscribeReport((uint64_t)pthread_self(), s));
    OK(aclrtLaunchCallback(cb_record, &inner_rc, ACL_CALLBACK_BLOCK, s));
    CHECK(aclrtSynchronizeStream(s), ACL_ERROR_RT_INTERNAL_ERROR);
    expect_only("C1", 1);
    aclsimClearFindings();
    OK(aclrtProcessReport(1000));
    OK(aclrtSynchronizeStream(s));
    OK(aclrtUnSubscribeReport((uint64_t)pthread_self(), s));
    OK(aclrtDestroyStream(s));
    teardown_clean();
}

static void c9_unsubscribe_errors(void) {
    setup();
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    CHECK(aclrtUnSubscribeReport(1, s), ACL_ERROR_RT_STREAM_SUBSCRIBE);
    OK(aclrtSubscribeReport(1, s));
    CHECK(aclrtUnSubscribeReport(2, s), ACL_ERROR_RT_THREAD_SUBSCRIBE);
    OK(aclrtUnSubscribeReport(1, s));
    CHECK(aclrtUnSubscribeReport(1, s), ACL_ERROR_RT_STREAM_SUBSCRIBE);
    OK(aclrtDestroyStream(s));
    teardown_clean();
}

/* ---- M: memory ----------------------------------------------------------------------- */

static void m1_memcpy_violations_return_100000_and_are_flagged(void) {
    setup();
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    char *d, *h;
    char stack[64];
    OK(aclrtMalloc((void **)&d, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclrtMallocHost((void **)&h, 64));
    CHECK(aclrtMemcpy(d, 32, stack, 64, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_INVALID_PARAM); /* count > destMax */
    CHECK(aclrtMemcpy(d, 64, stack, 64, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_INVALID_PARAM); /* kind */
    CHECK(aclrtMemcpy(stack, 64, h, 64, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_INVALID_PARAM); /* src is host */
    CHECK(aclrtMemcpyAsync(d + 8, 64, stack, 64, ACL_MEMCPY_HOST_TO_DEVICE, s), ACL_ERROR_INVALID_PARAM); /* overrun */
    CHECK(aclrtMemcpyAsync(d, 64, stack, 64, (aclrtMemcpyKind)9, s), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtMemset(d, 64, 0, 65), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtMemsetAsync(d + 60, 8, 0, 8, s), ACL_ERROR_INVALID_PARAM);
    expect_only("M1", 7);
    aclsimClearFindings();
    /* Legal ones. */
    memset(stack, 5, sizeof stack);
    OK(aclrtMemcpy(d, 64, stack, 64, ACL_MEMCPY_HOST_TO_DEVICE));
    OK(aclrtMemcpy(h, 64, d, 64, ACL_MEMCPY_DEVICE_TO_HOST));
    ASSERT(h[63] == 5);
    OK(aclrtMemset(d, 64, 3, 64));
    OK(aclrtMemcpy(stack, 64, d, 64, ACL_MEMCPY_DEVICE_TO_HOST));
    ASSERT(stack[0] == 3);
    OK(aclrtMemcpy(h, 64, stack, 64, ACL_MEMCPY_HOST_TO_HOST));
    OK(aclrtMemcpyAsync(d, 64, d, 64, ACL_MEMCPY_DEVICE_TO_DEVICE, s));
    OK(aclrtSynchronizeStream(s));
    OK(aclrtDestroyStream(s));
    OK(aclrtFree(d));
    OK(aclrtFreeHost(h));
    teardown_clean();
}

static void m1_malloc_and_free_codes(void) {
    setup();
    void *p;
    CHECK(aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtMallocHost(&p, 0), ACL_ERROR_INVALID_PARAM);
    int x;
    CHECK(aclrtFree(&x), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(aclrtFreeHost(&x), ACL_ERROR_RT_PARAM_INVALID);
    /* 1 GiB is cheap: lazily zeroed pages. */
    char *big;
    OK(aclrtMalloc((void **)&big, (size_t)1 << 30, ACL_MEM_MALLOC_HUGE_FIRST));
    ASSERT(big[12345678] == 0);
    OK(aclrtFree(big));
    CHECK(aclrtFree(big), ACL_ERROR_RT_PARAM_INVALID); /* double free */
    teardown_clean();
}

static void m2_free_memory_used_by_pending_task_is_flagged(void) {
    setup();
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    char *d, *h;
    OK(aclrtMalloc((void **)&d, 4096, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclrtMallocHost((void **)&h, 4096));
    OK(aclsimLaunchKernel(s, 100000, NULL, NULL, NULL, 0));
    OK(aclrtMemcpyAsync(h, 4096, d, 4096, ACL_MEMCPY_DEVICE_TO_HOST, s));
    OK(aclrtFree(d));
    expect_only("M2", 1);
    CHECK(aclrtFree(d), ACL_ERROR_RT_PARAM_INVALID);
    OK(aclrtSynchronizeStream(s)); /* the copy still ran safely: release was deferred */
    OK(aclrtFreeHost(h));
    CHECK(aclrtFreeHost(d), ACL_ERROR_RT_PARAM_INVALID);
    OK(aclrtDestroyStream(s));
    ASSERT(aclsimLiveObjectCount() == 0);
    OK(aclrtResetDevice(0));
    OK(aclFinalize());
    expect_only("M2", 1);
}

/* M1: device memory of device 0 used by an asynchronous task of a device-1 stream. */
static void m1_async_task_on_another_devices_stream_returns_100000(void) {
    setup();
    char *d0, *h;
    OK(aclrtMalloc((void **)&d0, 4096, ACL_MEM_MALLOC_HUGE_FIRST)); /* on device 0 */
    OK(aclrtMallocHost((void **)&h, 4096));
    OK(aclrtSetDevice(1));
    aclrtStream s1;
    OK(aclrtCreateStream(&s1)); /* on device 1 */
    CHECK(aclrtMemsetAsync(d0, 4096, 0, 4096, s1), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtMemcpyAsync(d0, 4096, h, 4096, ACL_MEMCPY_HOST_TO_DEVICE, s1),
          ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtMemcpyAsync(h, 4096, d0, 4096, ACL_MEMCPY_DEVICE_TO_HOST, s1),
          ACL_ERROR_INVALID_PARAM);
    void *bufs[1] = {d0};
    CHECK(aclsimLaunchKernel(s1, 0, NULL, NULL, bufs, 1), ACL_ERROR_INVALID_PARAM);
    expect_only("M1", 4);
    /* Device 1's own memory is fine on that stream. */
    char *d1;
    OK(aclrtMalloc((void **)&d1, 4096, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclrtMemsetAsync(d1, 4096, 7, 4096, s1));
    OK(aclrtMemcpyAsync(h, 4096, d1, 4096, ACL_MEMCPY_DEVICE_TO_HOST, s1));
    /* Resetting device 0 now frees nothing a task of s1 uses. */
    OK(aclrtFree(d0));
    OK(aclrtResetDevice(0));
    OK(aclrtSynchronizeStream(s1));
    ASSERT(h[0] == 7 && h[4095] == 7);
    OK(aclrtDestroyStream(s1));
    OK(aclrtFree(d1));
    OK(aclrtFreeHost(h));
    OK(aclrtResetDevice(1));
    ASSERT(aclsimLiveObjectCount() == 0);
    OK(aclFinalize());
    expect_only("M1", 4);
}

static void m2_free_with_wrong_pair_is_flagged(void) {
    setup();
    void *d, *h;
    OK(aclrtMalloc(&d, 16, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclrtMallocHost(&h, 16));
    CHECK(aclrtFreeHost(d), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(aclrtFree(h), ACL_ERROR_RT_PARAM_INVALID);
    expect_only("M2", 2);
    aclsimClearFindings();
    OK(aclrtFree(d));
    OK(aclrtFreeHost(h));
    teardown_clean();
}

/* ---- Checker switch, trace ----------------------------------------------------------- */

static void check_disabled_by_env_keeps_error_codes(void) {
    /* Run with ACLSIM_CHECK=0. */
    setup();
    aclrtEvent e;
    aclrtStream s1, s2;
    void *d;
    OK(aclrtCreateEvent(&e));
    OK(aclrtCreateStream(&s1));
    OK(aclrtCreateStream(&s2));
    OK(aclrtMalloc(&d, 8, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemset(d, 8, 0, 9), ACL_ERROR_INVALID_PARAM);
    OK(aclrtRecordEvent(e, s1));
    OK(aclrtStreamWaitEvent(s2, e));
    OK(aclrtSynchronizeDevice());
    OK(aclrtDestroyEvent(e)); /* E4, unreported */
    OK(aclFinalize());        /* P2, unreported */
    expect_clean();
}

/* Two-stream ping-pong with a callback: the trace test parses the JSON it leaves. */
static void trace_ping_pong(void) {
    setup();
    aclrtContext ctx;
    OK(aclrtGetCurrentContext(&ctx));
    aclrtStream a, b;
    OK(aclrtCreateStream(&a));
    OK(aclrtCreateStream(&b));
    aclrtEvent ea, eb;
    OK(aclrtCreateEventWithFlag(&ea, ACL_EVENT_SYNC));
    OK(aclrtCreateEventWithFlag(&eb, ACL_EVENT_SYNC));
    char *d;
    static char h[4096];
    OK(aclrtMalloc((void **)&d, 4096, ACL_MEM_MALLOC_HUGE_FIRST));
    pthread_t th;
    cb_set_stop(0);
    pthread_create(&th, NULL, report_loop, ctx);
    OK(aclrtSubscribeReport((uint64_t)th, b));
    for (int i = 0; i < 3; i++) {
        OK(aclrtMemcpyAsync(d, 4096, h, 4096, ACL_MEMCPY_HOST_TO_DEVICE, a));
        OK(aclsimLaunchKernel(a, 2000, NULL, NULL, NULL, 0));
        OK(aclrtRecordEvent(ea, a));
        OK(aclrtStreamWaitEvent(b, ea));
        OK(aclrtResetEvent(ea, b));
        OK(aclrtLaunchCallback(cb_record, &i, ACL_CALLBACK_BLOCK, b));
        OK(aclrtRecordEvent(eb, b));
        OK(aclrtStreamWaitEvent(a, eb));
        OK(aclrtResetEvent(eb, a));
        OK(aclrtSynchronizeStream(a));
    }
    OK(aclrtSynchronizeStream(b));
    OK(aclrtUnSubscribeReport((uint64_t)th, b));
    cb_set_stop(1);
    pthread_join(th, NULL);
    OK(aclrtDestroyEvent(ea));
    OK(aclrtDestroyEvent(eb));
    OK(aclrtDestroyStream(a));
    OK(aclrtDestroyStream(b));
    OK(aclrtFree(d));
    teardown_clean();
}

/* One plain event recorded after a 1 ms kernel releases waits that two streams issued
 * before it ran (their wait slices start early: the arrow must still go forward, to the end
 * of each wait), then a wait issued after the record already ran. */
static void trace_fan_out(void) {
    setup();
    aclrtStream a, b, c;
    OK(aclrtCreateStream(&a));
    OK(aclrtCreateStream(&b));
    OK(aclrtCreateStream(&c));
    aclrtEvent e;
    OK(aclrtCreateEvent(&e));
    for (int i = 0; i < 2; i++) {
        OK(aclsimLaunchKernel(a, 1000, NULL, NULL, NULL, 0));
        OK(aclrtRecordEvent(e, a));
        OK(aclrtStreamWaitEvent(b, e));
        OK(aclrtStreamWaitEvent(c, e));
        OK(aclrtSynchronizeStream(b));
        OK(aclrtSynchronizeStream(c));
        OK(aclrtStreamWaitEvent(b, e)); /* the record already ran */
        OK(aclrtSynchronizeStream(b));
    }
    OK(aclrtSynchronizeStream(a));
    OK(aclrtDestroyEvent(e));
    OK(aclrtDestroyStream(a));
    OK(aclrtDestroyStream(b));
    OK(aclrtDestroyStream(c));
    teardown_clean();
}

/* ---- Stress -------------------------------------------------------------------------- */

#define STRESS_THREADS 4
static int stress_streams_per_thread = 8;
static int stress_iters = 500;

static void *stress_thread(void *arg) {
    int idx = (int)(intptr_t)arg;
    int dev = idx % 2;
    OK(aclrtSetDevice(dev));
    aclrtContext ctx;
    OK(aclrtCreateContext(&ctx, dev));
    int n = stress_streams_per_thread;
    aclrtStream *s = calloc((size_t)n, sizeof *s);
    for (int i = 0; i < n; i++) OK(aclrtCreateStream(&s[i]));
    int *d;
    OK(aclrtMalloc((void **)&d, sizeof(int) * (size_t)n, ACL_MEM_MALLOC_HUGE_FIRST));
    int *h = calloc((size_t)n, sizeof(int));
    for (int it = 0; it < stress_iters; it++) {
        int a = it % n, b = (it * 7 + 3) % n;
        if (a == b) b = (b + 1) % n;
        aclrtEvent e;
        OK(aclrtCreateEventWithFlag(&e, ACL_EVENT_SYNC));
        h[a] = it;
        OK(aclrtMemcpyAsync(&d[a], sizeof(int), &h[a], sizeof(int), ACL_MEMCPY_HOST_TO_DEVICE, s[a]));
        OK(aclrtRecordEvent(e, s[a]));
        OK(aclrtStreamWaitEvent(s[b], e));
        OK(aclrtResetEvent(e, s[b]));
        OK(aclrtMemcpyAsync(&d[b], sizeof(int), &d[a], sizeof(int), ACL_MEMCPY_DEVICE_TO_DEVICE, s[b]));
        OK(aclrtSynchronizeStream(s[b]));
        ASSERT(d[b] == it);
        OK(aclrtSynchronizeStream(s[a]));
        OK(aclrtDestroyEvent(e));
    }
    OK(aclrtSynchronizeDevice());
    for (int i = 0; i < n; i++) OK(aclrtDestroyStream(s[i]));
    OK(aclrtFree(d));
    OK(aclrtDestroyContext(ctx));
    OK(aclrtResetDevice(dev));
    free(s);
    free(h);
    return NULL;
}

static void stress_many_streams_events_threads(void) {
    const char *small = getenv("ACLSIM_STRESS_SMALL");
    if (small && *small) {
        stress_streams_per_thread = 3;
        stress_iters = 40;
    }
    OK(aclInit(NULL));
    pthread_t th[STRESS_THREADS];
    for (int i = 0; i < STRESS_THREADS; i++)
        pthread_create(&th[i], NULL, stress_thread, (void *)(intptr_t)i);
    for (int i = 0; i < STRESS_THREADS; i++) pthread_join(th[i], NULL);
    ASSERT(aclsimLiveObjectCount() == 0);
    OK(aclFinalize());
    expect_clean();
}

/* ---- Dispatch ------------------------------------------------------------------------ */

/* ---- Concurrent teardown (no crash) ----------------------------------------------------- */

/* One thread destroys a stream (or its context) whose worker is busy with a kernel writing
 * into a large (mmap'd) device buffer, while the main thread finalizes or resets the
 * device: the memory must not be released under the running kernel. */
#define RACE_BYTES ((size_t)8 << 20)
static void k_fill_race(void *ud, void *const *bufs, size_t n) {
    (void)ud;
    if (n > 0) memset(bufs[0], 0x5a, RACE_BYTES);
}
struct race_arg {
    aclrtContext ctx;
    aclrtStream s;
    int destroy_context;
    int rc;
};
static void *race_destroy_thread(void *p) {
    struct race_arg *a = p;
    a->rc = aclrtSetCurrentContext(a->ctx);
    if (a->rc == 0) a->rc = a->destroy_context ? aclrtDestroyContext(a->ctx) : aclrtDestroyStream(a->s);
    return NULL;
}
static void teardown_race(int destroy_context, int by_finalize) {
    OK(aclInit(NULL));
    OK(aclrtSetDevice(0));
    struct race_arg a = {0};
    a.destroy_context = destroy_context;
    if (destroy_context)
        OK(aclrtCreateContext(&a.ctx, 0));
    else
        OK(aclrtGetCurrentContext(&a.ctx));
    OK(aclrtCreateStream(&a.s));
    void *big;
    OK(aclrtMalloc(&big, RACE_BYTES, ACL_MEM_MALLOC_HUGE_FIRST));
    void *bufs[1] = {big};
    OK(aclsimLaunchKernel(a.s, 300000, k_fill_race, NULL, bufs, 1));
    sleep_ms(50); /* the kernel is running */
    pthread_t th;
    pthread_create(&th, NULL, race_destroy_thread, &a);
    sleep_ms(100); /* that thread now waits for (or joins) the busy worker */
    if (by_finalize) {
        OK(aclFinalize());
    } else {
        OK(aclrtResetDevice(0));
    }
    pthread_join(th, NULL);
    /* Whatever the interleaving: success, or the handle/runtime was already gone. */
    ASSERT(a.rc == ACL_SUCCESS || a.rc == ACL_ERROR_UNINITIALIZE ||
           a.rc == ACL_ERROR_RT_PARAM_INVALID);
    if (!by_finalize) {
        ASSERT(aclsimLiveObjectCount() == 0);
        OK(aclFinalize());
    }
    ASSERT(aclsimLiveObjectCount() == 0);
}
static void race_destroy_stream_vs_finalize_no_crash(void) { teardown_race(0, 1); }
static void race_destroy_stream_vs_reset_device_no_crash(void) { teardown_race(0, 0); }
static void race_destroy_context_vs_finalize_no_crash(void) { teardown_race(1, 1); }
static void race_destroy_context_vs_reset_device_no_crash(void) { teardown_race(1, 0); }

/* ---- Beyond the seeds: P4 P5 D7 D8 S5-S8 C10 ------------------------------------------ */

/* Shared state of host functions and kernels below, behind a mutex (helgrind-clean). */
static pthread_mutex_t hf_m = PTHREAD_MUTEX_INITIALIZER;
static int hf_log[8];
static int hf_n;
static pthread_t hf_thread;
static int hf_query_rc = -1, hf_query_status = -1, hf_sync_rc = -1;
static void hf_push(int v) {
    pthread_mutex_lock(&hf_m);
    if (hf_n < 8) hf_log[hf_n++] = v;
    pthread_mutex_unlock(&hf_m);
}
static int hf_count(void) {
    pthread_mutex_lock(&hf_m);
    int n = hf_n;
    pthread_mutex_unlock(&hf_m);
    return n;
}
/* A kernel body appending *(int*)ud to the log. */
static void k_push(void *ud, void *const *b, size_t n) {
    (void)b;
    (void)n;
    hf_push(*(int *)ud);
}
/* A host function appending *(int*)args to the log after 30 ms (later tasks must wait). */
static void hf_push_slow(void *args) {
    hf_thread = pthread_self();
    sleep_ms(30);
    hf_push(*(int *)args);
}
/* A host function that queries (allowed) and synchronizes (C8) from inside. */
static void hf_calls_runtime(void *args) {
    aclrtStreamStatus st = ACL_STREAM_STATUS_RESERVED;
    hf_query_rc = aclrtStreamQuery(NULL, &st);
    hf_query_status = (int)st;
    hf_sync_rc = aclrtSynchronizeStream((aclrtStream)args);
}
static void cb_push(void *ud) { hf_push(*(int *)ud); }

/* P4 (runtime_compatibility / system info samples): package versions say they are the
 * simulator; the real package names (a '-' and '_' swapped too); an unknown package is 100003
 * (no version file, as the runtime answers); the deprecated interface version; the thread's
 * recent error message names the call, the code and the reason. */
static void *errmsg_other_thread(void *arg) {
    (void)arg;
    return (void *)aclGetRecentErrMsg(); /* per thread: NULL here */
}
static void p4_version_queries_and_recent_error_message(void) {
    ASSERT(aclGetRecentErrMsg() == NULL); /* nothing failed yet; works before aclInit */
    char buf[ACL_PKG_VERSION_MAX_SIZE];
    int32_t num = 0;
    CHECK(aclsysGetVersionStr(NULL, buf), ACL_ERROR_INVALID_PARAM); /* NULL first */
    CHECK(aclsysGetVersionStr("runtime", buf), ACL_ERROR_UNINITIALIZE); /* P1 */
    const char *m = aclGetRecentErrMsg();
    ASSERT(m && strncmp(m, "aclsysGetVersionStr: 100001: ", 29) == 0);
    setup();
    const char *pkgs[] = {"CANN",     "runtime", "compiler", "opp",        "toolkit",
                          "hccl",     "driver",  "firmware", "opp_kernel", "opp-kernel"};
    for (size_t i = 0; i < sizeof pkgs / sizeof pkgs[0]; i++) {
        memset(buf, 0x7f, sizeof buf);
        OK(aclsysGetVersionStr((char *)pkgs[i], buf));
        ASSERT(memchr(buf, 0, sizeof buf) != NULL);
        ASSERT(strcmp(buf, "8.3.RC1-aclsim") == 0);
        OK(aclsysGetVersionNum((char *)pkgs[i], &num));
        ASSERT(num == 80300001);
    }
    CHECK(aclsysGetVersionStr("nosuchpkg", buf), 100003); /* ACL_ERROR_INVALID_FILE */
    m = aclGetRecentErrMsg();
    ASSERT(m && strstr(m, "aclsysGetVersionStr: 100003: unknown package") == m);
    CHECK(aclsysGetVersionNum("nosuchpkg", &num), 100003);
    CHECK(aclsysGetVersionStr("cann", buf), 100003); /* the directory's name, case and all */
    CHECK(aclsysGetVersionNum("runtime", NULL), ACL_ERROR_INVALID_PARAM);
    int32_t a = -1, b = -1, c = -1;
    OK(aclrtGetVersion(&a, &b, &c));
    ASSERT(a == 1 && b == 16 && c == 0);
    CHECK(aclrtGetVersion(&a, NULL, &c), ACL_ERROR_INVALID_PARAM);
    /* The reason of a protocol error. */
    aclrtEvent e;
    aclrtStream s;
    OK(aclrtCreateEvent(&e));
    OK(aclrtCreateStream(&s));
    CHECK(aclrtStreamWaitEvent(s, e), ACL_ERROR_RT_PARAM_INVALID);
    m = aclGetRecentErrMsg();
    ASSERT(m && strncmp(m, "aclrtStreamWaitEvent: 107000: event was never recorded", 54) == 0);
    /* Read once: "obtains and clears" (CANN); a successful call adds nothing. */
    OK(aclrtSynchronizeStream(s));
    ASSERT(aclGetRecentErrMsg() == NULL);
    /* Messages not read stack up, the latest on top. */
    CHECK(aclrtStreamWaitEvent(s, e), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(aclrtGetVersion(&a, NULL, &c), ACL_ERROR_INVALID_PARAM);
    m = aclGetRecentErrMsg();
    ASSERT(m && strncmp(m, "aclrtGetVersion: 100000: ", 25) == 0);
    ASSERT(strstr(m, "\naclrtStreamWaitEvent: 107000: ") != NULL);
    ASSERT(aclGetRecentErrMsg() == NULL);
    /* Generic reasons for codes without a specific one. */
    CHECK(aclrtSetDevice(9), ACL_ERROR_RT_INVALID_DEVICEID);
    m = aclGetRecentErrMsg();
    ASSERT(m && strncmp(m, "aclrtSetDevice: 107001: ", 24) == 0);
    /* Per thread. */
    pthread_t th;
    void *other = (void *)1;
    pthread_create(&th, NULL, errmsg_other_thread, NULL);
    pthread_join(th, &other);
    ASSERT(other == NULL);
    OK(aclrtDestroyStream(s));
    OK(aclrtDestroyEvent(e));
    teardown_clean();
}

/* P5: interval, rounding, get in ms; a kernel longer than the limit is stopped (its body
 * never runs) and the next synchronize reports 107020; 0 = no limit. */
static void p5_op_execute_timeout_stops_long_kernels(void) {
    uint64_t us = 0, actual = 0;
    uint32_t ms = 7;
    CHECK(aclrtSetOpExecuteTimeOut(1), ACL_ERROR_UNINITIALIZE);
    CHECK(aclrtGetOpTimeOutInterval(NULL), ACL_ERROR_INVALID_PARAM);
    setup();
    OK(aclrtGetOpTimeOutInterval(&us));
    ASSERT(us == 4096);
    OK(aclrtGetOpExecuteTimeout(&ms));
    ASSERT(ms == 0); /* default: no limit */
    OK(aclrtSetOpExecuteTimeOutV2(1, &actual));
    ASSERT(actual == 4096);
    OK(aclrtGetOpExecuteTimeout(&ms));
    ASSERT(ms == 4);
    OK(aclrtSetOpExecuteTimeOut(1));
    OK(aclrtGetOpExecuteTimeout(&ms));
    ASSERT(ms == 1003); /* 1 s rounded up to 245 x 4096 us */
    CHECK(aclrtSetOpExecuteTimeOutV2(10, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtSetOpExecuteTimeOutV2(UINT64_MAX, &actual), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtGetOpExecuteTimeout(NULL), ACL_ERROR_INVALID_PARAM);
    OK(aclrtSetOpExecuteTimeOutV2(20000, &actual));
    ASSERT(actual == 20480);
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    int *dev;
    OK(aclrtMalloc((void **)&dev, sizeof(int), ACL_MEM_MALLOC_HUGE_FIRST));
    int val = 5;
    void *bufs[1] = {dev};
    double t0 = now_ms();
    OK(aclsimLaunchKernel(s, 2000000, k_store, &val, bufs, 1)); /* 2 s > 20.48 ms */
    CHECK(aclrtSynchronizeStream(s), ACL_ERROR_RT_TASK_TIMEOUT);
    ASSERT(now_ms() - t0 < 1500); /* stopped at the limit */
    ASSERT(*dev == 0);             /* its body never ran */
    OK(aclrtSynchronizeStream(s)); /* reported once */
    OK(aclsimLaunchKernel(s, 1000, k_store, &val, bufs, 1)); /* within the limit */
    OK(aclrtSynchronizeStream(s));
    ASSERT(*dev == 5);
    OK(aclrtSetOpExecuteTimeOutV2(0, &actual)); /* no limit again */
    ASSERT(actual == 0);
    val = 6;
    OK(aclsimLaunchKernel(s, 40000, k_store, &val, bufs, 1));
    OK(aclrtSynchronizeStream(s));
    ASSERT(*dev == 6);
    OK(aclrtDestroyStream(s));
    OK(aclrtFree(dev));
    teardown_clean();
}

/* P5: no limit beyond 2176 s, the longest CANN documents: a larger one is capped there, as
 * the runtime caps the hardware's timeout count (V2 reports the capped value, which the
 * getter then reads); a kernel longer than 2176 s could never complete: 100000. */
static void p5_limits_are_capped_at_2176_s_and_longer_kernels_refused(void) {
    uint64_t actual = 0;
    uint32_t ms = 0;
    setup();
    OK(aclrtSetOpExecuteTimeOutV2(10000000000000ULL, &actual)); /* 10^7 s */
    ASSERT(actual == 2176000000ULL);
    OK(aclrtGetOpExecuteTimeout(&ms));
    ASSERT(ms == 2176000);
    OK(aclrtSetOpExecuteTimeOutV2(2176000000ULL - 1, &actual)); /* rounds up to the cap */
    ASSERT(actual == 2176000000ULL);
    OK(aclrtSetOpExecuteTimeOut(1));
    OK(aclrtSetOpExecuteTimeOut(UINT32_MAX));
    OK(aclrtGetOpExecuteTimeout(&ms));
    ASSERT(ms == 2176000);
    CHECK(aclrtSetOpExecuteTimeOutV2(UINT64_MAX, &actual), ACL_ERROR_INVALID_PARAM);
    OK(aclrtGetOpExecuteTimeout(&ms));
    ASSERT(ms == 2176000); /* unchanged */
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    CHECK(aclsimLaunchKernel(s, 2176000001ULL, NULL, NULL, NULL, 0), ACL_ERROR_INVALID_PARAM);
    {
        const char *why = aclGetRecentErrMsg();
        ASSERT(why && strstr(why, "P5"));
    }
    CHECK(aclsimLaunchKernel(s, UINT64_MAX, NULL, NULL, NULL, 0), ACL_ERROR_INVALID_PARAM);
    /* At the bound: accepted, and stopped by a limit. */
    OK(aclrtSetOpExecuteTimeOutV2(20000, &actual));
    double t0 = now_ms();
    OK(aclsimLaunchKernel(s, 2176000000ULL, NULL, NULL, NULL, 0));
    CHECK(aclrtSynchronizeStream(s), ACL_ERROR_RT_TASK_TIMEOUT);
    ASSERT(now_ms() - t0 < 1500);
    OK(aclrtSetOpExecuteTimeOutV2(0, &actual));
    OK(aclrtDestroyStream(s));
    teardown_clean();
}

/* D7: one force reset releases every aclrtSetDevice reference; it waits for the default
 * context's tasks; a device not set is 507007; D3 applies. */
static void d7_reset_device_force_releases_every_reference(void) {
    CHECK(aclrtResetDeviceForce(0), ACL_ERROR_UNINITIALIZE);
    OK(aclInit(NULL));
    CHECK(aclrtResetDeviceForce(0), ACL_ERROR_RT_CONTEXT_RELEASE_ERROR);
    CHECK(aclrtResetDeviceForce(7), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK(aclrtResetDeviceForce(-1), ACL_ERROR_RT_INVALID_DEVICEID);
    for (int i = 0; i < 3; i++) OK(aclrtSetDevice(0));
    /* Work on the default stream: the force reset waits for it. */
    hf_n = 0;
    int one = 1, two = 2;
    OK(aclsimLaunchKernel(NULL, 50000, k_push, &one, NULL, 0));
    OK(aclrtLaunchHostFunc(NULL, hf_push_slow, &two));
    OK(aclrtResetDeviceForce(0));
    ASSERT(hf_count() == 2);
    CHECK(aclrtResetDevice(0), ACL_ERROR_RT_CONTEXT_RELEASE_ERROR); /* no reference left */
    CHECK(aclrtResetDeviceForce(0), ACL_ERROR_RT_CONTEXT_RELEASE_ERROR);
    ASSERT(aclsimLiveObjectCount() == 0);
    expect_clean();
    /* D3: a stream left alive is flagged and released. */
    OK(aclrtSetDevice(0));
    OK(aclrtSetDevice(0));
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    OK(aclrtResetDeviceForce(0));
    expect_only("D3", 1);
    ASSERT(aclsimLiveObjectCount() == 0);
    OK(aclFinalize());
    expect_only("D3", 1);
}

/* D8 (system info sample): SoC name, memory info, device capabilities; no state changes. */
static void *meminfo_no_context(void *arg) {
    (void)arg;
    size_t f, t;
    CHECK(aclrtGetMemInfo(ACL_HBM_MEM, &f, &t), ACL_ERROR_RT_CONTEXT_NULL);
    return NULL;
}
static void d8_device_queries(void) {
    ASSERT(aclrtGetSocName() == NULL); /* before aclInit */
    ASSERT(strstr(aclGetRecentErrMsg(), "aclrtGetSocName: 100001") != NULL);
    size_t f = 0, t = 0;
    CHECK(aclrtGetMemInfo(ACL_HBM_MEM, NULL, &t), ACL_ERROR_INVALID_PARAM); /* NULL first */
    OK(aclInit(NULL));
    const char *name = aclrtGetSocName();
    ASSERT(name && strncmp(name, "Ascend", 6) == 0);
    const char *env = getenv("ACLSIM_SOC_NAME");
    if (env)
        ASSERT(strcmp(name, env) == 0);
    else
        ASSERT(strcmp(name, "Ascend310B-aclsim") == 0);
    int64_t v = -1;
    for (int info = ACL_DEVICE_INFO_AI_CORE_NUM; info <= ACL_DEVICE_INFO_L2_SIZE; info++) {
        OK(aclGetDeviceCapability(0, (aclDeviceInfo)info, &v)); /* no device set: fine */
        ASSERT(v > 0);
    }
    CHECK(aclGetDeviceCapability(2, ACL_DEVICE_INFO_AI_CORE_NUM, &v), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK(aclGetDeviceCapability(0, (aclDeviceInfo)3, &v), ACL_ERROR_INVALID_PARAM);
    CHECK(aclGetDeviceCapability(0, ACL_DEVICE_INFO_UNDEFINED, &v), ACL_ERROR_INVALID_PARAM);
    CHECK(aclGetDeviceCapability(0, ACL_DEVICE_INFO_L2_SIZE, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtGetMemInfo(ACL_HBM_MEM, &f, &t), ACL_ERROR_RT_CONTEXT_NULL); /* D8 */
    OK(aclrtSetDevice(0));
    OK(aclrtGetMemInfo(ACL_HBM_MEM, &f, &t));
    const char *mem = getenv("ACLSIM_DEVICE_MEMORY");
    size_t total = mem ? (size_t)strtoull(mem, NULL, 10) : (size_t)8 << 30;
    ASSERT(t == total && f == total);
    void *d;
    OK(aclrtMalloc(&d, 1 << 20, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclrtGetMemInfo(ACL_DDR_MEM, &f, &t));
    ASSERT(t == total && f == total - (1 << 20));
    CHECK(aclrtGetMemInfo((aclrtMemAttr)10, &f, &t), ACL_ERROR_INVALID_PARAM);
    pthread_t th;
    pthread_create(&th, NULL, meminfo_no_context, NULL);
    pthread_join(th, NULL);
    OK(aclrtFree(d));
    OK(aclrtGetMemInfo(ACL_HBM_MEM_P2P_NORMAL, &f, &t));
    ASSERT(f == total);
    ASSERT(aclrtGetSocName() == name); /* the same, stable pointer */
    teardown_clean();
}

/* S5: NOT_READY while a kernel runs, COMPLETE after; NULL is the default stream; the query
 * does not consume the stream's asynchronous error. */
static void s5_stream_query_not_ready_while_kernel_runs(void) {
    aclrtStreamStatus st = ACL_STREAM_STATUS_RESERVED;
    CHECK(aclrtStreamQuery(NULL, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtStreamQuery(NULL, &st), ACL_ERROR_UNINITIALIZE);
    setup();
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    OK(aclrtStreamQuery(s, &st));
    ASSERT(st == ACL_STREAM_STATUS_COMPLETE);
    OK(aclsimLaunchKernel(s, 200000, NULL, NULL, NULL, 0));
    OK(aclrtStreamQuery(s, &st));
    ASSERT(st == ACL_STREAM_STATUS_NOT_READY);
    OK(aclrtSynchronizeStream(s));
    OK(aclrtStreamQuery(s, &st));
    ASSERT(st == ACL_STREAM_STATUS_COMPLETE);
    OK(aclrtStreamQuery(NULL, &st)); /* default stream */
    ASSERT(st == ACL_STREAM_STATUS_COMPLETE);
    /* A failed task: the query reports completion and leaves the error to synchronize. */
    OK(aclsimInjectTaskFailure(s, ACL_ERROR_RT_INTERNAL_ERROR));
    OK(aclsimLaunchKernel(s, 1000, NULL, NULL, NULL, 0));
    for (int i = 0; i < 500; i++) {
        OK(aclrtStreamQuery(s, &st));
        if (st == ACL_STREAM_STATUS_COMPLETE) break;
        sleep_ms(2);
    }
    ASSERT(st == ACL_STREAM_STATUS_COMPLETE);
    OK(aclrtStreamQuery(s, &st));
    CHECK(aclrtSynchronizeStream(s), ACL_ERROR_RT_INTERNAL_ERROR);
    OK(aclrtSynchronizeStream(s));
    /* D6: a stream of another context. */
    aclrtContext dflt, c;
    OK(aclrtGetCurrentContext(&dflt));
    OK(aclrtCreateContext(&c, 0));
    CHECK(aclrtStreamQuery(s, &st), ACL_ERROR_RT_STREAM_CONTEXT);
    OK(aclrtSetCurrentContext(dflt));
    OK(aclrtDestroyContext(c));
    OK(aclrtDestroyStream(s));
    CHECK(aclrtStreamQuery(s, &st), ACL_ERROR_RT_PARAM_INVALID); /* destroyed */
    teardown_clean();
}

/* S6: modes 0/1 else 100000; at most once per stream, never on the default stream (107000
 * and an S6 finding each); CONTINUE (default): a failed task does not stop later ones. */
static void s6_failure_mode_codes_and_continue_on_failure(void) {
    CHECK(aclrtSetStreamFailureMode(NULL, ACL_STOP_ON_FAILURE), ACL_ERROR_UNINITIALIZE);
    setup();
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    CHECK(aclrtSetStreamFailureMode(s, 2), ACL_ERROR_INVALID_PARAM);
    expect_clean();
    CHECK(aclrtSetStreamFailureMode(NULL, ACL_STOP_ON_FAILURE), ACL_ERROR_RT_PARAM_INVALID);
    expect_only("S6", 1);
    OK(aclrtSetStreamFailureMode(s, ACL_CONTINUE_ON_FAILURE));
    CHECK(aclrtSetStreamFailureMode(s, ACL_STOP_ON_FAILURE), ACL_ERROR_RT_PARAM_INVALID);
    expect_only("S6", 2);
    ASSERT(strstr(aclGetRecentErrMsg(), "already set") != NULL);
    /* CONTINUE: the failed memset does not write, the next one runs. */
    unsigned char *d;
    OK(aclrtMalloc((void **)&d, 16, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclsimInjectTaskFailure(s, 507899));
    OK(aclrtMemsetAsync(d, 16, 1, 16, s));
    OK(aclrtMemsetAsync(d, 8, 2, 8, s));
    CHECK(aclrtSynchronizeStream(s), 507899);
    ASSERT(d[0] == 2 && d[15] == 0);
    OK(aclrtSynchronizeStream(s));
    OK(aclrtDestroyStream(s));
    OK(aclrtFree(d));
    OK(aclrtResetDevice(0));
    OK(aclFinalize());
    expect_only("S6", 2);
}

/* S6 (stream failure mode sample): STOP on s1; the first failed task on s1 stops every
 * stream of the context: s2's pending memset and record are dropped, each stream's next
 * synchronize reports the failure once, the event whose record was dropped reports it once,
 * and tasks issued afterwards are refused with 107023 (never queued silently). Another
 * context is unaffected. */
static void s6_stop_on_failure_stops_every_stream_of_the_context(void) {
    setup();
    aclrtStream s1, s2;
    OK(aclrtCreateStream(&s1));
    OK(aclrtCreateStream(&s2));
    OK(aclrtSetStreamFailureMode(s1, ACL_STOP_ON_FAILURE));
    unsigned char *d1, *d2;
    OK(aclrtMalloc((void **)&d1, 16, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclrtMalloc((void **)&d2, 16, ACL_MEM_MALLOC_HUGE_FIRST));
    aclrtEvent ev;
    OK(aclrtCreateEventWithFlag(&ev, ACL_EVENT_SYNC));
    OK(aclsimLaunchKernel(s2, 400000, NULL, NULL, NULL, 0)); /* running when s1 fails */
    OK(aclrtMemsetAsync(d2, 16, 7, 16, s2));                  /* pending: dropped */
    OK(aclrtRecordEvent(ev, s2));                             /* pending: dropped */
    /* s1 fails only after its first kernel (200 ms), so the memset behind is issued first. */
    OK(aclsimLaunchKernel(s1, 200000, NULL, NULL, NULL, 0));
    sleep_ms(20);
    OK(aclsimInjectTaskFailure(s1, 507899));
    OK(aclsimLaunchKernel(s1, 1000, NULL, NULL, NULL, 0)); /* fails */
    OK(aclrtMemsetAsync(d1, 16, 5, 16, s1));               /* dropped */
    CHECK(aclrtSynchronizeStream(s1), 507899);
    CHECK(aclrtSynchronizeStream(s2), 507899);
    ASSERT(d1[0] == 0 && d2[0] == 0);
    /* Reported once per stream and once by the event whose record was dropped. */
    OK(aclrtSynchronizeStream(s1));
    OK(aclrtSynchronizeStream(s2));
    OK(aclrtSynchronizeDevice());
    CHECK(aclrtSynchronizeEvent(ev), 507899);
    OK(aclrtSynchronizeEvent(ev));
    /* Issued afterwards: refused at the call, nothing queued. */
    CHECK(aclrtMemsetAsync(d2, 16, 9, 16, s2), 107023);
    CHECK(aclrtRecordEvent(ev, s1), 107023);
    CHECK(aclsimLaunchKernel(s1, 10, NULL, NULL, NULL, 0), 107023);
    OK(aclrtSynchronizeStream(s2));
    ASSERT(d2[0] == 0);
    OK(aclrtDestroyEvent(ev));
    aclrtStreamStatus st;
    OK(aclrtStreamQuery(s2, &st));
    ASSERT(st == ACL_STREAM_STATUS_COMPLETE);
    /* Another context of the same device keeps running. */
    aclrtContext dflt, c;
    OK(aclrtGetCurrentContext(&dflt));
    OK(aclrtCreateContext(&c, 0));
    aclrtStream s3;
    OK(aclrtCreateStream(&s3));
    OK(aclrtMemsetAsync(d2, 16, 3, 16, s3));
    OK(aclrtSynchronizeStream(s3));
    ASSERT(d2[0] == 3);
    OK(aclrtDestroyStream(s3));
    OK(aclrtSetCurrentContext(dflt));
    OK(aclrtDestroyContext(c));
    OK(aclrtDestroyStream(s1));
    OK(aclrtDestroyStream(s2));
    OK(aclrtFree(d1));
    OK(aclrtFree(d2));
    teardown_clean();
}

/* S7: priority 0-7, flags within 0x1f, else 100000; otherwise an ordinary stream. */
static void *config_no_context(void *arg) {
    (void)arg;
    aclrtStream s;
    CHECK(aclrtCreateStreamWithConfig(&s, 0, 0), ACL_ERROR_RT_CONTEXT_NULL);
    return NULL;
}
static void s7_create_stream_with_config_codes(void) {
    aclrtStream s;
    CHECK(aclrtCreateStreamWithConfig(NULL, 0, 0), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtCreateStreamWithConfig(&s, 0, 0), ACL_ERROR_UNINITIALIZE);
    setup();
    CHECK(aclrtCreateStreamWithConfig(&s, 8, 0), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtCreateStreamWithConfig(&s, 0, 0x40), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtCreateStreamWithConfig(NULL, 0, 0), ACL_ERROR_INVALID_PARAM);
    pthread_t th;
    pthread_create(&th, NULL, config_no_context, NULL);
    pthread_join(th, NULL);
    ASSERT(aclsimLiveObjectCount() == 0);
    OK(aclrtCreateStreamWithConfig(&s, 7,
                                   ACL_STREAM_FAST_LAUNCH | ACL_STREAM_FAST_SYNC |
                                       ACL_STREAM_PERSISTENT | ACL_STREAM_HUGE |
                                       ACL_STREAM_CPU_SCHEDULE));
    aclrtStream s0;
    OK(aclrtCreateStreamWithConfig(&s0, 0, 0));
    unsigned char *d, h[16];
    OK(aclrtMalloc((void **)&d, 16, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclrtMemsetAsync(d, 16, 4, 16, s));
    OK(aclrtMemcpyAsync(h, 16, d, 16, ACL_MEMCPY_DEVICE_TO_HOST, s));
    OK(aclrtSynchronizeStream(s));
    ASSERT(h[0] == 4 && h[15] == 4);
    OK(aclrtSetStreamFailureMode(s0, ACL_STOP_ON_FAILURE)); /* S1-S6 apply */
    OK(aclrtDestroyStream(s));
    OK(aclrtDestroyStream(s0));
    OK(aclrtFree(d));
    teardown_clean();
}

/* S8: pending tasks are dropped and never run: a queued copy never writes, a record never
 * completes its event, a host function never runs, each reported (an S8 finding per
 * discarded task, like a leak; a kernel already running finishes, unreported); own context only
 * (107003); the memory is free to reuse once the call returns. */
static void s8_destroy_stream_force_drops_pending_tasks(void) {
    CHECK(aclrtDestroyStreamForce(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtDestroyStreamForce((aclrtStream)0x1234), ACL_ERROR_UNINITIALIZE);
    setup();
    aclrtStream s;
    aclrtEvent e;
    OK(aclrtCreateStream(&s));
    OK(aclrtCreateEvent(&e));
    int *dev, host = 42;
    OK(aclrtMalloc((void **)&dev, sizeof(int), ACL_MEM_MALLOC_HUGE_FIRST));
    hf_n = 0;
    int one = 1;
    OK(aclsimLaunchKernel(s, 100000, NULL, NULL, NULL, 0)); /* running: finishes */
    OK(aclrtMemcpyAsync(dev, sizeof(int), &host, sizeof(int), ACL_MEMCPY_HOST_TO_DEVICE, s));
    OK(aclrtRecordEvent(e, s));
    OK(aclrtLaunchHostFunc(s, hf_push_slow, &one));
    OK(aclrtDestroyStreamForce(s));
    /* The copy, the record, the host function; and the kernel if its worker had not
     * started it yet. */
    ASSERT(count_rule("S8") >= 3 && count_rule("S8") <= 4);
    expect_only("S8", -1);
    aclsimClearFindings();
    ASSERT(*dev == 0);      /* the copy never wrote */
    ASSERT(hf_count() == 0); /* the host function never ran */
    aclrtEventRecordedStatus es;
    OK(aclrtQueryEventStatus(e, &es));
    ASSERT(es == ACL_EVENT_RECORDED_STATUS_NOT_READY); /* the record never completed */
    aclrtStream s2;
    OK(aclrtCreateStream(&s2));
    /* The dropped record does not count: the plain event was never recorded (E1). */
    CHECK(aclrtStreamWaitEvent(s2, e), ACL_ERROR_RT_PARAM_INVALID);
    OK(aclrtFree(dev)); /* free to reuse: no M2 finding */
    OK(aclrtDestroyEvent(e));
    CHECK(aclrtDestroyStreamForce(s), ACL_ERROR_RT_PARAM_INVALID); /* already destroyed */
    /* D6: only from the stream's own context. */
    aclrtContext dflt, c;
    OK(aclrtGetCurrentContext(&dflt));
    OK(aclrtCreateContext(&c, 0));
    CHECK(aclrtDestroyStreamForce(s2), ACL_ERROR_RT_STREAM_CONTEXT);
    OK(aclrtSetCurrentContext(dflt));
    OK(aclrtDestroyStreamForce(s2)); /* nothing pending: like aclrtDestroyStream */
    OK(aclrtDestroyContext(c));
    teardown_clean();
}

/* S8 with callbacks: a pending callback is dropped (never runs: an S8 finding); destroying a
 * stream still subscribed is the C1 finding, as for aclrtDestroyStream. */
static void s8_destroy_stream_force_drops_callbacks(void) {
    setup();
    aclrtContext ctx;
    OK(aclrtGetCurrentContext(&ctx));
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    pthread_t th;
    cb_set_stop(0);
    pthread_create(&th, NULL, report_loop, ctx);
    OK(aclrtSubscribeReport((uint64_t)th, s));
    hf_n = 0;
    int one = 1;
    OK(aclsimLaunchKernel(s, 100000, NULL, NULL, NULL, 0));
    OK(aclrtLaunchCallback(cb_push, &one, ACL_CALLBACK_BLOCK, s));
    OK(aclrtDestroyStreamForce(s));
    int dropped = count_rule("S8"); /* the callback, and the kernel if not started yet */
    ASSERT(dropped >= 1 && dropped <= 2);
    sleep_ms(50);
    ASSERT(hf_count() == 0);
    cb_set_stop(1);
    pthread_join(th, NULL);
    OK(aclrtResetDevice(0));
    ASSERT(aclsimLiveObjectCount() == 0);
    OK(aclFinalize());
    ASSERT(count_rule("C1") == 1 && (int)aclsimFindingCount() == dropped + 1);
}

/* C10 (callback_hostfunc sample): the host function runs on a runtime thread once the
 * earlier tasks of the stream are done; later tasks wait for it. Inside it, queries are
 * allowed and everything else is rejected (107000, C8). */
static void c10_host_func_runs_in_order_on_a_runtime_thread(void) {
    CHECK(aclrtLaunchHostFunc(NULL, NULL, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtLaunchHostFunc(NULL, hf_push_slow, NULL), ACL_ERROR_UNINITIALIZE);
    setup();
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    hf_n = 0;
    int one = 1, two = 2, three = 3;
    OK(aclsimLaunchKernel(s, 30000, k_push, &one, NULL, 0));
    OK(aclrtLaunchHostFunc(s, hf_push_slow, &two));
    OK(aclsimLaunchKernel(s, 0, k_push, &three, NULL, 0));
    OK(aclrtSynchronizeStream(s));
    ASSERT(hf_count() == 3);
    ASSERT(hf_log[0] == 1 && hf_log[1] == 2 && hf_log[2] == 3);
    ASSERT(!pthread_equal(hf_thread, pthread_self()));
    /* The default stream (NULL) too. */
    OK(aclrtLaunchHostFunc(NULL, hf_push_slow, &three));
    OK(aclrtSynchronizeStream(NULL));
    ASSERT(hf_count() == 4);
    expect_clean();
    /* C8 inside a host function. */
    OK(aclrtLaunchHostFunc(s, hf_calls_runtime, s));
    OK(aclrtSynchronizeStream(s));
    ASSERT(hf_query_rc == ACL_SUCCESS && hf_query_status == ACL_STREAM_STATUS_COMPLETE);
    ASSERT(hf_sync_rc == ACL_ERROR_RT_PARAM_INVALID);
    expect_only("C8", 1);
    aclsimClearFindings();
    /* D6: another context's stream. */
    aclrtContext dflt, c;
    OK(aclrtGetCurrentContext(&dflt));
    OK(aclrtCreateContext(&c, 0));
    CHECK(aclrtLaunchHostFunc(s, hf_push_slow, &one), ACL_ERROR_RT_STREAM_CONTEXT);
    OK(aclrtSetCurrentContext(dflt));
    OK(aclrtDestroyContext(c));
    OK(aclrtDestroyStream(s));
    teardown_clean();
}

/* C11: the report-callback functions and aclrtLaunchHostFunc are never mixed on one stream,
 * either way round: 107011 (ACL_ERROR_RT_STREAM_SUBSCRIBE) and a C11 finding. */
static void c11_report_callbacks_and_host_functions_are_never_mixed(void) {
    setup();
    aclrtContext ctx;
    OK(aclrtGetCurrentContext(&ctx));
    aclrtStream s1, s2;
    OK(aclrtCreateStream(&s1));
    OK(aclrtCreateStream(&s2));
    pthread_t th;
    cb_set_stop(0);
    pthread_create(&th, NULL, report_loop, ctx);
    OK(aclrtSubscribeReport((uint64_t)th, s1));
    int one = 1;
    CHECK(aclrtLaunchHostFunc(s1, hf_push_slow, &one), ACL_ERROR_RT_STREAM_SUBSCRIBE);
    expect_only("C11", 1);
    hf_n = 0;
    OK(aclrtLaunchHostFunc(s2, hf_push_slow, &one));
    OK(aclrtSynchronizeStream(s2));
    /* Once a host function was launched, no report callback function on the stream. */
    CHECK(aclrtSubscribeReport((uint64_t)th, s2), ACL_ERROR_RT_STREAM_SUBSCRIBE);
    expect_only("C11", 2);
    CHECK(aclrtLaunchCallback(cb_record, &one, ACL_CALLBACK_NO_BLOCK, s2),
          ACL_ERROR_RT_STREAM_SUBSCRIBE);
    CHECK(aclrtUnSubscribeReport((uint64_t)th, s2), ACL_ERROR_RT_STREAM_SUBSCRIBE);
    expect_only("C11", 4);
    OK(aclrtUnSubscribeReport((uint64_t)th, s1));
    OK(aclrtLaunchHostFunc(s1, hf_push_slow, &one)); /* no longer subscribed */
    OK(aclrtSynchronizeStream(s1));
    ASSERT(hf_count() == 2);
    cb_set_stop(1);
    pthread_join(th, NULL);
    OK(aclrtDestroyStream(s1));
    OK(aclrtDestroyStream(s2));
    OK(aclrtResetDevice(0));
    OK(aclFinalize());
    expect_only("C11", 4);
}

/* aclsimInjectTaskFailure: argument checks; record/wait tasks pass through, the next
 * executable task fails; the new functions are counted and injectable (aclsimInjectFault
 * knows their names; aclGetRecentErrMsg can never fail). */
static void aclsim_inject_task_failure_and_new_names(void) {
    CHECK(aclsimInjectTaskFailure(NULL, 507000), ACL_ERROR_UNINITIALIZE);
    CHECK(aclsimInjectFault("aclGetRecentErrMsg", 507000, 1), ACL_ERROR_INVALID_PARAM);
    CHECK(aclsimInjectFault("aclrtLaunchHostFunc", 507000, 1), ACL_ERROR_UNINITIALIZE);
    aclsimResetCallCounts();
    setup();
    aclrtStream s;
    aclrtEvent e;
    OK(aclrtCreateStream(&s));
    OK(aclrtCreateEvent(&e));
    CHECK(aclsimInjectTaskFailure(s, 0), ACL_ERROR_INVALID_PARAM);
    CHECK(aclsimInjectTaskFailure((aclrtStream)0x1234, 507000), ACL_ERROR_RT_PARAM_INVALID);
    unsigned char *d;
    OK(aclrtMalloc((void **)&d, 16, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclsimInjectTaskFailure(s, 507000));
    OK(aclrtRecordEvent(e, s));             /* passes through */
    OK(aclrtMemsetAsync(d, 16, 1, 16, s));  /* fails */
    OK(aclrtMemsetAsync(d, 4, 2, 4, s));    /* runs */
    OK(aclrtSynchronizeEvent(e));
    CHECK(aclrtSynchronizeStream(s), 507000);
    ASSERT(d[0] == 2 && d[4] == 0);
    /* Names: injectable, counted. */
    OK(aclsimInjectFault("aclrtGetSocName", 507000, 1));
    ASSERT(aclrtGetSocName() == NULL);
    ASSERT(strncmp(aclGetRecentErrMsg(), "aclrtGetSocName: 507000: injected", 33) == 0);
    ASSERT(aclrtGetSocName() != NULL);
    OK(aclsimInjectFault("aclrtStreamQuery", 507000, 1));
    aclrtStreamStatus st;
    CHECK(aclrtStreamQuery(s, &st), 507000);
    OK(aclrtStreamQuery(s, &st));
    OK(aclsimInjectFault("aclsysGetVersionNum", 500001, 1));
    int32_t n;
    CHECK(aclsysGetVersionNum("runtime", &n), 500001);
    ASSERT(aclsimCallCount("aclrtGetSocName") == 2);
    ASSERT(aclsimCallCount("aclrtStreamQuery") == 2);
    ASSERT(aclsimCallCount("aclsysGetVersionNum") == 1);
    (void)aclGetRecentErrMsg();
    ASSERT(aclsimCallCount("aclGetRecentErrMsg") == 2);
    ASSERT(aclsimCallCount("aclrtResetDeviceForce") == 0);
    OK(aclrtDestroyEvent(e));
    OK(aclrtDestroyStream(s));
    OK(aclrtFree(d));
    teardown_clean();
}

/* ---- Cost of a synchronize (callgrind) ----------------------------------------------------- */

/* N (env ACLSIM_SYNC_LOOP, default 1000) synchronizations of an idle stream, of the device
 * and of a completed event: the per-call work of the host waits. Measured under callgrind
 * with --toggle-collect=sync_loop (sim/README.md); as a test it only checks the codes. */
__attribute__((noinline)) static void sync_loop(aclrtStream s, aclrtEvent e, int n) {
    for (int i = 0; i < n; i++) {
        OK(aclrtSynchronizeStream(s));
        OK(aclrtSynchronizeDevice());
        OK(aclrtSynchronizeEvent(e));
    }
}
static void perf_synchronize_loop(void) {
    const char *env = getenv("ACLSIM_SYNC_LOOP");
    int n = env ? atoi(env) : 1000;
    setup();
    aclrtStream s;
    aclrtEvent e;
    OK(aclrtCreateStream(&s));
    OK(aclrtCreateEvent(&e));
    OK(aclrtRecordEvent(e, s));
    sync_loop(s, e, 1); /* warm-up, outside nothing: the first call creates lazy state */
    sync_loop(s, e, n);
    OK(aclrtDestroyEvent(e));
    OK(aclrtDestroyStream(s));
    teardown_clean();
}

/* ---- Models (MD1-MD13): the simulator's text format (sim/README.md "Models") ---------- */

static char md_paths[32][64];
static int md_npaths;

static void md_unlink_all(void) {
    for (int i = 0; i < md_npaths; i++) unlink(md_paths[i]);
}

/* Writes `text` to a fresh temporary file; removed at exit. */
static const char *md_file(const char *text) {
    ASSERT(md_npaths < 32);
    char *p = md_paths[md_npaths];
    snprintf(p, 64, "/tmp/aclsim_model_XXXXXX");
    int fd = mkstemp(p);
    ASSERT(fd >= 0);
    if (md_npaths++ == 0) atexit(md_unlink_all);
    size_t len = strlen(text);
    ASSERT(write(fd, text, len) == (ssize_t)len);
    close(fd);
    return p;
}

/* A 2-class linear classifier over 4 features: scores = x.W + b. */
static const char *MD_CLASSIFIER = "aclsim-model 1\n"
                                   "# 2 classes over 4 features\n"
                                   "input  features f32 1x4\n"
                                   "output scores   f32 1x2\n"
                                   "op matmul 4 2  1 0  0 1  1 0  0 1\n"
                                   "op bias 2 0.5 -0.5\n";
/* The same with a delay: 150 ms per execution. */
static const char *MD_SLOW = "aclsim-model 1\n"
                             "input  features f32 1x4\n"
                             "output scores   f32 1x2\n"
                             "time 150000\n"
                             "op matmul 4 2  1 0  0 1  1 0  0 1\n"
                             "op bias 2 0.5 -0.5\n";
/* A dynamic-batch model: each row of 2 values becomes its sum. */
static const char *MD_DYNAMIC = "aclsim-model 1\n"
                                "input  x f32 4x2\n"
                                "output y f32 4x1\n"
                                "batch 1 2 4\n"
                                "op matmul 2 1 1 1\n";

/* Device I/O of one model: one buffer per input and output, sizes from the description. */
struct md_io {
    aclmdlDataset *in, *out;
    aclDataBuffer *buf[3];
    void *mem[3];
    size_t size[3];
    int n;
};

static void md_io_make(aclmdlDesc *desc, struct md_io *io) {
    memset(io, 0, sizeof *io);
    io->in = aclmdlCreateDataset();
    io->out = aclmdlCreateDataset();
    ASSERT(io->in && io->out);
    size_t nin = aclmdlGetNumInputs(desc);
    ASSERT(nin >= 1 && nin <= 2 && aclmdlGetNumOutputs(desc) == 1);
    for (size_t i = 0; i <= nin; i++) {
        size_t sz = i < nin ? aclmdlGetInputSizeByIndex(desc, i) : aclmdlGetOutputSizeByIndex(desc, 0);
        ASSERT(sz > 0);
        OK(aclrtMalloc(&io->mem[i], sz, ACL_MEM_MALLOC_HUGE_FIRST));
        io->size[i] = sz;
        io->buf[i] = aclCreateDataBuffer(io->mem[i], sz);
        ASSERT(io->buf[i]);
        OK(aclmdlAddDatasetBuffer(i < nin ? io->in : io->out, io->buf[i]));
    }
    io->n = (int)nin + 1;
}

static void md_io_free(struct md_io *io) {
    for (int i = 0; i < io->n; i++) {
        OK(aclDestroyDataBuffer(io->buf[i]));
        OK(aclrtFree(io->mem[i]));
    }
    OK(aclmdlDestroyDataset(io->in));
    OK(aclmdlDestroyDataset(io->out));
}

static uint32_t md_load(const char *text, aclmdlDesc **desc) {
    uint32_t id = 0;
    OK(aclmdlLoadFromFile(md_file(text), &id));
    ASSERT(id >= 1);
    *desc = aclmdlCreateDesc();
    ASSERT(*desc);
    OK(aclmdlGetDesc(*desc, id));
    return id;
}

static void md_put(void *dev, const float *v, size_t n) {
    OK(aclrtMemcpy(dev, n * sizeof(float), v, n * sizeof(float), ACL_MEMCPY_HOST_TO_DEVICE));
}

static void md_get(float *v, const void *dev, size_t n) {
    OK(aclrtMemcpy(v, n * sizeof(float), dev, n * sizeof(float), ACL_MEMCPY_DEVICE_TO_HOST));
}

/* Releases everything, then finalizes and expects exactly `n` findings of `rule`. */
static void md_finish(const char *rule, int n) {
    OK(aclrtResetDevice(0));
    ASSERT(aclsimLiveObjectCount() == 0);
    OK(aclFinalize());
    if (rule)
        expect_only(rule, n);
    else
        expect_clean();
}

static void md_load_and_execute_sync_and_async(void) {
    setup();
    size_t work = 0, weight = 0;
    const char *path = md_file(MD_CLASSIFIER);
    OK(aclmdlQuerySize(path, &work, &weight));
    ASSERT(work == 4096 && weight == 4096);
    uint32_t id = 0;
    OK(aclmdlLoadFromFile(path, &id));
    aclmdlDesc *desc = aclmdlCreateDesc();
    OK(aclmdlGetDesc(desc, id));
    ASSERT(aclmdlGetNumInputs(desc) == 1 && aclmdlGetNumOutputs(desc) == 1);
    ASSERT(aclmdlGetInputSizeByIndex(desc, 0) == 16 && aclmdlGetOutputSizeByIndex(desc, 0) == 8);
    aclmdlIODims dims;
    OK(aclmdlGetInputDims(desc, 0, &dims));
    ASSERT(strcmp(dims.name, "features") == 0 && dims.dimCount == 2 && dims.dims[0] == 1 &&
           dims.dims[1] == 4);
    OK(aclmdlGetOutputDims(desc, 0, &dims));
    ASSERT(strcmp(dims.name, "scores") == 0 && dims.dimCount == 2 && dims.dims[1] == 2);
    size_t index = 9;
    OK(aclmdlGetInputIndexByName(desc, "features", &index));
    ASSERT(index == 0);
    CHECK(aclmdlGetInputIndexByName(desc, "nope", &index), ACL_ERROR_INVALID_PARAM);
    CHECK(aclmdlGetInputDims(desc, 1, &dims), ACL_ERROR_INVALID_PARAM);
    struct md_io io;
    md_io_make(desc, &io);
    ASSERT(aclmdlGetDatasetNumBuffers(io.in) == 1);
    ASSERT(aclmdlGetDatasetBuffer(io.in, 0) == io.buf[0]);
    ASSERT(aclmdlGetDatasetBuffer(io.in, 1) == NULL);
    ASSERT(aclGetDataBufferAddr(io.buf[0]) == io.mem[0]);
    ASSERT(aclGetDataBufferSizeV2(io.buf[0]) == 16);

    /* Synchronous: scores = (1+3+0.5, 2+4-0.5). */
    float x[4] = {1, 2, 3, 4}, y[2] = {0, 0};
    md_put(io.mem[0], x, 4);
    OK(aclmdlExecute(id, io.in, io.out));
    md_get(y, io.mem[1], 2);
    ASSERT(y[0] == 4.5f && y[1] == 5.5f);

    /* Asynchronous: copy in, execute, copy out on one stream. */
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    float x2[4] = {-1, 10, 2, 0};
    float *host;
    OK(aclrtMallocHost((void **)&host, 16));
    memcpy(host, x2, 16);
    OK(aclrtMemcpyAsync(io.mem[0], 16, host, 16, ACL_MEMCPY_HOST_TO_DEVICE, s));
    OK(aclmdlExecuteAsync(id, io.in, io.out, s));
    OK(aclrtMemcpyAsync(host, 8, io.mem[1], 8, ACL_MEMCPY_DEVICE_TO_HOST, s));
    OK(aclrtSynchronizeStream(s));
    ASSERT(host[0] == 1.5f && host[1] == 9.5f);

    /* An argmax model with u8 input and i32 output, loaded from (untracked) host memory. */
    const char *argmax = "aclsim-model 1\ninput px u8 2x3\noutput cls i32 2\nop scale 2\nop argmax 3\n";
    uint32_t id2 = 0;
    OK(aclmdlLoadFromMem(argmax, strlen(argmax), &id2));
    ASSERT(id2 == id + 1);
    aclmdlDesc *desc2 = aclmdlCreateDesc();
    OK(aclmdlGetDesc(desc2, id2));
    struct md_io io2;
    md_io_make(desc2, &io2);
    unsigned char px[6] = {1, 9, 3, 200, 7, 200};
    OK(aclrtMemcpy(io2.mem[0], 6, px, 6, ACL_MEMCPY_HOST_TO_DEVICE));
    OK(aclmdlExecuteAsync(id2, io2.in, io2.out, s));
    OK(aclrtSynchronizeStream(s));
    int32_t cls[2];
    OK(aclrtMemcpy(cls, 8, io2.mem[1], 8, ACL_MEMCPY_DEVICE_TO_HOST));
    ASSERT(cls[0] == 1 && cls[1] == 0);

    md_io_free(&io2);
    OK(aclmdlUnload(id2));
    OK(aclmdlDestroyDesc(desc2));
    OK(aclrtDestroyStream(s));
    OK(aclrtFreeHost(host));
    md_io_free(&io);
    OK(aclmdlUnload(id));
    OK(aclmdlDestroyDesc(desc));
    CHECK(aclmdlUnload(id), ACL_ERROR_INVALID_MODEL_ID);
    md_finish(NULL, 0);
}

static void md_real_om_and_bad_files_are_refused(void) {
    OK(aclInit(NULL));
    uint32_t id = 0;
    /* No current context: 107002. */
    CHECK(aclmdlLoadFromFile(md_file(MD_CLASSIFIER), &id), ACL_ERROR_RT_CONTEXT_NULL);
    OK(aclrtSetDevice(0));
    /* Something like a real .om: binary. */
    static const char om[] = "IMOD\x01\x02\x03\x04 compiled by ATC";
    CHECK(aclmdlLoadFromMem(om, sizeof om, &id), ACL_ERROR_PARSE_MODEL);
    const char *m = aclGetRecentErrMsg();
    ASSERT(m && strstr(m, "not an aclsim model: a real .om needs the CANN runtime"));
    CHECK(aclmdlLoadFromFile(md_file("\x7f" "ELF not a model"), &id), ACL_ERROR_PARSE_MODEL);
    ASSERT(strstr(aclGetRecentErrMsg(), "not an aclsim model"));
    CHECK(aclmdlLoadFromFile("/nonexistent/aclsim/model.om", &id), ACL_ERROR_READ_MODEL_FAILURE);
    size_t w, wt;
    CHECK(aclmdlQuerySize("/nonexistent/aclsim/model.om", &w, &wt), ACL_ERROR_READ_MODEL_FAILURE);
    /* A syntax error names the line; a model without output lacks an attribute. */
    CHECK(aclmdlLoadFromFile(md_file("aclsim-model 1\ninput x f32 4\noutput y f32 4\nop frobnicate\n"), &id),
          ACL_ERROR_PARSE_MODEL);
    ASSERT(strstr(aclGetRecentErrMsg(), "line 4"));
    CHECK(aclmdlLoadFromFile(md_file("aclsim-model 1\ninput x f32 4\n"), &id),
          ACL_ERROR_MODEL_MISSING_ATTR);
    CHECK(aclmdlLoadFromMem(MD_CLASSIFIER, 0, &id), ACL_ERROR_MODEL_SIZE_INVALID);
    /* Unknown ids. */
    aclmdlDesc *desc = aclmdlCreateDesc();
    CHECK(aclmdlGetDesc(desc, 12345), ACL_ERROR_INVALID_MODEL_ID);
    CHECK(aclmdlUnload(12345), ACL_ERROR_INVALID_MODEL_ID);
    CHECK(aclmdlDestroyDesc(NULL), ACL_ERROR_INVALID_PARAM);
    OK(aclmdlDestroyDesc(desc));
    CHECK(aclmdlDestroyDesc(desc), ACL_ERROR_INVALID_PARAM); /* destroyed twice: MD5 */
    md_finish("MD5", 1);
    /* Before aclInit: 100001 (P1), NULL for the creators. */
    CHECK(aclmdlLoadFromFile(md_file(MD_CLASSIFIER), &id), ACL_ERROR_UNINITIALIZE);
    ASSERT(aclmdlCreateDataset() == NULL && aclCreateDataBuffer(&id, 4) == NULL);
}

static void md11_dynamic_batch(void) {
    setup();
    aclmdlDesc *desc;
    uint32_t id = md_load(MD_DYNAMIC, &desc);
    ASSERT(aclmdlGetNumInputs(desc) == 2);
    ASSERT(aclmdlGetInputSizeByIndex(desc, 0) == 32 && aclmdlGetInputSizeByIndex(desc, 1) == 8);
    ASSERT(aclmdlGetOutputSizeByIndex(desc, 0) == 16);
    size_t index = 0;
    OK(aclmdlGetInputIndexByName(desc, ACL_DYNAMIC_TENSOR_NAME, &index));
    ASSERT(index == 1);
    aclmdlIODims dims;
    OK(aclmdlGetCurOutputDims(desc, 0, &dims));
    ASSERT(dims.dimCount == 2 && dims.dims[0] == 4 && dims.dims[1] == 1); /* largest gear */
    aclmdlBatch gears;
    OK(aclmdlGetDynamicBatch(desc, &gears));
    ASSERT(gears.batchCount == 3 && gears.batch[0] == 1 && gears.batch[1] == 2 &&
           gears.batch[2] == 4);
    struct md_io io;
    md_io_make(desc, &io);
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[4];
    md_put(io.mem[0], x, 8);

    OK(aclmdlSetDynamicBatchSize(id, io.in, 1, 2));
    uint64_t written = 0;
    OK(aclrtMemcpy(&written, 8, io.mem[1], 8, ACL_MEMCPY_DEVICE_TO_HOST));
    ASSERT(written == 2);
    OK(aclmdlGetCurOutputDims(desc, 0, &dims));
    ASSERT(dims.dims[0] == 2);
    OK(aclmdlGetOutputDims(desc, 0, &dims));
    ASSERT(dims.dims[0] == 4); /* the described dims keep the largest gear */
    OK(aclmdlExecute(id, io.in, io.out));
    md_get(y, io.mem[2], 4);
    ASSERT(y[0] == 3 && y[1] == 7 && y[2] == 0 && y[3] == 0);
    ASSERT(aclsimFindingCount() == 0);

    /* Not a gear, not the dynamic input: 100000 + MD11. */
    CHECK(aclmdlSetDynamicBatchSize(id, io.in, 1, 3), ACL_ERROR_INVALID_PARAM);
    CHECK(aclmdlSetDynamicBatchSize(id, io.in, 0, 2), ACL_ERROR_INVALID_PARAM);
    ASSERT(count_rule("MD11") == 2);
    CHECK(aclmdlSetDynamicHWSize(id, io.in, 1, 224, 224), ACL_ERROR_MODEL_NOT_DYNAMIC);

    /* Another input dataset over the same buffers, no batch set: MD11, largest gear. */
    aclmdlDataset *in2 = aclmdlCreateDataset();
    OK(aclmdlAddDatasetBuffer(in2, io.buf[0]));
    OK(aclmdlAddDatasetBuffer(in2, io.buf[1]));
    OK(aclmdlExecute(id, in2, io.out));
    ASSERT(count_rule("MD11") == 3);
    md_get(y, io.mem[2], 4);
    ASSERT(y[0] == 3 && y[1] == 7 && y[2] == 11 && y[3] == 15);
    OK(aclmdlDestroyDataset(in2));

    /* A static model: 100019. */
    aclmdlDesc *sdesc;
    uint32_t sid = md_load(MD_CLASSIFIER, &sdesc);
    OK(aclmdlGetDynamicBatch(sdesc, &gears));
    ASSERT(gears.batchCount == 0);
    CHECK(aclmdlSetDynamicBatchSize(sid, io.in, 1, 2), ACL_ERROR_MODEL_NOT_DYNAMIC);
    OK(aclmdlUnload(sid));
    OK(aclmdlDestroyDesc(sdesc));

    md_io_free(&io);
    OK(aclmdlUnload(id));
    OK(aclmdlDestroyDesc(desc));
    md_finish("MD11", 3);
}

/* MD13: element types and formats from the description; a failed query answers
 * ACL_DT_UNDEFINED / ACL_FORMAT_UNDEFINED (no error code), like CANN's. */
static void md13_data_types_and_formats(void) {
    setup();
    aclmdlDesc *desc;
    uint32_t id = md_load(MD_DYNAMIC, &desc);
    ASSERT(aclmdlGetInputDataType(desc, 0) == ACL_FLOAT);
    ASSERT(aclmdlGetInputFormat(desc, 0) == ACL_FORMAT_ND);
    /* The batch input: int32, ND (as ATC compiles it). */
    ASSERT(aclmdlGetInputDataType(desc, 1) == ACL_INT32);
    ASSERT(aclmdlGetInputFormat(desc, 1) == ACL_FORMAT_ND);
    ASSERT(aclmdlGetOutputDataType(desc, 0) == ACL_FLOAT);
    ASSERT(aclmdlGetOutputFormat(desc, 0) == ACL_FORMAT_ND);
    /* Out of range, NULL: undefined, with a recent error message; no finding. */
    ASSERT(aclmdlGetInputDataType(desc, 2) == ACL_DT_UNDEFINED);
    ASSERT(aclGetRecentErrMsg() != NULL);
    ASSERT(aclmdlGetOutputDataType(desc, 1) == ACL_DT_UNDEFINED);
    ASSERT(aclmdlGetInputFormat(desc, 2) == ACL_FORMAT_UNDEFINED);
    ASSERT(aclmdlGetOutputFormat(desc, 1) == ACL_FORMAT_UNDEFINED);
    ASSERT(aclmdlGetInputDataType(NULL, 0) == ACL_DT_UNDEFINED);
    ASSERT(aclmdlGetOutputFormat(NULL, 0) == ACL_FORMAT_UNDEFINED);
    ASSERT(aclsimFindingCount() == 0);
    /* An injected failure answers undefined too. */
    OK(aclsimInjectFault("aclmdlGetOutputDataType", ACL_ERROR_INTERNAL_ERROR, 1));
    ASSERT(aclmdlGetOutputDataType(desc, 0) == ACL_DT_UNDEFINED);
    ASSERT(aclmdlGetOutputDataType(desc, 0) == ACL_FLOAT);

    /* Every type of the format, and NCHW for 4 dims. */
    aclmdlDesc *tdesc;
    uint32_t tid = md_load("aclsim-model 1\n"
                           "input  x u8 1x3x2x2\n"
                           "output y f16 1x12\n",
                           &tdesc);
    ASSERT(aclmdlGetInputDataType(tdesc, 0) == ACL_UINT8);
    ASSERT(aclmdlGetInputFormat(tdesc, 0) == ACL_FORMAT_NCHW);
    ASSERT(aclmdlGetOutputDataType(tdesc, 0) == ACL_FLOAT16);
    ASSERT(aclmdlGetInputSizeByIndex(tdesc, 0) == 12 && aclmdlGetOutputSizeByIndex(tdesc, 0) == 24);
    ASSERT(aclmdlGetInputDataType(tdesc, 1) == ACL_DT_UNDEFINED); /* static: no batch input */
    OK(aclmdlUnload(tid));
    OK(aclmdlDestroyDesc(tdesc));
    tid = md_load("aclsim-model 1\ninput x i32 2\noutput y bf16 2\n", &tdesc);
    ASSERT(aclmdlGetInputDataType(tdesc, 0) == ACL_INT32);
    ASSERT(aclmdlGetOutputDataType(tdesc, 0) == ACL_BF16);
    OK(aclmdlUnload(tid));
    /* A description of an unloaded model: MD4, undefined. */
    ASSERT(aclmdlGetOutputDataType(tdesc, 0) == ACL_DT_UNDEFINED);
    ASSERT(count_rule("MD4") == 1);
    OK(aclmdlDestroyDesc(tdesc));

    OK(aclmdlUnload(id));
    OK(aclmdlDestroyDesc(desc));
    md_finish("MD4", 1);
}

static void md7_unload_with_pending_execution_returns_107037(void) {
    setup();
    aclmdlDesc *desc;
    uint32_t id = md_load(MD_SLOW, &desc);
    struct md_io io;
    md_io_make(desc, &io);
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    OK(aclmdlExecuteAsync(id, io.in, io.out, s));
    CHECK(aclmdlUnload(id), ACL_ERROR_RT_MODEL_RUNNING);
    ASSERT(count_rule("MD7") == 1);
    OK(aclrtSynchronizeStream(s));
    /* Still loaded: a synchronous execution, then the unload succeeds. */
    OK(aclmdlExecute(id, io.in, io.out));
    OK(aclmdlUnload(id));
    OK(aclmdlDestroyDesc(desc));
    OK(aclrtDestroyStream(s));
    md_io_free(&io);
    md_finish("MD7", 1);
}

static void md6_dataset_destroyed_while_in_use_is_flagged(void) {
    setup();
    aclmdlDesc *desc;
    uint32_t id = md_load(MD_SLOW, &desc);
    struct md_io io;
    md_io_make(desc, &io);
    float x[4] = {1, 2, 3, 4}, y[2];
    md_put(io.mem[0], x, 4);
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    OK(aclmdlExecuteAsync(id, io.in, io.out, s));
    OK(aclmdlDestroyDataset(io.out));
    OK(aclDestroyDataBuffer(io.buf[1]));
    ASSERT(count_rule("MD6") == 2);
    /* The handles are invalid at once (a use is an MD5 finding); the execution still
     * completes. */
    CHECK(aclmdlGetDatasetNumBuffers(io.out), 0);
    ASSERT(count_rule("MD5") == 1);
    OK(aclrtSynchronizeStream(s));
    md_get(y, io.mem[1], 2);
    ASSERT(y[0] == 4.5f && y[1] == 5.5f);
    OK(aclDestroyDataBuffer(io.buf[0]));
    OK(aclmdlDestroyDataset(io.in));
    OK(aclrtFree(io.mem[0]));
    OK(aclrtFree(io.mem[1]));
    OK(aclmdlUnload(id));
    OK(aclmdlDestroyDesc(desc));
    OK(aclrtDestroyStream(s));
    OK(aclrtResetDevice(0));
    ASSERT(aclsimLiveObjectCount() == 0);
    OK(aclFinalize());
    ASSERT(count_rule("MD6") == 2 && count_rule("MD5") == 1 && aclsimFindingCount() == 3);
}

static void md8_execution_on_two_streams_is_flagged(void) {
    setup();
    aclmdlDesc *desc;
    uint32_t id = md_load(MD_SLOW, &desc);
    struct md_io a, b;
    md_io_make(desc, &a);
    md_io_make(desc, &b);
    float xa[4] = {1, 2, 3, 4}, xb[4] = {0, 1, 0, 1}, y[2];
    md_put(a.mem[0], xa, 4);
    md_put(b.mem[0], xb, 4);
    aclrtStream s1, s2;
    OK(aclrtCreateStream(&s1));
    OK(aclrtCreateStream(&s2));
    double t0 = now_ms();
    OK(aclmdlExecuteAsync(id, a.in, a.out, s1));
    OK(aclmdlExecuteAsync(id, b.in, b.out, s2));
    OK(aclrtSynchronizeStream(s2));
    /* Flagged when the second reached the front of s2 with the first not done. */
    ASSERT(count_rule("MD8") == 1);
    /* The second ran after the first: two executions of 150 ms. */
    ASSERT(now_ms() - t0 >= 290);
    OK(aclrtSynchronizeStream(s1));
    md_get(y, a.mem[1], 2);
    ASSERT(y[0] == 4.5f && y[1] == 5.5f);
    md_get(y, b.mem[1], 2);
    ASSERT(y[0] == 0.5f && y[1] == 1.5f);
    /* Two executions on the same stream are no finding. */
    OK(aclmdlExecuteAsync(id, a.in, a.out, s1));
    OK(aclmdlExecuteAsync(id, b.in, b.out, s1));
    OK(aclrtSynchronizeStream(s1));
    /* Nor two on two streams ordered by an event (E1-E3): the second reaches the front of s2
     * only once the first is done. */
    aclrtEvent e;
    OK(aclrtCreateEventWithFlag(&e, ACL_EVENT_SYNC));
    OK(aclmdlExecuteAsync(id, a.in, a.out, s1));
    OK(aclrtRecordEvent(e, s1));
    OK(aclrtStreamWaitEvent(s2, e));
    OK(aclrtResetEvent(e, s2));
    OK(aclmdlExecuteAsync(id, b.in, b.out, s2));
    OK(aclrtSynchronizeStream(s2));
    OK(aclrtSynchronizeStream(s1));
    OK(aclrtDestroyEvent(e));
    OK(aclrtDestroyStream(s1));
    OK(aclrtDestroyStream(s2));
    md_io_free(&a);
    md_io_free(&b);
    OK(aclmdlUnload(id));
    OK(aclmdlDestroyDesc(desc));
    md_finish("MD8", 1);
}

static void md1_other_context_returns_107004(void) {
    setup();
    aclrtContext a, b;
    OK(aclrtGetCurrentContext(&a));
    aclmdlDesc *desc;
    uint32_t id = md_load(MD_CLASSIFIER, &desc);
    struct md_io io;
    md_io_make(desc, &io);
    OK(aclrtCreateContext(&b, 0)); /* now current */
    CHECK(aclmdlExecute(id, io.in, io.out), ACL_ERROR_RT_MODEL_CONTEXT);
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    CHECK(aclmdlExecuteAsync(id, io.in, io.out, s), ACL_ERROR_RT_MODEL_CONTEXT);
    CHECK(aclmdlUnload(id), ACL_ERROR_RT_MODEL_CONTEXT);
    OK(aclrtDestroyStream(s));
    OK(aclrtSetCurrentContext(a));
    OK(aclmdlExecute(id, io.in, io.out));
    OK(aclmdlUnload(id));
    OK(aclmdlDestroyDesc(desc));
    md_io_free(&io);
    OK(aclrtDestroyContext(b));
    md_finish(NULL, 0);
}

static void md10_wrong_buffer_sizes_return_100017_100018(void) {
    setup();
    aclmdlDesc *desc;
    uint32_t id = md_load(MD_CLASSIFIER, &desc);
    struct md_io io;
    md_io_make(desc, &io);
    void *mem;
    OK(aclrtMalloc(&mem, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    aclDataBuffer *small = aclCreateDataBuffer(mem, 4);
    aclDataBuffer *big = aclCreateDataBuffer(mem, 64);
    aclmdlDataset *in = aclmdlCreateDataset(), *out = aclmdlCreateDataset();
    OK(aclmdlAddDatasetBuffer(in, small));
    CHECK(aclmdlExecute(id, in, io.out), ACL_ERROR_MODEL_INPUT_NOT_MATCH);
    OK(aclmdlAddDatasetBuffer(out, small));
    CHECK(aclmdlExecute(id, io.in, out), ACL_ERROR_MODEL_OUTPUT_NOT_MATCH);
    aclmdlDataset *empty = aclmdlCreateDataset();
    CHECK(aclmdlExecute(id, empty, io.out), ACL_ERROR_MODEL_INPUT_NOT_MATCH);
    CHECK(aclmdlExecute(id, io.in, empty), ACL_ERROR_MODEL_OUTPUT_NOT_MATCH);
    OK(aclmdlAddDatasetBuffer(empty, big));
    OK(aclmdlAddDatasetBuffer(empty, big));
    CHECK(aclmdlExecute(id, io.in, empty), ACL_ERROR_MODEL_OUTPUT_NOT_MATCH);
    CHECK(aclmdlExecute(id, empty, io.out), ACL_ERROR_MODEL_INPUT_NOT_MATCH);
    /* Larger buffers than described are fine. */
    aclmdlDataset *ok_out = aclmdlCreateDataset();
    OK(aclmdlAddDatasetBuffer(ok_out, big));
    OK(aclmdlExecute(id, io.in, ok_out));
    OK(aclmdlDestroyDataset(ok_out));
    OK(aclmdlDestroyDataset(empty));
    OK(aclmdlDestroyDataset(in));
    OK(aclmdlDestroyDataset(out));
    OK(aclDestroyDataBuffer(small));
    OK(aclDestroyDataBuffer(big));
    OK(aclrtFree(mem));
    md_io_free(&io);
    OK(aclmdlUnload(id));
    OK(aclmdlDestroyDesc(desc));
    md_finish(NULL, 0);
}

static void md9_host_memory_in_a_data_buffer_is_flagged(void) {
    setup();
    aclmdlDesc *desc;
    uint32_t id = md_load(MD_CLASSIFIER, &desc);
    struct md_io io;
    md_io_make(desc, &io);
    void *pinned;
    OK(aclrtMallocHost(&pinned, 64));
    float plain[4] = {0};
    aclDataBuffer *hb = aclCreateDataBuffer(pinned, 64);
    aclDataBuffer *ub = aclCreateDataBuffer(plain, sizeof plain);
    aclmdlDataset *h = aclmdlCreateDataset(), *u = aclmdlCreateDataset();
    OK(aclmdlAddDatasetBuffer(h, hb));
    OK(aclmdlAddDatasetBuffer(u, ub));
    CHECK(aclmdlExecute(id, h, io.out), ACL_ERROR_INVALID_PARAM);
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    CHECK(aclmdlExecuteAsync(id, io.in, u, s), ACL_ERROR_INVALID_PARAM);
    ASSERT(count_rule("MD9") == 2);
    OK(aclrtDestroyStream(s));
    OK(aclmdlDestroyDataset(h));
    OK(aclmdlDestroyDataset(u));
    OK(aclDestroyDataBuffer(hb));
    OK(aclDestroyDataBuffer(ub));
    OK(aclrtFreeHost(pinned));
    md_io_free(&io);
    OK(aclmdlUnload(id));
    OK(aclmdlDestroyDesc(desc));
    md_finish("MD9", 2);
}

static void md2_with_mem_work_freed_before_unload_is_flagged(void) {
    setup();
    const char *path = md_file(MD_CLASSIFIER);
    size_t work_size, weight_size;
    OK(aclmdlQuerySize(path, &work_size, &weight_size));
    void *work, *weight, *host;
    OK(aclrtMalloc(&work, work_size, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclrtMalloc(&weight, weight_size, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclrtMallocHost(&host, weight_size));
    uint32_t id;
    /* Too small, or not device memory: 100000. */
    CHECK(aclmdlLoadFromFileWithMem(path, &id, work, work_size - 1, weight, weight_size),
          ACL_ERROR_INVALID_PARAM);
    CHECK(aclmdlLoadFromFileWithMem(path, &id, work, work_size, host, weight_size),
          ACL_ERROR_INVALID_PARAM);
    OK(aclmdlLoadFromFileWithMem(path, &id, work, work_size, weight, weight_size));
    ASSERT(aclsimFindingCount() == 0);
    OK(aclrtFree(work)); /* MD2: deferred until unload */
    ASSERT(count_rule("MD2") == 1);
    aclmdlDesc *desc = aclmdlCreateDesc();
    OK(aclmdlGetDesc(desc, id));
    struct md_io io;
    md_io_make(desc, &io);
    OK(aclmdlExecute(id, io.in, io.out));
    md_io_free(&io);
    OK(aclmdlUnload(id));
    OK(aclmdlDestroyDesc(desc));
    OK(aclrtFree(weight));
    OK(aclrtFreeHost(host));
    CHECK(aclrtFree(work), ACL_ERROR_RT_PARAM_INVALID); /* released at unload */
    /* LoadFromMemWithMem too. */
    void *w2, *wt2;
    OK(aclrtMalloc(&w2, work_size, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclrtMalloc(&wt2, weight_size, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclmdlLoadFromMemWithMem(MD_CLASSIFIER, strlen(MD_CLASSIFIER), &id, w2, work_size, wt2,
                                weight_size));
    OK(aclmdlUnload(id));
    OK(aclrtFree(w2));
    OK(aclrtFree(wt2));
    md_finish("MD2", 1);
}

static void md3_load_from_mem_bytes_freed_before_unload_is_flagged(void) {
    setup();
    size_t n = strlen(MD_CLASSIFIER);
    char *bytes;
    OK(aclrtMallocHost((void **)&bytes, n));
    memcpy(bytes, MD_CLASSIFIER, n);
    uint32_t id;
    OK(aclmdlLoadFromMem(bytes, n, &id));
    OK(aclrtFreeHost(bytes));
    ASSERT(count_rule("MD3") == 1);
    OK(aclmdlUnload(id));
    CHECK(aclrtFreeHost(bytes), ACL_ERROR_RT_PARAM_INVALID); /* released at unload */
    md_finish("MD3", 1);
}

static void md4_description_used_after_unload_is_flagged(void) {
    setup();
    aclmdlDesc *desc;
    uint32_t id = md_load(MD_CLASSIFIER, &desc);
    ASSERT(aclmdlGetNumInputs(desc) == 1);
    OK(aclmdlUnload(id));
    ASSERT(aclmdlGetNumInputs(desc) == 0);
    aclmdlIODims dims;
    CHECK(aclmdlGetInputDims(desc, 0, &dims), ACL_ERROR_INVALID_MODEL_ID);
    ASSERT(count_rule("MD4") == 2);
    OK(aclmdlDestroyDesc(desc)); /* destroying it is no use */
    md_finish("MD4", 2);
}

static void md_p2_model_never_unloaded_is_a_leak(void) {
    setup();
    aclmdlDesc *desc;
    md_load(MD_CLASSIFIER, &desc);
    aclmdlDataset *ds = aclmdlCreateDataset();
    aclDataBuffer *b = aclCreateDataBuffer(NULL, 0);
    ASSERT(ds && b);
    ASSERT(aclsimLiveObjectCount() == 4);
    OK(aclrtResetDevice(0));
    OK(aclFinalize());
    expect_only("P2", 1);
    char rule[8], msg[1024];
    OK(aclsimGetFinding(0, rule, sizeof rule, msg, sizeof msg));
    ASSERT(strstr(msg, "(loaded, never unloaded)") && strstr(msg, "model description") &&
           strstr(msg, "dataset") && strstr(msg, "data buffer"));
    ASSERT(aclsimLiveObjectCount() == 0);
}

static void md_io_memory_in_use_and_device_reset(void) {
    setup();
    aclmdlDesc *desc;
    uint32_t id = md_load(MD_SLOW, &desc);
    struct md_io io;
    md_io_make(desc, &io);
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    OK(aclmdlExecuteAsync(id, io.in, io.out, s));
    OK(aclrtFree(io.mem[1])); /* M2: the pending execution writes it; release deferred */
    ASSERT(count_rule("M2") == 1);
    OK(aclrtSynchronizeStream(s));
    OK(aclrtDestroyStream(s));
    OK(aclDestroyDataBuffer(io.buf[0]));
    OK(aclDestroyDataBuffer(io.buf[1]));
    OK(aclmdlDestroyDataset(io.in));
    OK(aclmdlDestroyDataset(io.out));
    OK(aclrtFree(io.mem[0]));
    OK(aclmdlUnload(id));
    OK(aclmdlDestroyDesc(desc));
    ASSERT(aclsimLiveObjectCount() == 0);
    /* A device reset frees the work and weight memory of a loaded model (D3): the model no
     * longer holds them, so memory allocated later (maybe at the same address) is free to go. */
    const char *path = md_file(MD_CLASSIFIER);
    size_t ws, wts;
    OK(aclmdlQuerySize(path, &ws, &wts));
    void *work, *weight;
    OK(aclrtMalloc(&work, ws, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclrtMalloc(&weight, wts, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclmdlLoadFromFileWithMem(path, &id, work, ws, weight, wts));
    OK(aclrtResetDevice(0));
    ASSERT(count_rule("D3") == 1);
    OK(aclrtSetDevice(0));
    void *again[2];
    OK(aclrtMalloc(&again[0], ws, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclrtMalloc(&again[1], wts, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclrtFree(again[0]));
    OK(aclrtFree(again[1]));
    ASSERT(count_rule("MD2") == 0);
    /* The model's context is gone: it can no longer be unloaded, a leak at aclFinalize. */
    CHECK(aclmdlUnload(id), ACL_ERROR_RT_MODEL_CONTEXT);
    OK(aclrtResetDevice(0));
    ASSERT(aclsimLiveObjectCount() == 1);
    OK(aclFinalize());
    ASSERT(count_rule("P2") == 1 && aclsimFindingCount() == 3);
}

/* MD6: a buffer added to a dataset that a pending execution uses. The execution keeps the
 * buffers it was issued with (the runtime copies their addresses at issue): finding only. */
static void md6_add_buffer_while_pending_is_flagged(void) {
    setup();
    aclmdlDesc *desc;
    uint32_t id = md_load(MD_SLOW, &desc);
    struct md_io io;
    md_io_make(desc, &io);
    float x[4] = {1, 2, 3, 4}, y[2];
    md_put(io.mem[0], x, 4);
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    OK(aclmdlExecuteAsync(id, io.in, io.out, s));
    void *m;
    OK(aclrtMalloc(&m, 16, ACL_MEM_MALLOC_HUGE_FIRST));
    aclDataBuffer *extra = aclCreateDataBuffer(m, 16);
    ASSERT(extra);
    OK(aclmdlAddDatasetBuffer(io.in, extra)); /* while pending: MD6, still added */
    ASSERT(count_rule("MD6") == 1);
    ASSERT(aclmdlGetDatasetNumBuffers(io.in) == 2);
    OK(aclrtSynchronizeStream(s)); /* the pending execution ran as issued */
    md_get(y, io.mem[1], 2);
    ASSERT(y[0] == 4.5f && y[1] == 5.5f);
    /* Now the dataset has one buffer too many for this model: 100017, no finding. */
    CHECK(aclmdlExecuteAsync(id, io.in, io.out, s), ACL_ERROR_MODEL_INPUT_NOT_MATCH);
    OK(aclDestroyDataBuffer(extra));
    OK(aclrtFree(m));
    OK(aclrtDestroyStream(s));
    md_io_free(&io);
    OK(aclmdlUnload(id));
    OK(aclmdlDestroyDesc(desc));
    md_finish("MD6", 1);
}

/* MD6 / MD11: the batch of a pending execution's input dataset changed. The batch lives in
 * the dynamic-batch device buffer, which the execution reads when it starts (like its input):
 * an execution still queued runs with the batch written last. */
static void md6_set_batch_while_pending_is_flagged(void) {
    setup();
    aclmdlDesc *desc;
    uint32_t id = md_load(MD_DYNAMIC, &desc);
    struct md_io io;
    md_io_make(desc, &io);
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[4];
    md_put(io.mem[0], x, 8);
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    OK(aclmdlSetDynamicBatchSize(id, io.in, 1, 4));
    OK(aclsimLaunchKernel(s, 100000, NULL, NULL, NULL, 0)); /* the execution waits behind it */
    OK(aclmdlExecuteAsync(id, io.in, io.out, s));
    ASSERT(aclsimFindingCount() == 0);
    OK(aclmdlSetDynamicBatchSize(id, io.in, 1, 1)); /* while pending: MD6 */
    ASSERT(count_rule("MD6") == 1);
    OK(aclrtSynchronizeStream(s));
    md_get(y, io.mem[2], 4);
    ASSERT(y[0] == 3 && y[1] == 0 && y[2] == 0 && y[3] == 0); /* ran with batch 1 */
    /* Done: setting it again is no finding, and the next execution uses it. */
    OK(aclmdlSetDynamicBatchSize(id, io.in, 1, 2));
    OK(aclmdlExecuteAsync(id, io.in, io.out, s));
    OK(aclrtSynchronizeStream(s));
    md_get(y, io.mem[2], 4);
    ASSERT(y[0] == 3 && y[1] == 7 && y[2] == 0 && y[3] == 0);
    OK(aclrtDestroyStream(s));
    md_io_free(&io);
    OK(aclmdlUnload(id));
    OK(aclmdlDestroyDesc(desc));
    md_finish("MD6", 1);
}

/* MD6: the I/O memory of a pending execution touched: written or read by synchronous copies
 * and memsets, or by an asynchronous copy on another stream while the execution runs.
 * Ordering the streams by an event is no finding. */
static void md6_io_memory_of_a_pending_execution_touched_is_flagged(void) {
    setup();
    aclmdlDesc *desc;
    uint32_t id = md_load(MD_SLOW, &desc);
    struct md_io io;
    md_io_make(desc, &io);
    float x[4] = {1, 2, 3, 4}, z[4] = {9, 9, 9, 9}, y[2];
    md_put(io.mem[0], x, 4);
    aclrtStream s1, s2;
    OK(aclrtCreateStream(&s1));
    OK(aclrtCreateStream(&s2));
    OK(aclmdlExecuteAsync(id, io.in, io.out, s1));
    md_put(io.mem[0], z, 4);                 /* writes its input */
    md_get(y, io.mem[1], 2);                 /* reads its output */
    OK(aclrtMemset(io.mem[1], 8, 0, 8));     /* writes its output */
    ASSERT(count_rule("MD6") == 3);
    OK(aclrtSynchronizeStream(s1));
    md_get(y, io.mem[1], 2); /* the input is read when the execution runs: 9s */
    ASSERT(y[0] == 18.5f && y[1] == 17.5f);
    /* An asynchronous copy into its input on another stream while it runs. */
    md_put(io.mem[0], x, 4);
    OK(aclmdlExecuteAsync(id, io.in, io.out, s1));
    sleep_ms(30); /* the execution is running */
    OK(aclrtMemcpyAsync(io.mem[0], 16, z, 16, ACL_MEMCPY_HOST_TO_DEVICE, s2));
    OK(aclrtSynchronizeStream(s2));
    ASSERT(count_rule("MD6") == 4);
    OK(aclrtSynchronizeStream(s1));
    /* Ordered by events: a copy before the execution, a copy of the output after it. */
    aclrtEvent before, after;
    OK(aclrtCreateEvent(&before));
    OK(aclrtCreateEvent(&after));
    OK(aclrtMemcpyAsync(io.mem[0], 16, x, 16, ACL_MEMCPY_HOST_TO_DEVICE, s2));
    OK(aclrtRecordEvent(before, s2));
    OK(aclrtStreamWaitEvent(s1, before));
    OK(aclmdlExecuteAsync(id, io.in, io.out, s1));
    OK(aclrtRecordEvent(after, s1));
    OK(aclrtStreamWaitEvent(s2, after));
    float out[2] = {0, 0};
    OK(aclrtMemcpyAsync(out, 8, io.mem[1], 8, ACL_MEMCPY_DEVICE_TO_HOST, s2));
    OK(aclrtSynchronizeStream(s2));
    ASSERT(out[0] == 4.5f && out[1] == 5.5f);
    ASSERT(count_rule("MD6") == 4 && aclsimFindingCount() == 4);
    OK(aclrtSynchronizeStream(s1));
    OK(aclrtDestroyEvent(before));
    OK(aclrtDestroyEvent(after));
    OK(aclrtDestroyStream(s1));
    OK(aclrtDestroyStream(s2));
    md_io_free(&io);
    OK(aclmdlUnload(id));
    OK(aclmdlDestroyDesc(desc));
    md_finish("MD6", 4);
}

/* MD2 / MD3: memory a loaded model holds written (work, weight, model bytes) or used as model
 * I/O. Findings only. */
static void md2_md3_memory_held_by_a_loaded_model_written_is_flagged(void) {
    setup();
    const char *path = md_file(MD_CLASSIFIER);
    size_t ws, wts;
    OK(aclmdlQuerySize(path, &ws, &wts));
    void *work, *weight;
    OK(aclrtMalloc(&work, ws, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclrtMalloc(&weight, wts, ACL_MEM_MALLOC_HUGE_FIRST));
    uint32_t id;
    OK(aclmdlLoadFromFileWithMem(path, &id, work, ws, weight, wts));
    float z[4] = {9, 9, 9, 9};
    OK(aclrtMemcpy(work, 16, z, 16, ACL_MEMCPY_HOST_TO_DEVICE)); /* MD2 */
    OK(aclrtMemset(weight, wts, 0x55, wts));                     /* MD2 */
    float back[4];
    OK(aclrtMemcpy(back, 16, weight, 16, ACL_MEMCPY_DEVICE_TO_HOST)); /* reading: fine */
    ASSERT(count_rule("MD2") == 2);
    aclmdlDataset *in = aclmdlCreateDataset(), *out = aclmdlCreateDataset();
    aclDataBuffer *bi = aclCreateDataBuffer(work, 16), *bo = aclCreateDataBuffer(weight, 16);
    OK(aclmdlAddDatasetBuffer(in, bi));
    OK(aclmdlAddDatasetBuffer(out, bo));
    OK(aclmdlExecute(id, in, out)); /* its own work memory as input, weight as output */
    ASSERT(count_rule("MD2") == 4);
    OK(aclDestroyDataBuffer(bi));
    OK(aclDestroyDataBuffer(bo));
    OK(aclmdlDestroyDataset(in));
    OK(aclmdlDestroyDataset(out));
    OK(aclmdlUnload(id));
    OK(aclrtMemset(work, ws, 0, ws)); /* unloaded: free to reuse */
    OK(aclrtFree(work));
    OK(aclrtFree(weight));
    /* MD3: tracked model bytes of aclmdlLoadFromMem overwritten while loaded. */
    size_t n = strlen(MD_CLASSIFIER);
    char *bytes;
    OK(aclrtMallocHost((void **)&bytes, n));
    memcpy(bytes, MD_CLASSIFIER, n);
    OK(aclmdlLoadFromMem(bytes, n, &id));
    OK(aclrtMemset(bytes, n, 0, n));
    ASSERT(count_rule("MD3") == 1);
    OK(aclmdlUnload(id));
    OK(aclrtMemset(bytes, n, 0, n));
    OK(aclrtFreeHost(bytes));
    OK(aclrtResetDevice(0));
    ASSERT(aclsimLiveObjectCount() == 0);
    OK(aclFinalize());
    ASSERT(count_rule("MD2") == 4 && count_rule("MD3") == 1 && aclsimFindingCount() == 5);
}

/* MD2: two models share one work memory. Legal while their executions never overlap (one
 * stream); executions running at once on two streams: MD2, when the second starts. */
static void md2_shared_work_memory_overlapping_executions_is_flagged(void) {
    setup();
    const char *path = md_file(MD_SLOW);
    size_t ws, wts;
    OK(aclmdlQuerySize(path, &ws, &wts));
    void *work, *weight;
    OK(aclrtMalloc(&work, ws, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclrtMalloc(&weight, wts, ACL_MEM_MALLOC_HUGE_FIRST));
    uint32_t a, b;
    OK(aclmdlLoadFromFileWithMem(path, &a, work, ws, weight, wts));
    OK(aclmdlLoadFromFileWithMem(path, &b, work, ws, weight, wts)); /* weight shared: fine */
    aclmdlDesc *desc = aclmdlCreateDesc();
    OK(aclmdlGetDesc(desc, a));
    struct md_io ia, ib;
    md_io_make(desc, &ia);
    md_io_make(desc, &ib);
    aclrtStream s1, s2;
    OK(aclrtCreateStream(&s1));
    OK(aclrtCreateStream(&s2));
    OK(aclmdlExecuteAsync(a, ia.in, ia.out, s1));
    OK(aclmdlExecuteAsync(b, ib.in, ib.out, s1)); /* same stream: never overlap */
    OK(aclrtSynchronizeStream(s1));
    ASSERT(aclsimFindingCount() == 0);
    OK(aclmdlExecuteAsync(a, ia.in, ia.out, s1));
    OK(aclmdlExecuteAsync(b, ib.in, ib.out, s2)); /* both run at once */
    OK(aclrtSynchronizeStream(s1));
    OK(aclrtSynchronizeStream(s2));
    ASSERT(count_rule("MD2") == 1);
    OK(aclrtDestroyStream(s1));
    OK(aclrtDestroyStream(s2));
    md_io_free(&ia);
    md_io_free(&ib);
    OK(aclmdlDestroyDesc(desc));
    OK(aclmdlUnload(a));
    OK(aclmdlUnload(b));
    OK(aclrtFree(work));
    OK(aclrtFree(weight));
    md_finish("MD2", 1);
}

/* MD6 / MD8: the batch changed by another thread during a synchronous aclmdlExecute, which
 * uses its datasets for its whole duration. */
static uint32_t md_thr_id;
static struct md_io md_thr_io;
static int md_thr_rc = -1;
static void *md_set_batch_thread(void *arg) {
    (void)arg;
    sleep_ms(50);
    md_thr_rc = aclmdlSetDynamicBatchSize(md_thr_id, md_thr_io.in, 1, 1);
    return NULL;
}

static void md6_set_batch_during_synchronous_execute_on_another_thread_is_flagged(void) {
    setup();
    static const char *slow_dynamic = "aclsim-model 1\n"
                                      "input  x f32 4x2\n"
                                      "output y f32 4x1\n"
                                      "batch 1 2 4\n"
                                      "time 50000\n"
                                      "op matmul 2 1 1 1\n";
    aclmdlDesc *desc;
    md_thr_id = md_load(slow_dynamic, &desc);
    md_io_make(desc, &md_thr_io);
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[4];
    md_put(md_thr_io.mem[0], x, 8);
    OK(aclmdlSetDynamicBatchSize(md_thr_id, md_thr_io.in, 1, 4));
    pthread_t t;
    ASSERT(pthread_create(&t, NULL, md_set_batch_thread, NULL) == 0);
    OK(aclmdlExecute(md_thr_id, md_thr_io.in, md_thr_io.out)); /* 200 ms, batch 4 */
    ASSERT(pthread_join(t, NULL) == 0);
    ASSERT(md_thr_rc == ACL_SUCCESS);
    md_get(y, md_thr_io.mem[2], 4);
    ASSERT(y[0] == 3 && y[3] == 15); /* the batch it started with */
    ASSERT(count_rule("MD6") == 1);
    md_io_free(&md_thr_io);
    OK(aclmdlUnload(md_thr_id));
    OK(aclmdlDestroyDesc(desc));
    md_finish("MD6", 1);
}

/* MD5: descriptions, datasets and data buffers used or destroyed again after their destroy:
 * 100000 and a finding naming the handle. Never-valid handles: 100000 only. */
static void md5_use_after_destroy_is_flagged(void) {
    setup();
    aclmdlDesc *desc;
    uint32_t id = md_load(MD_CLASSIFIER, &desc);
    OK(aclmdlDestroyDesc(desc));
    ASSERT(aclmdlGetNumInputs(desc) == 0);
    aclmdlDataset *ds = aclmdlCreateDataset();
    OK(aclmdlDestroyDataset(ds));
    ASSERT(aclmdlGetDatasetNumBuffers(ds) == 0);
    void *m;
    OK(aclrtMalloc(&m, 16, ACL_MEM_MALLOC_HUGE_FIRST));
    aclDataBuffer *b = aclCreateDataBuffer(m, 16);
    OK(aclDestroyDataBuffer(b));
    CHECK(aclDestroyDataBuffer(b), ACL_ERROR_INVALID_PARAM);  /* double destroy */
    CHECK(aclmdlDestroyDataset(ds), ACL_ERROR_INVALID_PARAM); /* double destroy */
    ASSERT(count_rule("MD5") == 4 && aclsimFindingCount() == 4);
    char rule[8], msg[1024];
    OK(aclsimGetFinding(2, rule, sizeof rule, msg, sizeof msg));
    char h[32];
    snprintf(h, sizeof h, "%p", (void *)b);
    ASSERT(strstr(msg, "data buffer") && strstr(msg, h) && strstr(msg, "destroyed"));
    /* Executing with destroyed datasets, or a dataset holding a destroyed data buffer. */
    OK(aclmdlGetDesc(desc = aclmdlCreateDesc(), id));
    struct md_io io;
    md_io_make(desc, &io);
    md_io_free(&io);
    CHECK(aclmdlExecute(id, io.in, io.out), ACL_ERROR_INVALID_PARAM);
    ASSERT(count_rule("MD5") == 5);
    md_io_make(desc, &io);
    OK(aclDestroyDataBuffer(io.buf[0]));
    CHECK(aclmdlExecute(id, io.in, io.out), ACL_ERROR_INVALID_PARAM);
    ASSERT(count_rule("MD5") == 6);
    /* Garbage or never-created handles: 100000, no finding. */
    CHECK(aclmdlDestroyDataset((aclmdlDataset *)(uintptr_t)0x1000), ACL_ERROR_INVALID_PARAM);
    CHECK(aclDestroyDataBuffer((aclDataBuffer *)((char *)io.buf[1] + 16 * 1000)),
          ACL_ERROR_INVALID_PARAM);
    ASSERT(count_rule("MD5") == 6 && aclsimFindingCount() == 6);
    OK(aclDestroyDataBuffer(io.buf[1]));
    OK(aclrtFree(io.mem[0]));
    OK(aclrtFree(io.mem[1]));
    OK(aclmdlDestroyDataset(io.in));
    OK(aclmdlDestroyDataset(io.out));
    OK(aclrtFree(m));
    OK(aclmdlDestroyDesc(desc));
    OK(aclmdlUnload(id));
    md_finish("MD5", 6);
}

/* MD8 + deadlock watchdog: stream b waits for an event, then executes model M (#1); stream a
 * executes M (#2, flagged MD8 as it reaches the front of a with #1 not done; the simulator runs
 * it after #1), then records the event. The order the simulator imposes closes a cycle: the
 * synchronize is diagnosed (507000 + a second MD8), not a hang. A later record elsewhere
 * releases everything. */
static void md8_serialised_executions_closing_an_event_cycle_are_diagnosed(void) {
    setup();
    aclmdlDesc *desc;
    uint32_t id = md_load(MD_CLASSIFIER, &desc);
    struct md_io x, y;
    md_io_make(desc, &x);
    md_io_make(desc, &y);
    aclrtStream a, b, c;
    OK(aclrtCreateStream(&a));
    OK(aclrtCreateStream(&b));
    OK(aclrtCreateStream(&c));
    aclrtEvent e;
    OK(aclrtCreateEventWithFlag(&e, ACL_EVENT_SYNC));
    OK(aclrtStreamWaitEvent(b, e));
    OK(aclrtResetEvent(e, b));
    OK(aclmdlExecuteAsync(id, x.in, x.out, b));
    OK(aclmdlExecuteAsync(id, y.in, y.out, a));
    OK(aclrtRecordEvent(e, a));
    double t0 = now_ms();
    CHECK(aclrtSynchronizeDevice(), ACL_ERROR_RT_INTERNAL_ERROR);
    ASSERT(now_ms() - t0 < 5000);
    expect_only("MD8", 2);
    char rule[8], msg[1024];
    OK(aclsimGetFinding(1, rule, sizeof rule, msg, sizeof msg));
    ASSERT(strstr(msg, "deadlock") && strstr(msg, "model"));
    OK(aclrtRecordEvent(e, c)); /* the waits stay queued: this releases them */
    OK(aclrtSynchronizeDevice());
    OK(aclrtDestroyEvent(e));
    OK(aclrtDestroyStream(a));
    OK(aclrtDestroyStream(b));
    OK(aclrtDestroyStream(c));
    md_io_free(&x);
    md_io_free(&y);
    OK(aclmdlUnload(id));
    OK(aclmdlDestroyDesc(desc));
    md_finish("MD8", 2);
}

/* ---- Bounds: model files read without the lock, bad model inputs, memory limits ------- */

/* A fresh FIFO (removed at exit, with its directory). */
static char md_fifo_dir[64], md_fifo[96];
static void md_fifo_remove(void) {
    unlink(md_fifo);
    rmdir(md_fifo_dir);
}
static const char *md_make_fifo(void) {
    snprintf(md_fifo_dir, sizeof md_fifo_dir, "/tmp/aclsim_fifo_XXXXXX");
    ASSERT(mkdtemp(md_fifo_dir) != NULL);
    snprintf(md_fifo, sizeof md_fifo, "%s/model.om", md_fifo_dir);
    ASSERT(mkfifo(md_fifo, 0600) == 0);
    atexit(md_fifo_remove);
    return md_fifo;
}

/* Opens the FIFO's write end (without blocking) and closes it: a reader blocked in open()
 * (the old simulator, under its lock) then reads end-of-file and returns. */
static void md_fifo_unblock(void) {
    int fd = open(md_fifo, O_WRONLY | O_NONBLOCK);
    if (fd >= 0) close(fd);
}

static int md_fifo_load_rc = -1, md_fifo_other_done;
static aclrtContext md_fifo_ctx;
static aclrtStream md_fifo_stream;

static void *md_fifo_loader(void *arg) {
    (void)arg;
    OK(aclrtSetCurrentContext(md_fifo_ctx));
    uint32_t id = 0;
    __atomic_store_n(&md_fifo_load_rc, aclmdlLoadFromFile(md_fifo, &id), __ATOMIC_SEQ_CST);
    return NULL;
}

static void *md_fifo_other(void *arg) {
    (void)arg;
    uint32_t n = 0;
    OK(aclrtGetDeviceCount(&n));
    ASSERT(n == 2);
    OK(aclrtSetCurrentContext(md_fifo_ctx));
    OK(aclsimLaunchKernel(md_fifo_stream, 1000, NULL, NULL, NULL, 0));
    OK(aclrtSynchronizeStream(md_fifo_stream));
    size_t w = 0, wt = 0;
    OK(aclmdlQuerySize(md_file(MD_CLASSIFIER), &w, &wt));
    __atomic_store_n(&md_fifo_other_done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* Waits up to `ms` for `*flag` to become `want`. */
static int md_wait_flag(int *flag, int want, int ms) {
    double end = now_ms() + ms;
    while (__atomic_load_n(flag, __ATOMIC_SEQ_CST) != want) {
        if (now_ms() > end) return 0;
        sleep_ms(5);
    }
    return 1;
}

/* A model path that is a FIFO with no writer: loading it must not hold the runtime's lock
 * while it waits (the simulator used to open and read the file under its global lock, so
 * every other thread's runtime calls blocked until a writer came). It is refused (100014:
 * not a regular file), and another thread's calls complete meanwhile. */
static void md_model_file_read_never_blocks_other_threads(void) {
    setup();
    md_make_fifo();
    OK(aclrtGetCurrentContext(&md_fifo_ctx));
    OK(aclrtCreateStream(&md_fifo_stream));
    pthread_t loader, other;
    ASSERT(pthread_create(&loader, NULL, md_fifo_loader, NULL) == 0);
    sleep_ms(100); /* the loader is in aclmdlLoadFromFile (the old simulator: blocked in it) */
    ASSERT(pthread_create(&other, NULL, md_fifo_other, NULL) == 0);
    int other_ok = md_wait_flag(&md_fifo_other_done, 1, 10000);
    int loader_ok = other_ok && md_wait_flag(&md_fifo_load_rc, ACL_ERROR_READ_MODEL_FAILURE, 10000);
    md_fifo_unblock(); /* lets a blocked loader (and so the other thread) finish */
    ASSERT(pthread_join(other, NULL) == 0);
    ASSERT(pthread_join(loader, NULL) == 0);
    if (!other_ok) {
        fprintf(stderr, "another thread's runtime calls were blocked while a model path (a FIFO) "
                        "was opened\n");
        exit(1);
    }
    ASSERT(loader_ok);
    /* The other entry points that read a file. */
    size_t w, wt;
    CHECK(aclmdlQuerySize(md_fifo, &w, &wt), ACL_ERROR_READ_MODEL_FAILURE);
    ASSERT(strstr(aclGetRecentErrMsg(), "not a regular file"));
    void *work, *weight;
    OK(aclrtMalloc(&work, 4096, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclrtMalloc(&weight, 4096, ACL_MEM_MALLOC_HUGE_FIRST));
    uint32_t id = 0;
    CHECK(aclmdlLoadFromFileWithMem(md_fifo, &id, work, 4096, weight, 4096),
          ACL_ERROR_READ_MODEL_FAILURE);
    OK(aclrtFree(work));
    OK(aclrtFree(weight));
    OK(aclrtDestroyStream(md_fifo_stream));
    teardown_clean();
}

/* Large synchronous copies and memsets run without the global lock, their memory pinned:
 * a device reset or aclFinalize on another thread waits for them before freeing it. The
 * memset writes the tracked bytes a model was loaded from (MD3): that finding is made in the
 * same hold of the lock as the pin, so once it shows, the memset is pinned (or done). */
struct big_access {
    void *p;
    size_t n;
    int rc;
};
static void *big_memset(void *arg) {
    struct big_access *b = arg;
    b->rc = aclrtMemset(b->p, b->n, 7, b->n);
    return NULL;
}
static void pinned_access_race(int finalize) {
    size_t n = getenv("ACLSIM_STRESS_SMALL") ? (size_t)8 << 20 : (size_t)256 << 20;
    setup();
    char *m;
    OK(aclrtMalloc((void **)&m, n, ACL_MEM_MALLOC_HUGE_FIRST));
    static const char *head = "aclsim-model 1\ninput x f32 1\noutput y f32 1\n#";
    memset(m, 'x', n);
    memcpy(m, head, strlen(head));
    uint32_t id = 0;
    OK(aclmdlLoadFromMem(m, n, &id)); /* copied without the lock, pinned */
    ASSERT(aclsimFindingCount() == 0);
    struct big_access b = {m, n, -1};
    pthread_t t;
    ASSERT(pthread_create(&t, NULL, big_memset, &b) == 0);
    while (aclsimFindingCount() == 0) sleep_ms(1);
    if (finalize) {
        OK(aclFinalize()); /* the model is a leak (P2) */
    } else {
        OK(aclrtResetDevice(0)); /* the memory and the model live (D3) */
    }
    ASSERT(pthread_join(t, NULL) == 0);
    ASSERT(b.rc == ACL_SUCCESS);
    if (!finalize) OK(aclFinalize()); /* the model's context is gone: a leak (P2) */
    ASSERT(aclsimLiveObjectCount() == 0);
    ASSERT(count_rule("MD3") == 1 && count_rule("P2") == 1);
    ASSERT(count_rule("D3") == (finalize ? 0 : 1));
    ASSERT(aclsimFindingCount() == (size_t)(finalize ? 2 : 3));
    aclsimClearFindings();
}
static void race_large_memset_vs_reset_device_no_crash(void) { pinned_access_race(0); }
static void race_large_memset_vs_finalize_no_crash(void) { pinned_access_race(1); }

/* A large synchronous memset or copy does not block other threads' calls: it runs without
 * the lock. */
static void m_large_copies_do_not_block_other_threads(void) {
    size_t n = (size_t)1 << 30;
    setup();
    char *d;
    OK(aclrtMalloc((void **)&d, n, ACL_MEM_MALLOC_HUGE_FIRST));
    struct big_access b = {d, n, -1};
    pthread_t t;
    double longest = 0;
    for (int i = 0; i < 3; i++) {
        b.rc = -1;
        ASSERT(pthread_create(&t, NULL, big_memset, &b) == 0);
        sleep_ms(5);
        double t0 = now_ms();
        uint32_t count = 0;
        OK(aclrtGetDeviceCount(&count));
        double took = now_ms() - t0;
        if (took > longest) longest = took;
        ASSERT(pthread_join(t, NULL) == 0);
        ASSERT(b.rc == ACL_SUCCESS);
    }
    ASSERT(longest < 100);
    ASSERT(d[0] == 7 && d[n - 1] == 7);
    /* A synchronous copy of half of it onto the other half: the same. */
    OK(aclrtMemcpy(d + n / 2, n / 2, d, n / 2, ACL_MEMCPY_DEVICE_TO_DEVICE));
    OK(aclrtFree(d));
    teardown_clean();
}

/* A synchronous aclmdlExecute runs without the lock: the model's time, then the copies of
 * its input and output (pinned) and its evaluation. A device reset during its time frees
 * its memory: the execution fails with 507011 and writes nothing. Another thread's memset
 * of the output while the execution is pending is the MD6 probe that it has started. */
static uint32_t md_sync_id;
static struct md_io md_sync_io;
static int md_sync_rc = -1;
static void *md_sync_exec(void *arg) {
    aclrtContext ctx = arg;
    OK(aclrtSetCurrentContext(ctx));
    md_sync_rc = aclmdlExecute(md_sync_id, md_sync_io.in, md_sync_io.out);
    return NULL;
}
static void md_synchronous_execute_and_device_reset(void) {
    setup();
    aclmdlDesc *desc;
    md_sync_id = md_load("aclsim-model 1\ninput x f32 4\noutput y f32 4\ntime 2000000\n", &desc);
    md_io_make(desc, &md_sync_io);
    aclrtContext ctx;
    OK(aclrtGetCurrentContext(&ctx));
    pthread_t t;
    ASSERT(pthread_create(&t, NULL, md_sync_exec, ctx) == 0);
    double t0 = now_ms();
    while (count_rule("MD6") == 0) {
        ASSERT(now_ms() - t0 < 10000);
        OK(aclrtMemset(md_sync_io.mem[1], 1, 0, 1));
        sleep_ms(5);
    }
    OK(aclrtResetDevice(0)); /* D3: the model, its I/O memory, the datasets live */
    ASSERT(now_ms() - t0 < 1900); /* the reset did not wait for the model's time */
    ASSERT(pthread_join(t, NULL) == 0);
    ASSERT(md_sync_rc == ACL_ERROR_RT_MODEL_EXECUTE);
    OK(aclDestroyDataBuffer(md_sync_io.buf[0]));
    OK(aclDestroyDataBuffer(md_sync_io.buf[1]));
    OK(aclmdlDestroyDataset(md_sync_io.in));
    OK(aclmdlDestroyDataset(md_sync_io.out));
    OK(aclmdlDestroyDesc(desc));
    OK(aclFinalize()); /* the model: a leak (P2) */
    ASSERT(count_rule("MD6") == 1 && count_rule("D3") == 1 && count_rule("P2") == 1);
    aclsimClearFindings();
}

/* Bad model inputs: each an error code, never a panic (500000), a hang or a huge
 * allocation. Run with ACLSIM_DEVICE_MEMORY=16777216 (16 MiB devices). */
static void md_bad_model_inputs_return_error_codes(void) {
    setup();
    double t0 = now_ms();
    uint32_t id = 0;
    size_t w = 0, wt = 0;
    /* Empty: size 0, like aclmdlLoadFromMem(..., 0, ...). */
    const char *empty = md_file("");
    CHECK(aclmdlLoadFromFile(empty, &id), ACL_ERROR_MODEL_SIZE_INVALID);
    CHECK(aclmdlQuerySize(empty, &w, &wt), ACL_ERROR_MODEL_SIZE_INVALID);
    /* Truncated: in a directive, before the output, in a list of weights. */
    CHECK(aclmdlLoadFromFile(md_file("aclsim-model 1\ninput  features f32 1x4\noutp"), &id),
          ACL_ERROR_PARSE_MODEL);
    CHECK(aclmdlLoadFromFile(md_file("aclsim-model 1\ninput x f32 4\n"), &id),
          ACL_ERROR_MODEL_MISSING_ATTR);
    CHECK(aclmdlLoadFromFile(md_file("aclsim-model 1\ninput x f32 1x4\noutput y f32 1x2\n"
                                     "op matmul 4 2  1 0  0"),
                             &id),
          ACL_ERROR_PARSE_MODEL);
    CHECK(aclmdlLoadFromMem(MD_CLASSIFIER, 40, &id), ACL_ERROR_MODEL_MISSING_ATTR);
    CHECK(aclmdlLoadFromFile(md_file("aclsim-mod"), &id), ACL_ERROR_PARSE_MODEL);
    /* Huge declared dims: 2^31 f32 (8 GiB) parse but do not fit the device (100015); more
     * than 2^31 elements, or dims overflowing, are a syntax error (100013). */
    static const char *huge = "aclsim-model 1\ninput x f32 32768x65536\noutput y i32 1\n"
                              "op argmax 2147483648\n";
    CHECK(aclmdlLoadFromFile(md_file(huge), &id), ACL_ERROR_MODEL_SIZE_INVALID);
    ASSERT(strstr(aclGetRecentErrMsg(), "device memory"));
    CHECK(aclmdlLoadFromMem(huge, strlen(huge), &id), ACL_ERROR_MODEL_SIZE_INVALID);
    CHECK(aclmdlQuerySize(md_file(huge), &w, &wt), ACL_ERROR_MODEL_SIZE_INVALID);
    CHECK(aclmdlLoadFromFile(md_file("aclsim-model 1\ninput x f32 65536x65536\noutput y f32 1\n"), &id),
          ACL_ERROR_PARSE_MODEL);
    CHECK(aclmdlLoadFromFile(
              md_file("aclsim-model 1\ninput x u8 9223372036854775807x9223372036854775807\n"
                      "output y f32 1\n"),
              &id),
          ACL_ERROR_PARSE_MODEL);
    /* 4 values become 2^22 per item (16 MiB of f32): the intermediate values count. */
    static const char *wide_head = "aclsim-model 1\ninput x f32 1x4\noutput y i32 4\nweight 4096\n"
                                   "op matmul 1 ";
    size_t nw = (size_t)1 << 20;
    char *wide = malloc(strlen(wide_head) + 32 + 2 * nw);
    ASSERT(wide);
    int len = sprintf(wide, "%s%zu", wide_head, nw);
    for (size_t i = 0; i < nw; i++) { wide[len++] = ' '; wide[len++] = '0'; }
    len += sprintf(wide + len, "\nop argmax %zu\n", nw);
    CHECK(aclmdlLoadFromMem(wide, (size_t)len, &id), ACL_ERROR_MODEL_SIZE_INVALID);
    ASSERT(strstr(aclGetRecentErrMsg(), "needs 16785440 B")); /* 16 + 16 + 4096 + 4096 + 16 MiB */
    free(wide);
    /* Declared work / weight sizes: beyond the device, or overflowing when summed. */
    CHECK(aclmdlLoadFromFile(md_file("aclsim-model 1\ninput x f32 1\noutput y f32 1\n"
                                     "work 16777216\n"),
                             &id),
          ACL_ERROR_MODEL_SIZE_INVALID);
    const char *overflow = md_file("aclsim-model 1\ninput x f32 1\noutput y f32 1\n"
                                   "work 18446744073709551615\nweight 18446744073709551615\n");
    CHECK(aclmdlLoadFromFile(overflow, &id), ACL_ERROR_MODEL_SIZE_INVALID);
    CHECK(aclmdlQuerySize(overflow, &w, &wt), ACL_ERROR_MODEL_SIZE_INVALID);
    /* An execution that could never complete (P5): refused at load. */
    const char *forever = md_file("aclsim-model 1\ninput x f32 1\noutput y f32 1\n"
                                  "time 18446744073709551615\n");
    CHECK(aclmdlLoadFromFile(forever, &id), ACL_ERROR_PARSE_MODEL);
    {
        const char *why = aclGetRecentErrMsg(); /* read once: it clears (CANN) */
        ASSERT(why && strstr(why, "line 4") && strstr(why, "P5"));
    }
    CHECK(aclmdlQuerySize(forever, &w, &wt), ACL_ERROR_PARSE_MODEL);
    CHECK(aclmdlLoadFromFile(md_file("aclsim-model 1\ninput x f32 4\noutput y f32 4\n"
                                     "batch 1 4\ntime 600000000\n"),
                             &id),
          ACL_ERROR_PARSE_MODEL); /* 600 s x 4 > 2176 s */
    /* More gears than aclmdlBatch holds (ACL_MAX_BATCH_NUM, 128): 100013 naming the line. */
    {
        char gears[1024] = "aclsim-model 1\ninput x f32 129\noutput y f32 129\nbatch";
        for (int g = 1; g <= 129; g++) snprintf(gears + strlen(gears), 8, " %d", g);
        strcat(gears, "\n");
        CHECK(aclmdlLoadFromMem(gears, strlen(gears), &id), ACL_ERROR_PARSE_MODEL);
        const char *why = aclGetRecentErrMsg();
        ASSERT(why && strstr(why, "line 4: more than 128 gears"));
    }
    /* An evaluation beyond 2^40 value operations (2^20 relu over 2^20 values): 100015. */
    {
        static const char *ops_head = "aclsim-model 1\ninput x f32 1048576\noutput y f32 1048576\n";
        size_t nops = (size_t)1 << 20, hl = strlen(ops_head);
        char *many = malloc(hl + 8 * nops);
        ASSERT(many);
        memcpy(many, ops_head, hl);
        for (size_t i = 0; i < nops; i++) memcpy(many + hl + 8 * i, "op relu\n", 8);
        CHECK(aclmdlLoadFromMem(many, hl + 8 * nops, &id), ACL_ERROR_MODEL_SIZE_INVALID);
        const char *why = aclGetRecentErrMsg();
        ASSERT(why && strstr(why, "value operations"));
        free(many);
    }
    /* Read bounded by the file's size: a /proc file of size 0 whose content never ends is
     * 100014 at once. */
    CHECK(aclmdlLoadFromFile("/proc/self/pagemap", &id), ACL_ERROR_READ_MODEL_FAILURE);
    CHECK(aclmdlQuerySize("/proc/self/pagemap", &w, &wt), ACL_ERROR_READ_MODEL_FAILURE);
    /* Not regular files: a directory, a FIFO, a device. */
    CHECK(aclmdlLoadFromFile("/tmp", &id), ACL_ERROR_READ_MODEL_FAILURE);
    CHECK(aclmdlQuerySize("/tmp", &w, &wt), ACL_ERROR_READ_MODEL_FAILURE);
    CHECK(aclmdlLoadFromFile(md_make_fifo(), &id), ACL_ERROR_READ_MODEL_FAILURE);
    CHECK(aclmdlLoadFromFile("/dev/zero", &id), ACL_ERROR_READ_MODEL_FAILURE);
    /* Larger than the device: refused before it is read (a file) or copied (memory). */
    char big[96];
    snprintf(big, sizeof big, "%s/big.om", md_fifo_dir);
    FILE *f = fopen(big, "w");
    ASSERT(f);
    fputs(MD_CLASSIFIER, f);
    ASSERT(fseek(f, 16 << 20, SEEK_SET) == 0 && fputc('\n', f) == '\n'); /* sparse */
    ASSERT(fclose(f) == 0);
    CHECK(aclmdlLoadFromFile(big, &id), ACL_ERROR_MODEL_SIZE_INVALID);
    CHECK(aclmdlQuerySize(big, &w, &wt), ACL_ERROR_MODEL_SIZE_INVALID);
    unlink(big);
    /* A non-model (a sparse file of zeros) is refused after its first bytes (100013, as a
     * real .om), not read whole. */
    {
        char zeros[96];
        snprintf(zeros, sizeof zeros, "%s/zeros.om", md_fifo_dir);
        FILE *z = fopen(zeros, "w");
        ASSERT(z);
        ASSERT(fseek(z, (8 << 20) - 1, SEEK_SET) == 0 && fputc(0, z) == 0); /* sparse */
        ASSERT(fclose(z) == 0);
        CHECK(aclmdlLoadFromFile(zeros, &id), ACL_ERROR_PARSE_MODEL);
        const char *why = aclGetRecentErrMsg();
        ASSERT(why && strstr(why, "not an aclsim model"));
        CHECK(aclmdlQuerySize(zeros, &w, &wt), ACL_ERROR_PARSE_MODEL);
        unlink(zeros);
    }
    CHECK(aclmdlLoadFromMem(MD_CLASSIFIER, (size_t)1 << 40, &id), ACL_ERROR_MODEL_SIZE_INVALID);
    ASSERT(now_ms() - t0 < 10000);
    /* Nothing was loaded; a good model still loads. */
    ASSERT(aclsimLiveObjectCount() == 0);
    aclmdlDesc *desc;
    id = md_load(MD_CLASSIFIER, &desc);
    OK(aclmdlDestroyDesc(desc));
    OK(aclmdlUnload(id));
    teardown_clean();
}

/* D8 / M: device memory is enforced. Run with ACLSIM_DEVICE_MEMORY=67108864 (64 MiB). */
static void m_device_memory_is_enforced(void) {
    const size_t MiB = (size_t)1 << 20, total = 64 * MiB;
    setup();
    size_t f = 0, t = 0;
    OK(aclrtGetMemInfo(ACL_HBM_MEM, &f, &t));
    ASSERT(t == total && f == total);
    /* A huge request fails at once, before anything is allocated. */
    double t0 = now_ms();
    void *p = NULL, *a, *b, *c;
    CHECK(aclrtMalloc(&p, (size_t)1 << 40, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_MEMORY_ALLOCATION);
    CHECK(aclrtMalloc(&p, SIZE_MAX, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_MEMORY_ALLOCATION);
    ASSERT(strstr(aclGetRecentErrMsg(), "aclrtMalloc: 207001"));
    ASSERT(now_ms() - t0 < 1000);
    /* Free memory decreases with allocations and comes back with frees. */
    OK(aclrtMalloc(&a, 40 * MiB, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclrtGetMemInfo(ACL_HBM_MEM, &f, &t));
    ASSERT(f == 24 * MiB);
    CHECK(aclrtMalloc(&b, 25 * MiB, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_ERROR_RT_MEMORY_ALLOCATION);
    OK(aclrtMalloc(&b, 24 * MiB, ACL_MEM_MALLOC_NORMAL_ONLY));
    OK(aclrtGetMemInfo(ACL_HBM_MEM, &f, &t));
    ASSERT(f == 0);
    CHECK(aclrtMalloc(&c, 1, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_MEMORY_ALLOCATION);
    /* Per device: device 1 has all of its memory. */
    aclrtContext ctx0, ctx1;
    OK(aclrtGetCurrentContext(&ctx0));
    OK(aclrtCreateContext(&ctx1, 1));
    OK(aclrtGetMemInfo(ACL_HBM_MEM, &f, &t));
    ASSERT(f == total);
    OK(aclrtMalloc(&c, total, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclrtFree(c));
    OK(aclrtDestroyContext(ctx1));
    OK(aclrtSetCurrentContext(ctx0));
    OK(aclrtFree(b));
    /* Memory freed while a task uses it counts until it is released (M2, deferred). */
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    OK(aclsimLaunchKernel(s, 100000, NULL, NULL, &a, 1));
    aclsimSetQuiet(1);
    OK(aclrtFree(a));
    OK(aclrtGetMemInfo(ACL_HBM_MEM, &f, &t));
    ASSERT(f == 24 * MiB);
    OK(aclrtSynchronizeStream(s));
    OK(aclrtGetMemInfo(ACL_HBM_MEM, &f, &t));
    ASSERT(f == total);
    /* Model memory the runtime allocates at load counts until unload. */
    const char *path = md_file("aclsim-model 1\ninput x f32 4\noutput y f32 4\n"
                               "work 8388608\nweight 4194304\n");
    size_t w = 0, wt = 0;
    OK(aclmdlQuerySize(path, &w, &wt));
    ASSERT(w == 8 * MiB && wt == 4 * MiB);
    uint32_t id = 0, id2 = 0;
    OK(aclmdlLoadFromFile(path, &id));
    OK(aclrtGetMemInfo(ACL_HBM_MEM, &f, &t));
    ASSERT(f == total - 12 * MiB);
    OK(aclrtMalloc(&a, 50 * MiB, ACL_MEM_MALLOC_HUGE_FIRST)); /* 2 MiB left */
    CHECK(aclmdlLoadFromFile(path, &id2), ACL_ERROR_RT_MEMORY_ALLOCATION);
    OK(aclmdlUnload(id));
    OK(aclrtGetMemInfo(ACL_HBM_MEM, &f, &t));
    ASSERT(f == 14 * MiB);
    OK(aclrtFree(a));
    /* ...WithMem: the caller's memory, nothing more. */
    OK(aclrtMalloc(&a, w, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclrtMalloc(&b, wt, ACL_MEM_MALLOC_HUGE_FIRST));
    OK(aclmdlLoadFromFileWithMem(path, &id, a, w, b, wt));
    OK(aclrtGetMemInfo(ACL_HBM_MEM, &f, &t));
    ASSERT(f == total - 12 * MiB);
    OK(aclmdlUnload(id));
    OK(aclrtFree(a));
    OK(aclrtFree(b));
    /* A device reset releases the memory of a model still loaded (a leak: P2 at finalize). */
    OK(aclmdlLoadFromFile(path, &id));
    OK(aclrtDestroyStream(s));
    OK(aclrtResetDevice(0));
    OK(aclrtSetDevice(0));
    OK(aclrtGetMemInfo(ACL_HBM_MEM, &f, &t));
    ASSERT(f == total);
    /* Host memory: bounded by the host's physical memory. */
    CHECK(aclrtMallocHost(&p, (size_t)1 << 62), ACL_ERROR_RT_MEMORY_ALLOCATION);
    OK(aclrtMallocHost(&p, MiB));
    OK(aclrtFreeHost(p));
    OK(aclrtResetDevice(0));
    OK(aclFinalize());
    ASSERT(count_rule("M2") == 1 && count_rule("P2") == 1 && aclsimFindingCount() == 2);
}

/* ---- CANN 8.x/9.x: P6 D9 D10 S9-S12 C12 ---------------------------------------------- */

/* C12: host-function subscription of a user thread: codes; ProcessHostFunc finds no work in
 * the simulator (no CPU operators) and times out (507012), or returns 107012 once its last
 * subscription ends. */
static pthread_mutex_t hs_m = PTHREAD_MUTEX_INITIALIZER;
static int hs_rc = -1;
static void *host_func_waiter(void *unused) {
    (void)unused;
    int r = aclrtProcessHostFunc(-1);
    pthread_mutex_lock(&hs_m);
    hs_rc = r;
    pthread_mutex_unlock(&hs_m);
    return NULL;
}
static void c12_host_func_subscription_codes(void) {
    CHECK(aclrtProcessHostFunc(10), ACL_ERROR_UNINITIALIZE);
    setup();
    aclrtStream s1, s2;
    OK(aclrtCreateStream(&s1));
    OK(aclrtCreateStream(&s2));
    uint64_t me = (uint64_t)pthread_self();
    CHECK(aclrtSubscribeHostFunc(me, NULL), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(aclrtProcessHostFunc(0), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(aclrtProcessHostFunc(-2), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(aclrtProcessHostFunc(10), ACL_ERROR_RT_THREAD_SUBSCRIBE);
    OK(aclrtSubscribeHostFunc(me, s1));
    OK(aclrtSubscribeHostFunc(me, s2)); /* one thread, several streams of one device */
    CHECK(aclrtSubscribeHostFunc(me + 1, s1), ACL_ERROR_RT_STREAM_SUBSCRIBE);
    CHECK(aclrtSubscribeHostFunc(me, s1), ACL_ERROR_RT_STREAM_SUBSCRIBE);
    /* Separate slots: a report subscription of the same stream is allowed. */
    OK(aclrtSubscribeReport(me + 7, s1));
    OK(aclrtUnSubscribeReport(me + 7, s1));
    double t0 = now_ms();
    CHECK(aclrtProcessHostFunc(30), ACL_ERROR_RT_REPORT_TIMEOUT);
    ASSERT(now_ms() - t0 >= 25);
    CHECK(aclrtUnSubscribeHostFunc(me + 1, s1), ACL_ERROR_RT_STREAM_SUBSCRIBE);
    CHECK(aclrtUnSubscribeHostFunc(me, NULL), ACL_ERROR_RT_PARAM_INVALID);
    OK(aclrtUnSubscribeHostFunc(me, s1));
    CHECK(aclrtUnSubscribeHostFunc(me, s1), ACL_ERROR_RT_STREAM_SUBSCRIBE);
    /* A parked thread returns 107012 when its last subscription ends. */
    pthread_t th;
    pthread_create(&th, NULL, host_func_waiter, NULL);
    OK(aclrtUnSubscribeHostFunc(me, s2));
    OK(aclrtSubscribeHostFunc((uint64_t)th, s2));
    sleep_ms(30);
    OK(aclrtUnSubscribeHostFunc((uint64_t)th, s2));
    pthread_join(th, NULL);
    ASSERT(hs_rc == ACL_ERROR_RT_THREAD_SUBSCRIBE);
    expect_clean();
    /* Destroying a subscribed stream ends the subscription, and is a C12 finding (unsubscribe
     * first); so is a forced destroy. */
    OK(aclrtSubscribeHostFunc(me, s2));
    OK(aclrtDestroyStream(s2));
    CHECK(aclrtProcessHostFunc(10), ACL_ERROR_RT_THREAD_SUBSCRIBE);
    OK(aclrtSubscribeHostFunc(me, s1));
    OK(aclrtDestroyStreamForce(s1));
    CHECK(aclrtProcessHostFunc(10), ACL_ERROR_RT_THREAD_SUBSCRIBE);
    expect_only("C12", 2);
    aclsimClearFindings();
    teardown_clean();
}

/* S9: configuration handles (zeroed; attributes with exact sizes; priority 0-7) and
 * aclrtCreateStreamV2 (NULL handle: the defaults); a dead handle is 100000 and an S9 finding. */
static void s9_stream_config_handles_and_create_stream_v2(void) {
    ASSERT(aclrtCreateStreamConfigHandle() == NULL); /* before aclInit */
    setup();
    aclrtStreamConfigHandle *h = aclrtCreateStreamConfigHandle();
    ASSERT(h != NULL);
    ASSERT(h->workptr == NULL && h->workSize == 0 && h->flag == 0 && h->priority == 0);
    uint32_t prio = 5, bad = 8;
    size_t size = 4096, flag = 0;
    void *work = &size;
    OK(aclrtSetStreamConfigOpt(h, ACL_RT_STREAM_PRIORITY, &prio, sizeof prio));
    OK(aclrtSetStreamConfigOpt(h, ACL_RT_STREAM_WORK_SIZE, &size, sizeof size));
    OK(aclrtSetStreamConfigOpt(h, ACL_RT_STREAM_WORK_ADDR_PTR, &work, sizeof work));
    OK(aclrtSetStreamConfigOpt(h, ACL_RT_STREAM_FLAG, &flag, sizeof flag));
    ASSERT(h->priority == 5 && h->workSize == 4096 && h->workptr == work);
    CHECK(aclrtSetStreamConfigOpt(h, ACL_RT_STREAM_PRIORITY, &bad, sizeof bad),
          ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtSetStreamConfigOpt(h, ACL_RT_STREAM_PRIORITY, &size, sizeof size),
          ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtSetStreamConfigOpt(h, (aclrtStreamConfigAttr)4, &size, sizeof size),
          ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtSetStreamConfigOpt(h, ACL_RT_STREAM_WORK_SIZE, NULL, sizeof size),
          ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtSetStreamConfigOpt(NULL, ACL_RT_STREAM_WORK_SIZE, &size, sizeof size),
          ACL_ERROR_INVALID_PARAM);
    expect_clean();
    aclrtStream s, d;
    CHECK(aclrtCreateStreamV2(NULL, h), ACL_ERROR_INVALID_PARAM);
    OK(aclrtCreateStreamV2(&s, h));
    OK(aclrtCreateStreamV2(&d, NULL));
    uint32_t p = 99;
    OK(aclrtStreamGetPriority(s, &p));
    ASSERT(p == 5);
    OK(aclrtStreamGetPriority(d, &p));
    ASSERT(p == 0);
    int one = 1;
    hf_n = 0;
    OK(aclsimLaunchKernel(s, 0, k_push, &one, NULL, 0));
    OK(aclrtSynchronizeStream(s));
    ASSERT(hf_count() == 1);
    OK(aclrtDestroyStreamConfigHandle(h));
    CHECK(aclrtDestroyStreamConfigHandle(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtDestroyStreamConfigHandle(h), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtCreateStreamV2(&d, h), ACL_ERROR_INVALID_PARAM);
    expect_only("S9", 2);
    aclsimClearFindings();
    OK(aclrtDestroyStream(s));
    OK(aclrtDestroyStream(d));
    teardown_clean();
}

/* S10: flags, priority and id of explicit and default streams; NULL output: 100000. */
static void s10_stream_queries_flags_priority_id(void) {
    setup();
    aclrtStream a, b, c;
    OK(aclrtCreateStream(&a));
    OK(aclrtCreateStreamWithConfig(&b, 3, ACL_STREAM_FAST_LAUNCH | ACL_STREAM_FAST_SYNC));
    OK(aclrtCreateStreamWithConfig(&c, 0, ACL_STREAM_DEVICE_USE_ONLY));
    aclrtStream bad;
    CHECK(aclrtCreateStreamWithConfig(&bad, 0, ACL_STREAM_DEVICE_USE_ONLY | ACL_STREAM_HUGE),
          ACL_ERROR_RT_PARAM_INVALID);
    CHECK(aclrtSetStreamFailureMode(c, ACL_STOP_ON_FAILURE), ACL_ERROR_RT_FEATURE_NOT_SUPPORT);
    uint32_t f = 99, p = 99;
    OK(aclrtStreamGetFlags(a, &f));
    ASSERT(f == 0);
    OK(aclrtStreamGetFlags(b, &f));
    ASSERT(f == (ACL_STREAM_FAST_LAUNCH | ACL_STREAM_FAST_SYNC));
    OK(aclrtStreamGetFlags(c, &f));
    ASSERT(f == ACL_STREAM_DEVICE_USE_ONLY);
    OK(aclrtStreamGetFlags(NULL, &f));
    ASSERT(f == 0);
    OK(aclrtStreamGetPriority(b, &p));
    ASSERT(p == 3);
    OK(aclrtStreamGetPriority(NULL, &p));
    ASSERT(p == 0);
    int32_t ia = -1, ib = -1, id = -1;
    OK(aclrtStreamGetId(a, &ia));
    OK(aclrtStreamGetId(b, &ib));
    OK(aclrtStreamGetId(NULL, &id));
    ASSERT(ia >= 0 && ib >= 0 && id >= 0 && ia != ib && id != ia && id != ib);
    CHECK(aclrtStreamGetFlags(a, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtStreamGetPriority(a, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtStreamGetId(a, NULL), ACL_ERROR_INVALID_PARAM);
    OK(aclrtDestroyStream(c));
    CHECK(aclrtStreamGetId(c, &id), ACL_ERROR_RT_PARAM_INVALID); /* destroyed */
    OK(aclrtDestroyStream(a));
    OK(aclrtDestroyStream(b));
    teardown_clean();
}

/* S11: Stop keeps the queue; Abort discards what has not started, and the stream is usable
 * afterwards; Abort of an ACL_STREAM_DEVICE_USE_ONLY stream: 107000 and an S11 finding. */
static void s11_stream_stop_and_abort(void) {
    setup();
    aclrtStream s, dev_only;
    OK(aclrtCreateStream(&s));
    OK(aclrtCreateStreamWithConfig(&dev_only, 0, ACL_STREAM_DEVICE_USE_ONLY));
    CHECK(aclrtStreamStop(NULL), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(aclrtStreamAbort(NULL), ACL_ERROR_INVALID_PARAM);
    int one = 1, two = 2, three = 3;
    hf_n = 0;
    OK(aclsimLaunchKernel(s, 20000, k_push, &one, NULL, 0));
    OK(aclsimLaunchKernel(s, 0, k_push, &two, NULL, 0));
    OK(aclrtStreamStop(s));
    OK(aclrtSynchronizeStream(s));
    ASSERT(hf_count() == 2); /* queued tasks kept */
    aclrtEvent e;
    OK(aclrtCreateEvent(&e));
    OK(aclsimLaunchKernel(s, 50000, k_push, &one, NULL, 0));
    sleep_ms(10); /* the first kernel is running */
    OK(aclsimLaunchKernel(s, 0, k_push, &two, NULL, 0));
    OK(aclrtLaunchHostFunc(s, hf_push_slow, &two));
    OK(aclrtRecordEvent(e, s));
    OK(aclrtStreamAbort(s));
    OK(aclrtSynchronizeStream(s));
    ASSERT(hf_count() == 3); /* the running kernel finished; the rest was discarded */
    aclrtEventRecordedStatus st;
    OK(aclrtQueryEventStatus(e, &st));
    ASSERT(st == ACL_EVENT_RECORDED_STATUS_NOT_READY); /* its record never ran */
    OK(aclsimLaunchKernel(s, 0, k_push, &three, NULL, 0)); /* usable again */
    OK(aclrtSynchronizeStream(s));
    ASSERT(hf_count() == 4 && hf_log[3] == 3);
    expect_clean();
    CHECK(aclrtStreamAbort(dev_only), ACL_ERROR_RT_PARAM_INVALID);
    expect_only("S11", 1);
    aclsimClearFindings();
    /* D6: another context's stream. */
    aclrtContext dflt, c;
    OK(aclrtGetCurrentContext(&dflt));
    OK(aclrtCreateContext(&c, 0));
    CHECK(aclrtStreamAbort(s), ACL_ERROR_RT_STREAM_CONTEXT);
    CHECK(aclrtStreamStop(s), ACL_ERROR_RT_STREAM_CONTEXT);
    OK(aclrtSetCurrentContext(dflt));
    OK(aclrtDestroyContext(c));
    OK(aclrtDestroyEvent(e));
    OK(aclrtDestroyStream(s));
    OK(aclrtDestroyStream(dev_only));
    teardown_clean();
}

/* S12: registered callbacks run on the creating or destroying thread, in name order,
 * CREATE_POST after each create, DESTROY_PRE before each destroy (plain and force). */
static char ss_log[64];
static int ss_n;
static aclrtStream ss_last;
static void ss_cb(aclrtStream stm, aclrtStreamState state, void *args) {
    ss_last = stm;
    if (ss_n < 62) {
        ss_log[ss_n++] = *(const char *)args;
        ss_log[ss_n++] = (char)('0' + (int)state);
    }
    ss_log[ss_n] = 0;
    uint32_t f;
    ASSERT(aclrtStreamGetFlags(stm, &f) == ACL_SUCCESS); /* the stream is live */
}
static void s12_stream_state_callbacks(void) {
    setup();
    static const char A = 'a', B = 'b';
    CHECK(aclrtRegStreamStateCallback(NULL, ss_cb, (void *)&A), ACL_ERROR_INVALID_PARAM);
    OK(aclrtRegStreamStateCallback("zz", ss_cb, (void *)&B));
    OK(aclrtRegStreamStateCallback("aa", ss_cb, (void *)&A));
    CHECK(aclrtRegStreamStateCallback("aa", ss_cb, (void *)&B), ACL_ERROR_RT_PARAM_INVALID);
    aclrtStream s, t;
    OK(aclrtCreateStream(&s));
    ASSERT(strcmp(ss_log, "a1b1") == 0 && ss_last == s);
    OK(aclrtDestroyStream(s));
    ASSERT(strcmp(ss_log, "a1b1a2b2") == 0);
    OK(aclrtRegStreamStateCallback("zz", NULL, NULL));
    OK(aclrtRegStreamStateCallback("never-registered", NULL, NULL));
    ss_n = 0;
    OK(aclrtCreateStreamWithConfig(&t, 1, 0));
    OK(aclrtDestroyStreamForce(t));
    ASSERT(strcmp(ss_log, "a1a2") == 0);
    OK(aclrtRegStreamStateCallback("aa", NULL, NULL));
    ss_n = 0;
    ss_log[0] = 0;
    OK(aclrtCreateStream(&s));
    OK(aclrtDestroyStream(s));
    ASSERT(ss_n == 0);
    teardown_clean();
}

/* D9: the current default stream is a real handle, usable in stream calls; D10: the thread's
 * cube and vector cores. */
static void d9_d10_current_default_stream_and_thread_resources(void) {
    aclrtStream d = NULL;
    CHECK(aclrtCtxGetCurrentDefaultStream(NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtCtxGetCurrentDefaultStream(&d), ACL_ERROR_UNINITIALIZE);
    OK(aclInit(NULL));
    CHECK(aclrtCtxGetCurrentDefaultStream(&d), ACL_ERROR_RT_CONTEXT_NULL);
    uint32_t v = 0;
    CHECK(aclrtGetResInCurrentThread(ACL_RT_DEV_RES_CUBE_CORE, &v), ACL_ERROR_RT_CONTEXT_NULL);
    OK(aclrtSetDevice(0));
    OK(aclrtCtxGetCurrentDefaultStream(&d));
    ASSERT(d != NULL);
    aclrtStream again = NULL;
    OK(aclrtCtxGetCurrentDefaultStream(&again));
    ASSERT(again == d);
    int32_t id1 = -1, id2 = -2;
    OK(aclrtStreamGetId(d, &id1));
    OK(aclrtStreamGetId(NULL, &id2));
    ASSERT(id1 == id2);
    int one = 1;
    hf_n = 0;
    OK(aclsimLaunchKernel(d, 0, k_push, &one, NULL, 0));
    OK(aclrtSynchronizeStream(NULL)); /* the same stream */
    ASSERT(hf_count() == 1);
    int64_t cube = 0, vec = 0;
    OK(aclGetDeviceCapability(0, ACL_DEVICE_INFO_AI_CORE_NUM, &cube));
    OK(aclGetDeviceCapability(0, ACL_DEVICE_INFO_VECTOR_CORE_NUM, &vec));
    OK(aclrtGetResInCurrentThread(ACL_RT_DEV_RES_CUBE_CORE, &v));
    ASSERT((int64_t)v == cube);
    OK(aclrtGetResInCurrentThread(ACL_RT_DEV_RES_VECTOR_CORE, &v));
    ASSERT((int64_t)v == vec);
    CHECK(aclrtGetResInCurrentThread((aclrtDevResLimitType)2, &v), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(aclrtGetResInCurrentThread(ACL_RT_DEV_RES_CUBE_CORE, NULL), ACL_ERROR_INVALID_PARAM);
    teardown_clean();
}

/* P6: the thread's last runtime error (107xxx/207xxx/507xxx; not 100000), kept by Peek,
 * reset by Get, per thread; aclrtGetErrorVerbose reports a failed task's device. */
static int le_other_thread = -1;
static void *last_error_of_new_thread(void *unused) {
    (void)unused;
    le_other_thread = aclrtPeekAtLastError(ACL_RT_THREAD_LEVEL);
    return NULL;
}
static void p6_last_error_and_error_verbose(void) {
    setup();
    CHECK(aclrtGetLastError(ACL_RT_THREAD_LEVEL), ACL_SUCCESS);
    CHECK(aclrtSetDevice(99), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK(aclrtCreateStream(NULL), ACL_ERROR_INVALID_PARAM); /* ACL layer: not kept */
    CHECK(aclrtPeekAtLastError(ACL_RT_THREAD_LEVEL), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK(aclrtPeekAtLastError((aclrtLastErrLevel)1), ACL_ERROR_INVALID_PARAM);
    CHECK(aclsimInjectFault("aclrtGetLastError", 507000, 1), ACL_ERROR_INVALID_PARAM);
    CHECK(aclsimInjectFault("aclrtPeekAtLastError", 507000, 1), ACL_ERROR_INVALID_PARAM);
    pthread_t th;
    pthread_create(&th, NULL, last_error_of_new_thread, NULL);
    pthread_join(th, NULL);
    ASSERT(le_other_thread == ACL_SUCCESS);
    CHECK(aclrtGetLastError(ACL_RT_THREAD_LEVEL), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK(aclrtGetLastError(ACL_RT_THREAD_LEVEL), ACL_SUCCESS);
    CHECK(aclrtStreamStop(NULL), ACL_ERROR_RT_PARAM_INVALID);
    CHECK(aclrtSetDevice(99), ACL_ERROR_RT_INVALID_DEVICEID);
    CHECK(aclrtGetLastError(ACL_RT_THREAD_LEVEL), ACL_ERROR_RT_INVALID_DEVICEID); /* latest */
    ASSERT(sizeof(aclrtErrorInfo) == 2576);
    aclrtErrorInfo info;
    memset(&info, 0xAB, sizeof info);
    CHECK(aclrtGetErrorVerbose(0, NULL), ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtGetErrorVerbose(99, &info), ACL_ERROR_RT_INVALID_DEVICEID);
    OK(aclrtGetErrorVerbose(0, &info));
    ASSERT(info.errorType == ACL_RT_NO_ERROR && info.tryRepair == 0 && info.hasDetail == 0);
    aclrtStream s;
    OK(aclrtCreateStream(&s));
    OK(aclsimInjectTaskFailure(s, ACL_ERROR_RT_INTERNAL_ERROR));
    int one = 1;
    OK(aclsimLaunchKernel(s, 0, k_push, &one, NULL, 0));
    for (int i = 0; i < 200; i++) {
        aclrtStreamStatus st;
        OK(aclrtStreamQuery(s, &st));
        if (st == ACL_STREAM_STATUS_COMPLETE) break;
        sleep_ms(1);
    }
    OK(aclrtGetErrorVerbose(0, &info));
    ASSERT(info.errorType == ACL_RT_ERROR_OTHERS);
    CHECK(aclrtSynchronizeStream(s), ACL_ERROR_RT_INTERNAL_ERROR);
    CHECK(aclrtGetLastError(ACL_RT_THREAD_LEVEL), ACL_ERROR_RT_INTERNAL_ERROR);
    OK(aclrtGetErrorVerbose(0, &info));
    ASSERT(info.errorType == ACL_RT_NO_ERROR);
    OK(aclrtDestroyStream(s));
    teardown_clean();
}

struct tcase {
    const char *name;
    void (*fn)(void);
};
#define T(x) {#x, x}
static const struct tcase cases[] = {
    T(seed000_event_sync),
    T(seed000_stream_sync_memcpy),
    T(seed000_stream_to_stream_wait),
    T(seed000_stream_to_stream_verbatim_is_clean),
    T(seed000_device_sync),
    T(seed001_callback_flow),
    T(p1_calls_before_init_return_100001),
    T(p1_null_handles_and_pointers_return_100000_first),
    T(p2_repeat_init_and_finalize_codes),
    T(p2_live_resources_at_finalize_are_one_leak_report),
    T(p3_wait_timeout_reported_by_synchronize_stream),
    T(p3_op_wait_timeout_from_env),
    T(d1_invalid_device_id_returns_107001),
    T(d1_d5_set_reset_are_reference_counted),
    T(d1_create_context_on_unset_device_is_supported),
    T(d2_d6_current_context_is_per_thread),
    T(d3_destroy_context_with_live_stream_and_event_is_flagged),
    T(d3_reset_device_with_live_resources_is_flagged),
    T(d5_destroy_default_context_returns_107002),
    T(d6_stream_outside_current_context_returns_107003),
    T(d_run_mode_and_handles),
    T(aclsim_extension_api_contract),
    T(aclsim_fault_injection),
    T(aclsim_fault_injection_at),
    T(aclsim_call_counts),
    T(s1_tasks_run_in_issue_order),
    T(s1_streams_are_independent),
    T(s3_synchronize_stream_with_timeout_codes),
    T(s4_destroy_stream_waits_for_pending_tasks),
    T(s4_destroy_stream_that_can_never_drain_is_diagnosed),
    T(e1_wait_on_never_recorded_plain_event_returns_107000),
    T(e1_wait_on_sync_event_is_released_by_a_later_record),
    T(e1_deadlock_on_never_recorded_sync_event_is_diagnosed),
    T(e1_deadlock_cycle_between_two_streams_is_diagnosed),
    T(e2_query_status_and_synchronize_event),
    T(e4_wait_without_reset_then_destroy_is_flagged),
    T(e4_rerecord_without_reset_is_flagged),
    T(e4_runtime_cross_stream_example_plain_event_is_clean),
    T(e4_reset_of_plain_event_is_flagged),
    T(e3_plain_event_wait_waits_for_the_latest_record),
    T(e5_reset_overtaking_another_streams_wait_is_flagged),
    T(e6_synchronize_event_with_timeout_codes),
    T(e7_event_flags_without_sync_cannot_wait_or_reset),
    T(e8_elapsed_time_needs_both_events_complete),
    T(e9_destroy_event_referenced_by_pending_task_is_flagged),
    T(c2_second_subscription_of_a_stream_returns_107011),
    T(c3_same_thread_on_two_devices_returns_107012),
    T(c4_more_than_1024_subscribed_threads_returns_107012),
    T(c5_launch_callback_errors),
    T(c5_block_holds_the_stream_and_no_block_does_not),
    T(c6_process_report_errors),
    T(c8_runtime_call_inside_callback_is_flagged),
    T(c1_synchronize_on_the_processing_thread_is_diagnosed),
    T(c9_unsubscribe_errors),
    T(m1_memcpy_violations_return_100000_and_are_flagged),
    T(m1_malloc_and_free_codes),
    T(m2_free_memory_used_by_pending_task_is_flagged),
    T(m2_free_with_wrong_pair_is_flagged),
    T(m1_async_task_on_another_devices_stream_returns_100000),
    T(check_disabled_by_env_keeps_error_codes),
    T(trace_ping_pong),
    T(trace_fan_out),
    T(stress_many_streams_events_threads),
    T(perf_synchronize_loop),
    T(race_destroy_stream_vs_finalize_no_crash),
    T(race_destroy_stream_vs_reset_device_no_crash),
    T(race_destroy_context_vs_finalize_no_crash),
    T(race_destroy_context_vs_reset_device_no_crash),
    T(p4_version_queries_and_recent_error_message),
    T(p5_op_execute_timeout_stops_long_kernels),
    T(p5_limits_are_capped_at_2176_s_and_longer_kernels_refused),
    T(d7_reset_device_force_releases_every_reference),
    T(d8_device_queries),
    T(s5_stream_query_not_ready_while_kernel_runs),
    T(s6_failure_mode_codes_and_continue_on_failure),
    T(s6_stop_on_failure_stops_every_stream_of_the_context),
    T(s7_create_stream_with_config_codes),
    T(s8_destroy_stream_force_drops_pending_tasks),
    T(s8_destroy_stream_force_drops_callbacks),
    T(c10_host_func_runs_in_order_on_a_runtime_thread),
    T(c11_report_callbacks_and_host_functions_are_never_mixed),
    T(c12_host_func_subscription_codes),
    T(s9_stream_config_handles_and_create_stream_v2),
    T(s10_stream_queries_flags_priority_id),
    T(s11_stream_stop_and_abort),
    T(s12_stream_state_callbacks),
    T(d9_d10_current_default_stream_and_thread_resources),
    T(p6_last_error_and_error_verbose),
    T(aclsim_inject_task_failure_and_new_names),
    T(md_load_and_execute_sync_and_async),
    T(md_real_om_and_bad_files_are_refused),
    T(md11_dynamic_batch),
    T(md13_data_types_and_formats),
    T(md7_unload_with_pending_execution_returns_107037),
    T(md6_dataset_destroyed_while_in_use_is_flagged),
    T(md8_execution_on_two_streams_is_flagged),
    T(md1_other_context_returns_107004),
    T(md10_wrong_buffer_sizes_return_100017_100018),
    T(md9_host_memory_in_a_data_buffer_is_flagged),
    T(md2_with_mem_work_freed_before_unload_is_flagged),
    T(md3_load_from_mem_bytes_freed_before_unload_is_flagged),
    T(md4_description_used_after_unload_is_flagged),
    T(md_p2_model_never_unloaded_is_a_leak),
    T(md_io_memory_in_use_and_device_reset),
    T(md6_add_buffer_while_pending_is_flagged),
    T(md6_set_batch_while_pending_is_flagged),
    T(md6_io_memory_of_a_pending_execution_touched_is_flagged),
    T(md2_md3_memory_held_by_a_loaded_model_written_is_flagged),
    T(md2_shared_work_memory_overlapping_executions_is_flagged),
    T(md6_set_batch_during_synchronous_execute_on_another_thread_is_flagged),
    T(md5_use_after_destroy_is_flagged),
    T(md8_serialised_executions_closing_an_event_cycle_are_diagnosed),
    T(md_model_file_read_never_blocks_other_threads),
    T(race_large_memset_vs_reset_device_no_crash),
    T(race_large_memset_vs_finalize_no_crash),
    T(m_large_copies_do_not_block_other_threads),
    T(md_synchronous_execute_and_device_reset),
    T(md_bad_model_inputs_return_error_codes),
    T(m_device_memory_is_enforced),
};

int main(int argc, char **argv) {
    if (argc < 2) {
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) printf("%s\n", cases[i].name);
        return 0;
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (strcmp(cases[i].name, argv[1]) == 0) {
            cases[i].fn();
            printf("ok %s\n", argv[1]);
            return 0;
        }
    }
    fprintf(stderr, "unknown case %s\n", argv[1]);
    return 2;
}
