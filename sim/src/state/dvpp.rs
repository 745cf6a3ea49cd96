//! The runtime's media objects of DVPP V1 (DV3-DV10): channel descriptions and their
//! channels, picture descriptions, resize configurations, and the media tasks issued and not
//! done ([`Held`]), with what each holds.
//!
//! Layer: plain data (part of `state`); imports `state` and `media`, nothing above. The
//! rules that change these objects are in `rules::dvpp`, the entry points in `api::dvpp`.

use std::collections::{BTreeMap, HashMap, VecDeque};

use crate::media::decode::Output;
use crate::media::jpeg::Header;
use crate::media::resize::Plane;
use crate::state::handle;

/// Channel descriptions.
pub const CHANNEL_BASE: usize = 0x7b20_0000_0000;
/// Picture descriptions.
pub const PIC_BASE: usize = 0x7b30_0000_0000;
/// Resize configurations.
pub const RESIZE_BASE: usize = 0x7b40_0000_0000;

/// The channel modes (`DVPP_CHNMODE_*`, bit flags).
pub const MODE_VPC: u32 = 1;
pub const MODE_JPEGD: u32 = 2;
pub const MODE_ALL: u32 = 0xF;

/// The JPEGD precision modes (`acldvppJpegdPrecisionMode`): how an odd size is rounded.
pub const ALIGN_DOWN: i32 = 0;
pub const ALIGN_UP: i32 = 1;
pub const ALIGN_DOWN_COMPAT: i32 = 2;

/// At most this many destroyed handles are remembered for DV10 findings.
pub const TOMBS: usize = 1 << 16;

/// Everything the runtime knows about media.
#[derive(Default)]
pub struct Dvpp {
    pub channels: HashMap<u64, Channel>,
    pub pics: HashMap<u64, PicDesc>,
    pub configs: HashMap<u64, ResizeConfig>,
    /// Media tasks issued and not done: task id -> what it holds (DV6, DV10).
    pub tasks: BTreeMap<u64, Held>,
    /// Recently destroyed handles: address -> kind (DV10). Ids are never reused, so a handle
    /// found here was destroyed, never merely invalid.
    pub tombs: BTreeMap<usize, &'static str>,
    /// The handles of `tombs`, oldest first (the order they are forgotten in).
    pub tomb_order: VecDeque<usize>,
}

/// A channel description, and its channel once created (DV3).
pub struct Channel {
    /// `acldvppSetChannelDescMode`'s mode, if set (none: every mode).
    pub mode: Option<u32>,
    /// `ACL_DVPP_JPEGD_PRECISION_MODE_ENUM` (default `ALIGN_DOWN_COMPAT`).
    pub precision: i32,
    /// The channel exists (created, not destroyed): its context and device.
    pub created: Option<(u64, i32)>,
    /// Pending tasks using it.
    pub uses: u32,
    /// The description was destroyed while tasks used it: removed once they are done.
    pub destroyed: bool,
    /// The thread and stream of the last submission (DV4).
    pub last_user: Option<(u64, u64)>,
}

/// A picture description (DV8): its fields, zero until set.
#[derive(Default)]
pub struct PicDesc {
    pub data: usize,
    pub size: u32,
    pub format: i32,
    pub width: u32,
    pub height: u32,
    pub width_stride: u32,
    pub height_stride: u32,
    pub ret_code: u32,
    /// Pending tasks using it.
    pub uses: u32,
    /// Destroyed while tasks used it: removed once they are done.
    pub destroyed: bool,
    /// The pending decode that writes its width, height and strides when it runs (DV6).
    pub written_by: Option<u64>,
}

/// A resize configuration (DV9).
#[derive(Default)]
pub struct ResizeConfig {
    pub interpolation: u32,
    pub uses: u32,
    pub destroyed: bool,
}

/// What a pending media task holds and touches (DV6, DV10).
pub struct Held {
    pub call: &'static str,
    pub stream: u64,
    pub channel: u64,
    /// Picture descriptions (decode: the output; resize: the input, the output).
    pub pics: Vec<u64>,
    pub config: Option<u64>,
    /// (address, bytes) read by the task.
    pub reads: Vec<(usize, usize)>,
    /// (address, bytes) written by the task.
    pub writes: Vec<(usize, usize)>,
}

/// A media task's body, run by a stream worker without the lock.
#[derive(Clone, Debug)]
pub enum Work {
    /// `acldvppJpegDecodeAsync`: `size` bytes of JPEG at `input`, whose header was checked
    /// (`header`), into `output` laid out as `layout`.
    Decode {
        input: usize,
        size: usize,
        header: Header,
        output: usize,
        layout: Output,
        desc: u64,
    },
    /// `acldvppVpcResizeAsync`: YUV420SP `src` (`src_rows` rows reserved per plane) into
    /// `dst`; `nv_swap`: the two differ in chroma order.
    Resize {
        src: usize,
        src_plane: Plane,
        src_rows: usize,
        dst: usize,
        dst_plane: Plane,
        dst_rows: usize,
        nearest: bool,
        nv_swap: bool,
        desc: u64,
    },
}

