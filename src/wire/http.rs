//! HTTP/1.1 as the server's port speaks it (RFC 9112): a bounded request parser and a small
//! response writer, byte formats only (the connection handling is `server::http`).
//!
//! The parser takes the bytes received so far and answers "incomplete", a request head (request
//! line and header fields, with where the head ended and how long the body is), or an error
//! with the status to answer. Every bound is checked before anything is stored: request-line
//! length, field-line length, field count, head size, body size. What the server does not
//! implement is refused rather than guessed at: `Transfer-Encoding` (chunked uploads, 501),
//! obsolete line folding, whitespace before a field's colon and conflicting `Content-Length`s
//! (request smuggling vectors, RFC 9112 §5.1, §6.3), HTTP versions other than 1.0 and 1.1
//! (505). A recipient may accept a bare LF as a line end (RFC 9112 §2.2); this one does.
//!
//! The writer always frames its bodies with `Content-Length` and says `Cache-Control: no-store`
//! (every answer of a measuring server is of the moment) and whether the connection stays open.

use std::borrow::Cow;

/// How big a request may be; over a bound the request is refused with the status of
/// [`HttpError::status`] and the connection closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The request line (method, target, version), without its line end.
    pub max_request_line: usize,
    /// One field line (`Name: value`), without its line end.
    pub max_field_line: usize,
    /// Header fields in one request.
    pub max_fields: usize,
    /// The whole head: request line, fields and the empty line.
    pub max_head: usize,
    /// A body the server reads into memory (`Content-Length`).
    pub max_body: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_request_line: 4096,
            max_field_line: 4096,
            max_fields: 64,
            max_head: 16 * 1024,
            max_body: 64 * 1024,
        }
    }
}

/// Request methods the server recognises; any other token is [`Method::Other`] (405, not 400:
/// it is a well-formed request for a method this server does not allow).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    Post,
    Put,
    Delete,
    Options,
    Patch,
    Connect,
    Trace,
    Other,
}

impl Method {
    fn from_token(t: &[u8]) -> Method {
        match t {
            b"GET" => Method::Get,
            b"HEAD" => Method::Head,
            b"POST" => Method::Post,
            b"PUT" => Method::Put,
            b"DELETE" => Method::Delete,
            b"OPTIONS" => Method::Options,
            b"PATCH" => Method::Patch,
            b"CONNECT" => Method::Connect,
            b"TRACE" => Method::Trace,
            _ => Method::Other,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Delete => "DELETE",
            Method::Options => "OPTIONS",
            Method::Patch => "PATCH",
            Method::Connect => "CONNECT",
            Method::Trace => "TRACE",
            Method::Other => "other",
        }
    }
}

/// Whether a connection's first byte can start an HTTP request: every method is an upper-case
/// token, and neither an iperf3 cookie (`[a-z2-7]`) nor the routerbench magic (0xFF) starts
/// with an upper-case letter, so one byte tells them apart.
pub fn starts_request(first_byte: u8) -> bool {
    first_byte.is_ascii_uppercase()
}

/// The HTTP versions served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    Http10,
    Http11,
}

/// Why a request was refused; each maps to the status answered before the close.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    #[error("request line longer than {0} bytes")]
    RequestLineTooLong(usize),
    #[error("header field longer than {0} bytes")]
    FieldTooLong(usize),
    #[error("more than {0} header fields")]
    TooManyFields(usize),
    #[error("request head longer than {0} bytes")]
    HeadTooLarge(usize),
    #[error("body of {got} bytes is over the {max}-byte limit")]
    BodyTooLarge { got: u64, max: usize },
    #[error("malformed request line")]
    BadRequestLine,
    #[error("malformed request target (origin form `/path?query` expected)")]
    BadTarget,
    #[error("malformed header field")]
    BadField,
    #[error("obsolete line folding in a header field")]
    ObsFold,
    #[error("malformed or conflicting Content-Length")]
    BadContentLength,
    #[error("HTTP/1.1 request without a Host field")]
    NoHost,
    #[error("Transfer-Encoding is not supported (send a Content-Length)")]
    TransferEncoding,
    #[error("HTTP version not supported (1.0 and 1.1 are)")]
    Version,
}

impl HttpError {
    /// The status code answered for this error.
    pub fn status(&self) -> u16 {
        match self {
            HttpError::RequestLineTooLong(_) => 414,
            HttpError::FieldTooLong(_)
            | HttpError::TooManyFields(_)
            | HttpError::HeadTooLarge(_) => 431,
            HttpError::BodyTooLarge { .. } => 413,
            HttpError::TransferEncoding => 501,
            HttpError::Version => 505,
            _ => 400,
        }
    }
}

