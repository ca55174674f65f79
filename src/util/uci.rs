//! A small parser for OpenWrt's UCI files (`/etc/config/NAME`): `config TYPE ['NAME']` starts a
//! section, `option KEY 'VALUE'` and `list KEY 'VALUE'` fill it; values may be bare, single- or
//! double-quoted; `#` starts a comment. Enough for routerbench's own config, which the server
//! reads with `--config`, so the shipped defaults are parsed by the code the service runs.

use std::fmt;

/// One `config` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub kind: String,
    /// The name after the type, if given (`config routerbench 'server'`).
    pub name: Option<String>,
    /// `option` and `list` entries in file order: (key, value, line number).
    pub entries: Vec<Entry>,
}

/// An `option` or `list` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub key: String,
    pub value: String,
    pub is_list: bool,
    pub line: usize,
}

/// A syntax error, with the 1-based line number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UciError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for UciError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for UciError {}

/// The longest file accepted: UCI files are a few hundred bytes.
pub const MAX_BYTES: usize = 1 << 20;

/// Parses a whole file.
pub fn parse(text: &str) -> Result<Vec<Section>, UciError> {
    if text.len() > MAX_BYTES {
        return Err(UciError {
            line: 0,
            message: format!("larger than {MAX_BYTES} bytes: not a UCI file"),
        });
    }
    let mut sections: Vec<Section> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let err = |message: String| UciError { line, message };
        let words = split_words(raw).map_err(err)?;
        let Some(first) = words.first() else {
            continue;
        };
        match first.as_str() {
            "config" => {
                let (Some(kind), name) = (words.get(1), words.get(2)) else {
                    return Err(err("`config` needs a section type".into()));
                };
                if words.len() > 3 {
                    return Err(err("`config TYPE 'NAME'` takes at most two words".into()));
                }
                check_identifier(kind).map_err(err)?;
                sections.push(Section {
                    kind: kind.clone(),
                    name: name.cloned(),
                    entries: Vec::new(),
                });
            }
            "option" | "list" => {
                let (Some(key), Some(value)) = (words.get(1), words.get(2)) else {
                    return Err(err(format!("`{first}` needs a key and a value")));
                };
                if words.len() > 3 {
                    return Err(err(format!(
                        "`{first} {key}` has more than one value: quote values with spaces"
                    )));
                }
                check_identifier(key).map_err(err)?;
                let Some(section) = sections.last_mut() else {
                    return Err(err(format!("`{first}` before any `config` line")));
                };
                section.entries.push(Entry {
                    key: key.clone(),
                    value: value.clone(),
                    is_list: first == "list",
                    line,
                });
            }
            "package" => {}
            other => {
                return Err(err(format!(
                    "unknown keyword `{other}` (expected config, option or list)"
                )));
            }
        }
    }
    Ok(sections)
}

fn check_identifier(word: &str) -> Result<(), String> {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        Ok(())
    } else {
        Err(format!(
            "`{word}` is not a valid UCI name (letters, digits, _ and -)"
        ))
    }
}

/// Splits a line into words: bare, '…' or "…" (backslash escapes in double quotes), `#` to the
/// end of the line is a comment outside quotes.
fn split_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let Some(&c) = chars.peek() else {
            return Ok(words);
        };
        if c == '#' {
            return Ok(words);
        }
        let mut word = String::new();
        // A word may join quoted and bare parts (`a'b c'` is one word), as the shell does.
        while let Some(&c) = chars.peek() {
            match c {
                '\'' => {
                    chars.next();
                    loop {
                        match chars.next() {
                            Some('\'') => break,
                            Some(ch) => word.push(ch),
                            None => return Err("unterminated single quote".into()),
                        }
                    }
                }
                '"' => {
                    chars.next();
                    loop {
                        match chars.next() {
                            Some('"') => break,
                            Some('\\') => match chars.next() {
                                Some(ch) => word.push(ch),
                                None => return Err("unterminated double quote".into()),
                            },
                            Some(ch) => word.push(ch),
                            None => return Err("unterminated double quote".into()),
                        }
                    }
                }
                c if c.is_whitespace() => break,
                _ => {
                    word.push(c);
                    chars.next();
                }
            }
        }
        words.push(word);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sections_options_lists_and_quotes() {
        let text = "\n# comment\nconfig routerbench 'server'\n\toption port '5201'\n\
                    \toption bind \"\"\n  option note \"say \\\"hi\\\"\" # trailing\n\
                    \tlist allow 10.0.0.0/8\nconfig other\n\toption x y\n";
        let s = parse(text).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].kind, "routerbench");
        assert_eq!(s[0].name.as_deref(), Some("server"));
        let e = &s[0].entries;
        assert_eq!(
            (e[0].key.as_str(), e[0].value.as_str(), e[0].line),
            ("port", "5201", 4)
        );
        assert_eq!(e[1].value, "");
        assert_eq!(e[2].value, "say \"hi\"");
        assert!(e[3].is_list);
        assert_eq!(e[3].value, "10.0.0.0/8");
        assert_eq!(s[1].name, None);
    }

    #[test]
    fn errors_name_the_line_and_the_cause() {
        let cases = [
            ("option port 1\n", 1, "before any `config`"),
            ("config a\n option port '1\n", 2, "unterminated"),
            ("config a\n option port 1 2\n", 2, "more than one value"),
            ("config a\n frob x y\n", 2, "unknown keyword"),
            ("config\n", 1, "needs a section type"),
            ("config a\n option 'p q' 1\n", 2, "not a valid UCI name"),
        ];
        for (text, line, what) in cases {
            let e = parse(text).unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.to_string().contains(what), "{text:?}: {e}");
        }
    }
}
