//! Page snapshots (from `js::SNAPSHOT`): the compact text rendering for text policies and the
//! DOM diff of clickable elements used in feedback.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One item of a snapshot, in DOM order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Item {
    /// An interactive element with its stable id.
    Element {
        /// Stable id (`data-wrl-id`), used by the element-id tools.
        id: u32,
        /// Lower-case tag.
        tag: String,
        /// ARIA role (explicit or implicit).
        role: String,
        /// Accessible label, ≤ 40 chars.
        label: String,
        /// Current value of a field or select, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<String>,
        /// First options of a select.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        options: Option<Vec<String>>,
        /// Its border box when the snapshot was taken, in viewport CSS pixels: `[left, top,
        /// width, height]`, rounded (off-screen elements have boxes outside the viewport);
        /// where a coordinate tool set's demonstrations click it (docs/sandbox.md).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rect: Option<[i32; 4]>,
    },
    /// A line of visible text.
    Text {
        /// The text, ≤ 80 chars.
        text: String,
    },
}

/// A snapshot of the active page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// URL.
    pub url: String,
    /// Title.
    pub title: String,
    /// Viewport width (CSS px).
    pub vw: u32,
    /// Viewport height.
    pub vh: u32,
    /// Horizontal scroll.
    pub sx: i64,
    /// Vertical scroll.
    pub sy: i64,
    /// Scroll width of the document.
    pub sw: i64,
    /// Scroll height of the document.
    pub sh: i64,
    /// Items in DOM order.
    pub items: Vec<Item>,
}

impl Snapshot {
    /// An empty snapshot (blank page).
    pub fn blank(url: &str) -> Snapshot {
        Snapshot {
            url: url.into(),
            title: String::new(),
            vw: 0,
            vh: 0,
            sx: 0,
            sy: 0,
            sw: 0,
            sh: 0,
            items: Vec::new(),
        }
    }

    /// Keys (`role "label"`) of the clickable elements, for the DOM diff.
    pub fn clickables(&self) -> Vec<String> {
        self.items
            .iter()
            .filter_map(|i| match i {
                Item::Element { role, label, .. } => Some(format!("{role} \"{label}\"")),
                Item::Text { .. } => None,
            })
            .collect()
    }

    /// The element with this id.
    pub fn element(&self, want: u32) -> Option<&Item> {
        self.items.iter().find(|i| matches!(i, Item::Element { id, .. } if *id == want))
    }

    /// Renders the items as compact lines: `[7] button "Add to cart"` or plain text.
    pub fn render_items(&self) -> String {
        self.render_items_max(usize::MAX)
    }

    /// [`Snapshot::render_items`] with at most `max` elements (text lines are all kept).
    pub fn render_items_max(&self, max: usize) -> String {
        let mut out = String::new();
        let mut shown = 0;
        for item in &self.items {
            match item {
                Item::Element { .. } if shown >= max => continue,
                Item::Element { id, role, label, value, options, .. } => {
                    shown += 1;
                    out.push_str(&format!("[{id}] {role} \"{label}\""));
                    if let Some(v) = value {
                        out.push_str(&format!(" value=\"{v}\""));
                    }
                    if let Some(o) = options {
                        out.push_str(&format!(" options={}", o.join("|")));
                    }
                }
                Item::Text { text } => out.push_str(text),
            }
            out.push('\n');
        }
        out
    }
}

/// `s` with `&`, `<`, `>` and `"` escaped for an HTML text or attribute.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

impl Snapshot {
    /// The page as simplified HTML (`html(max: N)`): each interactive element as its own tag
    /// with its stable id (the element-id tools address it), role when it is not the tag's,
    /// value and a select's first options; each visible text line as a `<p>`. At most `max`
    /// elements; scripts, styles and layout are already gone (the snapshot keeps what a policy
    /// can read or act on).
    pub fn render_html_max(&self, max: usize) -> String {
        let mut out = String::new();
        let mut shown = 0;
        for item in &self.items {
            match item {
                Item::Element { .. } if shown >= max => continue,
                Item::Element { id, tag, role, label, value, options, rect: _ } => {
                    shown += 1;
                    let tag = if tag.chars().all(|c| c.is_ascii_alphanumeric()) && !tag.is_empty() {
                        tag.as_str()
                    } else {
                        "span"
                    };
                    let mut attrs = format!(" id=\"{id}\"");
                    let implicit = matches!(
                        (tag, role.as_str()),
                        ("a", "link")
                            | ("button", "button")
                            | ("select", "combobox")
                            | ("textarea", "textbox")
                            | ("input", "textbox")
                    );
                    if !role.is_empty() && !implicit {
                        attrs.push_str(&format!(" role=\"{}\"", esc(role)));
                    }
                    if let Some(v) = value {
                        attrs.push_str(&format!(" value=\"{}\"", esc(v)));
                    }
                    match (tag, options) {
                        ("input", _) => {
                            out.push_str(&format!("<input{attrs} aria-label=\"{}\">", esc(label)));
                        }
                        (_, Some(opts)) => {
                            out.push_str(&format!("<{tag}{attrs} aria-label=\"{}\">", esc(label)));
                            for o in opts {
                                out.push_str(&format!("<option>{}</option>", esc(o)));
                            }
                            out.push_str(&format!("</{tag}>"));
                        }
                        _ => out.push_str(&format!("<{tag}{attrs}>{}</{tag}>", esc(label))),
                    }
                }
                Item::Text { text } => out.push_str(&format!("<p>{}</p>", esc(text))),
            }
            out.push('\n');
        }
        out
    }
}

