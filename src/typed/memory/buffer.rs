//! Device and host buffers, and the synchronous operations on them (M1, M2).

use super::scope::copy_sizes;
use super::{
    Bound, Context, Deref, DerefMut, Error, Failed, Location, MallocPolicy, Memory, MemoryMut,
    NonNull, Pending, PendingDevice, PendingHost, PhantomData, Pod, RangeBounds, Result, byte_len,
    c_void, memcpy_kind, release_on_drop, report_drop_error, sealed,
};

/// `release`, `free`, `Drop` and `Debug` of a buffer type whose memory the raw call
/// `$free` releases.
macro_rules! buffer_end {
    ($ty:ident, $free:ident, $doc:literal) => {
        impl<'ctx, T: Pod> $ty<'ctx, T> {
            fn release(&self) -> Result<()> {
                self.ctx.bind()?;
                // SAFETY: the pointer came from the matching allocation; no task uses it
                // (async tasks exist only inside a scope, which borrows the buffer and
                // synchronises before it ends, M2); the value is consumed or being dropped,
                // so this is the only free.
                unsafe { self.ctx.api().$free(self.ptr.as_ptr())? };
                self.ctx.orphan();
                Ok(())
            }

            #[doc = $doc]
            /// On failure the error is returned and the buffer goes to its `Drop` fallback,
            /// tried again while the runtime fails, kept and reported if it still cannot be freed;
            /// [`try_free`](Self::try_free) gives it back instead.
            pub fn free(self) -> Result<()> {
                self.try_free().map_err(Failed::into_release_error)
            }

            /// As [`free`](Self::free), giving the buffer back with the error on failure.
            pub fn try_free(self) -> Result<(), Failed<$ty<'ctx, T>>> {
                Failed::release_or_give_back(self, Self::release)
            }
        }

        impl<T: Pod> Drop for $ty<'_, T> {
            fn drop(&mut self) {
                release_on_drop(stringify!($ty), || self.release());
            }
        }

        impl<T: Pod> std::fmt::Debug for $ty<'_, T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($ty))
                    .field("ptr", &self.ptr)
                    .field("len", &self.len)
                    .finish()
            }
        }
    };
}

/// Device memory from `aclrtMalloc`, holding `len` elements of `T`, zeroed at allocation.
///
/// # States
///
/// ```text
///  Context::alloc() ──► Idle ──(borrowed by an async_scope: tasks pending)──► Idle
///                        │
///                        └── free() / Drop ──► Freed (consumed)
/// ```
///
/// Freeing takes `self`, so it does not compile while an [`AsyncScope`](crate::AsyncScope) borrows the buffer
/// (M2); outside a scope no task can be using it.
///
/// `Send + Sync`: the host never dereferences device memory; a shared borrow only lets
/// copies read it.
pub struct DeviceBuffer<'ctx, T: Pod> {
    ptr: NonNull<c_void>,
    len: usize,
    ctx: &'ctx Context<'ctx>,
    _elem: PhantomData<T>,
}

// SAFETY: device memory is not tied to a thread; the context is `Sync` and binds per call.
unsafe impl<T: Pod> Send for DeviceBuffer<'_, T> {}
// SAFETY: `&DeviceBuffer` only allows reading copies.
unsafe impl<T: Pod> Sync for DeviceBuffer<'_, T> {}

