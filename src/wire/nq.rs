//! The configuration document of a responsiveness test server: the JSON object at
//! `https://HOST/.well-known/nq` (draft-ietf-ippm-responsiveness-09, "Responsiveness Test
//! Server Discovery"; docs/rpm.md restates the rules). Pure: parses bytes, no I/O.
//!
//! The rules the draft sets, each checked here: `version` is 1 (any other value means the client
//! cannot read the document); `urls` holds `large_download_url`, `small_download_url` and
//! `upload_url` exactly once each; the three URLs name the same host; `test_endpoint` is
//! optional and at most once; unknown names are ignored. Apple's servers also publish the older
//! names `large_https_download_url`, `small_https_download_url` and `https_upload_url`: they are
//! taken when the draft's names are absent.

use std::fmt;

/// A parsed, valid configuration document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NqConfig {
    pub large: TestUrl,
    pub small: TestUrl,
    pub upload: TestUrl,
    /// The host to connect to instead of the URLs' host (their host stays the TLS name and
    /// `:authority`).
    pub test_endpoint: Option<String>,
}

/// One test URL, split the way the client uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestUrl {
    /// The whole URL as the document gave it.
    pub url: String,
    /// Host name or address, without brackets for IPv6.
    pub host: String,
    pub port: u16,
    /// Path and query, at least `/`.
    pub path: String,
}

impl TestUrl {
    /// `host:port` as an HTTP authority (IPv6 in brackets).
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// Why a document or URL is not usable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NqError(pub String);

impl fmt::Display for NqError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NqError {}

fn bad(why: impl Into<String>) -> NqError {
    NqError(why.into())
}

/// Parses an `https://host[:port][/path]` URL (what `--url` and the document's URLs are).
pub fn parse_url(text: &str) -> Result<TestUrl, NqError> {
    let t = text.trim();
    let rest = match t.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("https") => rest,
        Some((scheme, _)) if scheme.eq_ignore_ascii_case("http") => {
            return Err(bad(format!(
                "{t}: plain http:// (no TLS) is not supported over --url; the TCP-only variant \
                 is `routerbench rpm HOST` against a routerbench server"
            )));
        }
        _ => return Err(bad(format!("{t}: not an https:// URL"))),
    };
    let (hostport, path) = match rest.find(['/', '?', '#']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let path = path.split('#').next().unwrap_or("/");
    let path = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("/{path}")
    };
    if hostport.contains('@') {
        return Err(bad(format!(
            "{t}: user information in the URL is not supported"
        )));
    }
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        let (h, after) = v6
            .split_once(']')
            .ok_or_else(|| bad(format!("{t}: unclosed '[' in the host")))?;
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p),
            None if after.is_empty() => None,
            None => return Err(bad(format!("{t}: junk after the IPv6 address"))),
        };
        (h.to_string(), port)
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (hostport.to_string(), None),
        }
    };
    if host.is_empty() {
        return Err(bad(format!("{t}: no host")));
    }
    let port = match port {
        None => 443,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| bad(format!("{t}: bad port {p:?}")))?,
    };
    Ok(TestUrl {
        url: t.to_string(),
        host,
        port,
        path,
    })
}

/// The members of one JSON object in document order, duplicates kept (serde_json's map would
/// keep only the last of a repeated name, and the draft makes a repeated name an error). Values
/// stay raw text, so a nested object (`urls`) is read the same way.
struct Members(Vec<(String, Box<serde_json::value::RawValue>)>);

impl<'de> serde::Deserialize<'de> for Members {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Members;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<Members, A::Error> {
                let mut v = Vec::new();
                while let Some((k, val)) =
                    m.next_entry::<String, Box<serde_json::value::RawValue>>()?
                {
                    v.push((k, val));
                }
                Ok(Members(v))
            }
        }
        d.deserialize_map(V)
    }
}

impl Members {
    /// The raw value of `name`: absent, once, or an error when repeated.
    fn once_raw(&self, name: &str) -> Result<Option<&serde_json::value::RawValue>, NqError> {
        let mut it = self.0.iter().filter(|(k, _)| k == name);
        let first = it.next().map(|(_, v)| v.as_ref());
        if it.next().is_some() {
            return Err(bad(format!("{name:?} appears more than once")));
        }
        Ok(first)
    }

    /// The value of `name`, parsed.
    fn once(&self, name: &str) -> Result<Option<serde_json::Value>, NqError> {
        match self.once_raw(name)? {
            None => Ok(None),
            Some(r) => serde_json::from_str(r.get())
                .map(Some)
                .map_err(|e| bad(format!("{name:?}: {e}"))),
        }
    }
}

