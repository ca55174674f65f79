//! Socket set-up shared by all tests: DSCP/TOS, congestion control, buffers, kernel timestamps,
//! TCP_INFO.

pub mod latency_sockopts;
pub mod sockopt;
pub mod tcp_info;
