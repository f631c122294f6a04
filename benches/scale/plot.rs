//! The scale bench's picture: operator memory and convergence time against the number of stacks,
//! as a self-contained SVG (no plotting library, so the bench adds no dependency).

use std::fmt::Write;

/// One measured size.
pub struct Point {
    /// Stacks in the cluster.
    pub stacks: f64,
    /// Operator RSS once quiet after creating them, MiB.
    pub rss_quiet: f64,
    /// Operator RSS after a full resync, MiB.
    pub rss_resync: f64,
    /// Seconds from the first create until every stack was Ready.
    pub converged: f64,
}

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 400.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 70.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 60.0;

/// A round upper bound for an axis (1, 2 or 5 times a power of ten).
fn nice_max(value: f64) -> f64 {
    let value = value.max(1.0);
    let power = 10f64.powf(value.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|m| *m >= value)
        .unwrap_or(10.0 * power)
}

fn polyline(out: &mut String, points: &[(f64, f64)], colour: &str, dashed: bool) {
    let path: Vec<String> = points
        .iter()
        .map(|(x, y)| format!("{x:.1},{y:.1}"))
        .collect();
    let dash = if dashed {
        r#" stroke-dasharray="6 4""#
    } else {
        ""
    };
    let _ = writeln!(
        out,
        r#"<polyline fill="none" stroke="{colour}" stroke-width="2"{dash} points="{}"/>"#,
        path.join(" ")
    );
    for (x, y) in points {
        let _ = writeln!(
            out,
            r#"<circle cx="{x:.1}" cy="{y:.1}" r="3.5" fill="{colour}"/>"#
        );
    }
}

/// The SVG text for `points` (sorted by stacks), with `title` on top.
pub fn svg(title: &str, points: &[Point]) -> String {
    let x_max = nice_max(points.iter().map(|p| p.stacks).fold(0.0, f64::max));
    let mib_max = nice_max(
        points
            .iter()
            .map(|p| p.rss_quiet.max(p.rss_resync))
            .fold(0.0, f64::max),
    );
    let secs_max = nice_max(points.iter().map(|p| p.converged).fold(0.0, f64::max));
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let x = |stacks: f64| LEFT + stacks / x_max * plot_w;
    let y = |value: f64, max: f64| TOP + plot_h - value / max * plot_h;

    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        out,
        r#"<rect width="100%" height="100%" fill="white"/><text x="{}" y="22" text-anchor="middle" font-size="14">{title}</text>"#,
        WIDTH / 2.0
    );
    for i in 0..=5 {
        let fraction = f64::from(i) / 5.0;
        let gy = TOP + plot_h - fraction * plot_h;
        let gx = LEFT + fraction * plot_w;
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" x2="{}" y1="{gy:.1}" y2="{gy:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{:.0}</text><text x="{}" y="{:.1}">{:.0}</text><text x="{gx:.1}" y="{}" text-anchor="middle">{:.0}</text>"##,
            WIDTH - RIGHT,
            LEFT - 6.0,
            gy + 4.0,
            fraction * mib_max,
            WIDTH - RIGHT + 6.0,
            gy + 4.0,
            fraction * secs_max,
            TOP + plot_h + 18.0,
            fraction * x_max
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle">LlamaStackDistributions</text><text transform="translate(18,{}) rotate(-90)" text-anchor="middle">operator RSS (MiB)</text><text transform="translate({},{}) rotate(90)" text-anchor="middle">seconds until all Ready</text>"#,
        LEFT + plot_w / 2.0,
        HEIGHT - 22.0,
        TOP + plot_h / 2.0,
        WIDTH - 18.0,
        TOP + plot_h / 2.0
    );
    let quiet: Vec<_> = points
        .iter()
        .map(|p| (x(p.stacks), y(p.rss_quiet, mib_max)))
        .collect();
    let resync: Vec<_> = points
        .iter()
        .map(|p| (x(p.stacks), y(p.rss_resync, mib_max)))
        .collect();
    let converged: Vec<_> = points
        .iter()
        .map(|p| (x(p.stacks), y(p.converged, secs_max)))
        .collect();
    polyline(&mut out, &quiet, "#1f77b4", false);
    polyline(&mut out, &resync, "#1f77b4", true);
    polyline(&mut out, &converged, "#d62728", false);
    let legend = [
        ("#1f77b4", false, "RSS when quiet after creation"),
        ("#1f77b4", true, "RSS after a full resync"),
        ("#d62728", false, "seconds until all Ready"),
    ];
    for (i, (colour, dashed, label)) in legend.iter().enumerate() {
        let ly = TOP + 12.0 + 18.0 * i as f64;
        let dash = if *dashed {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        let _ = writeln!(
            out,
            r#"<line x1="{}" x2="{}" y1="{ly}" y2="{ly}" stroke="{colour}" stroke-width="2"{dash}/><text x="{}" y="{}">{label}</text>"#,
            LEFT + 12.0,
            LEFT + 42.0,
            LEFT + 48.0,
            ly + 4.0
        );
    }
    out.push_str("</svg>\n");
    out
}
