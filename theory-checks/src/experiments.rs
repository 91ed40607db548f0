//! Paper experiments (SPEC §8) from `experiments/*.toml`: run the cells through
//! [`fedmix::experiment`], render each merged figure as an SVG (mean line, min–max or Wilson
//! band, Phase 1 shaded) and write `docs/REPORT.md`.

use crate::figure::register_fonts;
use crate::progress::Progress;
use fedmix::experiment::{self, Experiment, Failure, Merged, MergedFigure, Plan, RunOptions};
use plotters::prelude::*;
use std::path::{Path, PathBuf};

const COLORS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
];

/// Every experiment file under `dir`, sorted by name.
///
/// # Errors
/// A message when the directory cannot be read.
pub fn experiment_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    Ok(v)
}

/// Run (a shard of) one experiment into `work`, with progress.
///
/// # Errors
/// The library's typed error as a message.
pub fn run_experiment(
    plan: &Plan,
    work: &Path,
    opts: &RunOptions,
) -> Result<experiment::RunReport, String> {
    let total = plan.shard(opts.shard).len();
    let progress = Progress::new(&plan.experiment.name, total);
    let report = experiment::run_plan(plan, work, opts, &|done, _, id| {
        progress.step(done, id);
    })
    .map_err(|e| e.to_string());
    progress.finish();
    report
}

/// Merge `work` and write `<figure>.svg` for every figure plus `<experiment>.json` into `out`.
///
/// # Errors
/// Messages from the merge, plotters or the file system.
pub fn merge_and_render(work: &Path, out: &Path) -> Result<Merged, String> {
    let merged = experiment::merge(work).map_err(|e| e.to_string())?;
    fedmix::io::prepare_output_dir(out).map_err(|e| e.to_string())?;
    for f in &merged.figures {
        render(f, &out.join(format!("{}.svg", f.name)))?;
    }
    fedmix::io::write_json(&out.join(format!("{}.json", merged.experiment)), &merged)
        .map_err(|e| e.to_string())?;
    Ok(merged)
}

fn range(fig: &MergedFigure) -> ((f64, f64), (f64, f64)) {
    let ok = |v: f64, log: bool| v.is_finite() && (!log || v > 0.0);
    let (mut x0, mut x1, mut y0, mut y1) = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for p in fig.lines.iter().flat_map(|l| l.points.iter()) {
        if ok(p.x, fig.log_x) {
            x0 = x0.min(p.x);
            x1 = x1.max(p.x);
        }
        for y in [p.lo, p.mean, p.hi] {
            if ok(y, fig.log_y) {
                y0 = y0.min(y);
                y1 = y1.max(y);
            }
        }
    }
    if !x0.is_finite() {
        return ((1.0, 10.0), (1.0, 10.0));
    }
    let pad = |lo: f64, hi: f64, log: bool| {
        if log {
            (lo / 1.3, hi * 1.3)
        } else {
            let w = (hi - lo).abs().max(1e-9);
            (lo - 0.04 * w, hi + 0.04 * w)
        }
    };
    (pad(x0, x1, fig.log_x), pad(y0, y1, fig.log_y))
}

