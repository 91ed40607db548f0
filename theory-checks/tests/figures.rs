//! Every committed figure (`docs/experiments/*.svg`, `docs/theory/*.svg`) can be read in ten
//! seconds: per panel at most five series and five bands, no two series drawn alike (colour,
//! line style and marker), tick labels on both axes, every legend entry drawn in the figure in
//! its own style, and the legend box over no plotted mark.
//!
//! The SVGs come from `theory_checks::figure::render`, which groups what it draws
//! (`<g class="panel">`, `series` with its `band`, `line` (dash on the group) and `marks`,
//! `legend` with its `data-box` and one `legend-entry` per series); the style of a series is
//! read from the drawn elements themselves (stroke, fill, `stroke-dasharray`), not from the
//! groups' labels. A figure without groups (as plotters writes it) is read as one panel whose
//! series are the colours of its 2-px lines and dots, and whose bands are its translucent
//! polygons.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use theory_checks::figure::seg_hits_box;

type Attrs = BTreeMap<String, String>;

fn attrs(tag: &str) -> Attrs {
    let mut out = Attrs::new();
    let mut rest = tag;
    while let Some(eq) = rest.find("=\"") {
        let key = rest[..eq].rsplit(' ').next().unwrap_or("").to_string();
        let after = &rest[eq + 2..];
        let Some(end) = after.find('"') else { break };
        out.insert(key, after[..end].to_string());
        rest = &after[end + 1..];
    }
    out
}

/// A drawn element with the groups around it (outermost first).
#[derive(Clone, Debug)]
struct El {
    tag: String,
    a: Attrs,
    groups: Vec<Attrs>,
    text: String,
}

impl El {
    fn in_class(&self, class: &str) -> Option<&Attrs> {
        self.groups
            .iter()
            .rev()
            .find(|g| g.get("class").is_some_and(|c| c == class))
    }
    fn num(&self, k: &str) -> f64 {
        self.a
            .get(k)
            .and_then(|v| v.parse().ok())
            .unwrap_or(f64::NAN)
    }
    fn points(&self) -> Vec<(f64, f64)> {
        match self.tag.as_str() {
            "polyline" | "polygon" => self
                .a
                .get("points")
                .map(String::as_str)
                .unwrap_or("")
                .split_whitespace()
                .filter_map(|p| {
                    let (x, y) = p.split_once(',')?;
                    Some((x.parse().ok()?, y.parse().ok()?))
                })
                .collect(),
            "circle" => vec![(self.num("cx"), self.num("cy"))],
            "rect" => {
                let (x, y, w, h) = (
                    self.num("x"),
                    self.num("y"),
                    self.num("width"),
                    self.num("height"),
                );
                vec![(x, y), (x + w, y), (x + w, y + h), (x, y + h)]
            }
            _ => Vec::new(),
        }
    }
    /// The colour it is drawn in: its stroke, or its fill when it has no stroke.
    fn color(&self) -> String {
        let s = self.a.get("stroke").map(String::as_str).unwrap_or("none");
        if s != "none" {
            s.to_string()
        } else {
            self.a.get("fill").cloned().unwrap_or_default()
        }
    }
    fn dash(&self) -> String {
        self.groups
            .iter()
            .rev()
            .find_map(|g| g.get("stroke-dasharray").cloned())
            .unwrap_or_else(|| "solid".into())
    }
    /// A marker's shape: element, filled or not, and its number of vertices.
    fn shape(&self) -> String {
        let filled = self.a.get("fill").is_some_and(|f| f != "none");
        format!("{}:{}:{}", self.tag, filled, self.points().len())
    }
}

