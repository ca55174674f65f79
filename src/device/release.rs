//! `/etc/os-release` (`KEY="value"`) and `/etc/openwrt_release` (`KEY='value'`): shell-style
//! assignment files, parsed without a shell.

/// `KEY=value` pairs in file order. Quotes (`"…"` or `'…'`) are removed, backslash escapes inside
/// double quotes are honoured; comments and malformed lines are skipped.
pub fn parse(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((key, raw)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        out.push((key.to_string(), unquote(raw.trim())));
    }
    out
}

fn unquote(raw: &str) -> String {
    let bytes = raw.as_bytes();
    if bytes.len() >= 2 && bytes[0] == b'\'' && bytes[bytes.len() - 1] == b'\'' {
        return raw[1..raw.len() - 1].to_string();
    }
    if bytes.len() >= 2 && bytes[0] == b'"' && bytes[bytes.len() - 1] == b'"' {
        let inner = &raw[1..raw.len() - 1];
        let mut s = String::with_capacity(inner.len());
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                if let Some(n) = chars.next() {
                    s.push(n);
                }
            } else {
                s.push(c);
            }
        }
        return s;
    }
    raw.to_string()
}

/// The value of `key`, if present and not empty.
pub fn get<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

/// The OpenWrt table's revision: `${BUILD_ID%%-*}`, so `r23633-c7b6cfac40` gives `r23633`.
pub fn revision_of(build_id: &str) -> String {
    build_id.split('-').next().unwrap_or(build_id).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPENWRT_21: &str = "DISTRIB_ID='OpenWrt'\nDISTRIB_RELEASE='21.02.5'\nDISTRIB_REVISION='r16688-fa9a932fdb'\nDISTRIB_TARGET='ramips/mt7621'\nDISTRIB_ARCH='mipsel_24kc'\nDISTRIB_DESCRIPTION='OpenWrt 21.02.5 r16688-fa9a932fdb'\nDISTRIB_TAINTS=''\n";
    const OS_RELEASE_21: &str = "NAME=\"OpenWrt\"\nVERSION=\"21.02.5\"\nID=\"openwrt\"\nID_LIKE=\"lede openwrt\"\nPRETTY_NAME=\"OpenWrt 21.02.5\"\nVERSION_ID=\"21.02.5\"\nBUILD_ID=\"r16688-fa9a932fdb\"\nOPENWRT_BOARD=\"ramips/mt7621\"\nOPENWRT_TAINTS=\"\"\n";

    #[test]
    fn openwrt_release_single_quotes() {
        let p = parse(OPENWRT_21);
        assert_eq!(get(&p, "DISTRIB_REVISION"), Some("r16688-fa9a932fdb"));
        assert_eq!(get(&p, "DISTRIB_TARGET"), Some("ramips/mt7621"));
        assert_eq!(get(&p, "DISTRIB_TAINTS"), None);
    }

    #[test]
    fn os_release_double_quotes() {
        let p = parse(OS_RELEASE_21);
        assert_eq!(get(&p, "PRETTY_NAME"), Some("OpenWrt 21.02.5"));
        assert_eq!(get(&p, "BUILD_ID"), Some("r16688-fa9a932fdb"));
        assert_eq!(revision_of("r16688-fa9a932fdb"), "r16688");
        assert_eq!(revision_of("r23633"), "r23633");
    }

    #[test]
    fn debian_unquoted_escapes_and_junk() {
        let p = parse("# c\nID=debian\nPRETTY_NAME=\"Debian \\\"12\\\"\"\nbad line\n=x\nA B=c\n");
        assert_eq!(get(&p, "ID"), Some("debian"));
        assert_eq!(get(&p, "PRETTY_NAME"), Some("Debian \"12\""));
        assert_eq!(p.len(), 2);
    }
}