/// Parses the document (the body of the `.well-known/nq` response).
pub fn parse_config(body: &[u8]) -> Result<NqConfig, NqError> {
    let top: Members =
        serde_json::from_slice(body).map_err(|e| bad(format!("not a JSON object: {e}")))?;
    match top.once("version")? {
        Some(v) if v.as_u64() == Some(1) => {}
        Some(v) => {
            return Err(bad(format!(
                "version {v} (this client reads version 1 only)"
            )));
        }
        None => return Err(bad("no \"version\"")),
    }
    let urls_raw = top
        .once_raw("urls")?
        .ok_or_else(|| bad("no \"urls\" object"))?;
    let urls: Members =
        serde_json::from_str(urls_raw.get()).map_err(|_| bad("\"urls\" is not an object"))?;
    let url = |draft: &str, legacy: &str| -> Result<TestUrl, NqError> {
        let v = match urls.once(draft)? {
            Some(v) => v,
            None => urls
                .once(legacy)?
                .ok_or_else(|| bad(format!("no \"{draft}\" in \"urls\"")))?,
        };
        let s = v
            .as_str()
            .ok_or_else(|| bad(format!("\"{draft}\" is not a string")))?;
        parse_url(s).map_err(|e| bad(format!("\"{draft}\": {e}")))
    };
    let large = url("large_download_url", "large_https_download_url")?;
    let small = url("small_download_url", "small_https_download_url")?;
    let upload = url("upload_url", "https_upload_url")?;
    if !(large.host.eq_ignore_ascii_case(&small.host)
        && large.host.eq_ignore_ascii_case(&upload.host))
    {
        return Err(bad(format!(
            "the three URLs must name the same host (they name {}, {} and {})",
            large.host, small.host, upload.host
        )));
    }
    let test_endpoint = match top.once("test_endpoint")? {
        None => None,
        Some(serde_json::Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Some(v) => return Err(bad(format!("\"test_endpoint\" {v} is not a host name"))),
    };
    Ok(NqConfig {
        large,
        small,
        upload,
        test_endpoint,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sample document of the draft's appendix (Apache Traffic Server).
    const DRAFT: &str = r#"{
      "version": 1,
      "urls": {
        "large_download_url":"https://www.example.com/large",
        "small_download_url":"https://www.example.com/small",
        "upload_url":        "https://www.example.com/upload"
      },
      "test_endpoint": "nq-test-server.example.com"
    }"#;

    /// Apple's published nginx example (network-quality/server, nginx/root/config): both the
    /// draft's names and the older ones.
    const APPLE: &str = r#"{
      "version": 1,
      "urls": {
        "small_https_download_url": "https://networkquality.example.com:8443/files/small",
        "large_https_download_url": "https://networkquality.example.com:8443/files/large",
        "https_upload_url": "https://networkquality.example.com:8443/slurp",
        "small_download_url": "https://networkquality.example.com:8443/files/small",
        "large_download_url": "https://networkquality.example.com:8443/files/large",
        "upload_url": "https://networkquality.example.com:8443/slurp"
      }
    }"#;

    #[test]
    fn draft_and_apple_documents() {
        let c = parse_config(DRAFT.as_bytes()).unwrap();
        assert_eq!(c.large.host, "www.example.com");
        assert_eq!(c.large.port, 443);
        assert_eq!(c.small.path, "/small");
        assert_eq!(c.upload.path, "/upload");
        assert_eq!(
            c.test_endpoint.as_deref(),
            Some("nq-test-server.example.com")
        );
        let a = parse_config(APPLE.as_bytes()).unwrap();
        assert_eq!(a.upload.port, 8443);
        assert_eq!(a.upload.path, "/slurp");
        assert_eq!(a.large.authority(), "networkquality.example.com:8443");
        assert_eq!(a.test_endpoint, None);
        // Only the older names: still read.
        let old = r#"{"version":1,"urls":{"small_https_download_url":"https://h/s",
            "large_https_download_url":"https://h/l","https_upload_url":"https://h/u"}}"#;
        assert_eq!(parse_config(old.as_bytes()).unwrap().small.path, "/s");
    }

    #[test]
    fn the_drafts_rules_reject() {
        let cases: &[(&str, &str)] = &[
            (r#"{"urls":{}}"#, "no \"version\""),
            (r#"{"version":2,"urls":{}}"#, "version 2"),
            (r#"{"version":1}"#, "no \"urls\""),
            (r#"{"version":1,"version":1,"urls":{}}"#, "more than once"),
            (
                r#"{"version":1,"urls":{"large_download_url":"https://a/l",
                   "small_download_url":"https://a/s"}}"#,
                "no \"upload_url\"",
            ),
            (
                r#"{"version":1,"urls":{"large_download_url":"https://a/l",
                   "small_download_url":"https://b/s","upload_url":"https://a/u"}}"#,
                "same host",
            ),
            (
                r#"{"version":1,"urls":{"large_download_url":"https://a/l",
                   "large_download_url":"https://a/l",
                   "small_download_url":"https://a/s","upload_url":"https://a/u"}}"#,
                "more than once",
            ),
            (
                r#"{"version":1,"urls":{"large_download_url":"http://a/l",
                   "small_download_url":"http://a/s","upload_url":"http://a/u"}}"#,
                "plain http://",
            ),
            ("<html>not json</html>", "not a JSON object"),
            ("[1,2]", "not a JSON object"),
        ];
        for (doc, want) in cases {
            let e = parse_config(doc.as_bytes()).unwrap_err().0;
            assert!(e.contains(want), "{doc}: {e}");
        }
        // Unknown names are ignored.
        let extra = r#"{"version":1,"future":true,"urls":{"x":1,"large_download_url":"https://a/l",
            "small_download_url":"https://a/s","upload_url":"https://a/u"}}"#;
        assert!(parse_config(extra.as_bytes()).is_ok());
    }

    #[test]
    fn urls() {
        let u = parse_url("https://[::1]:8443/.well-known/nq").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("::1", 8443));
        assert_eq!(u.path, "/.well-known/nq");
        assert_eq!(u.authority(), "[::1]:8443");
        let u = parse_url("HTTPS://example.com").unwrap();
        assert_eq!((u.port, u.path.as_str()), (443, "/"));
        let u = parse_url("https://h:1/a?b=c#frag").unwrap();
        assert_eq!(u.path, "/a?b=c");
        for bad in [
            "ftp://h/",
            "h/x",
            "https:///x",
            "https://h:0/",
            "https://h:99999/",
            "https://[::1/",
            "https://u@h/",
        ] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
    }
}
