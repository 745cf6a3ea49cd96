//! Devices and their typestate: `aclrtSetDevice` / `aclrtResetDevice`, the default context
//! (D1, D3, D5).

use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::sys::bindings::aclrtContext;
use crate::sys::loader::Api;
use crate::typed::context::Context;
use crate::typed::error::{Error, Result};
use crate::typed::event::Reset;
use crate::typed::handle::LIVE_DEVICES;
use crate::typed::handle::{Failed, release_on_drop, report_drop_error};
use crate::typed::runtime::Acl;

mod sealed {
    use crate::typed::context::Context;
    use crate::typed::error::Result;

    pub trait Sealed {
        /// Whether a device in this state is set (holds one `aclrtSetDevice`).
        const SET: bool;
        /// What a device in this state holds besides its id: nothing, or (in
        /// *DefaultContext*) its default context. Not tied to the `Acl`'s lifetime, which
        /// keeps [`Device`](super::Device) covariant in it; the device value bounds it.
        type Held: Held;
    }

    /// What a device value holds for its state.
    pub trait Held {
        /// Releases it before the device's reset (the default context: nothing of this
        /// crate may be left in it). Repeatable: on a failure it is still held.
        fn release(&self) -> Result<()>;
        /// Gives it up for good, after `release` and whatever had to follow it (the
        /// device's reset) succeeded: the default context may be taken by another value.
        fn give_up(self, device: i32);
    }

    impl Held for () {
        fn release(&self) -> Result<()> {
            Ok(())
        }
        fn give_up(self, _device: i32) {}
    }

    impl Held for Context<'_> {
        fn release(&self) -> Result<()> {
            self.release_default()
        }
        fn give_up(self, device: i32) {
            self.forget_released();
            super::default_contexts().retain(|&id| id != device);
        }
    }
}

use sealed::Held as _;

/// The state of a [`Device`]. Sealed: [`Set`], [`DefaultContext`] and [`Reset`].
pub trait DeviceState: sealed::Sealed {}

/// *Set*: `aclrtSetDevice` succeeded (D1). Allows [`Device::create_context`] (any number of
/// contexts, each borrowing the device), [`Device::capability`], and the transitions
/// [`into_default_context`](Device::into_default_context) → *DefaultContext* and
/// [`reset`](Device::reset) → *Reset*.
#[derive(Debug)]
pub enum Set {}

/// *DefaultContext* (the design card's *Context* state; named so beside the [`Context`]
/// handle): the device's default context, which `aclrtSetDevice` created (D1), is held by
/// the device value and used through it: the device dereferences to a [`Context`], so
/// `device.create_stream()`, `device.create_event()`, `device.alloc(..)`, ... work as on any
/// context (the pattern of the official samples: set the device, create streams). Leave by
/// [`release_default_context`](Device::release_default_context) → *Set*, or
/// [`reset`](Device::reset) → *Reset*; neither compiles while a stream, event or buffer
/// borrows the device (D3).
#[derive(Debug)]
pub enum DefaultContext {}

impl sealed::Sealed for Set {
    const SET: bool = true;
    type Held = ();
}
impl sealed::Sealed for DefaultContext {
    const SET: bool = true;
    type Held = Context<'static>;
}
// *Reset* is the marker the events use too: `aclrtResetDevice` succeeded, nothing runs on
// the device; it allows `set` again (recovery) and `id`, and dropping it does nothing.
impl sealed::Sealed for Reset {
    const SET: bool = false;
    type Held = ();
}
impl DeviceState for Set {}
impl DeviceState for DefaultContext {}
impl DeviceState for Reset {}