fn parse(svg: &str) -> Vec<El> {
    let mut out = Vec::new();
    let mut stack: Vec<Attrs> = Vec::new();
    let mut opened = 0usize;
    let mut rest = svg;
    while let Some(i) = rest.find('<') {
        rest = &rest[i..];
        let end = rest.find('>').map_or(rest.len(), |e| e + 1);
        let tag = &rest[..end];
        if tag.starts_with("</g") {
            stack.pop();
        } else if tag.starts_with("<g") {
            // Each group gets an identity, so that two series with equal attributes stay two.
            let mut a = attrs(tag);
            a.insert("_id".into(), opened.to_string());
            opened += 1;
            stack.push(a);
        } else if !tag.starts_with("</") {
            let name: String = tag[1..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            let text = if name == "text" {
                let close = rest.find("</text>").unwrap_or(rest.len());
                rest[end..close].trim().to_string()
            } else {
                String::new()
            };
            out.push(El {
                tag: name,
                a: attrs(tag),
                groups: stack.clone(),
                text,
            });
        }
        rest = &rest[end..];
    }
    out
}

/// A tick label: it has a digit.
fn numeric(s: &str) -> bool {
    s.chars().any(|c| c.is_ascii_digit())
}

/// Axis lines: black 1-px polylines, `(vertical, horizontal)` longest.
/// A polyline's vertices.
type Path2 = Vec<(f64, f64)>;

fn axes(els: &[&El]) -> Option<(Path2, Path2)> {
    let lines: Vec<Vec<(f64, f64)>> = els
        .iter()
        .filter(|e| {
            e.tag == "polyline"
                && e.a.get("stroke").is_some_and(|s| s == "#000000")
                && e.a.get("stroke-width").is_some_and(|w| w == "1")
                && e.in_class("series").is_none()
                && e.in_class("legend").is_none()
        })
        .map(|e| e.points())
        .filter(|p| p.len() == 2)
        .collect();
    let len = |v: &Vec<(f64, f64)>| (v[0].0 - v[1].0).abs() + (v[0].1 - v[1].1).abs();
    let best = |vertical: bool| {
        lines
            .iter()
            .filter(|v| {
                if vertical {
                    v[0].0 == v[1].0
                } else {
                    v[0].1 == v[1].1
                }
            })
            .max_by(|a, b| len(a).total_cmp(&len(b)))
            .cloned()
    };
    Some((best(true)?, best(false)?))
}

fn tick_problems(els: &[&El], what: &str) -> Vec<String> {
    let Some((y, x)) = axes(els) else {
        return vec![format!("{what}: no axis lines")];
    };
    let (left, bottom) = (y[0].0, x[0].1);
    let (top, right) = (y[0].1.min(y[1].1), x[0].0.max(x[1].0));
    let texts = || els.iter().filter(|e| e.tag == "text" && numeric(&e.text));
    let yt = texts()
        .filter(|t| t.a.get("text-anchor").is_some_and(|a| a == "end"))
        .filter(|t| t.num("x") < left && t.num("x") > left - 80.0)
        .filter(|t| t.num("y") >= top - 10.0 && t.num("y") <= bottom + 10.0)
        .count();
    let xt = texts()
        .filter(|t| t.num("y") > bottom && t.num("y") < bottom + 30.0)
        .filter(|t| t.num("x") >= left - 10.0 && t.num("x") <= right + 10.0)
        .count();
    let mut p = Vec::new();
    if yt < 2 {
        p.push(format!("{what}: {yt} tick labels on the y axis"));
    }
    if xt < 2 {
        p.push(format!("{what}: {xt} tick labels on the x axis"));
    }
    p
}

/// A series as drawn: `(colour, dash, marker shape)`, and its elements.
struct Drawn<'a> {
    style: (String, String, String),
    els: Vec<&'a El>,
    bands: usize,
}

fn style_of(els: &[&El]) -> (String, String, String) {
    let line = els.iter().find(|e| e.in_class("line").is_some());
    let mark = els.iter().find(|e| e.in_class("marks").is_some());
    let color = line.or(mark).map(|e| e.color()).unwrap_or_default();
    let dash = line.map_or("none".into(), |e| e.dash());
    let shape = mark.map_or("none".into(), |e| e.shape());
    (color, dash, shape)
}

