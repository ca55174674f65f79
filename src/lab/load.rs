//! Bulk TCP load through the lab: server on the WAN host, client on the LAN host. One trait, so
//! the capacity and accuracy runs do not care which client/server moves the bytes.

use super::error::{Context, LabError, Result};
use super::netns;
use super::sys::wait_deadline;
use crate::results::lab::LabConfig;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// One bulk transfer.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadSpec {
    pub flows: u32,
    /// false = upload (LAN → WAN), true = download (WAN → LAN).
    pub download: bool,
    pub seconds: u32,
    /// Congestion control set on each socket.
    pub cc: String,
    pub port: u16,
}

/// What a transfer achieved.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadOutcome {
    /// Receiver-side goodput over the whole transfer, bit/s.
    pub goodput_bps: f64,
    pub seconds: f64,
    pub retransmits: Option<u64>,
}

/// Something that can run a bulk TCP transfer between the lab's LAN and WAN hosts.
pub trait LoadGenerator: Send + Sync {
    /// For the result: which tool, which version.
    fn describe(&self) -> String;
    fn run(&self, lab: &LabConfig, spec: &LoadSpec) -> Result<LoadOutcome>;
}

/// Debian's iperf3 binary, started in the namespaces with `ip netns exec`.
#[derive(Debug, Clone)]
pub struct ExternalIperf3 {
    pub program: String,
}

impl Default for ExternalIperf3 {
    fn default() -> Self {
        Self {
            program: "iperf3".into(),
        }
    }
}

impl LoadGenerator for ExternalIperf3 {
    fn describe(&self) -> String {
        let version = std::process::Command::new(&self.program)
            .arg("--version")
            .output()
            .ok()
            .and_then(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .split_whitespace()
                    .nth(1)
                    .map(str::to_string)
            })
            .unwrap_or_else(|| "?".into());
        format!("iperf3 {version} (external, ip netns exec)")
    }

    fn run(&self, lab: &LabConfig, spec: &LoadSpec) -> Result<LoadOutcome> {
        super::sys::tool_path(&self.program)?;
        if spec.flows == 0 || spec.flows > 128 || spec.seconds == 0 || spec.seconds > 3600 {
            return Err(LabError::Input("bad load: flows 1-128 and 1-3600 s".into()));
        }
        let port = spec.port.to_string();
        let mut server = netns::command_in(&lab.ns_wan, &self.program)?
            .args(["-s", "-1", "-B", &lab.wan_ip, "-p", &port])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start the iperf3 server in the WAN namespace")?;
        let result = (|| {
            wait_listening(&lab.ns_wan, spec.port, Duration::from_secs(5))?;
            let (secs, flows) = (spec.seconds.to_string(), spec.flows.to_string());
            let mut args = vec![
                "-c",
                &lab.wan_ip,
                "-p",
                &port,
                "-t",
                &secs,
                "-P",
                &flows,
                "-C",
                &spec.cc,
                "-J",
                "--connect-timeout",
                "3000",
            ];
            if spec.download {
                args.push("-R");
            }
            let mut client = netns::command_in(&lab.ns_lan, &self.program)?
                .args(&args)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .context("cannot start the iperf3 client in the LAN namespace")?;
            let mut out = client.stdout.take();
            let reader = std::thread::spawn(move || {
                let mut s = String::new();
                if let Some(o) = out.as_mut() {
                    use std::io::Read;
                    let _ = o.read_to_string(&mut s);
                }
                s
            });
            let limit = Duration::from_secs(u64::from(spec.seconds) + 20);
            let status = wait_deadline(&mut client, limit)?;
            let json = reader.join().unwrap_or_default();
            if status.is_none() {
                return Err(LabError::State(format!(
                    "iperf3 client did not finish within {limit:?}; killed it"
                )));
            }
            parse_iperf3_json(&json)
        })();
        // The one-off server exits by itself; stop it if the client never connected.
        let _ = wait_deadline(&mut server, Duration::from_secs(2));
        result
    }
}

/// Parses iperf3 -J output: receiver goodput, seconds, sender retransmits.
pub fn parse_iperf3_json(text: &str) -> Result<LoadOutcome> {
    let v: serde_json::Value = serde_json::from_slice(text.trim().as_bytes())
        .context("iperf3 client did not print JSON (is iperf3 installed and the lab up?)")?;
    if let Some(err) = v.get("error").and_then(|e| e.as_str()) {
        return Err(LabError::Unexpected(format!("iperf3 failed: {err}")));
    }
    let end = v.get("end").context("iperf3 JSON has no \"end\" section")?;
    let recv = end
        .get("sum_received")
        .context("iperf3 JSON has no end.sum_received")?;
    let goodput_bps = recv
        .get("bits_per_second")
        .and_then(|x| x.as_f64())
        .context("iperf3 JSON has no end.sum_received.bits_per_second")?;
    let seconds = recv.get("seconds").and_then(|x| x.as_f64()).unwrap_or(0.0);
    let retransmits = end
        .get("sum_sent")
        .and_then(|s| s.get("retransmits"))
        .and_then(|x| x.as_u64());
    Ok(LoadOutcome {
        goodput_bps,
        seconds,
        retransmits,
    })
}

/// Waits until a TCP socket listens on `port` inside `ns` (reads /proc/thread-self/net/tcp
/// from a thread in that namespace).
pub fn wait_listening(ns: &str, port: u16, limit: Duration) -> Result<()> {
    let start = Instant::now();
    loop {
        let listening = netns::run_in(ns, move || {
            let text = std::fs::read_to_string("/proc/thread-self/net/tcp")
                .context("cannot read /proc/thread-self/net/tcp")?;
            Ok(tcp_listens(&text, port))
        })?;
        if listening {
            return Ok(());
        }
        if start.elapsed() > limit {
            return Err(LabError::State(format!(
                "nothing listens on TCP port {port} in {ns} after {limit:?}"
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// True if /proc/net/tcp text has a socket in LISTEN state (0A) on `port`.
pub fn tcp_listens(text: &str, port: u16) -> bool {
    let want = format!("{port:04X}");
    text.lines().skip(1).any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() > 3 && f[3] == "0A" && f[1].rsplit(':').next() == Some(want.as_str())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_lines() {
        let text = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0202C90A:1451 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 123 1 0 100 0 0 10 0\n   1: 0202C90A:1451 0201C90A:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 124 1 0 100 0 0 10 0\n";
        assert!(tcp_listens(text, 5201));
        assert!(!tcp_listens(text, 5202));
        assert!(!tcp_listens("", 5201));
    }

    #[test]
    fn iperf3_json() {
        let ok = r#"{"start":{},"intervals":[],"end":{"sum_sent":{"seconds":10.0,"bytes":23900000,"bits_per_second":19120000.0,"retransmits":19},"sum_received":{"seconds":10.03,"bytes":23890000,"bits_per_second":19055000.5}}}"#;
        let o = parse_iperf3_json(ok).unwrap();
        assert_eq!(o.retransmits, Some(19));
        assert!((o.goodput_bps - 19_055_000.5).abs() < 1e-6);
        let err = r#"{"start":{},"intervals":[],"end":{},"error":"unable to connect to server: Connection refused"}"#;
        assert!(
            parse_iperf3_json(err)
                .unwrap_err()
                .to_string()
                .contains("Connection refused")
        );
        assert!(parse_iperf3_json("").is_err());
        assert!(parse_iperf3_json(r#"{"end":{}}"#).is_err());
    }
}
