//! What a comparison compares: a figure (one headline number or verdict of one device, with its
//! unit, which way is better, and how it was measured), and how two figures' methods differ.
//! No rendering beyond one cell's text.

use serde::Serialize;

/// How result files are read into figures.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// The block size a result's cipher columns are read at (8192: OpenSSL 3.x rows).
    pub cipher_block: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            cipher_block: crate::results::crypto::ROW_CIPHER_BLOCK,
        }
    }
}

/// What a number counts; also how it is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// bit/s, printed in kbit/s, Mbit/s or Gbit/s.
    BitsPerSec,
    /// bytes/s, printed in MB/s (10⁶ bytes/s), as the OpenWrt table's readers do.
    BytesPerSec,
    /// Operations per second (RSA/DSA sign and verify).
    PerSec,
    Ms,
    /// Responsiveness, round trips per minute (draft-ietf-ippm-responsiveness).
    Rpm,
    Count,
    Percent,
    Celsius,
    /// A word, a name or a verdict.
    Text,
}

impl Unit {
    /// The unit as a column header says it.
    pub fn header(self) -> &'static str {
        match self {
            Unit::BitsPerSec => "bit/s",
            Unit::BytesPerSec => "MB/s",
            Unit::PerSec => "per s",
            Unit::Ms => "ms",
            Unit::Rpm => "RPM",
            Unit::Count => "",
            Unit::Percent => "%",
            Unit::Celsius => "°C",
            Unit::Text => "",
        }
    }
}

/// Which way a figure is better, for ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Higher,
    Lower,
    /// Not a score (cores, BogoMIPS, a name): no rank.
    Neither,
}

/// One device's value of a figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum Value {
    Number(f64),
    /// A lower bound (a capacity search that ended before any rate failed).
    AtLeast(f64),
    Text(String),
    /// The result has the figure's place but no measurement in it, and why (the wiki row's
    /// `0.00`: OpenSSL 3 without the legacy provider).
    NotMeasured(String),
}

impl Value {
    /// The number, for ratios and ranks (a lower bound counts as its bound).
    pub fn number(&self) -> Option<f64> {
        match self {
            Value::Number(x) | Value::AtLeast(x) => Some(*x).filter(|x| x.is_finite()),
            _ => None,
        }
    }
}

/// One aspect of how a figure was measured (`engine` = `OpenSSL`, `congestion control` =
/// `reno`, `length` = `10 s`): two figures whose aspects differ are not like-for-like.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Aspect {
    pub name: &'static str,
    pub value: String,
}

/// Shorthand for an aspect.
pub fn aspect(name: &'static str, value: impl Into<String>) -> Aspect {
    Aspect {
        name,
        value: value.into(),
    }
}

/// One headline figure of one device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    /// The group's id (`crypto`, `loopback`, …: `super::groups::GROUPS`).
    pub group: &'static str,
    /// Stable and unique: `group.name` in lower case (`crypto.rsa-sign`); `--sort` takes it.
    pub key: String,
    /// As a row title says it (`RSA Sign`, `loaded latency`).
    pub name: String,
    pub unit: Unit,
    pub better: Better,
    pub value: Value,
    /// How it was measured; unknown aspects are left out.
    pub method: Vec<Aspect>,
}

/// `name` as a key segment: lower case, spaces and punctuation as `-`.
pub fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

impl Figure {
    /// A figure of `group` named `name` (its key is `group.slug(name)`).
    pub fn new(group: &'static str, name: &str, unit: Unit, better: Better, value: Value) -> Self {
        Figure {
            group,
            key: format!("{group}.{}", slug(name)),
            name: name.to_string(),
            unit,
            better,
            value,
            method: Vec::new(),
        }
    }

    /// A number, or nothing when it is absent.
    pub fn number(
        group: &'static str,
        name: &str,
        unit: Unit,
        better: Better,
        v: Option<f64>,
    ) -> Option<Self> {
        v.filter(|x| x.is_finite())
            .map(|x| Figure::new(group, name, unit, better, Value::Number(x)))
    }

    /// A word (a name, a verdict), or nothing when it is absent.
    pub fn text(group: &'static str, name: &str, v: Option<String>) -> Option<Self> {
        v.filter(|t| !t.trim().is_empty())
            .map(|t| Figure::new(group, name, Unit::Text, Better::Neither, Value::Text(t)))
    }

