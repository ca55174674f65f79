//! The files and process of a lab's VM router that `lab down` and `lab status` need (its
//! console, qemu's log, the image, qemu's PID): kept apart from the builder so the topology can
//! stop a VM without depending on what builds one.

use super::qemu;
use crate::lab::state;
use crate::results::lab::LabConfig;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The console log of lab `name`'s VM.
pub fn console_path(name: &str) -> PathBuf {
    PathBuf::from(state::STATE_DIR).join(format!("{name}.console"))
}

/// qemu's own stderr.
pub fn qemu_log_path(name: &str) -> PathBuf {
    PathBuf::from(state::STATE_DIR).join(format!("{name}.qemu.log"))
}

/// qemu's socket for the VM's control port (`lab exec`).
pub fn control_path(name: &str) -> PathBuf {
    PathBuf::from(state::STATE_DIR).join(format!("{name}.ctl"))
}

/// wireguard-go's UAPI sockets (one directory for every namespace).
pub const WG_UAPI_DIR: &str = "/var/run/wireguard";

/// The WAN end's WireGuard interface for lab `name`: unique per lab (wireguard-go's socket
/// directory is shared by all namespaces), at most 15 bytes.
pub fn wan_wg_ifname(name: &str) -> String {
    let h = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    format!("rbwg{:08x}", h as u32)
}

/// wireguard-go's log.
pub fn wireguard_go_log(name: &str) -> PathBuf {
    PathBuf::from(state::STATE_DIR).join(format!("{name}.wireguard-go.log"))
}

pub fn initrd_path(name: &str) -> PathBuf {
    PathBuf::from(state::STATE_DIR).join(format!("{name}.initrd.gz"))
}

/// Stops lab `name`'s VM (by the PID its configuration recorded, if it is still qemu), removes
/// its cgroup, console and image. `lab down` calls it; safe when there is no VM.
pub fn stop(name: &str) {
    if let Ok(cfg) = state::load_config(name) {
        if let Some(vm) = cfg.router_vm {
            stop_pid(vm.qemu_pid);
        }
    }
    qemu::remove_budget(name);
    let _ = std::fs::remove_file(console_path(name));
    let _ = std::fs::remove_file(initrd_path(name));
    let _ = std::fs::remove_file(qemu_log_path(name));
    let _ = std::fs::remove_file(control_path(name));
    // The WAN end of a WireGuard tunnel: wireguard-go itself goes with the WAN namespace's
    // processes; its socket stays if it was killed.
    let _ = std::fs::remove_file(
        std::path::Path::new(WG_UAPI_DIR).join(format!("{}.sock", wan_wg_ifname(name))),
    );
    let _ = std::fs::remove_file(wireguard_go_log(name));
}

/// SIGTERM, then SIGKILL after 2 s, to a qemu process; waits (bounded) until it is gone.
pub fn stop_pid(pid: i32) {
    use nix::sys::signal::{Signal, kill};
    let p = nix::unistd::Pid::from_raw(pid);
    // A qemu this process started and that has exited is a zombie until it is waited for
    // (`lab capacity` boots one VM per point): reap it. ECHILD (not ours) is fine.
    let reap = || {
        let _ = nix::sys::wait::waitpid(p, Some(nix::sys::wait::WaitPidFlag::WNOHANG));
    };
    if !qemu::qemu_alive(pid) {
        reap();
        return;
    }
    let _ = kill(p, Signal::SIGTERM);
    let t0 = Instant::now();
    while qemu::qemu_alive(pid) && t0.elapsed() < Duration::from_secs(2) {
        reap();
        std::thread::sleep(Duration::from_millis(20));
    }
    if qemu::qemu_alive(pid) {
        let _ = kill(p, Signal::SIGKILL);
        let t1 = Instant::now();
        while qemu::qemu_alive(pid) && t1.elapsed() < Duration::from_secs(2) {
            reap();
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    reap();
}

/// True if lab `cfg` has a VM router and its qemu still runs.
pub fn running(cfg: &LabConfig) -> Option<bool> {
    cfg.router_vm.as_ref().map(|v| qemu::qemu_alive(v.qemu_pid))
}
