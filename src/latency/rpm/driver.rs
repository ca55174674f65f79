//! Runs the draft's algorithm (draft-ietf-ippm-responsiveness-09 §5.4) over a [`Transport`]:
//! INP load-generating connections per direction, INC more per interval while goodput is not
//! saturated, foreign and self probes interleaved and spread over each interval at the rate
//! §5.3 allows (MPS probes a second, PTC of the capacity), the ramp's stability decisions, and
//! the score over the last MAD intervals. Keeps every interval and probe; on a time limit, an
//! interruption or a failed connection the partial ramp is kept and the confidence says so.

use super::params::Params;
use super::ramp::Ramp;
use super::score::score;
use super::transport::{Entry, LoadConnection, ProbeKind, ProbeLog, Transport};
use crate::results::rpm::{RpmInterval, RpmProbe, RpmRun};
use crate::util::progress::Progress;
use crate::wire::rb::Direction;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Longest wait for probes still in flight when a run ends.
const PROBE_DRAIN: Duration = Duration::from_secs(3);
/// Most probes in flight at once; a launch beyond it is skipped (recorded as failed).
const MAX_IN_FLIGHT: usize = 400;

/// A load connection with its direction and id.
struct Load {
    id: u32,
    dir: usize,
    conn: Box<dyn LoadConnection>,
    /// Its byte count at the end of the previous interval.
    last: u64,
}

/// Word for a direction, as the results spell it.
pub fn dir_word(d: Direction) -> &'static str {
    match d {
        Direction::Upload => "upload",
        Direction::Download => "download",
    }
}

