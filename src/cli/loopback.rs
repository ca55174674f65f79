//! `routerbench loopback`: our server and client in one process over 127.0.0.1 (or ::1), one
//! thread per stream; iperf3-style text or `--json` in iperf3's -J schema.

use crate::cli::common::iperf3_opts::{TestOpts, TextIntervals};
use crate::cli::common::signal_flag::SignalFlag;
use crate::iperf3::IntervalSink;
use crate::report::export::iperf3::Iperf3Json;
use crate::results::throughput::{Connected, Interval, ThroughputResult};
use crate::server::loopback::{self, LoopbackConfig};
use crate::util::progress::Progress;
use clap::Args;
use portable_atomic::AtomicU64;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Debug, Args)]
pub struct LoopbackArgs {
    #[command(flatten)]
    pub test: TestOpts,
    /// Use ::1 instead of 127.0.0.1.
    #[arg(short = '6', long = "ipv6")]
    pub ipv6: bool,
    #[command(flatten)]
    pub router: crate::cli::common::router::RouterArgs,
    /// Measuring knob: every receiver's SO_RCVLOWAT in bytes (1: the kernel's default) instead
    /// of the chosen one (docs/throughput.md).
    #[arg(long, hide = true, value_name = "BYTES")]
    pub rcvlowat: Option<usize>,
}

/// The library config for these arguments.
pub fn config(args: &LoopbackArgs) -> anyhow::Result<LoopbackConfig> {
    let t = &args.test;
    if t.bytes.is_some() || t.blockcount.is_some() {
        anyhow::bail!("loopback is time-based: use -t instead of -n/-k");
    }
    Ok(LoopbackConfig {
        time: t.time,
        omit: t.omit,
        parallel: t.parallel,
        reverse: t.reverse,
        bidir: t.bidir,
        udp: t.udp,
        bandwidth: t.bitrate.map(|b| b.0).unwrap_or(0),
        len: t.length.map(|l| l.min(u32::MAX as u64) as u32),
        ipv6: args.ipv6,
        window: t.window.map(|w| w.min(u32::MAX as u64) as u32),
        tos: t.tos_byte()?,
        congestion: t.congestion.clone(),
        interval: t.interval,
        affinity: t.affinity.map(|(n, m)| (n, m.unwrap_or(n))),
        zerocopy: t.zerocopy,
        skip_rx_copy: t.skip_rx_copy,
        gsro: t.gsro,
    })
}

pub fn run(args: LoopbackArgs) -> anyhow::Result<i32> {
    crate::util::signals::install();
    crate::cli::common::iperf3_opts::check_test_opts(&args.test)?;
    let cfg = config(&args)?;
    if let Some(v) = args.rcvlowat {
        crate::iperf3::stream::RCVLOWAT_OVERRIDE.store(v.max(1), Ordering::Relaxed);
    }
    let out = crate::cli::common::log_sink::LogSink::for_client(None, None, false, false)?;
    let text = TextIntervals::new(&out, cfg.parallel as usize);
    let quiet = crate::iperf3::NoIntervals;
    args.test.json.check()?;
    let sink: &dyn crate::iperf3::IntervalSink = if args.test.json.on_stdout() {
        &quiet
    } else {
        &text
    };
    if !args.test.json.on_stdout() {
        crate::outln!(
            "Loopback test over {}, {} s, {} stream(s)",
            if args.ipv6 { "::1" } else { "127.0.0.1" },
            cfg.time,
            cfg.parallel
        );
    }
    let stop = SignalFlag::default();
    let secs = f64::from(cfg.time) + f64::from(cfg.omit);
    let remote = crate::cli::common::router::start_router(
        &args.router,
        std::time::Duration::from_secs_f64(secs.max(0.0)),
    )?;
    let t0 = crate::util::time::unix_now_f64();
    let system_info = crate::iperf3::system_info();
    let outcome = loopback::run_with_sink(&cfg, sink, &stop.0);
    let rc = match &outcome {
        Ok(r) => {
            if !args.test.json.on_stdout() {
                crate::out!("{}", crate::report::iperf3::render_final_verbose(r));
            }
            if args.test.json.is_set() {
                let doc = Iperf3Json::new(&system_info).text(r);
                args.test.json.write_text(&doc, |d| crate::out!("{d}"))?;
            }
            if r.interrupted {
                crate::errln!(
                    "routerbench: loopback interrupted: the result covers the part measured"
                );
                1
            } else {
                0
            }
        }
        Err(e) => {
            crate::errln!("routerbench: loopback failed: {e}");
            1
        }
    };
    // The router's view after the test's own output.
    crate::cli::common::router::finish_throughput(
        &args.router,
        remote,
        t0,
        secs,
        args.test.json.on_stdout(),
        outcome.as_ref().ok(),
    )?;
    Ok(rc)
}

/// Shows each interval's bitrate as the progress line, and passes it on to `inner`.
pub struct ProgressIntervals<'a> {
    pub progress: &'a dyn Progress,
    pub inner: &'a dyn IntervalSink,
    n: AtomicU64,
}

impl<'a> ProgressIntervals<'a> {
    pub fn new(progress: &'a dyn Progress, inner: &'a dyn IntervalSink) -> Self {
        ProgressIntervals {
            progress,
            inner,
            n: AtomicU64::new(0),
        }
    }
}

impl IntervalSink for ProgressIntervals<'_> {
    fn started(&self, connected: &[Connected]) {
        self.inner.started(connected);
    }
    fn interval(&self, iv: &Interval) {
        let n = self.n.fetch_add(1, Ordering::Relaxed) + 1;
        let rate = crate::report::iperf3::bitrate(iv.sum.bits_per_second);
        self.progress.step(n, rate.trim());
        self.inner.interval(iv);
    }
}

/// The loopback test as a phase of `progress` (`routerbench run`): one step per interval,
/// with its bitrate.
pub fn run_with_progress(
    cfg: &LoopbackConfig,
    progress: &dyn Progress,
    sink: &dyn IntervalSink,
    stop: &AtomicBool,
) -> crate::iperf3::Result<ThroughputResult> {
    progress.phase("loopback", u64::from(cfg.time) + u64::from(cfg.omit));
    let outcome = loopback::run_with_sink(cfg, &ProgressIntervals::new(progress, sink), stop);
    progress.finish();
    outcome
}
