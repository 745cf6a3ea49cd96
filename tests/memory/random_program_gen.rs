//! The random copy programs of `random_programs`: what a program is (streams, device and host
//! buffers, views, operations, async scopes), and its generation: raw operations, then
//! `legalize`, which drops the operations the typed API cannot express, so that a shrunk
//! failure is a program the typed API accepts.

use std::fmt;

use proptest::collection::vec;
use proptest::prelude::*;

// ----------------------------------------------------------------------------------------
// Programs
// ----------------------------------------------------------------------------------------

/// A buffer of the program: device buffer `i` or host buffer `i`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Buf {
    Dev(usize),
    Host(usize),
}

impl fmt::Debug for Buf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Buf::Dev(i) => write!(f, "d{i}"),
            Buf::Host(i) => write!(f, "h{i}"),
        }
    }
}

/// Elements `start..end` of a buffer (never empty).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct View {
    pub(crate) buf: Buf,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

impl View {
    pub(crate) fn len(&self) -> usize {
        self.end - self.start
    }
}

impl fmt::Debug for View {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}[{}..{}]", self.buf, self.start, self.end)
    }
}

/// The source of an asynchronous operation.
#[derive(Clone, Copy)]
pub(crate) enum Src {
    /// A view borrowed for the whole scope.
    View(View),
    /// The `Pending` result of the scope's operation `op` (same stream), whose destination was
    /// `view`.
    Pending { op: usize, view: View },
}

impl Src {
    pub(crate) fn view(&self) -> View {
        match *self {
            Src::View(view) | Src::Pending { view, .. } => view,
        }
    }
}

impl fmt::Debug for Src {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Src::View(view) => view.fmt(f),
            Src::Pending { op, view } => write!(f, "pending(#{op}: {view:?})"),
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) enum Op {
    /// `ctx.copy(dst, src)`; illegal (M1) when `src` is longer than `dst`.
    Copy { dst: View, src: View },
    /// `ctx.memset(device buffer, value)`.
    Memset { dev: usize, value: u8 },
    /// `ctx.async_scope(...)` issuing these operations (`#i` in `Src::Pending` is an index here).
    Scope(Vec<AsyncOp>),
}

