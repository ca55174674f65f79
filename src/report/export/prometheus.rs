//! Prometheus's text exposition format 0.0.4 and OpenMetrics 1.0.0 of a set of metric
//! families (`results::metrics`): what `GET /metrics` serves and `--metrics-file` writes.
//!
//! Written by hand: a dozen families need a name check, two escapes and two suffix rules, which
//! is less code than any crate's registry (docs/architecture.md says which were weighed). The
//! rules (docs/metrics.md, "Format"): `# HELP` and `# TYPE` before each family's first sample,
//! HELP escapes `\` and newline, label values escape `\`, `"` and newline, every line ends with
//! `\n`. A counter is sampled as `NAME_total`; in 0.0.4 its HELP and TYPE lines name
//! `NAME_total` too, in OpenMetrics they name `NAME` and the output ends with `# EOF`.
//! OpenMetrics also gets `# UNIT` where the name ends with its unit. Integral values are
//! written without a decimal point (OpenMetrics' rule; 0.0.4 parses either).

use super::{ExportError, Exporter};
use crate::results::metrics::{Exposition, Family, Format, MetricType};
use std::fmt::Write;

/// The exporter of one format.
pub struct Prometheus(pub Format);

impl Exporter<Exposition> for Prometheus {
    fn serialize(&self, input: &Exposition) -> Result<Vec<u8>, ExportError> {
        Ok(encode(input, self.0).into_bytes())
    }
}

/// Whether `name` is a valid metric (`label == false`) or label name.
pub fn valid_name(name: &str, label: bool) -> bool {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || (!label && c == ':'));
    first_ok
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || (!label && c == ':'))
        && !name.starts_with("__")
}

fn escape_help(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

fn escape_label(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// A value in Go's float syntax; integral values without a decimal point.
fn value(v: f64, out: &mut String) {
    if v.is_nan() {
        out.push_str("NaN");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "+Inf" } else { "-Inf" });
    } else if v == v.trunc() && v.abs() < 9.007_199_254_740_992e15 {
        let _ = write!(out, "{}", v as i64);
    } else {
        let _ = write!(out, "{v}");
    }
}

fn family(f: &Family, format: Format, out: &mut String) {
    let (type_word, sample_name) = match f.kind {
        MetricType::Counter => ("counter", format!("{}_total", f.name)),
        MetricType::Gauge => ("gauge", f.name.to_string()),
    };
    // 0.0.4 names a counter's family by its sample name; OpenMetrics by the bare name.
    let family_name = match format {
        Format::Text => sample_name.as_str(),
        Format::OpenMetrics => f.name,
    };
    let _ = writeln!(out, "# TYPE {family_name} {type_word}");
    if format == Format::OpenMetrics {
        if let Some(unit) = f.unit {
            let _ = writeln!(out, "# UNIT {family_name} {unit}");
        }
    }
    let _ = write!(out, "# HELP {family_name} ");
    escape_help(f.help, out);
    out.push('\n');
    for s in &f.samples {
        out.push_str(&sample_name);
        if !s.labels.is_empty() {
            out.push('{');
            for (i, (k, v)) in s.labels.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(k);
                out.push_str("=\"");
                escape_label(v, out);
                out.push('"');
            }
            out.push('}');
        }
        out.push(' ');
        value(s.value, out);
        out.push('\n');
    }
}

/// The whole exposition in `format`. Families without samples are left out (a missing source
/// exports nothing), as are names that are not valid metric names (none of ours; a guard
/// against a future typo breaking every scrape).
pub fn encode(x: &Exposition, format: Format) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let mut seen = std::collections::HashSet::new();
    for f in &x.families {
        if f.samples.is_empty() || !valid_name(f.name, false) || !seen.insert(f.name) {
            continue;
        }
        family(f, format, &mut out);
    }
    if format == Format::OpenMetrics {
        out.push_str("# EOF\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::metrics::Family;

    fn sample() -> Exposition {
        let mut x = Exposition::default();
        let mut cpu = Family::new(
            "node_cpu_seconds",
            MetricType::Counter,
            "Seconds the CPUs spent in each mode.",
        );
        cpu.push(vec![("cpu", "0".into()), ("mode", "idle".into())], 1234.5);
        cpu.push(vec![("cpu", "0".into()), ("mode", "user".into())], 17.0);
        x.add(cpu);
        let mut st = Family::new(
            "routerbench_wifi_station_signal_dbm",
            MetricType::Gauge,
            "Signal of a station, dBm\\average \"of\"\nthe last packets.",
        );
        st.push(vec![("ssid", "Café \"5G\" \\ lab\nnet".into())], -57.0);
        x.add(st);
        let mut temp = Family::new(
            "node_thermal_zone_temp",
            MetricType::Gauge,
            "Zone temperature in Celsius",
        );
        temp.push1("zone", "0", 48.25);
        temp.push1("zone", "1", f64::NAN);
        x.add(temp);
        x.add(Family::new(
            "node_softnet_dropped",
            MetricType::Counter,
            "nothing read",
        ));
        x
    }

    #[test]
    fn text_0_0_4() {
        assert_eq!(
            encode(&sample(), Format::Text),
            "# TYPE node_cpu_seconds_total counter\n\
# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.\n\
node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} 1234.5\n\
node_cpu_seconds_total{cpu=\"0\",mode=\"user\"} 17\n\
# TYPE routerbench_wifi_station_signal_dbm gauge\n\
# HELP routerbench_wifi_station_signal_dbm Signal of a station, dBm\\\\average \"of\"\\nthe last packets.\n\
routerbench_wifi_station_signal_dbm{ssid=\"Café \\\"5G\\\" \\\\ lab\\nnet\"} -57\n\
# TYPE node_thermal_zone_temp gauge\n\
# HELP node_thermal_zone_temp Zone temperature in Celsius\n\
node_thermal_zone_temp{zone=\"0\"} 48.25\n"
        );
    }

    #[test]
    fn openmetrics_1_0() {
        let text = encode(&sample(), Format::OpenMetrics);
        assert!(
            text.starts_with(
                "# TYPE node_cpu_seconds counter\n\
# UNIT node_cpu_seconds seconds\n\
# HELP node_cpu_seconds Seconds the CPUs spent in each mode.\n\
node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} 1234.5\n"
            ),
            "{text}"
        );
        assert!(
            text.ends_with("node_thermal_zone_temp{zone=\"0\"} 48.25\n# EOF\n"),
            "{text}"
        );
        assert!(!text.contains('\r'));
        assert!(!text.contains("# UNIT node_thermal_zone_temp"));
    }

    #[test]
    fn values_and_names() {
        let v = |x: f64| {
            let mut s = String::new();
            value(x, &mut s);
            s
        };
        assert_eq!(v(0.0), "0");
        assert_eq!(v(-3.0), "-3");
        assert_eq!(v(1e20), "100000000000000000000");
        assert_eq!(v(0.001), "0.001");
        assert_eq!(v(f64::INFINITY), "+Inf");
        assert_eq!(v(f64::NAN), "NaN");
        assert!(valid_name("node_cpu_seconds", false));
        assert!(valid_name("a:b", false));
        assert!(!valid_name("a:b", true));
        assert!(!valid_name("0abc", false));
        assert!(!valid_name("__reserved", true));
        assert!(!valid_name("wifi-ssid", false));
        assert!(!valid_name("", false));
    }

    #[test]
    fn a_name_is_one_family() {
        let mut x = sample();
        let again = x.families[0].clone();
        x.families.push(again);
        let text = encode(&x, Format::Text);
        assert_eq!(text.matches("# TYPE node_cpu_seconds_total").count(), 1);
    }
}
