//! The score of draft-ietf-ippm-responsiveness-09 §5.3.1 ("Aggregating the Measurements"):
//! single-sided trimmed means of tcp_f, tls_f, http_f and http_l over a window of intervals,
//! then Foreign = 60000 / mean of the foreign terms, Loaded = 60000 / TM(http_l),
//! RPM = (Foreign + Loaded) / 2. Without TLS (§5.3.1.2, the TCP-only case) the foreign mean has
//! two terms, never a zero for tls_f. Pure.

use crate::results::rpm::{RpmProbe, RpmScore};
use crate::stats::trimmed_mean;

/// The score over the probes launched in intervals `first..=last` (completed probes only).
pub fn score(
    probes: &[RpmProbe],
    first: usize,
    last: usize,
    keep_percent: f64,
    window_s: (f64, f64),
) -> RpmScore {
    let in_window = |p: &&RpmProbe| p.interval >= first && p.interval <= last && p.error.is_none();
    let foreign: Vec<&RpmProbe> = probes
        .iter()
        .filter(in_window)
        .filter(|p| p.kind == "foreign")
        .collect();
    let selfp: Vec<&RpmProbe> = probes
        .iter()
        .filter(in_window)
        .filter(|p| p.kind == "self")
        .collect();
    let tm = |v: &[&RpmProbe], f: fn(&RpmProbe) -> Option<f64>| {
        trimmed_mean(v.iter().filter_map(|p| f(p)), keep_percent)
    };
    let tm_tcp = tm(&foreign, |p| p.tcp_ms);
    let tm_tls = tm(&foreign, |p| p.tls_ms);
    let tm_http_f = tm(&foreign, |p| p.http_ms);
    let tm_http_l = tm(&selfp, |p| p.http_ms);
    let foreign_rpm = match (tm_tcp, tm_tls, tm_http_f) {
        (Some(t), Some(s), Some(h)) => rpm((t + s + h) / 3.0),
        (Some(t), None, Some(h)) => rpm((t + h) / 2.0),
        _ => None,
    };
    let loaded_rpm = tm_http_l.and_then(rpm);
    RpmScore {
        window_start_s: window_s.0,
        window_end_s: window_s.1,
        tm_tcp_ms: tm_tcp,
        tm_tls_ms: tm_tls,
        tm_http_foreign_ms: tm_http_f,
        tm_http_self_ms: tm_http_l,
        foreign_rpm,
        loaded_rpm,
        rpm: foreign_rpm.zip(loaded_rpm).map(|(f, l)| (f + l) / 2.0),
        foreign_probes: foreign.len(),
        self_probes: selfp.len(),
    }
}

/// 60000 / ms, for a positive finite time.
pub fn rpm(ms: f64) -> Option<f64> {
    (ms.is_finite() && ms > 0.0).then(|| 60_000.0 / ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn probe(
        kind: &str,
        interval: usize,
        tcp: f64,
        tls: Option<f64>,
        http: f64,
    ) -> RpmProbe {
        RpmProbe {
            kind: kind.into(),
            t_s: interval as f64,
            interval,
            connection: None,
            connection_direction: None,
            tcp_ms: (kind == "foreign").then_some(tcp),
            tls_ms: tls,
            tls_round_trips: tls.map(|_| 1),
            http_ms: Some(http),
            sender_unsent_bytes: None,
            error: None,
        }
    }

    #[test]
    fn tcp_only_and_tls_formulas() {
        // TCP only: foreign mean of two terms (10 + 30) / 2 = 20 ms → 3000; loaded 40 ms → 1500.
        let mut v: Vec<RpmProbe> = (0..4)
            .map(|i| probe("foreign", i, 10.0, None, 30.0))
            .collect();
        v.extend((0..4).map(|i| probe("self", i, 0.0, None, 40.0)));
        let s = score(&v, 0, 3, 95.0, (0.0, 4.0));
        assert_eq!(s.foreign_rpm, Some(3000.0));
        assert_eq!(s.loaded_rpm, Some(1500.0));
        assert_eq!(s.rpm, Some(2250.0));
        assert_eq!((s.foreign_probes, s.self_probes), (4, 4));
        // With TLS: (10 + 20 + 30) / 3 = 20 ms.
        let w: Vec<RpmProbe> = vec![
            probe("foreign", 0, 10.0, Some(20.0), 30.0),
            probe("self", 0, 0.0, None, 40.0),
        ];
        assert_eq!(score(&w, 0, 0, 95.0, (0.0, 1.0)).foreign_rpm, Some(3000.0));
    }

    #[test]
    fn window_trim_and_failures() {
        let mut v: Vec<RpmProbe> = (0..19).map(|_| probe("self", 5, 0.0, None, 10.0)).collect();
        // The one slow probe of 20 is the 5 % the trimmed mean drops.
        v.push(probe("self", 5, 0.0, None, 1000.0));
        v.push(probe("self", 1, 0.0, None, 500.0)); // outside the window
        let mut failed = probe("self", 5, 0.0, None, 1.0);
        failed.error = Some("reset".into());
        v.push(failed);
        let s = score(&v, 2, 5, 95.0, (2.0, 6.0));
        assert_eq!(s.tm_http_self_ms, Some(10.0));
        assert_eq!(s.self_probes, 20);
        assert_eq!(s.rpm, None, "no foreign probe: no RPM");
    }
}
