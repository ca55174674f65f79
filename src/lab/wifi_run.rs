//! Tests from the Wi-Fi VM router's stations (`lab up --router vm --wifi N`): `lab run TEST
//! --station K` runs the test's client inside the VM, in station K's namespace (its packets
//! cross the emulated Wi-Fi hop, the AP and the router), against the latency server in the WAN
//! namespace; `--stations K,L|all` and `lab run rtt_fair` run clients in several stations at
//! once. Each client subscribes to the router's agent from its station (the agent in the VM
//! samples the radios and stations every interval), so the Wi-Fi series are on the test's own
//! clock. Before and after, the AP's counters for each station are read (`routerbench wifi`
//! in the VM) and compared with the bytes the test moved (wifi_bytes.rs).

use super::error::{LabError, Result};
use crate::latency::TestConfig;
use crate::results::RunResult;
use crate::results::lab::{LabConfig, StationRun, VmStation};
use crate::results::wifi::{StationSummary, WifiReport, WifiSummary, jain_index};
use std::net::SocketAddr;
use std::time::Duration;

/// How long a station's download flows read after the load until the server closes: the
/// slow VM's buffers held up to ≈ 2 MB at the end of a 10 s RRUL (≈ 1–2 s to drain).
pub const DRAIN: Duration = Duration::from_secs(20);

/// One station's run.
#[derive(Debug, Clone)]
pub struct StationOutcome {
    pub summary: StationRun,
    /// Its full result (latency, and the router's samples from the agent).
    pub result: RunResult,
}

/// The Wi-Fi stations of lab `cfg`, or an error saying how to get some.
pub fn stations(cfg: &LabConfig) -> Result<Vec<VmStation>> {
    cfg.router_vm
        .as_ref()
        .and_then(|v| v.wifi.as_ref())
        .map(|w| w.stations.clone())
        .ok_or_else(|| {
            LabError::State(format!(
                "lab {} has no Wi-Fi stations: `lab up --router vm --wifi N`",
                cfg.name
            ))
        })
}

/// `K`, `K,L` or `all` against the lab's stations.
pub fn parse_stations(text: &str, have: &[VmStation]) -> Result<Vec<u32>> {
    if text.trim() == "all" {
        return Ok(have.iter().map(|s| s.station).collect());
    }
    let mut out = Vec::new();
    for part in text.split(',') {
        let k: u32 = part.trim().parse().map_err(|_| {
            LabError::Input(format!(
                "--stations {text:?}: give station numbers (1-{}), comma-separated, or all",
                have.len()
            ))
        })?;
        if !have.iter().any(|s| s.station == k) {
            return Err(LabError::Input(format!(
                "no station {k}: this lab has stations 1-{}",
                have.len()
            )));
        }
        if !out.contains(&k) {
            out.push(k);
        }
    }
    Ok(out)
}

/// The client's command line inside the VM: `test` against `server`, JSON on standard output,
/// the router's agent subscribed to when `agent` is given.
pub fn client_args(
    test: &TestConfig,
    server: SocketAddr,
    agent: Option<(&str, &str)>,
) -> Vec<String> {
    let f = |d: Duration| format!("{}", d.as_secs_f64());
    let mut a = vec![
        test.kind.flent_name().to_string(),
        server.ip().to_string(),
        "-p".into(),
        server.port().to_string(),
        "-l".into(),
        f(test.length),
        "--delay".into(),
        f(test.delay),
        "-s".into(),
        f(test.step),
        "--interval".into(),
        f(test.probe_interval),
        "-4".into(),
        "-q".into(),
        // Every byte that crossed the AP is read: the byte check compares them.
        "--drain".into(),
        f(DRAIN),
    ];
    if matches!(
        test.kind,
        crate::latency::TestKind::TcpNup | crate::latency::TestKind::TcpNdown
    ) {
        a.extend(["-n".into(), test.streams.to_string()]);
    }
    if let Some(cc) = &test.cc {
        a.extend(["--cc".into(), cc.clone()]);
    }
    if let Some((addr, token)) = agent {
        a.extend([
            "--monitor".into(),
            addr.to_string(),
            "--monitor-token".into(),
            token.to_string(),
            "--monitor-interval".into(),
            f(test.step.max(Duration::from_millis(200))),
        ]);
    }
    a.extend(["--json".into(), "-".into()]);
    a
}

