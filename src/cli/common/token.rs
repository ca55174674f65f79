//! The shared secret of routerbench's own protocol, as `server`, rrul, rpm and stress take it.

/// `--token`, else `$ROUTERBENCH_TOKEN` (keeps the secret out of `ps`), else none.
pub fn token_arg(arg: &Option<String>) -> anyhow::Result<Option<String>> {
    let t = arg
        .clone()
        .or_else(|| std::env::var("ROUTERBENCH_TOKEN").ok())
        .filter(|t| !t.is_empty());
    if t.as_ref()
        .is_some_and(|t| t.len() > crate::wire::rb::MAX_TOKEN_LEN)
    {
        anyhow::bail!("--token must be at most 128 bytes");
    }
    Ok(t)
}
