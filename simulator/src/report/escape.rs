//! Escaping: every piece of text put into the page passes through here.

/// `text` safe inside HTML and SVG text and inside double-quoted
/// attributes: `& < > " '` escaped, other control characters dropped.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::esc;

    #[test]
    fn markup_and_quotes_are_escaped() {
        assert_eq!(esc("<script>a&b\"c'</script>"), "&lt;script&gt;a&amp;b&quot;c&#39;&lt;/script&gt;");
        assert_eq!(esc("plain\nline\u{7}"), "plain\nline");
    }
}
