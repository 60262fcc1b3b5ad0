//! The HTML reports as a person sees them: the demo's, `simulate --report`'s
//! (a scenario's and an SWF trace's), `run --report`'s and `evaluate
//! --report`'s pages rendered in headless Chromium. A page fails
//! when a table, figure or image sticks out past the page's width (instead
//! of scrolling in its own box), an SVG or image is empty, an SVG's text
//! reaches outside its picture (clipped: its bounding box against the
//! viewBox), or a link points at a file or anchor that is not there. Screenshots are saved under each
//! report's `screenshots/` directory, and copied to $COSCHED_SCREENSHOTS
//! when set (how docs/screenshots/ is made).
//!
//! Needs Debian's `chromium` (.ci/run installs it); without it the test says
//! so and passes, as the README's test command promises for missing packages.

mod common;
use std::path::{Path, PathBuf};
use std::process::Command;

fn cosched() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cosched"));
    c.env("COSCHED_RUN_LOCK", common::private_lock());
    c
}

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| Command::new(b).arg("--version").output().is_ok_and(|o| o.status.success()))
}

/// Runs in the page after load and appends its verdict to the DOM, which
/// `--dump-dom` then prints: a JSON list of problems.
const CHECK_SCRIPT: &str = r#"<script>
window.addEventListener('load', () => {
  const W = document.documentElement.clientWidth;
  const bad = [];
  const scrolls = (e) => {
    for (let p = e.parentElement; p; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if (o === 'auto' || o === 'scroll') return true;
    }
    return false;
  };
  document.querySelectorAll('table, svg, img, pre, figure').forEach((e, i) => {
    const r = e.getBoundingClientRect();
    const what = e.tagName.toLowerCase() + ' #' + i;
    if (r.right > W + 1 && !scrolls(e)) bad.push(what + ' sticks out: right edge ' + Math.round(r.right) + ' > page width ' + W);
    if (e.tagName === 'IMG' && !(e.naturalWidth > 0)) bad.push(what + ' is an empty image');
    if (e.tagName.toLowerCase() === 'svg' && !e.ownerSVGElement && (r.width < 2 || r.height < 2 || e.childElementCount === 0)) bad.push(what + ' is an empty SVG');
  });
  // Every SVG text inside its picture: its box (getBBox, in its own user
  // space, rotation included) mapped into the outermost SVG's user space
  // and held against the viewBox (or width x height without one).
  document.querySelectorAll('svg').forEach((svg, si) => {
    if (svg.ownerSVGElement) return;
    const vb = svg.viewBox.baseVal;
    const box = (vb && vb.width > 0) ? vb : { x: 0, y: 0, width: svg.width.baseVal.value, height: svg.height.baseVal.value };
    const toSvg = svg.getScreenCTM().inverse();
    svg.querySelectorAll('text').forEach((t) => {
      const b = t.getBBox();
      if (b.width === 0 && b.height === 0) return;
      const m = toSvg.multiply(t.getScreenCTM());
      const xs = [], ys = [];
      for (const [x, y] of [[b.x, b.y], [b.x + b.width, b.y], [b.x, b.y + b.height], [b.x + b.width, b.y + b.height]]) {
        const p = new DOMPoint(x, y).matrixTransform(m);
        xs.push(p.x); ys.push(p.y);
      }
      const [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
      const tol = 0.5;
      if (x0 < box.x - tol || y0 < box.y - tol || x1 > box.x + box.width + tol || y1 > box.y + box.height + tol) {
        bad.push('svg #' + si + ' clips its text "' + t.textContent.slice(0, 60) + '": box ' +
          [x0, y0, x1, y1].map(Math.round).join(',') + ' outside ' + [box.x, box.y, box.x + box.width, box.y + box.height].map(Math.round).join(','));
      }
    });
  });
  if (document.documentElement.scrollWidth > W + 1) bad.push('the page scrolls sideways: ' + document.documentElement.scrollWidth + ' > ' + W);
  const out = document.createElement('pre');
  out.id = 'cosched-check';
  out.textContent = 'COSCHED' + '-VERDICT ' + JSON.stringify(bad);
  document.body.appendChild(out);
});
</script>"#;

/// Every `href` / `src` of the page: local files must exist beside it and
/// `#anchors` must name an element id.
fn broken_links(dir: &Path, html: &str) -> Vec<String> {
    let mut bad = Vec::new();
    for attr in ["href=\"", "src=\""] {
        for piece in html.split(attr).skip(1) {
            let target = piece.split('"').next().unwrap_or("");
            if target.starts_with("http://") || target.starts_with("https://") || target.starts_with("data:") {
                continue;
            }
            if let Some(id) = target.strip_prefix('#') {
                if !html.contains(&format!("id=\"{id}\"")) {
                    bad.push(format!("link to #{id}: no element has that id"));
                }
            } else if !target.is_empty() && !dir.join(target).exists() {
                bad.push(format!("link to {target}: no such file beside the report"));
            }
        }
    }
    bad
}

/// Renders `dir/index.html`, returns its problems, saves a screenshot.
fn check_report(browser: &str, dir: &Path, name: &str) -> Vec<String> {
    let index = dir.join("index.html");
    let html = std::fs::read_to_string(&index).unwrap_or_else(|e| panic!("{}: {e}", index.display()));
    let mut bad = broken_links(dir, &html);
    let check = dir.join("browser-check.html");
    std::fs::write(&check, html.replace("</body>", &format!("{CHECK_SCRIPT}</body>"))).unwrap();
    let base = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--allow-file-access-from-files",
    ];
    let out = Command::new(browser)
        .args(base)
        .args(["--window-size=1280,900", "--virtual-time-budget=5000", "--dump-dom"])
        .arg(format!("file://{}", check.display()))
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&out.stdout);
    // The marker is split in the script's source, so only the verdict has it whole.
    match dom.split("COSCHED-VERDICT ").nth(1).and_then(|r| r.split('<').next()) {
        Some(verdict) => {
            let problems: Vec<String> = serde_json::from_str(&verdict.replace("&gt;", ">").replace("&lt;", "<").replace("&amp;", "&"))
                .unwrap_or_else(|e| vec![format!("unreadable verdict {verdict:?}: {e}")]);
            bad.extend(problems);
        }
        None => bad.push(format!("the check did not run: {}", String::from_utf8_lossy(&out.stderr))),
    }
    std::fs::remove_file(&check).ok();

    let shots = dir.join("screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let png = shots.join(format!("{name}.png"));
    let out = Command::new(browser)
        .args(base)
        .args(["--window-size=1280,2400"])
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", index.display()))
        .output()
        .expect("chromium runs");
    let size = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
    if size < 10_000 {
        bad.push(format!("screenshot {} is {size} bytes: {}", png.display(), String::from_utf8_lossy(&out.stderr)));
    }
    if let Some(keep) = std::env::var_os("COSCHED_SCREENSHOTS") {
        let keep = PathBuf::from(keep);
        std::fs::create_dir_all(&keep).unwrap();
        std::fs::copy(&png, keep.join(format!("{name}.png"))).unwrap();
    }
    bad.into_iter().map(|b| format!("{name}: {b}")).collect()
}

