//! Chrome trace-event JSON (chrome://tracing, Perfetto), written at aclFinalize when
//! ACLSIM_TRACE=/path/file.json is set: one track per stream, one span per task, a flow
//! arrow from each record to every wait it released.
//!
//! Layer: base (with `pt` and `calls`); imports nothing of the crate.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::Duration;

/// Cap on recorded spans (memory bound for long runs).
const MAX_SPANS: usize = 1_000_000;

/// One executed task. Times are whole nanoseconds since `aclInit`, so that the flow
/// arithmetic below is exact (the JSON prints microseconds with three decimals).
pub struct Span {
    pub tid: u64,
    pub task: u64,
    pub name: String,
    pub ts_ns: u64,
    /// At least 1 ns: a zero-length slice would not enclose its flow points.
    pub dur_ns: u64,
    /// For a wait: the task id of the record that released it.
    pub flow_from: Option<u64>,
    pub is_record: bool,
}

/// Microseconds with three decimals, from nanoseconds (no float rounding).
fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

pub struct Trace {
    pub path: String,
    pub tracks: Vec<(u64, String)>,
    pub spans: Vec<Span>,
}

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o
}

impl Trace {
    pub fn new(path: String) -> Self {
        Trace {
            path,
            tracks: Vec::new(),
            spans: Vec::new(),
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub fn span(
        &mut self,
        tid: u64,
        task: u64,
        name: String,
        start: Duration,
        dur: Duration,
        flow_from: Option<u64>,
        is_record: bool,
    ) {
        if self.spans.len() >= MAX_SPANS {
            return;
        }
        self.spans.push(Span {
            tid,
            task,
            name,
            ts_ns: u64::try_from(start.as_nanos()).unwrap_or(u64::MAX),
            dur_ns: u64::try_from(dur.as_nanos()).unwrap_or(u64::MAX).max(1),
            flow_from,
            is_record,
        });
    }

    pub fn to_json(&self) -> String {
        let mut o = String::from("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
        let mut first = true;
        let mut push = |o: &mut String, s: String| {
            if !first {
                o.push_str(",\n");
            }
            first = false;
            o.push_str(&s);
        };
        push(
            &mut o,
            "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"aclsim\"}}"
                .to_string(),
        );
        for (tid, name) in &self.tracks {
            push(
                &mut o,
                format!(
                    "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":{tid},\"args\":{{\"name\":\"{}\"}}}}",
                    esc(name)
                ),
            );
        }
        // Record task id -> (track, start, duration).
        let mut records: HashMap<u64, (u64, u64, u64)> = HashMap::new();
        for s in &self.spans {
            if s.is_record {
                records.insert(s.task, (s.tid, s.ts_ns, s.dur_ns));
            }
            push(
                &mut o,
                format!(
                    "{{\"name\":\"{}\",\"cat\":\"task\",\"ph\":\"X\",\"pid\":1,\"tid\":{},\"ts\":{},\"dur\":{},\"args\":{{\"task\":{}}}}}",
                    esc(&s.name),
                    s.tid,
                    us(s.ts_ns),
                    us(s.dur_ns),
                    s.task
                ),
            );
        }
        for s in &self.spans {
            let Some(rec) = s.flow_from else { continue };
            let Some(&(rtid, rts, rdur)) = records.get(&rec) else {
                continue;
            };
            // Flow events bind to the slice enclosing their timestamp (the "f" end with
            // "bp":"e"), so both ends lie inside their slices: the start in the middle of
            // the record, the end just before the wait's release (the end of the wait
            // slice). The wait is released only after the record ran, so the arrow goes
            // forward in time; `max` keeps it so should the clock ever disagree.
            let from = rts + rdur / 2;
            let release = s.ts_ns + s.dur_ns;
            let to = (release - 1).max(s.ts_ns).max(from);
            push(
                &mut o,
                format!(
                    "{{\"name\":\"event\",\"cat\":\"flow\",\"ph\":\"s\",\"id\":{},\"pid\":1,\"tid\":{rtid},\"ts\":{}}}",
                    s.task,
                    us(from)
                ),
            );
            push(
                &mut o,
                format!(
                    "{{\"name\":\"event\",\"cat\":\"flow\",\"ph\":\"f\",\"bp\":\"e\",\"id\":{},\"pid\":1,\"tid\":{},\"ts\":{}}}",
                    s.task,
                    s.tid,
                    us(to)
                ),
            );
        }
        o.push_str("\n]}\n");
        o
    }

    pub fn write(&self) -> std::io::Result<()> {
        std::fs::write(&self.path, self.to_json())
    }
}
