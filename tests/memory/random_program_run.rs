//! Running the random copy programs of `random_programs`: the model (plain `Vec<u32>`
//! arithmetic, in program order) and the execution through the typed memory API on the
//! simulator, every buffer compared with the model after every operation; a case ends with
//! zero checker findings and zero live runtime objects.

use crate::support;

use std::time::Duration;

use ascend_typestate::{Context, DeviceBuffer, Error, HostBuffer, MallocPolicy, Stream};
use ascend_typestate::{DeviceSlice, DeviceSliceMut, Location, Pending};
use support::sim::Session;

use super::random_program_gen::{
    AsyncOp, Buf, HostKind, Op, Program, Src, View, kernel, memset_word, scope_dst,
};

// ----------------------------------------------------------------------------------------
// The model
// ----------------------------------------------------------------------------------------

struct Model {
    dev: Vec<Vec<u32>>,
    host: Vec<Vec<u32>>,
}

impl Model {
    fn get(&self, view: View) -> &[u32] {
        let buf = match view.buf {
            Buf::Dev(i) => &self.dev[i],
            Buf::Host(i) => &self.host[i],
        };
        &buf[view.start..view.end]
    }

    fn get_mut(&mut self, view: View) -> &mut [u32] {
        let buf = match view.buf {
            Buf::Dev(i) => &mut self.dev[i],
            Buf::Host(i) => &mut self.host[i],
        };
        &mut buf[view.start..view.end]
    }

    /// A copy of `src` into the start of `dst`; `false` (and no change) when illegal.
    fn copy(&mut self, dst: View, src: View, map: Option<fn(u32) -> u32>) -> bool {
        if src.len() > dst.len() {
            return false;
        }
        let data: Vec<u32> = self
            .get(src)
            .iter()
            .map(|&x| map.map_or(x, |f| f(x)))
            .collect();
        self.get_mut(dst)[..data.len()].copy_from_slice(&data);
        true
    }
}

/// Initial contents, distinct per buffer and element.
fn pattern(tag: u32, len: usize) -> Vec<u32> {
    (0..len as u32).map(|j| (tag << 24) | j).collect()
}

// ----------------------------------------------------------------------------------------
// Execution
// ----------------------------------------------------------------------------------------

enum HostMem<'c> {
    Vec(Vec<u32>),
    Pinned(HostBuffer<'c, u32>),
}

impl HostMem<'_> {
    fn as_slice(&self) -> &[u32] {
        match self {
            HostMem::Vec(v) => v,
            HostMem::Pinned(p) => p,
        }
    }
}

