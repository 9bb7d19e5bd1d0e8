//! Bracketed sequences (blocks, records, lists, arguments, parameters, `use` groups): on one
//! line when they fit and were on one line in the source, else one item per line.

use wrl_diagnostics::Span;

use crate::printer::{Fmt, MAX_WIDTH};

/// How the items of a sequence are separated when it is broken over lines.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sep {
    /// Lists, arguments, parameters: a comma after every item, the last included.
    Comma,
    /// Blocks: nothing; the line break separates.
    Line,
}

/// The brackets and spacing of one kind of sequence.
#[derive(Clone, Copy)]
pub(crate) struct Delims {
    pub open: &'static str,
    pub close: &'static str,
    /// `{ a }` rather than `[a]` on one line.
    pub pad: bool,
    pub sep: Sep,
}

pub(crate) const BLOCK: Delims = Delims { open: "{", close: "}", pad: true, sep: Sep::Line };
pub(crate) const LIST: Delims = Delims { open: "[", close: "]", pad: false, sep: Sep::Comma };
pub(crate) const ARGS: Delims = Delims { open: "(", close: ")", pad: false, sep: Sep::Comma };
pub(crate) const GROUP: Delims = Delims { open: "{", close: "}", pad: false, sep: Sep::Comma };

/// Prints a sequence whose opening bracket is at source offset `open_at` and whose closing
/// bracket ends at `close_end`.
pub(crate) fn seq<'a, T>(
    f: &mut Fmt<'a>,
    d: Delims,
    (open_at, close_end): (usize, usize),
    items: &[T],
    span_of: impl Fn(&T) -> Span,
    print: impl Fn(&mut Fmt<'a>, &T) + Copy,
) {
    let broken_in_source = f.src_breaks(open_at, close_end);
    if f.flat {
        if broken_in_source {
            f.failed = true;
        }
        flat(f, d, items, print);
        return;
    }
    let fits = !broken_in_source
        && f.measure(|m| flat(m, d, items, print)).is_some_and(|w| f.col() + w <= MAX_WIDTH);
    if fits {
        flat(f, d, items, print);
        f.last_end = f.last_end.max(close_end);
        return;
    }
    let outer = f.line_indent();
    let inner = outer + 2;
    f.write(d.open);
    f.last_end = open_at + 1;
    let saved_cont = f.cont;
    f.cont = inner + 2;
    for it in items {
        let span = span_of(it);
        f.item_line(span.start as usize, inner);
        print(f, it);
        if d.sep == Sep::Comma {
            f.write(",");
        }
        f.last_end = f.last_end.max(f.end(span));
    }
    f.cont = saved_cont;
    f.trailing_comments(close_end.saturating_sub(1));
    f.comments_before(close_end.saturating_sub(1), inner);
    f.line(outer);
    f.write(d.close);
    f.last_end = close_end;
}

fn flat<'a, T>(f: &mut Fmt<'a>, d: Delims, items: &[T], print: impl Fn(&mut Fmt<'a>, &T)) {
    f.write(d.open);
    if d.pad && !items.is_empty() {
        f.write(" ");
    }
    for (i, it) in items.iter().enumerate() {
        if i > 0 {
            f.write(", ");
        }
        print(f, it);
    }
    if d.pad && !items.is_empty() {
        f.write(" ");
    }
    f.write(d.close);
}
