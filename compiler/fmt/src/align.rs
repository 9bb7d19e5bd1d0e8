//! Alignment of comments that end consecutive lines: recipes annotate figures with their
//! provenance line by line, and aligned comments keep such runs readable.

/// Rewrites `out` so that in every run of two or more consecutive lines with the same
/// indentation that each end in a comment, the comments start one space after the longest
/// code of the run. `marks` are the byte offsets of the space before each such comment.
pub(crate) fn align_trailing_comments(out: &str, marks: &[usize]) -> String {
    let mut lines: Vec<String> = out.split('\n').map(String::from).collect();
    // (line index, byte column of the comment's space) for each mark.
    let mut starts = Vec::with_capacity(lines.len());
    let mut at = 0;
    for l in &lines {
        starts.push(at);
        at += l.len() + 1;
    }
    let mut found: Vec<(usize, usize)> = marks
        .iter()
        .filter_map(|&m| {
            let line = starts.partition_point(|&s| s <= m).checked_sub(1)?;
            let col = m - starts[line];
            lines[line].get(col..)?.starts_with(" //").then_some((line, col))
        })
        .collect();
    found.sort_unstable();
    found.dedup_by_key(|(line, _)| *line);

    let indent = |l: &str| l.len() - l.trim_start_matches(' ').len();
    let mut i = 0;
    while i < found.len() {
        let mut j = i + 1;
        while j < found.len()
            && found[j].0 == found[j - 1].0 + 1
            && indent(&lines[found[j].0]) == indent(&lines[found[i].0])
        {
            j += 1;
        }
        if j - i >= 2 {
            let width = |&(line, col): &(usize, usize)| lines[line][..col].chars().count();
            let target = found[i..j].iter().map(width).max().unwrap_or(0);
            for &(line, col) in &found[i..j] {
                let pad = target - lines[line][..col].chars().count();
                lines[line].insert_str(col, &" ".repeat(pad));
            }
        }
        i = j;
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::align_trailing_comments;

    #[test]
    fn aligns_runs_only() {
        let out = "a = 1 // x\nlonger = 2 // y\n  c = 3 // z\nd = 4\ne = 5 // w\n";
        let marks: Vec<usize> = out.match_indices(" //").map(|(i, _)| i).collect();
        assert_eq!(
            align_trailing_comments(out, &marks),
            "a = 1      // x\nlonger = 2 // y\n  c = 3 // z\nd = 4\ne = 5 // w\n"
        );
    }
}
