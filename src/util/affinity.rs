//! CPU affinity of stream threads: iperf3's `-A n[,m]`.
//!
//! Nothing is pinned by default. Measured over loopback on 2 cores: pinning the two ends of a
//! connection to different cores did not beat the scheduler at -P 1 (22.0 vs 21.6 Gbit/s)
//! and halved -P 2 (19 vs 36 Gbit/s), where the scheduler keeps each connection's ends
//! together.

use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::unistd::Pid;

/// The CPUs this process may run on, ascending.
pub fn allowed_cpus() -> std::io::Result<Vec<usize>> {
    let set = sched_getaffinity(Pid::from_raw(0)).map_err(std::io::Error::from)?;
    Ok((0..CpuSet::count())
        .filter(|&c| set.is_set(c).unwrap_or(false))
        .collect())
}

/// Checks that `cpu` is one this process may use; the error names the allowed ones.
pub fn check_cpu(cpu: usize) -> Result<(), String> {
    let cpus = allowed_cpus().map_err(|e| format!("cannot read the CPU affinity mask: {e}"))?;
    if cpus.contains(&cpu) {
        Ok(())
    } else {
        Err(format!(
            "CPU {cpu} is not available to this process (available: {})",
            cpus.iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ))
    }
}

/// Pins the calling thread to `cpu`.
pub fn pin_current_thread(cpu: usize) -> std::io::Result<()> {
    let mut set = CpuSet::new();
    set.set(cpu).map_err(std::io::Error::from)?;
    sched_setaffinity(Pid::from_raw(0), &set).map_err(std::io::Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_a_cpu_and_can_pin_to_it() {
        let cpus = allowed_cpus().unwrap();
        assert!(!cpus.is_empty());
        assert!(check_cpu(cpus[0]).is_ok());
        let err = check_cpu(usize::MAX / 2).unwrap_err();
        assert!(err.contains("not available"), "{err}");
        std::thread::spawn(move || {
            pin_current_thread(cpus[0]).unwrap();
            assert_eq!(allowed_cpus().unwrap(), vec![cpus[0]]);
        })
        .join()
        .unwrap();
    }
}