#[derive(Clone, Debug)]
pub(crate) enum AsyncOp {
    /// `scope.copy(stream, dst, src)`.
    Copy { stream: usize, dst: View, src: Src },
    /// `scope.memset(stream, dst, value)`: illegal on host memory.
    Memset { stream: usize, dst: View, value: u8 },
    /// `scope.simulated_map(stream, micros, src, dst, kernel)` (device memory only).
    Map {
        stream: usize,
        dst: View,
        src: Src,
        micros: u16,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HostKind {
    Vec,
    Pinned,
}

#[derive(Clone, Debug)]
pub(crate) struct Program {
    pub(crate) streams: usize,
    pub(crate) dev_lens: Vec<usize>,
    pub(crate) hosts: Vec<(HostKind, usize)>,
    pub(crate) ops: Vec<Op>,
}

/// The simulated kernel of `Map`.
pub(crate) fn kernel(x: u32) -> u32 {
    x.wrapping_mul(0x9e37_79b9).rotate_left(7) ^ 1
}

pub(crate) fn memset_word(value: u8) -> u32 {
    u32::from_ne_bytes([value; 4])
}

// ----------------------------------------------------------------------------------------
// Generation: raw operations, then `legalize`
// ----------------------------------------------------------------------------------------

/// A view before it is fitted to its buffer: `buf` indexes devices then hosts.
#[derive(Clone, Debug)]
pub(crate) struct RawView {
    pub(crate) buf: usize,
    whole: bool,
    pub(crate) start: usize,
    len: usize,
}

#[derive(Clone, Debug)]
pub(crate) enum RawOp {
    Copy {
        dst: RawView,
        src: RawView,
        fit: bool,
    },
    Memset {
        dev: usize,
        value: u8,
    },
    Scope(Vec<RawAsync>),
}

#[derive(Clone, Debug)]
pub(crate) enum RawAsync {
    /// `chain`: read the previous operation's destination on its stream (as `Pending`).
    Copy {
        stream: usize,
        dst: RawView,
        src: RawView,
        fit: bool,
        chain: bool,
    },
    /// `on_host`: aim at a host buffer (illegal), else at a device buffer.
    Memset {
        stream: usize,
        dst: RawView,
        value: u8,
        on_host: bool,
    },
    Map {
        stream: usize,
        dst: RawView,
        src: RawView,
        fit: bool,
        chain: bool,
        micros: u16,
    },
}

pub(crate) fn raw_view(buffers: usize) -> impl Strategy<Value = RawView> {
    (
        0..buffers,
        prop::bool::weighted(0.3),
        0..4096usize,
        1..=4096usize,
    )
        .prop_map(|(buf, whole, start, len)| RawView {
            buf,
            whole,
            start,
            len,
        })
}

/// `fit`: most copies are legal; one in eight is made illegal by length if it can be.
pub(crate) fn fit() -> impl Strategy<Value = bool> {
    prop::bool::weighted(0.875)
}

pub(crate) fn chain() -> impl Strategy<Value = bool> {
    prop::bool::weighted(0.35)
}

pub(crate) fn raw_async(streams: usize, buffers: usize) -> impl Strategy<Value = RawAsync> {
    prop_oneof![
        5 => (0..streams, raw_view(buffers), raw_view(buffers), fit(), chain()).prop_map(
            |(stream, dst, src, fit, chain)| RawAsync::Copy { stream, dst, src, fit, chain }
        ),
        2 => (0..streams, raw_view(buffers), any::<u8>(), prop::bool::weighted(0.15)).prop_map(
            |(stream, dst, value, on_host)| RawAsync::Memset { stream, dst, value, on_host }
        ),
        2 => (
            0..streams,
            raw_view(buffers),
            raw_view(buffers),
            fit(),
            chain(),
            0..=200u16
        )
            .prop_map(|(stream, dst, src, fit, chain, micros)| RawAsync::Map {
                stream,
                dst,
                src,
                fit,
                chain,
                micros
            }),
    ]
}

pub(crate) fn raw_op(streams: usize, devs: usize, buffers: usize) -> impl Strategy<Value = RawOp> {
    prop_oneof![
        5 => (raw_view(buffers), raw_view(buffers), fit())
            .prop_map(|(dst, src, fit)| RawOp::Copy { dst, src, fit }),
        1 => (0..devs, any::<u8>()).prop_map(|(dev, value)| RawOp::Memset { dev, value }),
        3 => vec(raw_async(streams, buffers), 1..=8).prop_map(RawOp::Scope),
    ]
}

pub(crate) fn buffer_len() -> impl Strategy<Value = usize> {
    prop_oneof![1..=16usize, 1..=4096usize]
}

pub(crate) fn program() -> impl Strategy<Value = Program> {
    (
        1..=3usize,
        vec(buffer_len(), 2..=4),
        vec(buffer_len(), 2..=3),
        prop::bool::ANY,
    )
        .prop_flat_map(|(streams, dev_lens, host_lens, third_pinned)| {
            let hosts: Vec<(HostKind, usize)> = host_lens
                .iter()
                .enumerate()
                .map(|(i, &len)| {
                    let kind = match i {
                        0 => HostKind::Vec,
                        1 => HostKind::Pinned,
                        _ if third_pinned => HostKind::Pinned,
                        _ => HostKind::Vec,
                    };
                    (kind, len)
                })
                .collect();
            let buffers = dev_lens.len() + hosts.len();
            vec(raw_op(streams, dev_lens.len(), buffers), 1..=30).prop_map(move |raw| {
                legalize(
                    Program {
                        streams,
                        dev_lens: dev_lens.clone(),
                        hosts: hosts.clone(),
                        ops: Vec::new(),
                    },
                    raw,
                )
            })
        })
}

/// Per buffer, within one scope.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Unused,
    Read,
    /// Written (borrowed mutably) on `stream`; `pending` is the writing operation when its
    /// result can be read by later operations of the same stream.
    Written {
        stream: usize,
        pending: Option<usize>,
    },
}

impl Program {
    fn buf(&self, index: usize) -> Buf {
        if index < self.dev_lens.len() {
            Buf::Dev(index)
        } else {
            Buf::Host(index - self.dev_lens.len())
        }
    }

    fn buf_len(&self, buf: Buf) -> usize {
        match buf {
            Buf::Dev(i) => self.dev_lens[i],
            Buf::Host(i) => self.hosts[i].1,
        }
    }

    fn slot(&self, buf: Buf) -> usize {
        match buf {
            Buf::Dev(i) => i,
            Buf::Host(i) => self.dev_lens.len() + i,
        }
    }

    pub(crate) fn view(&self, raw: &RawView, buf: Buf) -> View {
        let len = self.buf_len(buf);
        if raw.whole {
            return View {
                buf,
                start: 0,
                end: len,
            };
        }
        let start = raw.start % len;
        let count = 1 + (raw.len - 1) % (len - start);
        View {
            buf,
            start,
            end: start + count,
        }
    }