/// A destination, borrowed from the buffers: a whole buffer as itself, a part as a view.
enum DstMut<'a, 'c> {
    Dev(&'a mut DeviceBuffer<'c, u32>),
    DevView(DeviceSliceMut<'a, u32>),
    Vec(&'a mut Vec<u32>),
    Pinned(&'a mut HostBuffer<'c, u32>),
    Slice(&'a mut [u32]),
}

/// A source, borrowed from the buffers.
enum SrcRef<'a, 'c> {
    Dev(&'a DeviceBuffer<'c, u32>),
    DevView(DeviceSlice<'a, u32>),
    Vec(&'a Vec<u32>),
    Pinned(&'a HostBuffer<'c, u32>),
    Slice(&'a [u32]),
}

/// Runs `$body` with `$d` bound to the destination as `&mut` of its own type.
macro_rules! with_dst {
    ($dst:expr, $d:ident => $body:expr) => {
        match $dst {
            DstMut::Dev(b) => {
                let $d: &mut DeviceBuffer<'_, u32> = &mut **b;
                $body
            }
            DstMut::DevView(v) => {
                let $d = v;
                $body
            }
            DstMut::Vec(v) => {
                let $d: &mut Vec<u32> = &mut **v;
                $body
            }
            DstMut::Pinned(p) => {
                let $d: &mut HostBuffer<'_, u32> = &mut **p;
                $body
            }
            DstMut::Slice(s) => {
                let $d: &mut [u32] = &mut **s;
                $body
            }
        }
    };
}

/// Runs `$body` with `$s` bound to the source as `&` of its own type.
macro_rules! with_src {
    ($src:expr, $s:ident => $body:expr) => {
        match $src {
            SrcRef::Dev(b) => {
                let $s: &DeviceBuffer<'_, u32> = *b;
                $body
            }
            SrcRef::DevView(v) => {
                let $s = v;
                $body
            }
            SrcRef::Vec(v) => {
                let $s: &Vec<u32> = *v;
                $body
            }
            SrcRef::Pinned(p) => {
                let $s: &HostBuffer<'_, u32> = *p;
                $body
            }
            SrcRef::Slice(s) => {
                let $s: &[u32] = *s;
                $body
            }
        }
    };
}

struct Buffers<'c> {
    dev: Vec<DeviceBuffer<'c, u32>>,
    host: Vec<HostMem<'c>>,
}

impl<'c> Buffers<'c> {
    /// Borrows the destinations `writes` (distinct buffers) mutably and the sources `reads`
    /// (other buffers) shared, in the order given.
    fn split<'a>(
        &'a mut self,
        writes: &[View],
        reads: &[View],
    ) -> (Vec<DstMut<'a, 'c>>, Vec<SrcRef<'a, 'c>>) {
        let mut dsts: Vec<Option<DstMut<'a, 'c>>> = writes.iter().map(|_| None).collect();
        let mut srcs: Vec<Option<SrcRef<'a, 'c>>> = reads.iter().map(|_| None).collect();
        let whole = |v: &View, len: usize| v.start == 0 && v.end == len;
        for (i, buffer) in self.dev.iter_mut().enumerate() {
            let len = buffer.len();
            if let Some(w) = writes.iter().position(|v| v.buf == Buf::Dev(i)) {
                let v = writes[w];
                dsts[w] = Some(if whole(&v, len) {
                    DstMut::Dev(buffer)
                } else {
                    DstMut::DevView(buffer.slice_mut(v.start..v.end).expect("in bounds"))
                });
                continue;
            }
            let buffer: &'a DeviceBuffer<'c, u32> = buffer;
            for (r, v) in reads.iter().enumerate() {
                if v.buf == Buf::Dev(i) {
                    srcs[r] = Some(if whole(v, len) {
                        SrcRef::Dev(buffer)
                    } else {
                        SrcRef::DevView(buffer.slice(v.start..v.end).expect("in bounds"))
                    });
                }
            }
        }
        for (i, buffer) in self.host.iter_mut().enumerate() {
            let len = buffer.as_slice().len();
            if let Some(w) = writes.iter().position(|v| v.buf == Buf::Host(i)) {
                let v = writes[w];
                dsts[w] = Some(match (buffer, whole(&v, len)) {
                    (HostMem::Vec(vec), true) => DstMut::Vec(vec),
                    (HostMem::Pinned(pinned), true) => DstMut::Pinned(pinned),
                    (HostMem::Vec(vec), false) => DstMut::Slice(&mut vec[v.start..v.end]),
                    (HostMem::Pinned(pinned), false) => DstMut::Slice(&mut pinned[v.start..v.end]),
                });
                continue;
            }
            let buffer: &'a HostMem<'c> = buffer;
            for (r, v) in reads.iter().enumerate() {
                if v.buf == Buf::Host(i) {
                    srcs[r] = Some(match buffer {
                        HostMem::Vec(vec) if whole(v, len) => SrcRef::Vec(vec),
                        HostMem::Pinned(pinned) if whole(v, len) => SrcRef::Pinned(pinned),
                        HostMem::Vec(vec) => SrcRef::Slice(&vec[v.start..v.end]),
                        HostMem::Pinned(pinned) => SrcRef::Slice(&pinned[v.start..v.end]),
                    });
                }
            }
        }
        let dsts = dsts
            .into_iter()
            .map(|d| d.expect("a destination"))
            .collect();
        let srcs = srcs
            .into_iter()
            .map(|s| s.expect("a source that is not also written"))
            .collect();
        (dsts, srcs)
    }
}

/// `Ok` when the outcome is the one the model expects (`legal`): success, or
/// `Error::InvalidArgument`.
fn expect_outcome<T>(
    result: Result<T, Error>,
    legal: bool,
    step: &str,
    what: &str,
) -> Result<Option<T>, String> {
    match (result, legal) {
        (Ok(value), true) => Ok(Some(value)),
        (Err(Error::InvalidArgument(_)), false) => Ok(None),
        (Ok(_), false) => Err(format!(
            "{step} ({what}): illegal, expected Error::InvalidArgument, got Ok"
        )),
        (Err(e), _) => Err(format!(
            "{step} ({what}): expected {}, got {e:?}",
            if legal {
                "Ok"
            } else {
                "Error::InvalidArgument"
            }
        )),
    }
}

/// Reads every device buffer back and compares every buffer with the model.
fn check(
    ctx: &Context<'_>,
    buffers: &Buffers<'_>,
    model: &Model,
    step: &str,
) -> Result<(), String> {
    let compare = |name: String, got: &[u32], want: &[u32]| -> Result<(), String> {
        let wrong: Vec<usize> = (0..want.len()).filter(|&j| got[j] != want[j]).collect();
        match wrong.first() {
            None => Ok(()),
            Some(&first) => Err(format!(
                "after {step}: {name} differs from the model at {} of {} elements \
                 (indices {}..={}); first [{first}]: got {:#010x}, want {:#010x}",
                wrong.len(),
                want.len(),
                first,
                wrong[wrong.len() - 1],
                got[first],
                want[first]
            )),
        }
    };
    for (i, buffer) in buffers.dev.iter().enumerate() {
        let mut back = vec![0xdead_beef_u32; buffer.len()];
        ctx.copy(&mut back[..], buffer)
            .map_err(|e| format!("after {step}: reading d{i} back: {e:?}"))?;
        compare(format!("d{i}"), &back, &model.dev[i])?;
    }
    for (i, buffer) in buffers.host.iter().enumerate() {
        compare(format!("h{i}"), buffer.as_slice(), &model.host[i])?;
    }
    Ok(())
}

/// Issues one async scope; returns each operation's outcome (`Err` only for errors).
fn run_scope(
    ctx: &Context<'_>,
    streams: &[Stream<'_>],
    buffers: &mut Buffers<'_>,
    ops: &[AsyncOp],
) -> Result<Vec<Option<Error>>, Error> {
    let writes: Vec<View> = ops.iter().map(scope_dst).collect();
    // Plain sources, and for each operation its index among them.
    let mut reads = Vec::new();
    let read_index: Vec<Option<usize>> = ops
        .iter()
        .map(|op| match op {
            AsyncOp::Copy {
                src: Src::View(v), ..
            }
            | AsyncOp::Map {
                src: Src::View(v), ..
            } => {
                reads.push(*v);
                Some(reads.len() - 1)
            }
            _ => None,
        })
        .collect();
    let (mut dsts, srcs) = buffers.split(&writes, &reads);
    let (dsts, srcs) = (&mut dsts, &srcs);
    ctx.async_scope(|scope| {
        let mut pending: Vec<Option<Pending<'_, u32>>> = vec![None; ops.len()];
        let mut errors = Vec::new();
        for (k, (op, dst)) in ops.iter().zip(dsts.iter_mut()).enumerate() {
            let result = match *op {
                AsyncOp::Memset { stream, value, .. } => {
                    with_dst!(dst, d => scope.memset(&streams[stream], d, value)).map(|()| None)
                }
                AsyncOp::Copy { stream, src, .. } => {
                    let stream = &streams[stream];
                    match src {
                        Src::View(_) => {
                            let s = &srcs[read_index[k].expect("a plain source")];
                            with_dst!(dst, d => with_src!(s, s =>
                                scope.copy(stream, d, s).map(Pending::from)))
                        }
                        Src::Pending { op, .. } => {
                            let p = pending[op].expect("legalize: a pending result");
                            match p.location() {
                                Location::Device => {
                                    let p = p.into_device().expect("device");
                                    with_dst!(dst, d => scope.copy(stream, d, p).map(Pending::from))
                                }
                                Location::Host => {
                                    let p = p.into_host().expect("host");
                                    with_dst!(dst, d => scope.copy(stream, d, p).map(Pending::from))
                                }
                            }
                        }
                    }
                    .map(Some)
                }
                AsyncOp::Map {
                    stream,
                    src,
                    micros,
                    ..
                } => {
                    let stream = &streams[stream];
                    let time = Duration::from_micros(u64::from(micros));
                    let f: fn(u32) -> u32 = kernel;
                    match src {
                        Src::View(_) => {
                            let s = &srcs[read_index[k].expect("a plain source")];
                            with_dst!(dst, d => with_src!(s, s =>
                                scope.simulated_map(stream, time, s, d, f).map(Pending::from)))
                        }
                        Src::Pending { op, .. } => {
                            let p = pending[op].expect("legalize: a pending result");
                            let p = p.into_device().expect("kernels write device memory");
                            with_dst!(dst, d =>
                                scope.simulated_map(stream, time, p, d, f).map(Pending::from))
                        }
                    }
                    .map(Some)
                }
            };
            match result {
                Ok(p) => {
                    pending[k] = p;
                    errors.push(None);
                }
                Err(e) => errors.push(Some(e)),
            }
        }
        Ok(errors)
    })
}

fn execute(session: &Session, program: &Program) -> Result<(), String> {
    let device = session.acl().set_device(0).map_err(err("set_device"))?;
    let ctx = device.create_context().map_err(err("create_context"))?;
    let streams = (0..program.streams)
        .map(|_| ctx.create_stream().map_err(err("create_stream")))
        .collect::<Result<Vec<_>, _>>()?;
    run_program(&ctx, &streams, program)?;
    let end = "the end";
    for stream in streams {
        stream
            .destroy()
            .map_err(|f| format!("{end}: destroy stream: {f:?}"))?;
    }
    ctx.destroy()
        .map_err(|f| format!("{end}: destroy context: {f:?}"))?;
    device
        .reset()
        .map_err(|f| format!("{end}: reset device: {f:?}"))?;
    Ok(())
}

fn err(what: &'static str) -> impl Fn(Error) -> String {
    move |e| format!("{what}: {e:?}")
}

/// Allocates and initialises the buffers, runs the operations (checking after each), frees.
fn run_program(ctx: &Context<'_>, streams: &[Stream<'_>], program: &Program) -> Result<(), String> {
    let mut model = Model {
        dev: (0..program.dev_lens.len())
            .map(|i| pattern(0x80 + i as u32, program.dev_lens[i]))
            .collect(),
        host: (0..program.hosts.len())
            .map(|i| pattern(1 + i as u32, program.hosts[i].1))
            .collect(),
    };
    let mut buffers = Buffers {
        dev: Vec::new(),
        host: Vec::new(),
    };
    for (i, &len) in program.dev_lens.iter().enumerate() {
        let mut buffer = ctx
            .alloc::<u32>(len, MallocPolicy::HugeFirst)
            .map_err(err("alloc"))?;
        ctx.copy(&mut buffer, &model.dev[i])
            .map_err(err("initial H2D"))?;
        buffers.dev.push(buffer);
    }
    for (i, &(kind, len)) in program.hosts.iter().enumerate() {
        buffers.host.push(match kind {
            HostKind::Vec => HostMem::Vec(model.host[i].clone()),
            HostKind::Pinned => {
                let mut pinned = ctx.alloc_host::<u32>(len).map_err(err("alloc_host"))?;
                pinned.copy_from_slice(&model.host[i]);
                HostMem::Pinned(pinned)
            }
        });
    }
    check(ctx, &buffers, &model, "setup")?;

    for (n, op) in program.ops.iter().enumerate() {
        let step = format!("op {n}");
        match op {
            &Op::Copy { dst, src } => {
                let (mut dsts, srcs) = buffers.split(&[dst], &[src]);
                let result = with_dst!(&mut dsts[0], d => with_src!(&srcs[0], s => ctx.copy(d, s)));
                drop((dsts, srcs));
                let legal = model.copy(dst, src, None);
                expect_outcome(result, legal, &step, "copy")?;
            }
            &Op::Memset { dev, value } => {
                ctx.memset(&mut buffers.dev[dev], value)
                    .map_err(|e| format!("{step} (memset): {e:?}"))?;
                model.dev[dev].fill(memset_word(value));
            }
            Op::Scope(ops) => {
                let errors = run_scope(ctx, streams, &mut buffers, ops)
                    .map_err(|e| format!("{step} (async scope): {e:?}"))?;
                for (k, (op, error)) in ops.iter().zip(errors).enumerate() {
                    let result = error.map_or(Ok(()), Err);
                    let what = format!("async #{k}");
                    let legal = match *op {
                        AsyncOp::Copy { dst, src, .. } => model.copy(dst, src.view(), None),
                        AsyncOp::Map { dst, src, .. } => model.copy(dst, src.view(), Some(kernel)),
                        AsyncOp::Memset { dst, value, .. } => {
                            let on_device = matches!(dst.buf, Buf::Dev(_));
                            if on_device {
                                model.get_mut(dst).fill(memset_word(value));
                            }
                            on_device
                        }
                    };
                    expect_outcome(result, legal, &step, &what)?;
                }
            }
        }
        check(ctx, &buffers, &model, &step)?;
    }

    let end = "the end";
    let Buffers { dev, host } = buffers;
    for buffer in dev {
        buffer.free().map_err(|f| format!("{end}: free: {f:?}"))?;
    }
    for buffer in host {
        if let HostMem::Pinned(pinned) = buffer {
            pinned
                .free()
                .map_err(|f| format!("{end}: free_host: {f:?}"))?;
        }
    }
    Ok(())
}

pub(crate) fn run_case(program: &Program) -> Result<(), String> {
    let session = Session::start();
    let outcome = execute(&session, program);
    let live = session.sim.live_objects();
    let findings = session.finish();
    outcome?;
    if !findings.is_empty() {
        return Err(format!("checker findings: {findings:#?}"));
    }
    if live != 0 {
        return Err(format!("{live} live runtime object(s) after release"));
    }
    Ok(())
}
