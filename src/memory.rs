//! Device and host memory, and copies that cannot outlive their buffers (M1, M2).
//!
//! * [`DeviceBuffer`]: `aclrtMalloc` / `aclrtFree`, with the [`MallocPolicy`] as a typed
//!   choice. Device memory cannot be read or written from the host except by a copy.
//! * [`HostBuffer`]: page-locked host memory, `aclrtMallocHost` / `aclrtFreeHost`; it
//!   dereferences to a slice.
//! * Ordinary Rust slices (`[T]`) are host memory too.
//!
//! Element types are [`bytemuck::Pod`]: a copy writes raw bytes into them.
//!
//! # Kinds and counts (M1)
//!
//! The `aclrtMemcpyKind` is derived from the buffer types at compile time ([`Location`] of
//! source and destination), so a wrong kind cannot be written. `destMax` is always the
//! destination's size and `count` the source's; a source larger than its destination is a
//! typed [`Error::InvalidArgument`] before any call (take a [`DeviceBuffer::slice`] or a
//! sub-slice to copy part of a buffer).
//!
//! # Asynchronous copies (M1, M2)
//!
//! `aclrtMemcpyAsync` returns before the copy runs. Asynchronous copies and memsets exist
//! only inside [`Context::async_scope`], which borrows every buffer it is given for the whole
//! scope and synchronises every stream it used before it returns, on every path, panics
//! included (like [`std::thread::scope`] joins its threads). So, at compile time:
//! reading the destination or writing/dropping the source while the copy is pending does not
//! compile, and neither does freeing device memory a pending task uses. No guard value is
//! involved: leaking one (`mem::forget`) cannot end the borrow early.
//!
//! A copy returns its destination as a [`PendingDevice`] or [`PendingHost`] source, so later
//! copies and kernels of the same scope can consume it with a compile-time kind; when they
//! run on another stream than the copy, the library orders them after it with an event join
//! (E2, E3), so a two-stream pipeline never reads stale data.
//!
//! ```no_run
//! # use ascend_typestate::{Acl, memory::MallocPolicy};
//! # let acl = Acl::init()?;
//! # let device = acl.set_device(0)?;
//! let ctx = device.create_context()?;
//! let stream = ctx.create_stream()?;
//! let input = vec![1.0f32; 1024];
//! let mut output = vec![0.0f32; 1024];
//! let mut on_device = ctx.alloc::<f32>(1024, MallocPolicy::HugeFirst)?;
//! ctx.async_scope(|scope| {
//!     scope.copy(&stream, &mut on_device, &input)?;      // H2D, derived from the types
//!     Ok(())
//! })?;                                                    // synchronised here (M1)
//! ctx.copy(&mut output[..], &on_device)?;                 // D2H, synchronous
//! assert_eq!(input, output);
//! # Ok::<(), ascend_typestate::Error>(())
//! ```

use std::cell::Cell;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::{ManuallyDrop, size_of};
use std::ops::{Bound, Deref, DerefMut, RangeBounds};
use std::ptr::{self, NonNull};

use std::io::Write as _;

use bytemuck::Pod;

use crate::context::Context;
use crate::error::{Error, Result};
use crate::runtime::{Failed, release_on_drop, report_drop_error};
use crate::stream::Stream;
use crate::sys::aclrtStream;
use crate::sys::bindings::{
    ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEM_MALLOC_HUGE_ONLY, ACL_MEM_MALLOC_NORMAL_ONLY,
    ACL_MEMCPY_DEVICE_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST, ACL_MEMCPY_HOST_TO_DEVICE,
    ACL_MEMCPY_HOST_TO_HOST, aclrtMemMallocPolicy, aclrtMemcpyKind,
};

/// How `aclrtMalloc` chooses pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum MallocPolicy {
    /// Huge pages if available, else normal pages (`ACL_MEM_MALLOC_HUGE_FIRST`).
    #[default]
    HugeFirst,
    /// Huge pages only (`ACL_MEM_MALLOC_HUGE_ONLY`).
    HugeOnly,
    /// Normal pages only (`ACL_MEM_MALLOC_NORMAL_ONLY`).
    NormalOnly,
}

impl MallocPolicy {
    fn raw(self) -> aclrtMemMallocPolicy {
        match self {
            MallocPolicy::HugeFirst => ACL_MEM_MALLOC_HUGE_FIRST,
            MallocPolicy::HugeOnly => ACL_MEM_MALLOC_HUGE_ONLY,
            MallocPolicy::NormalOnly => ACL_MEM_MALLOC_NORMAL_ONLY,
        }
    }
}

/// Where a buffer lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// Host memory: a Rust slice or a [`HostBuffer`].
    Host,
    /// Device memory: a [`DeviceBuffer`] or a view of one.
    Device,
}

