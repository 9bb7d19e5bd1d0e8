//! JavaScript run in pages: the snapshot of interactive elements and text (with stable ids),
//! element geometry by id, and small helpers for actions.

/// Returns a JSON string: url, title, viewport, scroll, and `items` in DOM order, each either
/// an element `{id, tag, role, label, value, rect}` (`rect`: its border box in viewport CSS
/// pixels, `[left, top, width, height]` rounded, as the screenshot taken with the snapshot
/// shows it) or a text line `{text}`. Tags interactive elements
/// with `data-wrl-id` (kept across snapshots of the same document, so ids are stable).
pub const SNAPSHOT: &str = r#"(() => {
const MAXI = 80;
if (!window.__wrlNext) window.__wrlNext = 1;
const isInter = (e) => {
  const t = e.tagName;
  if (t === 'A') return e.hasAttribute('href');
  if (t === 'BUTTON' || t === 'SELECT' || t === 'TEXTAREA') return true;
  if (t === 'INPUT') return e.type !== 'hidden';
  const r = e.getAttribute('role');
  if (r && /^(button|link|checkbox|radio|tab|menuitem|option|switch|textbox|combobox)$/.test(r)) return true;
  return e.hasAttribute('onclick') || e.isContentEditable && e.parentElement && !e.parentElement.isContentEditable;
};
const roleOf = (e) => {
  const r = e.getAttribute('role'); if (r) return r;
  const t = e.tagName;
  if (t === 'A') return 'link';
  if (t === 'BUTTON') return 'button';
  if (t === 'SELECT') return 'combobox';
  if (t === 'TEXTAREA') return 'textbox';
  if (t === 'INPUT') {
    const ty = e.type;
    if (ty === 'submit' || ty === 'button' || ty === 'reset') return 'button';
    if (ty === 'checkbox' || ty === 'radio') return ty;
    return 'textbox';
  }
  return 'generic';
};
const clean = (s, n) => { s = (s || '').replace(/\s+/g, ' ').trim(); return s.length > n ? s.slice(0, n - 1) + '…' : s; };
const labelOf = (e) => clean(e.getAttribute('aria-label') || (e.tagName === 'SELECT' ? '' : e.innerText) || e.getAttribute('placeholder') || e.getAttribute('title') || e.getAttribute('alt') || e.getAttribute('name') || (e.tagName === 'INPUT' ? e.value : ''), 40);
const visible = (e) => { const r = e.getBoundingClientRect(); if (r.width === 0 && r.height === 0) return false; const s = getComputedStyle(e); return s.visibility !== 'hidden' && s.display !== 'none'; };
const items = [];
const walk = (node) => {
  for (const c of node.childNodes) {
    if (items.length >= MAXI) return;
    if (c.nodeType === 3) { const t = clean(c.textContent, 80); if (t) { const last = items[items.length - 1]; if (last && last.text !== undefined && last.text.length + t.length < 80 && !last.block) last.text += ' ' + t; else items.push({text: t}); } continue; }
    if (c.nodeType !== 1) continue;
    const t = c.tagName;
    if (t === 'SCRIPT' || t === 'STYLE' || t === 'NOSCRIPT' || t === 'TEMPLATE') continue;
    if (!visible(c)) continue;
    if (isInter(c)) {
      let id = c.getAttribute('data-wrl-id');
      if (!id) { id = String(window.__wrlNext++); c.setAttribute('data-wrl-id', id); }
      const b = c.getBoundingClientRect();
      const it = {id: +id, tag: t.toLowerCase(), role: roleOf(c), label: labelOf(c), rect: [Math.round(b.left), Math.round(b.top), Math.round(b.width), Math.round(b.height)]};
      if (t === 'INPUT' || t === 'TEXTAREA') { if (c.type !== 'password' && c.value) it.value = clean(c.value, 40); }
      if (t === 'SELECT') { const o = c.options[c.selectedIndex]; it.value = o ? clean(o.text, 30) : ''; it.options = Array.from(c.options).slice(0, 8).map(o => clean(o.text, 20)); }
      items.push(it);
      continue;
    }
    const block = getComputedStyle(c).display !== 'inline';
    if (block) { const last = items[items.length - 1]; if (last && last.text !== undefined) last.block = true; }
    walk(c);
    if (block) { const last = items[items.length - 1]; if (last && last.text !== undefined) last.block = true; }
  }
};
if (document.body) walk(document.body);
for (const it of items) delete it.block;
const se = document.scrollingElement || document.documentElement;
return JSON.stringify({url: location.href, title: document.title, vw: innerWidth, vh: innerHeight, sx: Math.round(scrollX), sy: Math.round(scrollY), sw: se.scrollWidth, sh: se.scrollHeight, items});
})()"#;

