//! The `vision_config` of a Qwen-VL `config.json`, read as transformers' `Qwen3VLVisionConfig`
//! reads it: every field that enters the tower's maths is honoured (sizes, heads, patch and merge
//! sizes, the learned position table, DeepStack layers, the activation, the axial RoPE θ) or
//! refused by name; bookkeeping fields are inert; an unknown field is refused, not guessed at.
//! Qwen2.5-VL's (`Qwen2_5_VLVisionConfig`: window attention, no learned positions, no
//! DeepStack) is read by `qwen25.rs` into the same struct, its `family` saying which tower it is.

use serde_json::{Map, Value as Json};

use crate::hf::HfError;
use crate::hf::config::INERT;

use super::processor::ImageProcessor;

/// The MLP activation inside the tower's blocks (`hidden_act`). The mergers always use the exact
/// (erf) GELU, whatever this says, as transformers' `Qwen3VLVisionPatchMerger` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VisionAct {
    /// `gelu_pytorch_tanh`, `gelu_new`, `gelu_fast`: the tanh approximation.
    GeluTanh,
    /// `gelu`: the exact, erf-based GELU.
    GeluErf,
    /// `silu` / `swish`.
    Silu,
    /// `quick_gelu`: x·σ(1.702x).
    QuickGelu,
}

impl VisionAct {
    pub(crate) fn parse(name: &str) -> Option<VisionAct> {
        match name {
            "gelu_pytorch_tanh" | "gelu_new" | "gelu_fast" => Some(VisionAct::GeluTanh),
            "gelu" => Some(VisionAct::GeluErf),
            "silu" | "swish" => Some(VisionAct::Silu),
            "quick_gelu" => Some(VisionAct::QuickGelu),
            _ => None,
        }
    }
}

/// Which Qwen-VL generation a checkpoint is: it decides the tower's blocks (LayerNorm and a plain
/// MLP with learned positions and DeepStack, or RMSNorm and a gated MLP with window attention),
/// the merger's norm and the text side's mRoPE layout (interleaved or in sections).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VlFamily {
    /// `qwen3_vl`: `Qwen3VLForConditionalGeneration`.
    Qwen3Vl,
    /// `qwen2_5_vl`: `Qwen2_5_VLForConditionalGeneration`.
    Qwen25Vl,
}

impl VlFamily {
    /// `model_type` in `config.json`.
    pub fn model_type(self) -> &'static str {
        match self {
            VlFamily::Qwen3Vl => "qwen3_vl",
            VlFamily::Qwen25Vl => "qwen2_5_vl",
        }
    }

    /// The `architectures` entry transformers writes.
    pub fn class(self) -> &'static str {
        match self {
            VlFamily::Qwen3Vl => "Qwen3VLForConditionalGeneration",
            VlFamily::Qwen25Vl => "Qwen2_5_VLForConditionalGeneration",
        }
    }

    /// The family a `model_type` names, `None` for any other.
    pub fn of_model_type(model_type: &str) -> Option<VlFamily> {
        match model_type {
            "qwen3_vl" => Some(VlFamily::Qwen3Vl),
            "qwen2_5_vl" => Some(VlFamily::Qwen25Vl),
            _ => None,
        }
    }
}

/// The fields of a Qwen-VL `vision_config` that define the tower.
#[derive(Debug, Clone, PartialEq)]
pub struct VisionConfig {
    /// Which tower the fields describe.
    pub family: VlFamily,
    /// Blocks (`depth`, alias `num_hidden_layers`).
    pub depth: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    /// Attention heads (`num_heads`, alias `num_attention_heads`).
    pub num_heads: usize,
    pub hidden_act: VisionAct,
    pub patch_size: usize,
    pub temporal_patch_size: usize,
    pub spatial_merge_size: usize,
    /// The width of a merged image token (the text model's hidden size).
    pub out_hidden_size: usize,
    /// Rows of the learned position table, a square of `side × side` (Qwen3-VL; 0 for
    /// Qwen2.5-VL, which has none).
    pub num_position_embeddings: usize,
    /// After which blocks (0-based) a DeepStack merger takes the hidden state, in that order
    /// (Qwen3-VL; empty for Qwen2.5-VL).
    pub deepstack_visual_indexes: Vec<usize>,
    /// θ of the axial 2-D RoPE (`rope_parameters.rope_theta`, 10 000 by default; Qwen2.5-VL's
    /// is always 10 000).
    pub rope_theta: f64,
    /// Qwen2.5-VL's attention window side in pixels (`window_size`, 112 by default); 0 for
    /// Qwen3-VL, whose blocks all attend over whole images.
    pub window_size: usize,
    /// Qwen2.5-VL's blocks (0-based) that attend over whole images; the others attend inside
    /// their window. Empty for Qwen3-VL.
    pub fullatt_block_indexes: Vec<usize>,
}