macro_rules! chart {
    ($root:expr, $fig:expr, $xr:expr, $yr:expr, $y0:expr) => {{
        let mut chart = ChartBuilder::on($root)
            .caption(&$fig.title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(42)
            .y_label_area_size(70)
            .build_cartesian_2d($xr, $yr)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc($fig.x_label.as_str())
            .y_desc($fig.y_label.as_str())
            .label_style(("sans-serif", 12))
            .x_label_formatter(&|v| crate::figure::tick(*v))
            .y_label_formatter(&|v| crate::figure::tick(*v))
            .draw()
            .map_err(|e| e.to_string())?;
        let p1 = $fig
            .lines
            .iter()
            .map(|l| l.phase1_rounds)
            .max()
            .unwrap_or(0);
        if p1 > 0 {
            let top = $fig
                .lines
                .iter()
                .flat_map(|l| l.points.iter().map(|p| p.hi))
                .filter(|v| v.is_finite())
                .fold($y0, f64::max);
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(0.5, $y0), (p1 as f64 + 0.5, top)],
                    RGBColor(200, 200, 200).mix(0.35).filled(),
                )))
                .map_err(|e| e.to_string())?
                .label("Phase 1 (shaded)")
                .legend(|(x, y)| {
                    Rectangle::new(
                        [(x, y - 5), (x + 18, y + 5)],
                        RGBColor(200, 200, 200).filled(),
                    )
                });
        }
        for (i, line) in $fig.lines.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let ok = |x: f64, y: f64| {
                x.is_finite()
                    && y.is_finite()
                    && (!$fig.log_x || x > 0.0)
                    && (!$fig.log_y || y > 0.0)
            };
            let mut band: Vec<(f64, f64)> = line
                .points
                .iter()
                .filter(|p| ok(p.x, p.lo) && ok(p.x, p.hi))
                .map(|p| (p.x, p.hi))
                .collect();
            band.extend(
                line.points
                    .iter()
                    .rev()
                    .filter(|p| ok(p.x, p.lo) && ok(p.x, p.hi))
                    .map(|p| (p.x, p.lo)),
            );
            if band.len() >= 4 {
                chart
                    .draw_series(std::iter::once(Polygon::new(
                        band,
                        color.mix(0.15).filled(),
                    )))
                    .map_err(|e| e.to_string())?;
            }
            let pts: Vec<(f64, f64)> = line
                .points
                .iter()
                .filter(|p| ok(p.x, p.mean))
                .map(|p| (p.x, p.mean))
                .collect();
            let marks = pts.len() <= 30;
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                .map_err(|e| e.to_string())?
                .label(line.label.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                });
            if marks {
                chart
                    .draw_series(
                        pts.into_iter()
                            .map(move |p| Circle::new(p, 3, color.filled())),
                    )
                    .map_err(|e| e.to_string())?;
            }
        }
        chart
            .configure_series_labels()
            .label_font(("sans-serif", 11))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(|e| e.to_string())?;
    }};
}