    /// Fits a destination view and a source of `src_len` elements (the source view when it
    /// can be resized) so that the copy is legal (`fit`) or the source is longer (`!fit`),
    /// where the buffers allow it.
    fn fit(&self, fit: bool, dst: &mut View, src: Option<&mut View>, src_len: usize) {
        let dst_cap = self.buf_len(dst.buf);
        match (fit, src) {
            (true, Some(src)) => src.end = src.start + src.len().min(dst.len()),
            (true, None) if src_len > dst.len() && src_len <= dst_cap => {
                dst.start = dst.start.min(dst_cap - src_len);
                dst.end = dst.start + src_len;
            }
            (false, _) if src_len >= 2 => dst.end = dst.start + dst.len().min(src_len - 1),
            (false, Some(src)) if dst.len() == 1 => {
                let cap = self.buf_len(src.buf);
                src.start = src.start.min(cap.saturating_sub(2));
                src.end = (src.start + 2).min(cap);
            }
            _ => {}
        }
    }
}

/// Turns raw operations into a program the typed API can express (see the module docs).
pub(crate) fn legalize(mut program: Program, raw: Vec<RawOp>) -> Program {
    let buffers = program.dev_lens.len() + program.hosts.len();
    let mut ops = Vec::new();
    for raw_op in raw {
        match raw_op {
            RawOp::Copy { dst, src, fit } => {
                let (dst_buf, src_buf) = (program.buf(dst.buf), program.buf(src.buf));
                if dst_buf == src_buf {
                    continue;
                }
                let mut dst = program.view(&dst, dst_buf);
                let mut src = program.view(&src, src_buf);
                let src_len = src.len();
                program.fit(fit, &mut dst, Some(&mut src), src_len);
                ops.push(Op::Copy { dst, src });
            }
            RawOp::Memset { dev, value } => ops.push(Op::Memset { dev, value }),
            RawOp::Scope(raw_ops) => {
                let mut roles = vec![Role::Unused; buffers];
                let mut scope = Vec::new();
                for op in raw_ops {
                    let next = scope.len();
                    let (mut stream, dst, src, fit, chain) = match &op {
                        RawAsync::Memset {
                            stream,
                            dst,
                            value,
                            on_host,
                        } => {
                            let buf = if *on_host {
                                Buf::Host(dst.buf % program.hosts.len())
                            } else {
                                Buf::Dev(dst.buf % program.dev_lens.len())
                            };
                            let slot = program.slot(buf);
                            if roles[slot] != Role::Unused {
                                continue;
                            }
                            roles[slot] = Role::Written {
                                stream: *stream,
                                pending: None,
                            };
                            scope.push(AsyncOp::Memset {
                                stream: *stream,
                                dst: program.view(dst, buf),
                                value: *value,
                            });
                            continue;
                        }
                        RawAsync::Copy {
                            stream,
                            dst,
                            src,
                            fit,
                            chain,
                        }
                        | RawAsync::Map {
                            stream,
                            dst,
                            src,
                            fit,
                            chain,
                            ..
                        } => (*stream, dst, src, *fit, *chain),
                    };
                    let is_map = matches!(op, RawAsync::Map { .. });
                    let (dst_buf, mut src_buf) = if is_map {
                        let devs = program.dev_lens.len();
                        (Buf::Dev(dst.buf % devs), Buf::Dev(src.buf % devs))
                    } else {
                        (program.buf(dst.buf), program.buf(src.buf))
                    };
                    // Chaining: read what the previous operation wrote, on its stream.
                    if let (
                        true,
                        Some(
                            AsyncOp::Copy { stream: s, dst, .. }
                            | AsyncOp::Map { stream: s, dst, .. },
                        ),
                    ) = (chain, scope.last())
                        && (!is_map || matches!(dst.buf, Buf::Dev(_)))
                    {
                        stream = *s;
                        src_buf = dst.buf;
                    }
                    let (dst_slot, src_slot) = (program.slot(dst_buf), program.slot(src_buf));
                    if dst_slot == src_slot || roles[dst_slot] != Role::Unused {
                        continue;
                    }
                    let mut dst = program.view(dst, dst_buf);
                    let src = match roles[src_slot] {
                        Role::Unused | Role::Read => {
                            let mut view = program.view(src, src_buf);
                            let len = view.len();
                            program.fit(fit, &mut dst, Some(&mut view), len);
                            Src::View(view)
                        }
                        Role::Written {
                            stream: writer,
                            pending: Some(op),
                        } if writer == stream => {
                            let view = scope_dst(&scope[op]);
                            program.fit(fit, &mut dst, None, view.len());
                            Src::Pending { op, view }
                        }
                        Role::Written { .. } => continue,
                    };
                    if let Src::View(_) = src {
                        roles[src_slot] = Role::Read;
                    }
                    let legal = src.view().len() <= dst.len();
                    roles[dst_slot] = Role::Written {
                        stream,
                        pending: legal.then_some(next),
                    };
                    scope.push(match op {
                        RawAsync::Map { micros, .. } => AsyncOp::Map {
                            stream,
                            dst,
                            src,
                            micros,
                        },
                        _ => AsyncOp::Copy { stream, dst, src },
                    });
                }
                if !scope.is_empty() {
                    ops.push(Op::Scope(scope));
                }
            }
        }
    }
    program.ops = ops;
    program
}

pub(crate) fn scope_dst(op: &AsyncOp) -> View {
    match *op {
        AsyncOp::Copy { dst, .. } | AsyncOp::Memset { dst, .. } | AsyncOp::Map { dst, .. } => dst,
    }
}