/// A device, in state `S`: [`Set`] (the default), [`DefaultContext`] or [`Reset`].
///
/// Two `Device` values for the same id are allowed: set/reset are reference-counted by the
/// runtime and each value pairs one set with one reset (D1).
///
/// `Send + Sync`: a device is an id (and, in *DefaultContext*, a [`Context`], which is both).
///
/// ```no_run
/// # use ascend_typestate::Acl;
/// let acl = Acl::init()?;
/// let device = acl.set_device(0)?;                 // Set (D1)
/// let device = device.into_default_context()?;     // DefaultContext
/// let stream = device.create_stream()?;            // a stream of the default context
/// stream.synchronize()?;
/// stream.destroy()?;                               // D3: streams before the device
/// let device = device.reset()?;                    // Reset
/// let device = device.set()?;                      // Set again (recovery)
/// let ctx = device.create_context()?;              // an explicit context (D2)
/// ctx.destroy()?;
/// device.reset()?;
/// acl.finalize()?;
/// # Ok::<(), ascend_typestate::Error>(())
/// ```
///
/// # States
///
/// ```text
///                        into_default_context()
///   set_device(id) ──► Set ─────────────────────────► DefaultContext
///                      │  ▲ ◄──────────────────────── │   (derefs to its Context)
///                      │  │ release_default_context() │
///              reset() │  │ set()                     │ reset()
///                      ▼  │                           │
///                      Reset ◄────────────────────────┘
/// ```
///
/// | state | allows | leaves by |
/// |---|---|---|
/// | [`Set`] | `create_context` (several, D2), `capability`, `id` | `into_default_context` → *DefaultContext*; `reset` → *Reset* |
/// | [`DefaultContext`] | everything a [`Context`] allows (`create_stream`, `create_event`, `alloc`, `async_scope`, `synchronize_device`, ...), `create_context`, `capability`, `id` | `release_default_context` → *Set*; `reset` → *Reset* |
/// | [`Reset`] | `id` | `set` → *Set* |
///
/// What does not compile: a stream of a *Set* device (no `create_stream`: enter
/// *DefaultContext* or create a context), any context or stream of a *Reset* device, a
/// transition while a context, stream, event or buffer borrows the device (E0505, D3), and
/// any use of the value a transition consumed (E0382). Transitions take the device by value
/// and give it back with the error on failure ([`Failed`]); a context or handle leaked with
/// `mem::forget` makes the transition fail with [`Error::LiveChildren`] rather than reset the
/// device under it (D3). A device in *DefaultContext* holds its default context until its
/// reset or release succeeds: one whose reset failed still holds it, and one that is leaked
/// (or dropped after a refused reset) holds it for good, so no other value can take it
/// ([`Error::DefaultContextInUse`]).
///
/// The default context is read once, by `set_device` (and [`set`](Device::set)), on the
/// setting thread: taking it ([`into_default_context`](Device::into_default_context)) makes
/// no runtime call.
pub struct Device<'acl, S: DeviceState = Set> {
    api: &'static Api,
    id: i32,
    /// Live contexts created on this device. Borrows keep it 0 at `reset`, unless a context
    /// was leaked (`mem::forget`); then the device is kept, not reset under it (D3).
    contexts: AtomicUsize,
    /// The default context (D1), read when the device was set, on that thread.
    default_raw: aclrtContext,
    /// Nothing, or in *DefaultContext* the default context, as a [`Context`]. Dropped only
    /// once released (a device whose reset is refused keeps it, leaked with the device).
    held: ManuallyDrop<S::Held>,
    _acl: PhantomData<&'acl crate::Acl>,
    _state: PhantomData<S>,
}

// SAFETY: the raw default context is an opaque runtime handle, only passed to the runtime
// (which allows any thread to use a context once it is made current there, D6, as every
// call through a `Context` does); the rest is an id, atomics and a `Context` (Send + Sync).
unsafe impl<S: DeviceState> Send for Device<'_, S> where S::Held: Send {}
// SAFETY: as above; shared references only read the id and the raw handle, and use the
// `Context`, which is `Sync`.
unsafe impl<S: DeviceState> Sync for Device<'_, S> where S::Held: Sync {}

