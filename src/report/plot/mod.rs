//! SVG plots of results (behind the `plots` feature): a figure model built from the result model
//! (`model`, `scale`, one builder file per area), drawn by `draw` with plotters' SVG backend.
//! `routerbench plot` and the HTML report use the same code.

pub mod compare;
pub mod crypto;
pub mod draw;
pub mod latency;
pub mod model;
pub mod scale;
pub mod series;
pub mod stress;

pub use draw::{PlotError, to_svg};
pub use model::{Figure, HLine, VLine};

use crate::results::RunResult;

/// Which plot `routerbench plot --kind` draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// flent's all_scaled: download, upload, latency on one time axis.
    #[value(name = "all_scaled")]
    AllScaled,
    /// Latency CDF per probe series.
    Cdf,
    /// Idle vs loaded RTT boxes with the grade.
    Box,
    /// The crypto columns as bars, log scale.
    Crypto,
    /// Throughput per interval.
    Throughput,
    /// CPU, softirq, queue backlog, temperature.
    Monitor,
    /// A stress run: temperature, frequency, throughput and latency on one time axis.
    Stress,
}

/// The lab's theory lines for a latency result that went through the lab: the standing-queue
/// delay `buffer·8/rate` per loaded direction, and their sum for a round trip under RRUL.
pub fn theory_lines(run: &RunResult) -> Vec<HLine> {
    let (Some(lab), Some(lat)) = (&run.lab, &run.latency) else {
        return Vec::new();
    };
    let th = &lab.theory;
    let up = th.up_queue_delay_ms;
    let down = th.down_queue_delay_ms;
    let test = lat.test.as_str();
    let mut out = Vec::new();
    let line = |label: &str, y: f64| HLine {
        label: format!("theory {label} {y:.1} ms"),
        y,
    };
    match test {
        "tcp_nup" => out.extend(up.map(|u| line("upload buffer·8/rate", u))),
        "tcp_ndown" => out.extend(down.map(|d| line("download buffer·8/rate", d))),
        _ => {
            out.extend(up.map(|u| line("upload buffer·8/rate", u)));
            out.extend(down.map(|d| line("download buffer·8/rate", d)));
            if let (Some(u), Some(d)) = (up, down) {
                out.push(line("both queues", u + d));
            }
        }
    }
    out
}

/// The figure of `kind` for one result; `None` (with why) when the result lacks that part.
pub fn figure(kind: Kind, run: &RunResult, source: &str) -> Result<Figure, String> {
    let need = |what: &str| format!("{source} has no {what} result to plot");
    match kind {
        Kind::AllScaled | Kind::Cdf | Kind::Box => {
            let lat = run.latency.as_ref().ok_or_else(|| need("latency"))?;
            Ok(match kind {
                Kind::AllScaled => latency::all_scaled(lat, &theory_lines(run)),
                Kind::Cdf => latency::cdf(lat),
                _ => latency::boxes(lat),
            })
        }
        Kind::Crypto => {
            let row = crate::report::rows::Row::from_result(
                run,
                source,
                crate::results::crypto::ROW_CIPHER_BLOCK,
            )
            .ok_or_else(|| need("crypto"))?;
            Ok(crypto::bars(&[row]))
        }
        Kind::Throughput => Ok(series::throughput(
            run.throughput.as_ref().ok_or_else(|| need("throughput"))?,
        )),
        Kind::Stress => stress::figure(run).ok_or_else(|| need("stress")),
        // The router's own view (from its agent) when there is one, else this machine's.
        Kind::Monitor => Ok(series::monitor(
            run.router
                .as_ref()
                .or(run.monitor.as_ref())
                .ok_or_else(|| need("monitor"))?,
        )),
    }
}

/// Width of every plot, pixels (the HTML page scales it).
pub const WIDTH: u32 = 960;
