//! The asynchronous scope: copies, memsets and kernels whose buffers stay borrowed until
//! every stream used is synchronised (M1, M2).

use super::{
    Cell, Context, Error, Location, ManuallyDrop, Memory, MemoryMut, PhantomData, Pod, Result,
    Stream, aclrtStream, byte_len, c_void, memcpy_kind, ptr, report_drop_error, sealed,
};
use crate::result::failures;
use std::io::Write;

impl<'ctx> Context<'ctx> {
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
            many: Cell::new(false),
            written: Cell::new(None),
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
        let synchronized = if scope.many.get() {
            scope.end_slowly()
        } else if let Some(stream) = scope.first.get() {
            synchronize_used(self, stream)
        } else {
            Ok(())
        };
        if let Err(error) = synchronized {
            return Err(scope.forget_written(error));
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
    // Every failure after the first (returned) is reported: none is lost, whichever of a
    // transient failure and the stream's one-time error came first.
    let mut outcome = stream.synchronize();
    for _ in 0..SYNCHRONIZE_TRIES {
        let Err(again) = outcome else {
            break;
        };
        report_drop_error("async scope (a synchronisation tried again)", Err(again));
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
    /// Inlined, handing the scope to an out-of-line function: the guard itself then needs
    /// no place in memory.
    #[inline(always)]
    fn drop(&mut self) {
        synchronize_on_unwind(self.0);
    }
}

/// The unwind guard's work. Only reached while unwinding (`async_scope` forgets the guard
/// otherwise). A stream that cannot be synchronised aborts inside; a reported error is not
/// lost.
#[cold]
#[inline(never)]
fn synchronize_on_unwind(scope: &AsyncScope<'_, '_>) {
    let synchronized = scope.synchronize_all();
    report_drop_error(
        "async scope (synchronize on panic)",
        scope.forget_written_if_failed(synchronized),
    );
}

pub(super) fn copy_sizes<T>(dst_len: usize, src_len: usize) -> Result<(usize, usize)> {
    if src_len > dst_len {
        return Err(Error::InvalidArgument(
            "the source is longer than the destination (count > destMax, M1)",
        ));
    }
    Ok((byte_len::<T>(dst_len)?, byte_len::<T>(src_len)?))
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
    /// Device memory at `ptr`, `len` elements of `T` on `device`, written by a task issued
    /// on `writer` (of `writer_ctx`) and borrowed by the caller for `'scope` (M1).
    pub(crate) fn device(
        ptr: *const c_void,
        len: usize,
        device: Option<i32>,
        writer: aclrtStream,
        writer_ctx: &'scope Context<'scope>,
    ) -> PendingDevice<'scope, T> {
        PendingDevice(Pending {
            ptr,
            len,
            location: Location::Device,
            device,
            writer,
            writer_ctx,
            _borrow: PhantomData,
        })
    }

    /// Where the memory lives.
    pub fn location(&self) -> Location {
        self.location
    }
}

/// Pending host memory: the source of a later copy of the same scope (H2D or H2H).
#[derive(Clone, Copy, Debug)]
pub struct PendingHost<'scope, T: Pod>(pub(crate) Pending<'scope, T>);
/// Pending device memory: the source of a later copy (D2H, D2D) or kernel of the same scope.
#[derive(Clone, Copy, Debug)]
pub struct PendingDevice<'scope, T: Pod>(pub(crate) Pending<'scope, T>);

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
    pub fn into_device(self) -> Option<PendingDevice<'scope, T>> {
        (self.location == Location::Device).then_some(PendingDevice(self))
    }
    /// As a host source; `None` if the copy's destination was device memory.
    pub fn into_host(self) -> Option<PendingHost<'scope, T>> {
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
///
/// * [`DeviceBuffer`](crate::DeviceBuffer): `aclrtMalloc` / `aclrtFree`, with the [`MallocPolicy`](crate::MallocPolicy) as a typed
///   choice. Device memory cannot be read or written from the host except by a copy.
/// * [`HostBuffer`](crate::HostBuffer): page-locked host memory, `aclrtMallocHost` / `aclrtFreeHost`; it
///   dereferences to a slice.
/// * Ordinary Rust slices (`[T]`) are host memory too.
///
/// Element types are [`bytemuck::Pod`]: a copy writes raw bytes into them.
///
/// # Kinds and counts (M1)
///
/// The `aclrtMemcpyKind` is derived from the buffer types at compile time ([`Location`] of
/// source and destination), so a wrong kind cannot be written. `destMax` is always the
/// destination's size and `count` the source's; a source larger than its destination is a
/// typed [`Error::InvalidArgument`] before any call (take a [`DeviceBuffer::slice`](crate::DeviceBuffer::slice) or a
/// sub-slice to copy part of a buffer).
///
/// # Asynchronous copies (M1, M2)
///
/// `aclrtMemcpyAsync` returns before the copy runs. Asynchronous copies and memsets exist
/// only inside [`Context::async_scope`], which borrows every buffer it is given for the whole
/// scope and synchronises every stream it used before it returns, on every path, panics
/// included (like [`std::thread::scope`] joins its threads). So, at compile time:
/// reading the destination or writing/dropping the source while the copy is pending does not
/// compile, and neither does freeing device memory a pending task uses. No guard value is
/// involved: leaking one (`mem::forget`) cannot end the borrow early.
///
/// A copy returns its destination as a [`PendingDevice`] or [`PendingHost`] source, so later
/// copies and kernels of the same scope can consume it with a compile-time kind; when they
/// run on another stream than the copy, the library orders them after it with an event join
/// (E2, E3), so a two-stream pipeline never reads stale data.
///
/// ```no_run
/// # use ascend_typestate::{Acl, MallocPolicy};
/// # let acl = Acl::init()?;
/// # let device = acl.set_device(0)?;
/// let ctx = device.create_context()?;
/// let stream = ctx.create_stream()?;
/// let input = vec![1.0f32; 1024];
/// let mut output = vec![0.0f32; 1024];
/// let mut on_device = ctx.alloc::<f32>(1024, MallocPolicy::HugeFirst)?;
/// ctx.async_scope(|scope| {
///     scope.copy(&stream, &mut on_device, &input)?;      // H2D, derived from the types
///     Ok(())
/// })?;                                                    // synchronised here (M1)
/// ctx.copy(&mut output[..], &on_device)?;                 // D2H, synchronous
/// assert_eq!(input, output);
/// # Ok::<(), ascend_typestate::Error>(())
/// ```
pub struct AsyncScope<'scope, 'env: 'scope> {
    pub(crate) ctx: &'env Context<'env>,
    /// The first stream the scope used: the usual case, kept out of the vector so that a
    /// one-stream scope costs a compare, no allocation.
    first: Cell<Option<&'scope Stream<'scope>>>,
    /// Any other streams, each once; created with the second stream, so that the usual
    /// scope neither initialises nor checks nor frees a vector.
    /// (`ManuallyDrop`: taken, and freed, on every way out of the scope: its end, or the
    /// guard's synchronisation while a panic unwinds; no check for it at the usual end.)
    more: ManuallyDrop<Cell<Option<Vec<&'scope Stream<'scope>>>>>,
    /// `more` may hold a vector, or media tasks may have written frames: a flag, so that
    /// the usual end checks one byte.
    many: Cell<bool>,
    /// The last output a task of the scope marks (a media frame), linked to the ones before
    /// (DV6).
    written: Cell<Option<&'scope Written>>,
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

