//! Metrics as a monitoring system scrapes them: families of samples with names, types, units
//! and help, filled by `monitor::metrics` (the router's counters and the last results) and
//! written by `report::export::prometheus` (text 0.0.4 or OpenMetrics 1.0). docs/metrics.md
//! lists every family.

/// A family's type, as both exposition formats name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricType {
    /// Only goes up (reset at boot): sampled as `name_total`.
    Counter,
    /// A value now (gauges named `…_info` carry labels and the value 1).
    Gauge,
}

/// Which exposition format a scrape asked for (`Accept`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Prometheus text format 0.0.4.
    Text,
    /// OpenMetrics 1.0.0 text.
    OpenMetrics,
}

impl Format {
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// One sample: its labels and value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub labels: Vec<(&'static str, String)>,
    pub value: f64,
}

/// One metric family: every sample of one name.
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    /// The name without the counter's suffix: `node_cpu_seconds` for the counter sampled as
    /// `node_cpu_seconds_total`.
    pub name: &'static str,
    pub help: &'static str,
    pub kind: MetricType,
    /// The unit, when the name ends with it (`seconds`, `bytes`, `celsius`, `hertz`).
    pub unit: Option<&'static str>,
    pub samples: Vec<Sample>,
}

impl Family {
    pub fn new(name: &'static str, kind: MetricType, help: &'static str) -> Self {
        let unit = [
            "seconds",
            "bytes",
            "celsius",
            "hertz",
            "packets",
            "bits_per_second",
            "ratio",
        ]
        .into_iter()
        .find(|u| name.ends_with(&format!("_{u}")));
        Family {
            name,
            help,
            kind,
            unit,
            samples: Vec::new(),
        }
    }

    /// Adds a sample; a value that is not finite is left out (a counter never reads NaN, a
    /// missing reading is no sample, not a zero).
    pub fn push(&mut self, labels: Vec<(&'static str, String)>, value: f64) {
        if value.is_finite() {
            self.samples.push(Sample { labels, value });
        }
    }

    /// Adds a sample with one label.
    pub fn push1(&mut self, label: &'static str, v: impl Into<String>, value: f64) {
        self.push(vec![(label, v.into())], value);
    }
}

/// Everything one scrape serves, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Exposition {
    pub families: Vec<Family>,
}

impl Exposition {
    /// Adds a family if it has samples (a source that is missing exports nothing).
    pub fn add(&mut self, family: Family) {
        if !family.samples.is_empty() {
            self.families.push(family);
        }
    }
}
