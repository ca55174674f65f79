//! `lab capacity`: forwarding capacity through the router namespace with nothing shaping it,
//! without and with NAT, with 1 and 4 flows.

use super::error::{Context, LabError, Result};
use super::load::{LoadGenerator, LoadSpec};
use super::topology::{LabSpec, up};
use crate::results::lab::{CapacityPoint, CapacityResult, WireguardCheck};

/// How to measure capacity.
#[derive(Debug, Clone)]
pub struct CapacityPlan {
    /// The lab to (re)configure; it is left up, unshaped, in its last (NAT) configuration.
    pub name: String,
    pub offloads: bool,
    pub seconds: u32,
    pub flows: Vec<u32>,
    pub cc: String,
    /// The router is a VM (`--router vm`): rebuilt for each NAT state.
    pub vm: Option<super::vm::VmSpec>,
}

/// Refuses to measure with a lab that already exists: capacity rebuilds its lab unshaped and
/// deletes it afterwards, which would destroy a lab the user built with `lab up`.
pub fn check_lab_is_free(name: &str) -> Result<()> {
    super::netns::check_name(name)?;
    let taken: Vec<String> = ["lan", "rtr", "wan"]
        .iter()
        .map(|part| format!("{name}-{part}"))
        .filter(|ns| super::netns::exists(ns))
        .collect();
    let config = super::state::config_path(name);
    if !taken.is_empty() || config.exists() {
        let what = if taken.is_empty() {
            format!("its configuration {} exists", config.display())
        } else {
            format!("namespaces {} exist", taken.join(", "))
        };
        return Err(LabError::State(format!(
            "lab {name} already exists ({what}); `lab capacity` builds its own unshaped lab and \
             deletes it afterwards, so it will not touch this one: give another --name \
             (default rbcap), or remove it first with `routerbench lab down --name {name}`"
        )));
    }
    Ok(())
}

/// TCP payload per packet on a 1500-byte path (1500 − 20 IP − 20 TCP − 12 timestamps).
pub const PLAIN_PAYLOAD: f64 = 1448.0;
/// TCP payload per packet inside a WireGuard tunnel of MTU 1420.
pub const TUNNEL_PAYLOAD: f64 = 1368.0;

/// The model's prediction (docs/vm-router.md, "WireGuard"): the router spends, per packet,
/// its unencrypted forwarding time plus the AEAD's time for one 1456-byte packet.
pub fn predict_wireguard(
    flows: u32,
    plain_goodput_bps: f64,
    crypto_bytes_per_s: f64,
    measured: &super::load::LoadOutcome,
    engine: &str,
    cpu_budget_pct: Option<u32>,
) -> WireguardCheck {
    let block = f64::from(crate::results::crypto::WIREGUARD_BLOCK);
    let pps = plain_goodput_bps / 8.0 / PLAIN_PAYLOAD;
    let fwd_s = if pps > 0.0 { 1.0 / pps } else { f64::INFINITY };
    let crypto_s = if crypto_bytes_per_s > 0.0 {
        block / crypto_bytes_per_s
    } else {
        f64::INFINITY
    };
    let predicted = TUNNEL_PAYLOAD * 8.0 / (fwd_s + crypto_s);
    let predicted = if predicted.is_finite() {
        predicted
    } else {
        0.0
    };
    WireguardCheck {
        flows,
        plain_goodput_bps,
        plain_packets_per_s: pps,
        forward_us_per_packet: fwd_s * 1e6,
        crypto_engine: engine.into(),
        crypto_algorithm: "chacha20-poly1305".into(),
        crypto_bytes_per_s,
        crypto_us_per_packet: crypto_s * 1e6,
        predicted_goodput_bps: predicted,
        measured_goodput_bps: measured.goodput_bps,
        measured_seconds: measured.seconds,
        retransmits: measured.retransmits,
        error_pct: if predicted > 0.0 {
            (measured.goodput_bps - predicted) / predicted * 100.0
        } else {
            0.0
        },
        cpu_budget_pct,
    }
}

