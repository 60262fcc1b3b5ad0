//! Gantt chart of a real or simulated run: one row per CPU, one bar per job
//! attempt from its start to its end, coloured by its measured slowdown
//! (grey where none was measured) and outlined by how it ended.

use crate::svg::{esc, slowdown_colour, slowdown_key, step_decimals, text_width, ticks, Canvas, Text};

/// One bar: a job attempt on the CPUs it held.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub job: String,
    pub cpus: Vec<u32>,
    pub start: f64,
    pub end: f64,
    /// `ok`, `failed`, `timeout`, `oom`, `killed`, ...
    pub status: String,
    pub slowdown: Option<f64>,
}

/// The chart as an SVG document, with a key of its colours and outlines.
/// `cpus` lists the rows (CPU numbers), with the pool each belongs to.
pub fn gantt(title: &str, cpus: &[(u32, String)], bars: &[Bar]) -> String {
    let t_end = bars.iter().map(|b| b.end).fold(0.0_f64, f64::max).max(1e-9);
    let row_names: Vec<String> = cpus.iter().map(|(cpu, pool)| format!("CPU {cpu} ({pool})")).collect();
    let left = 16.0 + row_names.iter().map(|n| text_width(n, 11.0, false)).fold(60.0, f64::max);
    let plot_w = 760.0;
    let row_h = 34.0;
    let top = 40.0;
    let rows = cpus.len().max(1) as f64;
    let h = top + row_h * rows + 100.0;
    let w = left + plot_w + 30.0;
    let x = |t: f64| left + plot_w * t / t_end;
    let mut c = Canvas::new(w, h, 11.0);
    c.text(Text::new(left, 20.0, title).size(14.0));
    for (row, (cpu, _)) in cpus.iter().enumerate() {
        let y = top + row_h * row as f64;
        c.text(Text::new(8.0, y + row_h / 2.0 + 4.0, &row_names[row]));
        c.raw(&format!(r##"<rect x="{left:.1}" y="{y:.1}" width="{plot_w}" height="{row_h}" fill="#f7f7f7" stroke="#ddd"/>"##));
        for b in bars.iter().filter(|b| b.cpus.contains(cpu)) {
            let (x0, x1) = (x(b.start), x(b.end).max(x(b.start) + 1.0));
            let fill = b.slowdown.map_or_else(|| "#cccccc".to_string(), slowdown_colour);
            let stroke = match b.status.as_str() {
                "ok" => "#555555",
                "killed" => "#888888",
                _ => "#cc0000",
            };
            let tip = format!(
                "{} on CPU {cpu}: {:.2}-{:.2} s, {}{}",
                b.job,
                b.start,
                b.end,
                b.status,
                b.slowdown.map_or(String::new(), |v| format!(", slowdown {v:.2}"))
            );
            c.raw(&format!(
                r##"<g><title>{}</title><rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{fill}" stroke="{stroke}" stroke-width="1.5"/>"##,
                esc(&tip),
                y + 3.0,
                x1 - x0,
                row_h - 6.0
            ));
            let label = match (b.status.as_str(), b.slowdown) {
                ("ok", Some(v)) => format!("{} {v:.2}", b.job),
                ("ok", None) => b.job.clone(),
                (st, _) => format!("{} ({st})", b.job),
            };
            // A label that would run past the time axis ends at the bar's end instead.
            let ly = y + row_h / 2.0 + 4.0;
            if x0 + 3.0 + text_width(&label, 11.0, false) > left + plot_w {
                c.text(Text::new(x1 - 3.0, ly, &label).end());
            } else {
                c.text(Text::new(x0 + 3.0, ly, &label));
            }
            c.raw("</g>");
        }
    }
    let axis_y = top + row_h * rows;
    // Round ticks (1-2-5 steps) with enough decimals that neighbours differ.
    let (tick_values, step) = ticks(0.0, t_end, 6);
    for t in tick_values {
        c.raw(&format!(r##"<line x1="{0:.1}" y1="{axis_y:.1}" x2="{0:.1}" y2="{1:.1}" stroke="#999"/>"##, x(t), axis_y + 5.0));
        c.text(Text::new(x(t), axis_y + 18.0, &format!("{t:.*}", step_decimals(step))).middle());
    }
    c.text(Text::new(left + plot_w / 2.0, axis_y + 36.0, "seconds since the run began").middle());
    let key_y = axis_y + 50.0;
    let mut kx = slowdown_key(&mut c, 8.0, key_y, "fill: measured slowdown") + 12.0;
    for (fill, stroke, what) in [("#cccccc", "#555555", "not measured"), ("#ffffff", "#cc0000", "failed, timeout or oom"), ("#ffffff", "#888888", "killed")] {
        c.raw(&format!(r##"<rect x="{kx:.1}" y="{key_y:.1}" width="22" height="14" fill="{fill}" stroke="{stroke}" stroke-width="1.5" class="key"/>"##));
        c.text(Text::new(kx + 27.0, key_y + 11.0, what));
        kx += 27.0 + text_width(what, 11.0, false) + 14.0;
    }
    c.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_two_cpu_job_has_a_bar_on_each_row_and_labels_are_escaped() {
        let bars = [
            Bar { job: "a<b".into(), cpus: vec![0, 1], start: 0.0, end: 2.0, status: "ok".into(), slowdown: Some(1.5) },
            Bar { job: "c".into(), cpus: vec![1], start: 2.0, end: 4.0, status: "timeout".into(), slowdown: None },
        ];
        let svg = gantt("run", &[(0, "host".into()), (1, "host".into())], &bars);
        assert_eq!(svg.matches("<title>a&lt;b on CPU").count(), 2);
        assert_eq!(svg.matches("<title>c on CPU 1").count(), 1);
        assert!(svg.contains("c (timeout)"));
        assert!(svg.contains(&slowdown_colour(1.5)));
        // The time axis ends at the last end: 4.0 at the right edge.
        assert!(svg.contains(">4</text>") && svg.contains(">3</text>"), "round ticks 1 s apart: {svg}");
        assert_eq!(svg.matches(r#"class="key""#).count(), 7 + 3, "slowdown swatches and outline key");
    }
}
