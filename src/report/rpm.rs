//! Text rendering of an RPM test: per run the RPM with its band and confidence, the foreign and
//! loaded parts, the trimmed means, the goodput reached, and what went wrong. Nothing measures.

use crate::results::rpm::{RpmResult, RpmRun};
use std::fmt::Write;

fn f(v: Option<f64>, prec: usize) -> String {
    v.map(|x| format!("{x:.prec$}"))
        .unwrap_or_else(|| "-".into())
}

/// The summary printed after `routerbench rpm`.
pub fn render_text(r: &RpmResult) -> String {
    let mut out = String::new();
    let p = &r.params;
    let _ = writeln!(
        out,
        "Responsiveness (draft-ietf-ippm-responsiveness-09) to {} over {}, {}",
        r.target, r.transport, r.mode
    );
    let _ = writeln!(
        out,
        "  interval {} s, MAD {}, SDT {:.0} %, trimmed mean {:.0} %, up to {} connections, \
         {:.0} probes/s, {:.0} % of capacity, limit {:.0} s per run",
        p.interval_s,
        p.mad,
        p.sdt * 100.0,
        p.trimmed_mean_percent,
        p.max_connections,
        p.max_probes_per_second,
        p.probe_capacity_share * 100.0,
        p.time_limit_s
    );
    if let Some(i) = r.idle_latency_ms {
        let _ = writeln!(out, "  idle latency (foreign request/response): {i:.2} ms");
    }
    for run in &r.runs {
        render_run(&mut out, run);
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

fn render_run(out: &mut String, run: &RpmRun) {
    let s = &run.score;
    let band = s.rpm.map(RpmResult::band).unwrap_or("no score");
    let _ = writeln!(
        out,
        "\n{}: {} RPM ({band}), confidence {} (goodput {})",
        run.direction,
        f(s.rpm, 0),
        run.rpm_confidence,
        run.goodput_confidence
    );
    let _ = writeln!(
        out,
        "  foreign {} RPM (TM tcp {} ms{}, http {} ms, {} probes), loaded {} RPM (TM {} ms, {} probes)",
        f(s.foreign_rpm, 0),
        f(s.tm_tcp_ms, 2),
        s.tm_tls_ms
            .map(|t| format!(", tls {t:.2} ms"))
            .unwrap_or_default(),
        f(s.tm_http_foreign_ms, 2),
        s.foreign_probes,
        f(s.loaded_rpm, 0),
        f(s.tm_http_self_ms, 2),
        s.self_probes
    );
    let mut good = Vec::new();
    if let Some(d) = run.download_mbps {
        good.push(format!("down {d:.1} Mbit/s"));
    }
    if let Some(u) = run.upload_mbps {
        good.push(format!("up {u:.1} Mbit/s"));
    }
    let _ = writeln!(
        out,
        "  goodput {} with {} connections, {} intervals, ended: {}",
        good.join(", "),
        run.connections,
        run.intervals.len(),
        run.end
    );
    if let Some(p) = &run.problem {
        let _ = writeln!(out, "  problem: {p}");
    }
}