/// Device ids whose default context a [`Device<DefaultContext>`] holds. One value at a time
/// per device: two would be two [`Context`]s of one runtime context, whose exclusive uses
/// (S6: stop on failure, or callbacks) could then be combined.
static DEFAULT_CONTEXTS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

fn default_contexts() -> std::sync::MutexGuard<'static, Vec<i32>> {
    // A poisoned lock only means a panic elsewhere; the list is still consistent.
    DEFAULT_CONTEXTS.lock().unwrap_or_else(|p| p.into_inner())
}

impl<'acl> Device<'acl, Set> {
    pub(crate) fn set_new(api: &'static Api, id: i32) -> Result<Device<'acl, Set>> {
        let default_raw = set_device(api, id)?;
        Ok(Device {
            api,
            id,
            contexts: AtomicUsize::new(0),
            default_raw,
            held: ManuallyDrop::new(()),
            _acl: PhantomData,
            _state: PhantomData,
        })
    }

    /// *Set* → *DefaultContext* (D1); [`Error::DefaultContextInUse`] if another value of this
    /// device holds it.
    /// On failure the error is returned and the device goes to its `Drop` fallback (tried
    /// again while the runtime fails; kept and reported if it still cannot be released);
    /// [`try_into_default_context`](Self::try_into_default_context) gives it back instead, for a caller who wants to retry.
    pub fn into_default_context(self) -> Result<Device<'acl, DefaultContext>> {
        self.try_into_default_context().map_err(Error::from)
    }

    /// *Set* → *DefaultContext*: holds the device's default context (D1), which the device
    /// then dereferences to. [`Error::DefaultContextInUse`] if another value of this device
    /// holds it.
    pub fn try_into_default_context(
        self,
    ) -> Result<Device<'acl, DefaultContext>, Failed<Device<'acl, Set>>> {
        match self.take_default_context() {
            Ok(context) => Ok(self.into_state(context)),
            Err(error) => Err(Failed::new(error, self)),
        }
    }

    fn take_default_context(&self) -> Result<Context<'static>> {
        crate::typed::handle::refuse_inside_callback()?;
        let mut taken = default_contexts();
        if taken.contains(&self.id) {
            return Err(Error::DefaultContextInUse { device: self.id });
        }
        taken.push(self.id);
        Ok(Context::default_of(self.api, self.id, self.default_raw))
    }
}

impl<'acl> Device<'acl, DefaultContext> {
    /// *DefaultContext* → *Set*: gives the default context up.
    /// On failure the error is returned and the device goes to its `Drop` fallback (tried
    /// again while the runtime fails; kept and reported if it still cannot be released);
    /// [`try_release_default_context`](Self::try_release_default_context) gives it back instead, for a caller who wants to retry.
    pub fn release_default_context(self) -> Result<Device<'acl, Set>> {
        self.try_release_default_context()
            .map_err(Failed::into_release_error)
    }

    /// *DefaultContext* → *Set*: gives the default context up (every stream, event and
    /// buffer of it is gone: they borrow the device). The runtime context itself lives on
    /// until the device is reset (D5).
    #[expect(
        clippy::result_large_err,
        reason = "a transition gives the device back on failure, as every transition does"
    )]
    pub fn try_release_default_context(
        self,
    ) -> Result<Device<'acl, Set>, Failed<Device<'acl, DefaultContext>>> {
        match self.held.release() {
            Ok(()) => Ok(self.into_state(())),
            Err(error) => Err(Failed::new(error, self)),
        }
    }
}

impl<'acl> std::ops::Deref for Device<'acl, DefaultContext> {
    type Target = Context<'acl>;

    fn deref(&self) -> &Context<'acl> {
        &self.held
    }
}

