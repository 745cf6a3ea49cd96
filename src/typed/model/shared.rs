//! What a model shares with the pipelines that execute it ([`ModelShared`]: pending
//! executions and their stream, MD7, MD8), and the deferred release of a model dropped while
//! executions are pending.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::sync::Arc;

use crate::sys::sync::{AtomicPtr, AtomicUsize, Mutex, Ordering};

use super::{Model, ModelKind};
use crate::sys::bindings::aclrtStream;
use crate::typed::error::{Error, Result};

/// What pipelines and the model share: the executions issued and not yet proven done, and
/// the stream they were issued on (MD7, MD8). Only the holder of `&mut Model` issues, so only
/// it increments; a pipeline decrements once it has seen the frame done, from any thread.
///
/// A model dropped while executions are pending hands its release here ([`defer`]
/// (Self::defer)): whoever ends the last execution runs it, so the natural drop order (a
/// model declared after the pipeline that runs it drops first) unloads it once its frames
/// are proven done instead of leaking it.
pub(crate) struct ModelShared {
    /// Executions pending, with [`DEFERRED`] set once the model's release waits for them.
    in_flight: AtomicUsize,
    pub(crate) stream: AtomicPtr<c_void>,
    /// The release of a model dropped with executions pending; run once, by the last
    /// [`end`](Self::end) or by `defer` itself if they all ended first.
    deferred: Mutex<Option<DeferredRelease>>,
}

/// The bit of [`ModelShared::in_flight`] saying the model was dropped and its release waits.
const DEFERRED: usize = 1 << (usize::BITS - 1);

/// A dropped model's release, its lifetime erased (see [`Model::drop`]'s SAFETY comment).
pub(crate) type DeferredRelease = Box<dyn FnOnce() + Send + 'static>;

impl ModelShared {
    pub(crate) fn new() -> ModelShared {
        ModelShared {
            in_flight: AtomicUsize::new(0),
            stream: AtomicPtr::new(std::ptr::null_mut()),
            deferred: Mutex::new(None),
        }
    }

    /// Registers an execution about to be issued on `stream`, or refuses it if executions
    /// are pending on another stream (MD8). The caller holds `&mut Model`.
    #[inline]
    pub(crate) fn begin(&self, stream: aclrtStream) -> Result<()> {
        self.check_stream(stream)?;
        self.stream.store(stream, Ordering::Release);
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Refuses an execution on `stream` while executions are pending on another (MD8).
    #[inline]
    pub(crate) fn check_stream(&self, stream: aclrtStream) -> Result<()> {
        let pending = self.pending();
        if pending > 0 && self.stream.load(Ordering::Acquire) != stream {
            return Err(Error::ModelInUse { pending });
        }
        Ok(())
    }

    /// An execution registered with `begin` is proven done. The last one of a dropped model
    /// runs its release.
    #[inline]
    pub(crate) fn end(&self) {
        if self.in_flight.fetch_sub(1, Ordering::AcqRel) == DEFERRED | 1 {
            self.run_deferred();
        }
    }

    pub(crate) fn pending(&self) -> usize {
        self.in_flight.load(Ordering::Acquire) & !DEFERRED
    }

    /// Keeps `release` until no execution is pending, then runs it (here, if none is).
    /// Called once, by the model's `Drop`: no `begin` follows (it needs the model).
    pub(crate) fn defer(&self, release: DeferredRelease) {
        *self.deferred.lock().unwrap_or_else(|p| p.into_inner()) = Some(release);
        // Stored before the bit is set: the `end` that sees the bit finds it.
        if self.in_flight.fetch_or(DEFERRED, Ordering::AcqRel) == 0 {
            self.run_deferred();
        }
    }

    #[cold]
    #[inline(never)]
    fn run_deferred(&self) {
        // Taken with the lock released: the release is user-visible work (the drop-error
        // handler may run).
        let release = self
            .deferred
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(release) = release {
            release();
        }
    }
}

impl<'ctx, K: ModelKind> Model<'ctx, K> {
    /// The model is dropped while executions are pending (its pipeline was declared first,
    /// say): its release moves into the shared state, and runs when the last execution is
    /// proven done (MD7). `self` is left unloaded-looking, owning nothing.
    #[cold]
    #[inline(never)]
    pub(super) fn defer_release(&mut self) {
        let model = Model::<'ctx, K> {
            ctx: self.ctx,
            id: self.id,
            desc: std::mem::replace(&mut self.desc, std::ptr::null_mut()),
            shared: Arc::clone(&self.shared),
            info: std::mem::take(&mut self.info),
            // SAFETY: taken once: `self` is marked unloaded below, so nothing takes or drops
            // it again.
            memory: ManuallyDrop::new(unsafe { ManuallyDrop::take(&mut self.memory) }),
            scoped: self.scoped.take(),
            unloaded: false,
            _kind: PhantomData,
        };
        self.unloaded = true;
        let release: Box<dyn FnOnce() + Send + 'ctx> = Box::new(move || drop(model));
        // SAFETY: only the lifetime is erased (same layout). The release runs either in
        // `defer` (below, the model's context borrowed by `self`) or in `ModelShared::end`,
        // called only by a pipeline slot's `finish` with the pipeline borrowing the same
        // context (checked by `Launch::execute_model` before `begin`, MD1): the context and
        // everything `'ctx` borrows are alive whenever it runs. It is never dropped unrun:
        // the model it owns holds the `Arc` that owns it (a leaked pipeline leaks both).
        let release: DeferredRelease = unsafe {
            std::mem::transmute::<Box<dyn FnOnce() + Send + 'ctx>, DeferredRelease>(release)
        };
        Arc::clone(&self.shared).defer(release);
    }
}
