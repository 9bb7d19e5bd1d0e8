//! LoRA adapters on a Qwen policy's linear layers, as PEFT makes, computes and saves them: for
//! each adapted layer W (out × in) an A (rank × in), Kaiming-uniform from a seed, and a zero B
//! (out × rank), y = W·x + (alpha / rank)·B·A·x; only A and B train. The decoder and the
//! exported model read W + (alpha / rank)·B·A ([`merged`]). A checkpoint holds the adapters in
//! PEFT's layout (`adapter/adapter_config.json`, `adapter/adapter_model.safetensors`, keys
//! `base_model.model.<module>.lora_A.weight`) and the adapted layers' own weights
//! (`lora_base.safetensors`), so a resume continues from the same base bit for bit.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use candle_core::{DType, Tensor};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::error::{Result, TrainerError, config_err};
use crate::hf::QwenConfig;
use crate::params::ParamStore;

/// The folder of a checkpoint that holds its adapters in PEFT's layout.
pub const ADAPTER_DIR: &str = "adapter";
/// The file of a checkpoint that holds the adapted layers' base weights.
pub const BASE_FILE: &str = "lora_base.safetensors";
/// PEFT's prefix of every key of `adapter_model.safetensors` (a `PeftModelForCausalLM`).
const PEFT_PREFIX: &str = "base_model.model.";

/// A stage's adapters: their rank, scale numerator, dropout and the modules they adapt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoraSpec {
    pub rank: usize,
    pub alpha: f64,
    /// The dropout on an adapter's input in training forwards (0: none), as PEFT's.
    pub dropout: f64,
    /// PEFT's module names (`q_proj`, `gate_proj`, …), in the recipe's order.
    pub targets: Vec<String>,
    /// The trainer's step when the adapters were attached: 0, over the source model; later,
    /// over the weights of that step (an earlier stage's checkpoint, its merged model).
    #[serde(default)]
    pub base_step: u64,
}

impl LoraSpec {
    /// alpha / rank, the factor on B·A.
    pub fn scale(&self) -> f64 {
        self.alpha / self.rank as f64
    }
}

/// The submodule of a decoder layer that holds `target`, or `None` for a name no Qwen layer has.
fn block_of(target: &str) -> Option<&'static str> {
    match target {
        "q_proj" | "k_proj" | "v_proj" | "o_proj" => Some("self_attn"),
        "gate_proj" | "up_proj" | "down_proj" => Some("mlp"),
        _ => None,
    }
}

/// Every adapted module (`model.layers.{i}.self_attn.q_proj`, …), layer by layer.
pub fn modules(c: &QwenConfig, spec: &LoraSpec) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for i in 0..c.num_hidden_layers {
        for t in &spec.targets {
            let block = block_of(t).ok_or_else(|| {
                config_err(format!("LoRA target `{t}`: the model has no such linear layer"))
            })?;
            out.push(format!("model.layers.{i}.{block}.{t}"));
        }
    }
    Ok(out)
}

/// The (out, in) shape of target `t`'s weight in `c`'s layers, or `None` for an unknown name.
pub fn target_shape(c: &QwenConfig, t: &str) -> Option<(usize, usize)> {
    let (d, hd, i) = (c.hidden_size, c.head_dim(), c.intermediate_size);
    let (nh, nkv) = (c.num_attention_heads, c.num_key_value_heads);
    Some(match t {
        "q_proj" => (nh * hd, d),
        "k_proj" | "v_proj" => (nkv * hd, d),
        "o_proj" => (d, nh * hd),
        "gate_proj" | "up_proj" => (i, d),
        "down_proj" => (d, i),
        _ => return None,
    })
}