/// Problems of a grouped figure.
fn grouped_problems(els: &[El]) -> Vec<String> {
    let mut p = Vec::new();
    let mut panels: BTreeMap<String, Vec<&El>> = BTreeMap::new();
    for e in els {
        if let Some(g) = e.in_class("panel") {
            panels
                .entry(g.get("data-index").cloned().unwrap_or_default())
                .or_default()
                .push(e);
        }
    }
    let mut all: Vec<(String, Drawn)> = Vec::new();
    for (i, pe) in &panels {
        p.extend(tick_problems(pe, &format!("panel {i}")));
        // Series: consecutive elements under one `series` group.
        let mut series: Vec<Drawn> = Vec::new();
        let mut current: Option<String> = None;
        for e in pe {
            match e.in_class("series") {
                Some(g) => {
                    if current.as_ref() != g.get("_id") {
                        series.push(Drawn {
                            style: Default::default(),
                            els: Vec::new(),
                            bands: 0,
                        });
                        current = g.get("_id").cloned();
                    }
                    let s = series.last_mut().expect("pushed");
                    if e.in_class("band").is_some() {
                        s.bands += 1;
                    }
                    s.els.push(e);
                }
                None => current = None,
            }
        }
        series.retain(|s| !s.els.is_empty());
        for s in &mut series {
            let drawn: Vec<&El> = s
                .els
                .iter()
                .copied()
                .filter(|e| e.in_class("band").is_none())
                .collect();
            s.style = style_of(&drawn);
        }
        if series.len() > 5 {
            p.push(format!("panel {i}: {} series (at most 5)", series.len()));
        }
        p.extend(gap_problems(&series, i));
        let bands: usize = series.iter().map(|s| s.bands).sum();
        if bands > 5 {
            p.push(format!("panel {i}: {bands} bands (at most 5)"));
        }
        for (a, s) in series.iter().enumerate() {
            if let Some(t) = series[..a].iter().find(|t| t.style == s.style) {
                let _ = t;
                p.push(format!("panel {i}: two series drawn alike {:?}", s.style));
            }
        }
        // The Phase 1 shading, a legend entry of its own.
        if let Some(r) = pe.iter().find(|e| e.in_class("shade").is_some()) {
            all.push((
                i.clone(),
                Drawn {
                    style: (r.color(), "none".into(), "rect:true:4".into()),
                    els: vec![r],
                    bands: 0,
                },
            ));
        }
        all.extend(series.into_iter().map(|s| (i.clone(), s)));
    }
    // The legend: every entry's sample style drawn in some panel; its box over no mark.
    let legend: Vec<&El> = els
        .iter()
        .filter(|e| e.in_class("legend").is_some())
        .collect();
    let Some(boxed) = legend.first().and_then(|e| e.in_class("legend")) else {
        p.push("no legend".into());
        return p;
    };
    let b: Vec<f64> = boxed
        .get("data-box")
        .map(|s| {
            s.split_whitespace()
                .filter_map(|v| v.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    let mut entries: BTreeMap<String, Vec<&El>> = BTreeMap::new();
    for e in &legend {
        if let Some(g) = e.in_class("legend-entry") {
            if e.tag != "text" {
                entries
                    .entry(g.get("data-label").cloned().unwrap_or_default())
                    .or_default()
                    .push(e);
            }
        }
    }
    // A legend box inside a panel (its centre within the extent of the panel's drawn
    // elements) speaks for that panel: its entries must be drawn there, not only elsewhere.
    let host = (b.len() == 4)
        .then(|| (b[0] + b[2] / 2.0, b[1] + b[3] / 2.0))
        .and_then(|(cx, cy)| {
            panels.iter().find_map(|(i, pe)| {
                let pts: Vec<(f64, f64)> = pe.iter().flat_map(|e| e.points()).collect();
                let lo = pts.iter().fold((f64::INFINITY, f64::INFINITY), |a, q| {
                    (a.0.min(q.0), a.1.min(q.1))
                });
                let hi = pts
                    .iter()
                    .fold((f64::NEG_INFINITY, f64::NEG_INFINITY), |a, q| {
                        (a.0.max(q.0), a.1.max(q.1))
                    });
                (cx >= lo.0 && cx <= hi.0 && cy >= lo.1 && cy <= hi.1).then(|| i.clone())
            })
        });
    for (label, sample) in &entries {
        let style = if sample
            .iter()
            .any(|e| e.in_class("line").is_some() || e.in_class("marks").is_some())
        {
            style_of(sample)
        } else {
            (sample[0].color(), "none".into(), "rect:true:4".into())
        };
        // A series drawn as markers only (a single point: no line shows its dash) matches an
        // entry of its colour and marker.
        let matched = all.iter().any(|(_, s)| {
            s.style == style
                || (s.style.1 == "none" && s.style.0 == style.0 && s.style.2 == style.2)
        });
        if !matched {
            p.push(format!(
                "legend entry `{label}` {style:?}: no series drawn in its style"
            ));
        } else if let Some(h) = &host {
            let here = all.iter().any(|(i, s)| {
                i == h
                    && (s.style == style
                        || (s.style.1 == "none" && s.style.0 == style.0 && s.style.2 == style.2))
            });
            if !here {
                p.push(format!(
                    "legend entry `{label}` inside panel {h}: not drawn in that panel"
                ));
            }
        }
    }
    if b.len() == 4 {
        let r = (b[0], b[1], b[0] + b[2], b[1] + b[3]);
        let inside = |q: &(f64, f64)| q.0 >= r.0 && q.0 <= r.2 && q.1 >= r.1 && q.1 <= r.3;
        for (i, s) in &all {
            for e in &s.els {
                let pts = e.points();
                let hit = match e.tag.as_str() {
                    "polyline" | "polygon" => {
                        pts.iter().any(inside)
                            || pts.windows(2).any(|w| seg_hits_box(w[0], w[1], r))
                    }
                    _ => pts.iter().any(inside),
                };
                if hit {
                    p.push(format!(
                        "panel {i}: the legend box {b:?} covers a mark of {:?}",
                        s.style
                    ));
                    break;
                }
            }
        }
    }
    p
}

/// A line drawn over a grid value where its series has no mark suggests a value that does not
/// exist (e.g. a sweep's median error across values of m where every run failed). Among the
/// series marked at every vertex of their line (sweeps; traces, marked every few rounds, and
/// unmarked bound curves are not read), a segment must not pass over the x of another series'
/// mark in the panel where its own series has none.
fn gap_problems(series: &[Drawn<'_>], panel: &str) -> Vec<String> {
    const TOL: f64 = 1.5;
    let mark_xs = |s: &Drawn| -> Vec<f64> {
        s.els
            .iter()
            .filter(|e| e.in_class("marks").is_some())
            .map(|e| {
                let pts = e.points();
                pts.iter().map(|q| q.0).sum::<f64>() / pts.len().max(1) as f64
            })
            .filter(|x| x.is_finite())
            .collect()
    };
    let grid: Vec<f64> = series.iter().flat_map(mark_xs).collect();
    let mut p = Vec::new();
    for s in series {
        let own = mark_xs(s);
        let marked = |x: f64| own.iter().any(|m| (m - x).abs() <= TOL);
        let lines: Vec<Vec<(f64, f64)>> = s
            .els
            .iter()
            .filter(|e| e.in_class("line").is_some() && e.tag == "polyline")
            .map(|e| e.points())
            .collect();
        let every_vertex_marked = lines.iter().flatten().all(|q| marked(q.0));
        if lines.is_empty() || !every_vertex_marked {
            continue;
        }
        for w in lines.iter().flat_map(|l| l.windows(2)) {
            let (a, b) = (w[0].0.min(w[1].0), w[0].0.max(w[1].0));
            if let Some(x) = grid
                .iter()
                .find(|&&x| x > a + TOL && x < b - TOL && !marked(x))
            {
                p.push(format!(
                    "panel {panel}: a line of {:?} passes over x = {x:.1} px, where it has no mark",
                    s.style
                ));
                break;
            }
        }
    }
    p
}

/// Problems of a figure without groups (as plotters writes it): one panel.
fn plain_problems(els: &[El]) -> Vec<String> {
    let refs: Vec<&El> = els.iter().collect();
    let mut p = tick_problems(&refs, "panel 0");
    let Some((_, x)) = axes(&refs) else { return p };
    let right = x[0].0.max(x[1].0);
    let in_plot = |e: &&El| e.points().iter().all(|q| q.0 <= right + 1.0);
    let mut colors: Vec<String> = els
        .iter()
        .filter(in_plot)
        .filter(|e| {
            (e.tag == "polyline" && e.a.get("stroke-width").is_some_and(|w| w == "2"))
                || e.tag == "circle"
        })
        .map(El::color)
        .collect();
    colors.sort();
    colors.dedup();
    if colors.len() > 5 {
        p.push(format!("panel 0: {} series (at most 5)", colors.len()));
    }
    let bands = els
        .iter()
        .filter(in_plot)
        .filter(|e| e.tag == "polygon" && e.num("opacity") < 1.0)
        .count();
    if bands > 5 {
        p.push(format!("panel 0: {bands} bands (at most 5)"));
    }
    p
}

/// Problems of one figure (empty when it is readable).
fn problems(svg: &str) -> Vec<String> {
    let els = parse(svg);
    if els.iter().any(|e| e.in_class("panel").is_some()) {
        grouped_problems(&els)
    } else {
        plain_problems(&els)
    }
}

fn svgs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "svg"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn committed_figures_are_readable() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs");
    let mut files = Vec::new();
    for dir in ["experiments", "theory"] {
        let found = svgs(&root.join(dir));
        assert!(!found.is_empty(), "no SVG under docs/{dir}");
        files.extend(found);
    }
    let bad: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let p = problems(&std::fs::read_to_string(f).expect("read svg"));
            (!p.is_empty()).then(|| format!("{}: {}", f.display(), p.join("; ")))
        })
        .collect();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The IFCA Fig. 3(a) success figure as it was drawn before the visual language: eight series
/// (two algorithms × four σ) and eight Wilson bands on one axis, the legend beside it. The
/// check rejects it.
#[test]
fn the_old_eight_series_figure_fails() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ifca-fig3a-success-old.svg");
    let p = problems(&std::fs::read_to_string(path).expect("read svg"));
    println!("{}", p.join("\n"));
    assert!(
        p.contains(&"panel 0: 8 series (at most 5)".to_string()),
        "{p:?}"
    );
    assert!(
        p.contains(&"panel 0: 8 bands (at most 5)".to_string()),
        "{p:?}"
    );
}

/// The SR-FCA linear-setting misclustering figure as the renderer drew it before legends were
/// placed only in a panel that draws every entry: two panels (SR-FCA and IFCA; SR-FCA, one-shot,
/// CFL, FedSoft), one legend inside the second listing the IFCA series drawn only in the
/// first. The check rejects it.
#[test]
fn a_legend_inside_a_panel_listing_another_panels_series_fails() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/srfca-linear-misclustering-old.svg");
    let p = problems(&std::fs::read_to_string(path).expect("read svg"));
    let foreign: Vec<&String> = p
        .iter()
        .filter(|m| m.contains("not drawn in that panel"))
        .collect();
    assert_eq!(foreign.len(), 2, "{p:?}");
    assert!(foreign.iter().all(|m| m.contains("IFCA")), "{p:?}");
}

