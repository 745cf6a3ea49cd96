//! Media preprocessing, DVPP V1 (DV1-DV11): the process-wide media token ([`MediaV1`]),
//! channels with their modes in their type ([`MediaChannel`]), media memory
//! ([`MediaBuffer`], [`JpegBuffer`], [`MediaFrame`]), the checks made before any call
//! ([`JpegHeader`], [`FrameLayout`]) and the decode and resize tasks of an
//! [`AsyncScope`](crate::AsyncScope) ([`MediaTasks`]).

use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::sys::bindings::{
    DVPP_CHNMODE_JPEGD, DVPP_CHNMODE_VPC, acldvppChannelDesc, acldvppResizeConfig,
};
use crate::typed::context::Context;
use crate::typed::error::{Error, Result};
use crate::typed::handle::{report_drop_error, retry_cleanup};
use crate::typed::runtime::Acl;

mod buffer;
mod picture;
mod tasks;

pub use buffer::{JpegBuffer, MediaBuffer, MediaFrame};
pub(crate) use picture::JPEG_SIDE;
pub use picture::{FrameLayout, JpegHeader, JpegSampling, PixelFormat};
pub use tasks::{FrameSource, MediaTasks, PendingFrame};

/// Whether a [`MediaV1`] token lives in this process (DV1).
static MEDIA_V1: AtomicBool = AtomicBool::new(false);

/// The process's media API, DVPP V1 (DV1): one token per process, exclusive. Every V1 object
/// (channels, media memory, frames) is made with a borrow of it, so none outlives it.
///
/// # States
///
/// ```text
///  Acl::media_v1() ──► held ──(drop)──► released: another media_v1() may succeed
///        └── while one is held: Error::MediaApiTaken
/// ```
///
/// A second API of the same process (a V2 layer) is to take the same exclusion. A token that
/// is leaked (`mem::forget`) keeps the media API taken for the life of the process: it
/// refuses more, never less.
#[derive(Debug)]
pub struct MediaV1<'acl> {
    _acl: PhantomData<&'acl Acl>,
}

impl Acl {
    /// The media token (DV1): [`Error::MediaApiTaken`] while another one lives.
    pub fn media_v1(&self) -> Result<MediaV1<'_>> {
        MEDIA_V1
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .map_err(|_| Error::MediaApiTaken)?;
        Ok(MediaV1 { _acl: PhantomData })
    }
}

impl Drop for MediaV1<'_> {
    fn drop(&mut self) {
        MEDIA_V1.store(false, Ordering::Release);
    }
}

mod sealed {
    pub trait Sealed {}
}

/// The modes a [`MediaChannel`] is created with (DV3), in its type: [`Jpegd`], [`Vpc`] or
/// [`JpegdVpc`]. Sealed.
pub trait ChannelMode: sealed::Sealed {
    /// The OR of `DVPP_CHNMODE_*` given to `acldvppSetChannelDescMode`.
    const BITS: u32;
}
/// A channel mode that decodes JPEG (JPEGD, DV3).
pub trait DecodesJpeg: ChannelMode {}
/// A channel mode that resizes (VPC, DV3).
pub trait Resizes: ChannelMode {}

/// JPEG decode only (`DVPP_CHNMODE_JPEGD`). Zero-sized.
#[derive(Clone, Copy, Debug)]
pub struct Jpegd;
/// Resize only (`DVPP_CHNMODE_VPC`). Zero-sized.
#[derive(Clone, Copy, Debug)]
pub struct Vpc;
/// Decode and resize (`DVPP_CHNMODE_JPEGD | DVPP_CHNMODE_VPC`). Zero-sized.
#[derive(Clone, Copy, Debug)]
pub struct JpegdVpc;

impl sealed::Sealed for Jpegd {}
impl sealed::Sealed for Vpc {}
impl sealed::Sealed for JpegdVpc {}
impl ChannelMode for Jpegd {
    const BITS: u32 = DVPP_CHNMODE_JPEGD;
}
impl ChannelMode for Vpc {
    const BITS: u32 = DVPP_CHNMODE_VPC;
}
impl ChannelMode for JpegdVpc {
    const BITS: u32 = DVPP_CHNMODE_JPEGD | DVPP_CHNMODE_VPC;
}
impl DecodesJpeg for Jpegd {}
impl DecodesJpeg for JpegdVpc {}
impl Resizes for Vpc {}
impl Resizes for JpegdVpc {}

/// Destroys one runtime object counted in `ctx`, tried again while the runtime fails it;
/// uncounted only once destroyed (D3).
fn destroy_counted(
    ctx: &Context<'_>,
    what: &'static str,
    destroy: impl FnMut() -> crate::result::Result<()>,
) -> Result<()> {
    let destroyed = retry_cleanup(what, destroy);
    if destroyed.is_ok() {
        ctx.orphan();
    }
    destroyed
}

