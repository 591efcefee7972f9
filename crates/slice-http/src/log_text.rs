//! A client's text as the log may show it. The access log, the OpenID Connect login's
//! answers and log lines, and the proxy's headers all meet text the client chose; one rule
//! says what of it the log cannot show as itself, so that no such text can start a line,
//! hide part of one, or fill the log. A leaf: it knows nothing of the rest of the crate.

/// Whether the log cannot show `c` as itself: a control character, whitespace other than
/// the space (among it the line and paragraph separators, which some viewers break lines
/// at), or a character that is invisible or turns the text around it (zero-width marks,
/// bidirectional overrides), with which a line can read as another.
pub(crate) fn hidden(c: char) -> bool {
    c.is_control()
        || (c.is_whitespace() && c != ' ')
        || matches!(
            c,
            '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}'
        )
}

/// At most `cap` characters of `text`, each [`hidden`] one escaped as Rust escapes it
/// (`\n`, `\u{2028}`), then `...` if `text` was longer. For a line made of text that may
/// quote a client's (with [`quoted`]), which it does not escape twice.
pub(crate) fn escaped(text: &str, cap: usize) -> String {
    let mut shown = String::new();
    if push_escaped(&mut shown, text, cap, Quotes::Kept) {
        shown.push_str("...");
    }
    shown
}

/// [`escaped`] with quotes and backslashes escaped too, for a field the log puts between
/// quotes (the access log's request line): the text cannot close it or pass its own
/// `\n` for an escaped line break.
pub(crate) fn escaped_in_quotes(text: &str, cap: usize) -> String {
    let mut shown = String::new();
    if push_escaped(&mut shown, text, cap, Quotes::Escaped) {
        shown.push_str("...");
    }
    shown
}

/// [`escaped_in_quotes`] between double quotes, the `...` of a longer text after the
/// closing one, as an answer or a log line quotes what a client sent.
pub(crate) fn quoted(text: &str, cap: usize) -> String {
    let mut shown = String::from('"');
    let cut = push_escaped(&mut shown, text, cap, Quotes::Escaped);
    shown.push('"');
    if cut {
        shown.push_str("...");
    }
    shown
}

#[derive(Clone, Copy, PartialEq)]
enum Quotes {
    Kept,
    Escaped,
}

/// Appends the escaped first `cap` characters of `text` to `shown`; whether any were left.
fn push_escaped(shown: &mut String, text: &str, cap: usize, quotes: Quotes) -> bool {
    let mut chars = text.chars();
    for c in chars.by_ref().take(cap) {
        if hidden(c) {
            shown.extend(c.escape_default());
        } else if quotes == Quotes::Escaped && matches!(c, '"' | '\\') {
            shown.push('\\');
            shown.push(c);
        } else {
            shown.push(c);
        }
    }
    chars.next().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_could_break_or_forge_a_line_is_escaped_and_the_rest_kept() {
        let text = "a\nb\r\u{1b}[2J \"q\" \\n \u{2028}é\u{202e}";
        assert_eq!(
            escaped_in_quotes(text, 100),
            r#"a\nb\r\u{1b}[2J \"q\" \\n \u{2028}é\u{202e}"#
        );
        // A line that quotes a client's text keeps the quotes and escapes it once.
        assert_eq!(
            escaped(text, 100),
            r#"a\nb\r\u{1b}[2J "q" \n \u{2028}é\u{202e}"#
        );
        assert_eq!(quoted("access_denied", 200), r#""access_denied""#);
        assert_eq!(quoted("say \"hi\"\n", 200), r#""say \"hi\"\n""#);
    }

    #[test]
    fn the_cap_counts_characters_and_a_cut_says_so() {
        assert_eq!(escaped("abc", 3), "abc");
        assert_eq!(escaped("abcd", 3), "abc...");
        assert_eq!(escaped(&"é".repeat(10), 2), "éé...");
        assert_eq!(quoted("abcd", 3), r#""abc"..."#);
        assert_eq!(escaped("\n\n\n", 2), r"\n\n...");
    }

    #[test]
    fn only_the_space_is_plain_whitespace() {
        for c in ['\t', '\u{a0}', '\u{2029}', '\u{85}', '\u{200b}', '\u{feff}'] {
            assert!(hidden(c), "{c:?}");
        }
        for c in [' ', 'a', 'é', '"', '\\'] {
            assert!(!hidden(c), "{c:?}");
        }
    }
}