/// Fields read below, or checked (`model_type`, `in_channels`).
const READ: &[&str] = &[
    "model_type",
    "depth",
    "num_hidden_layers",
    "hidden_size",
    "intermediate_size",
    "num_heads",
    "num_attention_heads",
    "hidden_act",
    "in_channels",
    "patch_size",
    "temporal_patch_size",
    "spatial_merge_size",
    "out_hidden_size",
    "num_position_embeddings",
    "deepstack_visual_indexes",
    "rope_parameters",
    "head_dim",
];

/// Inert in a vision config beyond the text configs' inert fields (`INERT`).
const VISION_INERT: &[&str] = &["architectures", "attn_implementation"];

/// The tower's head width, `hidden_size / num_heads`: refused where `num_heads` does not divide
/// the width or the width is no multiple of 4 (the 2-D RoPE rotates pairs in each of its axes).
pub(crate) fn head_dim(hidden_size: usize, num_heads: usize) -> Result<usize, HfError> {
    if !hidden_size.is_multiple_of(num_heads) {
        return Err(field(
            "num_heads",
            format!("{num_heads} does not divide `hidden_size` = {hidden_size}"),
        ));
    }
    let head_dim = hidden_size / num_heads;
    if !head_dim.is_multiple_of(4) {
        return Err(field(
            "num_heads",
            format!(
                "the head width {head_dim} is not a multiple of 4: the 2-D RoPE rotates pairs in \
                 each of its two axes"
            ),
        ));
    }
    Ok(head_dim)
}

/// A `vision_config` object as both families read it: a field neither `read` nor the inert
/// ones name is refused by name (it may change the tower's outputs), and `model_type`, where
/// given, is one of the family's two.
pub(crate) struct Fields<'a> {
    obj: &'a Map<String, Json>,
}

impl<'a> Fields<'a> {
    pub(crate) fn checked(
        obj: &'a Map<String, Json>,
        read: &[&str],
        types: [&str; 2],
    ) -> Result<Fields<'a>, HfError> {
        if let Some(k) = obj.keys().find(|k| {
            let k = k.as_str();
            !read.contains(&k) && !INERT.contains(&k) && !VISION_INERT.contains(&k)
        }) {
            return Err(field(
                k,
                "this runtime does not know the field, so it cannot tell whether it changes the \
                 vision tower's outputs",
            ));
        }
        match obj.get("model_type").and_then(Json::as_str) {
            None => {}
            Some(m) if types.contains(&m) => {}
            Some(m) => return Err(field("model_type", format!("`{m}` is not `{}`", types[0]))),
        }
        Ok(Fields { obj })
    }

    /// Field `k`, unless absent or null.
    pub(crate) fn get(&self, k: &str) -> Option<&'a Json> {
        self.obj.get(k).filter(|x| !x.is_null())
    }

    /// Field `k` as a positive integer, `default` where it is absent.
    pub(crate) fn size(&self, k: &str, default: usize) -> Result<usize, HfError> {
        crate::hf::config::positive(self.get(k), default).map_err(|why| field(k, why))
    }
}

pub(crate) fn field(name: &str, why: impl Into<String>) -> HfError {
    HfError::Field { field: format!("vision_config.{name}"), why: why.into() }
}