/// A parsed request head, borrowing the received bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead<'a> {
    pub method: Method,
    /// The method as sent (for a 405's log line).
    pub method_token: &'a str,
    /// The target's path (before `?`), not percent-decoded.
    pub path: &'a str,
    /// The target's query (after `?`, without it), if any.
    pub query: Option<&'a str>,
    pub version: Version,
    /// Fields in order, names as sent (compare with [`RequestHead::header`]).
    pub fields: Vec<(&'a str, &'a str)>,
    /// The body's length from `Content-Length` (0 without one).
    pub content_length: u64,
    /// Bytes of the head, up to and including the empty line: the body starts here.
    pub head_len: usize,
}

/// What [`RequestHead::parse`] found in the bytes received so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// More bytes are needed (and the bytes so far are within the limits).
    Incomplete,
    Head(RequestHead<'a>),
}

/// `tchar` of RFC 9110 §5.6.2: the characters of a method or field name.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The next line of `buf` from `start`: its end (without CR) and where the following line
/// starts, or `None` if no LF has arrived yet.
fn line_at(buf: &[u8], start: usize) -> Option<(usize, usize)> {
    let lf = buf[start..].iter().position(|&b| b == b'\n')? + start;
    let end = if lf > start && buf[lf - 1] == b'\r' {
        lf - 1
    } else {
        lf
    };
    Some((end, lf + 1))
}

/// The longest method token accepted (the registered ones are at most 17 letters long; ours
/// at most 7).
pub const MAX_METHOD: usize = 16;

/// Checks a request line that has not ended yet, so that bytes which cannot become a request
/// (random garbage, another protocol) are refused when they arrive, not at the deadline: a
/// method of tchars, a target of visible characters, a version that is a prefix of `HTTP/d.d`.
fn check_partial_request_line(line: &[u8]) -> Result<(), HttpError> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut parts = line.splitn(3, |&b| b == b' ');
    let method = parts.next().unwrap_or_default();
    if method.len() > MAX_METHOD || !method.iter().all(|&b| is_tchar(b)) {
        return Err(HttpError::BadRequestLine);
    }
    if let Some(target) = parts.next() {
        if !target.iter().all(|&b| b.is_ascii_graphic() && b != b'#') {
            return Err(HttpError::BadTarget);
        }
    }
    if let Some(version) = parts.next() {
        let pattern = b"HTTP/d.d";
        let ok = version.len() <= pattern.len()
            && version.iter().zip(pattern).all(|(&b, &p)| match p {
                b'd' => b.is_ascii_digit(),
                p => b == p,
            });
        if !ok {
            return Err(HttpError::BadRequestLine);
        }
    }
    Ok(())
}

fn parse_request_line(
    line: &[u8],
) -> Result<(Method, &str, &str, Option<&str>, Version), HttpError> {
    let text = std::str::from_utf8(line).map_err(|_| HttpError::BadRequestLine)?;
    let mut parts = text.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(HttpError::BadRequestLine);
    };
    if method.is_empty() || method.len() > MAX_METHOD || !method.bytes().all(is_tchar) {
        return Err(HttpError::BadRequestLine);
    }
    let version = match version {
        "HTTP/1.1" => Version::Http11,
        "HTTP/1.0" => Version::Http10,
        v if v.len() == 8 && v.starts_with("HTTP/") => return Err(HttpError::Version),
        _ => return Err(HttpError::BadRequestLine),
    };
    // Origin form (RFC 9112 §3.2.1); absolute form is reduced to its path, `*` (OPTIONS) kept.
    let target = if let Some(rest) = target
        .strip_prefix("http://")
        .or_else(|| target.strip_prefix("https://"))
    {
        match rest.find('/') {
            Some(i) => &rest[i..],
            None => "/",
        }
    } else {
        target
    };
    if target == "*" {
        return Ok((
            Method::from_token(method.as_bytes()),
            method,
            target,
            None,
            version,
        ));
    }
    if !target.starts_with('/') || !target.bytes().all(|b| b.is_ascii_graphic() && b != b'#') {
        return Err(HttpError::BadTarget);
    }
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (target, None),
    };
    Ok((
        Method::from_token(method.as_bytes()),
        method,
        path,
        query,
        version,
    ))
}

