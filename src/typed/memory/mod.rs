//! Device and host memory, and copies that cannot outlive their buffers (M1, M2).

use std::cell::Cell;
use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::{ManuallyDrop, size_of};
use std::ops::{Bound, Deref, DerefMut, RangeBounds};
use std::ptr::{self, NonNull};

use bytemuck::Pod;

use crate::sys::bindings::aclrtStream;
use crate::sys::bindings::{
    ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEM_MALLOC_HUGE_ONLY, ACL_MEM_MALLOC_NORMAL_ONLY,
    ACL_MEMCPY_DEVICE_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST, ACL_MEMCPY_HOST_TO_DEVICE,
    ACL_MEMCPY_HOST_TO_HOST, aclrtMemMallocPolicy, aclrtMemcpyKind,
};
use crate::typed::context::Context;
use crate::typed::error::{Error, Result};
use crate::typed::handle::{Failed, release_on_drop, report_drop_error};
use crate::typed::stream::Stream;

mod buffer;
mod scope;

pub use buffer::{DeviceBuffer, DeviceSlice, DeviceSliceMut, HostBuffer};
pub(crate) use scope::Written;
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

pub(crate) mod sealed {
    pub trait Sealed {}
    /// Only this crate can make one, so only this crate can call the trait methods that
    /// take it (a `Pending` of the wrong location could otherwise be wrapped as the other).
    #[derive(Debug)]
    pub struct Token;
}

/// Memory a copy can read: `T` elements at a [`Location`]. Sealed: implemented only in this
/// crate, whose copies rely on its contract: `as_ptr` is valid for reads of
/// `len() * size_of::<T>()` bytes at `LOCATION` for as long as the value is borrowed, and
/// that product is at most `isize::MAX` (it is the size of an allocation), so computing it
/// cannot overflow.
pub trait Memory<T: Pod>: sealed::Sealed {
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

/// Memory a copy can write. Sealed, with the contract of [`Memory`], for writes, through an
/// exclusive borrow.
pub trait MemoryMut<T: Pod>: Memory<T> {
    /// What an asynchronous copy into this memory returns: a source for later copies of the
    /// same scope, of the same location ([`PendingHost`] or [`PendingDevice`]), so that
    /// their kind is known at compile time too.
    type Written<'scope>: Source<'scope, T> + Into<Pending<'scope, T>>;
    /// The first byte, for writing.
    fn as_mut_ptr(&mut self) -> *mut c_void;
    /// Wraps the result of a task writing this memory (crate-internal: the token that the
    /// call needs can only be made by this crate, so a `Pending` of one location can never
    /// be passed off as the other).
    fn written(pending: Pending<'_, T>, _: sealed::Token) -> Self::Written<'_>;
}

impl<T: Pod> sealed::Sealed for [T] {}
// Contract (sealed trait): a slice is valid for its length, and borrowed host memory is host memory.
impl<T: Pod> Memory<T> for [T] {
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
// Contract (sealed trait): an exclusively borrowed slice may be written for its length; `T: Pod` accepts any
// bytes.
impl<T: Pod> MemoryMut<T> for [T] {
    type Written<'scope> = PendingHost<'scope, T>;
    fn written(pending: Pending<'_, T>, _: sealed::Token) -> PendingHost<'_, T> {
        PendingHost(pending)
    }
    fn as_mut_ptr(&mut self) -> *mut c_void {
        <[T]>::as_mut_ptr(self).cast()
    }
}

impl<T: Pod> sealed::Sealed for Vec<T> {}
// Contract (sealed trait): as for the slice it holds.
impl<T: Pod> Memory<T> for Vec<T> {
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
// Contract (sealed trait): as for the slice it holds (the length does not change).
impl<T: Pod> MemoryMut<T> for Vec<T> {
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