/// The copy kind for a source and a destination location (M1).
pub const fn memcpy_kind(src: Location, dst: Location) -> aclrtMemcpyKind {
    match (src, dst) {
        (Location::Host, Location::Host) => ACL_MEMCPY_HOST_TO_HOST,
        (Location::Host, Location::Device) => ACL_MEMCPY_HOST_TO_DEVICE,
        (Location::Device, Location::Host) => ACL_MEMCPY_DEVICE_TO_HOST,
        (Location::Device, Location::Device) => ACL_MEMCPY_DEVICE_TO_DEVICE,
    }
}

mod sealed {
    pub trait Sealed {}
    /// Only this crate can make one, so only this crate can call the trait methods that
    /// take it (a `Pending` of the wrong location could otherwise be wrapped as the other).
    pub struct Token;
}

/// Memory a copy can read: `T` elements at a [`Location`]. Sealed.
///
/// # Safety
/// Implemented only in this crate (sealed): `as_ptr` is valid for reads of
/// `len() * size_of::<T>()` bytes at `LOCATION` for as long as the value is borrowed, and
/// that product is at most `isize::MAX` (it is the size of an allocation), so computing it
/// cannot overflow.
pub unsafe trait Memory<T: Pod>: sealed::Sealed {
    /// Where the memory lives; decides the copy kind at compile time.
    const LOCATION: Location;
    /// The first byte.
    fn as_ptr(&self) -> *const c_void;
    /// The number of elements.
    fn len(&self) -> usize;
    /// Whether there are no elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The device the memory belongs to (`None` for host memory).
    fn device_id(&self) -> Option<i32>;
}

