//! TensorBoard event files beside `metrics.jsonl`, so `tensorboard --logdir runs/` (and W&B's
//! TensorBoard sync) read a run without a converter. The format is small and written here:
//! TFRecord framing (length, masked CRC-32C of the length, the `Event` protobuf, its masked
//! CRC-32C) around `Event { wall_time, step, file_version | summary { value { tag,
//! simple_value } } }`. The file is rebuilt from the committed metrics on resume, so it never
//! holds a line the run rolled back.

use std::io::Write;

use super::records::{MetricLine, StepMemory};

/// CRC-32C (Castagnoli), bitwise; the files are small.
fn crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0x82F6_3B78 } else { crc >> 1 };
        }
    }
    !crc
}

/// TFRecord's masked CRC.
fn masked(data: &[u8]) -> u32 {
    let c = crc32c(data);
    (c.rotate_right(15)).wrapping_add(0xa282_ead8)
}

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn bytes_field(field: u32, data: &[u8], out: &mut Vec<u8>) {
    varint(u64::from((field << 3) | 2), out);
    varint(data.len() as u64, out);
    out.extend_from_slice(data);
}

/// An `Event` protobuf: wall_time = 1 (double), step = 2 (int64), then `file_version` = 3 or
/// `summary` = 5.
fn event(wall_time: f64, step: u64, body: &[u8], body_field: u32) -> Vec<u8> {
    let mut out = Vec::new();
    out.push((1 << 3) | 1);
    out.extend_from_slice(&wall_time.to_le_bytes());
    out.push(2 << 3);
    varint(step, &mut out);
    bytes_field(body_field, body, &mut out);
    out
}

/// A `Summary` with one scalar `Value { tag = 1, simple_value = 2 (float) }`.
fn scalar(tag: &str, value: f64) -> Vec<u8> {
    let mut v = Vec::new();
    bytes_field(1, tag.as_bytes(), &mut v);
    v.push((2 << 3) | 5);
    v.extend_from_slice(&(value as f32).to_le_bytes());
    let mut summary = Vec::new();
    bytes_field(1, &v, &mut summary);
    summary
}

/// A `Summary` with one text `Value { tag = 1, tensor = 8, metadata = 9 }`: a scalar string
/// `TensorProto { dtype = 1 (DT_STRING = 7), tensor_shape = 2 (a scalar: empty), string_val =
/// 8 }` under the text plugin (`SummaryMetadata { plugin_data = 1 { plugin_name = 1 } }`), as
/// TensorBoard's `text` summaries are written.
fn text(tag: &str, value: &str) -> Vec<u8> {
    let mut tensor = Vec::new();
    tensor.extend_from_slice(&[1 << 3, 7]);
    bytes_field(2, &[], &mut tensor);
    bytes_field(8, value.as_bytes(), &mut tensor);
    let mut plugin = Vec::new();
    bytes_field(1, b"text", &mut plugin);
    let mut metadata = Vec::new();
    bytes_field(1, &plugin, &mut metadata);
    let mut v = Vec::new();
    bytes_field(1, tag.as_bytes(), &mut v);
    bytes_field(8, &tensor, &mut v);
    bytes_field(9, &metadata, &mut v);
    let mut summary = Vec::new();
    bytes_field(1, &v, &mut summary);
    summary
}

/// The tag of the recipe's identity (`sha256:… (wrlc …)`), a text summary at step 0.
pub const IDENTITY_TAG: &str = "wrl/identity";

