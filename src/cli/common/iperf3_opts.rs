//! The iperf3 options `client`, `loopback` and `server` share (iperf3's names and parsers), the
//! checks made before anything connects, and the interval lines of a text-mode test.

use crate::iperf3::IntervalSink;
use crate::results::throughput::{Connected, Interval};
use clap::Args;

/// Parses an iperf3 rate: `100M`, `1.5G`, `800k` (decimal units); `/N` sets a burst.
pub fn parse_rate(text: &str) -> Result<(u64, u32), String> {
    if text.trim().starts_with('-') {
        return Err(format!("{text} must be positive (e.g. 100M)"));
    }
    let (rate, burst) = match text.split_once('/') {
        Some((r, b)) => (
            r,
            b.parse::<u32>()
                .map_err(|_| format!("bad burst in {text:?}"))?,
        ),
        None => (text, 0),
    };
    let v = parse_scaled(rate, 1000.0)
        .ok_or_else(|| format!("bad rate {text:?}: use e.g. 100M or 1G"))?;
    Ok((v, burst))
}

/// Parses an iperf3 size: `50M`, `128K`, `1G` (binary units, K = 1024).
pub fn parse_size(text: &str) -> Result<u64, String> {
    if text.trim().starts_with('-') {
        return Err(format!("{text} must be positive (e.g. 128K)"));
    }
    parse_scaled(text, 1024.0).ok_or_else(|| format!("bad size {text:?}: use e.g. 128K or 50M"))
}

fn parse_scaled(text: &str, base: f64) -> Option<u64> {
    let t = text.trim();
    let (num, mult) = match t.chars().last()? {
        'k' | 'K' => (&t[..t.len() - 1], base),
        'm' | 'M' => (&t[..t.len() - 1], base * base),
        'g' | 'G' => (&t[..t.len() - 1], base * base * base),
        't' | 'T' => (&t[..t.len() - 1], base * base * base * base),
        _ => (t, 1.0),
    };
    let v: f64 = num.parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some((v * mult) as u64)
}

/// Options shared by `client` and `loopback` (iperf3's names).
#[derive(Debug, Args, Clone)]
pub struct TestOpts {
    /// Seconds to transmit.
    #[arg(short = 't', long = "time", default_value_t = 10, allow_negative_numbers = true,
          value_parser = non_negative_u32)]
    pub time: u32,
    /// Bytes to transmit instead of a time (e.g. 50M).
    #[arg(allow_hyphen_values = true, short = 'n', long = "bytes", value_parser = parse_size)]
    pub bytes: Option<u64>,
    /// Blocks to transmit instead of a time.
    #[arg(short = 'k', long = "blockcount", allow_negative_numbers = true,
          value_parser = non_negative_u64)]
    pub blockcount: Option<u64>,
    /// Parallel streams (1..128).
    #[arg(short = 'P', long = "parallel", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=128))]
    pub parallel: u32,
    /// Reverse: the server sends.
    #[arg(short = 'R', long = "reverse", conflicts_with = "bidir")]
    pub reverse: bool,
    /// Both directions at once.
    #[arg(long = "bidir")]
    pub bidir: bool,
    /// UDP instead of TCP.
    #[arg(short = 'u', long = "udp")]
    pub udp: bool,
    /// Target bitrate per stream, bit/s (e.g. 100M; `/N` for a burst). UDP default 1M.
    #[arg(allow_hyphen_values = true, short = 'b', long = "bitrate", value_parser = parse_rate)]
    pub bitrate: Option<(u64, u32)>,
    /// Block size (TCP default 128K; `loopback` 1M up to 8 streams, smaller for more, 128K with
    /// -Z; UDP default the path MSS).
    #[arg(allow_hyphen_values = true, short = 'l', long = "length", value_parser = parse_size)]
    pub length: Option<u64>,
    /// Socket buffer size (window), e.g. 512K.
    #[arg(allow_hyphen_values = true, short = 'w', long = "window", value_parser = parse_size)]
    pub window: Option<u64>,
    /// TCP congestion control algorithm (e.g. bbr, cubic, reno).
    #[arg(short = 'C', long = "congestion")]
    pub congestion: Option<String>,
    /// IP TOS byte (e.g. 0x10).
    #[arg(short = 'S', long = "tos")]
    pub tos: Option<String>,
    /// DSCP value or name (ef, af41, cs1, …); sets the upper 6 bits of TOS.
    #[arg(long = "dscp", conflicts_with = "tos")]
    pub dscp: Option<String>,
    /// Seconds to omit at the start (TCP slow start).
    #[arg(short = 'O', long = "omit", default_value_t = 0, allow_negative_numbers = true,
          value_parser = non_negative_u32)]
    pub omit: u32,
    /// Seconds between interval reports (0 = none).
    #[arg(
        short = 'i',
        long = "interval",
        default_value_t = 1.0,
        allow_negative_numbers = true
    )]
    pub interval: f64,
    /// iperf3's -J JSON: `-J, --json [FILE|-]`, see `crate::cli::common::json_arg`; on standard output
    /// (or --logfile) it replaces the text.
    #[command(flatten)]
    pub json: crate::cli::common::json_arg::JsonArg,
    /// CPU affinity, iperf3's `-A n[,m]`: this end's stream threads on CPU n, the server's on
    /// CPU m.
    #[arg(short = 'A', long = "affinity", value_parser = parse_affinity, value_name = "N[,M]")]
    pub affinity: Option<(usize, Option<usize>)>,
    /// Zero-copy TCP sending (iperf3's -Z): MSG_ZEROCOPY, or sendfile where the kernel would
    /// copy anyway (a local receiver). Also asks the server for it under -R.
    #[arg(short = 'Z', long = "zerocopy")]
    pub zerocopy: bool,
    /// The TCP receiver discards data in the kernel without copying it (MSG_TRUNC, iperf3
    /// 3.19+); the server's receiver too.
    #[arg(long = "skip-rx-copy")]
    pub skip_rx_copy: bool,
    /// Ask a 3.21 server for UDP GSO/GRO (routerbench's own ends batch UDP anyway).
    #[arg(long = "gsro")]
    pub gsro: bool,
}

