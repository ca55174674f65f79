//! Bulk load with routerbench's own iperf3-compatible server (a thread in the WAN namespace) and
//! client (a thread in the LAN namespace): no external binary, one process.

use super::error::{Context, LabError, Result};
use super::load::{LoadGenerator, LoadOutcome, LoadSpec};
use super::netns;
use crate::iperf3::{NoIntervals, client};
use crate::results::lab::LabConfig;
use crate::server::{Quiet, Server, ServerConfig};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// routerbench's iperf3 client and server inside the lab.
#[derive(Debug, Clone, Copy, Default)]
pub struct NativeIperf3;

impl LoadGenerator for NativeIperf3 {
    fn describe(&self) -> String {
        format!(
            "routerbench {} iperf3 client/server (in-process, setns)",
            env!("CARGO_PKG_VERSION")
        )
    }

    fn run(&self, lab: &LabConfig, spec: &LoadSpec) -> Result<LoadOutcome> {
        if spec.flows == 0 || spec.flows > 128 || spec.seconds == 0 || spec.seconds > 3600 {
            return Err(LabError::Input("bad load: flows 1-128 and 1-3600 s".into()));
        }
        let wan_ip: IpAddr = lab.wan_ip.parse().context("lab WAN address")?;
        let bind = SocketAddr::new(wan_ip, spec.port);
        let (tx, rx) = std::sync::mpsc::channel();
        let server = netns::spawn_in(&lab.ns_wan, move || {
            let mut scfg = ServerConfig::private(bind);
            scfg.session.interval = 0.0;
            let server = match Server::bind(scfg, Arc::new(Quiet)) {
                Ok(s) => s,
                Err(e) => {
                    let _ = tx.send(None);
                    let msg = format!("iperf3 server cannot listen on {bind}: {e}");
                    return Err(LabError::Measure(msg).into());
                }
            };
            let _ = tx.send(Some(server.stop_flag()));
            server.run().map(|_| ()).map_err(|e| {
                LabError::Measure(format!("iperf3 server in the WAN namespace: {e}")).into()
            })
        })?;
        let stop_server = rx
            .recv_timeout(Duration::from_secs(5))
            .context("the iperf3 server did not start within 5 s")?;
        let Some(stop_server) = stop_server else {
            return Err(netns::join(server)
                .err()
                .unwrap_or_else(|| LabError::Measure("iperf3 server failed".into())));
        };
        let mut ccfg = client::ClientConfig::new(&lab.wan_ip, spec.port);
        ccfg.params.time = spec.seconds;
        ccfg.params.parallel = spec.flows;
        ccfg.params.reverse = spec.download;
        ccfg.params.congestion = Some(spec.cc.clone());
        ccfg.interval = 0.0;
        ccfg.connect_timeout = Duration::from_secs(5);
        let result = netns::run_in(&lab.ns_lan, move || {
            client::run(&ccfg, &NoIntervals, &AtomicBool::new(false)).map_err(|e| {
                LabError::Measure(format!("iperf3 client in the LAN namespace: {e}")).into()
            })
        });
        if result.is_err() {
            stop_server.store(true, Ordering::Relaxed);
        }
        let served = netns::join(server);
        let r = result?;
        served?;
        Ok(LoadOutcome {
            goodput_bps: r.sum_received.bits_per_second,
            seconds: r.sum_received.seconds,
            retransmits: r.sum_sent.retransmits.and_then(|x| u64::try_from(x).ok()),
        })
    }
}
