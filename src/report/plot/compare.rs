//! A plot per figure group of a comparison: grouped bars, a bar per device, one panel per unit;
//! a log scale where the devices differ by an order of magnitude or more (as the seed's do),
//! else a linear one from 0. Names and verdicts are not drawn, nor a value at or below 0.

use super::model::{Bar, Figure, Panel};
use super::scale::{AxisRange, log_range};
use crate::report::compare::model::{Unit, bits_scale};
use crate::report::compare::table::{Comparison, Line};
use crate::report::compare::{groups, letter};

/// What a panel's axis says, and the divisor from the unit's base values.
fn axis(unit: Unit, top: f64) -> (String, f64) {
    match unit {
        Unit::BitsPerSec => {
            let (div, u) = bits_scale(top);
            (u.to_string(), div)
        }
        Unit::BytesPerSec => ("MB/s (10⁶ bytes/s)".into(), 1e6),
        Unit::PerSec => ("operations per second".into(), 1.0),
        Unit::Ms => ("ms".into(), 1.0),
        Unit::Rpm => ("RPM (round trips per minute)".into(), 1.0),
        Unit::Celsius => ("°C".into(), 1.0),
        Unit::Count | Unit::Percent | Unit::Text => (String::new(), 1.0),
    }
}

/// Units drawn as bars (positive magnitudes).
fn drawn(unit: Unit) -> bool {
    !matches!(unit, Unit::Count | Unit::Percent | Unit::Text)
}

fn panel(c: &Comparison, unit: Unit, lines: &[&Line]) -> Panel {
    let values = || {
        lines.iter().flat_map(|l| {
            l.cells
                .iter()
                .filter_map(|c| c.value.as_ref().and_then(|v| v.number()))
                .filter(|x| *x > 0.0)
        })
    };
    let top = values().fold(0.0f64, f64::max);
    let low = values().fold(f64::INFINITY, f64::min);
    let (label, div) = axis(unit, top);
    let log = top > 0.0 && top / low >= 10.0;
    let scale = if log { ", log scale" } else { "" };
    let title = format!("{label}{scale}");
    // Headroom above the tallest bar for the legend (upper right): a decade on a log axis.
    let y = if log {
        log_range(values().map(|v| v / div)).map(|r| AxisRange {
            lo: r.lo,
            hi: r.hi * 10.0,
        })
    } else {
        (top > 0.0).then(|| AxisRange {
            lo: 0.0,
            hi: top / div * 1.4,
        })
    };
    let Some(y) = y else {
        return Panel::missing(&title, "", &label, "no values");
    };
    let mut p = Panel::new(&title, "", &label);
    p.log_y = log;
    p.y = y;
    p.categories = lines.iter().map(|l| l.name.clone()).collect();
    p.members = c
        .devices
        .iter()
        .enumerate()
        .map(|(i, d)| format!("{}: {}", letter(i), d.label))
        .collect();
    for (g, l) in lines.iter().enumerate() {
        for (m, cell) in l.cells.iter().enumerate() {
            if let Some(v) = cell
                .value
                .as_ref()
                .and_then(|v| v.number())
                .filter(|x| *x > 0.0)
            {
                p.bars.push(Bar {
                    group: g,
                    member: m,
                    value: v / div,
                    text: letter(m),
                });
            }
        }
    }
    p
}

/// The figure of one group (`crypto`, `loopback`, …): a panel per unit, bars per device; None
/// when fewer than two devices have something to draw in it (names and verdicts are not).
pub fn group_figure(c: &Comparison, group: &str) -> Option<Figure> {
    let lines: Vec<&Line> = c
        .lines
        .iter()
        .filter(|l| l.group == group && drawn(l.unit))
        .collect();
    let mut units: Vec<Unit> = Vec::new();
    for l in &lines {
        if !units.contains(&l.unit) {
            units.push(l.unit);
        }
    }
    let panels: Vec<Panel> = units
        .iter()
        .map(|u| {
            let of: Vec<&Line> = lines.iter().copied().filter(|l| l.unit == *u).collect();
            panel(c, *u, &of)
        })
        .filter(Panel::has_data)
        .collect();
    // A comparison needs two: a group only one device has is in that device's own sections.
    let mut members: Vec<usize> = panels
        .iter()
        .flat_map(|p| p.bars.iter().map(|b| b.member))
        .collect();
    members.sort_unstable();
    members.dedup();
    if members.len() < 2 {
        return None;
    }
    let flagged = lines
        .iter()
        .any(|l| l.cells.iter().any(|c| !c.flags.is_empty()));
    let title = groups::group(group).map_or(group, |g| g.title);
    Some(Figure {
        title: format!(
            "{title}{}",
            if flagged {
                " — ⚠ not like-for-like (see the table's notes)"
            } else {
                ""
            }
        ),
        panels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::compare::device_of_reference;
    use crate::report::reference::builtin;

    #[test]
    fn the_seeds_bars_are_on_a_log_scale_and_names_are_not_drawn() {
        let refs = builtin().unwrap();
        let get = |id: &str| refs.iter().find(|r| r.id == id).unwrap();
        let c = Comparison::new(vec![
            device_of_reference(get("ea7500-v1"), "ref:ea7500-v1"),
            device_of_reference(get("ea7500-v2"), "ref:ea7500-v2"),
        ]);
        let crypto = group_figure(&c, "crypto").unwrap();
        assert_eq!(crypto.panels.len(), 2, "MB/s and operations per second");
        assert!(crypto.panels.iter().all(|p| p.log_y));
        // DES is 0.00 on both: no bar; 12 columns × 2 devices.
        let bars: usize = crypto.panels.iter().map(|p| p.bars.len()).sum();
        assert_eq!(bars, 24);
        let lo = group_figure(&c, "loopback").unwrap();
        assert_eq!(lo.panels[0].y_label, "Gbit/s");
        assert!(
            lo.panels[0].log_y,
            "6.20 Gbit/s against 0.611: an order of magnitude"
        );
        assert!(group_figure(&c, "identity").is_none());
    }
}