/// Memory a copy can write. Sealed.
///
/// # Safety
/// Implemented only in this crate (sealed): as [`Memory`], for writes, through an exclusive borrow.
pub unsafe trait MemoryMut<T: Pod>: Memory<T> {
    /// What an asynchronous copy into this memory returns: a source for later copies of the
    /// same scope, of the same location ([`PendingHost`] or [`PendingDevice`]), so that
    /// their kind is known at compile time too.
    type Written<'scope>: Source<'scope, T> + Into<Pending<'scope, T>>;
    /// The first byte, for writing.
    fn as_mut_ptr(&mut self) -> *mut c_void;
    #[doc(hidden)]
    fn written(pending: Pending<'_, T>, _: sealed::Token) -> Self::Written<'_>;
}

impl<T: Pod> sealed::Sealed for [T] {}
// SAFETY: a slice is valid for its length, and borrowed host memory is host memory.
unsafe impl<T: Pod> Memory<T> for [T] {
    const LOCATION: Location = Location::Host;
    fn as_ptr(&self) -> *const c_void {
        <[T]>::as_ptr(self).cast()
    }
    fn len(&self) -> usize {
        <[T]>::len(self)
    }
    fn device_id(&self) -> Option<i32> {
        None
    }
}
// SAFETY: an exclusively borrowed slice may be written for its length; `T: Pod` accepts any
// bytes.
unsafe impl<T: Pod> MemoryMut<T> for [T] {
    type Written<'scope> = PendingHost<'scope, T>;
    fn written(pending: Pending<'_, T>, _: sealed::Token) -> PendingHost<'_, T> {
        PendingHost(pending)
    }
    fn as_mut_ptr(&mut self) -> *mut c_void {
        <[T]>::as_mut_ptr(self).cast()
    }
}

impl<T: Pod> sealed::Sealed for Vec<T> {}
// SAFETY: as for the slice it holds.
unsafe impl<T: Pod> Memory<T> for Vec<T> {
    const LOCATION: Location = Location::Host;
    fn as_ptr(&self) -> *const c_void {
        self.as_slice().as_ptr().cast()
    }
    fn len(&self) -> usize {
        Vec::len(self)
    }
    fn device_id(&self) -> Option<i32> {
        None
    }
}
// SAFETY: as for the slice it holds (the length does not change).
unsafe impl<T: Pod> MemoryMut<T> for Vec<T> {
    type Written<'scope> = PendingHost<'scope, T>;
    fn written(pending: Pending<'_, T>, _: sealed::Token) -> PendingHost<'_, T> {
        PendingHost(pending)
    }
    fn as_mut_ptr(&mut self) -> *mut c_void {
        self.as_mut_slice().as_mut_ptr().cast()
    }
}

#[inline(always)]
fn byte_len<T>(len: usize) -> Result<usize> {
    // A `match`, not `ok_or(Error::..)`: that builds (and drops) an `Error` on every call.
    // At most `isize::MAX`, like any Rust allocation: slices over the memory are then valid,
    // and sizes computed from an allocated length cannot overflow.
    match len.checked_mul(size_of::<T>()) {
        Some(bytes) if bytes <= isize::MAX as usize => Ok(bytes),
        _ => Err(size_overflow()),
    }
}

#[cold]
#[inline(never)]
fn size_overflow() -> Error {
    Error::InvalidArgument("buffer size above isize::MAX bytes")
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
/// Freeing takes `self`, so it does not compile while an [`AsyncScope`] borrows the buffer
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

    fn check_device(&self, device: Option<i32>) -> Result<()> {
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
        unsafe {
            self.api()
                .memcpy(dst.as_mut_ptr(), dest_max, src.as_ptr(), count, kind)
        }
    }

    /// Synchronous `aclrtMemset` of every byte of a device buffer to `value`.
    pub fn memset<T: Pod>(&self, dst: &mut DeviceBuffer<'_, T>, value: u8) -> Result<()> {
        self.check_device(Some(dst.ctx.device_id()))?;
        self.bind()?;
        let bytes = dst.byte_len();
        // SAFETY: `dst` is exclusively borrowed device memory of `bytes` bytes.
        unsafe {
            self.api()
                .memset(dst.ptr.as_ptr(), bytes, i32::from(value), bytes)
        }
    }

    /// The asynchronous scope (M1, M2): `body` issues copies and memsets on streams of this
    /// context; every buffer it is given stays borrowed until the scope returns, and the
    /// scope synchronises every stream it used before returning, whether `body` returned
    /// `Ok`, `Err` or panicked.
    ///
    /// Errors: the body's, if it returned one (a synchronisation error after it, rarer and
    /// usually its consequence, goes to the [drop-error handler](crate::set_drop_error_handler):
    /// never lost); else the first synchronisation error (an asynchronous task failed, P3).
    ///
    /// If a stream cannot be synchronised (after its asynchronous error, the runtime still
    /// fails nine synchronisations in a row, so its tasks may still be running), the process
    /// aborts rather than release memory a copy may still write: that is the one failure
    /// soundness cannot recover from.
    #[inline(always)]
    pub fn async_scope<'env, F, R>(&'env self, body: F) -> Result<R>
    where
        F: for<'scope> FnOnce(&'scope AsyncScope<'scope, 'env>) -> Result<R>,
    {
        // C8 needs no check here: inside a callback or a simulated kernel every stream's
        // binding fails (`Error::InsideCallback`) before the scope remembers it, so such a
        // scope issues nothing and has nothing to synchronise.
        let scope = AsyncScope {
            ctx: self,
            first: Cell::new(None),
            more: ManuallyDrop::new(Cell::new(None)),
            _scope: PhantomData,
            _env: PhantomData,
        };
        // As `std::thread::scope` joins: if `body` panics, the guard synchronises while the
        // panic unwinds, so the borrows never end before the tasks that use them (M1).
        let guard = SynchronizeOnUnwind(&scope);
        let outcome = body(&scope);
        std::mem::forget(guard);
        let value = match outcome {
            Ok(value) => value,
            // The body's own error comes first; the synchronisation's is reported.
            Err(error) => return Err(scope.end_after_error(error)),
        };
        if let Some(more) = scope.more.take() {
            synchronize_streams(scope.first.get(), more)?;
        } else if let Some(stream) = scope.first.get() {
            synchronize_used(self, stream)?;
        }
        Ok(value)
    }
}

/// Synchronises `first` and `more`, each until the runtime reports success (M1); returns
/// the first error.
#[cold]
#[inline(never)]
fn synchronize_streams(first: Option<&Stream<'_>>, more: Vec<&Stream<'_>>) -> Result<()> {
    let mut outcome = Ok(());
    for stream in first.into_iter().chain(more) {
        if let Err(error) = synchronize_used(stream.context(), stream) {
            if outcome.is_ok() {
                outcome = Err(error);
            } else {
                // Only one error can be returned: the others are reported, not lost.
                report_drop_error("async scope (a further stream's error)", Err(error));
            }
        }
    }
    outcome
}

/// Synchronises one stream an async scope used (M1), of the scope's context `ctx`. It binds
/// that again: the body may have made another one current on this thread (D6).
#[inline(always)]
fn synchronize_used(ctx: &Context<'_>, stream: &Stream<'_>) -> Result<()> {
    match stream.synchronize_in(ctx) {
        Ok(()) => Ok(()),
        Err(error) => Err(second_chance(stream, error)),
    }
}

/// A failed synchronisation: an asynchronous task's error is reported once, so a second
/// failure means the stream did not finish, and its buffers cannot be released (M1).
/// Returns the first error once the stream is done.
#[cold]
#[inline(never)]
fn second_chance(stream: &Stream<'_>, error: Error) -> Error {
    // An asynchronous task's error is reported once; a failing synchronisation call (a
    // transient runtime failure) is tried a few more times before giving up.
    let mut outcome = stream.synchronize();
    for _ in 0..SYNCHRONIZE_TRIES {
        if outcome.is_ok() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
        outcome = stream.synchronize();
    }
    if let Err(again) = outcome {
        report_drop_error(
            "async scope (a stream that cannot be synchronised)",
            Err(again),
        );
        // `writeln!` to stderr, not `eprintln!`, which panics when stderr is closed: a
        // panic here would release the buffers (M1).
        let _ = writeln!(
            std::io::stderr(),
            "ascend-typestate: stream {:?} cannot be synchronised ({error}); \
             aborting rather than release buffers a pending copy may use (M1)",
            stream.as_raw()
        );
        std::process::abort();
    }
    error
}

/// How many more times a scope tries to synchronise a stream whose synchronisation failed
/// twice before it aborts (M1).
const SYNCHRONIZE_TRIES: usize = 8;

/// Synchronises a scope's streams while a panic of its body unwinds (M1).
struct SynchronizeOnUnwind<'a, 'scope, 'env>(&'a AsyncScope<'scope, 'env>);

