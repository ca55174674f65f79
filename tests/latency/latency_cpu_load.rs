//! Why kernel timestamps: the same UDP probe run, unloaded and then with busy threads on the
//! prober's core. User-space RTTs grow with the scheduler's wake-up delay; kernel-timestamped RTTs stay
//! near the unloaded value. Asserts the direction (relative growth), never a wall-clock figure.

use routerbench::latency::server::Bounds;
use routerbench::latency::{TestConfig, TestKind};
use routerbench::results::latency::ProbeResult;
use routerbench::server::latency_only::spawn_in_process;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The prober runs in its own thread pinned to one CPU, the one the busy threads are pinned to;
/// the threads it spawns inherit the pinning. Without pinning, whether the scheduler ever
/// delays the prober depends on where it puts the threads: on CI, with 8 busy threads spread
/// over 2 cores, the user-space p99 did not move at all. Sharing one core with busy threads
/// is the CPU-starved router of the seed, and it makes the delay certain.
fn udp_series(port: u16, cpu: usize) -> ProbeResult {
    std::thread::spawn(move || {
        pin_to(cpu);
        udp_series_here(port)
    })
    .join()
    .unwrap()
}

/// The first CPU this process may run on (CPU 0 unless a cpuset says otherwise).
fn first_allowed_cpu() -> usize {
    let cpus = routerbench::util::affinity::allowed_cpus().expect("sched_getaffinity");
    *cpus.first().expect("at least one allowed CPU")
}

fn pin_to(cpu: usize) {
    routerbench::util::affinity::pin_current_thread(cpu).expect("sched_setaffinity");
}

fn udp_series_here(port: u16) -> ProbeResult {
    let cfg = TestConfig {
        kind: TestKind::Ping,
        host: "127.0.0.1".into(),
        port,
        length: Duration::from_secs(3),
        probe_interval: Duration::from_millis(10),
        ..TestConfig::default()
    };
    let r = routerbench::latency::run_test(&cfg, &routerbench::util::progress::NoProgress).unwrap();
    r.probes
        .into_iter()
        .find(|p| p.kind == "udp")
        .expect("UDP series")
}

fn get(v: Option<f64>) -> f64 {
    v.expect("samples")
}

/// One idle run and one loaded run; returns (user p99 growth, kernel p99 growth), after the
/// per-sample checks that hold on every attempt.
fn measure(port: u16, cpu: usize) -> (f64, f64) {
    let idle = udp_series(port, cpu);
    assert_eq!(idle.timestamps, "kernel", "kernel timestamps in use");

    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    let busy = 4 * cores;
    let stop = Arc::new(AtomicBool::new(false));
    let spinners: Vec<_> = (0..busy)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                pin_to(cpu);
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
            })
        })
        .collect();
    let loaded = udp_series(port, cpu);
    stop.store(true, Ordering::Relaxed);
    for s in spinners {
        s.join().unwrap();
    }

    println!(
        "{busy} busy threads and the prober on CPU {cpu} of {cores}; UDP probes every 10 ms for 3 s (ms):"
    );
    println!(
        "{:<22} {:>9} {:>9} {:>9} {:>9}",
        "", "mean", "p90", "p99", "max"
    );
    for (name, s) in [
        ("kernel RTT, idle", &idle.rtt_ms),
        ("kernel RTT, loaded", &loaded.rtt_ms),
        ("user RTT, idle", &idle.rtt_user_ms),
        ("user RTT, loaded", &loaded.rtt_user_ms),
    ] {
        println!(
            "{name:<22} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
            s.mean.unwrap_or(f64::NAN),
            s.p90.unwrap_or(f64::NAN),
            s.p99.unwrap_or(f64::NAN),
            s.max.unwrap_or(f64::NAN)
        );
    }
    assert!(
        loaded.received > 100,
        "probes got through under load ({})",
        loaded.received
    );
    // Sample by sample, under load, the kernel RTT never exceeds the user-space one.
    let mut fewer = 0;
    let mut n = 0;
    for p in &loaded.samples {
        if let (Some(k), Some(u)) = (p.rtt_ms, p.rtt_user_ms) {
            n += 1;
            fewer += (k <= u + 1e-6) as usize;
        }
    }
    assert_eq!(
        fewer,
        n,
        "kernel RTT above user-space RTT in {} of {n} samples",
        n - fewer
    );

    let user_growth = get(loaded.rtt_user_ms.p99) - get(idle.rtt_user_ms.p99);
    let kernel_growth = get(loaded.rtt_ms.p99) - get(idle.rtt_ms.p99);
    let user_mean_growth = get(loaded.rtt_user_ms.mean) - get(idle.rtt_user_ms.mean);
    let kernel_mean_growth = get(loaded.rtt_ms.mean) - get(idle.rtt_ms.mean);
    println!(
        "growth under load: p99 user-space {user_growth:.3} ms, kernel {kernel_growth:.3} ms; \
         mean user-space {user_mean_growth:.3} ms, kernel {kernel_mean_growth:.3} ms"
    );
    (user_growth, kernel_growth)
}

#[test]
fn kernel_rtt_stays_flat_while_user_space_rtt_grows_under_cpu_load() {
    // It loads the machine or measures against theory: not at once with the others that do
    // (tests/support/mod.rs, alone).
    let _alone = crate::support::alone();
    let (addr, svc) = spawn_in_process("127.0.0.1:0".parse().unwrap(), Bounds::default()).unwrap();
    let cpu = first_allowed_cpu();
    // The design's reason: CPU load shows up in user-space RTTs, not in kernel-stamped ones.
    // The tail (p99) is where scheduling delay lives; the kernel tail must grow less than half
    // as much as the user-space tail. The machine is shared: load from outside this test can
    // raise the idle tail too, so a miss is measured once more and fails only if both miss.
    let holds = |(user, kernel): (f64, f64)| user > 0.0 && kernel < user / 2.0;
    let first = measure(addr.port(), cpu);
    let verdict = if holds(first) {
        first
    } else {
        println!("missed ({first:?}); measuring once more");
        measure(addr.port(), cpu)
    };
    svc.shutdown();
    let (user_growth, kernel_growth) = verdict;
    assert!(
        user_growth > 0.0,
        "user-space RTT p99 did not grow under CPU load ({user_growth:.3} ms)"
    );
    assert!(
        kernel_growth < user_growth / 2.0,
        "kernel RTT p99 grew {kernel_growth:.3} ms, user-space {user_growth:.3} ms"
    );
}
