//! The media rules the executor and the entry points share (DV6, DV10): what a pending media
//! task holds and gives back, its result in its output description, and the findings of a
//! host access to memory a pending task reads or writes.
//!
//! Layer: rules; imports the plain data (`state`), nothing above.

use crate::state::dvpp::{CHANNEL_BASE, Held, PIC_BASE};
use crate::state::{Rt, STREAM_BASE, handle};

/// The call of the tasks that write their output description (DV6).
pub(crate) const DECODE: &str = "acldvppJpegDecodeAsync";

/// Media task `id` is done (or dropped): releases what it held; objects destroyed meanwhile
/// (DV10) go now.
pub(crate) fn release(rt: &mut Rt, id: u64) {
    let d = &mut rt.dvpp;
    let Some(held) = d.tasks.remove(&id) else {
        return;
    };
    if let Some(c) = d.channels.get_mut(&held.channel) {
        c.uses = c.uses.saturating_sub(1);
        if c.destroyed && c.uses == 0 {
            d.channels.remove(&held.channel);
        }
    }
    for p in &held.pics {
        // Another decode of the same description may still be pending (on another stream):
        // it writes it now (DV6).
        let next_writer = d
            .tasks
            .iter()
            .rev()
            .find(|(_, t)| t.call == DECODE && t.pics.first() == Some(p))
            .map(|(k, _)| *k);
        if let Some(pic) = d.pics.get_mut(p) {
            pic.uses = pic.uses.saturating_sub(1);
            if pic.written_by == Some(id) {
                pic.written_by = next_writer;
            }
            if pic.destroyed && pic.uses == 0 {
                d.pics.remove(p);
            }
        }
    }
    if let Some(cfg) = held.config
        && let Some(c) = d.configs.get_mut(&cfg)
    {
        c.uses = c.uses.saturating_sub(1);
        if c.destroyed && c.uses == 0 {
            d.configs.remove(&cfg);
        }
    }
}

/// Holds what media task `id` uses (DV6, DV10).
pub(crate) fn acquire(rt: &mut Rt, id: u64, held: Held) {
    let d = &mut rt.dvpp;
    if let Some(c) = d.channels.get_mut(&held.channel) {
        c.uses += 1;
    }
    for p in &held.pics {
        if let Some(pic) = d.pics.get_mut(p) {
            pic.uses += 1;
        }
    }
    if let Some(cfg) = held.config
        && let Some(c) = d.configs.get_mut(&cfg)
    {
        c.uses += 1;
    }
    d.tasks.insert(id, held);
}

/// The task's result in its output description `desc` (DV6): 0 and, for a decode, the
/// width, height and strides it wrote; else the failure's code.
pub(crate) fn report_result(rt: &mut Rt, desc: u64, result: Result<Option<[u32; 4]>, i32>) {
    let Some(pic) = rt.dvpp.pics.get_mut(&desc) else {
        return;
    };
    match result {
        Ok(written) => {
            pic.ret_code = 0;
            if let Some([w, h, ws, hs]) = written {
                pic.width = w;
                pic.height = h;
                pic.width_stride = ws;
                pic.height_stride = hs;
            }
        }
        Err(code) => pic.ret_code = code as u32,
    }
}

fn overlaps(a: (usize, usize), b: (usize, usize)) -> bool {
    a.1 > 0 && b.1 > 0 && a.0 < b.0.saturating_add(b.1) && b.0 < a.0.saturating_add(a.1)
}

/// DV6: `call`, a synchronous host access, writes `write` and reads `read` while pending
/// media tasks read or write there. Finding only: the access goes on.
pub(crate) fn host_access(
    rt: &mut Rt,
    call: &str,
    write: (usize, usize),
    read: Option<(usize, usize)>,
) {
    if rt.dvpp.tasks.is_empty() {
        return;
    }
    let mut hits = Vec::new();
    for (id, t) in &rt.dvpp.tasks {
        let mut what = Vec::new();
        if t.reads.iter().chain(&t.writes).any(|r| overlaps(write, *r)) {
            what.push(format!("writes [{:#x}, +{})", write.0, write.1));
        }
        if let Some(r) = read.filter(|r| t.writes.iter().any(|w| overlaps(*r, *w))) {
            what.push(format!("reads [{:#x}, +{}), not yet written by", r.0, r.1));
        }
        if !what.is_empty() {
            hits.push(format!(
                "{call} {} memory of {} (task {id}) on stream {:#x}, which is pending: the input and output of a media task stay untouched until the task is done (synchronize the stream, or an event recorded after it, first)",
                what.join(" and "),
                t.call,
                handle(STREAM_BASE, t.stream)
            ));
        }
    }
    for msg in hits {
        rt.report("DV6", msg);
    }
}

/// DV10: `call` destroys (or frees) `what` while pending media tasks use it: the tasks,
/// named.
pub(crate) fn report_in_use(rt: &mut Rt, call: &str, what: String, users: &[u64]) {
    let tasks: Vec<String> = users
        .iter()
        .filter_map(|id| {
            rt.dvpp.tasks.get(id).map(|t| {
                format!(
                    "{} (task {id}) on stream {:#x}",
                    t.call,
                    handle(STREAM_BASE, t.stream)
                )
            })
        })
        .collect();
    rt.report(
        "DV10",
        format!(
            "{call}: {what} while {} pending media task(s) use it: {}. Destroy or free it only once every task using it is done (synchronize the stream first); the simulator keeps it until then",
            users.len(),
            tasks.join(", ")
        ),
    );
}

/// The pending tasks holding channel `id`, picture description `pic`, or configuration
/// `cfg` (whichever is given).
pub(crate) fn users(rt: &Rt, channel: Option<u64>, pic: Option<u64>, cfg: Option<u64>) -> Vec<u64> {
    rt.dvpp
        .tasks
        .iter()
        .filter(|(_, t)| {
            channel.is_some_and(|c| t.channel == c)
                || pic.is_some_and(|p| t.pics.contains(&p))
                || cfg.is_some_and(|c| t.config == Some(c))
        })
        .map(|(id, _)| *id)
        .collect()
}

/// The pending tasks holding memory `[p, +n)`.
pub(crate) fn memory_users(rt: &Rt, p: usize, n: usize) -> Vec<u64> {
    rt.dvpp
        .tasks
        .iter()
        .filter(|(_, t)| {
            t.reads
                .iter()
                .chain(&t.writes)
                .any(|r| overlaps((p, n), *r))
        })
        .map(|(id, _)| *id)
        .collect()
}

/// Names for messages.
pub(crate) fn channel_name(id: u64) -> String {
    format!("channel description {:#x}", handle(CHANNEL_BASE, id))
}
pub(crate) fn pic_name(id: u64) -> String {
    format!("picture description {:#x}", handle(PIC_BASE, id))
}

/// The code a media task that does not run to the end fails with (P3b): the next
/// synchronisation of its stream returns it, and its output description's return code
/// holds it (sim choice; the board's value is open, docs/media.md question 3).
pub const TASK_FAILED: i32 = crate::state::code::RT_INTERNAL_ERROR;
