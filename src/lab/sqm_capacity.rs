//! `lab capacity --qdisc cake`: the SQM capacity of this CPU, the highest shaped rate at which
//! the qdisc still delivers (goodput ≥ 0.95 × the TCP goodput the rate allows) with the p99
//! latency increase under 15 ms. Doubling from a start rate, then bisection, each point a
//! `lab measure` run (bulk TCP upload + UDP round-trip probes), re-measured once on a miss.

use super::accuracy::{MeasurePlan, measure};
use super::aqm_forwarder::{AqmPlace, AqmSpec, apply};
use super::error::{LabError, Result};
use super::load::LoadGenerator;
use super::topology::{LabSpec, up};
use crate::results::lab::{SearchStop, SqmCapacity, SqmPoint};
use aqm::QdiscKind;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Goodput needed, as a share of 1448/1514 × rate.
pub const GOODPUT_SHARE: f64 = 0.95;
/// p99 latency increase allowed, ms.
pub const P99_LIMIT_MS: f64 = 15.0;

/// How to search.
#[derive(Debug, Clone)]
pub struct SqmPlan {
    pub name: String,
    pub qdisc: QdiscKind,
    pub place: Option<AqmPlace>,
    pub flows: u32,
    pub seconds: u32,
    pub start_bps: u64,
    pub min_bps: u64,
    pub max_bps: u64,
    /// Bisection steps after the doubling phase.
    pub refine_steps: u32,
    /// Stop starting new points after this long.
    pub budget: Duration,
    pub cc: String,
    /// The routerbench binary for the userspace forwarder.
    pub exe: PathBuf,
    /// The router is a VM (`--router vm`): its kernel's qdisc, the VM rebooted per rate.
    pub vm: Option<super::vm::VmSpec>,
}

impl SqmPlan {
    pub fn new(name: &str, qdisc: QdiscKind, exe: PathBuf) -> Self {
        Self {
            name: name.into(),
            qdisc,
            place: None,
            flows: 4,
            seconds: 6,
            start_bps: 100_000_000,
            min_bps: 6_250_000,
            max_bps: NO_CEILING_BPS,
            refine_steps: 3,
            budget: Duration::from_secs(300),
            cc: "cubic".into(),
            exe,
            vm: None,
        }
    }
}

/// The search's ceiling when none is asked: far above any veth path (which carries 5-60
/// Gbit/s), so the search ends where a rate fails or the budget runs out, not at a number.
pub const NO_CEILING_BPS: u64 = 100_000_000_000;

/// The queue limit at `rate`: CAKE's own rule, 4 × rate × 100 ms, at least 300 KB, at most
/// 64 MB (from 1.28 Gbit/s on), so a search with no ceiling never asks a qdisc for gigabytes.
pub fn buffer_for(rate_bps: u64) -> u64 {
    (rate_bps / 8 * 4 / 10).clamp(300_000, 64_000_000)
}

fn pass(goodput_of_theory: f64, p99: Option<f64>) -> bool {
    goodput_of_theory >= GOODPUT_SHARE && p99.is_some_and(|p| p < P99_LIMIT_MS)
}

/// Sets the lab up at `rate` with the qdisc and measures one point (twice on a miss).
fn point(
    plan: &SqmPlan,
    rate: u64,
    generator: &Arc<dyn LoadGenerator>,
    place_seen: &mut String,
) -> Result<SqmPoint> {
    let spec = LabSpec {
        name: plan.name.clone(),
        up_rate_bps: Some(rate),
        down_rate_bps: Some(rate),
        buffer_bytes: buffer_for(rate),
        cc: plan.cc.clone(),
        ..LabSpec::default()
    };
    let cfg = if let Some(v) = &plan.vm {
        let mut v = v.clone();
        v.qdisc = plan.qdisc;
        let cfg = super::vm::up(&spec, &v)?;
        *place_seen = format!(
            "{} (VM router: {})",
            if v.userspace_aqm {
                "userspace"
            } else {
                "kernel"
            },
            cfg.router_vm
                .as_ref()
                .map_or(String::new(), |r| r.qdisc_up.clone())
        );
        cfg
    } else {
        let cfg = up(&spec)?;
        let st = apply(
            &cfg,
            &AqmSpec {
                qdisc: plan.qdisc,
                place: plan.place,
            },
            &plan.exe,
        )?;
        *place_seen = st.place;
        cfg
    };
    let mp = MeasurePlan {
        flows: plan.flows,
        seconds: plan.seconds,
        cc: plan.cc.clone(),
        ..MeasurePlan::default()
    };
    let theory = rate as f64 * crate::lab::theory::TCP_PAYLOAD / crate::lab::theory::ETHERNET_FRAME;
    let mut remeasured = false;
    let mut result = None;
    let fwd = || {
        super::aqm_forwarder::worker::read_stats(&plan.name).map(|s| {
            (
                s.up.cpu_ms + s.down.cpu_ms,
                (s.up.rx_frames + s.down.rx_frames) as f64,
            )
        })
    };
    for attempt in 0..2 {
        let before = fwd();
        let m = measure(&cfg, &mp, generator.clone())?;
        // The stats file is rewritten every 0.5 s: let the last counts land.
        std::thread::sleep(std::time::Duration::from_millis(600));
        let cpu = match (before, fwd()) {
            (Some((c0, n0)), Some((c1, n1))) if n1 > n0 => Some((c1 - c0) * 1e3 / (n1 - n0)),
            _ => None,
        };
        let g = m.goodput_bps / theory;
        let ok = pass(g, m.p99_increase_ms);
        result = Some(SqmPoint {
            rate_bps: rate,
            goodput_bps: m.goodput_bps,
            goodput_of_theory: g,
            p99_increase_ms: m.p99_increase_ms,
            pass: ok,
            remeasured,
            forwarder_cpu_us_per_packet: cpu,
        });
        if ok || attempt == 1 {
            break;
        }
        remeasured = true;
    }
    result.ok_or_else(|| LabError::State("no measurement".into()))
}