impl<'ctx> Context<'ctx> {
    /// `aclrtMalloc` for `len` elements of `T`, then `aclrtMemset` to zero. A zero-length
    /// request is [`Error::InvalidArgument`] (the runtime rejects size 0).
    pub fn alloc<T: Pod>(&self, len: usize, policy: MallocPolicy) -> Result<DeviceBuffer<'_, T>> {
        let bytes = byte_len::<T>(len)?;
        if bytes == 0 {
            return Err(Error::InvalidArgument("a device buffer cannot be empty"));
        }
        self.bind()?;
        // SAFETY: freed by the returned buffer's release (M2), in this bound context.
        let raw = unsafe { self.api().malloc(bytes, policy.raw())? };
        let ptr = NonNull::new(raw).ok_or(Error::InvalidArgument(
            "aclrtMalloc returned a null pointer",
        ))?;
        let buffer = DeviceBuffer {
            ptr,
            len,
            ctx: self,
            _elem: PhantomData,
        };
        self.adopt();
        // SAFETY: the allocation is `bytes` long and nothing else uses it yet.
        unsafe { self.api().memset(raw, bytes, 0, bytes)? };
        Ok(buffer)
    }

    /// `aclrtMallocHost` for `len` elements of `T`, zeroed: page-locked host memory, the
    /// fastest source and destination of copies.
    pub fn alloc_host<T: Pod>(&self, len: usize) -> Result<HostBuffer<'_, T>> {
        let bytes = byte_len::<T>(len)?;
        if bytes == 0 {
            return Err(Error::InvalidArgument("a host buffer cannot be empty"));
        }
        if std::mem::align_of::<T>() > 64 {
            return Err(Error::InvalidArgument("element alignment above 64 bytes"));
        }
        self.bind()?;
        // SAFETY: freed by the returned buffer's release, or below (M2).
        let raw = unsafe { self.api().malloc_host(bytes)? };
        let ptr = NonNull::new(raw).ok_or(Error::InvalidArgument(
            "aclrtMallocHost returned a null pointer",
        ))?;
        if !(raw as usize).is_multiple_of(std::mem::align_of::<T>()) {
            // SAFETY: `raw` is the allocation just made, used by nothing.
            let freed = unsafe { self.api().free_host(raw) };
            // Reported, not lost (the allocation is leaked if it cannot be freed).
            report_drop_error("HostBuffer (a misaligned allocation)", freed);
            return Err(Error::InvalidArgument(
                "aclrtMallocHost returned misaligned memory",
            ));
        }
        // SAFETY: `raw` is valid for `bytes` writable bytes; zero is a valid `T` (`Pod`).
        unsafe { std::ptr::write_bytes(raw.cast::<u8>(), 0, bytes) };
        self.adopt();
        Ok(HostBuffer {
            ptr,
            len,
            ctx: self,
            _elem: PhantomData,
        })
    }

    pub(crate) fn check_device(&self, device: Option<i32>) -> Result<()> {
        match device {
            Some(found) if found != self.device_id() => Err(Error::DeviceMismatch {
                what: "a buffer",
                expected: self.device_id(),
                found,
            }),
            _ => Ok(()),
        }
    }

    /// Synchronous `aclrtMemcpy` from `src` to `dst` (M1): the kind comes from the types,
    /// `destMax` from `dst`, `count` from `src`; `src` longer than `dst` is
    /// [`Error::InvalidArgument`].
    pub fn copy<T, D, S>(&self, dst: &mut D, src: &S) -> Result<()>
    where
        T: Pod,
        D: MemoryMut<T> + ?Sized,
        S: Memory<T> + ?Sized,
    {
        let (dest_max, count) = copy_sizes::<T>(dst.len(), src.len())?;
        self.check_device(dst.device_id())?;
        self.check_device(src.device_id())?;
        self.bind()?;
        if count == 0 {
            // Nothing to copy; an empty view may point one past its buffer.
            return Ok(());
        }
        let kind = memcpy_kind(S::LOCATION, D::LOCATION);
        // SAFETY: `dst` is exclusively borrowed and valid for `dest_max` bytes, `src` for
        // `count <= dest_max` bytes, at the locations the kind names (M1); the call is
        // synchronous, so the borrows outlive the copy.
        Ok(unsafe {
            self.api()
                .memcpy(dst.as_mut_ptr(), dest_max, src.as_ptr(), count, kind)
        }?)
    }

    /// Synchronous `aclrtMemset` of every byte of a device buffer to `value`.
    pub fn memset<T: Pod>(&self, dst: &mut DeviceBuffer<'_, T>, value: u8) -> Result<()> {
        self.check_device(Some(dst.ctx.device_id()))?;
        self.bind()?;
        let bytes = dst.byte_len();
        // SAFETY: `dst` is exclusively borrowed device memory of `bytes` bytes.
        Ok(unsafe {
            self.api()
                .memset(dst.ptr.as_ptr(), bytes, i32::from(value), bytes)
        }?)
    }
}

