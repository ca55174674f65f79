//! `routerbench client HOST`: an iperf3 client (against iperf3 or routerbench servers) with
//! iperf3's options, interval lines and summary, or `-J`/`--json` in iperf3's schema.

use crate::cli::common::iperf3_opts::{
    OutputOpts, TestOpts, TextIntervals, check_test_opts, parse_rate,
};
use crate::cli::common::signal_flag::SignalFlag;
use crate::iperf3::client::{self, ClientConfig, Family};
use crate::iperf3::{IntervalSink, Iperf3Error};
use crate::report::export::iperf3::Iperf3Json;
use crate::wire::iperf3::Protocol;
use clap::Args;

#[derive(Debug, Args)]
pub struct ClientArgs {
    /// Server host name or address (or give it with -c, as iperf3 does).
    #[arg(required_unless_present = "client", conflicts_with = "client")]
    pub host: Option<String>,
    /// Server host name or address (iperf3's `-c HOST`).
    #[arg(short = 'c', long = "client", value_name = "HOST")]
    pub client: Option<String>,
    #[command(flatten)]
    pub output: OutputOpts,
    /// Bind the data streams to this local port (stream i to port + i), iperf3's --cport.
    #[arg(long = "cport", value_parser = clap::value_parser!(u16).range(1..))]
    pub cport: Option<u16>,
    /// Server port.
    #[arg(short = 'p', long = "port", default_value_t = crate::wire::iperf3::DEFAULT_PORT,
          value_parser = clap::value_parser!(u16).range(1..))]
    pub port: u16,
    #[command(flatten)]
    pub test: TestOpts,
    /// Ask the server for its own output.
    #[arg(long = "get-server-output")]
    pub get_server_output: bool,
    /// TCP_NODELAY on data streams.
    #[arg(short = 'N', long = "no-delay")]
    pub no_delay: bool,
    /// TCP maximum segment size.
    #[arg(short = 'M', long = "set-mss")]
    pub mss: Option<u32>,
    /// Title echoed by the server.
    #[arg(short = 'T', long = "title")]
    pub title: Option<String>,
    /// 64-bit UDP sequence numbers.
    #[arg(long = "udp-counters-64bit")]
    pub udp_counters_64bit: bool,
    /// Use "0123456789…" as payload instead of random bytes.
    #[arg(long = "repeating-payload")]
    pub repeating_payload: bool,
    /// Kernel pacing rate (SO_MAX_PACING_RATE), bit/s.
    #[arg(long = "fq-rate", value_parser = parse_rate)]
    pub fq_rate: Option<(u64, u32)>,
    /// IPv4 only.
    #[arg(short = '4', long = "version4", conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// IPv6 only.
    #[arg(short = '6', long = "version6")]
    pub ipv6: bool,
    /// Authenticate as this user (iperf3's RSA scheme); the password comes from
    /// $IPERF3_PASSWORD, as with iperf3.
    #[arg(long = "username", requires = "rsa_public_key_path")]
    pub username: Option<String>,
    /// The server's RSA public key (PEM) that encrypts the credentials.
    #[arg(
        long = "rsa-public-key-path",
        requires = "username",
        value_name = "FILE"
    )]
    pub rsa_public_key_path: Option<std::path::PathBuf>,
    /// RSA padding of the credentials: auto (OAEP, as iperf3 3.17+ clients use; if the server
    /// refuses the login, once more with PKCS#1 v1.5 for iperf3 ≤ 3.16 servers), oaep or pkcs1.
    #[arg(
        long = "rsa-padding",
        value_name = "auto|pkcs1|oaep",
        default_value = "auto"
    )]
    pub rsa_padding: crate::iperf3::auth::ServerPadding,
    /// Same as `--rsa-padding oaep`.
    #[arg(long = "rsa-oaep", conflicts_with = "rsa_padding")]
    pub rsa_oaep: bool,
    #[command(flatten)]
    pub router: crate::cli::common::router::RouterArgs,
}

