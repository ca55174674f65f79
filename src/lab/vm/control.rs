//! The host's side of the VM router's control port (`lab exec`): one request to qemu's socket
//! for the virtio-serial port, one reply, each a JSON line (`guest_run.rs` serves it in the VM).

use super::guest_run::{ExecReply, ExecRequest, MAX_OUTPUT};
use crate::lab::error::{LabError, Result};
use crate::results::lab::LabConfig;
use std::io::{BufRead, BufReader, Read, Write};
use std::time::Duration;

/// Runs routerbench with `args` inside lab `cfg`'s VM router; waits at most `timeout` (+30 s
/// for the reply to travel).
pub fn exec(cfg: &LabConfig, args: &[String], timeout: Duration) -> Result<ExecReply> {
    exec_with(cfg, None, None, false, args, timeout)
}

/// [`exec`] inside Wi-Fi station `station`'s namespaces (None: the router itself).
pub fn exec_in(
    cfg: &LabConfig,
    station: Option<u32>,
    args: &[String],
    timeout: Duration,
) -> Result<ExecReply> {
    exec_with(cfg, station, None, false, args, timeout)
}

/// [`exec_in`] of one of the image's allow-listed programs (`program`, e.g. iperf3) instead of
/// routerbench; `background` starts it and returns at once (it is killed at `timeout`).
pub fn exec_with(
    cfg: &LabConfig,
    station: Option<u32>,
    program: Option<&str>,
    background: bool,
    args: &[String],
    timeout: Duration,
) -> Result<ExecReply> {
    let vm = cfg.router_vm.as_ref().ok_or_else(|| {
        LabError::State(format!(
            "lab {} has no VM router: lab exec runs inside one (`lab up --router vm`)",
            cfg.name
        ))
    })?;
    if !super::qemu::qemu_alive(vm.qemu_pid) {
        return Err(LabError::State(format!(
            "lab {}'s VM router (qemu PID {}) is not running: `lab up --router vm` again",
            cfg.name, vm.qemu_pid
        )));
    }
    let path = super::files::control_path(&cfg.name);
    let mut s = std::os::unix::net::UnixStream::connect(&path).map_err(|e| {
        LabError::State(format!(
            "cannot reach the VM's control port {} ({e}): a VM started by an older routerbench? \
             `lab up --router vm` again",
            path.display()
        ))
    })?;
    let io = |e: std::io::Error| LabError::Sys(format!("the VM's control port: {e}"));
    s.set_read_timeout(Some(timeout + Duration::from_secs(30)))
        .map_err(io)?;
    s.set_write_timeout(Some(Duration::from_secs(10)))
        .map_err(io)?;
    let mut id = [0u8; 8];
    crate::util::random::fill(&mut id);
    let req = ExecRequest {
        id: u64::from_le_bytes(id),
        program: program.map(str::to_string),
        background,
        args: args.to_vec(),
        timeout_s: timeout.as_secs_f64(),
        station,
    };
    let mut line = serde_json::to_vec(&req).map_err(|e| LabError::Unexpected(e.to_string()))?;
    line.push(b'\n');
    s.write_all(&line).map_err(io)?;
    let mut r = BufReader::new(s);
    // Replies left from an earlier client that went away are skipped (bounded).
    for _ in 0..16 {
        let mut text = Vec::new();
        let n = Read::by_ref(&mut r)
            .take((4 * MAX_OUTPUT + 4096) as u64)
            .read_until(b'\n', &mut text)
            .map_err(|e| {
                LabError::State(format!(
                    "no reply from the VM's control port within {} s ({e})",
                    (timeout + Duration::from_secs(30)).as_secs()
                ))
            })?;
        if n == 0 {
            return Err(LabError::State(
                "the VM's control port closed without a reply".into(),
            ));
        }
        let Ok(reply) = crate::util::json::from_json::<ExecReply>(&text) else {
            continue;
        };
        if reply.id != req.id {
            continue;
        }
        if let Some(e) = &reply.error {
            return Err(LabError::State(format!("inside the VM: {e}")));
        }
        return Ok(reply);
    }
    Err(LabError::State(
        "the VM's control port sent no reply to this request".into(),
    ))
}