impl<'acl> Device<'acl, Reset> {
    /// *Reset* → *Set*: `aclrtSetDevice` again (D1).
    /// On failure the error is returned and the device goes to its `Drop` fallback (tried
    /// again while the runtime fails; kept and reported if it still cannot be released);
    /// [`try_set`](Self::try_set) gives it back instead, for a caller who wants to retry.
    pub fn set(self) -> Result<Device<'acl, Set>> {
        self.try_set().map_err(Error::from)
    }

    /// *Reset* → *Set*: `aclrtSetDevice` again (D1), e.g. to recover after a fault.
    pub fn try_set(self) -> Result<Device<'acl, Set>, Failed<Device<'acl, Reset>>> {
        match set_device(self.api, self.id) {
            Ok(default_raw) => {
                let mut set = self.into_state(());
                set.default_raw = default_raw;
                Ok(set)
            }
            Err(error) => Err(Failed::new(error, self)),
        }
    }
}

/// `aclrtSetDevice(id)`, counted in [`LIVE_DEVICES`], then the default context it made
/// current (D1), read at once on this thread. If it cannot be read, the set is undone.
fn set_device(api: &'static Api, id: i32) -> Result<aclrtContext> {
    crate::typed::handle::refuse_inside_callback()?;
    // SAFETY: paired with the reset of `Device::release`, or below (D1); not inside a
    // callback (checked above, C8).
    unsafe { api.set_device(id)? };
    // aclrtSetDevice made the device's default context current on this thread.
    crate::result::current::forget();
    match api.get_current_context() {
        Ok(raw) => {
            LIVE_DEVICES.fetch_add(1, Ordering::Relaxed);
            Ok(raw)
        }
        Err(error) => {
            // SAFETY: pairs the set above; nothing was created on the device since.
            let undone = unsafe { api.reset_device(id) }.or_else(|first| {
                report_drop_error(
                    "Device (undoing a set whose context is unknown)",
                    Err(first),
                );
                // SAFETY: as above.
                unsafe { api.reset_device(id) }
            });
            crate::result::current::forget();
            if let Err(second) = undone {
                // Still set: counted, so that `Acl::finalize` refuses (D3) instead of
                // finalizing under it; the error is not lost.
                LIVE_DEVICES.fetch_add(1, Ordering::Relaxed);
                report_drop_error("Device (a set that cannot be undone, kept)", Err(second));
            }
            Err(error.into())
        }
    }
}

impl<'acl, S: DeviceState> Device<'acl, S> {
    /// The device id.
    pub fn id(&self) -> i32 {
        self.id
    }

    /// The same device in state `T`, holding `held`, without running `Drop`. What it held
    /// in `S` was released already (or is moved into `held`'s state by the caller): it is
    /// consumed here without a second release.
    fn into_state<T: DeviceState>(self, held: T::Held) -> Device<'acl, T> {
        let this = ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped nor used after this read, so the field is moved
        // out exactly once.
        let old = ManuallyDrop::into_inner(unsafe { std::ptr::read(&this.held) });
        old.give_up(this.id);
        Device {
            api: this.api,
            id: this.id,
            contexts: AtomicUsize::new(this.contexts.load(Ordering::Acquire)),
            default_raw: this.default_raw,
            held: ManuallyDrop::new(held),
            _acl: PhantomData,
            _state: PhantomData,
        }
    }

    /// Releases what the device holds: its default context (if any), then the reset.
    fn release(&self) -> Result<()> {
        if !S::SET {
            return Ok(());
        }
        crate::typed::handle::may_release(self.contexts.load(Ordering::Acquire))?;
        self.held.release()?;
        // SAFETY: no context created on the device is alive (counted above; borrows keep it
        // so unless one was leaked), so no stream, event or buffer on it is either; the
        // default context's handles are gone too (they borrow the device, or were leaked
        // and refused above); the value is consumed or being dropped, so this is its only
        // reset (D3).
        let result = unsafe { self.api.reset_device(self.id) };
        crate::result::current::forget();
        if result.is_ok() {
            LIVE_DEVICES.fetch_sub(1, Ordering::Release);
        }
        Ok(result?)
    }
}

/// Methods of the states that hold the device set: *Set* and *DefaultContext*.
pub trait SetState: DeviceState {}
impl SetState for Set {}
impl SetState for DefaultContext {}

