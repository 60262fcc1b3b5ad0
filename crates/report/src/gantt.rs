//! Gantt chart of a real or simulated run: one row per CPU, one bar per job
//! attempt from its start to its end, coloured by its measured slowdown
//! (grey where none was measured) and outlined by how it ended.

use std::fmt::Write;

use crate::svg::{esc, slowdown_colour};

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

/// The chart as an SVG document. `cpus` lists the rows (CPU numbers), with
/// the pool each belongs to.
pub fn gantt(title: &str, cpus: &[(u32, String)], bars: &[Bar]) -> String {
    let t_end = bars.iter().map(|b| b.end).fold(0.0_f64, f64::max).max(1e-9);
    let left = 110.0;
    let plot_w = 760.0;
    let row_h = 34.0;
    let top = 40.0;
    let h = top + row_h * cpus.len().max(1) as f64 + 50.0;
    let w = left + plot_w + 30.0;
    let x = |t: f64| left + plot_w * t / t_end;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="11">"#
    );
    let _ = write!(s, r#"<text x="{left}" y="20" font-size="14">{}</text>"#, esc(title));
    for (row, (cpu, pool)) in cpus.iter().enumerate() {
        let y = top + row_h * row as f64;
        let _ = write!(s, r##"<text x="8" y="{:.1}">CPU {cpu} ({})</text>"##, y + row_h / 2.0 + 4.0, esc(pool));
        let _ = write!(s, r##"<rect x="{left}" y="{y:.1}" width="{plot_w}" height="{row_h}" fill="#f7f7f7" stroke="#ddd"/>"##);
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
            let _ = write!(
                s,
                r##"<g><title>{}</title><rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{fill}" stroke="{stroke}" stroke-width="1.5"/>"##,
                esc(&tip),
                y + 3.0,
                x1 - x0,
                row_h - 6.0
            );
            let label = match (b.status.as_str(), b.slowdown) {
                ("ok", Some(v)) => format!("{} {v:.2}", b.job),
                ("ok", None) => b.job.clone(),
                (st, _) => format!("{} ({st})", b.job),
            };
            let _ = write!(s, r##"<text x="{:.1}" y="{:.1}">{}</text></g>"##, x0 + 3.0, y + row_h / 2.0 + 4.0, esc(&label));
        }
    }
    let axis_y = top + row_h * cpus.len().max(1) as f64;
    let ticks = 6;
    // Enough decimals that neighbouring ticks differ (a 0.5 s run's ticks
    // are 0.08 s apart, which one decimal would print as 0.0, 0.1, 0.2, 0.2).
    let step = t_end / ticks as f64;
    let decimals = if step > 0.0 { (1.0 - step.log10().floor()).clamp(0.0, 4.0) as usize } else { 1 };
    for i in 0..=ticks {
        let t = t_end * i as f64 / ticks as f64;
        let _ = write!(
            s,
            r##"<line x1="{0:.1}" y1="{axis_y:.1}" x2="{0:.1}" y2="{1:.1}" stroke="#999"/><text x="{0:.1}" y="{2:.1}" text-anchor="middle">{t:.3$}</text>"##,
            x(t),
            axis_y + 5.0,
            axis_y + 18.0,
            decimals
        );
    }
    let _ = write!(s, r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">seconds since the run began</text>"#, left + plot_w / 2.0, axis_y + 36.0);
    s.push_str("</svg>\n");
    s
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
        assert!(svg.contains(">4.00</text>"), "ticks 0.67 s apart keep two decimals");
    }
}
