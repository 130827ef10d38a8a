//! Helpers shared by the benchmark binaries in `src/bin`.

pub mod counting;
pub mod data;
pub mod posteriors;

use std::time::Instant;

/// Median seconds per call of `f` over 5 batches of about 0.1 s each (after one warm-up call
/// and a calibration of the batch length).
pub fn time_call(f: impl FnMut()) -> f64 {
    time_call_on(wall_seconds, f)
}

/// [`time_call`] on another clock: `clock()` is a time in seconds, e.g. [`wall_seconds`] or
/// [`thread_cpu_seconds`].
pub fn time_call_on(clock: fn() -> f64, mut f: impl FnMut()) -> f64 {
    f();
    let mut n = 1usize;
    let mut dt;
    loop {
        let t0 = clock();
        for _ in 0..n {
            f();
        }
        dt = clock() - t0;
        if dt >= 0.025 || n >= 1 << 24 {
            break;
        }
        n *= 4;
    }
    let reps = ((n as f64) * 0.1 / dt.max(1e-9)).max(1.0) as usize;
    let mut batches: Vec<f64> = (0..5)
        .map(|_| {
            let t0 = clock();
            for _ in 0..reps {
                f();
            }
            (clock() - t0) / reps as f64
        })
        .collect();
    batches.sort_by(|a, b| a.total_cmp(b));
    batches[2]
}

/// Seconds on a monotonic wall clock since the first call.
pub fn wall_seconds() -> f64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_secs_f64()
}

/// Seconds the calling thread has spent on a CPU (Linux: `/proc/thread-self/schedstat`, in
/// nanoseconds; NaN elsewhere). Unlike wall time it does not grow while other processes hold
/// the CPU, so it stays comparable on a loaded machine (cache and memory contention aside).
pub fn thread_cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(f64::NAN, |ns| ns * 1e-9)
}

/// CPU seconds of the whole process, all threads (Linux: user + system time of
/// `/proc/self/stat`, in clock ticks of 1/100 s; NaN elsewhere).
pub fn process_cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return f64::NAN;
    };
    // Fields after the command name (which may hold spaces) start at the state, field 3.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok());
    match (ticks(11), ticks(12)) {
        (Some(user), Some(system)) => (user + system) / 100.0,
        _ => f64::NAN,
    }
}

/// Single-thread memory bandwidth in GB/s (10⁹ bytes per second) by a STREAM-style triad,
/// `a[i] = b[i] + s * c[i]` over three arrays of `n` doubles, best of `runs` passes. Bytes are
/// counted as STREAM counts them: 24 per element (read `b` and `c`, write `a`), not counting
/// the write-allocate read of `a`. `n` should make the arrays far larger than the last-level
/// cache.
pub fn triad_bandwidth(n: usize, runs: usize) -> f64 {
    let mut a = vec![0.0f64; n];
    let b: Vec<f64> = (0..n).map(|i| (i % 1024) as f64 * 0.5).collect();
    let c: Vec<f64> = (0..n).map(|i| (i % 977) as f64 * 0.25).collect();
    let s = std::hint::black_box(3.0f64);
    let mut best = f64::INFINITY;
    for _ in 0..runs.max(1) {
        let t0 = Instant::now();
        for ((ai, bi), ci) in a.iter_mut().zip(&b).zip(&c) {
            *ai = bi + s * ci;
        }
        std::hint::black_box(&mut a);
        best = best.min(t0.elapsed().as_secs_f64());
    }
    // A check that the stores happened (and a use of every array).
    assert_eq!(a[n - 1], b[n - 1] + s * c[n - 1]);
    (24 * n) as f64 / best / 1e9
}

/// CPU time of the calling thread in nanoseconds (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`),
/// so figures mean something on a shared, loaded machine; `None` where unavailable.
#[cfg(target_os = "linux")]
pub fn thread_cpu_ns() -> Option<u64> {
    #[repr(C)]
    struct Timespec {
        tv_sec: i64,
        tv_nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clock_id: i32, tp: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut ts = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// See the Linux version; `None` elsewhere.
#[cfg(not(target_os = "linux"))]
pub fn thread_cpu_ns() -> Option<u64> {
    None
}
