//! Cumulative distribution plots: one step line per series, the fraction
//! of jobs (0 to 1) against a value, as scheduling papers draw wait times
//! and slowdowns. Wait times span seconds to days, so the x axis may be
//! logarithmic (values below its lower end are drawn at it).

use std::fmt::Write;

use crate::svg::{step_decimals, ticks, Canvas, Text};

/// One series: its label and its CDF as (value, fraction at or below it),
/// sorted by value.
#[derive(Debug, Clone, PartialEq)]
pub struct Series<'a> {
    pub label: &'a str,
    pub points: &'a [(f64, f64)],
}

const W: f64 = 640.0;
const H: f64 = 400.0;
const LEFT: f64 = 60.0;
const TOP: f64 = 40.0;
const PW: f64 = 420.0;
const PH: f64 = 300.0;
const COLOURS: [&str; 6] = ["#222222", "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e"];

/// The SVG text of a CDF plot. With `log_x`, the axis starts at
/// `log_floor` (e.g. 1 s) and values below it sit on that line.
pub fn cdf_plot(title: &str, x_label: &str, series: &[Series], log_x: bool, log_floor: f64) -> String {
    let finite = series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).filter(|v| v.is_finite());
    let (mut lo, mut hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
    if !lo.is_finite() {
        (lo, hi) = (0.0, 1.0);
    }
    if log_x {
        lo = log_floor.max(f64::MIN_POSITIVE);
        hi = hi.max(lo * 10.0);
    } else if hi <= lo {
        hi = lo + 1.0;
    }
    let x = |v: f64| {
        let t = if log_x { (v.max(lo).ln() - lo.ln()) / (hi.ln() - lo.ln()) } else { (v - lo) / (hi - lo) };
        LEFT + t.clamp(0.0, 1.0) * PW
    };
    let y = |f: f64| TOP + PH - f.clamp(0.0, 1.0) * PH;
    let mut c = Canvas::new(W, H, 12.0);
    c.text(Text::new(8.0, 22.0, title).size(15.0).bold());
    c.raw(&format!(r##"<rect x="{LEFT}" y="{TOP}" width="{PW}" height="{PH}" fill="none" stroke="#999"/>"##));
    for k in 0..=4 {
        let f = k as f64 / 4.0;
        c.raw(&format!(r##"<line x1="{LEFT}" x2="{0}" y1="{1:.1}" y2="{1:.1}" stroke="#eee"/>"##, LEFT + PW, y(f)));
        c.text(Text::new(LEFT - 6.0, y(f) + 4.0, &format!("{f:.2}")).end());
    }
    let labelled: Vec<(f64, String)> = if log_x {
        let mut t = Vec::new();
        let mut v = 10f64.powf(lo.log10().ceil());
        while v <= hi * 1.0001 {
            t.push((v, tick_label(v)));
            v *= 10.0;
        }
        t
    } else {
        let (t, step) = ticks(lo, hi, 5);
        t.into_iter().map(|v| (v, format!("{v:.*}", step_decimals(step)))).collect()
    };
    for (v, label) in labelled {
        c.raw(&format!(r##"<line x1="{0:.1}" x2="{0:.1}" y1="{TOP}" y2="{1}" stroke="#eee"/>"##, x(v), TOP + PH));
        c.text(Text::new(x(v), TOP + PH + 16.0, &label).middle());
    }
    c.text(Text::new(LEFT + PW / 2.0, TOP + PH + 34.0, x_label).middle());
    c.text(Text::new(14.0, TOP + PH / 2.0, "fraction of jobs").middle().rotate(-90.0));
    for (i, series) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let mut path = String::new();
        let mut last_f = 0.0;
        for (k, &(v, f)) in series.points.iter().enumerate() {
            // Steps: along at the previous fraction, then up at the value.
            let cmd = if k == 0 { 'M' } else { 'L' };
            let _ = write!(path, "{cmd}{:.1},{:.1} L{:.1},{:.1} ", x(v), y(last_f), x(v), y(f));
            last_f = f;
        }
        c.raw(&format!(r##"<path d="{}" fill="none" stroke="{colour}" stroke-width="1.5"/>"##, path.trim_end()));
        let ly = TOP + 14.0 + 18.0 * i as f64;
        c.raw(&format!(r##"<line x1="{0}" x2="{1}" y1="{2}" y2="{2}" stroke="{colour}" stroke-width="2"/>"##, LEFT + PW + 12.0, LEFT + PW + 32.0, ly - 4.0));
        c.text(Text::new(LEFT + PW + 36.0, ly, series.label));
    }
    c.finish()
}

fn tick_label(v: f64) -> String {
    if v >= 1e4 && v.log10().fract().abs() < 1e-9 {
        format!("1e{}", v.log10().round())
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_series_is_one_labelled_path() {
        let a = [(1.0, 0.5), (2.0, 1.0)];
        let b = [(0.0, 0.25), (1000.0, 1.0)];
        let svg = cdf_plot("wait <CDF>", "wait s", &[Series { label: "easy", points: &a }, Series { label: "noplan", points: &b }], true, 1.0);
        assert_eq!(svg.matches("<path").count(), 2);
        assert!(svg.contains("wait &lt;CDF&gt;") && svg.contains(">noplan<") && svg.ends_with("</svg>\n"));
        assert!(cdf_plot("t", "x", &[], false, 1.0).ends_with("</svg>\n"));
    }
}
