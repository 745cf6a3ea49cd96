/*
 * aclsim.h: the simulator's own extension API (symbols prefixed aclsim).
 *
 * These functions exist only in the CPU simulator of the AscendCL runtime built
 * from sim/; the vendor library has none of them. Programs that also run on a
 * real board resolve them optionally (dlsym) and treat their absence as
 * "not running on the simulator".
 *
 * Every finding of the protocol checker names a rule ID of
 * docs/protocol.md (P1.., D1.., S1.., E1.., C1.., M1..).
 */
#ifndef ASCEND_TYPESTATE_ACLSIM_H
#define ASCEND_TYPESTATE_ACLSIM_H

#include "../../include/ascendcl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Version of this extension API; bumped on incompatible change. */
#define ACLSIM_API_VERSION 1
uint32_t aclsimApiVersion(void);

/* A synthetic kernel body: runs on the stream's worker thread when the task is reached.
 * `buffers` are the device pointers passed to aclsimLaunchKernel, in order. */
typedef void (*aclsimKernelFn)(void *userData, void *const *buffers, size_t bufferCount);

/* Enqueue a synthetic kernel task on `stream` (NULL: the default stream of the current
 * context). The task runs for at least `durationUs` microseconds, then calls `fn` (if not
 * NULL) with `userData` and the buffer list. Each buffer must lie inside a live device
 * allocation of the stream's device (else 100000 and an M1 finding); the checker then
 * knows the task uses it (M2). A `durationUs` above 2176 s (2176000000, the longest
 * operator execution timeout, P5) returns 100000: such a kernel could never complete.
 * Errors as for aclrtMemcpyAsync: 100001 before aclInit (P1), 107003 when the stream is
 * not in the current context, ... */
aclError aclsimLaunchKernel(aclrtStream stream, uint64_t durationUs, aclsimKernelFn fn,
                            void *userData, void *const *buffers, size_t bufferCount);

/* Number of devices the simulator reports. Only before aclInit (else 100002); 0 or more
 * than 64 returns 100000. Default: env ACLSIM_DEVICE_COUNT, else 2. */
aclError aclsimSetDeviceCount(uint32_t count);

/* Checker findings, in the order they were made. They survive aclFinalize and a later
 * aclInit; only aclsimClearFindings removes them. These, aclsimApiVersion,
 * aclsimSetDeviceCount, aclsimCallCount, aclsimResetCallCounts, aclsimClearFaults, aclsimSetQuiet and
 * aclsimLiveObjectCount (0) work before aclInit as well; aclsimLaunchKernel and the fault
 * injection functions (aclsimInjectTaskFailure too) return 100001 then (see each). */
size_t aclsimFindingCount(void);
/* Copies finding `index`: its rule ID (e.g. "E4", NUL-terminated, at most 8 bytes) and its
 * message (NUL-terminated, truncated to messageCap). Returns 0, or 100000 when index is out
 * of range or a buffer is NULL with a non-zero cap. */
aclError aclsimGetFinding(size_t index, char *rule, size_t ruleCap, char *message,
                          size_t messageCap);
void aclsimClearFindings(void);

/* Fault injection, for testing error paths: the next `times` calls of the runtime function
 * named `call` (e.g. "aclrtResetEvent"; any acl* function of ascendcl.h but aclInit and
 * aclGetRecentErrMsg, or aclsimLaunchKernel) return `code` and do nothing else, not even
 * check their arguments (a failing aclFinalize leaves the runtime initialized; a failing
 * aclrtGetSocName returns NULL). The arguments are checked first: a NULL or non-UTF-8
 * `call`, a name that can never fire (not one of those functions: unknown, misspelt,
 * aclInit, aclGetRecentErrMsg, or an aclsim* query), a zero `code` or zero `times` returns
 * 100000, before aclInit too. With valid arguments, only while initialized: before aclInit
 * (or after aclFinalize) it returns 100001 (ACL_ERROR_UNINITIALIZE) and arms nothing.
 * Armed failures end with aclFinalize or aclsimClearFaults. */
aclError aclsimInjectFault(const char *call, aclError code, uint32_t times);
/* As aclsimInjectFault, after `skip` calls: the next `skip` calls of `call` run normally,
 * the `times` calls after them fail with `code`. skip = 0 is aclsimInjectFault. Every call
 * of `call` made while initialized counts toward `skip`, a call failed by another armed
 * failure included (calls rejected as made from inside a callback, C8, are not). Several
 * failures may be armed on one function: each counts for itself, and a call that two of
 * them would fail fails with the one armed first. Same argument checks and codes as
 * aclsimInjectFault (100000 for a bad argument, then 100001 before aclInit). */
aclError aclsimInjectFaultAt(const char *call, aclError code, uint32_t skip, uint32_t times);
void aclsimClearFaults(void);

/* Asynchronous task failure, for testing S2/S6 and async-error handling: the next copy,
 * memset, kernel or host-function task that `stream` (NULL: the default stream of the current
 * context) reaches fails with `code` without running its body (no write, no call); the next
 * synchronize of the stream reports `code`, and on an ACL_STOP_ON_FAILURE stream the whole
 * context stops (S6). Record, wait, reset and callback tasks pass through untouched. Each
 * call arms one more failure on the stream. A zero `code`: 100000; before aclInit: 100001; an
 * unknown or destroyed stream: 107000; NULL stream without a current context: 107002. The
 * stream need not be in the current context. Not counted by aclsimCallCount, not a fault
 * injection target. Armed failures end with the stream. */
aclError aclsimInjectTaskFailure(aclrtStream stream, aclError code);

/* Call counts, for systematic fault injection (count the calls of a clean run, then fail
 * each of them in turn with aclsimInjectFaultAt): how many times the runtime function
 * named `call` (any acl* function of ascendcl.h, or aclsimLaunchKernel; e.g.
 * "aclrtRecordEvent") was called since the last aclsimResetCallCounts, or since the process
 * started. Every call counts, failing ones included, before aclInit too; the counts survive
 * aclFinalize. 0 for NULL, a non-UTF-8 or an unknown name. Counting costs each call one
 * relaxed atomic add. */
uint64_t aclsimCallCount(const char *call);
/* Sets every call count to 0. */
void aclsimResetCallCounts(void);

/* Whether checker findings are also printed to stderr as `aclsim: [RULE] message` (they are
 * always recorded): 1 silences them, 0 prints them, -1 follows ACLSIM_QUIET (read at aclInit)
 * again, the default. Process-wide, kept across aclInit/aclFinalize, allowed before aclInit.
 * Returns the previous setting (-1, 0 or 1); any other value changes nothing and returns the
 * current one. For tests that provoke a finding on purpose and assert it. */
int aclsimSetQuiet(int quiet);

/* Number of live runtime objects (contexts created by aclrtCreateContext, streams, events,
 * device and host allocations, subscriptions). 0 after a clean aclFinalize. */
size_t aclsimLiveObjectCount(void);

#ifdef __cplusplus
}
#endif

#endif /* ASCEND_TYPESTATE_ACLSIM_H */
