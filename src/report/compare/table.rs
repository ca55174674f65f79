//! The comparison itself: devices (a label, where the numbers come from, their figures) and one
//! line per figure any of them has, with each device's value, its ratio to the first device, its
//! rank in the line, and why it is not like-for-like. The layouts (text, markdown, CSV, JSON,
//! the HTML page) all render this one model.

use super::groups::GROUPS;
use super::model::{Better, Figure, Unit, Value, mismatches, order_of_magnitude, ratio_text};
use crate::report::rows::Row;
use serde::Serialize;

/// One compared device: a result file, a row in the wiki's format or a built-in reference.
#[derive(Debug, Clone, Serialize)]
pub struct Device {
    /// Short, for headers: hostname or board, then SoC (`--label` overrides it).
    pub label: String,
    /// The input as given (`run.json`, `ref:ea7500-v1`, `rows.txt line 3`).
    pub input: String,
    /// Where its numbers come from (a file, a forum post, a URL).
    pub source: String,
    pub figures: Vec<Figure>,
    /// The crypto row, for the wiki layout and `--reference`.
    #[serde(skip)]
    pub crypto: Option<Row>,
}

impl Device {
    /// The groups it has figures in, but identity.
    pub fn measured_groups(&self) -> Vec<&'static str> {
        let mut g: Vec<&'static str> = Vec::new();
        for f in self.figures.iter().filter(|f| f.group != "identity") {
            if !g.contains(&f.group) {
                g.push(f.group);
            }
        }
        g
    }
}

/// One device's cell of a line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    /// None: the device does not have this figure (missing, never 0).
    pub value: Option<Value>,
    /// This device's value over the first device's (numbers on both sides, both above 0).
    pub ratio: Option<f64>,
    /// 1 = best of the devices with a number here (ties share a rank).
    pub rank: Option<usize>,
    /// Why it is not like-for-like with the line's first value, one phrase per aspect.
    pub flags: Vec<String>,
}

/// One figure across the devices.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Line {
    pub group: &'static str,
    pub key: String,
    pub name: String,
    pub unit: Unit,
    pub better: Better,
    pub cells: Vec<Cell>,
}

impl Line {
    /// Ratio and rank make sense for it (not a name, not a word).
    pub fn numeric(&self) -> bool {
        self.unit != Unit::Text
    }
}

/// Devices and their lines.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub devices: Vec<Device>,
    pub lines: Vec<Line>,
}

/// `A`, `B`, … `Z`, `AA`, …: the letter of device `i`.
pub fn letter(i: usize) -> String {
    let mut n = i;
    let mut s = String::new();
    loop {
        s.insert(0, (b'A' + (n % 26) as u8) as char);
        if n < 26 {
            break;
        }
        n = n / 26 - 1;
    }
    s
}

/// Competition ranks (1, 2, 2, 4) of `values` by `better`; None where there is no number.
fn ranks(values: &[Option<f64>], better: Better) -> Vec<Option<usize>> {
    values
        .iter()
        .map(|v| {
            let v = (*v)?;
            let ahead = values
                .iter()
                .flatten()
                .filter(|o| match better {
                    Better::Higher => **o > v,
                    Better::Lower => **o < v,
                    Better::Neither => false,
                })
                .count();
            (better != Better::Neither).then_some(ahead + 1)
        })
        .collect()
}

