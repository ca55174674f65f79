//! Draws a [`Figure`] as one SVG with plotters' SVG backend: panels stacked, lines as drawn
//! segments (never across a gap), lost probes and outliers as marks on the axis edges, bars with
//! their engine written on them, boxes with whiskers. Text is SVG `<text>`: no font files needed.

use super::model::{Figure, MarkKind, Panel};
use plotters::coord::Shift;
use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// A plot could not be drawn (plotters' error, as text).
#[derive(Debug, thiserror::Error)]
#[error("cannot draw the plot: {0}")]
pub struct PlotError(pub String);

fn err<E: std::fmt::Display>(e: E) -> PlotError {
    PlotError(e.to_string())
}

/// Colour-blind-friendly series colours (Okabe–Ito), then darker repeats.
const COLOURS: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(120, 120, 120),
    RGBColor(240, 200, 40),
];

pub fn colour(i: usize) -> RGBColor {
    COLOURS[i % COLOURS.len()]
}

const LOST: RGBColor = RGBColor(200, 0, 0);
const PANEL_HEIGHT: u32 = 300;
const TITLE_HEIGHT: u32 = 36;

/// The SVG text of `fig`, `width` pixels wide.
pub fn to_svg(fig: &Figure, width: u32) -> Result<String, PlotError> {
    let n = fig.panels.len().max(1) as u32;
    let height = TITLE_HEIGHT + n * PANEL_HEIGHT;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let body = root
            .titled(&fig.title, ("sans-serif", 18).into_font())
            .map_err(err)?;
        let areas = body.split_evenly((n as usize, 1));
        for (panel, area) in fig.panels.iter().zip(areas.iter()) {
            draw_panel(area, panel)?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    p: &Panel,
) -> Result<(), PlotError> {
    let (x0, x1) = if p.categories.is_empty() {
        p.x
    } else {
        (-0.5, p.categories.len() as f64 - 0.5)
    };
    let x1 = if x1 > x0 { x1 } else { x0 + 1.0 };
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(&p.title, ("sans-serif", 14).into_font())
        .margin(8)
        .margin_right(16)
        .x_label_area_size(if p.categories.is_empty() { 34 } else { 44 })
        .y_label_area_size(64);
    if p.log_y {
        let lo = p.y.lo.max(f64::MIN_POSITIVE);
        let hi = p.y.hi.max(lo * 10.0);
        let mut chart = builder
            .build_cartesian_2d(x0..x1, (lo..hi).log_scale())
            .map_err(err)?;
        contents(&mut chart, p, lo, hi)
    } else {
        let mut chart = builder
            .build_cartesian_2d(x0..x1, p.y.lo..p.y.hi)
            .map_err(err)?;
        contents(&mut chart, p, p.y.lo, p.y.hi)
    }
}

fn contents<'a, DB, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y>>,
    p: &Panel,
    y_lo: f64,
    y_hi: f64,
) -> Result<(), PlotError>
where
    DB: DrawingBackend + 'a,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    draw_mesh(chart, p)?;
    let mut legend = false;
    draw_lines(chart, p, &mut legend)?;
    draw_marks(chart, p, y_lo, y_hi, &mut legend)?;
    draw_hlines(chart, p, &mut legend)?;
    draw_vlines(chart, p, y_lo, y_hi, &mut legend)?;
    bars(chart, p, y_lo, &mut legend)?;
    boxes(chart, p, &mut legend)?;
    draw_note(chart, p, y_lo, y_hi)?;
    if legend {
        draw_legend(chart)?;
    }
    Ok(())
}

/// Axes, their labels and ticks (category names on a bar or box panel).
fn draw_mesh<'a, DB, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y>>,
    p: &Panel,
) -> Result<(), PlotError>
where
    DB: DrawingBackend + 'a,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let cats = p.categories.clone();
    let cat_label = move |x: &f64| -> String {
        let i = x.round();
        if (x - i).abs() < 1e-6 && i >= 0.0 {
            cats.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(p.x_label.as_str())
        .y_desc(p.y_label.as_str())
        .label_style(("sans-serif", 11).into_font())
        .y_label_formatter(&tick)
        .light_line_style(WHITE);
    if !p.categories.is_empty() {
        mesh.x_labels(p.categories.len())
            .x_label_formatter(&cat_label)
            .disable_x_mesh();
    }
    mesh.draw().map_err(err)?;
    Ok(())
}

/// Each line's segments (a lone sample as a dot), labelled once in the legend.
fn draw_lines<'a, DB, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y>>,
    p: &Panel,
    legend: &mut bool,
) -> Result<(), PlotError>
where
    DB: DrawingBackend + 'a,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    for (i, line) in p.lines.iter().enumerate() {
        let c = colour(i);
        for (k, seg) in line.segments.iter().enumerate() {
            let drawn = if seg.len() == 1 {
                // A single sample: a dot, so it is visible, still never joined to a neighbour.
                chart
                    .draw_series(PointSeries::of_element(
                        seg.iter().copied(),
                        2,
                        c.filled(),
                        &|pt, s, st| Circle::new(pt, s, st),
                    ))
                    .map_err(err)?
            } else {
                chart
                    .draw_series(LineSeries::new(seg.iter().copied(), c.stroke_width(2)))
                    .map_err(err)?
            };
            if k == 0 && !line.label.is_empty() {
                *legend = true;
                drawn
                    .label(line.label.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c));
            }
        }
    }
    Ok(())
}

