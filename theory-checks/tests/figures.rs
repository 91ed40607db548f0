//! Every committed figure (`docs/experiments/*.svg`, `docs/theory/*.svg`) can be read: both axes carry
//! numeric tick labels, and the legend sits beside the plotted data, never over it. The SVGs
//! come from plotters (`experiments.rs::render`, `figure.rs::render_svg`); this parses the few elements
//! it writes (`<polyline points>`, `<polygon points>`, `<circle cx cy>`, `<text x y>`).

use std::path::{Path, PathBuf};

fn attr(tag: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let start = tag.find(&key)? + key.len();
    let end = tag[start..].find('"')? + start;
    Some(tag[start..end].to_string())
}

fn points(tag: &str) -> Vec<(f64, f64)> {
    attr(tag, "points")
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| {
            let (x, y) = p.split_once(',')?;
            Some((x.parse().ok()?, y.parse().ok()?))
        })
        .collect()
}

struct Text {
    x: f64,
    y: f64,
    anchor: String,
    content: String,
}

struct Svg {
    /// Black 1-px polylines (axes and ticks).
    axes: Vec<Vec<(f64, f64)>>,
    /// Every other polyline, polygon and circle centre (data, bands, Phase 1 shading).
    data: Vec<(f64, f64)>,
    texts: Vec<Text>,
}

fn parse(svg: &str) -> Svg {
    let mut out = Svg {
        axes: Vec::new(),
        data: Vec::new(),
        texts: Vec::new(),
    };
    let mut rest = svg;
    while let Some(i) = rest.find('<') {
        rest = &rest[i..];
        let end = rest.find('>').map_or(rest.len(), |e| e + 1);
        let tag = &rest[..end];
        if tag.starts_with("<polyline") {
            let pts = points(tag);
            if tag.contains("stroke=\"#000000\"") && tag.contains("stroke-width=\"1\"") {
                out.axes.push(pts);
            } else {
                out.data.extend(pts);
            }
        } else if tag.starts_with("<polygon") {
            out.data.extend(points(tag));
        } else if tag.starts_with("<circle") {
            if let (Some(x), Some(y)) = (attr(tag, "cx"), attr(tag, "cy")) {
                out.data
                    .push((x.parse().unwrap_or(f64::NAN), y.parse().unwrap_or(f64::NAN)));
            }
        } else if tag.starts_with("<text") {
            let close = rest.find("</text>").unwrap_or(rest.len());
            let content = rest[end..close].trim().to_string();
            out.texts.push(Text {
                x: attr(tag, "x")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(f64::NAN),
                y: attr(tag, "y")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(f64::NAN),
                anchor: attr(tag, "text-anchor").unwrap_or_default(),
                content,
            });
        }
        rest = &rest[end..];
    }
    out
}

/// A tick label: it has a digit (`0.1`, `1e-3`, `10⁻²`).
fn numeric(s: &str) -> bool {
    s.chars().any(|c| c.is_ascii_digit())
}

/// Problems of one figure (empty when it is readable).
fn problems(svg: &str) -> Vec<String> {
    let s = parse(svg);
    let mut p = Vec::new();
    // The y axis: the longest vertical black line; the x axis: the longest horizontal one.
    let len = |v: &Vec<(f64, f64)>| {
        v.first().zip(v.last()).map_or(0.0, |(a, b)| {
            ((a.0 - b.0).powi(2) + (a.1 - b.1).powi(2)).sqrt()
        })
    };
    let vertical = s
        .axes
        .iter()
        .filter(|v| v.len() == 2 && v[0].0 == v[1].0)
        .max_by(|a, b| len(a).total_cmp(&len(b)));
    let horizontal = s
        .axes
        .iter()
        .filter(|v| v.len() == 2 && v[0].1 == v[1].1)
        .max_by(|a, b| len(a).total_cmp(&len(b)));
    let (Some(yaxis), Some(xaxis)) = (vertical, horizontal) else {
        return vec!["no axis lines".into()];
    };
    let left = yaxis[0].0;
    let bottom = xaxis[0].1;
    let right = xaxis[0].0.max(xaxis[1].0);
    let yticks = s
        .texts
        .iter()
        .filter(|t| t.anchor == "end" && t.x < left && numeric(&t.content))
        .count();
    let xticks = s
        .texts
        .iter()
        .filter(|t| t.y > bottom && t.y < bottom + 30.0 && numeric(&t.content))
        .count();
    if yticks < 2 {
        p.push(format!("{yticks} tick labels on the y axis"));
    }
    if xticks < 2 {
        p.push(format!("{xticks} tick labels on the x axis"));
    }
    let legend: Vec<&Text> = s.texts.iter().filter(|t| t.x > right).collect();
    // Legend marks (a short line, a dot or a box left of each legend label) are not data.
    let is_mark = |&(x, y): &(f64, f64)| {
        x > right + 5.0
            && legend
                .iter()
                .any(|t| x < t.x && t.x - x <= 30.0 && (y - t.y).abs() <= 14.0)
    };
    let data: Vec<(f64, f64)> = s.data.iter().copied().filter(|p| !is_mark(p)).collect();
    if legend.is_empty() {
        p.push("no legend beside the plot".into());
    }
    let data_right = data
        .iter()
        .map(|d| d.0)
        .filter(|x| x.is_finite())
        .fold(f64::NEG_INFINITY, f64::max);
    if let Some(t) = legend.iter().find(|t| t.x <= data_right) {
        p.push(format!(
            "legend text `{}` at x = {} overlaps data reaching x = {data_right}",
            t.content, t.x
        ));
    }
    if data_right > right + 1.0 {
        p.push(format!(
            "data drawn past the x axis (x = {data_right} > {right})"
        ));
    }
    p
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
fn committed_experiment_figures_are_readable() {
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

/// The checker itself fails on the defects it is for: a legend drawn over the data, an axis
/// without tick labels.
#[test]
fn the_checker_rejects_unreadable_figures() {
    let axes = r##"<polyline fill="none" stroke="#000000" stroke-width="1" points="80,30 80,400 "/>
<polyline fill="none" stroke="#000000" stroke-width="1" points="80,400 700,400 "/>"##;
    let yt = r#"<text x="72" y="100" text-anchor="end">
1
</text><text x="72" y="300" text-anchor="end">
0.1
</text>"#;
    let xt = r#"<text x="100" y="410" text-anchor="middle">
0
</text><text x="600" y="410" text-anchor="middle">
400
</text>"#;
    let data =
        r##"<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="80,100 690,300 "/>"##;
    let legend_beside = r#"<text x="760" y="40" text-anchor="start">
two-phase
</text>"#;
    let legend_over = r#"<text x="500" y="40" text-anchor="start">
two-phase
</text>"#;
    let good = format!("{axes}{yt}{xt}{data}{legend_beside}");
    assert!(problems(&good).is_empty(), "{:?}", problems(&good));
    let over = format!("{axes}{yt}{xt}{data}{legend_over}");
    assert!(!problems(&over).is_empty());
    let no_y = format!("{axes}{xt}{data}{legend_beside}");
    assert!(problems(&no_y).iter().any(|p| p.contains("y axis")));
    let no_x = format!("{axes}{yt}{data}{legend_beside}");
    assert!(problems(&no_x).iter().any(|p| p.contains("x axis")));
}
