//! An environment for the tests of what reads one (`var` functions).

/// Looks a name up in `pairs`, as `std::env::var(name).ok()` would.
pub(crate) fn vars<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
    move |name| {
        pairs
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    }
}
