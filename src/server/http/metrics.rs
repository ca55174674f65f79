//! `GET /metrics`: this machine's counters and last results for Prometheus, in the format the
//! scraper's `Accept` asks for (OpenMetrics 1.0 or text 0.0.4). The server only routes and
//! negotiates; what is collected and how it is written is the [`Exposition`] the command line
//! composes (`monitor::metrics` collects, `report::export::prometheus` writes).

use super::{Exchange, Reply};
use crate::results::metrics::Format;
use crate::wire::http::{RequestHead, Response};

/// What `/metrics` serves: the whole exposition in `format`, or why there is none.
pub trait Exposition: Send + Sync {
    fn scrape(&self, format: Format) -> Result<Vec<u8>, String>;
}

/// The format the `Accept` field prefers: the highest `q` among OpenMetrics 1.0.0 and text
/// 0.0.4 (a type without a version means its current one; `*/*` and `text/*` mean text), the
/// first listed on a tie. Without an acceptable one, text: a scraper that names neither still
/// gets what every Prometheus parses (client_golang does the same).
pub fn negotiate(head: &RequestHead<'_>) -> Format {
    let mut best: Option<(f64, Format)> = None;
    for member in head.header_members("accept") {
        let mut parts = member.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let (mut q, mut version) = (1.0f64, None);
        for p in parts {
            let Some((k, v)) = p.split_once('=') else {
                continue;
            };
            match k.trim().to_ascii_lowercase().as_str() {
                "q" => q = v.trim().parse().unwrap_or(0.0),
                "version" => version = Some(v.trim().trim_matches('"').to_string()),
                _ => {}
            }
        }
        let format = match (media.as_str(), version.as_deref()) {
            ("application/openmetrics-text", None | Some("1.0.0")) => Format::OpenMetrics,
            ("text/plain", None | Some("0.0.4")) | ("text/*" | "*/*", _) => Format::Text,
            _ => continue,
        };
        let better = match best {
            None => true,
            Some((b, _)) => q > b,
        };
        if q > 0.0 && better {
            best = Some((q, format));
        }
    }
    best.map_or(Format::Text, |(_, f)| f)
}

/// The `/metrics` handler.
pub fn serve(x: &Exchange<'_>) -> Reply {
    let Some(source) = &x.http.metrics else {
        return Reply::Full(Response::text(
            404,
            "/metrics is served when the server runs with --monitor (routerbench server \
             --monitor, or `option metrics 1` in the OpenWrt package's config)",
        ));
    };
    let format = negotiate(x.head);
    Reply::Full(match source.scrape(format) {
        Ok(body) => Response::new(200, format.content_type(), body),
        Err(why) => Response::text(503, &format!("metrics unavailable: {why}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::http::{Limits, Parsed};

    fn format_for(accept: Option<&str>) -> Format {
        let req = match accept {
            Some(a) => format!("GET /metrics HTTP/1.1\r\nHost: r\r\nAccept: {a}\r\n\r\n"),
            None => "GET /metrics HTTP/1.1\r\nHost: r\r\n\r\n".to_string(),
        };
        match RequestHead::parse(req.as_bytes(), &Limits::default()) {
            Ok(Parsed::Head(h)) => negotiate(&h),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn accept_picks_the_format() {
        assert_eq!(format_for(None), Format::Text);
        // Prometheus 2.42's scrape Accept.
        assert_eq!(
            format_for(Some(
                "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
                 version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
            )),
            Format::OpenMetrics
        );
        // A scraper that prefers the text format (q) although it lists OpenMetrics.
        assert_eq!(
            format_for(Some(
                "text/plain;version=0.0.4;q=0.9,application/openmetrics-text;version=1.0.0;q=0.5"
            )),
            Format::Text
        );
        assert_eq!(
            format_for(Some("application/openmetrics-text")),
            Format::OpenMetrics
        );
        assert_eq!(
            format_for(Some("application/openmetrics-text; version=\"1.0.0\"")),
            Format::OpenMetrics
        );
        // A version we do not write is not chosen; nothing acceptable falls back to text.
        assert_eq!(
            format_for(Some("application/openmetrics-text;version=2.0.0")),
            Format::Text
        );
        assert_eq!(format_for(Some("application/json")), Format::Text);
        assert_eq!(
            format_for(Some("application/openmetrics-text;q=0, text/plain")),
            Format::Text
        );
        assert_eq!(format_for(Some("text/html, */*;q=0.8")), Format::Text);
    }
}
