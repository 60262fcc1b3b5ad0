//! Probe curves: a job's sensitivity (its own slowdown) and contentiousness
//! (the stressor's slowdown) against the DistGen stressor's working-set size,
//! as the DistGen paper plots them.
//!
//! The x axis is logarithmic because the ladder spans private-cache sizes to
//! many times the LLC: on a linear axis every point below the LLC would sit
//! in the first few pixels. Vertical lines mark the L2 and LLC sizes, the
//! boundaries at which the DistGen paper expects a curve to change: below L2 the
//! stressor stays in its private cache, between L2 and the LLC it competes
//! for cache space, beyond the LLC for memory bandwidth.

use cosched_model::probe::ProbePoint;
use cosched_model::stats::Summary;

use crate::svg::{esc, step_decimals, text_width, Canvas, Text};

/// Cache sizes drawn as vertical markers; `None` leaves a marker out (the
/// topology could not be read).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheMarks {
    pub l2_kib: Option<u64>,
    pub llc_kib: Option<u64>,
}

/// A size in KiB as people write it: `512 KiB`, `32 MiB`, `1.5 MiB`, `1 GiB`.
pub fn fmt_kib(kib: u64) -> String {
    let (div, unit) = match kib {
        k if k >= 1 << 20 => ((1u64 << 20) as f64, "GiB"),
        k if k >= 1 << 10 => (1024.0, "MiB"),
        _ => (1.0, "KiB"),
    };
    let v = kib as f64 / div;
    if v.fract() == 0.0 {
        format!("{v:.0} {unit}")
    } else {
        // Two decimals at most, trailing zeros dropped: 1.5 MiB, not 1.50 MiB.
        let s = format!("{v:.2}");
        format!("{} {unit}", s.trim_end_matches('0').trim_end_matches('.'))
    }
}

/// An intensity as a short label that still reads as a share: `1.0`, `0.5`,
/// `0.25`.
pub fn fmt_intensity(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.1}")
    } else {
        format!("{x}")
    }
}

/// A base-2 logarithmic axis mapping sizes in `[lo, hi]` onto pixels
/// `[px0, px1]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogAxis {
    lo: f64,
    hi: f64,
    px0: f64,
    px1: f64,
}

impl LogAxis {
    /// `lo < hi`, both positive; degenerate ranges are widened so a single
    /// size still has room on both sides.
    pub fn new(lo: f64, hi: f64, px0: f64, px1: f64) -> LogAxis {
        let lo = lo.max(f64::MIN_POSITIVE);
        let hi = if hi > lo { hi } else { lo * 4.0 };
        LogAxis { lo: lo.log2(), hi: hi.log2(), px0, px1 }
    }

    pub fn place(&self, v: f64) -> f64 {
        self.px0 + (v.log2() - self.lo) / (self.hi - self.lo) * (self.px1 - self.px0)
    }

    /// Powers of two inside the range, thinned to at most `max` so labels
    /// do not collide.
    fn ticks(&self, max: usize) -> Vec<u64> {
        let first = self.lo.ceil().max(0.0) as u32;
        let last = self.hi.floor().min(62.0) as u32;
        if last < first {
            return Vec::new();
        }
        let count = (last - first + 1) as usize;
        let stride = count.div_ceil(max.max(1)) as u32;
        (first..=last).step_by(stride as usize).map(|p| 1u64 << p).collect()
    }
}

/// A linear axis for slowdowns, with "nice" tick steps.
#[derive(Debug, Clone, Copy)]
struct LinAxis {
    lo: f64,
    hi: f64,
    px0: f64,
    px1: f64,
}

impl LinAxis {
    fn place(&self, v: f64) -> f64 {
        self.px0 + (v - self.lo) / (self.hi - self.lo) * (self.px1 - self.px0)
    }

    /// Round ticks, 1-2-5 steps, and the decimals their labels need.
    fn ticks(&self) -> (Vec<f64>, usize) {
        let (t, step) = crate::svg::ticks(self.lo, self.hi, 6);
        (t, step_decimals(step))
    }
}

