//! Box plots in hand-written SVG, like the SX-Aurora paper's figures 11-13: one box per
//! strategy, whiskers to the extremes (the SX-Aurora paper's whiskers span the whole
//! range of the data), the box from the first to the third quartile, a line
//! at the median and a dot at the mean.

use crate::svg::{esc, nice_step, text_width, ticks, Canvas, Text};

/// One box: the numbers it is drawn from.
#[derive(Debug, Clone, PartialEq)]
pub struct BoxStats {
    pub label: String,
    pub min: f64,
    pub q1: f64,
    pub median: f64,
    pub q3: f64,
    pub max: f64,
    pub mean: f64,
}

impl BoxStats {
    /// The box of `values` (quartiles as `quantile` interpolates them);
    /// `None` when no value is finite.
    pub fn of(label: &str, values: &[f64]) -> Option<BoxStats> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let q = |p: f64| {
            let at = p * (v.len() - 1) as f64;
            let (i, frac) = (at.floor() as usize, at.fract());
            v[i] + (v[(i + 1).min(v.len() - 1)] - v[i]) * frac
        };
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        Some(BoxStats { label: label.to_string(), min: v[0], q1: q(0.25), median: q(0.5), q3: q(0.75), max: v[v.len() - 1], mean })
    }
}

/// A plot of boxes on one vertical axis.
#[derive(Debug, Clone, PartialEq)]
pub struct BoxPlot {
    pub title: String,
    pub y_label: String,
    pub boxes: Vec<BoxStats>,
    /// Axis values are rates shown as percent (0.25 -> "+25 %").
    pub percent: bool,
    /// A horizontal reference line (e.g. 0 = no change against sequential).
    pub reference: Option<f64>,
}

/// Round tick spacing for a range: 1, 2 or 5 times a power of ten, about
/// six ticks.
fn tick_step(span: f64) -> f64 {
    nice_step(span, 6)
}

impl BoxPlot {
    /// The y range every box, the reference line and a margin fit in.
    fn range(&self) -> (f64, f64) {
        let mut lo = f64::INFINITY;
        let mut hi = f64::NEG_INFINITY;
        for b in &self.boxes {
            for v in [b.min, b.max, b.mean] {
                if v.is_finite() {
                    lo = lo.min(v);
                    hi = hi.max(v);
                }
            }
        }
        if let Some(r) = self.reference {
            lo = lo.min(r);
            hi = hi.max(r);
        }
        if !lo.is_finite() {
            return (0.0, 1.0);
        }
        if hi - lo < 1e-12 {
            let pad = if lo.abs() > 0.0 { lo.abs() * 0.1 } else { 0.1 };
            return (lo - pad, hi + pad);
        }
        let step = tick_step(hi - lo);
        ((lo / step).floor() * step, (hi / step).ceil() * step)
    }

    fn fmt(&self, v: f64, step: f64) -> String {
        // A tick reached by adding steps lands a crumb off zero; print 0, not -0.
        let v = if v.abs() < step * 1e-6 { 0.0 } else { v };
        let digits = |scale: f64| if step * scale >= 1.0 { 0 } else { (-(step * scale).log10().floor()) as usize };
        if self.percent {
            format!("{:+.d$} %", v * 100.0, d = digits(100.0))
        } else {
            format!("{:.d$}", v, d = digits(1.0))
        }
    }

    /// The plot as a standalone SVG document.
    pub fn svg(&self) -> String {
        self.svg_with_dots(&[])
    }