/// A media channel of a context (DV3), with the modes `M` it was created with: decode needs
/// [`DecodesJpeg`], resize [`Resizes`], at compile time.
///
/// # States
///
/// ```text
///  Context::create_media_channel::<M>() ──► Idle ──(AsyncScope::media: &'scope mut)──► Busy
///                                            ▲                                          │
///                                            └────────── the scope synchronised ◄───────┘
///  Idle ── destroy() / Drop ──► destroyed (channel, then its description, DV3)
/// ```
///
/// It borrows its context, so the context cannot be destroyed while it lives (DV3, D3); a
/// scope borrows it exclusively for its whole length, so it serves one stream per scope and
/// cannot be destroyed with tasks pending (DV4, DV10). `Send`, not `Sync`: one thread at a
/// time (DV4). The channel owns the resize configuration its resizes use (interpolation 1,
/// bilinear, DV9).
pub struct MediaChannel<'ctx, M: ChannelMode> {
    ctx: &'ctx Context<'ctx>,
    desc: *mut acldvppChannelDesc,
    /// Whether `acldvppCreateChannel` succeeded (the channel is to be destroyed).
    created: bool,
    /// The resize configuration (VPC); null for a channel without VPC.
    config: *mut acldvppResizeConfig,
    _mode: PhantomData<M>,
}

// SAFETY: the channel's handles are host objects of the runtime usable from any thread, one
// thread at a time (DV4): the channel is not `Sync`, and tasks need `&mut` (a scope's borrow).
unsafe impl<M: ChannelMode> Send for MediaChannel<'_, M> {}

impl<'dev> Context<'dev> {
    /// `acldvppCreateChannelDesc`, `acldvppSetChannelDescMode(M::BITS)`,
    /// `acldvppCreateChannel` (DV3) and, with VPC, `acldvppCreateResizeConfig` with
    /// interpolation 1 (DV9). On failure what was created is destroyed again.
    pub fn create_media_channel<'a, M: ChannelMode>(
        &'a self,
        media: &'a MediaV1<'_>,
    ) -> Result<MediaChannel<'a, M>> {
        let _ = media;
        self.bind()?;
        let api = self.api();
        // SAFETY: destroyed by the channel's release (or below), after its channel (DV3).
        let desc = unsafe { api.dvpp_create_channel_desc()? };
        self.adopt();
        let mut channel = MediaChannel {
            ctx: self,
            desc,
            created: false,
            config: std::ptr::null_mut(),
            _mode: PhantomData,
        };
        // The channel is not created yet: the release then destroys the description only.
        let created = channel.open();
        match created {
            Ok(()) => Ok(channel),
            Err(error) => {
                report_drop_error("MediaChannel (a failed creation)", channel.close());
                std::mem::forget(channel);
                Err(error)
            }
        }
    }
}

impl<'ctx, M: ChannelMode> MediaChannel<'ctx, M> {
    /// Mode, channel, configuration. `desc` stays; what else was made is recorded.
    fn open(&mut self) -> Result<()> {
        let api = self.ctx.api();
        // SAFETY: a live description whose channel is not created (DV3).
        unsafe { api.dvpp_set_channel_desc_mode(self.desc, M::BITS)? };
        // SAFETY: a live description; the channel is destroyed by `close` (DV3).
        unsafe { api.dvpp_create_channel(self.desc)? };
        self.ctx.adopt();
        self.created = true;
        if M::BITS & DVPP_CHNMODE_VPC != 0 {
            // SAFETY: destroyed by `close`, once no task uses it (DV10).
            let config = unsafe { api.dvpp_create_resize_config()? };
            self.ctx.adopt();
            self.config = config;
            // SAFETY: a live configuration no task uses yet.
            unsafe { api.dvpp_set_resize_interpolation(config, 1)? };
        }
        Ok(())
    }

    /// Destroys the configuration, the channel, then its description (DV3, DV10); stops at
    /// the first that cannot be destroyed (what remains stays counted in the context, D3).
    fn close(&mut self) -> Result<()> {
        self.ctx.bind()?;
        let api = self.ctx.api();
        let config = std::mem::replace(&mut self.config, std::ptr::null_mut());
        if !config.is_null() {
            // SAFETY: created by `open`; no task uses it (tasks borrow the channel for their
            // scope, which synchronised them, DV10); destroyed once (the field is cleared).
            let done = destroy_counted(self.ctx, "a resize configuration", || unsafe {
                api.dvpp_destroy_resize_config(config)
            });
            if let Err(error) = done {
                self.config = config;
                return Err(error);
            }
        }
        if self.created {
            // SAFETY: the channel exists (`open` created it); no task uses it (as above).
            let done = destroy_counted(self.ctx, "a media channel", || unsafe {
                api.dvpp_destroy_channel(self.desc)
            });
            done?;
            self.created = false;
        }
        // SAFETY: its channel destroyed (DV3: 148051 otherwise); destroyed once.
        destroy_counted(self.ctx, "a media channel description", || unsafe {
            api.dvpp_destroy_channel_desc(self.desc)
        })
    }

    /// Destroys the channel and its description (DV3). On failure the channel is kept,
    /// counted in its context (D3), and the error returned.
    pub fn destroy(mut self) -> Result<()> {
        let closed = self.close();
        std::mem::forget(self);
        closed
    }

    pub(crate) fn context(&self) -> &'ctx Context<'ctx> {
        self.ctx
    }

    pub(crate) fn raw(&self) -> (*mut acldvppChannelDesc, *mut acldvppResizeConfig) {
        (self.desc, self.config)
    }
}

impl<M: ChannelMode> Drop for MediaChannel<'_, M> {
    fn drop(&mut self) {
        report_drop_error("MediaChannel", self.close());
    }
}

impl<M: ChannelMode> std::fmt::Debug for MediaChannel<'_, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MediaChannel")
            .field("desc", &self.desc)
            .field("modes", &M::BITS)
            .finish()
    }
}