fn record(data: &[u8], out: &mut Vec<u8>) {
    let len = (data.len() as u64).to_le_bytes();
    out.extend_from_slice(&len);
    out.extend_from_slice(&masked(&len).to_le_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(&masked(data).to_le_bytes());
}

/// A step's measured memory as `memory/host_peak_mib` and `memory/device_mib` scalars.
fn memory(put: &mut impl FnMut(&str, &str, f64), stage: &str, m: &StepMemory) {
    const MIB: f64 = 1024.0 * 1024.0;
    if let Some(b) = m.host_peak_bytes {
        put(stage, "memory/host_peak_mib", b as f64 / MIB);
    }
    if let Some(b) = m.device_bytes {
        put(stage, "memory/device_mib", b as f64 / MIB);
    }
}

/// The scalars of one metrics line: `(tag, value)`, tags `<stage>/<series>`.
pub fn scalars(line: &MetricLine) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    let mut put = |stage: &str, k: &str, v: f64| out.push((format!("{stage}/{k}"), v));
    match line {
        MetricLine::Sft(s) => {
            put(&s.stage, "loss", s.loss);
            put(&s.stage, "lr", s.lr);
            put(&s.stage, "grad_norm", s.grad_norm);
            memory(&mut put, &s.stage, &s.memory);
        }
        MetricLine::Rl(r) => {
            put(&r.stage, "reward", r.reward);
            put(&r.stage, "success", r.success);
            put(&r.stage, "loss", r.loss);
            put(&r.stage, "lr", r.lr);
            put(&r.stage, "grad_norm", r.grad_norm);
            if let Some(c) = r.clip_frac {
                put(&r.stage, "clip_frac", c);
            }
            if let Some(v) = r.value_loss {
                put(&r.stage, "value_loss", v);
            }
            if let Some(v) = r.critic_lr {
                put(&r.stage, "critic_lr", v);
            }
            if let Some(v) = r.step_advantage {
                put(&r.stage, "step_advantage", v);
            }
            if let Some(n) = r.branches {
                put(&r.stage, "branches", n as f64);
            }
            if let Some(n) = r.replayed {
                put(&r.stage, "replayed", n as f64);
            }
            if let Some(g) = r.generated {
                put(&r.stage, "generated_drawn", g.drawn as f64);
                put(&r.stage, "generated_kept", g.kept as f64);
                put(&r.stage, "generated_pool", g.pool as f64);
            }
            put(&r.stage, "uniform_groups", r.uniform_groups as f64);
            put(&r.stage, "samples", r.samples as f64);
            if let Some(n) = r.images {
                put(&r.stage, "images", n as f64);
            }
            put(&r.stage, "rollout_s", r.rollout_s);
            put(&r.stage, "update_s", r.update_s);
            put(&r.stage, "retried", r.retried as f64);
            put(&r.stage, "excluded", r.excluded.values().sum::<usize>() as f64);
            // A reward endpoint's components (sorted: a BTreeMap).
            for (name, v) in &r.components {
                put(&r.stage, &format!("component/{name}"), *v);
            }
            memory(&mut put, &r.stage, &r.memory);
        }
        MetricLine::Eval(e) => {
            put(&format!("eval/{}", e.stage), "success", e.success);
            if let Some(m) = e.mean_reward {
                put(&format!("eval/{}", e.stage), "mean_reward", m);
            }
            put(&format!("eval/{}", e.stage), "episodes", e.episodes as f64);
            // Each subset's rate (`by`), an evaluation's or a validation pass's (whose `stage`
            // is its RL stage): `eval/NAME/subset/SUBSET/success`, sorted.
            for (name, r) in &e.subsets {
                put(&format!("eval/{}/subset/{name}", e.stage), "success", r.success);
            }
        }
    }
    out
}

/// The whole event file for `lines`: a version record, the recipe's identity (when the run's
/// plan gives it), then one event per scalar.
pub fn encode(lines: &[MetricLine], start_time: f64, identity: Option<&str>) -> Vec<u8> {
    let mut out = Vec::new();
    record(&event(start_time, 0, b"brain.Event:2", 3), &mut out);
    if let Some(id) = identity {
        record(&event(start_time, 0, &text(IDENTITY_TAG, id), 5), &mut out);
    }
    for line in lines {
        let (step, time) = line.stamp();
        for (tag, v) in scalars(line) {
            record(&event(time, step, &scalar(&tag, v), 5), &mut out);
        }
    }
    out
}

/// The events of `lines` only (no version record), to append to an existing file.
pub fn encode_more(lines: &[MetricLine]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in lines {
        let (step, time) = line.stamp();
        for (tag, v) in scalars(line) {
            record(&event(time, step, &scalar(&tag, v), 5), &mut out);
        }
    }
    out
}

/// Writes `bytes` at the end of `file`.
pub fn append(file: &mut std::fs::File, bytes: &[u8]) -> std::io::Result<()> {
    file.write_all(bytes)?;
    file.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_matches_the_standard_check_value() {
        // The CRC-32C check value of "123456789" (RFC 3720, iSCSI).
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(crc32c(b""), 0);
    }

    #[test]
    fn records_frame_their_data() {
        let mut out = Vec::new();
        record(b"abc", &mut out);
        assert_eq!(out.len(), 8 + 4 + 3 + 4);
        assert_eq!(&out[..8], &3u64.to_le_bytes());
        assert_eq!(&out[12..15], b"abc");
    }
}