/// The AP's view (`routerbench wifi --json -` in the VM, a short interval).
pub fn ap_report(cfg: &LabConfig) -> Result<WifiReport> {
    let args: Vec<String> = ["wifi", "-i", "0.2", "--json", "-"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let r = super::vm::control::exec(cfg, &args, Duration::from_secs(60))?;
    if r.status != Some(0) {
        return Err(LabError::State(format!(
            "routerbench wifi in the VM failed ({:?}): {}",
            r.status,
            r.stderr.trim()
        )));
    }
    crate::util::json::from_json(r.stdout.as_bytes())
        .map_err(|e| LabError::Unexpected(format!("routerbench wifi's JSON from the VM: {e}")))
}

/// Station `mac`'s counters from `after` minus `before` (a station that re-associated in
/// between starts from 0).
pub fn counters_between(
    before: &WifiReport,
    after: &WifiReport,
    mac: &str,
) -> Option<StationSummary> {
    let find = |r: &WifiReport| {
        r.radios
            .iter()
            .flat_map(|x| x.stations.iter())
            .find(|s| s.mac.eq_ignore_ascii_case(mac))
            .cloned()
    };
    let b = find(before).unwrap_or_default();
    let a = find(after)?;
    let d = |x: Option<u64>, y: Option<u64>| {
        let (x, y) = (x.unwrap_or(0), y.unwrap_or(0));
        if x >= y { x - y } else { x }
    };
    Some(StationSummary {
        mac: a.mac.clone(),
        dev: a.dev.clone(),
        tx_bytes: d(a.tx_bytes, b.tx_bytes),
        rx_bytes: d(a.rx_bytes, b.rx_bytes),
        tx_packets: d(a.tx_packets, b.tx_packets),
        rx_packets: d(a.rx_packets, b.rx_packets),
        ..Default::default()
    })
}

/// Runs `test` from each of `which` stations at once (one station: a plain station run).
pub fn run(cfg: &LabConfig, test: &TestConfig, which: &[u32]) -> Result<Vec<StationOutcome>> {
    super::sys::require_root()?;
    let all = stations(cfg)?;
    let vm = cfg
        .router_vm
        .as_ref()
        .ok_or_else(|| LabError::State("no VM router".into()))?;
    let ap_ip = vm
        .wifi
        .as_ref()
        .map(|w| w.ap_ip.split('/').next().unwrap_or("").to_string())
        .unwrap_or_default();
    let agent_port = vm.agent.rsplit(':').next().unwrap_or("5201").to_string();
    let agent = format!("{ap_ip}:{agent_port}");
    let (addr, service) = super::run::wan_latency_server(cfg)?;
    let outcome = (|| {
        let before = ap_report(cfg)?;
        let total = test.length + test.delay * 2 + DRAIN;
        let timeout = total + Duration::from_secs(120);
        // Every station's client subscribes to the agent: each result carries the router's
        // samples (radios and stations) on its own clock.
        let args = client_args(test, addr, Some((&agent, &vm.agent_token)));
        let replies = if which.len() == 1 {
            vec![super::vm::control::exec_in(
                cfg,
                Some(which[0]),
                &args,
                timeout,
            )?]
        } else {
            let mut a = vec![
                "vm-router".to_string(),
                "--in-stations".into(),
                which
                    .iter()
                    .map(|k| k.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
                "--in-stations-timeout".into(),
                format!("{}", timeout.as_secs_f64()),
                "--".into(),
            ];
            a.extend(args.iter().cloned());
            let r = super::vm::control::exec(cfg, &a, timeout + Duration::from_secs(30))?;
            crate::util::json::from_json::<Vec<super::vm::guest_run::ExecReply>>(
                r.stdout.as_bytes(),
            )
            .map_err(|e| {
                LabError::Unexpected(format!(
                    "the stations' replies are not JSON ({e}): {}",
                    r.stderr.trim()
                ))
            })?
        };
        let after = ap_report(cfg)?;
        let mut out = Vec::new();
        for (k, reply) in which.iter().zip(replies) {
            let st = all
                .iter()
                .find(|s| s.station == *k)
                .cloned()
                .unwrap_or_default();
            if let Some(e) = &reply.error {
                return Err(LabError::State(format!("station {k}: {e}")));
            }
            if reply.timed_out {
                return Err(LabError::Measure(format!(
                    "station {k}'s {} was killed after {} s",
                    test.kind.flent_name(),
                    timeout.as_secs()
                )));
            }
            let result: RunResult =
                crate::util::json::from_json(reply.stdout.as_bytes()).map_err(|e| {
                    LabError::Measure(format!(
                        "station {k}'s {} gave no result (exit {:?}, {e}): {}",
                        test.kind.flent_name(),
                        reply.status,
                        reply.stderr.trim()
                    ))
                })?;
            let latency = result.latency.clone().ok_or_else(|| {
                LabError::Measure(format!("station {k}'s result has no latency section"))
            })?;
            let wifi = counters_between(&before, &after, &st.mac).map(|s| WifiSummary {
                stations: vec![s],
                ..Default::default()
            });
            let bytes_check = wifi
                .as_ref()
                .map(|w| super::wifi_bytes::check(&latency, w, &w.stations[0].mac))
                .unwrap_or_default();
            let s = &latency.summary;
            out.push(StationOutcome {
                summary: StationRun {
                    station: *k,
                    mac: st.mac.clone(),
                    ip: st.ip.clone(),
                    test: test.kind.flent_name().to_string(),
                    download_mbps: s.download_mbps,
                    upload_mbps: s.upload_mbps,
                    idle_ms: s.idle_rtt_ms.median,
                    loaded_ms: s.loaded_rtt_ms.median,
                    loaded_p99_ms: s.loaded_rtt_ms.p99,
                    bytes_check,
                    latency: None,
                },
                result,
            });
        }
        Ok(out)
    })();
    service.shutdown();
    outcome
}

/// Jain's fairness index over the stations' throughputs (download + upload).
pub fn throughput_jain(runs: &[StationRun]) -> Option<f64> {
    let x: Vec<f64> = runs
        .iter()
        .map(|r| r.download_mbps.unwrap_or(0.0) + r.upload_mbps.unwrap_or(0.0))
        .collect();
    jain_index(&x)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(k: u32) -> VmStation {
        VmStation {
            station: k,
            mac: format!("02:00:00:00:0{k}:00"),
            ..Default::default()
        }
    }

    #[test]
    fn station_lists() {
        let have = [st(1), st(2)];
        assert_eq!(parse_stations("all", &have).unwrap(), [1, 2]);
        assert_eq!(parse_stations("2,1,2", &have).unwrap(), [2, 1]);
        assert!(
            parse_stations("3", &have)
                .unwrap_err()
                .to_string()
                .contains("1-2")
        );
        assert!(parse_stations("x", &have).is_err());
    }

    #[test]
    fn client_command_line() {
        let t = TestConfig {
            kind: crate::latency::TestKind::Rrul,
            length: Duration::from_secs(10),
            delay: Duration::from_secs(2),
            cc: Some("cubic".into()),
            ..TestConfig::default()
        };
        let a = client_args(
            &t,
            "10.201.2.2:5201".parse().unwrap(),
            Some(("10.201.3.1:5201", "tok")),
        );
        let s = a.join(" ");
        assert!(
            s.starts_with("rrul 10.201.2.2 -p 5201 -l 10 --delay 2"),
            "{s}"
        );
        assert!(
            s.contains("--monitor 10.201.3.1:5201 --monitor-token tok"),
            "{s}"
        );
        assert!(s.ends_with("--json -"), "{s}");
    }

    #[test]
    fn counters_and_the_check_line() {
        let mk = |tx: u64, rx: u64| WifiReport {
            radios: vec![crate::results::wifi::Radio {
                stations: vec![crate::results::wifi::Station {
                    mac: "02:00:00:00:01:00".into(),
                    tx_bytes: Some(tx),
                    rx_bytes: Some(rx),
                    tx_packets: Some(tx / 1000),
                    rx_packets: Some(rx / 1000),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let d =
            counters_between(&mk(1_000, 2_000), &mk(101_000, 52_000), "02:00:00:00:01:00").unwrap();
        assert_eq!(
            (d.tx_bytes, d.rx_bytes, d.tx_packets),
            (100_000, 50_000, 100)
        );
        assert!(counters_between(&mk(0, 0), &mk(1, 1), "02:00:00:00:09:00").is_none());
        let runs = [
            StationRun {
                download_mbps: Some(10.0),
                ..Default::default()
            },
            StationRun {
                download_mbps: Some(10.0),
                ..Default::default()
            },
        ];
        assert_eq!(throughput_jain(&runs), Some(1.0));
    }
}
