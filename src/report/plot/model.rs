//! What a plot shows, before any drawing: panels with lines broken where a sample is missing,
//! marks for lost probes and for outliers outside the axis, reference lines, bars and boxes.
//! Builders (latency.rs, series.rs, crypto.rs) fill it from the result model; draw.rs draws it.

use super::scale::AxisRange;

/// One line series: drawn segments, broken at missing samples and at outliers.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub label: String,
    pub segments: Vec<Vec<(f64, f64)>>,
}

/// Why a mark is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkKind {
    /// A lost probe, drawn on the bottom edge at its send time.
    Lost,
    /// A value above the axis, drawn on the top edge.
    Above,
    /// A value below the axis, drawn on the bottom edge.
    Below,
    /// A value beyond the right end of the x axis (a CDF's tail), drawn on the right edge.
    Right,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Marks {
    pub label: String,
    pub kind: MarkKind,
    /// Colour index of the series the marks belong to.
    pub series: usize,
    pub points: Vec<(f64, f64)>,
}

/// A horizontal reference line (the lab's theory, a median).
#[derive(Debug, Clone, PartialEq)]
pub struct HLine {
    pub label: String,
    pub y: f64,
}

/// A vertical marker at a time (an event: a reboot, a lost agent, the onset of throttling).
#[derive(Debug, Clone, PartialEq)]
pub struct VLine {
    pub label: String,
    pub x: f64,
}

/// One bar of a grouped bar chart: `group` is the category (column), `member` the device.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub group: usize,
    pub member: usize,
    pub value: f64,
    /// Written on the bar (the engine).
    pub text: String,
}

/// One box of a box plot, at category `slot`.
#[derive(Debug, Clone, PartialEq)]
pub struct BoxStat {
    pub slot: usize,
    pub series: usize,
    pub whisker_lo: f64,
    pub q1: f64,
    pub median: f64,
    pub q3: f64,
    pub whisker_hi: f64,
    pub n: usize,
}

/// One panel: axes, and what is drawn in them.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x: (f64, f64),
    pub y: AxisRange,
    pub log_y: bool,
    /// Category names for bar and box panels (x = 0..n).
    pub categories: Vec<String>,
    /// Names of the members of a bar group (devices), in colour order.
    pub members: Vec<String>,
    pub lines: Vec<Line>,
    pub marks: Vec<Marks>,
    pub hlines: Vec<HLine>,
    pub vlines: Vec<VLine>,
    pub bars: Vec<Bar>,
    pub boxes: Vec<BoxStat>,
    /// Shown inside the panel when it has no data ("not measured: …").
    pub note: Option<String>,
}

impl Panel {
    pub fn new(title: &str, x_label: &str, y_label: &str) -> Self {
        Self {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            x: (0.0, 1.0),
            y: AxisRange { lo: 0.0, hi: 1.0 },
            log_y: false,
            categories: Vec::new(),
            members: Vec::new(),
            lines: Vec::new(),
            marks: Vec::new(),
            hlines: Vec::new(),
            vlines: Vec::new(),
            bars: Vec::new(),
            boxes: Vec::new(),
            note: None,
        }
    }

    /// An empty panel that says why it is empty.
    pub fn missing(title: &str, x_label: &str, y_label: &str, why: &str) -> Self {
        let mut p = Self::new(title, x_label, y_label);
        p.note = Some(why.into());
        p
    }

    /// True if anything but the axes is drawn.
    pub fn has_data(&self) -> bool {
        self.lines.iter().any(|l| !l.segments.is_empty())
            || self.marks.iter().any(|m| !m.points.is_empty())
            || !self.bars.is_empty()
            || !self.boxes.is_empty()
    }

    /// Adds series `(label, points)` on the panel's y axis: a point with `None` breaks the line
    /// (and is not interpolated); a point outside the axis breaks it and gets a mark on the edge.
    pub fn add_series(&mut self, label: &str, points: &[(f64, Option<f64>)]) {
        let series = self.lines.len();
        let mut segments = Vec::new();
        let mut current: Vec<(f64, f64)> = Vec::new();
        let mut above = Vec::new();
        let mut below = Vec::new();
        for &(x, y) in points {
            match y.filter(|v| v.is_finite()) {
                Some(v) if self.y.contains(v) => current.push((x, v)),
                other => {
                    if let Some(v) = other {
                        if v > self.y.hi {
                            above.push((x, v));
                        } else {
                            below.push((x, v));
                        }
                    }
                    if !current.is_empty() {
                        segments.push(std::mem::take(&mut current));
                    }
                }
            }
        }
        if !current.is_empty() {
            segments.push(current);
        }
        self.lines.push(Line {
            label: label.into(),
            segments,
        });
        for (kind, points) in [(MarkKind::Above, above), (MarkKind::Below, below)] {
            if !points.is_empty() {
                self.marks.push(Marks {
                    label: format!("{label}: {} outside the axis", points.len()),
                    kind,
                    series,
                    points,
                });
            }
        }
    }
}

/// A figure: a title and its panels, stacked.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub title: String,
    pub panels: Vec<Panel>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_samples_break_the_line_and_outliers_are_marked() {
        let mut p = Panel::new("t", "s", "ms");
        p.y = AxisRange { lo: 0.0, hi: 10.0 };
        let pts = [
            (0.0, Some(1.0)),
            (1.0, Some(2.0)),
            (2.0, None),
            (3.0, Some(3.0)),
            (4.0, Some(500.0)),
            (5.0, Some(4.0)),
        ];
        p.add_series("a", &pts);
        let l = &p.lines[0];
        assert_eq!(l.segments.len(), 3);
        assert_eq!(l.segments[0], vec![(0.0, 1.0), (1.0, 2.0)]);
        assert_eq!(l.segments[1], vec![(3.0, 3.0)]);
        assert_eq!(p.marks.len(), 1);
        assert_eq!(p.marks[0].kind, MarkKind::Above);
        assert_eq!(p.marks[0].points, vec![(4.0, 500.0)]);
        assert!(p.has_data());
        assert!(!Panel::missing("t", "s", "ms", "not measured").has_data());
    }
}
