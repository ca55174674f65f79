//! What a lab leaves in `/run/routerbench-lab` (tmpfs: gone after a reboot, like the netns):
//! its configuration from `lab up`, the AQM it runs, the userspace forwarder's PIDs, counters
//! and log. Both the topology (`lab up/down/status`) and the forwarder read and write them.

use super::error::{Context, IoContext, Result};
use super::netns;
use crate::results::lab::{AqmState, LabConfig};
use std::path::PathBuf;

/// Where the lab's state files live.
pub const STATE_DIR: &str = "/run/routerbench-lab";

/// The file holding a lab's configuration.
pub fn config_path(name: &str) -> PathBuf {
    PathBuf::from(STATE_DIR).join(format!("{name}.json"))
}

/// Reads the configuration `lab up` saved for `name`.
pub fn load_config(name: &str) -> Result<LabConfig> {
    netns::check_name(name)?;
    let p = config_path(name);
    let text = std::fs::read_to_string(&p).io_context(|| {
        format!(
            "lab {name} is not up ({} missing): run `routerbench lab up --name {name}`",
            p.display()
        )
    })?;
    crate::util::json::from_json(text.as_bytes())
        .with_context(|| format!("{} is not a routerbench lab configuration", p.display()))
}

/// Saves `cfg` for the lab commands that follow `lab up`.
pub fn save_config(cfg: &LabConfig) -> Result<()> {
    std::fs::create_dir_all(STATE_DIR).io_context(|| format!("cannot create {STATE_DIR}"))?;
    let text = serde_json::to_string_pretty(cfg).context("cannot serialize lab config")?;
    write(&config_path(&cfg.name), text)
}

fn write(p: &std::path::Path, text: String) -> Result<()> {
    std::fs::write(p, text + "\n").io_context(|| format!("cannot write {}", p.display()))
}

fn aqm_path(name: &str) -> PathBuf {
    PathBuf::from(STATE_DIR).join(format!("{name}.aqm.json"))
}

/// The forwarder's process file (supervisor and worker PIDs).
pub fn pid_path(name: &str) -> PathBuf {
    PathBuf::from(STATE_DIR).join(format!("{name}.shape.json"))
}

/// The forwarder's counters, rewritten every 0.5 s.
pub fn stats_path(name: &str) -> PathBuf {
    PathBuf::from(STATE_DIR).join(format!("{name}.shape-stats.json"))
}

/// The forwarder's stdout and stderr.
pub fn log_path(name: &str) -> PathBuf {
    PathBuf::from(STATE_DIR).join(format!("{name}.shape.log"))
}

/// Records the AQM `lab up --qdisc` put on lab `name`.
pub fn save_aqm(name: &str, st: &AqmState) -> Result<()> {
    let text = serde_json::to_string_pretty(st).context("cannot serialize the AQM state")?;
    write(&aqm_path(name), text)
}

/// The AQM recorded for lab `name` (None: plain tbf/htb FIFO from `lab up`), with the
/// forwarder's PIDs if it still runs.
pub fn load_state(name: &str) -> Option<AqmState> {
    let text = std::fs::read_to_string(aqm_path(name)).ok()?;
    let mut st: AqmState = crate::util::json::from_json(text.as_bytes()).ok()?;
    if st.place == "userspace" {
        let pids = read_pids(name);
        st.forwarder_pid = pids.map(|p| p.0).filter(|&p| alive(p));
        st.worker_pid = pids.map(|p| p.1).filter(|&p| alive(p));
    }
    Some(st)
}

/// The forwarder's (supervisor, worker) PIDs from its process file.
pub fn read_pids(name: &str) -> Option<(i32, i32)> {
    let text = std::fs::read_to_string(pid_path(name)).ok()?;
    let v: serde_json::Value = serde_json::from_slice(text.as_bytes()).ok()?;
    Some((
        v.get("supervisor_pid")?.as_i64()? as i32,
        v.get("worker_pid")?.as_i64()? as i32,
    ))
}

/// True if `pid` runs a `routerbench shape` (guards against PID reuse).
pub fn alive(pid: i32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| {
            let s = String::from_utf8_lossy(&c);
            s.contains("shape")
                && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|st| st.contains(") Z "))
        })
        .unwrap_or(false)
}

/// Removes the forwarder's process, AQM and counter files (it no longer runs).
pub fn remove_forwarder_files(name: &str) {
    let _ = std::fs::remove_file(pid_path(name));
    let _ = std::fs::remove_file(aqm_path(name));
    let _ = std::fs::remove_file(stats_path(name));
}

/// Removes the forwarder's log (`lab down`: nothing of the lab stays in /run).
pub fn remove_log(name: &str) {
    let _ = std::fs::remove_file(log_path(name));
}

/// Removes the saved configuration (`lab down`).
pub fn remove_config(name: &str) {
    let _ = std::fs::remove_file(config_path(name));
}
