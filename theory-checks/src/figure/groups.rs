//! The SVG's groups, for a reader program to check what was drawn
//! (`theory-checks/tests/figures.rs`): plotters has no groups, so each `<g …>` and `</g>` is
//! drawn as a sentinel text and [`resolve`] replaces the sentinels after rendering.

use plotters::coord::Shift;
use plotters::prelude::*;
use std::cell::RefCell;

/// The sentinel groups of one rendering: `open` and `close` draw a text `@@i` that
/// [`resolve`] replaces by the `i`-th tag.
#[derive(Default)]
pub(super) struct Groups {
    pub(super) tags: RefCell<Vec<String>>,
}

/// Escape a string for an XML attribute.
pub(super) fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `#RRGGBB` of a colour.
pub(super) fn hex(c: RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

/// A rendering step's result: plotters' and the file system's errors as messages.
pub(super) type Res<T> = Result<T, String>;

impl Groups {
    /// Draw the sentinel of `tag`.
    fn sentinel<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>, tag: String) -> Res<()> {
        let mut tags = self.tags.borrow_mut();
        let i = tags.len();
        tags.push(tag);
        root.draw(&Text::new(
            format!("@@{i}"),
            (0, 0),
            ("sans-serif", 8).into_font(),
        ))
        .map_err(|e| e.to_string())
    }
    /// Open a group `<g class=… attrs…>`.
    pub(super) fn open<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        class: &str,
        attrs: &[(&str, String)],
    ) -> Res<()> {
        let mut tag = format!("<g class=\"{class}\"");
        for (k, v) in attrs {
            tag.push_str(&format!(" {k}=\"{}\"", xml(v)));
        }
        tag.push('>');
        self.sentinel(root, tag)
    }
    /// Close the innermost group.
    pub(super) fn close<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Res<()> {
        self.sentinel(root, "</g>".into())
    }
}

/// Replace the sentinel texts of `groups` in `svg` by their tags.
pub(super) fn resolve(svg: &str, tags: &[String]) -> String {
    let mut out = String::with_capacity(svg.len());
    let mut rest = svg;
    while let Some(i) = rest.find("<text") {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let Some(close) = rest.find("</text>") else {
            break;
        };
        let element = &rest[..close + "</text>".len()];
        let content = element
            .find('>')
            .map(|g| element[g + 1..close].trim())
            .unwrap_or("");
        match content
            .strip_prefix("@@")
            .and_then(|n| n.parse::<usize>().ok())
            .and_then(|n| tags.get(n))
        {
            Some(tag) => out.push_str(tag),
            None => out.push_str(element),
        }
        rest = &rest[element.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentinels_become_groups_and_other_texts_stay() {
        let svg = "<svg><text x=\"0\" y=\"0\">\n@@1\n</text><text x=\"3\">\nkeep\n</text>\
                   <text>\n@@0\n</text></svg>";
        let out = resolve(svg, &["</g>".into(), "<g class=\"a\">".into()]);
        assert_eq!(
            out,
            "<svg><g class=\"a\"><text x=\"3\">\nkeep\n</text></g></svg>"
        );
    }
}
