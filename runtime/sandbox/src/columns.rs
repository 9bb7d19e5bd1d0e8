//! Column mappings: a data row (a JSONL line's keys, a Parquet row's columns) read under the
//! field names of its record kind, as a dataset's `columns = { field = "column" }` says. Both
//! `wrlc run`'s readers and the verl lowering read rows through it.

use std::collections::BTreeMap;

use serde_json::{Map, Value as Json};

/// A row read through a column mapping: each of `fields`, from its mapped column or the column
/// of its own name; the row's other columns are not read. A mapped column the row lacks is an
/// error that lists the columns it has (sorted, the first 20).
pub fn select(
    row: &Map<String, Json>,
    fields: &[&str],
    columns: &BTreeMap<String, String>,
) -> Result<Map<String, Json>, String> {
    let mut out = Map::new();
    for field in fields {
        let column = columns.get(*field).map_or(*field, String::as_str);
        match row.get(column) {
            Some(v) => {
                out.insert((*field).to_string(), v.clone());
            }
            None if columns.contains_key(*field) => {
                let mut have: Vec<&String> = row.keys().collect();
                have.sort();
                let listed: Vec<String> = have.iter().take(20).map(|c| format!("`{c}`")).collect();
                let more = match have.len() {
                    n if n > 20 => format!(" and {} more", n - 20),
                    _ => String::new(),
                };
                let has = if listed.is_empty() { "no columns".into() } else { listed.join(", ") };
                return Err(format!(
                    "no column `{column}`, which `columns` reads as `{field}` (the row has \
                     {has}{more})"
                ));
            }
            None => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_come_from_their_columns_and_the_rest_is_not_read() {
        let row: Map<String, Json> =
            serde_json::from_str(r#"{"q": "x", "answer": "y", "level": 3, "id": "a"}"#).unwrap();
        let cols = BTreeMap::from([("question".to_string(), "q".to_string())]);
        let out = select(&row, &["id", "question", "answer"], &cols).unwrap();
        assert_eq!(
            serde_json::to_string(&out).unwrap(),
            r#"{"answer":"y","id":"a","question":"x"}"#
        );
        let cols = BTreeMap::from([("question".to_string(), "prompt".to_string())]);
        let err = select(&row, &["id", "question", "answer"], &cols).unwrap_err();
        assert_eq!(
            err,
            "no column `prompt`, which `columns` reads as `question` (the row has `answer`, `id`, \
             `level`, `q`)"
        );
    }
}
