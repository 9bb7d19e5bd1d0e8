//! The output buffer of the formatter: indentation, line breaks, blank lines kept from the
//! source, and the comments, which are written as soon as the printer passes their place.

use wrl_syntax::Comment;

/// Lines longer than this are broken where the layout allows it.
pub(crate) const MAX_WIDTH: usize = 100;

/// Formatter state over one source text.
pub(crate) struct Fmt<'a> {
    pub src: &'a str,
    trivia: std::rc::Rc<Vec<bool>>,
    comments: &'a [Comment],
    next_comment: usize,
    out: String,
    /// Measuring mode: everything on one line, no comments.
    pub flat: bool,
    /// In measuring mode: something cannot be put on one line.
    pub failed: bool,
    /// A line comment was written: the next text goes on a new line.
    pending_nl: bool,
    /// Source offset just past the last thing printed.
    pub last_end: usize,
    /// Indentation of continuation lines of the current item.
    pub cont: usize,
    /// Output offsets where a comment at the end of a line begins (the space before `//`).
    trailing: Vec<usize>,
}

impl<'a> Fmt<'a> {
    pub fn new(src: &'a str, comments: &'a [Comment]) -> Fmt<'a> {
        Fmt {
            src,
            trivia: std::rc::Rc::new(crate::scan::trivia_map(src)),
            comments,
            next_comment: 0,
            out: String::new(),
            flat: false,
            failed: false,
            pending_nl: false,
            last_end: 0,
            cont: 2,
            trailing: Vec::new(),
        }
    }

    /// A measuring printer that starts at the same place.
    fn measurer(&self) -> Fmt<'a> {
        Fmt {
            src: self.src,
            trivia: self.trivia.clone(),
            comments: &[],
            next_comment: 0,
            out: String::new(),
            flat: true,
            failed: false,
            pending_nl: false,
            last_end: self.last_end,
            cont: self.cont,
            trailing: Vec::new(),
        }
    }

    /// The width of what `print` writes when everything is on one line, if it can be.
    pub fn measure(&self, print: impl FnOnce(&mut Fmt<'a>)) -> Option<usize> {
        let mut m = self.measurer();
        print(&mut m);
        (!m.failed && !m.out.contains('\n')).then(|| m.out.chars().count())
    }

    /// The end of a span without the whitespace and comments pest included at its end.
    pub fn end(&self, span: wrl_diagnostics::Span) -> usize {
        let start = span.start as usize;
        let mut end = (span.end as usize).min(self.trivia.len());
        while end > start && self.trivia[end - 1] {
            end -= 1;
        }
        end
    }

    /// Whether the source between two offsets holds a line break.
    pub fn src_breaks(&self, from: usize, to: usize) -> bool {
        self.src.get(from.min(to)..to).is_some_and(|s| s.contains('\n'))
    }

    fn newlines_between(&self, from: usize, to: usize) -> usize {
        self.src.get(from.min(to)..to).map_or(0, |s| s.matches('\n').count())
    }

    fn current_line(&self) -> &str {
        self.out.rsplit('\n').next().unwrap_or("")
    }

    /// The column where the next character goes.
    pub fn col(&self) -> usize {
        self.current_line().chars().count()
    }

    /// The indentation of the current line.
    pub fn line_indent(&self) -> usize {
        let line = self.current_line();
        line.len() - line.trim_start_matches(' ').len()
    }

    fn at_line_start(&self) -> bool {
        self.current_line().trim().is_empty()
    }

    fn trim_line_end(&mut self) {
        let keep = self.out.trim_end_matches(' ').len();
        self.out.truncate(keep);
    }

    /// Ends the current line if it has text, and indents the new one.
    pub fn line(&mut self, indent: usize) {
        if self.flat {
            self.failed = true;
            return;
        }
        if !self.at_line_start() {
            self.trim_line_end();
            self.out.push('\n');
        } else {
            let keep = self.out.len() - self.current_line().len();
            self.out.truncate(keep);
        }
        self.pending_nl = false;
        self.out.push_str(&" ".repeat(indent));
    }

    /// An empty line, unless one is already there.
    pub fn blank_line(&mut self) {
        if self.flat {
            return;
        }
        let keep = self.out.len() - self.current_line().len();
        self.out.truncate(keep);
        if !self.out.is_empty() && !self.out.ends_with("\n\n") {
            self.out.push('\n');
        }
    }

    /// Writes text, first breaking the line if a line comment ended it.
    pub fn write(&mut self, s: &str) {
        if self.pending_nl {
            let cont = self.cont;
            self.line(cont);
        }
        self.out.push_str(s);
    }

    /// A space, or a continuation line where `brk` or where a line comment ended the line.
    pub fn space_or_line(&mut self, brk: bool) {
        if !self.flat && (brk || self.pending_nl) {
            let cont = self.cont;
            self.line(cont);
        } else {
            self.write(" ");
        }
    }

    /// Writes the comments that come before source offset `pos`: those on the line of the last
    /// thing printed at its end, the others on their own lines at `indent`.
    pub fn comments_before(&mut self, pos: usize, indent: usize) {
        if self.flat {
            return;
        }
        while let Some(c) = self.comments.get(self.next_comment) {
            let start = c.span.start as usize;
            if start >= pos {
                break;
            }
            self.next_comment += 1;
            let text = format!("{}{}", if c.doc { "///" } else { "//" }, c.text);
            let own_line = self.src_breaks(self.last_end, start) || self.at_line_start();
            if own_line {
                if self.newlines_between(self.last_end, start) >= 2 && self.blank_ok() {
                    self.line(0);
                    self.blank_line();
                }
                self.line(indent);
            } else {
                self.trim_line_end();
                self.trailing.push(self.out.len());
                self.out.push(' ');
            }
            self.out.push_str(text.trim_end());
            self.pending_nl = true;
            self.last_end = self.last_end.max(c.span.end as usize);
        }
    }

    /// Only the comment on the line of the last thing printed, if it comes before `limit`.
    pub fn trailing_comments(&mut self, limit: usize) {
        if let Some(c) = self.comments.get(self.next_comment) {
            let start = c.span.start as usize;
            if start < limit && !self.src_breaks(self.last_end, start) && !self.at_line_start() {
                self.comments_before(start + 1, 0);
            }
        }
    }

    /// A blank line is not kept right after an opening bracket or at the top of the file.
    fn blank_ok(&self) -> bool {
        let t = self.out.trim_end();
        !(t.is_empty() || t.ends_with('{') || t.ends_with('[') || t.ends_with('('))
    }

    /// Starts item `start` of a sequence on its own line at `indent`, writing the comments
    /// before it and keeping one blank line where the source had any.
    pub fn item_line(&mut self, start: usize, indent: usize) {
        self.trailing_comments(start);
        self.comments_before(start, indent);
        let blank = self.newlines_between(self.last_end, start) >= 2 && self.blank_ok();
        self.line(indent);
        if blank {
            self.blank_line();
            self.out.push_str(&" ".repeat(indent));
        }
    }

    pub fn out_len(&self) -> usize {
        self.out.len()
    }

    /// Whether the output since `mark` holds a line break.
    pub fn broke_since(&self, mark: usize) -> bool {
        self.out.get(mark..).is_some_and(|s| s.trim_end().contains('\n'))
    }

    /// Inserts an empty line at `mark` (the start of a line), unless one is there already.
    pub fn insert_blank_at(&mut self, mark: usize) {
        let before = self.out.get(..mark).unwrap_or("");
        let after = self.out.get(mark..).unwrap_or("");
        if !before.is_empty() && !before.ends_with("\n\n") && !after.starts_with('\n') {
            self.out.insert(mark, '\n');
            self.trailing.iter_mut().filter(|t| **t >= mark).for_each(|t| *t += 1);
        }
    }

    /// Writes the remaining comments and returns the text, ending in one line break.
    pub fn finish(mut self) -> String {
        self.trailing_comments(usize::MAX);
        self.comments_before(usize::MAX, 0);
        let aligned = crate::align::align_trailing_comments(&self.out, &self.trailing);
        let mut out = aligned.trim_end().to_string();
        if !out.is_empty() {
            out.push('\n');
        }
        out
    }
}
