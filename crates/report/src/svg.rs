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

/// Estimated advance width of `text` at `size` px in DejaVu Sans, the
/// `sans-serif` of Debian's Chromium and of most Linux desktops: a width
/// per character class from the font's advance table (narrow punctuation
/// 0.32 em, digits and lower case 0.64 em, upper case 0.78 em, `m w M W %`
/// 1.0 em), rounded up so an estimate is never narrower than the text,
/// bold 10 % wider. Other fonts of similar metrics (Liberation Sans, Arial)
/// come out narrower, so their text fits too.
pub fn text_width(text: &str, size: f64, bold: bool) -> f64 {
    let em: f64 = text
        .chars()
        .map(|c| match c {
            ' ' | ',' | '.' | ':' | ';' | '!' | '|' | 'i' | 'j' | 'l' | '\'' => 0.32,
            'f' | 't' | 'r' | '(' | ')' | '[' | ']' | '/' | '-' | 'I' | '{' | '}' => 0.42,
            'm' | 'w' | 'M' | 'W' | '%' | '@' => 1.0,
            '=' | '+' | '<' | '>' | '~' | '#' | '&' => 0.84,
            c if c.is_ascii_uppercase() => 0.78,
            _ => 0.64,
        })
        .sum();
    em * size * if bold { 1.1 } else { 1.0 }
}

/// Where a text's `x` is: its start, middle or end (`text-anchor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    Start,
    Middle,
    End,
}

/// One `<text>` element: position, content and look. Built with
/// [`Text::new`] and the setters, drawn by [`Canvas::text`].
#[derive(Debug, Clone, PartialEq)]
pub struct Text<'a> {
    x: f64,
    y: f64,
    content: &'a str,
    size: Option<f64>,
    anchor: Anchor,
    bold: bool,
    /// Degrees, about `(x, y)`, as SVG's `rotate(a x y)`.
    rotate: f64,
    /// Further attributes written as they are (`fill="#444"`, `class=...`).
    attrs: &'a str,
}

impl<'a> Text<'a> {
    pub fn new(x: f64, y: f64, content: &'a str) -> Text<'a> {
        Text { x, y, content, size: None, anchor: Anchor::Start, bold: false, rotate: 0.0, attrs: "" }
    }
    pub fn size(mut self, px: f64) -> Self {
        self.size = Some(px);
        self
    }
    pub fn anchor(mut self, a: Anchor) -> Self {
        self.anchor = a;
        self
    }
    pub fn middle(self) -> Self {
        self.anchor(Anchor::Middle)
    }
    pub fn end(self) -> Self {
        self.anchor(Anchor::End)
    }
    pub fn bold(mut self) -> Self {
        self.bold = true;
        self
    }
    pub fn rotate(mut self, degrees: f64) -> Self {
        self.rotate = degrees;
        self
    }
    pub fn attrs(mut self, attrs: &'a str) -> Self {
        self.attrs = attrs;
        self
    }
}

/// An SVG document under construction whose size follows its text: shapes
/// are drawn in a nominal `width` x `height` area, and every text's
/// estimated extent ([`text_width`]; the font's ascent and descent
/// vertically, rotation included) widens the `viewBox` where it reaches
/// past that area, so no title, legend or label is clipped.
#[derive(Debug, Clone)]
pub struct Canvas {
    body: String,
    font: f64,
    lo: (f64, f64),
    hi: (f64, f64),
}

/// Space kept between the outermost text and the edge of the picture.
const MARGIN: f64 = 4.0;

impl Canvas {
    /// A canvas of `width` x `height` whose text is `font` px unless told.
    pub fn new(width: f64, height: f64, font: f64) -> Canvas {
        Canvas { body: String::new(), font, lo: (0.0, 0.0), hi: (width, height) }
    }

    /// Shapes (or anything else) written as they are; they are expected
    /// inside the nominal area.
    pub fn raw(&mut self, svg: &str) {
        self.body.push_str(svg);
    }