/// Scrolls element `[data-wrl-id=id]` into view and returns `{x, y, desc}` of its centre in
/// viewport CSS pixels, or `null`. With `mark`, also marks the document (as [`MARK_DOCUMENT`])
/// and adds its `href`, saving a round trip before a click that may navigate.
pub fn element_center(id: u32, mark: bool) -> String {
    let (set_mark, href) =
        if mark { ("window.__wrlMark = 1; ", ", href: location.href") } else { ("", "") };
    format!(
        r#"(() => {{ const e = document.querySelector('[data-wrl-id="{id}"]'); if (!e) return 'null';
const r0 = e.getBoundingClientRect(); if (r0.top < 0 || r0.bottom > innerHeight || r0.left < 0 || r0.right > innerWidth) e.scrollIntoView({{block: 'center', inline: 'center'}});
const r = e.getBoundingClientRect(); {set_mark}
return JSON.stringify({{x: r.left + r.width / 2, y: r.top + r.height / 2, desc: {DESCRIBE}(e){href}}}); }})()"#
    )
}

/// A JS function expression describing an element: `role "label"` (tag if no role) (label ≤ 30 chars).
pub const DESCRIBE: &str = r#"((e) => { if (!e) return 'nothing'; const r = e.getAttribute('role') || ({A:'link',BUTTON:'button',INPUT:'textbox',TEXTAREA:'textbox',SELECT:'combobox'})[e.tagName] || ''; let l = (e.getAttribute('aria-label') || (e.tagName === 'SELECT' ? '' : e.innerText) || e.getAttribute('placeholder') || e.value || '').replace(/\s+/g, ' ').trim(); if (l.length > 30) l = l.slice(0, 29) + '…'; return (r || e.tagName.toLowerCase()) + ' "' + l + '"'; })"#;

/// Describes the element at a viewport point.
pub fn describe_at(x: f64, y: f64) -> String {
    format!("{DESCRIBE}(document.elementFromPoint({x}, {y}))")
}

/// Selects all text of the focused field (for `write`), returns whether a field was focused.
pub const SELECT_FOCUSED: &str = r#"(() => { const e = document.activeElement; if (!e) return false; if (e.tagName === 'INPUT' || e.tagName === 'TEXTAREA') { e.select(); return true; } if (e.isContentEditable) { document.execCommand('selectAll'); return true; } return false; })()"#;

/// The value of the focused field, or null.
pub const FOCUSED_VALUE: &str = r#"(() => { const e = document.activeElement; if (e && (e.tagName === 'INPUT' || e.tagName === 'TEXTAREA')) return e.value; if (e && e.isContentEditable) return e.innerText; return null; })()"#;

