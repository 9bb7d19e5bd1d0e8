//! Did-you-mean suggestions for near misses of names, fields, units and enum values.

/// The closest candidate to `wrong`, if one is close enough to be a plausible typo.
pub fn suggest<'a, I>(wrong: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let wrong_lc = wrong.to_lowercase();
    let mut best: Option<(f64, &'a str)> = None;
    for cand in candidates {
        if cand == wrong {
            continue;
        }
        let score = strsim::jaro_winkler(&wrong_lc, &cand.to_lowercase());
        let dist = strsim::damerau_levenshtein(&wrong_lc, &cand.to_lowercase());
        let close = dist <= 1 || (dist <= 2 && wrong.len() > 4) || score >= 0.88;
        if close && best.is_none_or(|(s, c)| score > s || (score == s && cand < c)) {
            best = Some((score, cand));
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
        assert_eq!(suggest("group", c), None);
    }
}
