//! Parquet datasets and Hugging Face dataset snapshots: `parquet(path)` read row by row (the
//! `parquet` crate's record API, Snappy-compressed files as pyarrow and `datasets` write them),
//! each row turned into the JSON object of its columns and parsed as the same record a JSONL line
//! holds (docs/sandbox.md), so the columns carry the record's field names; `hf_dataset(id)`
//! resolved offline in the Hugging Face cache (`datasets--Org--Name/snapshots/<rev>`) to one
//! Parquet or JSONL file.

use std::path::{Path, PathBuf};

use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use serde_json::{Map, Value as Json};
use wrl_plan::params::{RecordKind, Split};

use super::files::{Columns, Records, parse_record};

/// A column value as JSON: numbers, strings, lists and groups as they are; other types
/// (binary, decimals, dates, timestamps) are not fields of any record kind.
fn json_of(name: &str, f: &Field) -> Result<Json, String> {
    Ok(match f {
        Field::Null => Json::Null,
        Field::Bool(b) => Json::Bool(*b),
        Field::Byte(n) => Json::from(*n),
        Field::Short(n) => Json::from(*n),
        Field::Int(n) => Json::from(*n),
        Field::Long(n) => Json::from(*n),
        Field::UByte(n) => Json::from(*n),
        Field::UShort(n) => Json::from(*n),
        Field::UInt(n) => Json::from(*n),
        Field::ULong(n) => Json::from(*n),
        Field::Float(x) => Json::from(f64::from(*x)),
        Field::Double(x) => Json::from(*x),
        Field::Str(s) => Json::String(s.clone()),
        Field::Group(row) => {
            let mut m = Map::new();
            for (k, v) in row.get_column_iter() {
                m.insert(k.clone(), json_of(k, v)?);
            }
            Json::Object(m)
        }
        Field::ListInternal(list) => {
            Json::Array(list.elements().iter().map(|v| json_of(name, v)).collect::<Result<_, _>>()?)
        }
        other => {
            return Err(format!(
                "column `{name}` holds {other}, a type no record field has (strings, numbers, \
                 booleans, lists and structs are read)"
            ));
        }
    })
}

/// Reads a Parquet file of records of `kind`; on failure, the message and a label for the
/// place, as [`super::files::read_jsonl`] gives them (the row is 1-based). The parquet crate
/// panics on some damaged files (3 of 800 fuzzed ones: an index out of a page's range, a
/// negative column length); such a panic is caught here and is the same error as any damaged
/// file, naming it (E0503), never "internal error in wrlc".
pub(crate) fn read_parquet(
    path: &str,
    kind: RecordKind,
    columns: &Columns,
) -> Result<Records, (String, String)> {
    let mut out = Records::empty(kind);
    parquet_rows(path, &mut |n, row| parse_record(Json::Object(row), kind, columns, n, &mut out))?;
    if out.is_empty() {
        return Err((format!("`{path}` holds no records"), "this file is empty".into()));
    }
    Ok(out)
}

/// Each row of a Parquet file as the JSON object of its columns, given to `each` with its
/// 1-based number; on failure, the message and a label for the place, as [`read_parquet`]'s.
pub(crate) fn parquet_rows(
    path: &str,
    each: &mut dyn FnMut(usize, Map<String, Json>) -> Result<(), String>,
) -> Result<(), (String, String)> {
    let file = wrl_sandbox::datafile::open(Path::new(path)).map_err(|why| {
        (format!("cannot read `{path}`: {why}"), super::files::not_read_label(&why))
    })?;
    match super::quiet::catch(|| rows_of(file, path, each)) {
        Ok(read) => read,
        Err(panic) => Err((
            format!("`{path}` is a damaged Parquet file: {panic}"),
            "a damaged Parquet file".to_string(),
        )),
    }
}