impl Drop for SynchronizeOnUnwind<'_, '_, '_> {
    fn drop(&mut self) {
        // Only reached while unwinding (`async_scope` forgets the guard otherwise). A stream
        // that cannot be synchronised aborts inside; a reported error is not lost.
        report_drop_error(
            "async scope (synchronize on panic)",
            self.0.synchronize_all(),
        );
    }
}

/// A [`Pending`] result of a scope of another context, read in this one (D6): no join can
/// order the read after its write across contexts.
#[cold]
#[inline(never)]
fn written_elsewhere(writer: &Context<'_>, ctx: &Context<'_>) -> Error {
    if writer.device_id() != ctx.device_id() {
        Error::DeviceMismatch {
            what: "a pending result (written by a scope of another device)",
            expected: ctx.device_id(),
            found: writer.device_id(),
        }
    } else {
        Error::ContextMismatch {
            what: "a pending result (written by a scope of another context)",
        }
    }
}

#[cold]
#[inline(never)]
fn stream_of_other_context() -> Error {
    Error::ContextMismatch {
        what: "the stream of an async scope",
    }
}

fn copy_sizes<T>(dst_len: usize, src_len: usize) -> Result<(usize, usize)> {
    if src_len > dst_len {
        return Err(Error::InvalidArgument(
            "the source is longer than the destination (count > destMax, M1)",
        ));
    }
    Ok((byte_len::<T>(dst_len)?, byte_len::<T>(src_len)?))
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

    fn release(&self) -> Result<()> {
        self.ctx.bind()?;
        // SAFETY: the pointer came from `aclrtMalloc`; no task uses it (async tasks exist
        // only inside a scope, which borrows the buffer and synchronises before it ends, M2);
        // the value is consumed or being dropped, so this is the only free.
        unsafe { self.ctx.api().free(self.ptr.as_ptr())? };
        self.ctx.orphan();
        Ok(())
    }

    /// `aclrtFree` (M2). On failure the buffer is given back.
    pub fn free(self) -> Result<(), Failed<DeviceBuffer<'ctx, T>>> {
        Failed::release_or_give_back(self, Self::release)
    }
}

impl<T: Pod> Drop for DeviceBuffer<'_, T> {
    fn drop(&mut self) {
        release_on_drop("DeviceBuffer", || self.release());
    }
}

impl<T: Pod> std::fmt::Debug for DeviceBuffer<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .finish()
    }
}

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

macro_rules! device_memory {
    ($ty:ident<$($lt:lifetime),*>, $ptr:expr, $device:expr) => {
        impl<$($lt,)* T: Pod> sealed::Sealed for $ty<$($lt,)* T> {}
        // SAFETY: the pointer is device memory valid for `len` elements for as long as the
        // value (and the buffer it borrows) lives.
        unsafe impl<$($lt,)* T: Pod> Memory<T> for $ty<$($lt,)* T> {
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

// SAFETY: exclusively borrowed device memory may be written for its length.
unsafe impl<T: Pod> MemoryMut<T> for DeviceBuffer<'_, T> {
    type Written<'scope> = PendingDevice<'scope, T>;
    fn written(pending: Pending<'_, T>, _: sealed::Token) -> PendingDevice<'_, T> {
        PendingDevice(pending)
    }
    fn as_mut_ptr(&mut self) -> *mut c_void {
        self.ptr.as_ptr()
    }
}
// SAFETY: as above; the view holds the buffer's exclusive borrow.
unsafe impl<T: Pod> MemoryMut<T> for DeviceSliceMut<'_, T> {
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
// SAFETY: host memory valid for `len` elements while borrowed.
unsafe impl<T: Pod> Memory<T> for HostBuffer<'_, T> {
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
// SAFETY: exclusively borrowed host memory; `T: Pod` accepts any bytes.
unsafe impl<T: Pod> MemoryMut<T> for HostBuffer<'_, T> {
    type Written<'scope> = PendingHost<'scope, T>;
    fn written(pending: Pending<'_, T>, _: sealed::Token) -> PendingHost<'_, T> {
        PendingHost(pending)
    }
    fn as_mut_ptr(&mut self) -> *mut c_void {
        self.ptr.as_ptr()
    }
}

impl<'ctx, T: Pod> HostBuffer<'ctx, T> {
    fn release(&self) -> Result<()> {
        self.ctx.bind()?;
        // SAFETY: from `aclrtMallocHost`, used by no pending task (M2, as for device
        // buffers), freed once.
        unsafe { self.ctx.api().free_host(self.ptr.as_ptr())? };
        self.ctx.orphan();
        Ok(())
    }

    /// `aclrtFreeHost` (M2). On failure the buffer is given back.
    pub fn free(self) -> Result<(), Failed<HostBuffer<'ctx, T>>> {
        Failed::release_or_give_back(self, Self::release)
    }
}

impl<T: Pod> Drop for HostBuffer<'_, T> {
    fn drop(&mut self) {
        release_on_drop("HostBuffer", || self.release());
    }
}

impl<T: Pod> std::fmt::Debug for HostBuffer<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostBuffer")
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .finish()
    }
}