/// The paddings to log in with, in order: a second one only for `--rsa-padding auto`.
fn auth_paddings(args: &ClientArgs) -> Vec<crate::iperf3::auth::Padding> {
    use crate::iperf3::auth::{Padding, ServerPadding};
    match (args.rsa_oaep, args.rsa_padding) {
        (true, _) | (false, ServerPadding::Only(Padding::Oaep)) => vec![Padding::Oaep],
        (false, ServerPadding::Only(Padding::Pkcs1)) => vec![Padding::Pkcs1],
        (false, ServerPadding::Auto) => vec![Padding::Oaep, Padding::Pkcs1],
    }
}

/// The `authtoken` for `--username` with `padding` (None without it).
fn auth_token(
    args: &ClientArgs,
    padding: crate::iperf3::auth::Padding,
) -> anyhow::Result<Option<String>> {
    let (Some(user), Some(key)) = (&args.username, &args.rsa_public_key_path) else {
        return Ok(None);
    };
    let password = std::env::var("IPERF3_PASSWORD").map_err(|_| {
        anyhow::anyhow!(
            "--username {user}: set the password in the IPERF3_PASSWORD environment variable"
        )
    })?;
    if user.is_empty()
        || user.contains(char::is_whitespace)
        || password.contains(char::is_whitespace)
    {
        anyhow::bail!(
            "--username and the password must be non-empty and without spaces (iperf3's token format)"
        );
    }
    let pem = std::fs::read_to_string(key)
        .map_err(|e| anyhow::anyhow!("--rsa-public-key-path {}: {e}", key.display()))?;
    let creds = crate::iperf3::auth::Credentials {
        user: user.clone(),
        password,
        ts: crate::iperf3::auth::now_secs(),
    };
    crate::iperf3::auth::client_token(&pem, &creds, padding)
        .map(Some)
        .map_err(|e| anyhow::anyhow!("{e}"))
}