fn parse_field(line: &[u8]) -> Result<(&str, &str), HttpError> {
    if line.first().is_some_and(|&b| b == b' ' || b == b'\t') {
        return Err(HttpError::ObsFold);
    }
    let colon = line
        .iter()
        .position(|&b| b == b':')
        .ok_or(HttpError::BadField)?;
    let name = &line[..colon];
    if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) {
        return Err(HttpError::BadField);
    }
    let value = &line[colon + 1..];
    // Field values: visible characters, blanks and obs-text; never NUL, CR or LF.
    if value.iter().any(|&b| b == 0 || b == b'\r' || b == b'\n') {
        return Err(HttpError::BadField);
    }
    let name = std::str::from_utf8(name).map_err(|_| HttpError::BadField)?;
    // Non-UTF-8 values (obs-text) are not needed by any route: refuse rather than carry bytes.
    let value = std::str::from_utf8(value).map_err(|_| HttpError::BadField)?;
    Ok((name, value.trim_matches(|c| c == ' ' || c == '\t')))
}

impl<'a> RequestHead<'a> {
    /// Parses a request head from the bytes received so far (a connection's buffer; a
    /// pipelined request's bytes after the head are left for the next call).
    pub fn parse(buf: &'a [u8], limits: &Limits) -> Result<Parsed<'a>, HttpError> {
        // RFC 9112 §2.2: ignore at least one empty line before the request line.
        let mut start = 0;
        while buf[start..].starts_with(b"\r\n") {
            start += 2;
        }
        while buf[start..].starts_with(b"\n") {
            start += 1;
        }
        let Some((end, next)) = line_at(buf, start) else {
            return if buf.len() - start > limits.max_request_line {
                Err(HttpError::RequestLineTooLong(limits.max_request_line))
            } else {
                check_partial_request_line(&buf[start..]).map(|()| Parsed::Incomplete)
            };
        };
        if end - start > limits.max_request_line {
            return Err(HttpError::RequestLineTooLong(limits.max_request_line));
        }
        let (method, method_token, path, query, version) = parse_request_line(&buf[start..end])?;
        let mut fields = Vec::new();
        let mut at = next;
        loop {
            if at > limits.max_head {
                return Err(HttpError::HeadTooLarge(limits.max_head));
            }
            let Some((end, next)) = line_at(buf, at) else {
                if buf.len() - at > limits.max_field_line {
                    return Err(HttpError::FieldTooLong(limits.max_field_line));
                }
                if buf.len() > limits.max_head {
                    return Err(HttpError::HeadTooLarge(limits.max_head));
                }
                return Ok(Parsed::Incomplete);
            };
            if end == at {
                at = next;
                break;
            }
            if end - at > limits.max_field_line {
                return Err(HttpError::FieldTooLong(limits.max_field_line));
            }
            if fields.len() == limits.max_fields {
                return Err(HttpError::TooManyFields(limits.max_fields));
            }
            fields.push(parse_field(&buf[at..end])?);
            at = next;
        }
        if at > limits.max_head {
            return Err(HttpError::HeadTooLarge(limits.max_head));
        }
        let mut head = RequestHead {
            method,
            method_token,
            path,
            query,
            version,
            fields,
            content_length: 0,
            head_len: at,
        };
        if head.header("transfer-encoding").is_some() {
            return Err(HttpError::TransferEncoding);
        }
        head.content_length = head.body_length()?;
        if head.content_length > limits.max_body as u64 {
            return Err(HttpError::BodyTooLarge {
                got: head.content_length,
                max: limits.max_body,
            });
        }
        if version == Version::Http11 && head.header("host").is_none() {
            return Err(HttpError::NoHost);
        }
        Ok(Parsed::Head(head))
    }

    /// Every `Content-Length` field (and each comma-separated member) must be the same number.
    fn body_length(&self) -> Result<u64, HttpError> {
        let mut length = None;
        for (name, value) in &self.fields {
            if !name.eq_ignore_ascii_case("content-length") {
                continue;
            }
            for member in value.split(',') {
                let m = member.trim_matches(|c| c == ' ' || c == '\t');
                if m.is_empty() || m.len() > 19 || !m.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(HttpError::BadContentLength);
                }
                let n: u64 = m.parse().map_err(|_| HttpError::BadContentLength)?;
                if length.is_some_and(|l| l != n) {
                    return Err(HttpError::BadContentLength);
                }
                length = Some(n);
            }
        }
        Ok(length.unwrap_or(0))
    }

