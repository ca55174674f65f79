//! A real Prometheus scrapes the agent through the lab (root, Debian's `prometheus`; ports
//! 27330–27331, and a free one for Prometheus): `routerbench server --monitor` in the router
//! namespace serves `GET /metrics` behind a token, Debian's Prometheus runs in the LAN host
//! (scraping every second with `authorization: {credentials: …}`, asking for OpenMetrics as it
//! does), and an RRUL from the LAN host to a server on the WAN host loads the router's two
//! 20 Mbit/s tbf queues. Prometheus's HTTP API must then show the router's root qdisc backlog
//! up during the load from about nothing before it, and this machine's softnet and NET_RX
//! softirq counters moving; `promtool check metrics` must pass on the agent's output. About
//! 20 s.

#![cfg(feature = "lab")]

use crate::support::lab::{can_run, guard, spawn_in, unique_name, wait_reachable};
use routerbench::lab::{self, LabSpec};
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_routerbench");
const TOKEN: &str = "scrape \"me\"";
const AGENT_PORT: u16 = 27330;
const SERVER_PORT: u16 = 27331;
const RATE: u64 = 20_000_000;

/// Prometheus, killed by PID (and its data directory removed) when dropped.
struct Prom {
    child: std::process::Child,
    dir: std::path::PathBuf,
}

