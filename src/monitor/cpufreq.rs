//! cpufreq's view of each CPU (docs/crypto.md, "Does the row check itself?"):
//! `/sys/devices/system/cpu/cpuN/cpufreq/` `scaling_cur_freq`, `scaling_max_freq`,
//! `cpuinfo_max_freq` (kHz) and, where the kernel has `CONFIG_CPU_FREQ_STAT`,
//! `stats/time_in_state` (`kHz ticks` per line, ticks of 10 ms). CPUs that share a policy share
//! one directory (`cpuN/cpufreq` links to `cpufreq/policyM`), so each policy is read once.
//! A machine without cpufreq (MT7621, most VMs) has none of it: an empty list.

use crate::results::validity::StateTime;
use std::path::Path;

/// One policy as read at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PolicyRead {
    /// The first CPU whose `cpufreq/` leads to the policy.
    pub cpu: u32,
    /// Every CPU of the policy (`related_cpus`, else the CPUs found linking to it).
    pub cpus: Vec<u32>,
    pub cur_khz: Option<u64>,
    pub max_khz: Option<u64>,
    pub hw_max_khz: Option<u64>,
    /// `(kHz, ticks of 10 ms)`; None without `stats/time_in_state`.
    pub time_in_state: Option<Vec<(u64, u64)>>,
}

/// `stats/time_in_state`: one `FREQ TIME` pair per line; other lines are skipped.
pub fn parse_time_in_state(text: &str) -> Vec<(u64, u64)> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_ascii_whitespace();
            let f = it.next()?.parse().ok()?;
            let t = it.next()?.parse().ok()?;
            Some((f, t))
        })
        .collect()
}

/// A CPU list as sysfs writes it (`0-3`, `0 1`, `0,2-3`).
pub fn parse_cpu_list(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in text.split([' ', ',', '\n']).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
                    out.extend((a..=b.min(a.saturating_add(4095))).take(4096));
                }
            }
            None => out.extend(part.parse::<u32>().ok()),
        }
    }
    out
}

fn read_u64(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The current clock of `cpu` in kHz, if cpufreq reports one.
pub fn cur_khz(root: &Path, cpu: u32) -> Option<u64> {
    read_u64(&root.join(format!(
        "sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq"
    )))
}

/// Every policy under `root` (at most 256 CPUs looked at), in CPU order.
pub fn read_all(root: &Path) -> Vec<PolicyRead> {
    let base = root.join("sys/devices/system/cpu");
    let mut cpus: Vec<u32> = std::fs::read_dir(&base)
        .map(|d| {
            d.flatten()
                .take(1024)
                .filter_map(|e| {
                    e.file_name()
                        .to_str()?
                        .strip_prefix("cpu")?
                        .parse::<u32>()
                        .ok()
                })
                .collect()
        })
        .unwrap_or_default();
    cpus.sort_unstable();
    cpus.truncate(256);
    let mut seen: Vec<(std::path::PathBuf, usize)> = Vec::new();
    let mut out: Vec<PolicyRead> = Vec::new();
    for cpu in cpus {
        let dir = base.join(format!("cpu{cpu}/cpufreq"));
        if !dir.is_dir() {
            continue;
        }
        let real = std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone());
        if let Some((_, i)) = seen.iter().find(|(p, _)| *p == real) {
            if let Some(p) = out.get_mut(*i) {
                if !p.cpus.contains(&cpu) {
                    p.cpus.push(cpu);
                }
            }
            continue;
        }
        let related = std::fs::read_to_string(dir.join("related_cpus"))
            .map(|t| parse_cpu_list(&t))
            .unwrap_or_default();
        seen.push((real, out.len()));
        out.push(PolicyRead {
            cpu,
            cpus: if related.is_empty() {
                vec![cpu]
            } else {
                related
            },
            cur_khz: read_u64(&dir.join("scaling_cur_freq")),
            max_khz: read_u64(&dir.join("scaling_max_freq")),
            hw_max_khz: read_u64(&dir.join("cpuinfo_max_freq")),
            time_in_state: std::fs::read_to_string(dir.join("stats/time_in_state"))
                .ok()
                .map(|t| parse_time_in_state(&t)),
        });
    }
    out
}

