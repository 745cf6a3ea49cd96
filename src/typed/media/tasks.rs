//! Decode and resize as tasks of an [`AsyncScope`] (DV4, DV6, DV10): everything a task uses
//! stays borrowed until the scope has synchronised its stream (M1).

use super::buffer::{JpegBuffer, MediaBuffer, MediaFrame};
use super::picture::{FrameLayout, PixelFormat};
use super::{ChannelMode, DecodesJpeg, MediaChannel, Resizes};
use crate::sys::bindings::aclrtStream;
use crate::typed::context::Context;
use crate::typed::dtype::DataType;
use crate::typed::error::{Error, Result};
use crate::typed::memory::{AsyncScope, Memory};
use crate::typed::model::ModelInput;
use crate::typed::stream::Stream;

/// A channel's tasks on one stream, for one async scope ([`AsyncScope::media`]): the channel
/// is borrowed exclusively until the scope ends, so within a scope it serves this stream
/// only, from this thread (DV4), and it cannot be destroyed while its tasks are pending
/// (DV10).
pub struct MediaTasks<'scope, 'env, M: ChannelMode> {
    scope: &'scope AsyncScope<'scope, 'env>,
    stream: &'scope Stream<'scope>,
    channel: &'scope MediaChannel<'scope, M>,
}

impl<M: ChannelMode> std::fmt::Debug for MediaTasks<'_, '_, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MediaTasks")
            .field("stream", &self.stream.as_raw())
            .field("channel", &self.channel)
            .finish()
    }
}

/// A frame written by a task still pending in its scope (a decode or a resize): the input of
/// later resizes and model executions of the same scope, which are ordered after it (S1 on
/// its stream, a join on another: E2, E3). The host cannot read it before the scope ends
/// (DV6).
#[derive(Clone, Copy, Debug)]
pub struct PendingFrame<'scope> {
    frame: &'scope MediaFrame<'scope>,
    layout: FrameLayout,
    writer: (aclrtStream, &'scope Context<'scope>),
}

impl PendingFrame<'_> {
    /// The layout the pending task writes.
    pub fn layout(&self) -> FrameLayout {
        self.layout
    }
}

/// The input of a resize: a frame borrowed for the scope, or a [`PendingFrame`].
#[derive(Clone, Copy, Debug)]
pub struct FrameSource<'scope> {
    frame: &'scope MediaFrame<'scope>,
    writer: Option<(aclrtStream, &'scope Context<'scope>)>,
}

impl<'scope, 'ctx: 'scope> From<&'scope MediaFrame<'ctx>> for FrameSource<'scope> {
    fn from(frame: &'scope MediaFrame<'ctx>) -> Self {
        FrameSource {
            frame,
            writer: None,
        }
    }
}

impl<'scope> From<PendingFrame<'scope>> for FrameSource<'scope> {
    fn from(pending: PendingFrame<'scope>) -> Self {
        FrameSource {
            frame: pending.frame,
            writer: Some(pending.writer),
        }
    }
}

/// A frame as a model input without a copy (DV11, MD9): `u8` data of exactly the picture's
/// size ([`FrameLayout::byte_len`]), checked against the model's input size before any call
/// ([`Error::ModelSizeMismatch`], MD10).
impl<'scope, 'ctx: 'scope> From<&'scope MediaFrame<'ctx>> for ModelInput<'scope> {
    fn from(frame: &'scope MediaFrame<'ctx>) -> Self {
        ModelInput::from_parts(
            frame.as_ptr(),
            Memory::len(frame),
            DataType::Uint8,
            Memory::device_id(frame),
            None,
        )
    }
}

/// Media memory as a model input without a copy (DV11, MD9): `u8` data of the buffer's
/// length, checked against the model's input size before any call (MD10).
impl<'scope, 'ctx: 'scope> From<&'scope MediaBuffer<'ctx>> for ModelInput<'scope> {
    fn from(buffer: &'scope MediaBuffer<'ctx>) -> Self {
        ModelInput::from_parts(
            buffer.as_ptr(),
            Memory::len(buffer),
            DataType::Uint8,
            Memory::device_id(buffer),
            None,
        )
    }
}

/// As for a frame, ordered after the pending task that writes it (E2, E3).
impl<'scope> From<PendingFrame<'scope>> for ModelInput<'scope> {
    fn from(pending: PendingFrame<'scope>) -> Self {
        ModelInput::from_parts(
            pending.frame.as_ptr(),
            pending.layout.byte_len(),
            DataType::Uint8,
            Memory::device_id(pending.frame),
            Some(pending.writer),
        )
    }
}

impl<'scope, 'env> AsyncScope<'scope, 'env> {
    /// The tasks of `channel` on `stream` in this scope (DV4, DV6): the channel stays
    /// borrowed exclusively until the scope has synchronised the stream, so a second use of
    /// it in the same scope (another stream) does not compile. Both must be of the scope's
    /// context ([`Error::ContextMismatch`]).
    pub fn media<'c, M: ChannelMode>(
        &'scope self,
        channel: &'scope mut MediaChannel<'c, M>,
        stream: &'scope Stream<'_>,
    ) -> Result<MediaTasks<'scope, 'env, M>> {
        if !std::ptr::addr_eq(channel.context(), self.ctx) {
            return Err(self.ctx.mismatch(channel.context(), "a media channel"));
        }
        self.use_stream(stream)?;
        let channel: &'scope MediaChannel<'c, M> = channel;
        Ok(MediaTasks {
            scope: self,
            stream,
            // The exclusive borrow, held for 'scope by the argument, used as a shared one.
            channel: shorten(channel),
        })
    }
}

