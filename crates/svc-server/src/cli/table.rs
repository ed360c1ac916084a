//! Plain-text tables of `svc admin list|get|explain`: a header row, columns padded to their
//! widest cell, two spaces apart; `-` for a missing value. Cells are single-line.

use serde_json::Value;

/// The value at a dotted path (`meta.eventId`), as a cell: strings as they are, `-` for null or
/// missing, other values as compact JSON.
pub fn cell(v: &Value, path: &str) -> String {
    let mut cur = v;
    for part in path.split('.') {
        match cur.get(part) {
            Some(next) => cur = next,
            None => return "-".into(),
        }
    }
    text(cur)
}

/// A value as a cell.
pub fn text(v: &Value) -> String {
    let s = match v {
        Value::Null => return "-".into(),
        Value::String(s) if s.is_empty() => return "-".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    s.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

/// The table's text, each line ending with a newline; no trailing spaces.
pub fn render(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let header: Vec<String> = headers.iter().map(|h| h.to_uppercase()).collect();
    for row in std::iter::once(&header).chain(rows) {
        let mut line = String::new();
        for (i, (c, w)) in row.iter().zip(&widths).enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            line.push_str(c);
            line.extend(std::iter::repeat_n(' ', w - c.chars().count()));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn columns_are_aligned_and_missing_values_are_dashes() {
        let v = json!({"meta": {"eventId": "e1"}, "name": "ä-b", "n": 3, "s": ""});
        assert_eq!(cell(&v, "meta.eventId"), "e1");
        assert_eq!(cell(&v, "meta.nothing"), "-");
        assert_eq!(cell(&v, "s"), "-");
        assert_eq!(cell(&v, "n"), "3");
        let t = render(
            &["name", "n"],
            &[vec![cell(&v, "name"), "1".into()], vec!["long name".into(), "-".into()]],
        );
        assert_eq!(t, "NAME       N\nä-b        1\nlong name  -\n");
    }
}
