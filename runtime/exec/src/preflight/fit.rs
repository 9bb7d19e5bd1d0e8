//! Which stages fit a device, and what would make the others fit: `wrlc estimate --device`,
//! and the way out the preflight's E0505 names. A stage fits when its estimated peak
//! (`footprint.rs`, in the model's dtype) is within the device's memory; for one that does not,
//! the usual remedies are tried one on top of the other, in the order a user reaches for them
//! (recompute layers, bf16, LoRA adapters, one sequence per forward, fewer episodes at once),
//! and the first combination that fits is named with its figure.

use serde::Serialize;
use wrl_trainer::footprint::{Shape, Step};

use super::footprint::{ModelFootprint, StageFootprint};

/// A device's memory as its driver reports it (`nvidia-smi`'s total, MiB), by a name a user
/// types. A GPU's CUDA context takes a few hundred MiB of it, which no figure here counts.
pub const DEVICES: [(&str, u64); 8] = [
    ("a100-40g", 40_960),
    ("a100-80g", 81_920),
    ("h100-80g", 81_559),
    ("h200-141g", 143_771),
    ("l40s-48g", 46_068),
    ("rtx4090-24g", 24_564),
    ("l4-24g", 23_034),
    ("a10-24g", 23_028),
];

/// A device to fit stages on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Device {
    pub name: String,
    pub bytes: u64,
}

/// Reads `--device`: a name of [`DEVICES`], `cpu` (this machine's memory), or a size such as
/// `24GiB`, `80GB` or `512MiB`.
pub fn parse_device(s: &str) -> Result<Device, String> {
    let t = s.trim().to_ascii_lowercase();
    if let Some((name, mib)) = DEVICES.iter().find(|(n, _)| *n == t) {
        return Ok(Device { name: name.to_string(), bytes: mib * (1 << 20) });
    }
    if t == "cpu" {
        let bytes = machine_memory().ok_or(
            "this machine's memory cannot be read (/proc/meminfo); give a size: `--device 64GiB`",
        )?;
        return Ok(Device { name: "cpu (this machine)".into(), bytes });
    }
    let units = [("gib", 1u64 << 30), ("mib", 1 << 20), ("gb", 1_000_000_000), ("mb", 1_000_000)];
    for (unit, scale) in units {
        if let Some(n) = t.strip_suffix(unit)
            && let Ok(x) = n.trim().parse::<f64>()
            && x > 0.0
            && x.is_finite()
        {
            return Ok(Device { name: s.trim().to_string(), bytes: (x * scale as f64) as u64 });
        }
    }
    let names: Vec<&str> = DEVICES.iter().map(|(n, _)| *n).collect();
    Err(format!(
        "unknown device `{s}`: expected one of {}, `cpu` (this machine), or a size such as `24GiB` or `80GB`",
        names.join(", ")
    ))
}

/// One stage on one device.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StageFit {
    pub model: String,
    pub stage: String,
    pub dtype: String,
    /// Its estimated peak in the model's dtype, and the device's memory.
    pub need: u64,
    pub have: u64,
    pub fits: bool,
    /// For a stage that does not fit: the changes that make it fit and its peak with them
    /// (`None` when none of the remedies tried is enough).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub way_out: Option<WayOut>,
}

/// Changes to the recipe that make a stage fit, and the peak they give.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WayOut {
    pub changes: Vec<String>,
    pub need: u64,
}

/// Every trained stage of `models` against `device`.
pub fn fit(models: &[ModelFootprint], device: &Device) -> Vec<StageFit> {
    let mut out = Vec::new();
    for m in models {
        let Some(shape) = &m.shape else { continue };
        for st in &m.stages {
            let Some(need) = st.memory.get(&m.dtype).map(|b| b.total) else { continue };
            let fits = need <= device.bytes;
            out.push(StageFit {
                model: m.id.trim_start_matches("model:").to_string(),
                stage: st.id.clone(),
                dtype: m.dtype.clone(),
                need,
                have: device.bytes,
                fits,
                way_out: if fits { None } else { way_out(shape, m, st, device.bytes) },
            });
        }
    }
    out
}

/// The first of the cumulative remedies under which the stage fits in `have` bytes.
pub fn way_out(
    shape: &Shape,
    m: &ModelFootprint,
    st: &StageFootprint,
    have: u64,
) -> Option<WayOut> {
    let mut step: Step = st.step.clone();
    let mut width = width_of(&m.dtype);
    let mut changes = Vec::new();
    // Recomputation, a dtype and LoRA are an `hf(…)` model's fields; the tiny model has none.
    let hf = m.ctor == "hf";
    let tries: [&Remedy<'_>; 5] = [
        &|s, _| {
            (hf && !s.checkpointing).then(|| {
                s.checkpointing = true;
                "`gradient_checkpointing = true` on the model".to_string()
            })
        },
        &|_, w| {
            (hf && *w == 4).then(|| {
                *w = 2;
                "`dtype = bf16` on the model".to_string()
            })
        },
        &|s, _| {
            (hf && s.lora.is_none() && shape.gated).then(|| {
                s.lora = Some((16, ALL_TARGETS.map(String::from).to_vec()));
                s.trainable = 0;
                LORA_CHANGE.to_string()
            })
        },
        &|s, _| {
            (s.sequences > 1 && s.rollout.is_none()).then(|| {
                s.sequences = 1;
                "one sequence per forward (an SFT stage's `micro_batch = 1`)".to_string()
            })
        },
        &|s, _| match &mut s.rollout {
            Some(r) if r.sequences > 1 => {
                r.sequences = 1;
                Some("one episode at a time (the env's `concurrency = 1`)".to_string())
            }
            _ => None,
        },
    ];
    for t in tries {
        let Some(change) = t(&mut step, &mut width) else { continue };
        changes.push(change);
        let need = shape.memory(width, &step).total;
        if need <= have {
            return Some(WayOut { changes, need });
        }
    }
    None
}

/// A change to a stage's step (and its dtype width), said as the recipe would say it, or
/// `None` where it does not apply.
type Remedy<'a> = dyn Fn(&mut Step, &mut u64) -> Option<String> + 'a;

/// The LoRA remedy as the recipe would say it.
const LORA_CHANGE: &str = "`lora = lora(16) { targets = [q_proj, k_proj, v_proj, o_proj, \
                           gate_proj, up_proj, down_proj] }` on the stage";

/// PEFT's names of every linear layer of a Qwen decoder layer.
const ALL_TARGETS: [&str; 7] =
    ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"];

fn width_of(dtype: &str) -> u64 {
    wrl_trainer::footprint::DTYPES.iter().find(|(n, _)| *n == dtype).map_or(4, |(_, w)| *w)
}

/// This machine's memory in bytes (`MemTotal` of `/proc/meminfo`), when it can be read.
pub(crate) fn machine_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}