impl Work {
    /// The output description the task reports its result in.
    pub fn desc(&self) -> u64 {
        match self {
            Work::Decode { desc, .. } | Work::Resize { desc, .. } => *desc,
        }
    }
}

impl Dvpp {
    /// Live media objects (P2, `aclsimLiveObjectCount`): descriptions and configurations
    /// not destroyed, and channels created.
    pub fn live_count(&self) -> usize {
        self.channels
            .values()
            .map(|c| usize::from(!c.destroyed) + usize::from(c.created.is_some()))
            .sum::<usize>()
            + self.pics.values().filter(|p| !p.destroyed).count()
            + self.configs.values().filter(|c| !c.destroyed).count()
    }

    /// The leak report's lines (P2), or those of one device (D3: its channels only).
    pub fn describe_live(&self, device: Option<i32>) -> Vec<String> {
        let mut v = Vec::new();
        let mut ids: Vec<_> = self.channels.iter().collect();
        ids.sort_by_key(|(k, _)| **k);
        for (id, c) in ids {
            if let Some((_, d)) = c.created
                && device.is_none_or(|x| x == d)
            {
                v.push(format!(
                    "DVPP channel of description {:#x} (device {d})",
                    handle(CHANNEL_BASE, *id)
                ));
            }
            if device.is_none() && !c.destroyed {
                v.push(format!(
                    "DVPP channel description {:#x}",
                    handle(CHANNEL_BASE, *id)
                ));
            }
        }
        if device.is_some() {
            return v;
        }
        let mut sorted = |kind: &str, base: usize, mut ids: Vec<u64>| {
            ids.sort_unstable();
            v.extend(
                ids.iter()
                    .map(|id| format!("{kind} {:#x}", handle(base, *id))),
            );
        };
        sorted(
            "DVPP picture description",
            PIC_BASE,
            self.pics
                .iter()
                .filter(|(_, p)| !p.destroyed)
                .map(|(k, _)| *k)
                .collect(),
        );
        sorted(
            "DVPP resize configuration",
            RESIZE_BASE,
            self.configs
                .iter()
                .filter(|(_, c)| !c.destroyed)
                .map(|(k, _)| *k)
                .collect(),
        );
        v
    }
}

/// The bytes at `at`, copied (the memory may be written by another thread meanwhile: the
/// task reads what is there when it runs, as the device does).
fn copy_in(at: usize, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    // SAFETY: validated at issue to lie in a live media allocation, kept alive by the task's
    // use of it (M2) until the task is done, and not freed by a teardown meanwhile (a stream
    // worker is joined first).
    unsafe { std::ptr::copy(at as *const u8, v.as_mut_ptr(), len) };
    v
}

/// Writes `bytes` at `at`.
fn copy_out(at: usize, bytes: &[u8]) {
    // SAFETY: as for `copy_in`: the range was validated at issue to hold `bytes.len()` bytes.
    unsafe { std::ptr::copy(bytes.as_ptr(), at as *mut u8, bytes.len()) };
}

impl Work {
    /// Runs the task: reads its input, computes, writes its output. An error says why the
    /// input does not decode (the task fails, P3b); a panic of the decoder is caught.
    pub fn execute(&self) -> Result<(), String> {
        let run = std::panic::AssertUnwindSafe(|| self.compute());
        match std::panic::catch_unwind(run) {
            Ok(r) => r,
            Err(_) => Err("the decoder panicked".to_string()),
        }
    }

    fn compute(&self) -> Result<(), String> {
        match self {
            Work::Decode {
                input,
                size,
                header,
                output,
                layout,
                ..
            } => {
                let bytes = copy_in(*input, *size);
                // The header again, as the device reads it now: the same size, or no decode
                // (the output was checked for that size).
                let now = crate::media::jpeg::parse(&bytes).map_err(|e| format!("{e:?}"))?;
                if now != *header {
                    return Err("the JPEG's header changed since the submission".to_string());
                }
                let yuv = crate::media::decode::to_yuv420sp(&bytes, header, layout)?;
                copy_out(*output, &yuv);
                Ok(())
            }
            Work::Resize {
                src,
                src_plane,
                src_rows,
                dst,
                dst_plane,
                dst_rows,
                nearest,
                nv_swap,
                ..
            } => {
                let mut input = copy_in(*src, src_plane.stride * src_rows * 3 / 2);
                if *nv_swap {
                    let uv = src_plane.stride * src_rows;
                    for row in input[uv..].chunks_mut(src_plane.stride) {
                        for pair in row.chunks_exact_mut(2) {
                            pair.swap(0, 1);
                        }
                    }
                }
                let mut out = vec![0u8; dst_plane.stride * dst_rows * 3 / 2];
                crate::media::resize::yuv420sp(
                    &input,
                    *src_plane,
                    *src_rows,
                    &mut out,
                    *dst_plane,
                    *dst_rows,
                    *nearest,
                    crate::media::PADDING,
                );
                copy_out(*dst, &out);
                Ok(())
            }
        }
    }
}
