//! Exhaustive inputs for the tests that check a fast matcher against its reference.

/// Calls `f` on every string of at most `max` of `parts` (the empty string included) and
/// returns how many there were: `sum(parts.len()^k, k = 0..=max)`.
pub(crate) fn each_string(parts: &[&str], max: usize, mut f: impl FnMut(&str)) -> usize {
    let mut stack = vec![(String::new(), 0)];
    let mut n = 0;
    while let Some((s, pieces)) = stack.pop() {
        f(&s);
        n += 1;
        if pieces < max {
            stack.extend(parts.iter().map(|p| (format!("{s}{p}"), pieces + 1)));
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_string_once() {
        let mut seen = Vec::new();
        let n = each_string(&["a", "b"], 2, |s| seen.push(s.to_string()));
        seen.sort();
        assert_eq!(seen, ["", "a", "aa", "ab", "b", "ba", "bb"]);
        assert_eq!(n, 7);
    }
}