impl VisionConfig {
    /// The tower's parameters as its checkpoint holds them (`model.visual.*`): the patch
    /// embedding (a 3-channel × temporal × patch² convolution with its bias), the learned
    /// position table, each block's two LayerNorms, fused qkv, output projection and two-layer
    /// MLP (all with biases), the merger (a LayerNorm over one patch, then two linear layers
    /// from the merged width `hidden × merge²` to the text model's width) and each DeepStack
    /// merger (the same, its LayerNorm over the merged width).
    /// Qwen2.5-VL's: the convolution without bias, no position table, RMSNorms (weights only),
    /// a gated MLP with biases and a merger whose RMSNorm is over one patch.
    pub fn parameters(&self) -> u64 {
        let (h, i) = (self.hidden_size as u64, self.intermediate_size as u64);
        let p = self.patch_size as u64;
        let t = self.temporal_patch_size as u64;
        let wide = h * (self.spatial_merge_size as u64).pow(2);
        let out = self.out_hidden_size as u64;
        if self.family == VlFamily::Qwen25Vl {
            let block = 2 * h + (3 * h * h + 3 * h) + (h * h + h) + 2 * (i * h + i) + (h * i + h);
            let merger = h + (wide * wide + wide) + (out * wide + out);
            return h * 3 * t * p * p + self.depth as u64 * block + merger;
        }
        let patch = h * 3 * t * p * p + h;
        let positions = self.num_position_embeddings as u64 * h;
        let block = 4 * h + (3 * h * h + 3 * h) + (h * h + h) + (i * h + i) + (h * i + h);
        let merger = |norm: u64| 2 * norm + (wide * wide + wide) + (out * wide + out);
        let deepstack = self.deepstack_visual_indexes.len() as u64 * merger(wide);
        patch + positions + self.depth as u64 * block + merger(h) + deepstack
    }

    /// Reads a Qwen3-VL `vision_config` object.
    pub fn from_map(obj: &Map<String, Json>) -> Result<VisionConfig, HfError> {
        let fields = Fields::checked(obj, READ, ["qwen3_vl_vision", "qwen3_vl"])?;
        let get = |k: &str| fields.get(k);
        let size = |k: &str, default: usize| fields.size(k, default);
        // transformers' `attribute_map`: `num_hidden_layers` is `depth`, `num_attention_heads`
        // is `num_heads`; both spellings present must agree.
        let aliased = |k: &str, alias: &str, default: usize| -> Result<usize, HfError> {
            let (a, b) = (size(k, default)?, size(alias, default)?);
            match (get(k), get(alias)) {
                (Some(_), Some(_)) if a != b => {
                    Err(field(alias, format!("{b} contradicts `{k}` = {a}")))
                }
                (None, Some(_)) => Ok(b),
                _ => Ok(a),
            }
        };
        let depth = aliased("depth", "num_hidden_layers", 27)?;
        let hidden_size = size("hidden_size", 1152)?;
        let num_heads = aliased("num_heads", "num_attention_heads", 16)?;
        let head_dim = head_dim(hidden_size, num_heads)?;
        // The RoPE table reads `head_dim` when set, the attention `hidden_size / num_heads`
        // always: a different value would rotate with frequencies of another width.
        if let Some(x) = get("head_dim")
            && x.as_u64() != Some(head_dim as u64)
        {
            return Err(field(
                "head_dim",
                format!(
                    "{x}: transformers' rotary table would use it while the attention uses \
                     `hidden_size / num_heads` = {head_dim}"
                ),
            ));
        }
        let act_name = get("hidden_act").and_then(Json::as_str).unwrap_or("gelu_pytorch_tanh");
        let hidden_act = VisionAct::parse(act_name).ok_or_else(|| {
            field(
                "hidden_act",
                format!(
                    "`{act_name}` is not implemented (gelu_pytorch_tanh, gelu_new, gelu_fast, \
                     gelu, silu, quick_gelu are)"
                ),
            )
        })?;
        if let Some(x) = get("in_channels")
            && x.as_u64() != Some(3)
        {
            return Err(field("in_channels", format!("{x}: the image processor makes RGB rows")));
        }
        for k in ["patch_size", "temporal_patch_size"] {
            if get(k).is_some_and(|x| !x.is_u64()) {
                return Err(field(
                    k,
                    "a list of sizes per axis is not supported; give one integer",
                ));
            }
        }
        let depth_list = deepstack(get("deepstack_visual_indexes"), depth)?;
        let num_position_embeddings = size("num_position_embeddings", 2304)?;
        let side = num_position_embeddings.isqrt();
        if side * side != num_position_embeddings {
            return Err(field(
                "num_position_embeddings",
                format!(
                    "{num_position_embeddings} is not a square: the learned positions are a \
                     side × side grid"
                ),
            ));
        }
        Ok(VisionConfig {
            family: VlFamily::Qwen3Vl,
            depth,
            hidden_size,
            intermediate_size: size("intermediate_size", 4304)?,
            num_heads,
            hidden_act,
            patch_size: size("patch_size", 16)?,
            temporal_patch_size: size("temporal_patch_size", 2)?,
            spatial_merge_size: size("spatial_merge_size", 2)?,
            out_hidden_size: size("out_hidden_size", 3584)?,
            num_position_embeddings,
            deepstack_visual_indexes: depth_list,
            rope_theta: rope_theta(get("rope_parameters"))?,
            window_size: 0,
            fullatt_block_indexes: Vec::new(),
        })
    }