/// What keeps `spec` from fitting `c`: a target no layer has, or a rank above a target's smaller
/// dimension (B·A could not be of full rank; PEFT would train a redundant factor).
pub fn misfit(c: &QwenConfig, spec: &LoraSpec) -> Option<String> {
    for t in &spec.targets {
        let Some((out, inp)) = target_shape(c, t) else {
            return Some(format!("the model's layers have no linear layer `{t}`"));
        };
        if spec.rank > out.min(inp) {
            return Some(format!(
                "rank {} exceeds `{t}`'s smaller dimension ({out} × {inp}: at most {})",
                spec.rank,
                out.min(inp)
            ));
        }
    }
    None
}

/// `x` through PEFT's `lora_dropout`: each value zeroed with probability `p` and the others
/// scaled by 1 / (1 − p) (all zero for p ≥ 1, as torch's `Dropout(1)`), the mask drawn from
/// `key`: the same key draws the same mask, so a layer recomputed in the backward pass sees the
/// mask its forward saw.
pub fn dropped(x: &Tensor, p: f64, key: u64) -> Result<Tensor> {
    if p <= 0.0 {
        return Ok(x.clone());
    }
    let keep = 1.0 - p;
    let scale = if keep > 0.0 { (1.0 / keep) as f32 } else { 0.0 };
    let mut rng = crate::rng::rng_from_seed(key);
    let mask: Vec<f32> =
        (0..x.elem_count()).map(|_| if rng.random::<f64>() < keep { scale } else { 0.0 }).collect();
    let mask = Tensor::from_vec(mask, x.shape(), x.device())?.to_dtype(x.dtype())?;
    Ok(x.mul(&mask)?)
}

/// The dropout draw of `module` in the training forward whose draw is `key` (FNV-1a of the
/// module's name mixed in): each adapted layer draws its own mask.
pub fn module_key(key: u64, module: &str) -> u64 {
    let h = module.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    crate::rng::mix(key, h)
}

fn a_name(m: &str) -> String {
    format!("{m}.lora_A.weight")
}

fn b_name(m: &str) -> String {
    format!("{m}.lora_B.weight")
}

/// Whether `name` is an adapter's parameter.
pub fn is_adapter(name: &str) -> bool {
    name.ends_with(".lora_A.weight") || name.ends_with(".lora_B.weight")
}

/// Adds new adapters to `params` (A uniform in ±1/√in, PEFT's `kaiming_uniform_(a=√5)`, drawn
/// from `rng` module by module; B zero) and freezes every other parameter.
pub fn attach(
    params: &mut ParamStore,
    c: &QwenConfig,
    spec: &LoraSpec,
    rng: &mut ChaCha8Rng,
) -> Result<()> {
    if let Some(why) = misfit(c, spec) {
        return Err(config_err(format!("LoRA: {why}")));
    }
    let device = params.device();
    for m in modules(c, spec)? {
        let w = params.get(&format!("{m}.weight"))?;
        let (out, inp) = w.dims2()?;
        let bound = 1.0 / (inp as f32).sqrt();
        let a: Vec<f32> = (0..spec.rank * inp).map(|_| rng.random_range(-bound..bound)).collect();
        params.insert(&a_name(&m), &Tensor::from_vec(a, (spec.rank, inp), &device)?)?;
        params.insert(&b_name(&m), &Tensor::zeros((out, spec.rank), DType::F32, &device)?)?;
    }
    freeze_base(params)
}

/// Freezes every parameter but the adapters'.
pub fn freeze_base(params: &mut ParamStore) -> Result<()> {
    let base: Vec<String> =
        params.iter().map(|(n, _)| n.clone()).filter(|n| !is_adapter(n)).collect();
    params.set_frozen(&base)
}

/// Module `m`'s weight with its adapter merged in: W + (alpha / rank)·B·A, in f32.
fn merge_one(params: &ParamStore, m: &str, scale: f64) -> Result<Tensor> {
    let w = params.get(&format!("{m}.weight"))?.detach();
    let ba = params.get(&b_name(m))?.detach().matmul(&params.get(&a_name(m))?.detach())?;
    Ok((w + ba.affine(scale, 0.0)?)?)
}