/// Scrolls the page, or the scrollable ancestor of the element at a point, by (dx, dy);
/// returns `"moved"` or `"boundary"`.
pub fn scroll_by(dx: f64, dy: f64, point: Option<(f64, f64)>) -> String {
    let target = match point {
        Some((x, y)) => format!(
            "(() => {{ let e = document.elementFromPoint({x}, {y}); while (e && e !== document.body && e !== document.documentElement) {{ const s = getComputedStyle(e); if (/(auto|scroll)/.test(s.overflow + s.overflowY + s.overflowX) && (e.scrollHeight > e.clientHeight || e.scrollWidth > e.clientWidth)) return e; e = e.parentElement; }} return document.scrollingElement; }})()"
        ),
        None => "document.scrollingElement".to_string(),
    };
    format!(
        "(() => {{ const e = {target}; const x0 = e.scrollLeft, y0 = e.scrollTop; e.scrollBy(0, 0); e.scrollLeft += {dx}; e.scrollTop += {dy}; return (e.scrollLeft !== x0 || e.scrollTop !== y0) ? 'moved' : 'boundary'; }})()"
    )
}

/// Chooses an option (by text or value) in the `<select>` at a point or with an id.
pub fn select_option(target: &str, option: &str) -> String {
    let opt = serde_json::to_string(option).unwrap_or_else(|_| "\"\"".into());
    format!(
        "(() => {{ const e = {target}; if (!e || e.tagName !== 'SELECT') return 'not a select'; const want = {opt}.trim().toLowerCase(); const o = Array.from(e.options).find(o => o.text.trim().toLowerCase() === want || o.value.toLowerCase() === want); if (!o) return 'no option ' + {opt} + ' (options: ' + Array.from(e.options).map(o => o.text).join(', ') + ')'; e.value = o.value; e.dispatchEvent(new Event('input', {{bubbles: true}})); e.dispatchEvent(new Event('change', {{bubbles: true}})); return 'ok'; }})()"
    )
}

/// Finds text with `window.find` and returns the number of occurrences in the body text.
pub fn find_text(term: &str) -> String {
    let t = serde_json::to_string(term).unwrap_or_else(|_| "\"\"".into());
    format!(
        "(() => {{ const t = {t}; if (!t) return 0; const n = (document.body ? document.body.innerText : '').toLowerCase().split(t.toLowerCase()).length - 1; if (n > 0) window.find(t); return n; }})()"
    )
}

/// Marks the current document so a later check can tell whether it was replaced.
pub const MARK_DOCUMENT: &str = "(() => { window.__wrlMark = 1; return location.href; })()";

/// `"<mark>|<readyState>|<href>"`: mark is 1 while the marked document is still current.
pub const CHECK_DOCUMENT: &str =
    "(() => (window.__wrlMark ? '1' : '0') + '|' + document.readyState + '|' + location.href)()";

/// The file the link at viewport point (`x`, `y`) points to, fetched by the page itself (so the
/// allow-list and the request log see it): `{"error": …}` without a link or on a failed fetch,
/// else `{"name", "type", "size", "status", "text"}` with at most `preview` characters of a
/// text file (`text` null for a binary one) and at most `max_bytes` read.
pub fn fetch_link_at(x: f64, y: f64, preview: usize, max_bytes: usize) -> String {
    format!(
        "(async () => {{ const e = document.elementFromPoint({x}, {y}); \
         const a = e && e.closest('a[href]'); \
         if (!a) return {{error: 'no link to a file at the point' + (e ? ' (' + e.tagName.toLowerCase() + ')' : '')}}; \
         const name = a.getAttribute('download') || decodeURIComponent(new URL(a.href).pathname.split('/').pop() || 'file'); \
         let r; try {{ r = await fetch(a.href); }} catch (err) {{ return {{error: 'cannot fetch ' + a.href + ': ' + err}}; }} \
         const type = (r.headers.get('content-type') || '').split(';')[0].trim(); \
         const buf = new Uint8Array(await r.arrayBuffer()); \
         const textual = /^text\\/|json|xml|csv|javascript/.test(type); \
         const text = textual ? new TextDecoder().decode(buf.slice(0, {max_bytes})).slice(0, {preview}) : null; \
         return {{name, type, size: buf.length, status: r.status, text}}; }})()"
    )
}