/// A synthetic kernel's work: `output[i] = f(input[i])`.
struct MapJob<T> {
    input: *const T,
    output: *mut T,
    len: usize,
    f: fn(T) -> T,
}

/// The simulator calls this once, on the stream's worker, when the stream reaches the task.
unsafe extern "C" fn run_map<T: Pod>(user_data: *mut c_void, _b: *const *mut c_void, _n: usize) {
    // SAFETY: `user_data` is the `MapJob<T>` boxed by `simulated_map`, run once.
    let job = unsafe { Box::from_raw(user_data.cast::<MapJob<T>>()) };
    // The function runs on the runtime's own thread, like a callback: C8 for every entry
    // point of the crate it might reach through a `static`.
    let previous = crate::context::enter_callback();
    let run = || {
        for i in 0..job.len {
            // SAFETY: both ranges are device memory of at least `len` elements, borrowed by
            // the scope until the stream is synchronised; unaligned access keeps any `Pod`
            // valid.
            unsafe {
                let value = job.input.add(i).read_unaligned();
                job.output.add(i).write_unaligned((job.f)(value));
            }
        }
    };
    // Never unwind into the simulator's C ABI.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run));
    if let Err(panic) = outcome {
        let first = crate::callback::panic_message(panic.as_ref());
        // Not dropped: a payload whose own `Drop` panics would unwind into C (abort).
        std::mem::forget(panic);
        // Reported, never lost (the output is then partly written); still marked as a
        // callback, so that the handler cannot reach the runtime from this thread (C8).
        report_drop_error(
            "a simulated kernel's function (it panicked; its output is incomplete)",
            Err(Error::CallbackPanicked { count: 1, first }),
        );
    }
    crate::context::leave_callback(previous);
}

/// What an asynchronous copy may read: a buffer borrowed for the whole scope (`&'scope S`),
/// or the [`Pending`] result of an earlier copy of the same scope. Sealed: every
/// implementation describes a [`Memory`], whose guarantees it carries over.
pub trait Source<'scope, T: Pod>: sealed::Sealed {
    /// Where the memory lives.
    const LOCATION: Location;
    /// The first byte.
    fn as_ptr(&self) -> *const c_void;
    /// The number of elements.
    fn len(&self) -> usize;
    /// Whether there are no elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The device the memory belongs to (`None` for host memory).
    fn device_id(&self) -> Option<i32>;
    /// The stream whose pending task writes this memory (a [`Pending`] result), if any, and
    /// its context.
    fn writer(&self) -> Option<(aclrtStream, &'scope Context<'scope>)> {
        None
    }
}

impl<S: ?Sized + sealed::Sealed> sealed::Sealed for &S {}
impl<'scope, T: Pod, S: Memory<T> + ?Sized> Source<'scope, T> for &'scope S {
    const LOCATION: Location = S::LOCATION;
    fn as_ptr(&self) -> *const c_void {
        S::as_ptr(self)
    }
    fn len(&self) -> usize {
        S::len(self)
    }
    fn device_id(&self) -> Option<i32> {
        S::device_id(self)
    }
}

/// The destination of an asynchronous copy, usable only as the source of later copies in
/// the same scope: it gives no access from the host (the copy may still be running), and
/// its borrow ends with the scope. `Copy`, so several later copies may read it.
#[derive(Clone, Copy, Debug)]
pub struct Pending<'scope, T: Pod> {
    ptr: *const c_void,
    len: usize,
    location: Location,
    device: Option<i32>,
    /// The stream of the task that writes it.
    writer: aclrtStream,
    /// That stream's context: a read in another context could not be ordered after the
    /// write (D6).
    writer_ctx: &'scope Context<'scope>,
    _borrow: PhantomData<&'scope [T]>,
}

impl<T: Pod> sealed::Sealed for Pending<'_, T> {}
impl<'scope, T: Pod> Pending<'scope, T> {
    /// Where the memory lives.
    pub fn location(&self) -> Location {
        self.location
    }
}

