//! The error pieces every layer shares: [`BoxError`] (another module's typed error, carried
//! unchanged) and [`chain`] (an error with its causes on one line, `cause: cause: …`, what
//! `{:#}` shows for an `anyhow` error at the command line).

/// Any module's error, boxed: for places that carry errors of several modules (a hosted
/// protocol's handler, code run inside a lab namespace).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The message with its causes, `cause: cause: …`.
pub fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn chain_lists_every_cause_in_order() {
        let e = Outer(std::io::Error::other("inner"));
        assert_eq!(chain(&e), "outer: inner");
        let plain = std::io::Error::other("alone");
        assert_eq!(chain(&plain), "alone");
    }
}