    pub fn with(mut self, method: &[Aspect]) -> Self {
        self.method = method.to_vec();
        self
    }
}

/// Aspects whose being unknown on one side is itself a difference: a cipher column read at an
/// unknown block size may be the 1024- or the 8192-byte one.
const STRICT: &[&str] = &["cipher block"];

/// The major.minor of a version cell (`OpenSSL 3.0.19` → `3.0`, `3.x` → `3`, `1.1.1g` → `1.1`).
fn version_prefix(v: &str) -> String {
    let digits: String = v
        .trim_start_matches(|c: char| !c.is_ascii_digit())
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    digits
        .split('.')
        .filter(|p| !p.is_empty())
        .take(2)
        .collect::<Vec<_>>()
        .join(".")
}

/// Two values of one aspect are the same method (an OpenSSL version agrees as far as both say:
/// `3.x` matches `3.0.19`, `3.0.19` does not match `3.5.6`).
fn same(name: &str, a: &str, b: &str) -> bool {
    if name == "OpenSSL" {
        let (x, y) = (version_prefix(a), version_prefix(b));
        if x.is_empty() || y.is_empty() {
            return a == b;
        }
        return x.starts_with(&y) || y.starts_with(&x);
    }
    a == b
}

/// Why figures measured as `base` and `other` are not like-for-like: one phrase per aspect that
/// differs (`engine OpenSSL (A) vs RustCrypto (B)`); empty when they are. An aspect only one side
/// knows is a difference only when it is in [`STRICT`].
pub fn mismatches(base: &[Aspect], other: &[Aspect], names: (&str, &str)) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for a in base.iter().chain(other) {
        if seen.contains(&a.name) {
            continue;
        }
        seen.push(a.name);
        let x = base
            .iter()
            .find(|b| b.name == a.name)
            .map(|b| b.value.as_str());
        let y = other
            .iter()
            .find(|b| b.name == a.name)
            .map(|b| b.value.as_str());
        let differs = match (x, y) {
            (Some(x), Some(y)) => !same(a.name, x, y),
            _ => STRICT.contains(&a.name),
        };
        if differs {
            out.push(format!(
                "{} {} ({}) vs {} ({})",
                a.name,
                x.unwrap_or("unknown"),
                names.0,
                y.unwrap_or("unknown"),
                names.1
            ));
        }
    }
    out
}

/// Three significant digits (`611`, `61.1`, `6.11`, `0.611`).
pub fn sig3(x: f64) -> String {
    let a = x.abs();
    let prec = if a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        3
    };
    let t = format!("{x:.prec$}");
    // A value that rounds to zero prints without a sign.
    if t.starts_with('-') && t[1..].chars().all(|c| c == '0' || c == '.') {
        t[1..].to_string()
    } else {
        t
    }
}

/// A bit rate with its unit, three significant digits: `6.20 Gbit/s`, `611 Mbit/s`.
pub fn bits(x: f64) -> String {
    let (v, u) = bits_scale(x.abs());
    format!("{} {u}", sig3(x / v))
}

/// The divisor and unit for a bit rate of magnitude `x`.
pub fn bits_scale(x: f64) -> (f64, &'static str) {
    if x >= 1e9 {
        (1e9, "Gbit/s")
    } else if x >= 1e6 {
        (1e6, "Mbit/s")
    } else if x >= 1e3 {
        (1e3, "kbit/s")
    } else {
        (1.0, "bit/s")
    }
}

/// A number in `unit` without the unit, as a table cell under a unit header (`bits_div`: the
/// column's bit-rate divisor).
pub fn bare(x: f64, unit: Unit, bits_div: f64) -> String {
    match unit {
        Unit::BitsPerSec => sig3(x / bits_div),
        Unit::BytesPerSec => format!("{:.1}", x / 1e6),
        Unit::PerSec | Unit::Percent | Unit::Celsius => format!("{x:.1}"),
        Unit::Rpm | Unit::Count => format!("{x:.0}"),
        Unit::Ms => sig3(x),
        Unit::Text => x.to_string(),
    }
}