    /// A text element; the picture grows to hold it.
    pub fn text(&mut self, t: Text) {
        let size = t.size.unwrap_or(self.font);
        let w = text_width(t.content, size, t.bold);
        let (x0, x1) = match t.anchor {
            Anchor::Start => (t.x, t.x + w),
            Anchor::Middle => (t.x - w / 2.0, t.x + w / 2.0),
            Anchor::End => (t.x - w, t.x),
        };
        // DejaVu Sans: ascent 0.93 em, descent 0.24 em.
        let (y0, y1) = (t.y - 0.95 * size, t.y + 0.25 * size);
        let (sin, cos) = t.rotate.to_radians().sin_cos();
        for (cx, cy) in [(x0, y0), (x1, y0), (x0, y1), (x1, y1)] {
            let (dx, dy) = (cx - t.x, cy - t.y);
            let (px, py) = (t.x + dx * cos - dy * sin, t.y + dx * sin + dy * cos);
            self.lo = (self.lo.0.min(px - MARGIN), self.lo.1.min(py - MARGIN));
            self.hi = (self.hi.0.max(px + MARGIN), self.hi.1.max(py + MARGIN));
        }
        let _ = write!(self.body, r#"<text x="{:.1}" y="{:.1}""#, t.x, t.y);
        match t.anchor {
            Anchor::Start => {}
            Anchor::Middle => self.body.push_str(r#" text-anchor="middle""#),
            Anchor::End => self.body.push_str(r#" text-anchor="end""#),
        }
        if let Some(px) = t.size {
            let _ = write!(self.body, r#" font-size="{px}""#);
        }
        if t.bold {
            self.body.push_str(r#" font-weight="bold""#);
        }
        if t.rotate != 0.0 {
            let _ = write!(self.body, r#" transform="rotate({} {:.1} {:.1})""#, t.rotate, t.x, t.y);
        }
        if !t.attrs.is_empty() {
            let _ = write!(self.body, " {}", t.attrs);
        }
        let _ = write!(self.body, ">{}</text>", esc(t.content));
    }

    /// Grows the picture to hold the point `(x, y)` (a shape drawn past the
    /// nominal area, e.g. a legend placed below the text).
    pub fn reach(&mut self, x: f64, y: f64) {
        self.lo = (self.lo.0.min(x), self.lo.1.min(y));
        self.hi = (self.hi.0.max(x), self.hi.1.max(y));
    }

    /// The standalone SVG document, on a white background.
    pub fn finish(self) -> String {
        let (x, y) = (self.lo.0.floor(), self.lo.1.floor());
        let (w, h) = ((self.hi.0 - x).ceil(), (self.hi.1 - y).ceil());
        format!(
            r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="{x} {y} {w} {h}" font-family="sans-serif" font-size="{}"><rect x="{x}" y="{y}" width="{w}" height="{h}" fill="white"/>{}</svg>
"##,
            self.font, self.body
        )
    }
}

/// Round tick positions covering `[lo, hi]`: a step of 1, 2 or 5 times a
/// power of ten giving about `target` intervals, from the first multiple
/// of the step at or above `lo`. Returns the ticks and the step.
pub fn ticks(lo: f64, hi: f64, target: usize) -> (Vec<f64>, f64) {
    let step = nice_step(hi - lo, target);
    let mut out = Vec::new();
    let first = (lo / step - 1e-9).ceil();
    let mut k = 0.0;
    loop {
        let t = (first + k) * step;
        if t > hi + step * 1e-9 || out.len() > 1000 {
            break;
        }
        // 0.1 * 3 is 0.30000000000000004: round to the step's decimals.
        out.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
        k += 1.0;
    }
    (out, step)
}

/// A 1-2-5 step splitting `span` into about `target` intervals (never fewer
/// than `target / 2`).
pub fn nice_step(span: f64, target: usize) -> f64 {
    if !(span.is_finite() && span > 0.0) {
        return 1.0;
    }
    let raw = span / target.max(1) as f64;
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * p).find(|&s| s >= raw * (1.0 - 1e-9)).unwrap_or(10.0 * p)
}

/// Decimals a tick label needs so neighbouring ticks `step` apart differ.
pub fn step_decimals(step: f64) -> usize {
    if step >= 1.0 || !step.is_finite() || step <= 0.0 {
        0
    } else {
        (-(step.log10() + 1e-9).floor()) as usize
    }
}

/// A colour key of slowdowns, as [`slowdown_colour`] paints them: swatches
/// from 0.5 to 2.0 in a row starting at `(x, y)` (their top edge), with a
/// caption before them. Returns the key's right edge.
pub fn slowdown_key(c: &mut Canvas, x: f64, y: f64, caption: &str) -> f64 {
    c.text(Text::new(x, y + 11.0, caption).attrs(r##"fill="#444""##));
    let mut sx = x + text_width(caption, c.font, false) + 10.0;
    for (v, label) in [(0.5, "0.5"), (0.75, "0.75"), (1.0, "1.0"), (1.25, "1.25"), (1.5, "1.5"), (1.75, "1.75"), (2.0, "2.0+")] {
        c.raw(&format!(r##"<rect x="{sx:.1}" y="{y:.1}" width="34" height="14" fill="{}" stroke="#999" class="key"/>"##, slowdown_colour(v)));
        c.text(Text::new(sx + 17.0, y + 27.0, label).middle().size(10.0));
        sx += 38.0;
    }
    c.reach(sx, y + 30.0);
    sx
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
/// background jobs beside them; each cell shows the median and its
/// interval ([`crate::interval_name`]: the range below 6 repeats) with the
/// number of repeats; a colour key below.
pub fn heatmap(m: &SlowdownMatrix, title: &str) -> String {
    let interval = crate::interval_name(m.cells.iter().flatten().flatten().map(|s| s.n));
    heatmap_captioned(m, title, &format!("row: foreground job, column: background job; slowdown = co-run / solo time, median [{interval}] (n)"))
}

/// [`heatmap`] with another caption under the title, for matrices of other
/// ratios at least 1 (the co-execution study's makespan over the set's best).
pub fn heatmap_captioned(m: &SlowdownMatrix, title: &str, caption: &str) -> String {
    let n = m.jobs.len();
    let cell_w = 96.0;
    let cell_h = 44.0;
    let name_w = m.jobs.iter().map(|j| text_width(j, 12.0, false)).fold(60.0, f64::max);
    let left = 14.0 + name_w;
    // Column names are drawn at -35 degrees: they rise by sin(35) of their width.
    let top = 60.0 + name_w * 0.58;
    let width = left + cell_w * n as f64 + 20.0;
    let height = top + cell_h * n as f64 + 70.0;
    let mut c = Canvas::new(width, height, 12.0);
    c.text(Text::new(8.0, 22.0, title).size(15.0).bold());
    c.text(
        Text::new(8.0, 40.0, caption)
            .attrs(r##"fill="#444""##),
    );
    for (j, name) in m.jobs.iter().enumerate() {
        let x = left + cell_w * (j as f64 + 0.5);
        c.text(Text::new(x, top - 8.0, name).rotate(-35.0));
    }
    for (i, name) in m.jobs.iter().enumerate() {
        let y = top + cell_h * i as f64;
        c.text(Text::new(left - 6.0, y + cell_h / 2.0 + 4.0, name).end());
        for j in 0..n {
            let x = left + cell_w * j as f64;
            let (fill, line1, line2) = match m.get(i, j) {
                Some(cell) => (
                    slowdown_colour(cell.median),
                    format!("{:.2}", cell.median),
                    format!("[{:.2}, {:.2}] ({})", cell.ci_lo, cell.ci_hi, cell.n),
                ),
                None => ("#eeeeee".to_string(), "-".to_string(), String::new()),
            };
            c.raw(&format!(r##"<rect x="{x:.1}" y="{y:.1}" width="{cell_w}" height="{cell_h}" fill="{fill}" stroke="#999"/>"##));
            let cx = x + cell_w / 2.0;
            c.text(Text::new(cx, y + 18.0, &line1).middle().bold());
            c.text(Text::new(cx, y + 34.0, &line2).middle().size(10.0).attrs(r##"fill="#333""##));
        }
    }
    slowdown_key(&mut c, 8.0, top + cell_h * n as f64 + 18.0, "slowdown colour:");
    c.finish()
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
        // Background, 4 cells and the colour key's 7 swatches.
        assert_eq!(svg.matches("<rect").count(), 5 + 7);
        assert_eq!(svg.matches(r#"class="key""#).count(), 7);
        assert!(svg.contains("a&lt;b") && svg.contains("t &amp; u"));
        assert!(svg.contains(">1.60<"), "median shown");
        assert!(svg.contains("median [range] (n)"), "three repeats give a range, not a 95 % interval: {svg}");
        m.cells[1][0] = Summary::of(&[1.0; 6]);
        assert!(heatmap(&m, "t").contains("median [95% CI, range below 6 repeats] (n)"));
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
    let mut c = Canvas::new(left + pw + 30.0, top + ph + 90.0, 12.0);
    c.text(Text::new(8.0, 22.0, title).size(15.0).bold());
    let bw = pw / bins as f64;
    for (k, (_, colour, counts)) in series.iter().enumerate() {
        for (i, &n) in counts.iter().enumerate() {
            let h = ph * n as f64 / max;
            c.raw(&format!(
                r##"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="{:.2}" fill="{}" fill-opacity="{}"/>"##,
                left + bw * i as f64,
                top + ph - h,
                bw.max(1.0),
                h,
                esc(colour),
                if k == 0 { "0.55" } else { "0.75" }
            ));
        }
    }
    c.raw(&format!(
        r##"<line x1="{left}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#333"/><line x1="{left}" y1="{top}" x2="{left}" y2="{:.1}" stroke="#333"/>"##,
        top + ph,
        left + pw,
        top + ph,
        top + ph
    ));
    let hi = lo + w * bins as f64;
    let (xt, xstep) = ticks(lo, hi, 6);
    for v in xt {
        let x = left + pw * (v - lo) / (hi - lo);
        c.raw(&format!(r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#333"/>"##, top + ph, top + ph + 4.0));
        c.text(Text::new(x, top + ph + 16.0, &format!("{v:.*}", step_decimals(xstep))).middle());
    }
    let (yt, ystep) = ticks(0.0, max, 4.min(max as usize).max(1));
    for v in yt {
        let y = top + ph - ph * v / max;
        c.text(Text::new(left - 6.0, y + 4.0, &format!("{v:.*}", step_decimals(ystep))).end());
    }
    c.text(Text::new(left + pw / 2.0, top + ph + 36.0, x_label).middle());
    c.text(Text::new(16.0, top + ph / 2.0, "placements").middle().rotate(-90.0));
    let mut x = left;
    for (label, colour, _) in series {
        let y = top + ph + 60.0;
        c.raw(&format!(r##"<rect x="{x:.1}" y="{:.1}" width="14" height="10" fill="{}"/>"##, y - 9.0, esc(colour)));
        c.text(Text::new(x + 20.0, y, label));
        x += 20.0 + text_width(label, 12.0, false) + 24.0;
    }
    c.finish()
}

#[cfg(test)]
mod histogram_tests {
    use super::*;

    #[test]
    fn one_bar_per_bin_and_series_plus_legend() {
        let svg = histogram("t", "x", 1.0, 0.1, &[("all", "#1f77b4", &[1, 2, 3]), ("twin-free", "#d62728", &[0, 1, 1])]);
        // Background, 6 bars, 2 legend swatches.
        assert_eq!(svg.matches("<rect").count(), 9);
        assert!(svg.contains("twin-free") && svg.contains(">1.30<"), "axis spans lo..lo+bins*w on round ticks: {svg}");
    }
}

#[cfg(test)]
mod canvas_tests {
    use super::*;

    fn view_box(svg: &str) -> [f64; 4] {
        let v = svg.split("viewBox=\"").nth(1).unwrap().split('"').next().unwrap();
        let n: Vec<f64> = v.split(' ').map(|x| x.parse().unwrap()).collect();
        [n[0], n[1], n[2], n[3]]
    }

    #[test]
    fn the_picture_grows_to_hold_a_long_title_and_a_rotated_label() {
        let mut c = Canvas::new(100.0, 50.0, 12.0);
        c.text(Text::new(8.0, 22.0, "a title far wider than one hundred pixels").size(15.0).bold());
        c.text(Text::new(10.0, 45.0, "rotated label").end().rotate(-30.0));
        let svg = c.finish();
        let [x, y, w, h] = view_box(&svg);
        let title = text_width("a title far wider than one hundred pixels", 15.0, true);
        assert!(x + w >= 8.0 + title, "right edge {} holds the title's {title}", x + w);
        assert!(x < 0.0 && y <= 0.0 && h >= 50.0, "the end-anchored label reaches left of 0: {svg}");
        assert!(svg.contains(r#"transform="rotate(-30 10.0 45.0)""#) && svg.contains(r#"text-anchor="end""#));
        let plain = Canvas::new(100.0, 50.0, 12.0).finish();
        assert_eq!(view_box(&plain), [0.0, 0.0, 100.0, 50.0], "no text: the nominal area");
    }

    #[test]
    fn estimated_widths_rank_wide_letters_above_narrow_ones() {
        assert!(text_width("WWWW", 12.0, false) > text_width("iiii", 12.0, false) * 2.5);
        assert!(text_width("abc", 12.0, true) > text_width("abc", 12.0, false));
        assert_eq!(text_width("", 12.0, false), 0.0);
    }

    #[test]
    fn ticks_fall_on_one_two_five_steps_inside_the_range() {
        let (t, step) = ticks(0.61, 1.21, 6);
        assert_eq!(step, 0.1);
        assert_eq!(t.iter().map(|v| format!("{v:.1}")).collect::<Vec<_>>(), ["0.7", "0.8", "0.9", "1.0", "1.1", "1.2"]);
        assert_eq!(ticks(-0.35, 0.0, 6).0.last(), Some(&0.0), "zero is printed as 0, not -0");
        let mut seed = 12345u64;
        for _ in 0..500 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let lo = ((seed >> 11) % 100_000) as f64 / 1000.0 - 50.0;
            let span = 10f64.powf(((seed >> 40) % 700) as f64 / 100.0 - 3.0);
            let (t, step) = ticks(lo, lo + span, 6);
            let mantissa = step / 10f64.powf(step.log10().floor());
            assert!([1.0, 2.0, 5.0].iter().any(|m| (mantissa - m).abs() < 1e-6), "step {step}");
            assert!((2..=13).contains(&t.len()), "{} ticks for [{lo}, {}]", t.len(), lo + span);
            assert!(t.iter().all(|v| *v >= lo - step * 1e-6 && *v <= lo + span + step * 1e-6));
        }
    }
}