/// Pending host memory: the source of a later copy of the same scope (H2D or H2H).
#[derive(Clone, Copy, Debug)]
pub struct PendingHost<'scope, T: Pod>(Pending<'scope, T>);
/// Pending device memory: the source of a later copy (D2H, D2D) or kernel of the same scope.
#[derive(Clone, Copy, Debug)]
pub struct PendingDevice<'scope, T: Pod>(Pending<'scope, T>);

impl<'scope, T: Pod> From<PendingHost<'scope, T>> for Pending<'scope, T> {
    fn from(p: PendingHost<'scope, T>) -> Self {
        p.0
    }
}

impl<'scope, T: Pod> From<PendingDevice<'scope, T>> for Pending<'scope, T> {
    fn from(p: PendingDevice<'scope, T>) -> Self {
        p.0
    }
}

impl<'scope, T: Pod> Pending<'scope, T> {
    /// As a device source; `None` if the copy's destination was host memory.
    pub fn device(self) -> Option<PendingDevice<'scope, T>> {
        (self.location == Location::Device).then_some(PendingDevice(self))
    }
    /// As a host source; `None` if the copy's destination was device memory.
    pub fn host(self) -> Option<PendingHost<'scope, T>> {
        (self.location == Location::Host).then_some(PendingHost(self))
    }
}

macro_rules! pending_source {
    ($ty:ident, $loc:expr) => {
        impl<T: Pod> sealed::Sealed for $ty<'_, T> {}
        impl<'scope, T: Pod> Source<'scope, T> for $ty<'scope, T> {
            const LOCATION: Location = $loc;
            fn as_ptr(&self) -> *const c_void {
                self.0.ptr
            }
            fn len(&self) -> usize {
                self.0.len
            }
            fn device_id(&self) -> Option<i32> {
                self.0.device
            }
            fn writer(&self) -> Option<(aclrtStream, &'scope Context<'scope>)> {
                Some((self.0.writer, self.0.writer_ctx))
            }
        }
    };
}
pending_source!(PendingHost, Location::Host);
pending_source!(PendingDevice, Location::Device);

/// The scope of [`Context::async_scope`]: asynchronous copies and memsets whose buffers stay
/// borrowed (`'scope`) until every stream the scope used has been synchronised (M1, M2).
///
/// `'scope` is invariant, as in [`std::thread::Scope`], so a buffer borrowed for it cannot
/// be released, read (destination) or written (source) before the scope ends.
///
/// Neither `Send` nor `Sync`: it is used by the thread that opened it, which is the thread
/// that synchronises its streams.
pub struct AsyncScope<'scope, 'env: 'scope> {
    ctx: &'env Context<'env>,
    /// The first stream the scope used: the usual case, kept out of the vector so that a
    /// one-stream scope costs a compare, no allocation.
    first: Cell<Option<&'scope Stream<'scope>>>,
    /// Any other streams, each once; created with the second stream, so that the usual
    /// scope neither initialises nor checks nor frees a vector.
    /// (`ManuallyDrop`: taken, and freed, on every way out of the scope: its end, or the
    /// guard's synchronisation while a panic unwinds; no check for it at the usual end.)
    more: ManuallyDrop<Cell<Option<Vec<&'scope Stream<'scope>>>>>,
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

