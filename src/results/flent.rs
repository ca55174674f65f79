//! Export to flent's data format (version 4, gzip JSON), pending.
pub fn write(
    _r: &crate::results::latency::LatencyResult,
    _title: &str,
    _p: &std::path::Path,
) -> anyhow::Result<()> {
    anyhow::bail!("not yet")
}
