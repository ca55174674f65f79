//! `routerbench shape`: the userspace AQM forwarder of a lab's router namespace (started by
//! `lab up --qdisc Q --aqm userspace`; can be run by hand in the foreground).

use crate::cli::common::qdisc_arg::QdiscArg;
use crate::lab::aqm_forwarder::worker::{self, ShapeOptions};
use crate::lab::tc_shaper;
use clap::Args;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct ShapeArgs {
    /// Lab name (its router namespace is <name>-rtr).
    #[arg(long, default_value = crate::lab::DEFAULT_NAME)]
    pub name: String,
    #[arg(long, value_enum, default_value = "fq_codel")]
    pub qdisc: QdiscArg,
    /// Upload rate (LAN → WAN), default: the lab's; none = unshaped.
    #[arg(long)]
    pub rate: Option<String>,
    /// Download rate, default: the lab's.
    #[arg(long)]
    pub down_rate: Option<String>,
    /// Byte limit of each direction's qdisc, default: the lab's --buffer.
    #[arg(long)]
    pub buffer: Option<String>,
    /// Stop after this many seconds (default: until SIGTERM / `lab down`).
    #[arg(long)]
    pub duration: Option<f64>,
    /// Internal: run the forwarding loops (the supervisor starts this).
    #[arg(long, hide = true)]
    pub worker: bool,
}

pub fn run(a: ShapeArgs) -> anyhow::Result<i32> {
    crate::lab::sys::require_root()?;
    let duration = match a.duration {
        Some(s) if s.is_finite() && s > 0.0 && s <= 86_400.0 => Some(Duration::from_secs_f64(s)),
        Some(s) => anyhow::bail!("--duration {s}: use 0 < S <= 86400 seconds"),
        None => None,
    };
    let o = ShapeOptions {
        name: a.name.clone(),
        qdisc: a.qdisc.kind(),
        up_rate_bps: a.rate.as_deref().map(tc_shaper::parse_rate).transpose()?,
        down_rate_bps: a
            .down_rate
            .as_deref()
            .map(tc_shaper::parse_rate)
            .transpose()?,
        buffer_bytes: a
            .buffer
            .as_deref()
            .map(tc_shaper::parse_bytes)
            .transpose()?,
        duration,
    };
    if a.worker {
        return Ok(worker::work(&o)?);
    }
    let ended = worker::supervise(&o)?;
    // The supervisor's stderr is the forwarder's log (`lab up --aqm userspace` keeps it).
    crate::errln!(
        "routerbench shape: worker ended ({}); kernel forwarding {}",
        ended.status.map_or("unknown".into(), |s| s.to_string()),
        if ended.restored.is_ok() {
            "restored"
        } else {
            "NOT restored"
        }
    );
    let code = ended.code();
    ended.restored?;
    Ok(code)
}