/// The time-in-state difference between two readings of one policy: seconds per state, highest
/// state first, states without time left out; and the share of it below the highest state that
/// has time (percent). None when either reading has no table or no time passed.
pub fn time_in_state_delta(
    before: &[(u64, u64)],
    after: &[(u64, u64)],
) -> Option<(Vec<StateTime>, f64)> {
    let mut states: Vec<StateTime> = after
        .iter()
        .filter_map(|&(khz, t)| {
            let t0 = before.iter().find(|(f, _)| *f == khz).map_or(0, |x| x.1);
            let d = t.checked_sub(t0)?;
            (d > 0).then_some(StateTime {
                khz,
                s: d as f64 / 100.0,
            })
        })
        .collect();
    states.sort_by_key(|s| std::cmp::Reverse(s.khz));
    let total: f64 = states.iter().map(|s| s.s).sum();
    let top = states.first()?.khz;
    if total <= 0.0 {
        return None;
    }
    let below: f64 = states.iter().filter(|s| s.khz < top).map(|s| s.s).sum();
    Some((states, below / total * 100.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A capture of an IPQ8064's (Krait) time_in_state, before and after a crypto row during
    /// which the thermal driver held the CPU at 1.4 GHz part of the time.
    const TIS_BEFORE: &str =
        "384000 516214\n600000 2304\n800000 1501\n1000000 961\n1400000 5027\n1725000 40221\n";
    const TIS_AFTER: &str =
        "384000 516230\n600000 2304\n800000 1501\n1000000 961\n1400000 5927\n1725000 42321\n";

    #[test]
    fn time_in_state_moving_to_a_lower_state_is_seen() {
        let b = parse_time_in_state(TIS_BEFORE);
        let a = parse_time_in_state(TIS_AFTER);
        assert_eq!(b.len(), 6);
        let (states, below) = time_in_state_delta(&b, &a).unwrap();
        assert_eq!(
            states,
            vec![
                StateTime {
                    khz: 1725000,
                    s: 21.0
                },
                StateTime {
                    khz: 1400000,
                    s: 9.0
                },
                StateTime {
                    khz: 384000,
                    s: 0.16
                },
            ]
        );
        assert!((below - 9.16 / 30.16 * 100.0).abs() < 1e-9, "{below}");
        // All time at the top: nothing below.
        let steady = "384000 516214\n1725000 45000\n";
        let (_, below) = time_in_state_delta(
            &parse_time_in_state(TIS_BEFORE),
            &parse_time_in_state(steady),
        )
        .unwrap();
        assert_eq!(below, 0.0);
        // No time passed, or a counter that went back (a reset): no judgement.
        assert!(time_in_state_delta(&b, &b).is_none());
        assert!(time_in_state_delta(&a, &b).is_none());
        assert!(parse_time_in_state("garbage\n\n").is_empty());
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-3\n"), [0, 1, 2, 3]);
        assert_eq!(parse_cpu_list("0 1"), [0, 1]);
        assert_eq!(parse_cpu_list("0,2-3"), [0, 2, 3]);
        assert!(parse_cpu_list("x").is_empty());
    }

    #[test]
    fn policies_are_read_once_and_missing_files_are_none() {
        let root = std::env::temp_dir().join(format!("rb-cpufreq-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let cpu = root.join("sys/devices/system/cpu");
        let pol = cpu.join("cpufreq/policy0");
        std::fs::create_dir_all(pol.join("stats")).unwrap();
        std::fs::write(pol.join("scaling_cur_freq"), "1400000\n").unwrap();
        std::fs::write(pol.join("scaling_max_freq"), "1725000\n").unwrap();
        std::fs::write(pol.join("related_cpus"), "0-1\n").unwrap();
        std::fs::write(pol.join("stats/time_in_state"), TIS_BEFORE).unwrap();
        for c in ["cpu0", "cpu1"] {
            std::fs::create_dir_all(cpu.join(c)).unwrap();
            std::os::unix::fs::symlink("../cpufreq/policy0", cpu.join(c).join("cpufreq")).unwrap();
        }
        // A CPU without cpufreq, and a stray entry.
        std::fs::create_dir_all(cpu.join("cpu2")).unwrap();
        std::fs::create_dir_all(cpu.join("cpuidle")).unwrap();
        let all = read_all(&root);
        assert_eq!(all.len(), 1, "{all:?}");
        assert_eq!(all[0].cpu, 0);
        assert_eq!(all[0].cpus, [0, 1]);
        assert_eq!(all[0].cur_khz, Some(1400000));
        assert_eq!(all[0].hw_max_khz, None);
        assert_eq!(all[0].time_in_state.as_ref().map(Vec::len), Some(6));
        assert_eq!(cur_khz(&root, 1), Some(1400000));
        assert_eq!(cur_khz(&root, 2), None);
        assert!(read_all(&root.join("nothing")).is_empty());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