/// Slowdowns always include 1.0 (no effect), so a flat curve reads as flat
/// rather than as noise blown up to the full height.
fn slowdown_axis(values: impl Iterator<Item = (f64, f64)>, px0: f64, px1: f64) -> LinAxis {
    let (mut lo, mut hi) = (1.0f64, 1.0f64);
    for (a, b) in values {
        lo = lo.min(a);
        hi = hi.max(b);
    }
    let span = (hi - lo).max(0.2);
    let mid = (hi + lo) / 2.0;
    let (lo, hi) = (mid - span / 2.0, mid + span / 2.0);
    let pad = span * 0.08;
    LinAxis { lo: lo - pad, hi: hi + pad, px0, px1 }
}

/// Which slowdown of a point a panel shows.
type Metric = fn(&ProbePoint) -> Summary;

const PALETTE: [&str; 6] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"];

const LEFT: f64 = 70.0;
const TOP: f64 = 80.0;
const PLOT_W: f64 = 430.0;
const PLOT_H: f64 = 260.0;
const GAP: f64 = 90.0;
/// Sizes are padded by this factor on each side of the axis so the first and
/// last markers do not sit on the frame.
const X_PAD: f64 = 1.6;

/// The two-panel plot of a job's probe: sensitivity on the left,
/// contentiousness on the right, one series per intensity, each point its
/// median with the 95% interval as a whisker.
pub fn probe_curves(title: &str, points: &[ProbePoint], marks: CacheMarks) -> String {
    let width = LEFT + 2.0 * PLOT_W + GAP + 30.0;
    let height = TOP + PLOT_H + 100.0;
    let mut c = Canvas::new(width, height, 12.0);
    c.text(Text::new(8.0, 22.0, title).size(15.0).bold());
    c.text(
        Text::new(8.0, 42.0, "slowdown = co-run / solo time of the same repeat; dot: median, whisker: 95% interval (the range below 6 repeats)")
            .attrs(r##"fill="#444""##),
    );

    let sizes = points
        .iter()
        .map(|p| p.level.size_kib as f64)
        .chain(marks.l2_kib.map(|k| k as f64))
        .chain(marks.llc_kib.map(|k| k as f64));
    let (lo, hi) = sizes.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (lo, hi) = if lo.is_finite() { (lo / X_PAD, hi * X_PAD) } else { (64.0, 1024.0 * 1024.0) };

    let series = series_of(points);
    let panels: [(&str, Metric); 2] = [
        ("sensitivity: the job's slowdown", |p| p.job_slowdown),
        ("contentiousness: the stressor's slowdown", |p| p.stressor_slowdown),
    ];
    for (i, (label, get)) in panels.into_iter().enumerate() {
        let x0 = LEFT + i as f64 * (PLOT_W + GAP);
        let x = LogAxis::new(lo, hi, x0, x0 + PLOT_W);
        let y = slowdown_axis(points.iter().map(|p| (get(p).ci_lo, get(p).ci_hi)), TOP + PLOT_H, TOP);
        panel(&mut c, label, &x, &y, &series, get, marks);
    }

    // Legend: one swatch per intensity.
    let ly = TOP + PLOT_H + 62.0;
    let caption = "stressor intensity (share of time accessing memory):";
    c.text(Text::new(LEFT, ly + 4.0, caption).attrs(r##"fill="#444""##));
    let mut lx = LEFT + text_width(caption, 12.0, false) + 12.0;
    for (k, (intensity, _)) in series.iter().enumerate() {
        let col = PALETTE[k % PALETTE.len()];
        c.raw(&format!(
            r##"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{col}" stroke-width="2"/><circle cx="{:.1}" cy="{ly:.1}" r="3.5" fill="{col}" class="legend"/>"##,
            lx + 24.0,
            lx + 12.0,
        ));
        let label = fmt_intensity(*intensity);
        c.text(Text::new(lx + 30.0, ly + 4.0, &label));
        lx += 30.0 + text_width(&label, 12.0, false) + 20.0;
    }
    if points.is_empty() {
        c.text(Text::new(LEFT + 10.0, TOP + 20.0, "no probe points").attrs(r##"fill="#a00""##));
    }
    c.finish()
}

/// Points grouped by intensity in order of first appearance, each group
/// sorted by size so its line runs left to right.
fn series_of(points: &[ProbePoint]) -> Vec<(f64, Vec<&ProbePoint>)> {
    let mut out: Vec<(f64, Vec<&ProbePoint>)> = Vec::new();
    for p in points {
        match out.iter_mut().find(|(i, _)| *i == p.level.intensity) {
            Some((_, v)) => v.push(p),
            None => out.push((p.level.intensity, vec![p])),
        }
    }
    for (_, v) in &mut out {
        v.sort_by_key(|p| p.level.size_kib);
    }
    out
}

fn panel(
    c: &mut Canvas,
    label: &str,
    x: &LogAxis,
    y: &LinAxis,
    series: &[(f64, Vec<&ProbePoint>)],
    get: Metric,
    marks: CacheMarks,
) {
    let (x0, x1) = (x.px0, x.px1);
    let (ytop, ybot) = (y.px1, y.px0);
    c.text(Text::new(x0, ytop - 12.0, label).bold());
    let (yticks, decimals) = y.ticks();
    for t in yticks {
        let py = y.place(t);
        let (stroke, w) = if (t - 1.0).abs() < 1e-9 { ("#888", 1.2) } else { ("#e4e4e4", 1.0) };
        c.raw(&format!(r##"<line x1="{x0:.1}" y1="{py:.1}" x2="{x1:.1}" y2="{py:.1}" stroke="{stroke}" stroke-width="{w}"/>"##));
        c.text(Text::new(x0 - 6.0, py + 4.0, &format!("{t:.decimals$}")).end().size(11.0));
    }
    for t in x.ticks(7) {
        let px = x.place(t as f64);
        c.raw(&format!(r##"<line x1="{px:.1}" y1="{ybot:.1}" x2="{px:.1}" y2="{:.1}" stroke="#555"/>"##, ybot + 5.0));
        c.text(Text::new(px, ybot + 18.0, &fmt_kib(t)).middle().size(11.0));
    }
    c.raw(&format!(r##"<rect x="{x0:.1}" y="{ytop:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="#999"/>"##, x1 - x0, ybot - ytop));
    for (name, kib) in [("L2", marks.l2_kib), ("LLC", marks.llc_kib)] {
        let Some(kib) = kib else { continue };
        let px = x.place(kib as f64);
        c.raw(&format!(r##"<line x1="{px:.1}" y1="{ytop:.1}" x2="{px:.1}" y2="{ybot:.1}" stroke="#666" stroke-dasharray="5,4" class="cache-mark"/>"##));
        c.text(Text::new(px + 3.0, ytop + 13.0, &format!("{name} {}", fmt_kib(kib))).size(11.0).attrs(r##"fill="#444""##));
    }
    c.text(Text::new((x0 + x1) / 2.0, ybot + 38.0, "stressor working set (log scale)").middle().attrs(r##"fill="#333""##));
    c.text(Text::new(x0 - 48.0, (ytop + ybot) / 2.0, "slowdown").middle().rotate(-90.0).attrs(r##"fill="#333""##));

    for (k, (intensity, pts)) in series.iter().enumerate() {
        let col = PALETTE[k % PALETTE.len()];
        if pts.len() > 1 {
            let path: Vec<String> = pts
                .iter()
                .map(|p| format!("{:.1},{:.1}", x.place(p.level.size_kib as f64), y.place(get(p).median)))
                .collect();
            c.raw(&format!(r##"<polyline points="{}" fill="none" stroke="{col}" stroke-width="1.8"/>"##, path.join(" ")));
        }
        for p in pts {
            let v = get(p);
            let px = x.place(p.level.size_kib as f64);
            let (plo, phi, pm) = (y.place(v.ci_lo), y.place(v.ci_hi), y.place(v.median));
            c.raw(&format!(
                r##"<path class="whisker" d="M{px:.1},{plo:.1}V{phi:.1}M{:.1},{plo:.1}H{:.1}M{:.1},{phi:.1}H{:.1}" stroke="{col}" fill="none"/>"##,
                px - 4.0,
                px + 4.0,
                px - 4.0,
                px + 4.0
            ));
            c.raw(&format!(
                r##"<circle cx="{px:.1}" cy="{pm:.1}" r="3.5" fill="{col}"><title>{}, intensity {}: {:.3} [{:.3}, {:.3}] n={}</title></circle>"##,
                fmt_kib(p.level.size_kib),
                esc(&fmt_intensity(*intensity)),
                v.median,
                v.ci_lo,
                v.ci_hi,
                v.n
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosched_model::probe::ProbeLevel;

    fn pt(size_kib: u64, intensity: f64, job: &[f64], stressor: &[f64]) -> ProbePoint {
        ProbePoint {
            level: ProbeLevel { size_kib, intensity },
            job_slowdown: Summary::of(job).unwrap(),
            stressor_slowdown: Summary::of(stressor).unwrap(),
        }
    }

    /// Markers in the plot itself, not the legend's swatches.
    fn markers(svg: &str) -> usize {
        svg.matches("<circle").count() - svg.matches(r#"class="legend""#).count()
    }

    #[test]
    fn every_point_has_a_marker_and_a_whisker_in_each_panel() {
        let mut pts = Vec::new();
        for intensity in [1.0, 0.5] {
            for size in [256, 16384, 131072] {
                pts.push(pt(size, intensity, &[1.0, 1.1, 1.2], &[1.3, 1.4, 1.5]));
            }
        }
        let svg = probe_curves("p", &pts, CacheMarks::default());
        assert_eq!(markers(&svg), 12, "6 points x 2 panels");
        assert_eq!(svg.matches(r#"class="whisker""#).count(), 12);
        assert_eq!(svg.matches("<polyline").count(), 4, "one line per intensity per panel");
        assert_eq!(svg.matches(r#"class="legend""#).count(), 2, "one legend entry per intensity");
        assert!(svg.contains(">1.0<") && svg.contains(">0.5<"), "legend labels");
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    }

    #[test]
    fn the_x_axis_is_logarithmic() {
        let a = LogAxis::new(64.0, 65536.0, 0.0, 100.0);
        assert_eq!(a.place(64.0), 0.0);
        assert_eq!(a.place(65536.0), 100.0);
        // 2048 KiB is the geometric middle of 64 KiB..64 MiB; linearly it
        // would sit at 3% of the width.
        assert_eq!(a.place(2048.0), 50.0);
        // 11 powers of two from 64 to 65536, thinned to every third.
        assert_eq!(a.ticks(4), vec![64, 512, 4096, 32768]);
    }

    #[test]
    fn a_size_lands_where_the_log_scale_puts_it_in_the_plot() {
        // The padded range is symmetric around 2048 KiB on a log scale, so
        // that point sits at the middle of each panel.
        let pts = [pt(64, 1.0, &[1.0], &[1.0]), pt(2048, 1.0, &[1.5], &[1.0]), pt(65536, 1.0, &[1.0], &[1.0])];
        let svg = probe_curves("p", &pts, CacheMarks::default());
        for panel in 0..2 {
            let mid = LEFT + panel as f64 * (PLOT_W + GAP) + PLOT_W / 2.0;
            assert!(svg.contains(&format!(r#"<circle cx="{mid:.1}""#)), "no marker at x = {mid:.1}:\n{svg}");
        }
    }

    #[test]
    fn cache_marks_are_drawn_when_known() {
        let pts = [pt(256, 1.0, &[1.0], &[1.0]), pt(131072, 1.0, &[1.2], &[1.1])];
        let svg = probe_curves("p", &pts, CacheMarks { l2_kib: Some(512), llc_kib: Some(32768) });
        assert_eq!(svg.matches(r#"class="cache-mark""#).count(), 4, "two marks in each of two panels");
        assert!(svg.contains("L2 512 KiB") && svg.contains("LLC 32 MiB"));
        let none = probe_curves("p", &pts, CacheMarks { l2_kib: None, llc_kib: Some(32768) });
        assert_eq!(none.matches(r#"class="cache-mark""#).count(), 2);
    }

    #[test]
    fn text_is_escaped() {
        let svg = probe_curves("job <a> & \"b\"", &[pt(256, 1.0, &[1.0], &[1.0])], CacheMarks::default());
        assert!(svg.contains("job &lt;a&gt; &amp; &quot;b&quot;"), "{svg}");
        assert!(!svg.contains("<a>"));
    }

    #[test]
    fn an_empty_probe_still_gives_a_valid_plot() {
        let svg = probe_curves("p", &[], CacheMarks::default());
        assert_eq!(markers(&svg), 0);
        assert!(svg.contains("no probe points") && svg.trim_end().ends_with("</svg>"));
    }

    #[test]
    fn sizes_and_intensities_read_as_people_write_them() {
        assert_eq!(fmt_kib(512), "512 KiB");
        assert_eq!(fmt_kib(32768), "32 MiB");
        assert_eq!(fmt_kib(1536), "1.5 MiB");
        assert_eq!(fmt_kib(524288), "512 MiB");
        assert_eq!(fmt_kib(1 << 20), "1 GiB");
        assert_eq!(fmt_intensity(1.0), "1.0");
        assert_eq!(fmt_intensity(0.25), "0.25");
    }
}