impl<'ctx, T: Pod> DeviceBuffer<'ctx, T> {
    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no elements (never: allocation requires at least one).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The size in bytes.
    pub fn byte_len(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// The raw device pointer, for calls this crate does not wrap.
    pub fn as_raw(&self) -> *mut c_void {
        self.ptr.as_ptr()
    }

    /// The context the buffer was allocated in.
    pub(crate) fn context(&self) -> &'ctx Context<'ctx> {
        self.ctx
    }

    /// The buffer's contents read in place by the host, in device run mode only (on the
    /// board, where host and device memory are one: how the official samples read model
    /// outputs there). Elsewhere [`Error::NotInDeviceRunMode`]: copy it instead.
    ///
    /// A shared borrow proves no task writes the buffer: the typed API's asynchronous
    /// writes borrow it mutably until they are proven done (M2).
    pub fn host_view(&self) -> Result<&[T]> {
        self.ctx.bind()?;
        if self.ctx.api().get_run_mode()? != crate::sys::bindings::ACL_DEVICE {
            return Err(Error::NotInDeviceRunMode);
        }
        if !(self.ptr.as_ptr() as usize).is_multiple_of(std::mem::align_of::<T>()) {
            return Err(Error::InvalidArgument(
                "device memory misaligned for the element type",
            ));
        }
        // SAFETY: in device run mode the host addresses device memory directly; the
        // allocation holds `len` initialised (zeroed at allocation, `Pod`) elements, aligned
        // (checked); the shared borrow keeps it allocated, and no task of the typed API
        // writes it meanwhile (M2: writes borrow it mutably).
        Ok(unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().cast::<T>(), self.len) })
    }

    /// A read-only view of `range` (in elements); `None` when out of bounds.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Option<DeviceSlice<'_, T>> {
        let (start, end) = bounds(range, self.len)?;
        Some(DeviceSlice {
            // SAFETY: `start <= len`, so the offset stays inside the allocation.
            ptr: unsafe { self.ptr.as_ptr().cast::<T>().add(start) }.cast(),
            len: end - start,
            device: self.ctx.device_id(),
            _borrow: PhantomData,
        })
    }

    /// A writable view of `range` (in elements); `None` when out of bounds.
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Option<DeviceSliceMut<'_, T>> {
        let (start, end) = bounds(range, self.len)?;
        Some(DeviceSliceMut {
            // SAFETY: `start <= len`, so the offset stays inside the allocation.
            ptr: unsafe { self.ptr.as_ptr().cast::<T>().add(start) }.cast(),
            len: end - start,
            device: self.ctx.device_id(),
            _borrow: PhantomData,
        })
    }
}

// How a buffer ends (M2): its only free, by `free` or by `Drop` as a fallback.
buffer_end!(
    DeviceBuffer,
    free,
    "`aclrtFree` (M2). On failure the buffer is given back."
);

fn bounds(range: impl RangeBounds<usize>, len: usize) -> Option<(usize, usize)> {
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.checked_add(1)?,
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1)?,
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    (start <= end && end <= len).then_some((start, end))
}

/// A read-only view of part of a [`DeviceBuffer`].
#[derive(Clone, Copy)]
pub struct DeviceSlice<'a, T: Pod> {
    ptr: *const c_void,
    len: usize,
    device: i32,
    _borrow: PhantomData<&'a [T]>,
}

/// A writable view of part of a [`DeviceBuffer`].
pub struct DeviceSliceMut<'a, T: Pod> {
    ptr: *mut c_void,
    len: usize,
    device: i32,
    _borrow: PhantomData<&'a mut [T]>,
}

// SAFETY: views of device memory, with the borrow rules of `&[T]` / `&mut [T]`.
unsafe impl<T: Pod> Send for DeviceSlice<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Pod> Sync for DeviceSlice<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Pod> Send for DeviceSliceMut<'_, T> {}
// SAFETY: as above; `&DeviceSliceMut` only allows reading copies.
unsafe impl<T: Pod> Sync for DeviceSliceMut<'_, T> {}

/// The view's address, length and device: never what it points to (device memory).
impl<T: Pod> std::fmt::Debug for DeviceSlice<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceSlice")
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .field("device", &self.device)
            .finish()
    }
}

/// As for [`DeviceSlice`]: the address, length and device only.
impl<T: Pod> std::fmt::Debug for DeviceSliceMut<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceSliceMut")
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .field("device", &self.device)
            .finish()
    }
}

