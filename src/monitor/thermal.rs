//! Temperature sensors (docs/monitor.md): every `/sys/class/thermal/thermal_zone*/temp` named by
//! its `type`, and every `/sys/class/hwmon/hwmon*/temp*_input` named by the chip's `name` and
//! the input's `label`, all in millidegrees Celsius. Found once per sampler; a device without any
//! (MT7621, most VMs) gives an empty list, which the sampler notes.

use super::sources::ProcFiles;
use crate::results::monitor::ZoneTemperature;
use std::path::Path;

/// One sensor: its name in the results and its file, relative to the root.
#[derive(Debug, Clone, PartialEq)]
pub struct Sensor {
    pub name: String,
    pub rel: String,
}

/// The first line of a small sysfs text file, trimmed.
fn first_line(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().next()?.trim();
    (!line.is_empty()).then(|| line.chars().take(48).collect())
}

/// Directory entries starting with `prefix`, in natural order (`zone2` before `zone10`).
fn entries(dir: &Path, prefix: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .take(256)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(prefix))
                .collect()
        })
        .unwrap_or_default();
    names.sort_by_key(|n| {
        let digits: String = n.chars().filter(char::is_ascii_digit).collect();
        (digits.parse::<u64>().unwrap_or(u64::MAX), n.clone())
    });
    names.truncate(64);
    names
}

/// Every thermal zone and hwmon temperature input under `root`.
pub fn sensors(root: &Path) -> Vec<Sensor> {
    let mut out = Vec::new();
    let thermal = root.join("sys/class/thermal");
    for zone in entries(&thermal, "thermal_zone") {
        let rel = format!("sys/class/thermal/{zone}/temp");
        if !root.join(&rel).exists() {
            continue;
        }
        let kind = first_line(&thermal.join(&zone).join("type")).unwrap_or_else(|| "zone".into());
        out.push(Sensor {
            name: format!("{kind} ({zone})"),
            rel,
        });
    }
    let hwmon = root.join("sys/class/hwmon");
    for chip in entries(&hwmon, "hwmon") {
        let dir = hwmon.join(&chip);
        let chip_name = first_line(&dir.join("name")).unwrap_or_else(|| "hwmon".into());
        for i in 1..=16 {
            let rel = format!("sys/class/hwmon/{chip}/temp{i}_input");
            if !root.join(&rel).exists() {
                continue;
            }
            let label = first_line(&dir.join(format!("temp{i}_label")))
                .unwrap_or_else(|| format!("temp{i}"));
            out.push(Sensor {
                name: format!("{chip_name} {label} ({chip})"),
                rel,
            });
        }
    }
    out
}

/// Reads every sensor: the readings in range (−40…200 °C; a disconnected probe reads
/// nonsense) and the hottest of them.
pub fn read(files: &mut ProcFiles, sensors: &[Sensor]) -> (Vec<ZoneTemperature>, Option<f64>) {
    let mut all = Vec::with_capacity(sensors.len());
    for s in sensors {
        let Some(milli) = files
            .read(&s.rel)
            .and_then(|t| t.trim().parse::<f64>().ok())
        else {
            continue;
        };
        let c = milli / 1000.0;
        if (-40.0..200.0).contains(&c) {
            all.push(ZoneTemperature {
                zone: s.name.clone(),
                c,
            });
        }
    }
    let max = all.iter().map(|z| z.c).reduce(f64::max);
    (all, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_and_hwmon_inputs_are_named_and_read() {
        let root = std::env::temp_dir().join(format!("rb-thermal-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (zone, kind, milli) in [
            ("thermal_zone10", "cpu-thermal", "61000"),
            ("thermal_zone2", "soc", "48500"),
        ] {
            let d = root.join("sys/class/thermal").join(zone);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("type"), format!("{kind}\n")).unwrap();
            std::fs::write(d.join("temp"), format!("{milli}\n")).unwrap();
        }
        // A cooling device is not a zone.
        std::fs::create_dir_all(root.join("sys/class/thermal/cooling_device0")).unwrap();
        let h = root.join("sys/class/hwmon/hwmon0");
        std::fs::create_dir_all(&h).unwrap();
        std::fs::write(h.join("name"), "mt7915_phy0\n").unwrap();
        std::fs::write(h.join("temp1_input"), "72000\n").unwrap();
        std::fs::write(h.join("temp2_input"), "-273000\n").unwrap();
        std::fs::write(h.join("temp2_label"), "broken\n").unwrap();
        let s = sensors(&root);
        let names: Vec<&str> = s.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "soc (thermal_zone2)",
                "cpu-thermal (thermal_zone10)",
                "mt7915_phy0 temp1 (hwmon0)",
                "mt7915_phy0 broken (hwmon0)"
            ]
        );
        let mut files = ProcFiles::new(&root);
        let (all, max) = read(&mut files, &s);
        assert_eq!(all.len(), 3, "the out-of-range probe is left out: {all:?}");
        assert_eq!(all[0].c, 48.5);
        assert_eq!(max, Some(72.0));
        assert!(sensors(&root.join("nothing")).is_empty());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