/// Parameter `name` as the adapted model has it: an adapted layer's weight merged (detached),
/// any other parameter as it is.
pub fn merged(params: &ParamStore, spec: Option<&LoraSpec>, name: &str) -> Result<Tensor> {
    if let (Some(spec), Some(m)) = (spec, name.strip_suffix(".weight"))
        && params.contains(&a_name(m))
    {
        return merge_one(params, m, spec.scale());
    }
    params.get(name)
}

/// The adapted model as plain weights: adapted layers merged, no adapter parameters.
pub fn merged_store(params: &ParamStore, spec: &LoraSpec) -> Result<ParamStore> {
    let mut out = ParamStore::new();
    for (name, _) in params.iter().filter(|(n, _)| !is_adapter(n)) {
        out.insert(name, &merged(params, Some(spec), name)?)?;
    }
    Ok(out)
}

/// Merges the adapters into their layers' weights and removes them; every parameter thaws.
pub fn merge_away(params: &mut ParamStore, spec: &LoraSpec) -> Result<()> {
    let adapted: Vec<String> = params
        .iter()
        .filter_map(|(n, _)| n.strip_suffix(".lora_A.weight").map(str::to_string))
        .collect();
    for m in &adapted {
        let w = merge_one(params, m, spec.scale())?;
        params.insert(&format!("{m}.weight"), &w)?;
        params.remove(&a_name(m));
        params.remove(&b_name(m));
    }
    params.set_frozen(&[])
}

/// PEFT's `adapter_config.json` for `spec` over the base model `base`.
fn peft_config(spec: &LoraSpec, base: &str) -> serde_json::Value {
    serde_json::json!({
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "base_model_name_or_path": base,
        "r": spec.rank,
        "lora_alpha": spec.alpha,
        "lora_dropout": spec.dropout,
        "target_modules": spec.targets,
        "bias": "none",
        "fan_in_fan_out": false,
        "inference_mode": true,
        "init_lora_weights": true,
        "use_rslora": false,
        "use_dora": false,
        "modules_to_save": null,
        "wrl_base_step": spec.base_step,
        "layers_to_transform": null,
        "rank_pattern": {},
        "alpha_pattern": {},
    })
}

/// Writes the adapters of `params` in PEFT's layout into `dir` (created): `adapter_config.json`
/// naming `base` as the base model, and `adapter_model.safetensors`.
pub fn save_peft(dir: &Path, params: &ParamStore, spec: &LoraSpec, base: &str) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut adapters = ParamStore::new();
    for (name, var) in params.iter().filter(|(n, _)| is_adapter(n)) {
        adapters.insert(&format!("{PEFT_PREFIX}{name}"), var.as_tensor())?;
    }
    adapters.save_with_metadata(&dir.join("adapter_model.safetensors"), &[("format", "pt")])?;
    let text = serde_json::to_string_pretty(&peft_config(spec, base))?;
    std::fs::write(dir.join("adapter_config.json"), text)?;
    Ok(())
}

/// A PEFT adapter directory's `adapter_config.json`, as far as this trainer reads it.
#[derive(Debug, Clone, Deserialize)]
pub struct PeftConfig {
    pub peft_type: String,
    pub r: usize,
    pub lora_alpha: f64,
    #[serde(default)]
    pub target_modules: TargetModules,
    #[serde(default)]
    pub base_model_name_or_path: Option<String>,
    /// The trainer step of the weights the adapters were trained over (this trainer's own key:
    /// 0, or absent in PEFT's files, is the base model itself).
    #[serde(default)]
    pub wrl_base_step: u64,
}