/// The scope's context and first stream, and whether it uses more: never a buffer's contents.
impl std::fmt::Debug for AsyncScope<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncScope")
            .field("ctx", &self.ctx)
            .field("first_stream", &self.first.get())
            .field("more_streams", &self.many.get())
            .finish()
    }
}

impl<'scope, 'env> AsyncScope<'scope, 'env> {
    /// Orders `stream` after the task that writes `source`, when another stream writes it
    /// (a join event, E2/E3): reading a [`Pending`] result on another stream never races
    /// with the task that produces it. Free on the writing stream itself (S1).
    pub(crate) fn after_writer<T: Pod, S: Source<'scope, T>>(
        &self,
        source: &S,
        stream: &Stream<'_>,
    ) -> Result<()> {
        self.after(source.writer(), stream)
    }

    /// [`after_writer`](Self::after_writer) for a writer already looked up.
    #[inline]
    pub(crate) fn after(
        &self,
        writer: Option<(aclrtStream, &'scope Context<'scope>)>,
        stream: &Stream<'_>,
    ) -> Result<()> {
        match writer {
            Some((_, writer_ctx)) if !ptr::addr_eq(writer_ctx, self.ctx) => Err(self
                .ctx
                .mismatch(writer_ctx, "a pending result (written in another scope)")),
            Some((writer, _)) if writer != stream.as_raw() => stream.join_after(writer),
            _ => Ok(()),
        }
    }

    /// The `Pending` view of `dst` as written by a task issued now on `stream` (M1).
    pub(crate) fn written_by<T: Pod, D: MemoryMut<T> + ?Sized>(
        &'scope self,
        stream: &'scope Stream<'_>,
        dst: &'scope mut D,
    ) -> Pending<'scope, T> {
        Pending {
            ptr: dst.as_mut_ptr().cast_const(),
            len: dst.len(),
            location: D::LOCATION,
            device: dst.device_id(),
            writer: stream.as_raw(),
            writer_ctx: self.ctx,
            _borrow: PhantomData,
        }
    }

    /// Checks that `stream` is of the scope's context, binds it (D6) and remembers it, so
    /// that the scope synchronises it before it ends (M1).
    #[inline(always)]
    pub(crate) fn use_stream(&self, stream: &'scope Stream<'_>) -> Result<()> {
        self.ctx
            .check_stream(stream, "the stream of an async scope")?;
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
        self.ctx
            .check_stream(stream, "the stream of an async scope")?;
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
        self.many.set(true);
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
        // One branch for all checks keeps the common path small enough to inline; the cold
        // path finds which check failed, or binds the context (D6).
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
        let pending = self.written_by(stream, dst);
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
        Ok(unsafe {
            self.ctx.api().memset_async(
                dst.as_mut_ptr(),
                bytes,
                i32::from(value),
                bytes,
                stream.as_raw(),
            )
        }?)
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
        let synchronized = self.synchronize_all();
        report_drop_error(
            "async scope (synchronize after an error)",
            self.forget_written_if_failed(synchronized),
        );
        error
    }

    /// A frame a media task of this scope is about to write (DV6), linked before the task is
    /// issued: its layout is forgotten if a synchronisation fails before the scope has ended
    /// (the scope's own, or any other in its context, which may have reported this task's
    /// failure: [`failures`] counts them), as the task may have failed. The scope's end then
    /// takes the slow path, which looks at the frames.
    pub(crate) fn wrote(&self, frame: &'scope Written) {
        frame.issued_after(failures::failed_synchronisations(self.ctx.id()));
        frame.link(self.written.get());
        self.written.set(Some(frame));
        self.many.set(true);
    }

    /// After a failed synchronisation a task may have failed: the frames the scope's media
    /// tasks wrote report no picture (their layouts are forgotten). Returns `synchronized`.
    fn forget_written_if_failed(&self, synchronized: Result<()>) -> Result<()> {
        if let Some(first) = self.written.take() {
            if synchronized.is_err() {
                first.forget_all();
            } else {
                first.forget_failed(failures::failed_synchronisations(self.ctx.id()));
            }
        }
        synchronized
    }

    /// The usual end of a scope that used several streams or issued media tasks: every stream
    /// synchronised; the frames its media tasks wrote forgotten if another synchronisation
    /// failed meanwhile (the body's own, an inner scope's, an event's or the device's may have
    /// reported one of its tasks). Out of line: the one-stream end tests one flag for it.
    #[cold]
    #[inline(never)]
    fn end_slowly(&self) -> Result<()> {
        self.synchronize_all()?;
        if let Some(first) = self.written.take() {
            first.forget_failed(failures::failed_synchronisations(self.ctx.id()));
        }
        Ok(())
    }

    /// [`forget_written_if_failed`](Self::forget_written_if_failed) after a failed usual end,
    /// out of line: the usual end only tests the synchronisation's result.
    #[cold]
    #[inline(never)]
    fn forget_written(&self, error: Error) -> Error {
        if let Some(first) = self.written.take() {
            first.forget_all();
        }
        error
    }
}

