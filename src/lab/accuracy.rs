//! `lab measure`: one bulk TCP run through the bottleneck with UDP round-trip probes alongside,
//! compared with theory (buffer·8/rate, goodput 1448/1514 × rate). The proof that the lab is
//! ground truth, runnable without routerbench's own latency test.

use super::error::{Context, LabError, Result};
use super::load::{LoadGenerator, LoadSpec};
use super::probe::{EchoServer, ProbePlan, probe};
use super::topology::qdisc_stats;
use super::{DEV_RTR_LAN, DEV_RTR_WAN, tc_shaper, theory};
use crate::results::lab::{AccuracyPoint, LabConfig};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::Arc;
use std::time::Duration;

/// One accuracy run.
#[derive(Debug, Clone)]
pub struct MeasurePlan {
    pub download: bool,
    pub flows: u32,
    pub seconds: u32,
    /// Probing starts this long after the load, so slow start is over.
    pub warmup: Duration,
    pub probe_interval: Duration,
    pub cc: String,
}

impl Default for MeasurePlan {
    /// docs/protocols/netns-lab.md's `measure`: 10 s, 2 s warm-up, probes every 0.1 s, cubic, upload, 1 flow.
    fn default() -> Self {
        Self {
            download: false,
            flows: 1,
            seconds: 10,
            warmup: Duration::from_secs(2),
            probe_interval: Duration::from_millis(100),
            cc: "cubic".into(),
        }
    }
}

const ECHO_PORT: u16 = 7007;
const LOAD_PORT: u16 = 5201;

/// Runs the load and the probes; the lab must be up and shaped in the measured direction.
pub fn measure(
    cfg: &LabConfig,
    plan: &MeasurePlan,
    generator: Arc<dyn LoadGenerator>,
) -> Result<AccuracyPoint> {
    let (rate, dev) = if plan.download {
        (cfg.down_rate_bps, DEV_RTR_LAN)
    } else {
        (cfg.up_rate_bps, DEV_RTR_WAN)
    };
    let Some(rate) = rate else {
        return Err(LabError::State(
            "the lab is unshaped in that direction: bring it up with --rate/--down-rate".into(),
        ));
    };
    if plan.seconds < 4
        || plan.warmup + Duration::from_secs(2) > Duration::from_secs(plan.seconds.into())
    {
        return Err(LabError::Input(
            "measure needs at least 4 s and 2 s more than the warm-up".into(),
        ));
    }
    let wan_ip: Ipv4Addr = cfg.wan_ip.parse().context("lab WAN address")?;
    let target = SocketAddrV4::new(wan_ip, ECHO_PORT);
    let server = EchoServer::start(
        &cfg.ns_wan,
        wan_ip,
        ECHO_PORT,
        Duration::from_secs(u64::from(plan.seconds) + 60),
    )?;
    let idle_plan = ProbePlan {
        count: 20,
        interval: plan.probe_interval,
        timeout: Duration::from_secs(1),
    };
    let (idle_sent, idle) = probe(&cfg.ns_lan, target, idle_plan)?;
    let drops0 = qdisc_stats(cfg, dev)
        .map(|q| tc_shaper::total_drops(&q))
        .ok();

    let load = LoadSpec {
        flows: plan.flows,
        download: plan.download,
        seconds: plan.seconds,
        cc: plan.cc.clone(),
        port: LOAD_PORT,
    };
    let (cfg2, gen2) = (cfg.clone(), generator.clone());
    let load_thread = std::thread::spawn(move || gen2.run(&cfg2, &load));
    std::thread::sleep(plan.warmup);
    let probe_span =
        Duration::from_secs(plan.seconds.into()) - plan.warmup - Duration::from_secs(1);
    let count = (probe_span.as_secs_f64() / plan.probe_interval.as_secs_f64()).max(5.0) as u32;
    let loaded_plan = ProbePlan {
        count,
        interval: plan.probe_interval,
        timeout: Duration::from_secs(2),
    };
    let probed = probe(&cfg.ns_lan, target, loaded_plan);
    let outcome = load_thread
        .join()
        .map_err(|_| LabError::Panicked("the load thread panicked"))??;
    let (loaded_sent, loaded) = probed?;
    server.stop()?;
    let drops1 = qdisc_stats(cfg, dev)
        .map(|q| tc_shaper::total_drops(&q))
        .ok();

    let idle = theory::summarize(idle_sent, &idle);
    let loaded = theory::summarize(loaded_sent, &loaded);
    let theory_ms = theory::queue_delay_ms(cfg.buffer_bytes, rate);
    let increase = |x: Option<f64>| match (x, idle.median_ms) {
        (Some(l), Some(i)) => Some(l - i),
        _ => None,
    };
    let (med_inc, p99_inc) = (increase(loaded.median_ms), increase(loaded.p99_ms));
    let ratio = |x: Option<f64>| x.filter(|_| theory_ms > 0.0).map(|d| d / theory_ms);
    Ok(AccuracyPoint {
        direction: if plan.download { "down" } else { "up" }.into(),
        flows: plan.flows,
        cc: plan.cc.clone(),
        rate_bps: rate,
        buffer_bytes: cfg.buffer_bytes,
        goodput_bps: outcome.goodput_bps,
        goodput_ratio: outcome.goodput_bps / rate as f64,
        goodput_theory_ratio: theory::goodput_ratio(),
        nat: cfg.nat,
        median_increase_ms: med_inc,
        p99_increase_ms: p99_inc,
        median_ratio: ratio(med_inc),
        p99_ratio: ratio(p99_inc),
        idle,
        loaded,
        theory_ms,
        retransmits: outcome.retransmits,
        qdisc_drops: match (drops0, drops1) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        },
        method: format!(
            "{} + UDP echo probes (kernel rx timestamps, server hold time subtracted)",
            generator.describe()
        ),
    })
}
