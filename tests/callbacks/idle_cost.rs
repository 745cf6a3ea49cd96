//! What idle report threads cost the host (C6): each waits in `aclrtProcessReport` with a
//! 10 ms timeout (so that `stop` is noticed), so an idle one wakes 100 times a second. This
//! measures the process's CPU time while 256 of them idle, and fails if they spin (a busy
//! loop would cost a whole core per thread).

use std::time::{Duration, Instant};

use ascend_typestate::ReportThread;

use crate::support::sim::Session;

/// User plus system CPU time of this process, from `/proc/self/stat` (clock ticks of 10 ms).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i).and_then(|f| f.parse::<u64>().ok()))
        .sum();
    Duration::from_millis(ticks * 10)
}

#[test]
fn idle_report_threads_cost_little_cpu_c6() {
    let session = Session::start();
    {
        let device = session.default_device(0);
        let threads: Vec<ReportThread<'_>> = (0..256)
            .map(|_| ReportThread::spawn(&device).unwrap())
            .collect();
        let streams: Vec<_> = threads
            .iter()
            .map(|t| t.subscribe(device.create_stream().unwrap()).unwrap())
            .collect();
        // Let them settle into their idle wait.
        std::thread::sleep(Duration::from_millis(300));
        let (cpu0, t0) = (cpu_time(), Instant::now());
        std::thread::sleep(Duration::from_secs(2));
        let (cpu, wall) = (cpu_time() - cpu0, t0.elapsed());
        let per_second_ms = cpu.as_secs_f64() * 1000.0 / wall.as_secs_f64();
        println!("256 idle report threads: {per_second_ms:.1} ms of CPU per second");
        // Spinning threads would take both cores (about 2,000 ms per second); measured in a
        // debug build: 275-300 ms per second (about 1.1 ms per thread: 100 wake-ups each).
        assert!(
            per_second_ms < 1000.0,
            "{per_second_ms:.1} ms CPU/s: spinning"
        );
        for stream in streams {
            stream.unsubscribe().unwrap().destroy().unwrap();
        }
        for thread in threads {
            thread.stop().unwrap();
        }
        device.reset().unwrap();
    }
    session.finish();
}