    /// The plot with each box's values drawn as dots beside it (`dots[i]`
    /// beside box `i`, in their order, so one order of a series is one dot),
    /// for samples small enough that every value matters.
    pub fn svg_with_dots(&self, dots: &[Vec<f64>]) -> String {
        let n = self.boxes.len().max(1);
        let label_w = self.boxes.iter().map(|b| text_width(&b.label, 12.0, false)).fold(0.0, f64::max);
        // Labels are drawn at -30 degrees: a slot is as wide as the widest
        // label's run along the axis allows, within reason.
        let (left, top, slot, ph) = (84.0, 46.0, 92.0_f64.max((label_w * 0.87).min(140.0)), 300.0);
        let pw = slot * n as f64;
        let bottom = 26.0 + label_w * 0.5;
        let (lo, hi) = self.range();
        let y = |v: f64| top + ph * (1.0 - (v - lo) / (hi - lo));
        let mut c = Canvas::new(left + pw + 24.0, top + ph + bottom, 12.0);
        c.text(Text::new(8.0, 22.0, &self.title).size(15.0).bold());
        let (tick_values, step) = ticks(lo, hi, 6);
        let mut tick_w: f64 = 0.0;
        for t in tick_values {
            let yy = y(t);
            let label = self.fmt(t, step);
            tick_w = tick_w.max(text_width(&label, 12.0, false));
            c.raw(&format!(r##"<line x1="{left}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#e4e4e4"/>"##, left + pw));
            c.text(Text::new(left - 6.0, yy + 4.0, &label).end());
        }
        if let Some(r) = self.reference {
            let yy = y(r);
            c.raw(&format!(r##"<line x1="{left}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#888" stroke-dasharray="4 3"/>"##, left + pw));
        }
        // The axis title stands left of the widest tick label.
        let yl = (left - 6.0 - tick_w - 10.0).min(16.0);
        c.text(Text::new(yl, top + ph / 2.0, &self.y_label).middle().rotate(-90.0));
        c.raw(&format!(r##"<rect x="{left}" y="{top}" width="{pw:.1}" height="{ph}" fill="none" stroke="#444"/>"##));
        for (i, b) in self.boxes.iter().enumerate() {
            let cx = left + slot * (i as f64 + 0.5);
            let half = slot * 0.28;
            c.raw(&format!(r##"<g class="box"><title>{}</title>"##, esc(&format!(
                "{}: min {}, q1 {}, median {}, q3 {}, max {}, mean {}",
                b.label,
                self.fmt(b.min, step / 100.0),
                self.fmt(b.q1, step / 100.0),
                self.fmt(b.median, step / 100.0),
                self.fmt(b.q3, step / 100.0),
                self.fmt(b.max, step / 100.0),
                self.fmt(b.mean, step / 100.0)
            ))));
            c.raw(&format!(
                r##"<line x1="{cx:.1}" y1="{:.1}" x2="{cx:.1}" y2="{:.1}" stroke="#333"/><line x1="{cx:.1}" y1="{:.1}" x2="{cx:.1}" y2="{:.1}" stroke="#333"/>"##,
                y(b.max),
                y(b.q3),
                y(b.q1),
                y(b.min)
            ));
            for v in [b.min, b.max] {
                c.raw(&format!(r##"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#333"/>"##, cx - half / 2.0, y(v), cx + half / 2.0, y(v)));
            }
            c.raw(&format!(
                r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="#9ecae1" stroke="#333"/>"##,
                cx - half,
                y(b.q3),
                2.0 * half,
                (y(b.q1) - y(b.q3)).max(0.5)
            ));
            c.raw(&format!(
                r##"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#c00" stroke-width="2"/>"##,
                cx - half,
                y(b.median),
                cx + half,
                y(b.median)
            ));
            c.raw(&format!(r##"<circle cx="{cx:.1}" cy="{:.1}" r="2.5" fill="#333"/></g>"##, y(b.mean)));
            // Three columns right of the box, so equal values stay apart.
            for (k, v) in dots.get(i).into_iter().flatten().enumerate().filter(|(_, v)| v.is_finite()) {
                let x = cx + half + 5.0 + (k % 3) as f64 * 4.0;
                c.raw(&format!(r##"<circle class="dot" cx="{x:.1}" cy="{:.1}" r="2" fill="#3182bd" fill-opacity="0.7"/>"##, y(*v)));
            }
            c.text(Text::new(cx, top + ph + 14.0, &b.label).end().rotate(-30.0));
        }
        c.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(label: &str, v: [f64; 6]) -> BoxStats {
        BoxStats { label: label.into(), min: v[0], q1: v[1], median: v[2], q3: v[3], max: v[4], mean: v[5] }
    }

    #[test]
    fn one_box_per_strategy_with_median_inside_its_box() {
        let p = BoxPlot {
            title: "makespan <fig 12>".into(),
            y_label: "increase rate".into(),
            boxes: vec![b("noplan", [-0.35, -0.32, -0.31, -0.30, -0.27, -0.31]), b("T=50", [-0.155; 6])],
            percent: true,
            reference: Some(0.0),
        };
        let svg = p.svg();
        assert_eq!(svg.matches(r#"<g class="box">"#).count(), 2);
        assert!(svg.contains("makespan &lt;fig 12&gt;"));
        assert!(svg.contains(">+0 %<"), "reference tick labelled: {svg}");
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        // The median line of the first box lies between its q3 and q1 edges.
        let (lo, hi) = p.range();
        assert!(lo <= -0.35 && hi >= 0.0, "{lo} {hi}");
    }

    #[test]
    fn a_box_of_values_has_their_quartiles_and_each_value_as_a_dot() {
        let b = BoxStats::of("x", &[0.3, -0.1, 0.1, f64::NAN, 0.0, 0.2]).unwrap();
        assert_eq!((b.min, b.median, b.max), (-0.1, 0.1, 0.3));
        assert!((b.q1 - 0.0).abs() < 1e-12 && (b.q3 - 0.2).abs() < 1e-12 && (b.mean - 0.1).abs() < 1e-12, "{b:?}");
        assert!(BoxStats::of("none", &[f64::NAN]).is_none());
        let p = BoxPlot { title: "t".into(), y_label: "y".into(), boxes: vec![b], percent: true, reference: Some(0.0) };
        let svg = p.svg_with_dots(&[vec![0.3, -0.1, 0.1, f64::NAN, 0.0, 0.2]]);
        assert_eq!(svg.matches(r#"class="dot""#).count(), 5);
        assert_eq!(p.svg().matches(r#"class="dot""#).count(), 0);
    }

    #[test]
    fn ticks_are_round() {
        assert_eq!(tick_step(0.6), 0.1);
        assert_eq!(tick_step(3.0), 0.5);
        assert_eq!(tick_step(120.0), 20.0);
        let p = BoxPlot { title: String::new(), y_label: String::new(), boxes: vec![b("x", [1.0; 6])], percent: false, reference: None };
        let (lo, hi) = p.range();
        assert!(lo < 1.0 && hi > 1.0);
    }
}