impl<'acl, S: SetState> Device<'acl, S> {
    /// `aclrtCreateContext(&ctx, id)` (D2): a context on this device, borrowing it, current
    /// on the calling thread. Streams and events are created in a context.
    pub fn create_context(&self) -> Result<Context<'_>> {
        Context::create(self.api, self.id, &self.contexts)
    }

    /// `aclGetDeviceCapability` (D8): one property of this device.
    /// [`Error::Unsupported`] on runtimes that lack it.
    pub fn capability(&self, capability: DeviceCapability) -> Result<i64> {
        use crate::sys::bindings as b;
        let info = match capability {
            DeviceCapability::AiCoreCount => b::ACL_DEVICE_INFO_AI_CORE_NUM,
            DeviceCapability::VectorCoreCount => b::ACL_DEVICE_INFO_VECTOR_CORE_NUM,
            DeviceCapability::L2CacheBytes => b::ACL_DEVICE_INFO_L2_SIZE,
        };
        // A set device's id is valid and not negative (D1).
        let id = u32::try_from(self.id).map_err(|_| Error::InvalidArgument("device id"))?;
        Ok(self.api.get_device_capability(id, info)?)
    }

    /// `aclrtResetDevice` (D1, D3): → *Reset*. Consumes the device: does not compile while a
    /// [`Context`] (or, in *DefaultContext*, a stream, event or buffer) borrows it.
    /// On failure the error is returned and the device goes to its `Drop` fallback (tried
    /// again while the runtime fails; kept and reported if it still cannot be released);
    /// [`try_reset`](Self::try_reset) gives it back instead, for a caller who wants to retry.
    pub fn reset(self) -> Result<Device<'acl, Reset>> {
        self.try_reset().map_err(Failed::into_release_error)
    }

    /// `aclrtResetDevice(id)` (D1, D3): → *Reset*. Consumes the device: does not compile
    /// while a [`Context`] (or, in *DefaultContext*, a stream, event or buffer) borrows it.
    /// On failure the device is given back; if a handle was leaked (`mem::forget`), that
    /// failure is [`Error::LiveChildren`] and the device is never reset under it (its `Drop`
    /// keeps it too, and reports).
    pub fn try_reset(self) -> Result<Device<'acl, Reset>, Failed<Device<'acl, S>>> {
        match self.release() {
            Ok(()) => Ok(self.into_state(())),
            Err(error) => Err(Failed::new(error, self)),
        }
    }
}

impl<S: DeviceState> Drop for Device<'_, S> {
    fn drop(&mut self) {
        let mut released = false;
        release_on_drop("Device", || {
            let result = self.release();
            released = result.is_ok();
            result
        });
        if released {
            // SAFETY: `held` is not used again: this is the value's end.
            let held = unsafe { ManuallyDrop::take(&mut self.held) };
            held.give_up(self.id);
        }
        // Else it stays held, leaked with the device (its `Drop` would try and report
        // again what was just reported).
    }
}

/// A property [`Device::capability`] reports (`aclDeviceInfo`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeviceCapability {
    /// `ACL_DEVICE_INFO_AI_CORE_NUM`: AI cores.
    AiCoreCount,
    /// `ACL_DEVICE_INFO_VECTOR_CORE_NUM`: vector cores.
    VectorCoreCount,
    /// `ACL_DEVICE_INFO_L2_SIZE`: L2 cache size in bytes.
    L2CacheBytes,
}

impl<S: DeviceState> std::fmt::Debug for Device<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("id", &self.id)
            .field("state", &std::any::type_name::<S>())
            .finish()
    }
}

/// Setting a device (D1).
impl Acl {
    /// `aclrtSetDevice(id)` (D1): a [`Device`] in the *Set* state, borrowing this token.
    pub fn set_device(&self, id: i32) -> Result<Device<'_, crate::Set>> {
        Device::set_new(self.api_static(), id)
    }
}