impl TestOpts {
    /// Copies the zero-copy and UDP offload flags into `p`.
    pub fn apply_copy_modes(&self, p: &mut crate::wire::iperf3::TestParams) {
        use crate::wire::iperf3::UdpOffload;
        p.zerocopy = self.zerocopy;
        p.skip_rx_copy = self.skip_rx_copy;
        if self.gsro && self.udp {
            let on = UdpOffload {
                on: true,
                dg_size: 0,
                bf_size: 0,
            };
            p.gso = Some(on);
            p.gro = Some(on);
        }
    }
}

/// A count of seconds: `-5` says "must be positive", not "unexpected argument".
pub fn non_negative_u32(s: &str) -> Result<u32, String> {
    match s.trim().parse::<i64>() {
        Ok(v) if v < 0 => Err(format!("{v} must be positive")),
        Ok(v) => u32::try_from(v).map_err(|_| format!("{v} is too large")),
        Err(_) => Err(format!("{s:?} is not a whole number of seconds")),
    }
}

/// A count: `-5` says "must be positive".
pub fn non_negative_u64(s: &str) -> Result<u64, String> {
    match s.trim().parse::<i128>() {
        Ok(v) if v < 0 => Err(format!("{v} must be positive")),
        Ok(v) => u64::try_from(v).map_err(|_| format!("{v} is too large")),
        Err(_) => Err(format!("{s:?} is not a whole number")),
    }
}

/// `-A n[,m]`.
pub fn parse_affinity(s: &str) -> Result<(usize, Option<usize>), String> {
    let bad = || format!("bad affinity {s:?}: give a CPU number n, or n,m (client,server)");
    let (a, b) = match s.split_once(',') {
        Some((a, b)) => (a, Some(b)),
        None => (s, None),
    };
    let n = a.trim().parse().map_err(|_| bad())?;
    let m = b.map(|b| b.trim().parse().map_err(|_| bad())).transpose()?;
    Ok((n, m))
}

impl TestOpts {
    /// The TOS byte asked for with -S or --dscp.
    pub fn tos_byte(&self) -> anyhow::Result<Option<u8>> {
        use crate::net::sockopt::{parse_dscp, parse_int, tos_from_dscp};
        if let Some(t) = &self.tos {
            let v = parse_int(t).filter(|&v| v <= 255);
            return v
                .map(|v| Some(v as u8))
                .ok_or_else(|| anyhow::anyhow!("bad TOS {t:?}: give 0..255, e.g. 0x10"));
        }
        if let Some(d) = &self.dscp {
            return parse_dscp(d)
                .map(|d| Some(tos_from_dscp(d)))
                .ok_or_else(|| {
                    anyhow::anyhow!("bad DSCP {d:?}: give 0..63 or a name like ef, af41, cs1")
                });
        }
        Ok(None)
    }
}