pub fn run(args: ClientArgs) -> anyhow::Result<i32> {
    crate::util::signals::install();
    let t = &args.test;
    let host =
        args.client.clone().or(args.host.clone()).ok_or_else(|| {
            anyhow::anyhow!("no server given: routerbench client HOST (or -c HOST)")
        })?;
    check_test_opts(t)?;
    let out = args.output.client_sink()?;
    let mut cfg = ClientConfig::new(&host, args.port);
    cfg.cport = args.cport;
    cfg.family = match (args.ipv4, args.ipv6) {
        (true, _) => Family::V4,
        (_, true) => Family::V6,
        _ => Family::Any,
    };
    cfg.interval = t.interval;
    if let Some((n, m)) = t.affinity {
        crate::util::affinity::check_cpu(n).map_err(|e| anyhow::anyhow!("-A: {e}"))?;
        cfg.cpu = Some(n);
        cfg.params.server_affinity = m.map(|m| m as i64);
    }
    let p = &mut cfg.params;
    p.protocol = if t.udp { Protocol::Udp } else { Protocol::Tcp };
    p.time = t.time;
    p.num = t.bytes.unwrap_or(0);
    p.blockcount = t.blockcount.unwrap_or(0);
    p.parallel = t.parallel;
    p.reverse = t.reverse;
    p.bidirectional = t.bidir;
    p.omit = t.omit;
    if let Some((rate, burst)) = t.bitrate {
        p.bandwidth = rate;
        p.burst = burst;
    }
    p.len = t.length.map(|l| l.min(u32::MAX as u64) as u32);
    p.window = t.window.map(|w| w.min(u32::MAX as u64) as u32);
    p.congestion = t.congestion.clone();
    p.tos = t.tos_byte()?;
    p.get_server_output = args.get_server_output;
    p.nodelay = args.no_delay;
    p.mss = args.mss;
    p.title = args.title.clone();
    p.udp_counters_64bit = args.udp_counters_64bit;
    p.repeating_payload = args.repeating_payload;
    t.apply_copy_modes(p);
    p.fqrate = args.fq_rate.map(|r| r.0).unwrap_or(0);
    let paddings = auth_paddings(&args);
    p.authtoken = auth_token(&args, paddings[0])?;
    t.json.check()?;
    let sink = TextIntervals::new(&out, t.parallel as usize);
    if !t.json.on_stdout() {
        out.output(&format!("Connecting to host {host}, port {}\n", args.port));
        if t.reverse {
            out.output(&format!("Reverse mode, remote host {host} is sending\n"));
        }
    }
    let quiet = crate::iperf3::NoIntervals;
    let live: &dyn IntervalSink = if t.json.on_stdout() { &quiet } else { &sink };
    let stop = SignalFlag::default();
    let remote = crate::cli::common::router::start_router(
        &args.router,
        std::time::Duration::from_secs(u64::from(t.time) + u64::from(t.omit)),
    )?;
    let t0 = crate::util::time::unix_now_f64();
    let system_info = crate::iperf3::system_info();
    let mut outcome = client::run(&cfg, live, &stop.0);
    // An iperf3 server decrypts with its own padding only (≤ 3.16: PKCS#1 v1.5; 3.17+: OAEP
    // unless --use-pkcs1-padding) and refuses the rest as a failed login: try the other once.
    if let (Err(e), Some(&other)) = (&outcome, paddings.get(1)) {
        let refused = match e {
            Iperf3Error::ServerError(p) => p.i_errno == crate::wire::iperf3::errors::IEAUTHTEST,
            Iperf3Error::Closed(context) => *context == client::CLOSED_AFTER_TOKEN,
            _ => false,
        };
        if refused && !stop.0.load(std::sync::atomic::Ordering::Relaxed) {
            out.error(
                "routerbench: the server refused the OAEP login; trying PKCS#1 v1.5 (iperf3 ≤ 3.16 servers, or 3.17+ with --use-pkcs1-padding)",
            );
            cfg.params.authtoken = auth_token(&args, other)?;
            // iperf3 3.21 takes a moment to reset after the dropped test; a connection that
            // comes at once is closed as well.
            std::thread::sleep(std::time::Duration::from_millis(250));
            outcome = client::run(&cfg, live, &stop.0);
        }
    }
    let rc = match &outcome {
        Ok(result) => {
            // Written first, reported after the text: a failed write (its document kept
            // elsewhere) must not swallow the summary.
            let saved = if t.json.is_set() {
                let doc = Iperf3Json::new(&system_info).text(result);
                t.json.write_text(&doc, |d| out.output(d)).map(|_| ())
            } else {
                Ok(())
            };
            if !t.json.on_stdout() {
                out.output(&if args.output.verbose {
                    crate::report::iperf3::render_final_verbose(result)
                } else {
                    crate::report::iperf3::render_final(result)
                });
                if let Some(text) = &result.server_output_text {
                    out.output(&format!("\nServer output:\n{text}\n"));
                }
                if !result.interrupted {
                    out.output("\niperf Done.\n");
                }
            }
            out.flush();
            if let Err(e) = saved {
                out.error(&format!("routerbench: error: {e:#}"));
                out.flush();
                1
            } else if result.interrupted {
                crate::errln!(
                    "routerbench: interrupted: the test ended early; the summary covers the \
                     part measured"
                );
                1
            } else {
                0
            }
        }
        Err(e) => {
            if t.json.is_set() {
                let doc = format!(
                    "{}\n",
                    serde_json::json!({"start": {}, "intervals": [], "end": {}, "error": e.to_string()})
                );
                if let Err(we) = t.json.write_text(&doc, |d| out.output(d)) {
                    out.error(&format!("routerbench: {we:#}"));
                }
            }
            out.error(&format!("routerbench: error - {e}{}", hint(e)));
            out.flush();
            1
        }
    };
    // The router's view after the test's own output.
    crate::cli::common::router::finish_throughput(
        &args.router,
        remote,
        t0,
        f64::from(t.time) + f64::from(t.omit),
        t.json.on_stdout(),
        outcome.as_ref().ok(),
    )?;
    Ok(rc)
}

fn hint(e: &Iperf3Error) -> &'static str {
    match e {
        Iperf3Error::AccessDenied => {
            " (or run `routerbench server`, which runs several tests at once)"
        }
        Iperf3Error::Io { .. } => "",
        _ => "",
    }
}
