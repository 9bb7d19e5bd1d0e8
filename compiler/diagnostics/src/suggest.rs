//! Did-you-mean suggestions for near misses of names, fields, units and enum values.

/// The closest candidate to `wrong`, if one is close enough to be a plausible typo.
pub fn suggest<'a, I>(wrong: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let wrong_lc = wrong.to_lowercase();
    // Best is the smallest edit distance, then the same length, then the highest similarity.
    let mut best: Option<((usize, usize, i64), &'a str)> = None;
    for cand in candidates {
        if cand == wrong {
            continue;
        }
        let cand_lc = cand.to_lowercase();
        let score = strsim::jaro_winkler(&wrong_lc, &cand_lc);
        let dist = strsim::damerau_levenshtein(&wrong_lc, &cand_lc);
        let close = dist <= 1 || (dist <= 2 && wrong.len() > 4) || score >= 0.88;
        if !close || wrong.len() <= 2 && dist > 1 {
            continue;
        }
        let key = (dist, wrong.len().abs_diff(cand.len()), -((score * 1e6) as i64));
        if best.is_none_or(|(k, c)| key < k || (key == k && cand < c)) {
            best = Some((key, cand));
        }
    }
    best.map(|(_, c)| c)
}

/// `did you mean `x`?` help text for the closest candidate, if any.
pub fn did_you_mean<'a, I>(wrong: &str, candidates: I) -> Option<String>
where
    I: IntoIterator<Item = &'a str>,
{
    suggest(wrong, candidates).map(|c| format!("did you mean `{c}`?"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_misses_are_suggested_and_far_ones_are_not() {
        let c = ["group", "prompts", "clip", "temperature"];
        assert_eq!(suggest("grop", c), Some("group"));
        assert_eq!(suggest("tempreature", c), Some("temperature"));
        assert_eq!(suggest("zzz", c), None);
        assert_eq!(suggest("tokenz", ["token", "tokens"]), Some("tokens"));
        assert_eq!(suggest("group", c), None);
    }
}