impl<'scope, 'env> AsyncScope<'scope, 'env> {
    /// Orders `stream` after the task that writes `source`, when another stream writes it
    /// (a join event, E2/E3): reading a [`Pending`] result on another stream never races
    /// with the task that produces it. Free on the writing stream itself (S1).
    fn after_writer<T: Pod, S: Source<'scope, T>>(
        &self,
        source: &S,
        stream: &Stream<'_>,
    ) -> Result<()> {
        match source.writer() {
            Some((_, writer_ctx)) if !ptr::addr_eq(writer_ctx, self.ctx) => {
                Err(written_elsewhere(writer_ctx, self.ctx))
            }
            Some((writer, _)) if writer != stream.as_raw() => {
                self.ctx.join_streams(writer, stream.as_raw())
            }
            _ => Ok(()),
        }
    }

    /// Checks that `stream` is of the scope's context, binds it (D6) and remembers it, so
    /// that the scope synchronises it before it ends (M1).
    #[inline(always)]
    fn use_stream(&self, stream: &'scope Stream<'_>) -> Result<()> {
        if !ptr::addr_eq(stream.context(), self.ctx) {
            return Err(stream_of_other_context());
        }
        stream.bind()?;
        self.remember(stream);
        Ok(())
    }

    /// Remembers `stream` (of this scope's context), so that the scope synchronises it.
    #[inline(always)]
    fn remember(&self, stream: &'scope Stream<'_>) {
        match self.first.get() {
            Some(first) if ptr::addr_eq(first, stream) => {}
            None => self.first.set(Some(stream)),
            Some(_) => self.remember_another(stream),
        }
    }

    /// The slow path of [`copy`](Self::copy): which check failed, in the order of the
    /// arguments (sizes, devices, the stream's context), or the binding (D6).
    #[cold]
    #[inline(never)]
    fn check_copy(
        &self,
        stream: &Stream<'_>,
        dst_len: usize,
        src_len: usize,
        dst_device: Option<i32>,
        src_device: Option<i32>,
    ) -> Result<()> {
        if src_len > dst_len {
            return Err(Error::InvalidArgument(
                "the source is longer than the destination (count > destMax, M1)",
            ));
        }
        self.ctx.check_device(dst_device)?;
        self.ctx.check_device(src_device)?;
        if !ptr::addr_eq(stream.context(), self.ctx) {
            return Err(stream_of_other_context());
        }
        stream.bind()
    }

    /// A second, third, ... stream in one scope.
    #[cold]
    #[inline(never)]
    fn remember_another(&self, stream: &'scope Stream<'_>) {
        /// Puts the vector back even if growing it unwinds (an allocation failure under
        /// `-Zoom=panic`), so that the streams remembered so far are still synchronised.
        struct PutBack<'c, 's>(&'c Cell<Option<Vec<&'s Stream<'s>>>>, Vec<&'s Stream<'s>>);
        impl Drop for PutBack<'_, '_> {
            fn drop(&mut self) {
                self.0.set(Some(std::mem::take(&mut self.1)));
            }
        }
        let mut more = PutBack(&self.more, self.more.take().unwrap_or_default());
        if !more.1.iter().any(|s| ptr::addr_eq(*s, stream)) {
            more.1.push(stream);
        }
    }

    /// `aclrtMemcpyAsync` on `stream` (M1): `dst` and `src` stay borrowed until the scope has
    /// synchronised the stream. The kind comes from the types; `src` longer than `dst` is
    /// [`Error::InvalidArgument`].
    ///
    /// Returns the destination as a source ([`PendingDevice`] or [`PendingHost`], from the
    /// destination's type): later copies and kernels of the same scope may read it, while the host still cannot before the scope ends. On the same
    /// stream, stream order suffices (S1); on another stream, the read is ordered after this
    /// copy by a join event (E2, E3), so it never sees stale data.
    #[inline]
    pub fn copy<T, D, S>(
        &'scope self,
        stream: &'scope Stream<'_>,
        dst: &'scope mut D,
        src: S,
    ) -> Result<D::Written<'scope>>
    where
        T: Pod,
        D: MemoryMut<T> + ?Sized,
        S: Source<'scope, T>,
    {
        let (dst_len, src_len) = (dst.len(), src.len());
        let (dst_device, src_device) = (dst.device_id(), src.device_id());
        // Every check in one branch (`&`, not `&&`): the usual scope then inlines into its
        // caller. The cold path finds which check failed, or binds the context (D6).
        let device = self.ctx.device_id();
        let valid = (src_len <= dst_len)
            & dst_device.is_none_or(|d| d == device)
            & src_device.is_none_or(|d| d == device)
            & ptr::addr_eq(stream.context(), self.ctx)
            & stream.is_bound();
        if !valid {
            self.check_copy(stream, dst_len, src_len, dst_device, src_device)?;
        }
        self.remember(stream);
        self.after_writer(&src, stream)?;
        // No overflow: every `Memory` is an allocation of `len * size_of::<T>()` bytes, which
        // is at most `isize::MAX` (Rust allocations, and `alloc`/`alloc_host` check it).
        let (dest_max, count) = (dst_len * size_of::<T>(), src_len * size_of::<T>());
        let kind = memcpy_kind(S::LOCATION, D::LOCATION);
        let dst_ptr = dst.as_mut_ptr();
        let pending = Pending {
            ptr: dst_ptr.cast_const(),
            len: dst.len(),
            location: D::LOCATION,
            device: dst.device_id(),
            writer: stream.as_raw(),
            writer_ctx: self.ctx,
            _borrow: PhantomData,
        };
        let written = D::written(pending, sealed::Token);
        if count == 0 {
            // Nothing to copy; an empty view may point one past its buffer, which the
            // runtime would reject.
            return Ok(written);
        }
        // SAFETY: both buffers are valid for the sizes given at the locations the kind names,
        // and stay borrowed ('scope) until the scope synchronises `stream` (M1).
        unsafe {
            self.ctx.api().memcpy_async(
                dst_ptr,
                dest_max,
                src.as_ptr(),
                count,
                kind,
                stream.as_raw(),
            )?
        };
        Ok(written)
    }

    /// A synthetic kernel, on the simulator only (`aclsimLaunchKernel`): after `duration`,
    /// `output[i] = f(input[i])` for each element of `input`, run by `stream` in order with its
    /// other tasks. Both must be device memory of this context's device; `input` may be the
    /// [`Pending`] result of an earlier copy of the scope. The returned [`Pending`] is
    /// `output`, for later copies.
    ///
    /// `f` is a plain function (it captures nothing), applied element by element to device
    /// memory the way a kernel would: no Rust reference to device memory is ever formed.
    /// It runs on the simulator's thread like a host callback: the crate's calls return
    /// [`Error::InsideCallback`] there (C8). If it panics, the output is left partly written
    /// and the panic goes to the [drop-error handler](crate::set_drop_error_handler) as
    /// [`Error::CallbackPanicked`]. On the vendor runtime this is [`Error::Unsupported`].
    pub fn simulated_map<T, D, S>(
        &'scope self,
        stream: &'scope Stream<'_>,
        duration: std::time::Duration,
        input: S,
        output: &'scope mut D,
        f: fn(T) -> T,
    ) -> Result<PendingDevice<'scope, T>>
    where
        T: Pod,
        D: MemoryMut<T> + ?Sized,
        S: Source<'scope, T>,
    {
        let sim = self.ctx.api().simulator().ok_or(Error::Unsupported {
            symbol: "aclsimLaunchKernel",
        })?;
        if S::LOCATION != Location::Device || D::LOCATION != Location::Device {
            return Err(Error::InvalidArgument(
                "a kernel reads and writes device memory",
            ));
        }
        if input.len() > output.len() {
            return Err(Error::InvalidArgument(
                "the kernel's input is longer than its output",
            ));
        }
        self.ctx.check_device(output.device_id())?;
        self.ctx.check_device(input.device_id())?;
        self.use_stream(stream)?;
        self.after_writer(&input, stream)?;
        let out_ptr = output.as_mut_ptr();
        let job = Box::new(MapJob::<T> {
            input: input.as_ptr().cast(),
            output: out_ptr.cast(),
            len: input.len(),
            f,
        });
        // An empty view may point one past its buffer: name only non-empty buffers.
        let all = [input.as_ptr().cast_mut(), out_ptr];
        let buffers: &[*mut c_void] = if input.is_empty() { &[] } else { &all };
        let user_data = Box::into_raw(job).cast::<c_void>();
        let micros = u64::try_from(duration.as_micros()).unwrap_or(u64::MAX);
        // SAFETY: `stream` is live and its context current; both buffers are device memory
        // borrowed until the scope synchronises `stream`; `run_map::<T>` matches the job's
        // type and frees it on its only run.
        let code = unsafe {
            (sim.aclsimLaunchKernel)(
                stream.as_raw(),
                micros,
                Some(run_map::<T>),
                user_data,
                buffers.as_ptr(),
                buffers.len(),
            )
        };
        if let Err(code) = crate::error::check(code) {
            // SAFETY: not enqueued, so the job is still ours alone.
            drop(unsafe { Box::from_raw(user_data.cast::<MapJob<T>>()) });
            return Err(Error::Runtime {
                call: "aclsimLaunchKernel",
                code,
            });
        }
        Ok(PendingDevice(Pending {
            ptr: out_ptr.cast_const(),
            len: output.len(),
            location: Location::Device,
            device: output.device_id(),
            writer: stream.as_raw(),
            writer_ctx: self.ctx,
            _borrow: PhantomData,
        }))
    }

    /// `aclrtMemsetAsync` on `stream`: every byte of `dst` set to `value`; `dst` stays
    /// borrowed until the scope has synchronised the stream.
    pub fn memset<T, D>(
        &'scope self,
        stream: &'scope Stream<'_>,
        dst: &'scope mut D,
        value: u8,
    ) -> Result<()>
    where
        T: Pod,
        D: MemoryMut<T> + ?Sized,
    {
        if D::LOCATION != Location::Device {
            return Err(Error::InvalidArgument(
                "aclrtMemsetAsync needs device memory",
            ));
        }
        self.ctx.check_device(dst.device_id())?;
        self.use_stream(stream)?;
        let bytes = byte_len::<T>(dst.len())?;
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: `dst` is device memory of `bytes` bytes, borrowed until the scope
        // synchronises `stream`.
        unsafe {
            self.ctx.api().memset_async(
                dst.as_mut_ptr(),
                bytes,
                i32::from(value),
                bytes,
                stream.as_raw(),
            )
        }
    }

    /// Synchronises a stream of the scope now (its pending tasks are then done), e.g. to
    /// read a result before issuing more work. Buffers stay borrowed until the scope ends.
    pub fn synchronize(&self, stream: &Stream<'_>) -> Result<()> {
        stream.synchronize()
    }

    /// Synchronises every stream used, each until the runtime reports success; aborts if a
    /// stream fails twice in a row (its tasks may still run: releasing their buffers would
    /// be unsound, M1). The first error is returned.
    #[inline(always)]
    fn synchronize_all(&self) -> Result<()> {
        let more = self.more.take().unwrap_or_default();
        synchronize_streams(self.first.get(), more)
    }

    /// The end of a scope whose body returned `error`: synchronises its streams all the same
    /// (M1), reports a synchronisation error (the body's comes first), returns `error`.
    #[cold]
    #[inline(never)]
    fn end_after_error(&self, error: Error) -> Error {
        report_drop_error(
            "async scope (synchronize after an error)",
            self.synchronize_all(),
        );
        error
    }
}
