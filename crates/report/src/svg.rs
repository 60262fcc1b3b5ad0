//! A small SVG writer for the few plot types cosched draws.
//!
//! Hand-written rather than a plotting crate: a heatmap is a grid of
//! rectangles and labels, and writing it directly keeps the files small,
//! dependency-free and stable under test.

use std::fmt::Write;

use cosched_model::matrix::SlowdownMatrix;

/// Escapes text for SVG/XML content and attributes.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Colour of a slowdown: white at 1.0, deepening red up to `2.0` and beyond,
/// green below 1.0 (a job that runs faster beside its co-runner, which the
/// Xeon Phi study observed too).
pub fn slowdown_colour(s: f64) -> String {
    if !s.is_finite() {
        return "#dddddd".into();
    }
    if s >= 1.0 {
        let t = ((s - 1.0) / 1.0).clamp(0.0, 1.0);
        let gb = (255.0 * (1.0 - 0.8 * t)).round() as u8;
        format!("#ff{gb:02x}{gb:02x}")
    } else {
        let t = ((1.0 - s) / 0.5).clamp(0.0, 1.0);
        let rb = (255.0 * (1.0 - 0.6 * t)).round() as u8;
        format!("#{rb:02x}ff{rb:02x}")
    }
}

/// Heatmap of a slowdown matrix: rows are foreground jobs, columns the
/// background jobs beside them; each cell shows the median and the 95%
/// interval with the number of repeats.
pub fn heatmap(m: &SlowdownMatrix, title: &str) -> String {
    heatmap_captioned(m, title, "row: foreground job, column: background job; slowdown = co-run / solo time, median [95% CI] (n)")
}

