//! The busiest processes: CPU ticks of every process from `/proc/PID/stat`, and which used the
//! most between two scans. Bounded to 4096 processes a scan.

use super::procfs;
use super::sources;
use crate::results::monitor::ProcessCpu;
use std::collections::HashMap;
use std::path::Path;

/// CPU ticks of every process: pid → (comm, ticks). Bounded to 4096 processes.
pub(super) fn process_ticks(root: &Path) -> HashMap<u32, (String, u64)> {
    let mut out = HashMap::new();
    let Ok(dir) = std::fs::read_dir(root.join("proc")) else {
        return out;
    };
    let mut buf = String::with_capacity(1024);
    let mut path = root.join("proc");
    for e in dir.flatten().take(4096) {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        path.push(pid.to_string());
        path.push("stat");
        let parsed =
            sources::read_into(&path, &mut buf).and_then(|()| procfs::parse_pid_stat(&buf));
        if let Some(parsed) = parsed {
            out.insert(pid, parsed);
        }
        path.pop();
        path.pop();
    }
    out
}

/// The `n` processes that used the most CPU between two scans `elapsed_s` apart.
pub(super) fn busiest(
    before: &HashMap<u32, (String, u64)>,
    after: &HashMap<u32, (String, u64)>,
    elapsed_s: f64,
    n: usize,
) -> Vec<ProcessCpu> {
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .unwrap_or(1)
        .max(1) as f64;
    let mut top: Vec<ProcessCpu> = after
        .iter()
        .filter_map(|(pid, (comm, ticks))| {
            let before = before.get(pid).map_or(0, |(_, t)| *t);
            let d = ticks.saturating_sub(before);
            (d > 0).then(|| ProcessCpu {
                pid: *pid,
                comm: comm.clone(),
                cpu_pct: 100.0 * d as f64 / hz / elapsed_s.max(1e-6),
            })
        })
        .collect();
    top.sort_by(|a, b| b.cpu_pct.total_cmp(&a.cpu_pct));
    top.truncate(n);
    top
}