/// One value with its unit, for a cell: `6.20 Gbit/s`, `98.2 MB/s`, `111.9/s`, `36.2 ms`,
/// `≥ 3.00 Gbit/s`, `not measured`.
pub fn human(v: &Value, unit: Unit) -> String {
    let with_unit = |x: f64| match unit {
        Unit::BitsPerSec => bits(x),
        Unit::BytesPerSec => format!("{:.1} MB/s", x / 1e6),
        Unit::PerSec => format!("{x:.1}/s"),
        Unit::Ms => format!("{} ms", sig3(x)),
        Unit::Rpm => format!("{x:.0} RPM"),
        Unit::Count => format!("{x:.0}"),
        Unit::Percent => format!("{x:+.1} %"),
        Unit::Celsius => format!("{x:.1} °C"),
        Unit::Text => x.to_string(),
    };
    match v {
        Value::Number(x) => with_unit(*x),
        Value::AtLeast(x) => format!("≥ {}", with_unit(*x)),
        Value::Text(t) => t.clone(),
        Value::NotMeasured(_) => "not measured".into(),
    }
}

/// A ratio as the seed reads it: `0.10×`, `1.89×`, `10.7×`, `152×`.
pub fn ratio_text(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}×")
    } else if x >= 10.0 {
        format!("{x:.1}×")
    } else {
        format!("{x:.2}×")
    }
}

/// An order of magnitude, the seed's words: 10× or more either way.
pub fn order_of_magnitude(r: f64) -> bool {
    r > 0.0 && !(0.1..10.0).contains(&r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_read_as_people_write_them() {
        assert_eq!(
            human(&Value::Number(6.2e9), Unit::BitsPerSec),
            "6.20 Gbit/s"
        );
        assert_eq!(human(&Value::Number(611e6), Unit::BitsPerSec), "611 Mbit/s");
        assert_eq!(
            human(&Value::Number(98150740.0), Unit::BytesPerSec),
            "98.2 MB/s"
        );
        assert_eq!(human(&Value::Number(111.9), Unit::PerSec), "111.9/s");
        assert_eq!(human(&Value::Number(36.24), Unit::Ms), "36.2 ms");
        assert_eq!(human(&Value::Number(0.0523), Unit::Ms), "0.052 ms");
        assert_eq!(
            human(&Value::AtLeast(3e9), Unit::BitsPerSec),
            "≥ 3.00 Gbit/s"
        );
        assert_eq!(
            human(&Value::NotMeasured("x".into()), Unit::Ms),
            "not measured"
        );
        assert_eq!(ratio_text(611e6 / 6.2e9), "0.10×");
        assert_eq!(ratio_text(10.657), "10.7×");
        assert!(order_of_magnitude(0.0938) && order_of_magnitude(10.66));
        assert!(!order_of_magnitude(0.141) && !order_of_magnitude(7.09));
        assert_eq!(sig3(-0.0001), "0.000");
        assert_eq!(slug("RSA Sign"), "rsa-sign");
        assert_eq!(slug("download: one-way up"), "download-one-way-up");
    }

    #[test]
    fn methods_differ_by_aspect_and_versions_agree_as_far_as_both_say() {
        let a = [aspect("engine", "OpenSSL"), aspect("OpenSSL", "3.x")];
        let b = [
            aspect("engine", "OpenSSL"),
            aspect("OpenSSL", "OpenSSL 3.0.19"),
        ];
        assert!(mismatches(&a, &b, ("A", "B")).is_empty());
        let c = [aspect("engine", "OpenSSL"), aspect("OpenSSL", "3.5.6")];
        assert_eq!(
            mismatches(&b, &c, ("A", "B")),
            ["OpenSSL OpenSSL 3.0.19 (A) vs 3.5.6 (B)"]
        );
        let d = [aspect("engine", "RustCrypto"), aspect("threads", "2")];
        let m = mismatches(&a, &d, ("A", "B"));
        assert_eq!(
            m,
            ["engine OpenSSL (A) vs RustCrypto (B)"],
            "unknown on one side is not a difference"
        );
        let strict = [aspect("cipher block", "8192 B")];
        assert_eq!(
            mismatches(&strict, &[], ("A", "C")),
            ["cipher block 8192 B (A) vs unknown (C)"]
        );
    }
}