/// iperf3's output options, shared by `client` and `server`.
#[derive(Debug, Args, Clone)]
pub struct OutputOpts {
    /// Bitrate unit: k, m, g (Kbits, Mbits, Gbits/sec) or K, M, G (KBytes, MBytes, GBytes/sec).
    #[arg(short = 'f', long = "format", value_parser = parse_format, value_name = "k|m|g|K|M|G")]
    pub format: Option<char>,
    /// More output: CPU utilisation and congestion control (client), log lines (server).
    #[arg(short = 'V', short_alias = 'v', long = "verbose")]
    pub verbose: bool,
    /// Write the output to FILE (appended) instead of stdout and stderr.
    #[arg(long = "logfile", value_name = "FILE")]
    pub logfile: Option<std::path::PathBuf>,
    /// Flush the output after every line (with --logfile: lines reach the file at once).
    #[arg(long = "forceflush")]
    pub forceflush: bool,
    /// Prefix every output line with the time; FORMAT is strftime(3)'s (default "%c ").
    #[arg(long = "timestamps", value_name = "FORMAT", num_args = 0..=1,
          default_missing_value = crate::cli::common::log_sink::DEFAULT_TIMESTAMP_FORMAT,
          require_equals = true)]
    pub timestamps: Option<String>,
}

/// `-f k|m|g|K|M|G` (also `a`, adaptive).
pub fn parse_format(s: &str) -> Result<char, String> {
    let mut chars = s.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) if "kmgKMGa".contains(c) => Ok(c),
        _ => Err(format!(
            "bad format {s:?}: use k, m, g (Kbits, Mbits, Gbits/sec) or K, M, G (KBytes, \
             MBytes, GBytes/sec)"
        )),
    }
}

impl OutputOpts {
    /// Applies `-f` and opens the sink (stdout, or the log file) for a client.
    pub fn client_sink(&self) -> anyhow::Result<crate::cli::common::log_sink::LogSink> {
        if let Some(f) = self.format {
            crate::report::iperf3::set_format(f).map_err(|e| anyhow::anyhow!("-f: {e}"))?;
        }
        crate::cli::common::log_sink::LogSink::for_client(
            self.logfile.as_deref(),
            self.timestamps.clone(),
            self.forceflush,
            self.verbose,
        )
    }
}

/// Prints intervals as they come (text mode), in iperf3's layout.
pub struct TextIntervals<'a> {
    out: &'a crate::cli::common::log_sink::LogSink,
    first: std::sync::atomic::AtomicBool,
    /// Streams per direction (iperf3 separates interval blocks only with several).
    parallel: usize,
}

impl<'a> TextIntervals<'a> {
    pub fn new(out: &'a crate::cli::common::log_sink::LogSink, parallel: usize) -> Self {
        TextIntervals {
            out,
            first: true.into(),
            parallel,
        }
    }
}

impl IntervalSink for TextIntervals<'_> {
    fn started(&self, connected: &[Connected]) {
        self.out
            .output(&crate::report::iperf3::render_connected(connected));
    }
    fn interval(&self, iv: &Interval) {
        use std::sync::atomic::Ordering;
        let first = self.first.swap(false, Ordering::Relaxed);
        self.out
            .output(&crate::report::iperf3::render_interval_block(
                iv,
                first,
                self.parallel,
                false,
            ));
    }
}

/// Checks the test options before anything connects: sizes, rates and times that would
/// make a meaningless test.
pub fn check_test_opts(t: &TestOpts) -> anyhow::Result<()> {
    if t.time == 0 && t.bytes.is_none() && t.blockcount.is_none() {
        anyhow::bail!("-t must be positive (seconds to transmit), or give -n/-k");
    }
    if t.bytes == Some(0) {
        anyhow::bail!("-n must be positive (bytes to transmit, e.g. 50M)");
    }
    if t.blockcount == Some(0) {
        anyhow::bail!("-k must be positive (blocks to transmit)");
    }
    if t.length == Some(0) {
        anyhow::bail!("-l must be positive (block size, e.g. 128K)");
    }
    if t.window == Some(0) {
        anyhow::bail!("-w must be positive (socket buffer, e.g. 512K)");
    }
    if !(t.interval == 0.0 || (0.1..=60.0).contains(&t.interval)) {
        anyhow::bail!(
            "-i must be 0 (no intervals) or between 0.1 and 60 seconds, got {}",
            t.interval
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_sizes() {
        assert_eq!(parse_rate("100M"), Ok((100_000_000, 0)));
        assert_eq!(parse_rate("1.5G/10"), Ok((1_500_000_000, 10)));
        assert_eq!(parse_size("50M"), Ok(50 * 1024 * 1024));
        assert_eq!(parse_size("128K"), Ok(131072));
        assert!(parse_size("abc").is_err());
        assert!(parse_rate("-5M").is_err());
    }
}
