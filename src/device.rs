//! Devices: `aclrtSetDevice` / `aclrtResetDevice` (D1, D3, D5).

use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::context::{self, Context};
use crate::error::{Error, Result};
use crate::runtime::{Failed, release_on_drop};
use crate::sys::loader::Api;

/// A device made usable by `aclrtSetDevice` (D1); reset by [`Device::reset`] or, as a
/// fallback, on drop.
///
/// Two `Device` values for the same id are allowed: set/reset are reference-counted by the
/// runtime and each value pairs one set with one reset (D1).
///
/// `Send + Sync`: a device is an id; which thread uses it does not matter.
///
/// ```no_run
/// # use ascend_typestate::Acl;
/// let acl = Acl::init()?;
/// let device = acl.set_device(0)?;      // D1
/// let ctx = device.create_context()?;   // D2
/// ctx.destroy()?;                       // D3: contexts before the device
/// device.reset()?;                      // D3: the device before finalize
/// acl.finalize()?;
/// # Ok::<(), ascend_typestate::Error>(())
/// ```
///
/// # States
///
/// ```text
///   Acl::set_device(id) ──► Set ──create_context()──► Context (≥ 1 Context borrows it)
///                            ▲                              │ every Context destroyed
///                            └──────────────────────────────┘
///   Set ──reset()──► Reset (the value is consumed: no further call compiles)
/// ```
///
/// The states are carried by ownership rather than a marker parameter, because a device may
/// hold several contexts at once: *Set* is a [`Device`] value, *Context* is a `Device` that a
/// [`Context`] borrows, *Reset* is the device consumed by [`Device::reset`]. The borrow
/// checker then enforces D3: `reset` takes `self`, so it does not compile while a context
/// borrows the device (E0505), and nothing can be called on a device after reset (E0382).
pub struct Device<'acl> {
    api: &'static Api,
    id: i32,
    /// Live contexts created on this device. Borrows keep it 0 at `reset`, unless a context
    /// was leaked (`mem::forget`); then the device is kept, not reset under it (D3).
    contexts: AtomicUsize,
    _acl: PhantomData<&'acl crate::Acl>,
}

/// Devices set through the typed API and not reset yet. One per process is enough: only one
/// [`Acl`](crate::Acl) lives at a time (P2), and every device borrows it.
static LIVE_DEVICES: AtomicUsize = AtomicUsize::new(0);

/// How many devices set through the typed API are not reset (a leak, at `finalize`).
pub(crate) fn live_devices() -> usize {
    LIVE_DEVICES.load(Ordering::Acquire)
}

impl<'acl> Device<'acl> {
    pub(crate) fn set(api: &'static Api, id: i32) -> Result<Device<'acl>> {
        context::refuse_inside_callback()?;
        // SAFETY: paired with the reset of `Device::release` (D1); not inside a callback
        // (checked above, C8).
        unsafe { api.set_device(id)? };
        LIVE_DEVICES.fetch_add(1, Ordering::Relaxed);
        // aclrtSetDevice made the device's default context current on this thread.
        crate::result::current::forget();
        Ok(Device {
            api,
            id,
            contexts: AtomicUsize::new(0),
            _acl: PhantomData,
        })
    }

    /// The device id.
    pub fn id(&self) -> i32 {
        self.id
    }

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

    fn release(&self) -> Result<()> {
        context::may_release(self.contexts.load(Ordering::Acquire))?;
        // SAFETY: no context created on the device is alive (counted above; borrows keep it
        // so unless one was leaked), so no stream, event or buffer on it is either, and the
        // value is consumed or being dropped, so this is its only reset (D3).
        let result = unsafe { self.api.reset_device(self.id) };
        crate::result::current::forget();
        if result.is_ok() {
            LIVE_DEVICES.fetch_sub(1, Ordering::Release);
        }
        Ok(result?)
    }

    /// `aclrtResetDevice(id)` (D1, D3). Consumes the device: does not compile while a
    /// [`Context`] borrows it, and nothing can be called on it afterwards. On failure the
    /// device is given back; if a context created on it was leaked (`mem::forget`), that
    /// failure is [`Error::LiveChildren`] and the device is never reset under it (its `Drop`
    /// keeps it too, and reports).
    pub fn reset(self) -> Result<(), Failed<Device<'acl>>> {
        Failed::release_or_give_back(self, Self::release)
    }
}

impl Drop for Device<'_> {
    fn drop(&mut self) {
        release_on_drop("Device", || self.release());
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

impl std::fmt::Debug for Device<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device").field("id", &self.id).finish()
    }
}