/// The mark of an output whose contents a failed scope invalidates (a media frame's picture,
/// DV6), and its place in the list of the outputs one async scope's tasks write: if the
/// scope's synchronisation fails, the scope clears the mark of each.
pub(crate) struct Written {
    valid: Cell<bool>,
    /// The context's failed synchronisations counted when the task writing the output was
    /// issued: more at the scope's end, and one of them may have reported that task.
    failed_before: Cell<u64>,
    /// The output written before this one in the same scope. Set only by the scope whose
    /// task borrows the output exclusively, read only by that scope before it returns.
    next: Cell<Option<ptr::NonNull<Written>>>,
}

impl Written {
    pub(crate) const fn new() -> Written {
        Written {
            valid: Cell::new(true),
            failed_before: Cell::new(0),
            next: Cell::new(None),
        }
    }

    /// Whether no failed scope cleared the mark since it was last set.
    pub(crate) fn is_valid(&self) -> bool {
        self.valid.get()
    }

    /// Set by the output's owner when a task (or nothing) writes it anew.
    pub(crate) fn validate(&self) {
        self.valid.set(true);
    }

    /// Records the failed synchronisations counted before the output's task is issued.
    fn issued_after(&self, failed: u64) {
        self.failed_before.set(failed);
    }

    /// Links `next` after this output (the scope's list).
    fn link(&self, next: Option<&Written>) {
        self.next.set(next.map(ptr::NonNull::from));
    }

    /// Clears the marks of this output and of those linked after it whose task was issued
    /// before the context's failed synchronisations reached `failed` (one of them may have
    /// reported it), and unlinks them all.
    fn forget_failed(&self, failed: u64) {
        let mut next = Some(ptr::NonNull::from(self));
        while let Some(output) = next {
            // SAFETY: `self`, or linked by `AsyncScope::wrote` from an output borrowed
            // exclusively for the scope's lifetime, read by that scope before it returns (as
            // in `forget_all`).
            let output = unsafe { output.as_ref() };
            if output.failed_before.get() != failed {
                output.valid.set(false);
            }
            next = output.next.take();
        }
    }

    /// Clears the marks of this output and of those linked after it.
    fn forget_all(&self) {
        self.valid.set(false);
        let mut next = self.next.take();
        while let Some(output) = next {
            // SAFETY: linked by `AsyncScope::wrote` from an output borrowed exclusively for
            // the scope's lifetime, read by that scope before it returns: the output is
            // alive, and no other list links it (an output is written once per scope, and
            // not in a nested scope while an outer one borrows it).
            let output = unsafe { output.as_ref() };
            output.valid.set(false);
            next = output.next.take();
        }
    }
}