/// Lost probes and outliers as marks on the axis edges.
fn draw_marks<'a, DB, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y>>,
    p: &Panel,
    y_lo: f64,
    y_hi: f64,
    legend: &mut bool,
) -> Result<(), PlotError>
where
    DB: DrawingBackend + 'a,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    for m in &p.marks {
        let c = if m.kind == MarkKind::Lost {
            LOST
        } else {
            colour(m.series)
        };
        let at: Vec<(f64, f64)> = m
            .points
            .iter()
            .map(|&(x, y)| match m.kind {
                MarkKind::Above => (x, y_hi),
                MarkKind::Right => (p.x.1, y),
                _ => (x, y_lo),
            })
            .collect();
        *legend = true;
        let label = m.label.clone();
        match m.kind {
            MarkKind::Lost => {
                chart
                    .draw_series(
                        at.into_iter()
                            .map(|pt| Cross::new(pt, 5, c.stroke_width(2))),
                    )
                    .map_err(err)?
                    .label(label)
                    .legend(move |(x, y)| Cross::new((x + 8, y), 4, c.stroke_width(2)));
            }
            MarkKind::Above => {
                chart
                    .draw_series(
                        at.into_iter()
                            .map(|pt| TriangleMarker::new(pt, 5, c.filled())),
                    )
                    .map_err(err)?
                    .label(label)
                    .legend(move |(x, y)| TriangleMarker::new((x + 8, y), 4, c.filled()));
            }
            MarkKind::Below | MarkKind::Right => {
                chart
                    .draw_series(at.into_iter().map(|pt| Circle::new(pt, 4, c.filled())))
                    .map_err(err)?
                    .label(label)
                    .legend(move |(x, y)| Circle::new((x + 8, y), 3, c.filled()));
            }
        }
    }
    Ok(())
}

/// Dashed reference lines (theory, thresholds).
fn draw_hlines<'a, DB, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y>>,
    p: &Panel,
    legend: &mut bool,
) -> Result<(), PlotError>
where
    DB: DrawingBackend + 'a,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    for h in &p.hlines {
        let dark = RGBColor(60, 60, 60);
        *legend = true;
        chart
            .draw_series(DashedLineSeries::new(
                [
                    (p.x.0.min(-0.5), h.y),
                    (p.x.1.max(p.categories.len() as f64), h.y),
                ],
                6,
                4,
                dark.stroke_width(1),
            ))
            .map_err(err)?
            .label(h.label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], dark));
    }
    Ok(())
}

/// Dashed vertical event markers, each in the legend.
fn draw_vlines<'a, DB, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y>>,
    p: &Panel,
    y_lo: f64,
    y_hi: f64,
    legend: &mut bool,
) -> Result<(), PlotError>
where
    DB: DrawingBackend + 'a,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    for (i, v) in p.vlines.iter().enumerate() {
        let c = if i == 0 { LOST } else { RGBColor(90, 90, 90) };
        *legend = true;
        chart
            .draw_series(DashedLineSeries::new(
                [(v.x, y_lo), (v.x, y_hi)],
                5,
                4,
                c.stroke_width(2),
            ))
            .map_err(err)?
            .label(v.label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c));
    }
    Ok(())
}

