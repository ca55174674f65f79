//! `lab capacity`: forwarding capacity through the router namespace with nothing shaping it,
//! without and with NAT, with 1 and 4 flows.

use super::error::{Context, LabError, Result};
use super::load::{LoadGenerator, LoadSpec};
use super::topology::{LabSpec, up};
use crate::results::lab::{CapacityPoint, CapacityResult};

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

/// Runs the matrix NAT off/on × flows, reconfiguring lab `plan.name` unshaped for each NAT state.
pub fn run(plan: &CapacityPlan, generator: &dyn LoadGenerator) -> Result<CapacityResult> {
    let mut points = Vec::new();
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
            Some(v) => super::vm::up(&spec, v)?,
            None => up(&spec)?,
        };
        for &flows in &plan.flows {
            let load = LoadSpec {
                flows,
                download: false,
                seconds: plan.seconds,
                cc: plan.cc.clone(),
                port: 5201,
            };
            let out = generator
                .run(&cfg, &load)
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
    }
    Ok(CapacityResult {
        generator: generator.describe(),
        points,
    })
}