/// The crypto row inside the VM router (its static routerbench, through the control port):
/// ChaCha20-Poly1305 at 1456 B per wall-clock second, and the engine that measured it.
pub fn vm_crypto_rate(cfg: &crate::results::lab::LabConfig) -> Result<(f64, String)> {
    let args: Vec<String> = [
        "crypto",
        "--algorithms",
        "chacha20-poly1305",
        "--row-only",
        "--elapsed",
        "--seconds",
        "3",
        "-q",
        "--json",
        "-",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let r = super::vm::control::exec(cfg, &args, std::time::Duration::from_secs(300))?;
    if r.status != Some(0) {
        return Err(LabError::Measure(format!(
            "the crypto row inside the VM failed ({:?}): {}",
            r.status,
            r.stderr.trim()
        )));
    }
    let run: crate::results::RunResult = crate::util::json::from_json(r.stdout.as_bytes())
        .map_err(|e| LabError::Unexpected(format!("the VM's crypto JSON does not parse: {e}")))?;
    let c = run
        .crypto
        .ok_or_else(|| LabError::Unexpected("the VM's crypto run has no crypto result".into()))?;
    let rate = c
        .rate(
            crate::results::crypto::Algorithm::Chacha20Poly1305,
            crate::results::crypto::WIREGUARD_BLOCK,
        )
        .filter(|r| *r > 0.0)
        .ok_or_else(|| {
            LabError::Measure("the VM's crypto row has no chacha20-poly1305 at 1456 B".into())
        })?;
    Ok((rate, format!("{} {}", c.engine.name, c.engine.version)))
}

/// Runs the matrix NAT off/on × flows, reconfiguring lab `plan.name` unshaped for each NAT state.
pub fn run(plan: &CapacityPlan, generator: &dyn LoadGenerator) -> Result<CapacityResult> {
    let mut points = Vec::new();
    let mut wireguard = Vec::new();
    let wg = plan.vm.as_ref().is_some_and(|v| v.wireguard);
    for nat in [false, true] {
        let spec = LabSpec {
            name: plan.name.clone(),
            up_rate_bps: None,
            down_rate_bps: None,
            nat,
            offloads: plan.offloads,
            cc: plan.cc.clone(),
            ..LabSpec::default()
        };
        let cfg = match &plan.vm {
            Some(v) => {
                let mut v = v.clone();
                // The tunnel goes with the NAT-off boot: its plain points are the model's input.
                v.wireguard = wg && !nat;
                super::vm::up(&spec, &v)?
            }
            None => up(&spec)?,
        };
        let load = |flows: u32| LoadSpec {
            flows,
            download: false,
            seconds: plan.seconds,
            cc: plan.cc.clone(),
            port: 5201,
        };
        for &flows in &plan.flows {
            let out = generator
                .run(&cfg, &load(flows))
                .with_context(|| format!("capacity run (nat {nat}, {flows} flows) failed"))?;
            points.push(CapacityPoint {
                nat,
                flows,
                offloads: plan.offloads,
                goodput_bps: out.goodput_bps,
                seconds: out.seconds,
                retransmits: out.retransmits,
            });
        }
        if wg && !nat {
            let (rate, engine) = vm_crypto_rate(&cfg)?;
            let tunnel = super::vm::via_tunnel(&cfg)?;
            for &flows in &plan.flows {
                let out = generator.run(&tunnel, &load(flows)).with_context(|| {
                    format!("capacity through WireGuard ({flows} flows) failed")
                })?;
                let plain = points
                    .iter()
                    .find(|p| !p.nat && p.flows == flows)
                    .map_or(0.0, |p| p.goodput_bps);
                wireguard.push(predict_wireguard(
                    flows,
                    plain,
                    rate,
                    &out,
                    &engine,
                    plan.vm.as_ref().and_then(|v| v.cpu_budget_pct),
                ));
            }
        }
    }
    Ok(CapacityResult {
        generator: generator.describe(),
        points,
        cpu_budget_pct: plan.vm.as_ref().and_then(|v| v.cpu_budget_pct),
        wireguard,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::load::LoadOutcome;

    #[test]
    fn wireguard_model() {
        // 100 Mbit/s unencrypted = 8633 packets/s = 115.8 µs each; ChaCha20-Poly1305 at
        // 20 MB/s = 72.8 µs per 1456 B: 10 944 bits per 188.64 µs = 58.015 Mbit/s.
        let m = LoadOutcome {
            goodput_bps: 52.2e6,
            seconds: 5.0,
            retransmits: Some(3),
        };
        let c = predict_wireguard(4, 100e6, 20e6, &m, "RustCrypto", Some(50));
        assert!((c.plain_packets_per_s - 8632.6).abs() < 0.1, "{c:?}");
        assert!((c.forward_us_per_packet - 115.84).abs() < 0.01);
        assert!((c.crypto_us_per_packet - 72.8).abs() < 1e-9);
        assert!(
            (c.predicted_goodput_bps / 1e6 - 58.015).abs() < 0.001,
            "{c:?}"
        );
        assert!((c.error_pct + 10.024).abs() < 0.001, "{}", c.error_pct);
        assert_eq!(c.cpu_budget_pct, Some(50));
        // A crypto row that measured nothing predicts nothing, and no error is claimed.
        let z = predict_wireguard(1, 100e6, 0.0, &m, "x", None);
        assert_eq!(z.predicted_goodput_bps, 0.0);
        assert_eq!(z.error_pct, 0.0);
    }
}