    /// Width of one attention head.
    pub fn head_dim(&self) -> usize {
        self.hidden_size / self.num_heads
    }

    /// Side of the square learned position table.
    pub fn position_side(&self) -> usize {
        self.num_position_embeddings.isqrt()
    }

    /// Values of one patch row: 3 channels × temporal × patch × patch.
    pub fn patch_values(&self) -> usize {
        3 * self.temporal_patch_size * self.patch_size * self.patch_size
    }

    /// Whether `processor` cuts images into the patches this tower embeds; the first setting
    /// that differs, by name, when not.
    pub fn check_processor(&self, processor: &ImageProcessor) -> Result<(), HfError> {
        let pairs = [
            ("patch_size", processor.patch_size, self.patch_size),
            ("temporal_patch_size", processor.temporal_patch_size, self.temporal_patch_size),
            ("merge_size", processor.merge_size, self.spatial_merge_size),
        ];
        for (name, got, want) in pairs {
            if got != want {
                return Err(HfError::Files(format!(
                    "preprocessor_config.json: `{name}` is {got} but config.json's vision tower \
                     takes {want}"
                )));
            }
        }
        Ok(())
    }
}

/// `deepstack_visual_indexes`: distinct block indexes below `depth` (default `[8, 16, 24]`).
fn deepstack(x: Option<&Json>, depth: usize) -> Result<Vec<usize>, HfError> {
    block_list("deepstack_visual_indexes", x, depth, &[8, 16, 24])
}

/// A list of distinct block indexes below `depth` (`default` when absent), refused by `name`.
pub(crate) fn block_list(
    name: &str,
    x: Option<&Json>,
    depth: usize,
    default: &[usize],
) -> Result<Vec<usize>, HfError> {
    let list: Vec<usize> = match x {
        None => default.to_vec(),
        Some(Json::Array(a)) => a
            .iter()
            .map(|v| v.as_u64().map(|n| n as usize))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| field(name, format!("{} is not a list of block indexes", a.len())))?,
        Some(x) => return Err(field(name, format!("{x} is not a list of block indexes"))),
    };
    for (i, &n) in list.iter().enumerate() {
        if n >= depth {
            return Err(field(name, format!("{n} is not a block: `depth` is {depth}")));
        }
        if list[..i].contains(&n) {
            return Err(field(name, format!("{n} appears twice in the list of blocks")));
        }
    }
    Ok(list)
}

/// θ of `rope_parameters` (`rope_type` must be `axial`, transformers' only vision RoPE here).
fn rope_theta(x: Option<&Json>) -> Result<f64, HfError> {
    let Some(x) = x else { return Ok(10_000.0) };
    let m =
        x.as_object().ok_or_else(|| field("rope_parameters", format!("{x} is not an object")))?;
    for (k, v) in m {
        match k.as_str() {
            "rope_type" if v.as_str() == Some("axial") || v.is_null() => {}
            "rope_type" => {
                return Err(field(
                    "rope_parameters.rope_type",
                    format!("{v}: the vision tower's RoPE is `axial`"),
                ));
            }
            "rope_theta" => {}
            other => {
                return Err(field(
                    &format!("rope_parameters.{other}"),
                    "not a parameter of the axial RoPE; refused rather than ignored",
                ));
            }
        }
    }
    match m.get("rope_theta").filter(|v| !v.is_null()) {
        None => Ok(10_000.0),
        Some(v) => v.as_f64().filter(|t| *t > 0.0).ok_or_else(|| {
            field("rope_parameters.rope_theta", format!("{v} is not a positive number"))
        }),
    }
}