/// Runs the search; `on_point` sees each point as it is measured (for progress lines). The lab
/// `plan.name` is left up with the last configuration; the caller removes it.
pub fn search(
    plan: &SqmPlan,
    generator: Arc<dyn LoadGenerator>,
    on_point: &mut dyn FnMut(&SqmPoint),
) -> Result<SqmCapacity> {
    let t0 = Instant::now();
    let mut place = String::new();
    let mut points: Vec<SqmPoint> = Vec::new();
    let mut run = |rate: u64, points: &mut Vec<SqmPoint>| -> Result<bool> {
        let p = point(plan, rate, &generator, &mut place)?;
        on_point(&p);
        let ok = p.pass;
        points.push(p);
        Ok(ok)
    };
    let (capacity_bps, stopped_by) = bracket(plan, &mut || t0.elapsed(), &mut |rate| {
        run(rate, &mut points)
    })?;
    Ok(SqmCapacity {
        qdisc: plan.qdisc.name().into(),
        place,
        criteria: format!(
            "goodput >= {GOODPUT_SHARE} x 1448/1514 x rate and p99 latency increase < {P99_LIMIT_MS} ms"
        ),
        capacity_bps,
        points,
        method: format!(
            "{} TCP {} upload flows for {} s per point + UDP round-trip probes every 0.1 s; buffer 4 x rate x 100 ms (>= 300 KB); one re-measure on a miss",
            plan.flows, plan.cc, plan.seconds
        ),
        router: plan.vm.as_ref().map(vm_router_words),
        stopped_by: Some(stopped_by),
    })
}

/// The search itself, apart from the lab: doubling up from `plan.start_bps` (or halving down
/// when it fails) until a rate fails (passes), then bisecting between the last pass and the
/// first failure. `run` measures one rate and says whether it passed; `elapsed` is the time
/// since the search began (no new rate starts once it exceeds `plan.budget`). Returns the
/// highest passing rate and what ended the search.
fn bracket(
    plan: &SqmPlan,
    elapsed: &mut dyn FnMut() -> Duration,
    run: &mut dyn FnMut(u64) -> Result<bool>,
) -> Result<(Option<u64>, SearchStop)> {
    // The budget ended it; `failed`: after a rate had failed (then the capacity is bracketed).
    let out_of_time = |hi: Option<u64>| SearchStop::Budget {
        seconds: plan.budget.as_secs(),
        failed: hi.is_some(),
    };
    let (mut lo, mut hi): (Option<u64>, Option<u64>) = (None, None);
    let mut rate = plan.start_bps.clamp(plan.min_bps, plan.max_bps);
    let mut stop = SearchStop::StepLimit;
    // Doubling up (or halving down when the start already fails).
    for _ in 0..16 {
        if elapsed() > plan.budget {
            stop = out_of_time(hi);
            break;
        }
        if run(rate)? {
            lo = Some(rate);
            if hi.is_some() {
                stop = SearchStop::Bracketed;
                break;
            }
            if rate >= plan.max_bps {
                stop = SearchStop::MaxRate { bps: plan.max_bps };
                break;
            }
            rate = rate.saturating_mul(2).min(plan.max_bps);
        } else {
            hi = Some(rate);
            if lo.is_some() {
                stop = SearchStop::Bracketed;
                break;
            }
            if rate <= plan.min_bps {
                stop = SearchStop::MinRate { bps: plan.min_bps };
                break;
            }
            rate = (rate / 2).max(plan.min_bps);
        }
    }
    if let (Some(mut l), Some(mut h)) = (lo, hi) {
        for _ in 0..plan.refine_steps {
            if h <= l + l / 16 {
                break;
            }
            if elapsed() > plan.budget {
                stop = out_of_time(hi);
                break;
            }
            let mid = (l + h) / 2;
            if run(mid)? {
                l = mid;
            } else {
                h = mid;
            }
        }
        lo = Some(l);
    }
    Ok((lo, stop))
}

