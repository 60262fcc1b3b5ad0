//! Predicted-against-measured scatter plots, one per predictor: each point a
//! measured pair, with the prediction's interval as a vertical bar, the
//! diagonal of a perfect prediction, the +-30 % band of the SCN paper, and the
//! severe-conflict level on both axes.

use crate::svg::{esc, step_decimals, ticks, Canvas, Text};

/// One pair: measured slowdown (x), predicted slowdown (y) with its interval.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub measured: f64,
    pub predicted: f64,
    pub lo: f64,
    pub hi: f64,
    /// Shown on hover (SVG `<title>`).
    pub label: String,
}

const W: f64 = 520.0;
const H: f64 = 528.0;
const LEFT: f64 = 64.0;
const TOP: f64 = 72.0;
const PLOT: f64 = 400.0;

/// The SVG text of a scatter plot. `subtitle` carries the figures (e.g.
/// within 5 % / 30 %, correlation), up to two lines; `level` draws the
/// severe threshold.
pub fn scatter(title: &str, subtitle: &str, points: &[Point], level: Option<f64>) -> String {
    // Both axes share one range, so the diagonal is at 45 degrees.
    let finite = |v: f64| v.is_finite() && v > 0.0;
    let mut lo = 1.0f64;
    let mut hi = 1.5f64;
    for p in points {
        for v in [p.measured, p.predicted] {
            if finite(v) {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
    }
    if let Some(l) = level {
        hi = hi.max(l * 1.05);
    }
    let pad = (hi - lo) * 0.05;
    let (lo, hi) = ((lo - pad).max(0.0), hi + pad);
    let x = |v: f64| LEFT + (v - lo) / (hi - lo) * PLOT;
    let y = |v: f64| TOP + PLOT - (v.clamp(lo, hi) - lo) / (hi - lo) * PLOT;
    let mut c = Canvas::new(W, H, 12.0);
    c.text(Text::new(8.0, 22.0, title).size(15.0).bold());
    // One line per `\n` of the subtitle (at most two fit above the plot).
    for (i, line) in subtitle.lines().take(2).enumerate() {
        c.text(Text::new(8.0, 40.0 + 16.0 * i as f64, line).attrs(r##"fill="#444""##));
    }
    c.raw(&format!(r##"<rect x="{LEFT}" y="{TOP}" width="{PLOT}" height="{PLOT}" fill="none" stroke="#888"/>"##));
    // The +-30 % band around the diagonal, then the diagonal.
    let band: Vec<String> = [(lo, lo * 1.3), (hi, hi * 1.3), (hi, hi * 0.7), (lo, lo * 0.7)]
        .iter()
        .map(|(m, p)| format!("{:.1},{:.1}", x(*m), y(*p)))
        .collect();
    c.raw(&format!(r##"<clipPath id="plot"><rect x="{LEFT}" y="{TOP}" width="{PLOT}" height="{PLOT}"/></clipPath>"##));
    c.raw(&format!(r##"<polygon points="{}" fill="#e8f0fb" clip-path="url(#plot)"/>"##, band.join(" ")));
    c.raw(&format!(r##"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#4477aa"/>"##, x(lo), y(lo), x(hi), y(hi)));
    if let Some(l) = level.filter(|l| *l > lo && *l < hi) {
        c.raw(&format!(
            r##"<line x1="{:.1}" y1="{TOP}" x2="{:.1}" y2="{:.1}" stroke="#cc3311" stroke-dasharray="4 3"/>"##,
            x(l),
            x(l),
            TOP + PLOT
        ));
        c.raw(&format!(
            r##"<line x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#cc3311" stroke-dasharray="4 3"/>"##,
            y(l),
            LEFT + PLOT,
            y(l)
        ));
        c.text(Text::new(x(l) + 4.0, TOP + 14.0, &format!("severe > {l:.2}")).attrs(r##"fill="#cc3311""##));
    }
    // Round ticks (1-2-5 steps) on both axes.
    let (tick_values, step) = ticks(lo, hi, 6);
    for v in tick_values {
        let label = format!("{v:.*}", step_decimals(step));
        c.raw(&format!(r##"<line x1="{0:.1}" y1="{1}" x2="{0:.1}" y2="{2}" stroke="#888"/>"##, x(v), TOP + PLOT, TOP + PLOT + 4.0));
        c.raw(&format!(r##"<line x1="{0}" y1="{1:.1}" x2="{2}" y2="{1:.1}" stroke="#888"/>"##, LEFT - 4.0, y(v), LEFT));
        c.text(Text::new(x(v), TOP + PLOT + 16.0, &label).middle());
        c.text(Text::new(LEFT - 6.0, y(v) + 4.0, &label).end());
    }
    c.text(Text::new(LEFT + PLOT / 2.0, TOP + PLOT + 36.0, "measured slowdown (median of repeats)").middle());
    c.text(Text::new(16.0, TOP + PLOT / 2.0, "predicted slowdown (bar: interval)").middle().rotate(-90.0));
    for p in points.iter().filter(|p| finite(p.measured) && finite(p.predicted)) {
        let px = x(p.measured);
        if p.hi > p.lo {
            c.raw(&format!(r##"<line x1="{px:.1}" y1="{:.1}" x2="{px:.1}" y2="{:.1}" stroke="#999" stroke-width="1"/>"##, y(p.lo), y(p.hi)));
        }
        c.raw(&format!(
            r##"<circle cx="{px:.1}" cy="{:.1}" r="3.5" fill="#222" fill-opacity="0.7"><title>{}: measured {:.3}, predicted {:.3} [{:.3}, {:.3}]</title></circle>"##,
            y(p.predicted),
            esc(&p.label),
            p.measured,
            p.predicted,
            p.lo,
            p.hi
        ));
    }
    let footer = format!("{} pairs; blue: perfect prediction, shaded: within 30 %", points.len());
    c.text(Text::new(LEFT, H - 8.0, &footer).attrs(r##"fill="#444""##));
    c.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_on_the_diagonal_is_drawn_on_the_diagonal_and_labels_are_escaped() {
        let pts = [
            Point { measured: 1.0, predicted: 1.0, lo: 0.9, hi: 1.1, label: "a <b>".into() },
            Point { measured: 2.0, predicted: 2.0, lo: 2.0, hi: 2.0, label: "c".into() },
        ];
        let svg = scatter("t & u", "sub", &pts, Some(1.3));
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert!(svg.contains("t &amp; u") && svg.contains("a &lt;b&gt;"));
        // Range [0.95, 2.05] after 5 % padding: 1.0 sits at x = 64 + 0.05/1.1 * 400.
        let cx = LEFT + 0.05 / 1.1 * PLOT;
        let cy = TOP + PLOT - 0.05 / 1.1 * PLOT;
        assert!(svg.contains(&format!(r#"cx="{cx:.1}" cy="{cy:.1}""#)), "{svg}");
        assert_eq!(svg.matches("<circle").count(), 2);
        assert_eq!(svg.matches(r##"stroke="#999""##).count(), 1, "only a real interval gets a bar");
        assert!(svg.contains(">1.2<") && svg.contains(">2.0<"), "round ticks 0.2 apart: {svg}");
        assert!(svg.contains("severe &gt; 1.30"));
    }
}
