//! A segsim store reply as its `kv` shell prints it, for the printed
//! trace and the report (the pieces are the simulator's `reply_text`).

use engine::store::Reply as StoreReply;

use simulator::trace::reply_text::{shortened, show};

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
    }
}
