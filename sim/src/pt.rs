//! Minimal safe wrappers around pthread mutexes, condition variables and threads.
//!
//! The simulator deliberately avoids `std::sync` (futex-based Mutex/Condvar, atomics in
//! Arc/mpsc) and `std::thread` (an Arc'd packet shared between the spawner and the thread):
//! helgrind and drd only understand pthread primitives and report false races on the std
//! ones. Every piece of shared state lives behind the one [`PMutex`] in `state::G`, every
//! wait is a `pthread_cond_*wait` on that mutex, and every thread is a raw `pthread_create`
//! joined with `pthread_join`, so the tools see all happens-before edges.
//!
//! Layer: base (with `calls` and `trace`); imports nothing of the crate.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

/// A pthread mutex protecting a `T`. Must not move once locked: it is only used as a
/// `static` (statics never move).
pub struct PMutex<T> {
    raw: UnsafeCell<libc::pthread_mutex_t>,
    data: UnsafeCell<T>,
}

// SAFETY: access to `data` is serialized by the pthread mutex; `T: Send` is enough for
// moving the protected value between threads through the lock.
unsafe impl<T: Send> Sync for PMutex<T> {}
// SAFETY: as above; the raw mutex itself is a plain C struct.
unsafe impl<T: Send> Send for PMutex<T> {}

impl<T> PMutex<T> {
    pub const fn new(value: T) -> Self {
        PMutex {
            raw: UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER),
            data: UnsafeCell::new(value),
        }
    }

    pub fn lock(&self) -> PGuard<'_, T> {
        // SAFETY: `raw` is a statically initialized, never-moved pthread mutex; a default
        // (non-recursive) mutex locked by a thread that does not hold it.
        unsafe {
            libc::pthread_mutex_lock(self.raw.get());
        }
        PGuard { m: self }
    }
}

/// RAII guard of a [`PMutex`]; unlocks on drop (also while unwinding).
pub struct PGuard<'a, T> {
    m: &'a PMutex<T>,
}

impl<T> PGuard<'_, T> {
    /// Runs `f` with the mutex released, then re-acquires it.
    pub fn unlocked<R>(&mut self, f: impl FnOnce() -> R) -> R {
        // SAFETY: this guard proves the calling thread holds the mutex.
        unsafe {
            libc::pthread_mutex_unlock(self.m.raw.get());
        }
        let r = catch_unwind(AssertUnwindSafe(f));
        // SAFETY: re-acquire what we released above; the guard owns it again.
        unsafe {
            libc::pthread_mutex_lock(self.m.raw.get());
        }
        match r {
            Ok(v) => v,
            Err(p) => std::panic::resume_unwind(p),
        }
    }
}

impl<T> Deref for PGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the mutex is held for the guard's lifetime.
        unsafe { &*self.m.data.get() }
    }
}

impl<T> DerefMut for PGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the mutex is held for the guard's lifetime, and `&mut self` is unique.
        unsafe { &mut *self.m.data.get() }
    }
}

impl<T> Drop for PGuard<'_, T> {
    fn drop(&mut self) {
        // SAFETY: the guard holds the lock.
        unsafe {
            libc::pthread_mutex_unlock(self.m.raw.get());
        }
    }
}

/// A pthread condition variable (CLOCK_REALTIME deadlines). Either a `static` or boxed, so
/// it never moves while a thread waits on it.
pub struct PCond {
    raw: UnsafeCell<libc::pthread_cond_t>,
}

// SAFETY: pthread condition variables are designed to be shared between threads.
unsafe impl Sync for PCond {}
// SAFETY: as above.
unsafe impl Send for PCond {}

impl Default for PCond {
    fn default() -> Self {
        Self::new()
    }
}

impl PCond {
    pub const fn new() -> Self {
        PCond {
            raw: UnsafeCell::new(libc::PTHREAD_COND_INITIALIZER),
        }
    }

    pub fn wait<T>(&self, g: &mut PGuard<'_, T>) {
        // SAFETY: the guard proves the calling thread holds the mutex; the cond never moves.
        unsafe {
            libc::pthread_cond_wait(self.raw.get(), g.m.raw.get());
        }
    }

    /// Waits at most `d`; spurious and early wake-ups are possible, callers re-check.
    pub fn wait_timeout<T>(&self, g: &mut PGuard<'_, T>, d: Duration) {
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `now` is a valid out pointer.
        unsafe {
            libc::clock_gettime(libc::CLOCK_REALTIME, &mut now);
        }
        let d = d.min(Duration::from_secs(3600));
        let mut sec = now.tv_sec + d.as_secs() as libc::time_t;
        let mut nsec = now.tv_nsec + d.subsec_nanos() as libc::c_long;
        if nsec >= 1_000_000_000 {
            sec += 1;
            nsec -= 1_000_000_000;
        }
        let deadline = libc::timespec {
            tv_sec: sec,
            tv_nsec: nsec,
        };
        // SAFETY: the guard proves the mutex is held; `deadline` is a valid timespec.
        unsafe {
            libc::pthread_cond_timedwait(self.raw.get(), g.m.raw.get(), &deadline);
        }
    }

    pub fn signal(&self) {
        // SAFETY: valid, never-moved condition variable.
        unsafe {
            libc::pthread_cond_signal(self.raw.get());
        }
    }

    pub fn broadcast(&self) {
        // SAFETY: valid, never-moved condition variable.
        unsafe {
            libc::pthread_cond_broadcast(self.raw.get());
        }
    }
}

impl Drop for PCond {
    fn drop(&mut self) {
        // SAFETY: `&mut self` proves no thread waits on it any more.
        unsafe {
            libc::pthread_cond_destroy(self.raw.get());
        }
    }
}

type Job = Box<dyn FnOnce() + Send + 'static>;

extern "C" fn thread_start(arg: *mut libc::c_void) -> *mut libc::c_void {
    // SAFETY: `arg` is the `Box<Job>` leaked by `spawn` for exactly this thread.
    let job: Box<Job> = unsafe { Box::from_raw(arg as *mut Job) };
    // A panic must never unwind out of a pthread start routine.
    let _ = catch_unwind(AssertUnwindSafe(job));
    std::ptr::null_mut()
}

/// A joinable raw pthread.
pub struct PThread(libc::pthread_t);

/// Starts `f` on a new pthread. Errors carry the pthread_create code.
pub fn spawn(f: impl FnOnce() + Send + 'static) -> Result<PThread, i32> {
    let job: Box<Job> = Box::new(Box::new(f));
    let arg = Box::into_raw(job) as *mut libc::c_void;
    // SAFETY: pthread_t is a plain integer on Linux; zero is a fine placeholder.
    let mut t: libc::pthread_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid out pointer, default attributes, a start routine that takes ownership
    // of `arg` exactly once.
    let rc = unsafe { libc::pthread_create(&mut t, std::ptr::null(), thread_start, arg) };
    if rc != 0 {
        // SAFETY: the thread was not created, so ownership of `arg` is still ours.
        drop(unsafe { Box::from_raw(arg as *mut Job) });
        return Err(rc);
    }
    Ok(PThread(t))
}

impl PThread {
    pub fn join(self) {
        // SAFETY: a thread created by `spawn`, joined exactly once (self is consumed).
        unsafe {
            libc::pthread_join(self.0, std::ptr::null_mut());
        }
    }
}

/// `pthread_self()` as the runtime's `uint64_t threadId` (C7).
pub fn self_id() -> u64 {
    // SAFETY: always safe to call.
    unsafe { libc::pthread_self() as u64 }
}
