//! The one output layer of every verb: a verb returns a typed result that
//! implements [`Render`]; the same value becomes the text a terminal shows
//! ([`Render::doc`], tables and lines), the `--json` document (serde of the
//! value itself, so the two cannot disagree on a figure) or an HTML page
//! ([`cosched_report::doc::Doc::html`]). Results carry numbers and names,
//! never pre-formatted rows: formatting happens here, at the edge.

pub use cosched_report::doc::Doc;

/// A verb's result as a reader sees it; `--json` is its `Serialize`.
pub trait Render: serde::Serialize {
    /// The lines and tables of the result, in the order they are read.
    fn doc(&self) -> Doc;
}

/// Seconds with two decimals, `-` when not known.
pub fn secs(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.2}"))
}

/// A ratio (slowdown) with three decimals, `-` when not known.
pub fn ratio(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.3}"))
}