/// Figures drawn through the library with the defects the check is for: six series in a panel,
/// two series drawn alike, a legend entry for a series with nothing drawn.
#[test]
fn the_checker_rejects_defects_drawn_by_the_renderer() {
    use theory_checks::figure::{render, AxisRange, Drawn, Panel, Plot};
    use theory_checks::style::{Dash, Method, Style};
    let style = |m: Method, dash: Dash| Style {
        color: m.color(),
        dash,
        marker: Some(m.marker()),
    };
    let line = |label: &str, st: Style, y: f64| {
        Drawn::new(
            label,
            st,
            vec![(1.0, y), (2.0, y + 0.1), (3.0, y + 0.2)],
            true,
        )
    };
    let plot = |series: Vec<Drawn>| Plot {
        title: "t".into(),
        x_label: "x".into(),
        y_label: "y".into(),
        x: AxisRange {
            lo: 0.5,
            hi: 3.5,
            log: false,
            keys: None,
        },
        y: AxisRange {
            lo: 0.0,
            hi: 10.0,
            log: false,
            keys: None,
        },
        shade: None,
        panels: vec![Panel {
            title: String::new(),
            series,
        }],
        note: String::new(),
    };
    let dir = std::env::temp_dir().join(format!("fedmix-figure-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let check = |name: &str, series: Vec<Drawn>| {
        let path = dir.join(format!("{name}.svg"));
        render(&plot(series), &path).expect("render");
        problems(&std::fs::read_to_string(&path).expect("read"))
    };
    let methods = [
        Method::TwoPhase,
        Method::Ifca,
        Method::Oracle,
        Method::FedAvg,
        Method::OneShot,
        Method::SrFca,
    ];
    let good: Vec<Drawn> = methods[..5]
        .iter()
        .enumerate()
        .map(|(i, &m)| line(&format!("m{i}"), style(m, Dash::Solid), i as f64))
        .collect();
    assert!(
        check("good", good.clone()).is_empty(),
        "{:?}",
        check("good", good.clone())
    );
    let six: Vec<Drawn> = methods
        .iter()
        .enumerate()
        .map(|(i, &m)| line(&format!("m{i}"), style(m, Dash::Solid), i as f64))
        .collect();
    assert!(check("six", six).iter().any(|p| p.contains("6 series")));
    let mut alike = good.clone();
    alike[1].style = alike[0].style;
    assert!(check("alike", alike)
        .iter()
        .any(|p| p.contains("drawn alike")));
    // A line over a grid value where its series has no point (a sweep's value at which every
    // run failed) is caught; the same series with a NaN point there is drawn broken and passes.
    let mut over_gap = good.clone();
    over_gap[0].points = vec![(1.0, 0.0), (3.0, 0.2)];
    assert!(check("over-gap", over_gap)
        .iter()
        .any(|p| p.contains("where it has no mark")));
    let mut broken = good.clone();
    broken[0].points = vec![(1.0, 0.0), (2.0, f64::NAN), (3.0, 0.2)];
    assert!(
        check("broken", broken.clone()).is_empty(),
        "{:?}",
        check("broken", broken)
    );
    // A series with nothing to draw is named under the title, not listed in the legend …
    let mut empty = good.clone();
    empty[4].points.clear();
    let path = dir.join("empty.svg");
    render(&plot(empty), &path).expect("render");
    let svg = std::fs::read_to_string(&path).expect("read");
    assert!(problems(&svg).is_empty(), "{:?}", problems(&svg));
    assert!(svg.contains("not drawn (nothing to draw yet): m4"));
    assert!(!svg.contains(r#"data-label="m4""#));
    // … and a legend entry whose series is not drawn (its group cut out of the SVG) is caught.
    let path = dir.join("good.svg");
    render(&plot(good), &path).expect("render");
    let svg = std::fs::read_to_string(&path).expect("read");
    let start = svg
        .find(r#"<g class="series" data-label="m4""#)
        .expect("m4's group");
    let mut depth = 0usize;
    let mut end = start;
    while end < svg.len() {
        if svg[end..].starts_with("<g") {
            depth += 1;
        } else if svg[end..].starts_with("</g>") {
            depth -= 1;
            if depth == 0 {
                end += "</g>".len();
                break;
            }
        }
        end += svg[end..].chars().next().map_or(1, char::len_utf8);
    }
    let cut = format!("{}{}", &svg[..start], &svg[end..]);
    assert!(problems(&cut)
        .iter()
        .any(|p| p.contains("legend entry `m4`") && p.contains("no series drawn in its style")));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The paper's figures that the report mirrors: SXY22 Figs. 1–3 (App. C, both panels) and
/// IFCA Fig. 3 (a)–(d). Each of our figures for them describes the paper's figure (set beside
/// ours in the report) and is declared on the paper's axis scales wherever the paper shows one.
#[test]
fn every_mirrored_paper_figure_is_described_and_on_its_scales() {
    use theory_checks::experiment::Experiment;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../experiments");
    let mirrored: &[(&str, &[&str])] = &[
        ("sxy22-fig1", &["left", "right"]),
        ("sxy22-fig2", &["left", "right"]),
        ("sxy22-fig3", &["left", "right"]),
        ("ifca-fig3a", &["success"]),
        ("ifca-fig3b", &["success"]),
        ("ifca-fig3c", &["success"]),
        ("ifca-fig3d", &["success"]),
        ("ifca-fig3b-two-phase", &["success"]),
        ("ifca-fig3d-two-phase", &["success"]),
    ];
    let mut problems = Vec::new();
    for (name, figs) in mirrored {
        let e = Experiment::from_file(&dir.join(format!("{name}.toml"))).expect("experiment");
        for fig in *figs {
            let f = e
                .figures
                .iter()
                .find(|f| f.name == *fig)
                .unwrap_or_else(|| panic!("{name}: no figure {fig}"));
            let Some(p) = &f.paper else {
                problems.push(format!(
                    "{name}-{fig}: no description of the paper's figure"
                ));
                continue;
            };
            let ours_x = match (&e.axis, f.kind) {
                (Some(a), theory_checks::experiment::FigureKind::Sweep) => a.log,
                _ => false,
            };
            if p.log_x.is_some_and(|l| l != ours_x) {
                problems.push(format!("{name}-{fig}: x scale differs from the paper's"));
            }
            if p.log_y.is_some_and(|l| l != f.log_y) {
                problems.push(format!("{name}-{fig}: y scale differs from the paper's"));
            }
            if [&p.figure, &p.x, &p.y, &p.curves, &p.source]
                .iter()
                .any(|s| s.trim().is_empty())
            {
                problems.push(format!("{name}-{fig}: an empty field in the description"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
