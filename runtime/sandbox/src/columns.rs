//! Column mappings: a data row (a JSONL line's keys, a Parquet row's columns) read under the
//! field names of its record kind, as a dataset's `columns = { field = "column" }` says — a
//! column by its name or, in verl-style data, by a path into nested columns
//! (`reward_model.ground_truth`, `prompt[0].content`). Both `wrlc run`'s readers and the verl
//! lowering read rows through it.

use std::collections::BTreeMap;

use serde_json::{Map, Value as Json};

/// A row read through a column mapping: each of `fields`, from its mapped column or the column
/// of its own name; the row's other columns are not read. A mapped column is the row's key of
/// that name where there is one (a flat Parquet column may have a dot in its name), else a path:
/// names joined by `.`, each with list indices `[N]` after it. A mapped column the row lacks is
/// an error that lists the keys it has where the path stopped (sorted, the first 20).
pub fn select(
    row: &Map<String, Json>,
    fields: &[&str],
    columns: &BTreeMap<String, String>,
) -> Result<Map<String, Json>, String> {
    let mut out = Map::new();
    for field in fields {
        let Some(column) = columns.get(*field) else {
            if let Some(v) = row.get(*field) {
                out.insert((*field).to_string(), v.clone());
            }
            continue;
        };
        let value = match row.get(column.as_str()) {
            Some(v) => v,
            None => lookup(row, column).map_err(|why| {
                format!("no column `{column}`, which `columns` reads as `{field}` ({why})")
            })?,
        };
        out.insert((*field).to_string(), value.clone());
    }
    Ok(out)
}

/// The value of one column of a row: the row's key of that name where there is one, else a
/// path into nested columns (as [`select`] reads a mapped column); why not, naming the keys the
/// row has where the path stopped.
pub fn column<'r>(row: &'r Map<String, Json>, name: &str) -> Result<&'r Json, String> {
    match row.get(name) {
        Some(v) => Ok(v),
        None => lookup(row, name),
    }
}

/// One step of a column path: a key of an object or an index into a list.
#[derive(Debug, PartialEq)]
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// Parses `a.b[0].c` into its steps; `None` when it is not a path (an empty name, an index that
/// is not a whole number, a bracket left open).
fn steps(path: &str) -> Option<Vec<Step<'_>>> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let (name, mut rest) = part.split_at(part.find('[').unwrap_or(part.len()));
        if name.is_empty() {
            return None;
        }
        out.push(Step::Key(name));
        while !rest.is_empty() {
            let close = rest.find(']')?;
            let index = rest.get(1..close)?;
            if !rest.starts_with('[')
                || index.is_empty()
                || !index.bytes().all(|b| b.is_ascii_digit())
            {
                return None;
            }
            out.push(Step::Index(index.parse().ok()?));
            rest = &rest[close + 1..];
        }
    }
    Some(out)
}

/// Follows a column path through the row; why not, where it does not lead to a value.
fn lookup<'r>(row: &'r Map<String, Json>, path: &str) -> Result<&'r Json, String> {
    let plain = || format!("the row has {}", keys(row));
    let Some(steps) = steps(path).filter(|s| s.len() > 1) else {
        return Err(plain());
    };
    let mut here: Option<&Json> = None;
    let mut walked = String::new();
    for step in steps {
        let next = match (here, &step) {
            (None, Step::Key(k)) => row.get(*k).ok_or_else(plain)?,
            (Some(Json::Object(m)), Step::Key(k)) => {
                m.get(*k).ok_or_else(|| format!("`{walked}` has {}", keys(m)))?
            }
            (Some(Json::Array(items)), Step::Index(i)) => items.get(*i).ok_or_else(|| {
                format!(
                    "`{walked}` is a list of {} item{}",
                    items.len(),
                    if items.len() == 1 { "" } else { "s" }
                )
            })?,
            (Some(v), Step::Key(_)) => {
                return Err(format!("`{walked}` is {}, not a record", kind(v, "a record")));
            }
            (Some(v), Step::Index(_)) => {
                return Err(format!("`{walked}` is {}, not a list", kind(v, "a record")));
            }
            (None, Step::Index(_)) => return Err(plain()),
        };
        match step {
            Step::Key(k) if walked.is_empty() => walked.push_str(k),
            Step::Key(k) => {
                walked.push('.');
                walked.push_str(k);
            }
            Step::Index(i) => walked.push_str(&format!("[{i}]")),
        }
        here = Some(next);
    }
    here.ok_or_else(plain)
}

/// The keys of a record, sorted, the first 20, for an error.
fn keys(m: &Map<String, Json>) -> String {
    let mut have: Vec<&String> = m.keys().collect();
    have.sort();
    let listed: Vec<String> = have.iter().take(20).map(|c| format!("`{c}`")).collect();
    let more = match have.len() {
        n if n > 20 => format!(" and {} more", n - 20),
        _ => String::new(),
    };
    if listed.is_empty() { "no columns".into() } else { format!("{}{more}", listed.join(", ")) }
}

/// What a JSON value is, in a message's words (`a number`, `a list`); an object is `object`
/// (`a record` for a data file's row or column, `an object` for a chat message's parts).
pub fn kind(v: &Json, object: &'static str) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "a list",
        Json::Object(_) => object,
    }
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

    #[test]
    fn nested_columns_are_read_by_path() {
        let row: Map<String, Json> = serde_json::from_str(
            r#"{"prompt": [{"role": "user", "content": "Who?"}], "data_source": "nq",
                "reward_model": {"ground_truth": {"target": ["a", "b"]}},
                "extra_info": {"index": 3}, "flat.name": "kept"}"#,
        )
        .unwrap();
        let cols = BTreeMap::from([
            ("question".to_string(), "prompt[0].content".to_string()),
            ("answer".to_string(), "reward_model.ground_truth.target".to_string()),
            ("id".to_string(), "flat.name".to_string()),
        ]);
        let out = select(&row, &["id", "question", "answer"], &cols).unwrap();
        assert_eq!(
            serde_json::to_string(&out).unwrap(),
            r#"{"answer":["a","b"],"id":"kept","question":"Who?"}"#
        );
        let err = |path: &str| {
            let cols = BTreeMap::from([("question".to_string(), path.to_string())]);
            select(&row, &["question"], &cols).unwrap_err()
        };
        assert_eq!(
            err("reward_model.truth"),
            "no column `reward_model.truth`, which `columns` reads as `question` \
             (`reward_model` has `ground_truth`)"
        );
        assert_eq!(
            err("prompt[1].content"),
            "no column `prompt[1].content`, which `columns` reads as `question` \
             (`prompt` is a list of 1 item)"
        );
        assert_eq!(
            err("data_source.name"),
            "no column `data_source.name`, which `columns` reads as `question` \
             (`data_source` is a string, not a record)"
        );
        assert!(err("prompt[x]").contains("the row has `data_source`, `extra_info`"));
        assert!(err("a..b").contains("the row has"));
        assert_eq!(
            steps("a[0][12].b"),
            Some(vec![Step::Key("a"), Step::Index(0), Step::Index(12), Step::Key("b")])
        );
        assert_eq!(steps("a[0"), None);
        assert_eq!(steps("[0]"), None);
    }
}