/// [`heatmap`] with another caption under the title, for matrices of other
/// ratios at least 1 (the co-execution study's makespan over the set's best).
pub fn heatmap_captioned(m: &SlowdownMatrix, title: &str, caption: &str) -> String {
    let n = m.jobs.len();
    let cell_w = 96.0;
    let cell_h = 44.0;
    let left = 8.0 + 7.0 * m.jobs.iter().map(|j| j.len()).max().unwrap_or(4).max(10) as f64;
    let top = 110.0;
    let width = left + cell_w * n as f64 + 20.0;
    let height = top + cell_h * n as f64 + 60.0;
    let mut s = String::new();
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" font-family="sans-serif" font-size="12">"##
    );
    let _ = write!(s, r##"<rect width="100%" height="100%" fill="white"/>"##);
    let _ = write!(s, r##"<text x="8" y="22" font-size="15" font-weight="bold">{}</text>"##, esc(title));
    let _ = write!(
        s,
        r##"<text x="8" y="40" fill="#444">{}</text>"##,
        esc(caption)
    );
    for (j, name) in m.jobs.iter().enumerate() {
        let x = left + cell_w * (j as f64 + 0.5);
        let _ = write!(
            s,
            r##"<text x="{x:.1}" y="{:.1}" text-anchor="start" transform="rotate(-35 {x:.1} {:.1})">{}</text>"##,
            top - 8.0,
            top - 8.0,
            esc(name)
        );
    }
    for (i, name) in m.jobs.iter().enumerate() {
        let y = top + cell_h * i as f64;
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            left - 6.0,
            y + cell_h / 2.0 + 4.0,
            esc(name)
        );
        for j in 0..n {
            let x = left + cell_w * j as f64;
            let (fill, line1, line2) = match m.get(i, j) {
                Some(c) => (
                    slowdown_colour(c.median),
                    format!("{:.2}", c.median),
                    format!("[{:.2}, {:.2}] ({})", c.ci_lo, c.ci_hi, c.n),
                ),
                None => ("#eeeeee".to_string(), "-".to_string(), String::new()),
            };
            let _ = write!(
                s,
                r##"<rect x="{x:.1}" y="{y:.1}" width="{cell_w}" height="{cell_h}" fill="{fill}" stroke="#999"/>"##
            );
            let cx = x + cell_w / 2.0;
            let _ = write!(
                s,
                r##"<text x="{cx:.1}" y="{:.1}" text-anchor="middle" font-weight="bold">{line1}</text>"##,
                y + 18.0
            );
            let _ = write!(
                s,
                r##"<text x="{cx:.1}" y="{:.1}" text-anchor="middle" font-size="10" fill="#333">{line2}</text>"##,
                y + 34.0
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use cosched_model::stats::Summary;

    #[test]
    fn heatmap_has_one_rect_per_cell_and_escapes_names() {
        let mut m = SlowdownMatrix::new(vec!["a<b".into(), "c".into()]);
        m.cells[0][1] = Summary::of(&[1.5, 1.6, 1.7]);
        let svg = heatmap(&m, "t & u");
        // Background plus 4 cells.
        assert_eq!(svg.matches("<rect").count(), 5);
        assert!(svg.contains("a&lt;b") && svg.contains("t &amp; u"));
        assert!(svg.contains(">1.60<"), "median shown");
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    }

    #[test]
    fn colours_are_white_at_one_red_above_green_below() {
        assert_eq!(slowdown_colour(1.0), "#ffffff");
        assert_eq!(slowdown_colour(2.5), "#ff3333");
        assert!(slowdown_colour(0.6).starts_with("#") && slowdown_colour(0.6)[3..5] == *"ff");
    }
}

/// Overlaid histograms on shared bins (e.g. average slowdown over all
/// placements and over twin-free ones, as in the Terrible Twins paper): one series of
/// bars per `(label, colour, counts)`, bin `i` spanning
/// `[lo + i*w, lo + (i+1)*w)`.
pub fn histogram(title: &str, x_label: &str, lo: f64, w: f64, series: &[(&str, &str, &[u64])]) -> String {
    let bins = series.iter().map(|s| s.2.len()).max().unwrap_or(0).max(1);
    let max = series.iter().flat_map(|s| s.2.iter().copied()).max().unwrap_or(0).max(1) as f64;
    let (left, top, pw, ph) = (70.0, 50.0, 640.0, 300.0);
    let mut s = String::new();
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{:.0}" height="{:.0}" font-family="sans-serif" font-size="12">"##,
        left + pw + 30.0,
        top + ph + 90.0
    );
    let _ = write!(s, r##"<rect width="100%" height="100%" fill="white"/>"##);
    let _ = write!(s, r##"<text x="8" y="22" font-size="15" font-weight="bold">{}</text>"##, esc(title));
    let bw = pw / bins as f64;
    for (k, (_, colour, counts)) in series.iter().enumerate() {
        for (i, &c) in counts.iter().enumerate() {
            let h = ph * c as f64 / max;
            let _ = write!(
                s,
                r##"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="{:.2}" fill="{}" fill-opacity="{}"/>"##,
                left + bw * i as f64,
                top + ph - h,
                bw.max(1.0),
                h,
                esc(colour),
                if k == 0 { "0.55" } else { "0.75" }
            );
        }
    }
    let _ = write!(
        s,
        r##"<line x1="{left}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#333"/><line x1="{left}" y1="{top}" x2="{left}" y2="{:.1}" stroke="#333"/>"##,
        top + ph,
        left + pw,
        top + ph,
        top + ph
    );
    for t in 0..=4 {
        let x = left + pw * t as f64 / 4.0;
        let v = lo + w * bins as f64 * t as f64 / 4.0;
        let _ = write!(s, r##"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{v:.3}</text>"##, top + ph + 16.0);
        let y = top + ph - ph * t as f64 / 4.0;
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end">{:.0}</text>"##,
            left - 6.0,
            y + 4.0,
            max * t as f64 / 4.0
        );
    }
    let _ = write!(s, r##"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"##, left + pw / 2.0, top + ph + 36.0, esc(x_label));
    let _ = write!(s, r##"<text x="16" y="{:.1}" transform="rotate(-90 16 {:.1})" text-anchor="middle">placements</text>"##, top + ph / 2.0, top + ph / 2.0);
    for (k, (label, colour, _)) in series.iter().enumerate() {
        let x = left + 200.0 * k as f64;
        let y = top + ph + 60.0;
        let _ = write!(
            s,
            r##"<rect x="{x:.1}" y="{:.1}" width="14" height="10" fill="{}"/><text x="{:.1}" y="{y:.1}">{}</text>"##,
            y - 9.0,
            esc(colour),
            x + 20.0,
            esc(label)
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod histogram_tests {
    use super::*;

    #[test]
    fn one_bar_per_bin_and_series_plus_legend() {
        let svg = histogram("t", "x", 1.0, 0.1, &[("all", "#1f77b4", &[1, 2, 3]), ("twin-free", "#d62728", &[0, 1, 1])]);
        // Background, 6 bars, 2 legend swatches.
        assert_eq!(svg.matches("<rect").count(), 9);
        assert!(svg.contains("twin-free") && svg.contains("1.300"), "axis spans lo..lo+bins*w");
    }
}
