//! The vision tower's tensors read out of a checkpoint's safetensors shards without loading the
//! rest: each shard's header says where every tensor lies, and only those under `model.visual.`
//! (or `visual.`, older exports) are read, so a tower comes out of a 30 GB model in its own size.
//! Taken one by one with their shapes checked; a leftover is a tensor the config does not explain.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use serde_json::Value as Json;

use crate::error::{Result, TrainerError};
use crate::hf::HfError;

/// A checkpoint-shaped error (`HfError::Files`).
pub(crate) fn files(why: String) -> TrainerError {
    TrainerError::Hf(HfError::Files(why))
}

/// Where a tensor lies in a shard.
struct Entry {
    dtype: DType,
    shape: Vec<usize>,
    /// Byte range from the start of the file.
    start: u64,
    len: usize,
}

/// Where a shard's vision tensors lie, by full name, from its header alone.
fn entries(path: &Path) -> Result<BTreeMap<String, Entry>> {
    let bad = |why: String| files(format!("`{}` is not a safetensors file: {why}", path.display()));
    let (obj, n) = crate::hf::files::raw_header(path)?;
    let mut out = BTreeMap::new();
    for (name, t) in
        obj.iter().filter(|(k, _)| k.starts_with("model.visual.") || k.starts_with("visual."))
    {
        let dtype = match t.get("dtype").and_then(Json::as_str) {
            Some("F32") => DType::F32,
            Some("BF16") => DType::BF16,
            Some("F16") => DType::F16,
            other => {
                return Err(bad(format!(
                    "`{name}` has dtype {other:?}; the tower reads F32, BF16 or F16"
                )));
            }
        };
        let nums = |k: &str| -> Option<Vec<u64>> {
            t.get(k).and_then(Json::as_array).map(|a| a.iter().filter_map(Json::as_u64).collect())
        };
        let (Some(shape), Some(offsets)) = (nums("shape"), nums("data_offsets")) else {
            return Err(bad(format!("`{name}` has no shape or data_offsets")));
        };
        let &[begin, end] = offsets.as_slice() else {
            return Err(bad(format!("`{name}` has data_offsets {offsets:?}")));
        };
        let shape: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
        let len = shape.iter().product::<usize>() * dtype.size_in_bytes();
        if end < begin || (end - begin) as usize != len {
            return Err(bad(format!("`{name}`'s bytes do not hold its shape {shape:?}")));
        }
        out.insert(name.clone(), Entry { dtype, shape, start: 8 + n + begin, len });
    }
    Ok(out)
}

/// The tower's tensors, prefix stripped, each with the file it came from.
#[derive(Debug)]
pub(crate) struct Weights {
    tensors: BTreeMap<String, (Tensor, PathBuf)>,
    prefix: String,
}

impl Weights {
    /// Reads every tensor under `model.visual.` (or `visual.`) from `shards`, as f32.
    pub(crate) fn read(shards: &[PathBuf], device: &Device) -> Result<Weights> {
        let mut all = BTreeMap::new();
        for path in shards {
            let found = entries(path)?;
            if found.is_empty() {
                continue;
            }
            let mut f = std::fs::File::open(path)
                .map_err(|e| files(format!("cannot read `{}`: {e}", path.display())))?;
            for (name, e) in found {
                let mut buf = vec![0u8; e.len];
                f.seek(SeekFrom::Start(e.start))
                    .and_then(|_| f.read_exact(&mut buf))
                    .map_err(|err| files(format!("{}: `{name}`: {err}", path.display())))?;
                let t = Tensor::from_raw_buffer(&buf, e.dtype, &e.shape, device)?
                    .to_dtype(DType::F32)?;
                all.insert(name, (t, path.clone()));
            }
        }
        let prefix = ["model.visual.", "visual."]
            .into_iter()
            .find(|p| all.keys().any(|k| k.starts_with(p)))
            .ok_or_else(|| {
                files("the weights hold no vision tower (no tensor under `model.visual.`)".into())
            })?;
        let tensors = all
            .into_iter()
            .filter_map(|(name, v)| name.strip_prefix(prefix).map(|rest| (rest.to_string(), v)))
            .collect();
        Ok(Weights { tensors, prefix: prefix.to_string() })
    }

    /// The tensor `name` (without the prefix), of shape `shape`.
    pub(crate) fn take(&mut self, name: &str, shape: &[usize]) -> Result<Tensor> {
        let full = format!("{}{name}", self.prefix);
        let (t, f) = self
            .tensors
            .remove(name)
            .ok_or_else(|| files(format!("the weights lack the vision tensor `{full}`")))?;
        if t.dims() != shape {
            return Err(files(format!(
                "{}: `{full}` has shape {:?}; config.json's vision_config implies {shape:?}",
                f.display(),
                t.dims()
            )));
        }
        Ok(t)
    }

    /// `{name}.weight` and `{name}.bias`, both of `shape`.
    pub(crate) fn pair(&mut self, name: &str, shape: &[usize]) -> Result<(Tensor, Tensor)> {
        Ok((
            self.take(&format!("{name}.weight"), shape)?,
            self.take(&format!("{name}.bias"), shape)?,
        ))
    }

    /// A linear layer's weight (out, in) and bias (out).
    pub(crate) fn linear(&mut self, name: &str, i: usize, o: usize) -> Result<(Tensor, Tensor)> {
        Ok((
            self.take(&format!("{name}.weight"), &[o, i])?,
            self.take(&format!("{name}.bias"), &[o])?,
        ))
    }

    /// Every tensor taken: a leftover is one the config does not explain.
    pub(crate) fn all_taken(&self, family: super::vision_config::VlFamily) -> Result<()> {
        let name_of = match family {
            super::vision_config::VlFamily::Qwen3Vl => "Qwen3-VL",
            super::vision_config::VlFamily::Qwen25Vl => "Qwen2.5-VL",
        };
        match self.tensors.iter().next() {
            None => Ok(()),
            Some((name, (_, f))) => Err(files(format!(
                "{}: `{}{name}` is not a tensor of the {name_of} vision tower config.json \
                 describes (a deeper tower, or another architecture?)",
                f.display(),
                self.prefix
            ))),
        }
    }
}