    /// The first field named `name` (ASCII case-insensitive, as field names are).
    pub fn header(&self, name: &str) -> Option<&'a str> {
        self.fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| *v)
    }

    /// Every value of the fields named `name`, comma-separated members split out (`Accept`,
    /// `Connection`).
    pub fn header_members<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'a str> + 's {
        self.fields
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .flat_map(|(_, v)| v.split(','))
            .map(|m| m.trim_matches(|c| c == ' ' || c == '\t'))
            .filter(|m| !m.is_empty())
    }

    /// Whether the client wants the connection kept open after this exchange: HTTP/1.1 unless
    /// `Connection: close`, HTTP/1.0 only with `Connection: keep-alive`.
    pub fn keep_alive(&self) -> bool {
        let has = |opt: &str| {
            self.header_members("connection")
                .any(|m| m.eq_ignore_ascii_case(opt))
        };
        match self.version {
            Version::Http11 => !has("close"),
            Version::Http10 => has("keep-alive"),
        }
    }

    /// The query parameter `name`, percent-decoded (`+` is a space), the first if repeated.
    pub fn query_param(&self, name: &str) -> Option<Cow<'a, str>> {
        query_pairs(self.query?)
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
    }

    /// The `Authorization: Bearer` token, if one was sent.
    pub fn bearer_token(&self) -> Option<&'a str> {
        let v = self.header("authorization")?;
        let (scheme, token) = v.split_once(' ')?;
        scheme
            .eq_ignore_ascii_case("bearer")
            .then(|| token.trim_matches(' '))
    }
}

/// The `key=value` pairs of a query string, percent-decoded.
pub fn query_pairs(query: &str) -> impl Iterator<Item = (Cow<'_, str>, Cow<'_, str>)> {
    query.split('&').filter(|p| !p.is_empty()).map(|p| {
        let (k, v) = p.split_once('=').unwrap_or((p, ""));
        (percent_decode(k), percent_decode(v))
    })
}

/// Decodes `%XX` and `+`; a malformed escape stays as it was, invalid UTF-8 becomes U+FFFD.
pub fn percent_decode(s: &str) -> Cow<'_, str> {
    if !s.bytes().any(|b| b == b'%' || b == b'+') {
        return Cow::Borrowed(s);
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |x: u8| (x as char).to_digit(16);
        match b[i] {
            b'+' => out.push(b' '),
            b'%' => match (
                b.get(i + 1).and_then(|&x| hex(x)),
                b.get(i + 2).and_then(|&x| hex(x)),
            ) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            x => out.push(x),
        }
        i += 1;
    }
    Cow::Owned(String::from_utf8_lossy(&out).into_owned())
}

/// The reason phrase of the statuses this server sends.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        413 => "Content Too Large",
        414 => "URI Too Long",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}

/// A response with its whole body in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// Fields besides the ones [`Response::emit_head`] writes itself (`Content-Length`,
    /// `Cache-Control`, `Connection`).
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Response {
            status,
            headers: vec![("Content-Type", content_type.to_string())],
            body: body.into(),
        }
    }

    /// A plain-text answer (errors: one line saying what was wrong and what to do).
    pub fn text(status: u16, text: &str) -> Self {
        let mut body = text.as_bytes().to_vec();
        if !body.ends_with(b"\n") {
            body.push(b'\n');
        }
        Response::new(status, "text/plain; charset=utf-8", body)
    }

    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// The status line and fields for a body of `content_length` bytes, and whether the
    /// connection stays open (`keep_alive`) after it.
    pub fn emit_head(&self, content_length: u64, keep_alive: bool, out: &mut Vec<u8>) {
        out.extend_from_slice(
            format!("HTTP/1.1 {} {}\r\n", self.status, reason(self.status)).as_bytes(),
        );
        for (name, value) in &self.headers {
            // A value never carries a line end (it would start a field of its own).
            let clean: String = value.chars().filter(|c| *c != '\r' && *c != '\n').collect();
            out.extend_from_slice(format!("{name}: {clean}\r\n").as_bytes());
        }
        out.extend_from_slice(format!("Content-Length: {content_length}\r\n").as_bytes());
        out.extend_from_slice(b"Cache-Control: no-store\r\n");
        out.extend_from_slice(if keep_alive {
            b"Connection: keep-alive\r\n\r\n".as_slice()
        } else {
            b"Connection: close\r\n\r\n".as_slice()
        });
    }

    /// The whole response; `head_only` for an answer to HEAD (the length of the body that a
    /// GET would get, no body).
    pub fn emit(&self, keep_alive: bool, head_only: bool) -> Vec<u8> {
        let mut out = Vec::with_capacity(256 + self.body.len());
        self.emit_head(self.body.len() as u64, keep_alive, &mut out);
        if !head_only {
            out.extend_from_slice(&self.body);
        }
        out
    }
}

#[cfg(test)]
mod tests;