/// `&'s MediaChannel<'c, M>` as `&'s MediaChannel<'s, M>` (the channel is covariant in its
/// context's lifetime).
fn shorten<'s, 'c: 's, M: ChannelMode>(
    channel: &'s MediaChannel<'c, M>,
) -> &'s MediaChannel<'s, M> {
    channel
}

impl<'scope, M: ChannelMode> MediaTasks<'scope, '_, M> {
    fn check_frame(&self, frame: &MediaFrame<'_>, what: &'static str) -> Result<()> {
        if std::ptr::addr_eq(frame.context(), self.scope.ctx) {
            Ok(())
        } else {
            Err(self.scope.ctx.mismatch(frame.context(), what))
        }
    }

    /// `acldvppJpegDecodeAsync` (DV6-DV8): the JPEG of `input` decoded into `output` in
    /// `format`, with the layout JPEGD writes ([`FrameLayout::decoded`]); a frame too small
    /// for it is [`Error::PictureLayout`] and an empty `input` [`Error::InvalidArgument`],
    /// both before any call. Both stay borrowed until the scope has synchronised the stream
    /// (DV6, DV10); the decoded frame comes back as a [`PendingFrame`].
    pub fn decode_jpeg(
        &self,
        input: &'scope JpegBuffer<'_>,
        output: &'scope mut MediaFrame<'_>,
        format: PixelFormat,
    ) -> Result<PendingFrame<'scope>>
    where
        M: DecodesJpeg,
    {
        let Some((header, len)) = input.loaded() else {
            return Err(Error::InvalidArgument("no JPEG loaded in the buffer (DV7)"));
        };
        if !std::ptr::addr_eq(input.buffer().context(), self.scope.ctx) {
            return Err(self
                .scope
                .ctx
                .mismatch(input.buffer().context(), "a JPEG buffer"));
        }
        self.check_frame(output, "a media frame")?;
        let layout = FrameLayout::decoded(&header, format);
        output.check_capacity(&layout)?;
        output.set_layout(None);
        // SAFETY: the frame is borrowed exclusively: no pending task uses its description
        // (a task of an earlier scope was synchronised before that scope ended, DV6).
        unsafe { output.output_desc().describe(&layout)? };
        let size = u32::try_from(len).map_err(|_| Error::InvalidArgument("a JPEG of 4 GiB"))?;
        let output: &'scope MediaFrame<'_> = output;
        // Linked before its task is issued (DV6): a failure reported from now on counts.
        self.scope.wrote(output.written());
        // SAFETY: the channel has JPEGD (`M: DecodesJpeg`, DV3) and is borrowed exclusively
        // by this scope on this stream (DV4); the input is media memory holding `len` bytes
        // of a checked JPEG (DV5, DV7); the output description is of media memory of the
        // size DV8 asks (checked); all of them are borrowed until the scope synchronises the
        // stream (DV6, DV10), which is of the current context (bound by `media`).
        unsafe {
            self.scope.ctx.api().dvpp_jpeg_decode_async(
                self.channel.raw().0,
                input.buffer().as_raw(),
                size,
                output.output_desc().raw(),
                self.stream.as_raw(),
            )?
        };
        output.set_layout(Some(layout));
        Ok(PendingFrame {
            frame: output,
            layout,
            writer: (self.stream.as_raw(), self.scope.ctx),
        })
    }

    /// `acldvppVpcResizeAsync` (DV6, DV9): `input` resized into `output` with `layout`
    /// (bilinear, the channel's configuration). An input that VPC does not take (no layout,
    /// outside 10x6 to 8192x8192) or an output too small is [`Error::PictureLayout`] before
    /// any call. The input is described by a description of its own, never the one a
    /// pending decode writes (DV6); a [`PendingFrame`] of another stream is joined first
    /// (E2, E3). The output comes back as a [`PendingFrame`].
    pub fn resize(
        &self,
        input: impl Into<FrameSource<'scope>>,
        output: &'scope mut MediaFrame<'_>,
        layout: FrameLayout,
    ) -> Result<PendingFrame<'scope>>
    where
        M: Resizes,
    {
        let source = input.into();
        let Some(from) = source.frame.layout() else {
            return Err(Error::PictureLayout(
                "the resize input holds no picture (DV9)",
            ));
        };
        from.check_resize_input()?;
        self.check_frame(source.frame, "a media frame")?;
        self.check_frame(output, "a media frame")?;
        output.check_capacity(&layout)?;
        self.scope.after(source.writer, self.stream)?;
        // SAFETY: the input's layout changes only through `&mut`, which no pending task of
        // this scope leaves (DV6).
        let input_desc = unsafe { source.frame.input_desc(&from)? };
        output.set_layout(None);
        // SAFETY: the output is borrowed exclusively: no pending task uses its description.
        unsafe { output.output_desc().describe(&layout)? };
        let (channel, config) = self.channel.raw();
        let output: &'scope MediaFrame<'_> = output;
        // Linked before its task is issued (DV6): a failure reported from now on counts.
        self.scope.wrote(output.written());
        // SAFETY: the channel has VPC (`M: Resizes`, DV3) and its configuration, borrowed by
        // this scope on this stream (DV4); both descriptions are of media memory of the
        // geometry DV9 asks (checked) and stay borrowed until the scope synchronises the
        // stream (DV6, DV10); an input written on another stream is joined (E2, E3).
        unsafe {
            self.scope.ctx.api().dvpp_vpc_resize_async(
                channel,
                input_desc,
                output.output_desc().raw(),
                config,
                self.stream.as_raw(),
            )?
        };
        output.set_layout(Some(layout));
        Ok(PendingFrame {
            frame: output,
            layout,
            writer: (self.stream.as_raw(), self.scope.ctx),
        })
    }
}
