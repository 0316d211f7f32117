//! A kit engine's reply as a person reads it, for the printed trace and
//! the report: the segsim shell's style (the simulator's `reply_text`
//! pieces), shortened.

use super::client::Reply as KitReply;
use simulator::trace::reply_text::{shortened, show};

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
    fn an_error_reads_as_the_shell_prints_one_and_rows_are_counted() {
        let err: Result<KitReply, String> = Err("boom".into());
        assert_eq!(kit_reply(&err), "(error) boom");
        let rows: Result<KitReply, String> = Ok(KitReply::Rows([(b"k".to_vec(), b"v".to_vec())].into_iter().collect()));
        assert_eq!(kit_reply(&rows), r#"1 rows: "k"="v""#);
    }
}
