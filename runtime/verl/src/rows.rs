//! The job's data: one row per task in verl's RL parquet layout (`data_source`, `agent_name`,
//! `prompt` messages, `ability`, `reward_model`, `extra_info` with the wrl task as a JSON string
//! and the plan node that scores it), written with parquet's low-level column writer: a fixed
//! schema, uncompressed, with the definition and repetition levels of the one list column
//! written by hand. The task rides as JSON text because tasks of different kinds would become
//! one union struct in Arrow, and an empty record cannot be written to parquet at all.

use std::sync::Arc;

use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;

/// One row: a task as verl's `RLHFDataset` reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The dataset (training) or evaluation (validation) the task comes from; verl's metrics
    /// are reported per data source.
    pub data_source: String,
    /// The agent loop that runs it (an entry of `agent_loops.yaml`).
    pub agent_name: String,
    /// The prompt messages, `(role, content)`.
    pub prompt: Vec<(String, String)>,
    /// The task's reference answer (empty when its checker is not an answer).
    pub ground_truth: String,
    pub index: i64,
    pub split: String,
    /// The wrl task, as one line of task JSONL.
    pub task_json: String,
    /// The plan node whose reward (or judge) scores the episode.
    pub node: String,
}

const SCHEMA: &str = "
message verl_rl {
  REQUIRED BYTE_ARRAY data_source (UTF8);
  REQUIRED BYTE_ARRAY agent_name (UTF8);
  REQUIRED group prompt (LIST) {
    REPEATED group list {
      REQUIRED group element {
        REQUIRED BYTE_ARRAY content (UTF8);
        REQUIRED BYTE_ARRAY role (UTF8);
      }
    }
  }
  REQUIRED BYTE_ARRAY ability (UTF8);
  REQUIRED group reward_model {
    REQUIRED BYTE_ARRAY ground_truth (UTF8);
    REQUIRED BYTE_ARRAY style (UTF8);
  }
  REQUIRED group extra_info {
    REQUIRED INT64 index;
    REQUIRED BYTE_ARRAY node (UTF8);
    REQUIRED BYTE_ARRAY split (UTF8);
    REQUIRED BYTE_ARRAY task_json (UTF8);
  }
}
";

/// One leaf column's values with their levels (`None`: a required column outside the list).
struct Column {
    bytes: Vec<ByteArray>,
    ints: Vec<i64>,
    def: Option<Vec<i16>>,
    rep: Option<Vec<i16>>,
}

fn strings(values: impl Iterator<Item = String>) -> Column {
    Column {
        bytes: values.map(|s| ByteArray::from(s.into_bytes())).collect(),
        ints: vec![],
        def: None,
        rep: None,
    }
}

/// `rows` as a parquet file.
pub fn parquet(rows: &[Row]) -> Result<Vec<u8>, String> {
    let fail = |e: parquet::errors::ParquetError| format!("cannot write parquet: {e}");
    let schema = Arc::new(parse_message_type(SCHEMA).map_err(fail)?);
    let props = Arc::new(
        WriterProperties::builder()
            .set_dictionary_enabled(false)
            .set_created_by("wrlc lower".into())
            .build(),
    );
    // Each message is one entry of the list: definition level 1 (present), repetition level 0
    // for a row's first message and 1 for the others. A row has at least one message.
    let mut def = Vec::new();
    let mut rep = Vec::new();
    for r in rows {
        if r.prompt.is_empty() {
            return Err(format!("row {} has no prompt message", r.index));
        }
        for i in 0..r.prompt.len() {
            def.push(1);
            rep.push(i16::from(i > 0));
        }
    }
    let message = |pick: fn(&(String, String)) -> &String| Column {
        bytes: rows
            .iter()
            .flat_map(|r| r.prompt.iter().map(|m| ByteArray::from(pick(m).clone().into_bytes())))
            .collect(),
        ints: vec![],
        def: Some(def.clone()),
        rep: Some(rep.clone()),
    };
    let columns = vec![
        strings(rows.iter().map(|r| r.data_source.clone())),
        strings(rows.iter().map(|r| r.agent_name.clone())),
        message(|m| &m.1),
        message(|m| &m.0),
        strings(rows.iter().map(|_| "web".to_string())),
        strings(rows.iter().map(|r| r.ground_truth.clone())),
        strings(rows.iter().map(|_| "wrl".to_string())),
        Column {
            bytes: vec![],
            ints: rows.iter().map(|r| r.index).collect(),
            def: None,
            rep: None,
        },
        strings(rows.iter().map(|r| r.node.clone())),
        strings(rows.iter().map(|r| r.split.clone())),
        strings(rows.iter().map(|r| r.task_json.clone())),
    ];
    let mut buf = Vec::new();
    {
        let mut w = SerializedFileWriter::new(&mut buf, schema, props).map_err(fail)?;
        let mut rg = w.next_row_group().map_err(fail)?;
        for c in &columns {
            let Some(mut col) = rg.next_column().map_err(fail)? else {
                return Err("the parquet schema has fewer columns than the rows".into());
            };
            let (def, rep) = (c.def.as_deref(), c.rep.as_deref());
            if c.bytes.is_empty() && !c.ints.is_empty() {
                col.typed::<Int64Type>().write_batch(&c.ints, def, rep).map_err(fail)?;
            } else {
                col.typed::<ByteArrayType>().write_batch(&c.bytes, def, rep).map_err(fail)?;
            }
            col.close().map_err(fail)?;
        }
        if rg.next_column().map_err(fail)?.is_some() {
            return Err("the parquet schema has more columns than the rows".into());
        }
        rg.close().map_err(fail)?;
        w.close().map_err(fail)?;
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use parquet::file::reader::{FileReader, SerializedFileReader};

    use super::*;

    #[test]
    fn rows_round_trip_through_a_parquet_reader() {
        let row = |i: i64, msgs: usize| Row {
            data_source: "tasks".into(),
            agent_name: "wrl_online_1".into(),
            prompt: (0..msgs)
                .map(|m| (if m == 0 { "system" } else { "user" }.into(), format!("m{m}")))
                .collect(),
            ground_truth: "12".into(),
            index: i,
            split: "train".into(),
            task_json: "{\"id\":\"t\"}".into(),
            node: "stage:online/phase:1".into(),
        };
        let bytes = parquet(&[row(0, 2), row(1, 1), row(2, 3)]).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("t.parquet");
        std::fs::write(&path, bytes).unwrap();
        let reader = SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
        assert_eq!(reader.metadata().file_metadata().num_rows(), 3);
        let rows: Vec<String> =
            reader.get_row_iter(None).unwrap().map(|r| r.unwrap().to_string()).collect();
        assert!(
            rows[0].contains(
                "prompt: [{content: \"m0\", role: \"system\"}, {content: \"m1\", role: \"user\"}]"
            ),
            "{}",
            rows[0]
        );
        assert!(rows[2].contains("index: 2"), "{}", rows[2]);
        assert!(parquet(&[row(0, 0)]).is_err());
    }
}
