//! The dashboard as a picture: each panel of the Grafana dashboard JSON drawn where its
//! `gridPos` puts it, as a line chart of what its queries returned. A self-contained SVG (no
//! plotting library), like the scale bench's.

use std::fmt::Write;

use serde_json::Value;

/// One line of a panel: its legend and its (seconds since the start, value) samples.
pub struct Line {
    pub legend: String,
    pub points: Vec<(f64, Option<f64>)>,
}

/// A moment of the run marked across every panel (Grafana's annotations): seconds since the
/// start, and what happened.
pub struct Mark {
    pub at: f64,
    pub label: String,
}

/// A panel as the dashboard defines it, with what its queries returned.
pub struct Panel {
    pub title: String,
    pub unit: String,
    /// Grafana's grid: x and w in 24ths of the width, y and h in rows.
    pub grid: (f64, f64, f64, f64),
    pub lines: Vec<Line>,
}

const COLUMN: f64 = 40.0;
const ROW: f64 = 30.0;
const HEADER: f64 = 50.0;
const COLOURS: [&str; 6] = [
    "#3274d9", "#e0752d", "#37872d", "#c4162a", "#8f3bb8", "#6e6e6e",
];

/// `legendFormat` with each `{{label}}` replaced by the series' label value.
pub fn legend(format: &str, labels: &serde_json::Map<String, Value>) -> String {
    let mut out = format.to_owned();
    for (key, value) in labels {
        out = out.replace(
            &format!("{{{{{key}}}}}"),
            value.as_str().unwrap_or_default(),
        );
    }
    out
}

/// A value as the panel's unit shows it.
fn format_value(value: f64, unit: &str) -> String {
    let number = |v: f64| {
        let text = format!("{v:.4}");
        let text = text.trim_end_matches('0').trim_end_matches('.');
        if text.is_empty() || text == "-0" {
            "0".to_owned()
        } else {
            text.to_owned()
        }
    };
    match unit {
        "s" if value > 0.0 && value < 1.0 => format!("{} ms", number(value * 1000.0)),
        "s" => format!("{} s", number(value)),
        "ops" => format!("{}/s", number(value)),
        "reqps" => format!("{} req/s", number(value)),
        "percentunit" => format!("{}%", number(value * 100.0)),
        _ => number(value),
    }
}

/// A round upper bound for an axis (1, 2 or 5 times a power of ten) and the number of equal
/// steps that keep every tick round.
fn nice_axis(value: f64) -> (f64, u32) {
    if value <= 0.0 {
        return (1.0, 5);
    }
    let power = 10f64.powf(value.log10().floor());
    let max = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|m| *m >= value * (1.0 + 1e-9))
        .unwrap_or(10.0 * power);
    let leading = (max / 10f64.powf(max.log10().floor())).round();
    (max, if leading == 2.0 { 4 } else { 5 })
}

/// Seconds between time ticks for a run of `span` seconds.
fn time_step(span: f64) -> f64 {
    match span {
        s if s <= 120.0 => 15.0,
        s if s <= 300.0 => 30.0,
        _ => 60.0,
    }
}

/// `m:ss`.
fn clock(seconds: f64) -> String {
    let s = seconds.round() as u64;
    format!("{}:{:02}", s / 60, s % 60)
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The whole dashboard: `title` on top, then every panel with the `marks`; `span` is the
/// seconds shown.
pub fn svg(title: &str, panels: &[Panel], marks: &[Mark], span: f64) -> String {
    let bottom = panels
        .iter()
        .map(|p| p.grid.1 + p.grid.3)
        .fold(0.0, f64::max);
    let (width, height) = (24.0 * COLUMN, HEADER + bottom * ROW);
    let mut out = String::new();
    let _ = writeln!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" font-family="sans-serif" font-size="11">
<rect width="{width}" height="{height}" fill="#f4f5f5"/>
<text x="12" y="30" font-size="18" fill="#222">{}</text>"##,
        escape(title)
    );
    let mut key_x = 12.0;
    for (i, mark) in marks.iter().enumerate() {
        let key = format!("{}: {} {}", i + 1, clock(mark.at), mark.label);
        let _ = write!(
            out,
            r##"<text x="{key_x:.1}" y="{}" fill="#a05a00">{}</text>"##,
            HEADER - 8.0,
            escape(&key)
        );
        key_x += 24.0 + 6.2 * key.chars().count() as f64;
    }
    for panel in panels {
        draw_panel(&mut out, panel, marks, span);
    }
    out.push_str("</svg>\n");
    out
}

/// Legend rows at most, so that the plot keeps its room; a legend longer than that ends with
/// how many series it leaves out (as Grafana's would need scrolling).
const LEGEND_ROWS: usize = 3;

