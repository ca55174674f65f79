//! What several subcommands share, so each file of `cli/` holds only its own subcommand: the
//! iperf3 options (client, loopback, server), `--json [FILE|-]`, the output sink of iperf3's
//! `--logfile`/`--timestamps`, the router-monitor options, the stop flag and the token.

pub mod iperf3_opts;
pub mod json_arg;
pub mod log_sink;
#[cfg(feature = "lab")]
pub mod qdisc_arg;
pub mod router;
pub mod signal_flag;
pub mod token;

/// `--idle-wait SECS`: 0 (do not wait, one quarter-second look) to 600.
pub fn parse_idle_wait(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if (0.0..=600.0).contains(&x) => Ok(x),
        _ => Err(format!(
            "`{s}` is not a number of seconds from 0 to 600 (how long to wait for an idle machine)"
        )),
    }
}