/// Render one merged figure.
///
/// # Errors
/// A message from plotters or the file system.
pub fn render(fig: &MergedFigure, path: &Path) -> Result<(), String> {
    register_fonts();
    let ((x0, x1), (y0, y1)) = range(fig);
    let root = SVGBackend::new(path, (760, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    match (fig.log_x, fig.log_y) {
        (true, true) => chart!(&root, fig, (x0..x1).log_scale(), (y0..y1).log_scale(), y0),
        (true, false) => chart!(&root, fig, (x0..x1).log_scale(), y0..y1, y0),
        (false, true) => chart!(&root, fig, x0..x1, (y0..y1).log_scale(), y0),
        (false, false) => chart!(&root, fig, x0..x1, y0..y1, y0),
    }
    root.present().map_err(|e| e.to_string())
}

/// A markdown table of a figure's last point (trace) or every axis point (sweep) per line.
/// "failed runs" counts the runs that ended in a typed error at that point (for a trace: over the
/// whole line) and quotes the first; sweep points where every run failed get a row of their own.
fn table(f: &MergedFigure) -> String {
    let mut md = format!(
        "| line | {} | mean | band (lo – hi) | seeds | failed runs |\n|---|---|---|---|---|---|\n",
        f.x_label
    );
    let describe = |fails: &[&Failure]| match fails.first() {
        None => "—".to_string(),
        Some(first) => format!("{} (seed {}: {})", fails.len(), first.seed, first.message),
    };
    for l in &f.lines {
        if f.x_label == "round" {
            let fails: Vec<&Failure> = l.failures.iter().collect();
            let fail = describe(&fails);
            match l.points.last() {
                Some(p) => md.push_str(&format!(
                    "| {} | {} | {:.4e} | {:.3e} – {:.3e} | {} | {} |\n",
                    l.label, p.x, p.mean, p.lo, p.hi, p.n, fail
                )),
                None if !fails.is_empty() => {
                    md.push_str(&format!("| {} | — | — | — | 0 | {} |\n", l.label, fail))
                }
                None => {}
            }
            continue;
        }
        let mut xs: Vec<f64> = l.points.iter().map(|p| p.x).collect();
        xs.extend(l.failures.iter().filter_map(|e| e.x));
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        for x in xs {
            let fails: Vec<&Failure> = l.failures.iter().filter(|e| e.x == Some(x)).collect();
            let fail = describe(&fails);
            match l.points.iter().find(|p| p.x == x) {
                Some(p) => md.push_str(&format!(
                    "| {} | {} | {:.4e} | {:.3e} – {:.3e} | {} | {} |\n",
                    l.label, p.x, p.mean, p.lo, p.hi, p.n, fail
                )),
                None => md.push_str(&format!("| {} | {x} | — | — | 0 | {fail} |\n", l.label)),
            }
        }
    }
    md
}

/// `docs/REPORT.md`: per experiment, the paper's claim, the figures, the numbers behind them
/// and our discussion; links to the theory checks.
/// `entries`: each experiment with its merged figures and (wall seconds of this invocation,
/// cells computed in it — the rest were resumed from disk).
pub fn report(
    entries: &[(Experiment, Merged, (f64, usize))],
    figures_rel: &str,
    profile: &str,
) -> String {
    let mut md = format!(
        "# fedmix — reproduction report\n\nGenerated by `cargo run --release -p theory-checks -- \
         --profile {profile}` from the experiment files in `experiments/` (one TOML per figure; \
         copy one, change a knob, rerun). Every figure shows the mean over data seeds with a band \
         (min–max for errors, Wilson 95 % for success probabilities). The lemma-level checks are \
         in [theory/README.md](theory/README.md).\n\n"
    );
    md.push_str(
        "| experiment | paper | cells | computed in this run | wall time of this run |\n\
         |---|---|---|---|---|\n",
    );
    for (e, m, (secs, ran)) in entries {
        md.push_str(&format!(
            "| [{}](#{}) | {} | {}/{} | {ran} | {secs:.0} s |\n",
            e.name, e.name, e.paper, m.cells_found, m.cells_planned
        ));
    }
    md.push_str(
        "\nCells resumed from disk (`--resume`) cost no time here; a cell's file holds no time, so \
         resumed and recomputed cells are byte-identical.\n",
    );
    for (e, m, _) in entries {
        md.push_str(&format!(
            "\n<a id=\"{}\"></a>\n## {} — {}\n\n**Paper.** {}\n\n",
            e.name, e.name, e.title, e.claim
        ));
        if !m.missing.is_empty() {
            md.push_str(&format!(
                "**Incomplete:** {} of {} cells missing.\n\n",
                m.missing.len(),
                m.cells_planned
            ));
        }
        for f in &m.figures {
            md.push_str(&format!(
                "![{}]({figures_rel}/{}.svg)\n\n{}\n",
                f.name,
                f.name,
                table(f)
            ));
        }
        if !e.discussion.is_empty() {
            md.push_str(&format!("**What we observe.** {}\n", e.discussion));
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use fedmix::experiment::{Band, Line};

    fn point(x: f64, n: usize) -> Band {
        Band {
            x,
            mean: 0.5,
            lo: 0.25,
            hi: 0.75,
            n,
        }
    }

    /// A sweep line whose runs fail at one axis value only: the table attributes the failures to
    /// that value (not to every point of the line), and a value where every run failed, which has
    /// no band, still gets a row saying so.
    #[test]
    fn failures_are_reported_at_their_own_axis_point() {
        let fail = |seed, x: f64| Failure {
            seed,
            x: Some(x),
            message: format!("too few clusters (seed {seed})"),
        };
        let fig = MergedFigure {
            name: "t-error".into(),
            title: "t".into(),
            x_label: "machines m".into(),
            y_label: "error".into(),
            log_x: false,
            log_y: false,
            lines: vec![Line {
                label: "two-phase".into(),
                points: vec![point(200.0, 1), point(400.0, 2)],
                phase1_rounds: 0,
                failures: vec![fail(1, 100.0), fail(2, 100.0), fail(2, 200.0)],
            }],
        };
        let md = table(&fig);
        let rows: Vec<&str> = md.lines().skip(2).collect();
        assert_eq!(rows.len(), 3, "{md}");
        assert_eq!(
            rows[0],
            "| two-phase | 100 | — | — | 0 | 2 (seed 1: too few clusters (seed 1)) |"
        );
        assert!(
            rows[1].starts_with("| two-phase | 200 | 5.0000e-1 |"),
            "{md}"
        );
        assert!(
            rows[1].ends_with("| 1 | 1 (seed 2: too few clusters (seed 2)) |"),
            "{md}"
        );
        assert!(rows[2].starts_with("| two-phase | 400 |"), "{md}");
        assert!(rows[2].ends_with("| 2 | — |"), "{md}");
    }
}
