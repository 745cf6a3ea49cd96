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

mod buffer;
mod scope;

pub use buffer::{DeviceBuffer, DeviceSlice, DeviceSliceMut, HostBuffer};
pub use scope::{AsyncScope, Pending, PendingDevice, PendingHost, Source};

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
