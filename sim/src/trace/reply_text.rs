//! Replies as a person reads them, for the printed trace (`--trace`) and
//! the report: the segsim store's as its `kv` shell prints them, a kit
//! engine's in the same style, shortened. Only a trace that keeps every
//! event keeps them; the hash still folds the reply's hash (`hash.rs`).

use engine::store::Reply as StoreReply;

use crate::kit::client::Reply as KitReply;

/// The longest reply text kept, in characters.
pub const MAX_REPLY_CHARS: usize = 72;

/// Bytes as the `kv` shell shows them: a quoted, escaped string.
fn show(bytes: &[u8]) -> String {
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

/// A store command's result as the `kv` shell prints it, shortened.
pub fn store_reply<E: std::fmt::Display>(result: &Result<StoreReply, E>) -> String {
    let text = match result {
        Err(e) => format!("(error) {e}"),
        Ok(StoreReply::Ok) => "OK".into(),
        Ok(StoreReply::Nil) => "(nil)".into(),
        Ok(StoreReply::Int(n)) => format!("(integer) {n}"),
        Ok(StoreReply::Bulk(v)) => show(v),
        Ok(StoreReply::Pairs(pairs)) if pairs.is_empty() => "(empty hash)".into(),
        Ok(StoreReply::Pairs(pairs)) => {
            pairs.iter().map(|(f, v)| format!("{}={}", show(f), show(v))).collect::<Vec<_>>().join(" ")
        }
        Ok(StoreReply::Array(values)) => {
            values.iter().map(|v| v.as_deref().map_or_else(|| "(nil)".to_string(), show)).collect::<Vec<_>>().join(" ")
        }
    };
    shortened(text)
}

/// A kit engine's reply in the same style, shortened.
pub(crate) fn kit_reply<E: std::fmt::Display>(result: &Result<KitReply, E>) -> String {
    let text = match result {
        Err(e) => format!("(error) {e}"),
        Ok(KitReply::Done) => "OK".into(),
        Ok(KitReply::Busy) => "(busy: the writer holds its lock; the reader did not begin)".into(),
        Ok(KitReply::Value(None)) => "(nil)".into(),
        Ok(KitReply::Value(Some(v))) => show(v),
        Ok(KitReply::Rows(rows)) if rows.is_empty() => "(no rows)".into(),
        Ok(KitReply::Rows(rows)) => {
            let shown: Vec<String> = rows.iter().map(|(k, v)| format!("{}={}", show(k), show(v))).collect();
            format!("{} rows: {}", rows.len(), shown.join(" "))
        }
    };
    shortened(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_read_as_the_shell_prints_them_and_long_ones_are_cut() {
        let ok: Result<StoreReply, String> = Ok(StoreReply::Int(3));
        assert_eq!(store_reply(&ok), "(integer) 3");
        let pairs: Result<StoreReply, String> = Ok(StoreReply::Pairs(vec![(b"f".to_vec(), b"v".to_vec())]));
        assert_eq!(store_reply(&pairs), r#""f"="v""#);
        let long: Result<StoreReply, String> = Ok(StoreReply::Bulk(vec![b'x'; 200]));
        let text = store_reply(&long);
        assert!(text.ends_with("… (130 more chars)"), "{text}");
        let err: Result<KitReply, String> = Err("boom".into());
        assert_eq!(kit_reply(&err), "(error) boom");
    }
}
