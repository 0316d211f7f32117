//! Replies as a person reads them, for the printed trace (`--trace`) and
//! the report: the pieces every target's reply text is made of (each
//! target writes its own replies with them: segsim's store as its `kv`
//! shell prints them, the kit's in the same style), shortened. Only a
//! trace that keeps every event keeps them; the hash still folds the
//! reply's hash (`hash.rs`).

/// The longest reply text kept, in characters.
pub const MAX_REPLY_CHARS: usize = 72;

/// Bytes as the `kv` shell shows them: a quoted, escaped string.
pub fn show(bytes: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(bytes))
}

/// `text` cut to [`MAX_REPLY_CHARS`], with how much was cut.
pub fn shortened(text: String) -> String {
    let total = text.chars().count();
    if total <= MAX_REPLY_CHARS {
        return text;
    }
    let kept: String = text.chars().take(MAX_REPLY_CHARS).collect();
    format!("{kept}… ({} more chars)", total - MAX_REPLY_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_show_quoted_and_long_text_is_cut_saying_how_much() {
        assert_eq!(show(b"a\"b"), r#""a\"b""#);
        assert_eq!(shortened("short".into()), "short");
        let text = shortened("x".repeat(200));
        assert!(text.ends_with("… (128 more chars)"), "{text}");
        assert_eq!(text.chars().count(), MAX_REPLY_CHARS + "… (128 more chars)".chars().count());
    }
}