/// The DOM diff line between two snapshots' clickable elements, e.g.
/// `DOM changes: 3 appeared [button "Item 1", …]; 2 disappeared`, or `None` when unchanged.
pub fn dom_diff(before: &[String], after: &[String]) -> Option<String> {
    let mut count: BTreeMap<&str, i64> = BTreeMap::new();
    for b in before {
        *count.entry(b).or_default() -= 1;
    }
    for a in after {
        *count.entry(a).or_default() += 1;
    }
    // Appeared, in page order of `after`, each occurrence at most its surplus.
    let mut surplus = count.clone();
    let mut appeared = Vec::new();
    for a in after {
        if let Some(n) = surplus.get_mut(a.as_str())
            && *n > 0
        {
            *n -= 1;
            appeared.push(a.as_str());
        }
    }
    let disappeared: i64 = count.values().filter(|n| **n < 0).map(|n| -n).sum();
    if appeared.is_empty() && disappeared == 0 {
        return None;
    }
    let shown: Vec<&str> = appeared.iter().take(5).copied().collect();
    let more = if appeared.len() > 5 { ", …" } else { "" };
    Some(format!(
        "DOM changes: {} appeared{}; {} disappeared",
        appeared.len(),
        if shown.is_empty() { String::new() } else { format!(" [{}{more}]", shown.join(", ")) },
        disappeared
    ))
}

#[cfg(test)]
mod tests {

    #[test]
    fn html_is_escaped_and_keeps_ids() {
        let snap = Snapshot {
            items: vec![
                Item::Element {
                    id: 7,
                    tag: "button".into(),
                    role: "button".into(),
                    label: "Add <b>".into(),
                    value: None,
                    options: None,
                    rect: None,
                },
                Item::Element {
                    id: 3,
                    tag: "select".into(),
                    role: "combobox".into(),
                    label: "Size".into(),
                    value: Some("M".into()),
                    options: Some(vec!["S".into(), "M".into()]),
                    rect: Some([4, 5, 60, 20]),
                },
                Item::Text { text: "Total: 5 & 6".into() },
            ],
            ..Snapshot::blank("/")
        };
        assert_eq!(
            snap.render_html_max(8),
            "<button id=\"7\">Add &lt;b&gt;</button>\n<select id=\"3\" value=\"M\" aria-label=\"Size\"><option>S</option><option>M</option></select>\n<p>Total: 5 &amp; 6</p>\n"
        );
        assert!(!snap.render_html_max(1).contains("select"));
    }

    use super::*;

    fn v(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn diff_counts_appeared_and_disappeared() {
        assert_eq!(dom_diff(&v(&["a", "b"]), &v(&["a", "b"])), None);
        assert_eq!(
            dom_diff(&v(&["a", "b", "c"]), &v(&["a", "x", "y", "x"])).unwrap(),
            "DOM changes: 3 appeared [x, y, x]; 2 disappeared"
        );
        let many: Vec<String> = (0..7).map(|i| format!("b{i}")).collect();
        assert_eq!(
            dom_diff(&[], &many).unwrap(),
            "DOM changes: 7 appeared [b0, b1, b2, b3, b4, …]; 0 disappeared"
        );
    }

    #[test]
    fn snapshot_parses_and_renders() {
        let json = r#"{"url":"http://h/x","title":"T","vw":800,"vh":600,"sx":0,"sy":0,"sw":800,"sh":900,
            "items":[{"id":1,"tag":"input","role":"textbox","label":"Search","value":"mug"},{"text":"Hello"},
            {"id":2,"tag":"button","role":"button","label":"Go"}]}"#;
        let s: Snapshot = serde_json::from_str(json).unwrap();
        assert_eq!(
            s.render_items(),
            "[1] textbox \"Search\" value=\"mug\"\nHello\n[2] button \"Go\"\n"
        );
        assert_eq!(s.clickables(), v(&["textbox \"Search\"", "button \"Go\""]));
        assert!(s.element(2).is_some() && s.element(3).is_none());
    }
}