/// The panel's note, centred (e.g. "no samples").
fn draw_note<'a, DB, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y>>,
    p: &Panel,
    y_lo: f64,
    y_hi: f64,
) -> Result<(), PlotError>
where
    DB: DrawingBackend + 'a,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    if let Some(note) = &p.note {
        let style = ("sans-serif", 14)
            .into_font()
            .color(&RGBColor(120, 120, 120))
            .pos(Pos::new(HPos::Center, VPos::Center));
        let (x0, x1) = (chart.x_range().start, chart.x_range().end);
        let y_mid = if p.log_y {
            (y_lo * y_hi).sqrt()
        } else {
            (y_lo + y_hi) / 2.0
        };
        chart
            .draw_series(std::iter::once(Text::new(
                note.clone(),
                ((x0 + x1) / 2.0, y_mid),
                style,
            )))
            .map_err(err)?;
    }
    Ok(())
}

/// The legend box, upper right.
fn draw_legend<'a, DB, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y>>,
) -> Result<(), PlotError>
where
    DB: DrawingBackend + 'a,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font(("sans-serif", 11).into_font())
        .background_style(WHITE.mix(0.7))
        .border_style(RGBColor(180, 180, 180))
        .draw()
        .map_err(err)?;
    Ok(())
}

/// A tick label with as many decimals as its size needs.
fn tick(v: &f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else if a >= 0.01 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    }
}

fn bars<'a, DB, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y>>,
    p: &Panel,
    y_lo: f64,
    legend: &mut bool,
) -> Result<(), PlotError>
where
    DB: DrawingBackend + 'a,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    if p.bars.is_empty() {
        return Ok(());
    }
    let members = p.members.len().max(1) as f64;
    let width = 0.84 / members;
    for (m, name) in p.members.iter().enumerate() {
        let c = colour(m);
        let rects: Vec<Rectangle<(f64, f64)>> = p
            .bars
            .iter()
            .filter(|b| b.member == m)
            .map(|b| {
                let left = b.group as f64 - 0.42 + m as f64 * width;
                Rectangle::new([(left, y_lo), (left + width * 0.92, b.value)], c.filled())
            })
            .collect();
        *legend = true;
        chart
            .draw_series(rects)
            .map_err(err)?
            .label(name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
    }
    // The engine on every bar, written upwards from its base.
    let font = ("sans-serif", 9)
        .into_font()
        .transform(FontTransform::Rotate270)
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let texts: Vec<Text<'_, (f64, f64), String>> = p
        .bars
        .iter()
        .map(|b| {
            let x = b.group as f64 - 0.42 + (b.member as f64 + 0.46) * width;
            Text::new(b.text.clone(), (x, y_lo), font.clone())
        })
        .collect();
    chart.draw_series(texts).map_err(err)?;
    Ok(())
}

fn boxes<'a, DB, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y>>,
    p: &Panel,
    legend: &mut bool,
) -> Result<(), PlotError>
where
    DB: DrawingBackend + 'a,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    if p.boxes.is_empty() {
        return Ok(());
    }
    for (m, name) in p.members.iter().enumerate() {
        let c = colour(m);
        *legend = true;
        chart
            .draw_series(std::iter::empty::<Rectangle<(f64, f64)>>())
            .map_err(err)?
            .label(name.clone())
            .legend(move |(x, y)| {
                Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.mix(0.5).filled())
            });
    }
    let per_slot = p.boxes.iter().map(|b| b.series + 1).max().unwrap_or(1) as f64;
    let width = 0.8 / per_slot;
    for b in &p.boxes {
        let c = colour(b.series);
        let left = b.slot as f64 - 0.4 + b.series as f64 * width + width * 0.1;
        let right = left + width * 0.8;
        let mid = (left + right) / 2.0;
        chart
            .draw_series([
                Rectangle::new([(left, b.q1), (right, b.q3)], c.mix(0.25).filled()),
                Rectangle::new([(left, b.q1), (right, b.q3)], c.stroke_width(2)),
            ])
            .map_err(err)?;
        let lines = vec![
            PathElement::new(
                vec![(left, b.median), (right, b.median)],
                BLACK.stroke_width(2),
            ),
            PathElement::new(vec![(mid, b.q3), (mid, b.whisker_hi)], c.stroke_width(1)),
            PathElement::new(vec![(mid, b.q1), (mid, b.whisker_lo)], c.stroke_width(1)),
            PathElement::new(
                vec![
                    (left + width * 0.2, b.whisker_hi),
                    (right - width * 0.2, b.whisker_hi),
                ],
                c.stroke_width(1),
            ),
            PathElement::new(
                vec![
                    (left + width * 0.2, b.whisker_lo),
                    (right - width * 0.2, b.whisker_lo),
                ],
                c.stroke_width(1),
            ),
        ];
        chart.draw_series(lines).map_err(err)?;
    }
    Ok(())
}