/// The rows of an open Parquet file (which may panic: see [`read_parquet`]).
fn rows_of(
    file: std::fs::File,
    path: &str,
    each: &mut dyn FnMut(usize, Map<String, Json>) -> Result<(), String>,
) -> Result<(), (String, String)> {
    let reader = SerializedFileReader::new(file).map_err(|e| {
        (format!("`{path}` is not a Parquet file: {e}"), "not a Parquet file".to_string())
    })?;
    let rows = reader
        .get_row_iter(None)
        .map_err(|e| (format!("cannot read `{path}`: {e}"), "cannot be read".to_string()))?;
    for (i, row) in rows.enumerate() {
        let at = |why: String| {
            (format!("`{path}` row {}: {why}", i + 1), format!("row {} of this file", i + 1))
        };
        let row = row.map_err(|e| at(e.to_string()))?;
        let mut m = Map::new();
        for (k, v) in row.get_column_iter() {
            m.insert(k.clone(), json_of(k, v).map_err(&at)?);
        }
        each(i + 1, m).map_err(at)?;
    }
    Ok(())
}

/// Reads a data file by its extension (`.parquet`, else JSONL), through its `columns`.
pub(crate) fn read_records(
    path: &str,
    kind: RecordKind,
    columns: &Columns,
) -> Result<Records, (String, String)> {
    if path.ends_with(".parquet") {
        read_parquet(path, kind, columns)
    } else {
        super::files::read_jsonl(path, kind, columns)
    }
}

/// Where the records of a data file are described.
pub(crate) fn format_help(path: &str) -> &'static str {
    if path.ends_with(".parquet") {
        "docs/sandbox.md describes the task, QA and trajectory records; a Parquet file's columns \
         are their fields, by name, or as the dataset's `columns = { field = \"column\" }` maps them"
    } else {
        "docs/sandbox.md describes the task, QA and trajectory JSONL formats; a dataset's \
         `columns = { field = \"column\" }` reads a field from a key of another name"
    }
}

/// Every `.parquet` and `.jsonl` file under `dir`, sorted, relative to it.
fn data_files(dir: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir.join(rel)) else { return };
    for e in entries.flatten() {
        let name = e.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let r = rel.join(&name);
        if e.path().is_dir() {
            data_files(dir, &r, out);
        } else if r.extension().is_some_and(|x| x == "parquet" || x == "jsonl") {
            out.push(r);
        }
    }
}

/// The data file of `hf_dataset(id) { file, split }`: `file` in the snapshot when given, else
/// its only data file (of the split's name, for `train` and `test`).
pub(crate) fn hf_dataset_file(id: &str, file: &str, split: Split) -> Result<String, String> {
    hf_dataset_file_in(id, file, split, wrl_trainer::hf::hub_cache().as_deref())
}