impl Comparison {
    /// The lines of `devices`: every figure key any of them has, group by group in
    /// [`GROUPS`] order, within a group in the order of the device that has most of them.
    pub fn new(devices: Vec<Device>) -> Self {
        let mut keys: Vec<(&'static str, String)> = Vec::new();
        for g in GROUPS {
            // The device with the most figures of the group sets their order.
            let count = |d: &Device| d.figures.iter().filter(|f| f.group == g.id).count();
            let mut order: Vec<&Device> = devices.iter().collect();
            order.sort_by_key(|d| std::cmp::Reverse(count(d)));
            for d in order {
                for f in d.figures.iter().filter(|f| f.group == g.id) {
                    if !keys.iter().any(|(_, k)| *k == f.key) {
                        keys.push((g.id, f.key.clone()));
                    }
                }
            }
        }
        let lines = keys
            .into_iter()
            .filter_map(|(_, key)| line(&devices, &key))
            .collect();
        Comparison { devices, lines }
    }

    /// The same devices in another order (the first is the base of every ratio).
    pub fn reordered(self, order: &[usize]) -> Self {
        let devices = order
            .iter()
            .filter_map(|&i| self.devices.get(i).cloned())
            .collect();
        Comparison::new(devices)
    }

    /// The line `want` names: its key (`crypto.rsa-sign`), the key's last part (`rsa-sign`),
    /// the only key of a group (`loopback`), or its title (`RSA Sign`), case aside.
    pub fn find(&self, want: &str) -> Option<&Line> {
        let w = want.trim().to_ascii_lowercase();
        let by = |p: &dyn Fn(&Line) -> bool| {
            let hits: Vec<&Line> = self.lines.iter().filter(|l| p(l)).collect();
            (hits.len() == 1).then(|| hits[0])
        };
        self.lines
            .iter()
            .find(|l| l.key == w)
            .or_else(|| by(&|l| l.key.split_once('.').is_some_and(|(_, k)| k == w)))
            .or_else(|| by(&|l| l.group == w))
            .or_else(|| by(&|l| l.name.to_ascii_lowercase() == w))
    }

    /// The device order that puts the best of `line` first (devices without it last, in
    /// their order).
    pub fn order_by(&self, line: &Line) -> Vec<usize> {
        let mut idx: Vec<usize> = (0..self.devices.len()).collect();
        let key = |i: &usize| {
            let v = line.cells[*i].value.as_ref().and_then(Value::number);
            match (v, line.better) {
                (None, _) => (1, 0.0),
                (Some(x), Better::Lower) => (0, x),
                (Some(x), _) => (0, -x),
            }
        };
        idx.sort_by(|a, b| {
            let (ka, kb) = (key(a), key(b));
            ka.0.cmp(&kb.0).then(ka.1.total_cmp(&kb.1))
        });
        idx
    }

    /// The lines under the table: per other device, where it is an order of magnitude or more
    /// from the base, and how many figures each side wins (the seed's conclusion).
    pub fn conclusions(&self) -> Vec<String> {
        let mut out = Vec::new();
        let Some(base) = self.devices.first() else {
            return out;
        };
        // Runs that failed their own validity checks (docs/crypto.md), first.
        for (i, d) in self.devices.iter().enumerate() {
            let failed = d.figures.iter().find_map(|f| match &f.value {
                Value::Text(t) if f.key == "identity.validity" && t.starts_with("FAIL") => {
                    Some(t.clone())
                }
                _ => None,
            });
            if let Some(why) = failed {
                out.push(format!(
                    "✗ {} ({}) failed its validity checks ({}): its figures are not a clean \
                     measurement; run it again on an idle, unthrottled machine",
                    letter(i),
                    d.label,
                    why.trim_start_matches("FAIL: ")
                ));
            }
        }
        for (i, d) in self.devices.iter().enumerate().skip(1) {
            let (l, b) = (letter(i), letter(0));
            let big: Vec<String> = self
                .lines
                .iter()
                .filter_map(|line| {
                    let r = line.cells[i].ratio.filter(|r| order_of_magnitude(*r))?;
                    // The crypto columns' names say what they are; the rest get their group.
                    let name = match line.group {
                        "crypto" | "wireguard" => line.name.clone(),
                        g => format!("{g} {}", line.name),
                    };
                    Some(format!("{name} {}", ratio_text(r)))
                })
                .collect();
            let (mut better, mut worse) = (0, 0);
            for line in &self.lines {
                let (Some(x), Some(y)) = (line.cells[i].rank, line.cells[0].rank) else {
                    continue;
                };
                if x < y {
                    better += 1;
                } else if x > y {
                    worse += 1;
                }
            }
            if better + worse > 0 {
                out.push(format!(
                    "{l} ({}) against {b} ({}): better on {better}, worse on {worse} of the ranked figures",
                    d.label, base.label
                ));
            }
            if !big.is_empty() {
                out.push(format!(
                    "{l}/{b}, an order of magnitude or more: {}",
                    big.join(", ")
                ));
            }
        }
        out
    }

    /// Every distinct flag, numbered from 1 in the order the lines meet them: the footnotes.
    pub fn footnotes(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for line in &self.lines {
            for c in &line.cells {
                for f in &c.flags {
                    if !out.contains(f) {
                        out.push(f.clone());
                    }
                }
            }
        }
        out
    }
}

/// The line of `key` across `devices`.
fn line(devices: &[Device], key: &str) -> Option<Line> {
    let figs: Vec<Option<&Figure>> = devices
        .iter()
        .map(|d| d.figures.iter().find(|f| f.key == key))
        .collect();
    let first = figs.iter().flatten().next()?;
    let first_at = figs.iter().position(Option::is_some)?;
    let numbers: Vec<Option<f64>> = figs
        .iter()
        .map(|f| f.and_then(|f| f.value.number()))
        .collect();
    let rank = ranks(&numbers, first.better);
    let base = numbers.first().copied().flatten().filter(|b| *b > 0.0);
    let cells = figs
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let ratio = match (base, numbers[i]) {
                (Some(b), Some(x)) if x > 0.0 && i > 0 => Some(x / b),
                _ => None,
            };
            let flags = match f {
                Some(f) if i != first_at => {
                    mismatches(&first.method, &f.method, (&letter(first_at), &letter(i)))
                }
                _ => Vec::new(),
            };
            Cell {
                value: f.map(|f| f.value.clone()),
                ratio,
                rank: rank[i],
                flags,
            }
        })
        .collect();
    Some(Line {
        group: first.group,
        key: key.to_string(),
        name: first.name.clone(),
        unit: first.unit,
        better: first.better,
        cells,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letters_and_ranks() {
        assert_eq!(letter(0), "A");
        assert_eq!(letter(25), "Z");
        assert_eq!(letter(26), "AA");
        let r = ranks(&[Some(3.0), None, Some(5.0), Some(3.0)], Better::Higher);
        assert_eq!(r, [Some(2), None, Some(1), Some(2)]);
        let r = ranks(&[Some(3.0), Some(5.0)], Better::Lower);
        assert_eq!(r, [Some(1), Some(2)]);
        assert_eq!(ranks(&[Some(1.0)], Better::Neither), [None]);
    }
}