fn ok(out: &std::process::Output, what: &str) {
    assert!(out.status.success(), "{what}: {}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}

#[test]
fn demo_simulate_and_run_reports_render_without_overflow_empty_figures_or_broken_links() {
    let Some(browser) = chromium() else {
        cosched_testkit::skip(cosched_testkit::Lacks::Installed, "no chromium on this machine (apt-get install chromium); .ci/run installs it");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut problems = Vec::new();

    let demo = dir.path().join("demo");
    let out = cosched()
        .args(["demo", "--repeats", "1", "--seconds", "0.06", "--budget", "1s", "--out"])
        .arg(&demo)
        .arg("--db")
        .arg(dir.path().join("demo.db"))
        .env("COSCHED_RUN_LOCK", dir.path().join("demo.lock"))
        .output()
        .unwrap();
    ok(&out, "demo");
    problems.extend(check_report(browser, &demo, "demo"));

    let sim = dir.path().join("simulate");
    let out = cosched()
        .args(["simulate", "--orders", "200", "--policy", "noplan", "--policy", "best-match", "--scenario"])
        .arg(root.join("examples/scenarios/memory-half.toml"))
        .arg("--report")
        .arg(&sim)
        .output()
        .unwrap();
    ok(&out, "simulate");
    problems.extend(check_report(browser, &sim, "simulate"));

    let wl = dir.path().join("w.toml");
    std::fs::write(
        &wl,
        "[[pools]]\nname = \"host\"\ncores = 2\n\
         [[jobs]]\nname = \"a\"\ncommand = \"sleep 0.2\"\n\
         [[jobs]]\nname = \"b\"\ncommand = \"sleep 0.1\"\narrival = 0.05\n\
         [[jobs]]\nname = \"c\"\ncommand = \"sleep 0.1\"\n",
    )
    .unwrap();
    let run = dir.path().join("run");
    let out = cosched()
        .args(["run", "--policy", "noplan", "--baseline", "exclusive", "--solo", "stored", "--workload"])
        .arg(&wl)
        .arg("--report")
        .arg(&run)
        .arg("--db")
        .arg(dir.path().join("run.db"))
        .arg("--lock")
        .arg(dir.path().join("run.lock"))
        .env("COSCHED_DATA_DIR", dir.path())
        .output()
        .unwrap();
    ok(&out, "run");
    problems.extend(check_report(browser, &run, "run"));

    // A Batsim-style trace's page: its CDF legends once clipped at
    // "EASY + conflict-aware:" (issue 40).
    let swf = dir.path().join("swf");
    let out = cosched()
        .args(["simulate", "--swf"])
        .arg(root.join("examples/traces/small.swf"))
        .args(["--policy", "conflict-aware:threshold=50", "--report"])
        .arg(&swf)
        .output()
        .unwrap();
    ok(&out, "simulate --swf");
    problems.extend(check_report(browser, &swf, "simulate-swf"));

    // evaluate's page with its order-by-order box plots, read back from the
    // shipped evaluation (nothing runs).
    let db = dir.path().join("evaluate.db");
    let out = cosched().args(["db", "import"]).arg(root.join("data/io-half.bundle")).arg("--db").arg(&db).output().unwrap();
    ok(&out, "db import");
    let evaluate = dir.path().join("evaluate");
    let out = cosched()
        .args(["evaluate", "--workload"])
        .arg(root.join("examples/io-half-long.toml"))
        .args(["--predictor", "blind", "--baseline", "best-match", "--policy", "react:inner=best-match,threshold=1.3,action=suspend,resume=own"])
        .args(["--metric", "worst-slowdown", "--min-orders", "6", "--max-orders", "8", "--seed", "7", "--oracle-replays", "0", "--resume"])
        .arg("--db")
        .arg(&db)
        .arg("--report")
        .arg(&evaluate)
        .output()
        .unwrap();
    ok(&out, "evaluate");
    problems.extend(check_report(browser, &evaluate, "evaluate"));

    assert!(problems.is_empty(), "the reports do not read well in a browser:\n{}", problems.join("\n"));
}

#[test]
fn the_link_check_finds_missing_files_and_anchors() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("there.csv"), "x").unwrap();
    let html = "<h2 id=\"runs\">Runs</h2><a href=\"#runs\">ok</a><a href=\"#nowhere\">bad</a>\
                <a href=\"there.csv\">ok</a><a href=\"gone.json\">bad</a><a href=\"https://example.org\">ok</a>";
    assert_eq!(
        broken_links(dir.path(), html),
        ["link to #nowhere: no element has that id", "link to gone.json: no such file beside the report"]
    );
}

#[test]
fn the_browser_check_catches_a_table_that_widens_the_page_and_an_empty_svg() {
    let Some(browser) = chromium() else {
        cosched_testkit::skip(cosched_testkit::Lacks::Installed, "no chromium on this machine (apt-get install chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cells: String = (0..60).map(|i| format!("<td>column-number-{i}</td>")).collect();
    std::fs::write(
        dir.path().join("index.html"),
        format!("<!DOCTYPE html><html><body><table><tr>{cells}</tr></table><svg width=\"0\" height=\"0\"></svg></body></html>"),
    )
    .unwrap();
    let bad = check_report(browser, dir.path(), "bad");
    assert!(bad.iter().any(|b| b.contains("table #0 sticks out")), "{bad:?}");
    assert!(bad.iter().any(|b| b.contains("empty SVG")), "{bad:?}");
    assert!(bad.iter().any(|b| b.contains("scrolls sideways")), "{bad:?}");
}

#[test]
fn the_browser_check_catches_svg_text_outside_its_picture() {
    let Some(browser) = chromium() else {
        cosched_testkit::skip(cosched_testkit::Lacks::Installed, "no chromium on this machine (apt-get install chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("index.html"),
        "<!DOCTYPE html><html><body>\
         <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"120\" height=\"60\"><text x=\"8\" y=\"22\">a title far too long for its picture</text></svg>\
         <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"120\" height=\"60\" viewBox=\"0 0 120 60\"><text x=\"60\" y=\"30\" transform=\"rotate(-90 60 30)\">rotated out of it</text></svg>\
         <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"120\" height=\"60\" viewBox=\"-10 0 140 60\"><text x=\"-6\" y=\"30\">fits</text></svg>\
         </body></html>",
    )
    .unwrap();
    let bad = check_report(browser, dir.path(), "clipped");
    assert!(bad.iter().any(|b| b.contains("svg #0 clips its text \"a title far too long")), "{bad:?}");
    assert!(bad.iter().any(|b| b.contains("svg #1 clips its text \"rotated out of it")), "{bad:?}");
    assert!(!bad.iter().any(|b| b.contains("fits")), "a viewBox that holds the text passes: {bad:?}");
}
