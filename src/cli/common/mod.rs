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