/// The VM router in words, with its CPU budget.
pub fn vm_router_words(v: &super::vm::VmSpec) -> String {
    format!(
        "VM router ({} {}, {} vCPU, {} MiB), CPU budget {}",
        v.arch.qemu(),
        v.arch.machine()[3],
        v.vcpus,
        v.memory_mib,
        v.cpu_budget_pct
            .map_or("none (no cgroup limit)".to_string(), |p| format!(
                "{p} % of one host core (cgroup cpu quota on qemu)"
            ))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn criteria() {
        assert!(pass(0.97, Some(3.0)));
        assert!(!pass(0.90, Some(3.0)));
        assert!(!pass(0.99, Some(20.0)));
        assert!(!pass(0.99, None));
        assert_eq!(buffer_for(50_000_000), 2_500_000);
        assert_eq!(buffer_for(1_000_000), 300_000);
        assert_eq!(buffer_for(NO_CEILING_BPS), 64_000_000);
    }

    /// The search against a fake path that passes every rate up to `cap_bps`, each point
    /// taking `point_s` seconds of a fake clock: (capacity, stop, rates tried).
    fn fake(plan: &SqmPlan, cap_bps: u64, point_s: u64) -> (Option<u64>, SearchStop, Vec<u64>) {
        let clock = std::cell::Cell::new(0u64);
        let mut tried = Vec::new();
        let (c, stop) = bracket(
            plan,
            &mut || Duration::from_secs(clock.get()),
            &mut |rate| {
                tried.push(rate);
                clock.set(clock.get() + point_s);
                Ok(rate <= cap_bps)
            },
        )
        .unwrap();
        (c, stop, tried)
    }

    fn plan(budget_s: u64) -> SqmPlan {
        SqmPlan {
            budget: Duration::from_secs(budget_s),
            ..SqmPlan::new("t", QdiscKind::Cake, PathBuf::from("routerbench"))
        }
    }

    #[test]
    fn search_brackets_a_failure_and_says_so() {
        // 100, 200, 400, 800 pass, 1600 fails; bisection 1200 f, 1000 f, 900 p.
        let (c, stop, tried) = fake(&plan(3600), 950_000_000, 10);
        assert_eq!(stop, SearchStop::Bracketed);
        assert_eq!(c, Some(900_000_000));
        assert_eq!(tried.len(), 8, "{tried:?}");
        // A start that fails halves down, then bisects up.
        let p = SqmPlan {
            start_bps: 400_000_000,
            ..plan(3600)
        };
        let (c, stop, _) = fake(&p, 130_000_000, 10);
        assert_eq!(stop, SearchStop::Bracketed);
        assert!(
            c.unwrap() >= 100_000_000 && c.unwrap() <= 130_000_000,
            "{c:?}"
        );
    }

    #[test]
    fn search_past_any_fixed_ceiling_until_the_budget_ends_it() {
        // A path that carries 40 Gbit/s: no ceiling stops the doubling at 1.6 or 3.2 Gbit/s;
        // a 60 s budget at 10 s per point ends it after 100 M .. 6.4 G (7 points).
        let (c, stop, tried) = fake(&plan(60), 40_000_000_000, 10);
        assert_eq!(
            stop,
            SearchStop::Budget {
                seconds: 60,
                failed: false
            }
        );
        assert_eq!(c, Some(6_400_000_000));
        assert_eq!(tried.len(), 7);
        // With the time, it goes on to the failure and brackets 40 Gbit/s.
        let (c, stop, _) = fake(&plan(3600), 40_000_000_000, 10);
        assert_eq!(stop, SearchStop::Bracketed);
        assert!(
            c.unwrap() > 30_000_000_000 && c.unwrap() <= 40_000_000_000,
            "{c:?}"
        );
        // The budget running out during the bisection is said too: a failure was seen.
        let (_, stop, _) = fake(&plan(55), 950_000_000, 10);
        assert_eq!(
            stop,
            SearchStop::Budget {
                seconds: 55,
                failed: true
            }
        );
    }

    #[test]
    fn search_ends_at_max_rate_and_min_rate() {
        let p = SqmPlan {
            max_bps: 1_000_000_000,
            ..plan(3600)
        };
        let (c, stop, tried) = fake(&p, u64::MAX, 10);
        assert_eq!(stop, SearchStop::MaxRate { bps: 1_000_000_000 });
        assert_eq!(c, Some(1_000_000_000));
        assert_eq!(tried.last(), Some(&1_000_000_000));
        let (c, stop, tried) = fake(&plan(3600), 1_000_000, 10);
        assert_eq!(stop, SearchStop::MinRate { bps: 6_250_000 });
        assert_eq!(c, None);
        assert_eq!(tried.last(), Some(&6_250_000));
        // The doubling's step limit (a start far below the ceiling, nothing fails).
        let p = SqmPlan {
            start_bps: 6_250_000,
            max_bps: u64::MAX,
            ..plan(1_000_000)
        };
        let (c, stop, tried) = fake(&p, u64::MAX, 1);
        assert_eq!(stop, SearchStop::StepLimit);
        assert_eq!(tried.len(), 16);
        assert_eq!(c, Some(6_250_000 << 15));
    }
}