/// Where the legend puts each line it shows, (row, x offset) in a width of `room`, and the rows
/// it takes; the lines past the last row are left out.
fn legend_layout(lines: &[Line], room: f64) -> (Vec<(usize, f64)>, usize) {
    let (mut row, mut x) = (0, 0.0);
    let mut at = Vec::new();
    for line in lines {
        let width = 24.0 + 6.5 * line.legend.chars().count() as f64;
        if x > 0.0 && x + width > room {
            row += 1;
            x = 0.0;
        }
        // On the last row, keep room for "+N more series".
        if row == LEGEND_ROWS - 1 && x + width > room - 110.0 && at.len() + 1 < lines.len() {
            break;
        }
        if row == LEGEND_ROWS {
            break;
        }
        at.push((row, x));
        x += width;
    }
    (
        at,
        if lines.is_empty() {
            0
        } else {
            row.min(LEGEND_ROWS - 1) + 1
        },
    )
}

fn draw_panel(out: &mut String, panel: &Panel, marks: &[Mark], span: f64) {
    let (gx, gy, gw, gh) = panel.grid;
    let (x0, y0) = (gx * COLUMN + 6.0, HEADER + gy * ROW + 6.0);
    let (w, h) = (gw * COLUMN - 12.0, gh * ROW - 12.0);
    let _ = writeln!(
        out,
        r##"<rect x="{x0}" y="{y0}" width="{w}" height="{h}" rx="3" fill="#fff" stroke="#d8d9da"/>
<text x="{}" y="{}" font-size="13" font-weight="bold" fill="#222">{}</text>"##,
        x0 + 10.0,
        y0 + 20.0,
        escape(&panel.title)
    );
    // The plot area, leaving room for the axis labels and the legend.
    let (left, right) = (x0 + 62.0, x0 + w - 12.0);
    let (legend, legend_rows) = legend_layout(&panel.lines, right - left);
    let (top, bottom) = (y0 + 32.0, y0 + h - 26.0 - 14.0 * legend_rows as f64);
    let (max, steps) = nice_axis(
        panel
            .lines
            .iter()
            .flat_map(|l| l.points.iter().filter_map(|(_, v)| *v))
            .fold(0.0, f64::max),
    );
    let y_of = |v: f64| bottom - (v / max) * (bottom - top);
    let x_of = |t: f64| left + (t / span) * (right - left);
    for i in 0..=steps {
        let v = max * f64::from(i) / f64::from(steps);
        let y = y_of(v);
        let _ = writeln!(
            out,
            r##"<line x1="{left}" y1="{y:.1}" x2="{right}" y2="{y:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" text-anchor="end" fill="#555">{}</text>"##,
            left - 6.0,
            y + 4.0,
            format_value(v, &panel.unit)
        );
    }
    let step = time_step(span);
    let mut t = 0.0;
    while t <= span {
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#555">{}</text>"##,
            x_of(t),
            bottom + 14.0,
            clock(t)
        );
        t += step;
    }
    for (i, mark) in marks.iter().enumerate() {
        let x = x_of(mark.at);
        let _ = writeln!(
            out,
            r##"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{bottom}" stroke="#a05a00" stroke-dasharray="3 3"/><text x="{:.1}" y="{:.1}" font-size="10" fill="#a05a00">{}</text>"##,
            x + 3.0,
            top + 9.0,
            i + 1
        );
    }
    if panel.lines.is_empty() {
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#888">no series: nothing to show in this run</text>"##,
            (left + right) / 2.0,
            (top + bottom) / 2.0
        );
    }
    let shown = legend.len();
    for (i, line) in panel.lines.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        draw_line(out, line, colour, &x_of, &y_of);
        let Some((row, offset)) = legend.get(i) else {
            continue;
        };
        let (x, y) = (left + offset, bottom + 26.0 + 14.0 * *row as f64);
        let _ = writeln!(
            out,
            r##"<rect x="{x:.1}" y="{:.1}" width="10" height="3" fill="{colour}"/><text x="{:.1}" y="{y:.1}" fill="#333">{}</text>"##,
            y - 4.0,
            x + 14.0,
            escape(&line.legend)
        );
    }
    if shown < panel.lines.len() {
        let _ = writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="#888">+{} more series</text>"##,
            right,
            bottom + 26.0 + 14.0 * (legend_rows - 1) as f64,
            panel.lines.len() - shown
        );
    }
}

/// A line through the samples, broken where a value is missing.
fn draw_line(
    out: &mut String,
    line: &Line,
    colour: &str,
    x_of: &dyn Fn(f64) -> f64,
    y_of: &dyn Fn(f64) -> f64,
) {
    let mut segment: Vec<String> = Vec::new();
    let mut flush = |segment: &mut Vec<String>| {
        if !segment.is_empty() {
            let _ = writeln!(
                out,
                r##"<polyline fill="none" stroke="{colour}" stroke-width="1.8" points="{}"/>"##,
                segment.join(" ")
            );
            segment.clear();
        }
    };
    for (t, value) in &line.points {
        match value {
            Some(v) => segment.push(format!("{:.1},{:.1}", x_of(*t), y_of(*v))),
            None => flush(&mut segment),
        }
    }
    flush(&mut segment);
}
