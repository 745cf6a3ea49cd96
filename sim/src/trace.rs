//! Chrome trace-event JSON (chrome://tracing, Perfetto), written at aclFinalize when
//! ACLSIM_TRACE=/path/file.json is set: one track per stream, one span per task, a flow
//! arrow from each record to every wait it released.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::Duration;

/// Cap on recorded spans (memory bound for long runs).
const MAX_SPANS: usize = 1_000_000;

pub struct Span {
    pub tid: u64,
    pub task: u64,
    pub name: String,
    pub ts_us: f64,
    pub dur_us: f64,
    pub flow_from: Option<u64>,
    pub is_record: bool,
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
            ts_us: start.as_secs_f64() * 1e6,
            dur_us: dur.as_secs_f64() * 1e6,
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
        let mut records: HashMap<u64, (u64, f64)> = HashMap::new();
        for s in &self.spans {
            if s.is_record {
                records.insert(s.task, (s.tid, s.ts_us + s.dur_us));
            }
            push(
                &mut o,
                format!(
                    "{{\"name\":\"{}\",\"cat\":\"task\",\"ph\":\"X\",\"pid\":1,\"tid\":{},\"ts\":{:.3},\"dur\":{:.3},\"args\":{{\"task\":{}}}}}",
                    esc(&s.name),
                    s.tid,
                    s.ts_us,
                    s.dur_us.max(0.001),
                    s.task
                ),
            );
        }
        for s in &self.spans {
            let Some(rec) = s.flow_from else { continue };
            let Some((rtid, rts)) = records.get(&rec) else {
                continue;
            };
            // The arrow starts inside the record span and ends inside the wait span.
            push(
                &mut o,
                format!(
                    "{{\"name\":\"event\",\"cat\":\"flow\",\"ph\":\"s\",\"id\":{},\"pid\":1,\"tid\":{rtid},\"ts\":{:.3}}}",
                    s.task,
                    (rts - 0.0005).max(0.0)
                ),
            );
            push(
                &mut o,
                format!(
                    "{{\"name\":\"event\",\"cat\":\"flow\",\"ph\":\"f\",\"bp\":\"e\",\"id\":{},\"pid\":1,\"tid\":{},\"ts\":{:.3}}}",
                    s.task,
                    s.tid,
                    s.ts_us + s.dur_us.max(0.001) / 2.0
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