impl PeftConfig {
    /// The adapters this config describes, for loading them over a base model to serve or
    /// evaluate (dropout is a training setting and does not change the adapted model).
    pub fn spec(&self) -> Result<LoraSpec> {
        if self.peft_type != "LORA" {
            return Err(config_err(format!("its `peft_type` is `{}`, not `LORA`", self.peft_type)));
        }
        let targets = match &self.target_modules {
            TargetModules::Names(names) if !names.is_empty() => names.clone(),
            TargetModules::Names(_) => {
                return Err(config_err("its `target_modules` is empty"));
            }
            TargetModules::Pattern(p) => {
                return Err(config_err(format!(
                    "its `target_modules` is a pattern (`{p}`), not a list of module names"
                )));
            }
        };
        Ok(LoraSpec {
            rank: self.r,
            alpha: self.lora_alpha,
            dropout: 0.0,
            targets,
            base_step: self.wrl_base_step,
        })
    }
}

/// PEFT's `target_modules`: a list of names or one regular expression.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum TargetModules {
    Names(Vec<String>),
    Pattern(String),
}

impl Default for TargetModules {
    fn default() -> Self {
        TargetModules::Names(Vec::new())
    }
}

/// Reads `dir/adapter_config.json`.
pub fn read_peft_config(dir: &Path) -> Result<PeftConfig> {
    let path = dir.join("adapter_config.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| TrainerError::Checkpoint(format!("cannot read {}: {e}", path.display())))?;
    Ok(serde_json::from_str(&text)?)
}

/// Why the PEFT adapter config `p` cannot stand for `spec`'s adapters, if it cannot.
pub fn peft_mismatch(p: &PeftConfig, spec: &LoraSpec) -> Option<String> {
    if p.peft_type != "LORA" {
        return Some(format!("its `peft_type` is `{}`, not `LORA`", p.peft_type));
    }
    if p.r != spec.rank {
        return Some(format!("its rank is {}, the stage's {}", p.r, spec.rank));
    }
    let mut want = spec.targets.clone();
    want.sort();
    match &p.target_modules {
        TargetModules::Names(names) => {
            let mut got = names.clone();
            got.sort();
            if got != want {
                return Some(format!(
                    "it adapts [{}], the stage [{}]",
                    got.join(", "),
                    want.join(", ")
                ));
            }
        }
        TargetModules::Pattern(p) => {
            return Some(format!("its `target_modules` is a pattern (`{p}`), not a list of names"));
        }
    }
    None
}

/// Loads the adapters of the PEFT directory `dir` into `params`, whose adapters (same rank and
/// targets) must already be attached; every adapter of `params` must be in the file.
pub fn load_peft(dir: &Path, params: &ParamStore, spec: &LoraSpec) -> Result<()> {
    if let Some(why) = peft_mismatch(&read_peft_config(dir)?, spec) {
        return Err(TrainerError::Checkpoint(format!("the adapter in {}: {why}", dir.display())));
    }
    let file = dir.join("adapter_model.safetensors");
    let loaded: HashMap<String, Tensor> = candle_core::safetensors::load(&file, &params.device())?;
    let mut values = BTreeMap::new();
    for (name, t) in loaded {
        let key = name.strip_prefix(PEFT_PREFIX).unwrap_or(&name).to_string();
        values.insert(key, t);
    }
    params.set_some(&values, is_adapter, &file)
}

/// Writes the adapted layers' own (unmerged) weights to `path`.
pub fn save_base(path: &Path, params: &ParamStore) -> Result<()> {
    let mut base = ParamStore::new();
    for (name, _) in params.iter() {
        if let Some(m) = name.strip_suffix(".lora_A.weight") {
            let w = format!("{m}.weight");
            base.insert(&w, &params.get(&w)?)?;
        }
    }
    base.save(path)
}

/// Restores the adapted layers' own weights written by [`save_base`].
pub fn load_base(path: &Path, params: &ParamStore) -> Result<()> {
    let values: BTreeMap<String, Tensor> =
        candle_core::safetensors::load(path, &params.device())?.into_iter().collect();
    let adapted = |n: &str| n.strip_suffix(".weight").is_some_and(|m| params.contains(&a_name(m)));
    params.set_some(&values, adapted, path)
}