impl Drop for Prom {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `GET path` on `addr` from inside `ns`, with extra header lines: (status, body).
fn get(ns: &str, addr: std::net::SocketAddr, path: &str, headers: &str) -> (u16, String) {
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}Connection: close\r\n\r\n");
    lab::netns::run_in(ns, move || {
        let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        s.write_all(req.as_bytes())?;
        let mut buf = Vec::new();
        s.read_to_end(&mut buf)?;
        let text = String::from_utf8_lossy(&buf).into_owned();
        let status = text.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
        let body = text
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or_default();
        // Prometheus answers its API chunked: drop the chunk-size lines.
        let body = if text.contains("Transfer-Encoding: chunked") {
            let mut out = String::new();
            let mut rest = body.as_str();
            while let Some((size, after)) = rest.split_once("\r\n") {
                let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
                if n == 0 || after.len() < n {
                    break;
                }
                out.push_str(&after[..n]);
                rest = after[n..].trim_start_matches("\r\n");
            }
            out
        } else {
            body
        };
        Ok((status, body))
    })
    .unwrap()
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// One instant query at Unix time `at`: every series' value.
fn query(ns: &str, prom: std::net::SocketAddr, q: &str, at: f64) -> Vec<(serde_json::Value, f64)> {
    let path = format!("/api/v1/query?query={}&time={at:.3}", urlencode(q));
    let (status, body) = get(ns, prom, &path, "");
    assert_eq!(status, 200, "{q}: {body}");
    let doc: serde_json::Value = serde_json::from_str(&body).unwrap();
    doc["data"]["result"]
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .map(|r| {
            let v = r["value"][1].as_str().unwrap().parse().unwrap();
            (r["metric"].clone(), v)
        })
        .collect()
}

fn now() -> f64 {
    routerbench::util::time::unix_now_f64()
}

#[test]
fn prometheus_sees_the_queue_fill_and_the_softirqs_move_during_rrul() {
    let _alone = crate::support::alone();
    if !can_run("lab_prometheus", &["ip", "tc"]) {
        return;
    }
    for tool in ["prometheus", "promtool"] {
        if Command::new(tool).arg("--version").output().is_err() {
            eprintln!("skip lab_prometheus: {tool} not installed (apt-get install prometheus)");
            return;
        }
    }
    let started = Instant::now();
    let name = unique_name("p");
    let _guard = guard(&name);
    let cfg = lab::up(&LabSpec {
        name: name.clone(),
        up_rate_bps: Some(RATE),
        down_rate_bps: Some(RATE),
        buffer_bytes: 64_000,
        ..LabSpec::default()
    })
    .unwrap();
    let port = AGENT_PORT.to_string();
    let _agent = spawn_in(
        &cfg.ns_rtr,
        &[
            "server",
            "-p",
            &port,
            "-q",
            "--monitor",
            "--monitor-token",
            TOKEN,
        ],
    );
    let _server = spawn_in(
        &cfg.ns_wan,
        &["server", "-p", &SERVER_PORT.to_string(), "-q"],
    );
    let target: std::net::SocketAddr = format!("{}:{AGENT_PORT}", cfg.rtr_lan_ip).parse().unwrap();
    wait_reachable(&cfg.ns_lan, target);
    wait_reachable(
        &cfg.ns_lan,
        format!("{}:{SERVER_PORT}", cfg.wan_ip).parse().unwrap(),
    );

    // The agent's own output passes promtool, and the token is enforced.
    let bearer = format!("Authorization: Bearer {TOKEN}\r\n");
    let (status, _) = get(&cfg.ns_lan, target, "/metrics", "");
    assert_eq!(status, 401, "a scrape without the token");
    let (status, text) = get(&cfg.ns_lan, target, "/metrics", &bearer);
    assert_eq!(status, 200, "{text}");
    assert!(
        text.contains("node_qdisc_backlog{device=\"rtr-wan\",kind=\"tbf\"}"),
        "{text}"
    );
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    promtool
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = promtool.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // Prometheus in the LAN host, on a port free there.
    let prom_port = lab::netns::run_in(&cfg.ns_lan, || {
        Ok(std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port())
    })
    .unwrap();
    let prom_addr: std::net::SocketAddr = format!("127.0.0.1:{prom_port}").parse().unwrap();
    let dir = std::env::temp_dir().join(format!("rb-lab-prom-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("prometheus.yml"),
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: router\n    \
             authorization:\n      credentials: '{TOKEN}'\n    static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let child = Command::new("ip")
        .args(["netns", "exec", &cfg.ns_lan, "prometheus"])
        .arg(format!(
            "--config.file={}",
            dir.join("prometheus.yml").display()
        ))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address={prom_addr}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
        .spawn()
        .unwrap();
    let _prom = Prom {
        child,
        dir: dir.clone(),
    };
    // Ready, and a first successful scrape (at most 20 s).
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let up = lab::netns::run_in(&cfg.ns_lan, move || {
            Ok(
                std::net::TcpStream::connect_timeout(&prom_addr, Duration::from_millis(200))
                    .is_ok(),
            )
        })
        .unwrap();
        if up && query(&cfg.ns_lan, prom_addr, "up == 1", now()).len() == 1 {
            break;
        }
        assert!(
            Instant::now() < until,
            "no successful scrape in 20 s: {}",
            std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    // Two idle scrapes, then the load.
    std::thread::sleep(Duration::from_secs(2));
    let load_start = now();
    let out = Command::new("ip")
        .args(["netns", "exec", &cfg.ns_lan, BIN, "rrul", &cfg.wan_ip])
        .args(["-p", &SERVER_PORT.to_string(), "-l", "8", "--delay", "0.5"])
        .args(["--cc", "cubic", "-q"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "rrul: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let load_end = now();
    // The last scrape of the load is in by then.
    std::thread::sleep(Duration::from_millis(1500));
    let load = load_end - load_start;
    let q = |expr: String, at: f64| query(&cfg.ns_lan, prom_addr, &expr, at);
    let backlog = |at: f64, window: f64| {
        q(
            format!(
                "max(max_over_time(node_qdisc_backlog{{kind=\"tbf\"}}[{}ms]))",
                (window * 1e3) as u64
            ),
            at,
        )
        .first()
        .map_or(0.0, |r| r.1)
    };
    let before = backlog(load_start, 2.0);
    let during = backlog(load_end, load);
    eprintln!(
        "router's tbf backlog (max over Prometheus's 1 s scrapes): {before} B in the 2 s before \
         the load, {during} B during it"
    );
    assert!(during >= 16_000.0, "the queue never filled: {during} B");
    assert!(
        before <= 3_028.0,
        "queue not idle before the load: {before} B"
    );
    let window = format!("{}ms", (load * 1e3) as u64);
    let processed = q(
        format!("sum(increase(node_softnet_processed_total[{window}]))"),
        load_end,
    );
    let net_rx = q(
        format!("sum(increase(node_softirqs_functions_total{{type=\"NET_RX\"}}[{window}]))"),
        load_end,
    );
    let cpu_softirq = q(
        format!("sum(increase(node_cpu_seconds_total{{mode=\"softirq\"}}[{window}]))"),
        load_end,
    );
    eprintln!(
        "during the load: softnet processed +{:?}, NET_RX softirqs +{:?}, softirq CPU +{:?} s",
        processed.first().map(|r| r.1),
        net_rx.first().map(|r| r.1),
        cpu_softirq.first().map(|r| r.1)
    );
    // 8 s of 2 × 20 Mbit/s through veth pairs: thousands of packets each way.
    assert!(
        processed.first().is_some_and(|r| r.1 > 1000.0),
        "{processed:?}"
    );
    assert!(net_rx.first().is_some_and(|r| r.1 > 100.0), "{net_rx:?}");
    // Every scrape of the run succeeded (Prometheus parsed the agent's OpenMetrics each time).
    let failed = q("count_over_time((up == 0)[1m:1s])".into(), now());
    assert!(failed.is_empty(), "failed scrapes: {failed:?}");
    eprintln!(
        "lab_prometheus took {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
