//! Repeated warnings are capped: a 50 MB recipe of unused declarations once printed 543 MB of
//! the same W0201. The first [`MAX_REPEATED`] warnings of each code are kept; the last kept
//! one says how many more there were. Errors are never dropped.

use std::collections::BTreeMap;

use crate::Diagnostic;

/// How many warnings of one code are shown.
pub const MAX_REPEATED: usize = 100;

/// Drops the warnings of each code past the first `max` (in the order given), noting the
/// count on the last one kept; returns how many were dropped.
pub fn cap_repeated(diags: &mut Vec<Diagnostic>, max: usize) -> usize {
    let mut total: BTreeMap<&'static str, usize> = BTreeMap::new();
    for d in diags.iter().filter(|d| !d.is_error()) {
        *total.entry(d.code).or_default() += 1;
    }
    if total.values().all(|n| *n <= max) {
        return 0;
    }
    let mut seen: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut dropped = 0;
    let mut kept = Vec::with_capacity(diags.len());
    for mut d in diags.drain(..) {
        if d.is_error() {
            kept.push(d);
            continue;
        }
        let n = seen.entry(d.code).or_default();
        *n += 1;
        let all = total.get(d.code).copied().unwrap_or(0);
        if *n > max {
            dropped += 1;
            continue;
        }
        if *n == max && all > max {
            let more = format!("{} more `{}` warnings are not shown", all - max, d.code);
            d.help = Some(match d.help.take() {
                Some(h) => format!("{h}; {more}"),
                None => more,
            });
        }
        kept.push(d);
    }
    *diags = kept;
    dropped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_past_the_cap_are_counted_not_shown_and_errors_all_stay() {
        let mut d: Vec<Diagnostic> =
            (0..250).map(|i| Diagnostic::new("W0201", format!("unused `x{i}`"))).collect();
        d.extend((0..3).map(|_| Diagnostic::new("W0202", "unused import")));
        d.extend((0..150).map(|_| Diagnostic::new("E0100", "bad")));
        assert_eq!(cap_repeated(&mut d, 100), 150);
        assert_eq!(d.iter().filter(|x| x.code == "W0201").count(), 100);
        assert_eq!(d.iter().filter(|x| x.code == "W0202").count(), 3);
        assert_eq!(d.iter().filter(|x| x.code == "E0100").count(), 150);
        let last = d.iter().rfind(|x| x.code == "W0201").unwrap();
        assert_eq!(last.message, "unused `x99`");
        assert_eq!(last.help.as_deref(), Some("150 more `W0201` warnings are not shown"));
        let mut few = vec![Diagnostic::new("W0201", "one")];
        assert_eq!(cap_repeated(&mut few, 100), 0);
        assert!(few[0].help.is_none());
    }
}