/// Runs the algorithm once with `dirs` loaded at the same time (one direction, or both).
pub fn run(
    transport: &dyn Transport,
    dirs: &[Direction],
    params: &Params,
    t0: Instant,
    progress: &dyn Progress,
    interrupt: Option<&Arc<AtomicBool>>,
) -> RpmRun {
    let name = match dirs {
        [d] => dir_word(*d),
        _ => "both",
    };
    let interrupted = || interrupt.is_some_and(|f| f.load(Ordering::Relaxed));
    let log = ProbeLog::default();
    let mut loads: Vec<Load> = Vec::new();
    let mut next_id = 0u32;
    let mut failure: Option<String> = None;
    let mut open = |dir: usize, loads: &mut Vec<Load>, failure: &mut Option<String>| {
        match transport.open_load(dirs[dir], next_id) {
            Ok(conn) => loads.push(Load {
                id: next_id,
                dir,
                conn,
                last: 0,
            }),
            Err(e) => {
                failure.get_or_insert(format!(
                    "cannot open {} load connection {next_id}: {e}",
                    dir_word(dirs[dir])
                ));
            }
        }
        next_id += 1;
    };
    for d in 0..dirs.len() {
        for _ in 0..params.inp {
            open(d, &mut loads, &mut failure);
        }
    }
    let mut ramp = Ramp::new(params.clone(), dirs.len());
    let mut intervals: Vec<RpmInterval> = Vec::new();
    let run_start = Instant::now();
    let deadline = run_start + params.time_limit;
    let mut pairs_per_s = params.probe_pairs_per_s(None);
    let max_intervals =
        (params.time_limit.as_secs_f64() / params.interval.as_secs_f64()).ceil() as usize;
    progress.phase(&format!("rpm {name}"), max_intervals as u64);
    let mut end = String::from("time limit");
    let mut i = 0usize;
    while failure.is_none() {
        let iv_start = Instant::now();
        let iv_end = iv_start + params.interval;
        let gap = Duration::from_secs_f64(1.0 / pairs_per_s);
        let mut next = iv_start;
        let mut stop = false;
        while Instant::now() < iv_end {
            if interrupted() {
                stop = true;
                break;
            }
            if let Some(f) = loads
                .iter()
                .find_map(|l| l.conn.failure().map(|e| (l.id, e)))
            {
                failure = Some(format!("load connection {} failed: {}", f.0, f.1));
                break;
            }
            let now = Instant::now();
            if now >= next {
                launch_pair(transport, &loads, dirs, &log, i);
                next += gap;
                while next < now {
                    next += gap; // a missed slot is skipped, not sent late in a burst
                }
            }
            let wake = next.min(iv_end);
            let left = wake.saturating_duration_since(Instant::now());
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
        if stop {
            end = "interrupted".into();
            break;
        }
        if failure.is_some() {
            break;
        }
        let secs = iv_start.elapsed().as_secs_f64().max(1e-6);
        let mut bytes = vec![0u64; dirs.len()];
        let mut conns = vec![0usize; dirs.len()];
        for l in loads.iter_mut() {
            let b = l.conn.bytes();
            bytes[l.dir] += b.saturating_sub(l.last);
            l.last = b;
            conns[l.dir] += 1;
        }
        let goodput: Vec<f64> = bytes.iter().map(|b| *b as f64 * 8.0 / secs).collect();
        let entries = log.entries();
        let probes_now = to_probes(&entries, t0, transport.tls());
        let first = (i + 1).saturating_sub(params.mad);
        let window = (
            intervals
                .get(first)
                .map(|iv| iv.t_end_s - params.interval.as_secs_f64())
                .unwrap_or(iv_start.duration_since(t0).as_secs_f64()),
            t0.elapsed().as_secs_f64(),
        );
        let step = ramp.interval(&goodput, &conns, || {
            score(&probes_now, first, i, params.trimmed_mean_percent, window).rpm
        });
        let resp = if step.goodput_saturated {
            score(&probes_now, first, i, params.trimmed_mean_percent, window).rpm
        } else {
            None
        };
        let mbps = |d: Direction| {
            dirs.iter()
                .position(|x| *x == d)
                .map(|k| goodput[k] / 1e6)
                .unwrap_or(0.0)
        };
        intervals.push(RpmInterval {
            index: i,
            t_end_s: t0.elapsed().as_secs_f64(),
            connections: loads.len(),
            download_mbps: mbps(Direction::Download),
            upload_mbps: mbps(Direction::Upload),
            moving_average_mbps: step.moving_average_bps.map(|b| b / 1e6),
            goodput_relative_sd: step.goodput_relative_sd,
            goodput_saturated: step.goodput_saturated,
            responsiveness_rpm: resp,
            responsiveness_relative_sd: step.responsiveness_relative_sd,
            probe_pairs_per_s: pairs_per_s,
        });
        progress.step(
            i as u64 + 1,
            &format!(
                "{:2} conns  {:8.1} Mbit/s{}",
                loads.len(),
                goodput.iter().sum::<f64>() / 1e6,
                resp.map(|r| format!("  {r:.0} RPM")).unwrap_or_default()
            ),
        );
        i += 1;
        if step.done {
            end = "stable".into();
            break;
        }
        if Instant::now() + params.interval / 2 > deadline {
            break;
        }
        for (d, n) in step.add.iter().enumerate() {
            for _ in 0..*n {
                open(d, &mut loads, &mut failure);
            }
        }
        let capacity = step
            .moving_average_bps
            .unwrap_or_else(|| goodput.iter().sum());
        pairs_per_s = params.probe_pairs_per_s(Some(capacity));
    }
    progress.finish();
    for l in &loads {
        l.conn.close();
    }
    let drain_until = Instant::now() + PROBE_DRAIN;
    while log.pending() > 0 && Instant::now() < drain_until {
        std::thread::sleep(Duration::from_millis(20));
    }
    finish(
        name,
        params,
        t0,
        &log,
        intervals,
        &ramp,
        loads.len(),
        end,
        failure,
        transport.tls(),
        dirs,
    )
}

/// A foreign probe and a self probe on a random load connection (§5.3: the same number of
/// each, interleaved; self probes on load connections chosen uniformly at random).
fn launch_pair(
    transport: &dyn Transport,
    loads: &[Load],
    dirs: &[Direction],
    log: &ProbeLog,
    interval: usize,
) {
    if log.pending() >= MAX_IN_FLIGHT {
        log.launch(ProbeKind::Foreign, interval, None)
            .fail("skipped: too many probes in flight");
        return;
    }
    transport.foreign_probe(log.launch(ProbeKind::Foreign, interval, None));
    if loads.is_empty() {
        return;
    }
    let k = (crate::util::random::u64() % loads.len() as u64) as usize;
    let l = &loads[k];
    let ticket = log.launch(ProbeKind::SelfProbe, interval, Some((l.id, dirs[l.dir])));
    l.conn.self_probe(ticket);
}

/// The log as result probes (a probe still pending has failed: no answer in time).
fn to_probes(entries: &[Entry], t0: Instant, tls: bool) -> Vec<RpmProbe> {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    entries
        .iter()
        .map(|e| {
            let t = e.timing;
            RpmProbe {
                kind: match e.kind {
                    ProbeKind::Foreign => "foreign",
                    ProbeKind::SelfProbe => "self",
                }
                .into(),
                t_s: e.launched.saturating_duration_since(t0).as_secs_f64(),
                interval: e.interval,
                connection: e.connection.map(|c| c.0),
                connection_direction: e.connection.map(|c| dir_word(c.1).to_string()),
                tcp_ms: t.and_then(|t| t.tcp).map(ms),
                tls_ms: t.and_then(|t| {
                    let rt = t.tls_round_trips.unwrap_or(1).max(1);
                    t.tls.filter(|_| tls).map(|d| ms(d) / f64::from(rt))
                }),
                tls_round_trips: t.and_then(|t| t.tls_round_trips).filter(|_| tls),
                http_ms: t.map(|t| ms(t.http)),
                sender_unsent_bytes: t.and_then(|t| t.unsent),
                error: e.error.clone().or_else(|| {
                    e.pending()
                        .then(|| "no answer before the run ended".to_string())
                }),
            }
        })
        .collect()
}

/// Builds the run's result: the final score, the confidences and the words for a problem.
#[allow(clippy::too_many_arguments)]
fn finish(
    name: &str,
    params: &Params,
    t0: Instant,
    log: &ProbeLog,
    intervals: Vec<RpmInterval>,
    ramp: &Ramp,
    connections: usize,
    end: String,
    failure: Option<String>,
    tls: bool,
    dirs: &[Direction],
) -> RpmRun {
    let probes = to_probes(&log.entries(), t0, tls);
    let n = intervals.len();
    let first = n.saturating_sub(params.mad);
    let window = (
        intervals
            .get(first)
            .map(|iv| iv.t_end_s - params.interval.as_secs_f64())
            .unwrap_or(0.0),
        intervals.last().map(|iv| iv.t_end_s).unwrap_or(0.0),
    );
    let sc = if n > 0 {
        score(&probes, first, n - 1, params.trimmed_mean_percent, window)
    } else {
        Default::default()
    };
    let mbps = |d: Direction| {
        dirs.contains(&d).then(|| {
            let last = &intervals[n.saturating_sub(params.mad)..];
            let v: Vec<f64> = last
                .iter()
                .map(|iv| {
                    if d == Direction::Download {
                        iv.download_mbps
                    } else {
                        iv.upload_mbps
                    }
                })
                .collect();
            crate::stats::mean(&v).unwrap_or(0.0)
        })
    };
    let (download_mbps, upload_mbps) = (mbps(Direction::Download), mbps(Direction::Upload));
    let mut problem = None;
    let pct = |x: Option<f64>| {
        x.map(|v| format!("{:.1} %", v * 100.0))
            .unwrap_or("-".into())
    };
    if let Some(f) = &failure {
        problem = Some(format!(
            "{f}; the test stops here (draft §5.4: a load connection ending with an error aborts \
             the test); the partial ramp is kept"
        ));
    } else if !ramp.saturated() && end != "interrupted" {
        let at_max = connections >= params.mnp * dirs.len();
        problem = Some(if at_max {
            format!(
                "goodput never saturated: with {connections} connections (the most, MNP {}) the \
                 moving averages still scattered by {} (tolerance {:.0} %) when the {:.0} s limit \
                 came; the score is over the last {} intervals at Low confidence",
                params.mnp,
                pct(ramp.last_goodput_spread()),
                params.sdt * 100.0,
                params.time_limit.as_secs_f64(),
                params.mad
            )
        } else {
            format!(
                "goodput never saturated within the {:.0} s limit ({connections} of at most {} \
                 connections, spread {}): raise --max-time or shorten --interval",
                params.time_limit.as_secs_f64(),
                params.mnp * dirs.len(),
                pct(ramp.last_goodput_spread())
            )
        });
    } else if end == "time limit" {
        problem = Some(format!(
            "responsiveness never stabilised: the last values scattered by {} (tolerance \
             {:.0} %) when the {:.0} s limit came",
            pct(ramp.last_responsiveness_spread()),
            params.sdt * 100.0,
            params.time_limit.as_secs_f64()
        ));
    }
    if sc.foreign_probes == 0 || sc.self_probes == 0 {
        let lost = probes.iter().filter(|p| p.error.is_some()).count();
        let why = probes
            .iter()
            .find_map(|p| p.error.clone())
            .unwrap_or_default();
        let word = format!(
            "no completed {} probe in the final window ({lost} of {} probes failed{})",
            if sc.foreign_probes == 0 {
                "foreign"
            } else {
                "self"
            },
            probes.len(),
            if why.is_empty() {
                String::new()
            } else {
                format!(", e.g. {why}")
            }
        );
        problem = Some(match problem {
            Some(p) => format!("{p}; {word}"),
            None => word,
        });
    }
    let low = failure.is_some() || end == "interrupted";
    RpmRun {
        direction: name.into(),
        intervals,
        probes,
        score: sc,
        goodput_confidence: ramp.goodput_confidence().as_str().into(),
        rpm_confidence: if low {
            "Low".into()
        } else {
            ramp.responsiveness_confidence().as_str().into()
        },
        download_mbps,
        upload_mbps,
        connections,
        end: failure.map(|f| format!("error: {f}")).unwrap_or(end),
        problem,
    }
}