macro_rules! device_memory {
    ($ty:ident<$($lt:lifetime),*>, $ptr:expr, $device:expr) => {
        impl<$($lt,)* T: Pod> sealed::Sealed for $ty<$($lt,)* T> {}
        // Contract (sealed trait): the pointer is device memory valid for `len` elements for as long as the
        // value (and the buffer it borrows) lives.
        impl<$($lt,)* T: Pod> Memory<T> for $ty<$($lt,)* T> {
            const LOCATION: Location = Location::Device;
            fn as_ptr(&self) -> *const c_void {
                let f: fn(&Self) -> *const c_void = $ptr;
                f(self)
            }
            fn len(&self) -> usize {
                self.len
            }
            fn device_id(&self) -> Option<i32> {
                let f: fn(&Self) -> i32 = $device;
                Some(f(self))
            }
        }
    };
}

device_memory!(DeviceBuffer<'ctx>, |b| b.ptr.as_ptr().cast_const(), |b| b
    .ctx
    .device_id());
device_memory!(DeviceSlice<'a>, |s| s.ptr, |s| s.device);
device_memory!(DeviceSliceMut<'a>, |s| s.ptr.cast_const(), |s| s.device);

// Contract (sealed trait): exclusively borrowed device memory may be written for its length.
impl<T: Pod> MemoryMut<T> for DeviceBuffer<'_, T> {
    type Written<'scope> = PendingDevice<'scope, T>;
    fn written(pending: Pending<'_, T>, _: sealed::Token) -> PendingDevice<'_, T> {
        PendingDevice(pending)
    }
    fn as_mut_ptr(&mut self) -> *mut c_void {
        self.ptr.as_ptr()
    }
}
// Contract (sealed trait): as above; the view holds the buffer's exclusive borrow.
impl<T: Pod> MemoryMut<T> for DeviceSliceMut<'_, T> {
    type Written<'scope> = PendingDevice<'scope, T>;
    fn written(pending: Pending<'_, T>, _: sealed::Token) -> PendingDevice<'_, T> {
        PendingDevice(pending)
    }
    fn as_mut_ptr(&mut self) -> *mut c_void {
        self.ptr
    }
}

/// Page-locked host memory from `aclrtMallocHost`, zeroed at allocation; dereferences to
/// `[T]`.
///
/// Like [`DeviceBuffer`], freeing takes `self`, so it cannot happen while a scope's pending
/// copy borrows it (M2).
pub struct HostBuffer<'ctx, T: Pod> {
    ptr: NonNull<c_void>,
    len: usize,
    ctx: &'ctx Context<'ctx>,
    _elem: PhantomData<T>,
}

// SAFETY: ordinary memory, owned like a `Box<[T]>`.
unsafe impl<T: Pod + Send> Send for HostBuffer<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Pod + Sync> Sync for HostBuffer<'_, T> {}

impl<T: Pod> Deref for HostBuffer<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: the allocation holds `len` initialised (zeroed, then only written as `T`)
        // elements, is aligned for `T` (checked at allocation), and is borrowed with `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().cast::<T>(), self.len) }
    }
}

impl<T: Pod> DerefMut for HostBuffer<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as `deref`, with the exclusive borrow of `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().cast::<T>(), self.len) }
    }
}

impl<T: Pod> sealed::Sealed for HostBuffer<'_, T> {}
// Contract (sealed trait): host memory valid for `len` elements while borrowed.
impl<T: Pod> Memory<T> for HostBuffer<'_, T> {
    const LOCATION: Location = Location::Host;
    fn as_ptr(&self) -> *const c_void {
        self.ptr.as_ptr().cast_const()
    }
    fn len(&self) -> usize {
        self.len
    }
    fn device_id(&self) -> Option<i32> {
        None
    }
}
// Contract (sealed trait): exclusively borrowed host memory; `T: Pod` accepts any bytes.
impl<T: Pod> MemoryMut<T> for HostBuffer<'_, T> {
    type Written<'scope> = PendingHost<'scope, T>;
    fn written(pending: Pending<'_, T>, _: sealed::Token) -> PendingHost<'_, T> {
        PendingHost(pending)
    }
    fn as_mut_ptr(&mut self) -> *mut c_void {
        self.ptr.as_ptr()
    }
}

buffer_end!(
    HostBuffer,
    free_host,
    "`aclrtFreeHost` (M2). On failure the buffer is given back."
);