/// [`hf_dataset_file`] against a given hub cache.
pub fn hf_dataset_file_in(
    id: &str,
    file: &str,
    split: Split,
    cache: Option<&Path>,
) -> Result<String, String> {
    let dir = wrl_trainer::hf::resolve_in(id, wrl_trainer::hf::RepoKind::Dataset, cache)
        .map_err(|e| e.to_string())?;
    if !file.is_empty() {
        let p = dir.join(file);
        return if p.is_file() {
            Ok(p.to_string_lossy().into_owned())
        } else {
            Err(format!("the dataset `{id}` has no file `{file}`"))
        };
    }
    let mut files = Vec::new();
    data_files(&dir, Path::new(""), &mut files);
    files.sort();
    let word = match split {
        Split::Train => Some("train"),
        Split::Test => Some("test"),
        Split::All => None,
    };
    if let Some(w) = word {
        files.retain(|f| f.to_string_lossy().contains(w));
    }
    match files.as_slice() {
        [one] => Ok(dir.join(one).to_string_lossy().into_owned()),
        [] => Err(format!(
            "the dataset `{id}` has no Parquet or JSONL file{}",
            word.map(|w| format!(" of the `{w}` split")).unwrap_or_default()
        )),
        many => Err(format!(
            "the dataset `{id}` has {} data files ({}); name one with `file`",
            many.len(),
            many.iter().map(|f| format!("`{}`", f.display())).collect::<Vec<_>>().join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none() -> Columns {
        Columns::new()
    }

    fn fixture(name: &str) -> String {
        format!("{}/../../tests/ui/run/data/{name}", env!("CARGO_MANIFEST_DIR"))
    }

    #[test]
    fn parquet_rows_are_records_and_a_bad_row_is_named() {
        let Ok(Records::Tasks(t)) = read_parquet(&fixture("qa.parquet"), RecordKind::Qa, &none())
        else {
            panic!("qa.parquet holds QA pairs")
        };
        assert_eq!(t.len(), 3);
        assert_eq!(t[0].id, "qa-00001");
        let (message, label) =
            read_parquet(&fixture("qa-wrong-columns.parquet"), RecordKind::Qa, &none())
                .err()
                .unwrap();
        assert!(message.contains("row 1: not a valid QA record"), "{message}");
        assert!(message.contains("prompt"), "{message}");
        assert_eq!(label, "row 1 of this file");
        let (message, _) =
            read_parquet(&fixture("demos.jsonl"), RecordKind::Qa, &none()).err().unwrap();
        assert!(message.contains("is not a Parquet file"), "{message}");
        // Nested columns: a trajectory's steps (a list of structs with a list of actions).
        let Ok(Records::Trajectories(d)) =
            read_parquet(&fixture("demos.parquet"), RecordKind::Trajectories, &none())
        else {
            panic!("demos.parquet holds trajectories")
        };
        let Ok(Records::Trajectories(j)) = super::super::files::read_jsonl(
            &fixture("demos.jsonl"),
            RecordKind::Trajectories,
            &none(),
        ) else {
            panic!("demos.jsonl holds trajectories")
        };
        assert_eq!(serde_json::to_value(&d).unwrap(), serde_json::to_value(&j).unwrap());
    }

    #[test]
    fn a_column_mapping_reads_parquet_columns_of_other_names() {
        // The file's questions are in a column `prompt`; the other columns are read by name.
        let columns = Columns::from([("question".to_string(), "prompt".to_string())]);
        let Ok(Records::Tasks(t)) =
            read_parquet(&fixture("qa-wrong-columns.parquet"), RecordKind::Qa, &columns)
        else {
            panic!("the mapped file holds QA pairs")
        };
        assert!(!t.is_empty() && t.iter().all(|q| !q.goal.is_empty()));
        let wrong = Columns::from([("answer".to_string(), "ground_truth".to_string())]);
        let (message, label) =
            read_parquet(&fixture("qa.parquet"), RecordKind::Qa, &wrong).err().unwrap();
        assert!(
            message.ends_with(
                "row 1: no column `ground_truth`, which `columns` reads as `answer` \
                 (the row has `answer`, `question`)"
            ),
            "{message}"
        );
        assert_eq!(label, "row 1 of this file");
    }

    #[test]
    fn a_hub_dataset_resolves_offline_to_its_split_file() {
        let cache = tempfile::tempdir().unwrap();
        let snap = cache.path().join("datasets--Org--Qa/snapshots/r1/data");
        std::fs::create_dir_all(&snap).unwrap();
        for f in ["train-00000-of-00001.parquet", "test-00000-of-00001.parquet"] {
            std::fs::copy(fixture("qa.parquet"), snap.join(f)).unwrap();
        }
        let c = Some(cache.path());
        let train = hf_dataset_file_in("Org/Qa", "", Split::Train, c).unwrap();
        assert!(train.ends_with("data/train-00000-of-00001.parquet"), "{train}");
        let all = hf_dataset_file_in("Org/Qa", "", Split::All, c).unwrap_err();
        assert!(all.contains("2 data files") && all.contains("`file`"), "{all}");
        let named = hf_dataset_file_in("Org/Qa", "data/test-00000-of-00001.parquet", Split::All, c);
        assert!(read_records(&named.unwrap(), RecordKind::Qa, &none()).is_ok());
        let missing = hf_dataset_file_in("Org/Other", "", Split::All, c).unwrap_err();
        assert!(missing.contains("never downloads"), "{missing}");
    }
}
