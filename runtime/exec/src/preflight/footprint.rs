//! Each trained model's parameter count by part and the memory each stage that trains it
//! holds, per dtype (`wrl_trainer::footprint`): the models part of `wrlc estimate`, and what
//! the preflight holds against the machine's memory (`memory.rs`). A tiny model's sizes are in
//! the plan; a Hugging Face model's come from its `config.json`, found offline as `wrlc run`
//! finds it, and are unknown (with the reason) when it is not on this machine.

use std::collections::BTreeMap;

use serde::Serialize;
use wrl_plan::params::{Model, Params};
use wrl_plan::{NodeKind, Plan};
use wrl_trainer::footprint::{DTYPES, Memory, Rollout, Shape, Step};
use wrl_trainer::hf::{self, RepoKind};

/// One model node.
#[derive(Debug, Serialize)]
pub struct ModelFootprint {
    pub id: String,
    pub ctor: String,
    /// Where the sizes came from (`recipe`, or the `config.json` read), or why they are unknown.
    pub source: String,
    /// The dtype the recipe trains it in.
    pub dtype: String,
    /// Whether its layers are recomputed in the backward pass (`gradient_checkpointing`).
    pub gradient_checkpointing: bool,
    /// Where it trains: `cpu`, `cuda(N)`, or `auto` (the CPU in a build without CUDA).
    pub device: String,
    pub shape: Option<Shape>,
    pub stages: Vec<StageFootprint>,
}

/// One stage that trains the model.
#[derive(Debug, Serialize)]
pub struct StageFootprint {
    pub id: String,
    /// Sequences one forward holds, and their length in tokens.
    pub sequences: u64,
    pub length: u64,
    pub trained_parameters: u64,
    /// LoRA adapter parameters (the only ones that train when there are some).
    pub adapter_parameters: u64,
    /// How its episodes are decoded (RL stages).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rollout: Option<Rollout>,
    /// Bytes by dtype (`f32`, `bf16`, `f16`).
    pub memory: BTreeMap<String, Memory>,
    /// What the figures were computed from (`fit.rs` recomputes them under other settings).
    #[serde(skip)]
    pub step: Step,
}

/// What one stage trains and how: its model node, forward batch and frozen parts.
struct Trains {
    stage: String,
    model: String,
    sequences: Option<u64>,
    length: Option<u64>,
    frozen_embeddings: bool,
    frozen_head: bool,
    reference: bool,
    lora: Option<(u64, Vec<String>)>,
    /// Episodes decoded at once and their length, for a stage that samples them.
    rollout: Option<(u64, u64)>,
}

/// The model nodes of `plan` that a stage trains, with their stages' memory.
pub fn models(plan: &Plan) -> Vec<ModelFootprint> {
    // Node by node: a node `wrlc run` would refuse (an `unknown` in it) is left out, not the
    // whole part.
    let nodes: Vec<(&wrl_plan::Node, Params)> =
        plan.nodes.iter().filter_map(|n| Some((n, wrl_plan::params::decode(n).ok()?))).collect();
    let trains: Vec<Trains> = nodes.iter().flat_map(|(n, p)| trains(plan, n, p)).collect();
    let mut out = Vec::new();
    for (n, p) in &nodes {
        let Params::Model(m) = p else { continue };
        let Some(mut fp) = model(n, m) else { continue };
        if let Some(shape) = fp.shape.clone() {
            let context = match m {
                Model::Tiny(t) => tiny_config(t).context as u64,
                Model::Hf(h) => h.context.0,
                Model::Api(_) => 0,
            };
            let cpu = on_cpu(m);
            for t in trains.iter().filter(|t| t.model == n.id) {
                fp.stages.push(stage(&shape, t, context, fp.gradient_checkpointing, cpu));
            }
        }
        out.push(fp);
    }
    out
}

/// A model node's sizes, dtype and device, with no stages yet; `None` for a served model.
fn model(n: &wrl_plan::Node, m: &Model) -> Option<ModelFootprint> {
    let device = match m {
        Model::Tiny(t) => t.device,
        Model::Hf(h) => h.device,
        Model::Api(_) => return None,
    };
    let device = match device {
        wrl_plan::params::Device::Auto => "auto".to_string(),
        wrl_plan::params::Device::Cpu => "cpu".to_string(),
        wrl_plan::params::Device::Cuda(c) => format!("cuda({})", c.ordinal),
    };
    let (source, dtype, shape, checkpointing) = match m {
        Model::Api(_) => return None,
        Model::Tiny(t) => {
            let c = tiny_config(t);
            ("recipe".to_string(), "f32", Some(Shape::of_tiny(&c)), false)
        }
        Model::Hf(h) => {
            let dtype = match h.dtype {
                wrl_plan::params::DType::Bf16 => "bf16",
                wrl_plan::params::DType::F16 => "f16",
                wrl_plan::params::DType::F32 => "f32",
            };
            match shape_of(&h.id) {
                Ok(s) => ("config.json".to_string(), dtype, Some(s), h.gradient_checkpointing),
                Err(e) => (format!("unknown: {e}"), dtype, None, h.gradient_checkpointing),
            }
        }
    };
    Some(ModelFootprint {
        id: n.id.clone(),
        ctor: n.ctor.clone(),
        source,
        dtype: dtype.to_string(),
        gradient_checkpointing: checkpointing,
        device,
        shape,
        stages: Vec::new(),
    })
}

/// Whether `m` trains on the CPU: `cpu`, or `auto` in a build without CUDA.
pub(crate) fn on_cpu(m: &Model) -> bool {
    let device = match m {
        Model::Tiny(t) => t.device,
        Model::Hf(h) => h.device,
        Model::Api(_) => return false,
    };
    match super::device_choice(device) {
        wrl_trainer::DeviceChoice::Cpu => true,
        wrl_trainer::DeviceChoice::Auto => !wrl_trainer::CUDA_BUILT,
        wrl_trainer::DeviceChoice::Cuda(_) => false,
    }
}

/// One stage's figures per dtype. No sequence is longer than the model's context; RL scores
/// whole episodes, as long as `wrl_plan::episode_tokens` says (the model's context where the
/// plan does not), as many per forward as the trainer's token budget holds. `cpu`: the model
/// is on the CPU (in f32 it decodes on the batched CPU decoder).
fn stage(
    shape: &Shape,
    t: &Trains,
    context: u64,
    checkpointing: bool,
    cpu: bool,
) -> StageFootprint {
    let length = t.length.map_or(context, |l| l.min(context)).max(1);
    let per_forward = wrl_trainer::rl_update::TOKENS_PER_FORWARD as u64;
    let fit = (per_forward / length).max(1);
    // An SFT stage's micro-batch is what it is; an RL update's forward batch is as many of its
    // mini-batch's sequences as the token budget holds.
    let sequences = match (t.sequences, t.rollout) {
        (Some(n), None) => n,
        (Some(n), Some(_)) => n.min(fit).max(1),
        (None, _) => fit,
    };
    let trained =
        if t.lora.is_some() { 0 } else { shape.trainable(t.frozen_embeddings, t.frozen_head) };
    let rollout = t.rollout.map(|(sequences, len)| Rollout {
        sequences,
        length: len.min(context).max(1),
        on_cpu: cpu,
    });
    let step = Step {
        sequences,
        length,
        trainable: trained,
        reference: t.reference,
        checkpointing,
        lora: t.lora.clone(),
        rollout,
    };
    let memory = DTYPES
        .iter()
        .map(|(name, width)| (name.to_string(), shape.memory(*width, &step)))
        .collect();
    let adapters = t.lora.as_ref().map_or(0, |(r, ts)| shape.lora_params(*r, ts));
    StageFootprint {
        id: t.stage.clone(),
        sequences,
        length,
        trained_parameters: trained + adapters,
        adapter_parameters: adapters,
        rollout,
        memory,
        step,
    }
}

/// A Hugging Face model's `config.json`, found as `wrlc run` finds the model; the config is
/// all the estimate reads, so a snapshot holding only it (`huggingface-cli download ORG/NAME
/// config.json`) is enough.
/// The shape of the `hf(…)` model `id`: a Qwen text model, or a Qwen3-VL (its text model and
/// its frozen tower).
fn shape_of(id: &str) -> Result<Shape, hf::HfError> {
    let dir = hf::resolve(id, RepoKind::Model)?;
    let text = std::fs::read_to_string(dir.join("config.json"))
        .map_err(|e| hf::HfError::Files(format!("cannot read `config.json`: {e}")))?;
    if wrl_trainer::vision::vl_config::VlConfig::is_vl(&text) {
        let c = wrl_trainer::vision::vl_config::VlConfig::parse(&text)?;
        return Ok(Shape::of_qwen_vl(&c));
    }
    Ok(Shape::of_qwen(&hf::read_config(&dir)?))
}

/// What a node trains: its policy, and PPO's critic (a network of its own, trained beside it,
/// listed under the critic's model as `<phase> (critic)`).
fn trains(plan: &Plan, n: &wrl_plan::Node, p: &Params) -> Vec<Trains> {
    let mut out: Vec<Trains> = policy_trains(plan, n, p).into_iter().collect();
    if let Params::RlPhase(r) = p
        && let Some(c) = r.algo.critic()
        && let Some(model) = base_model(plan, &c.init.0)
    {
        out.push(Trains {
            stage: format!("{} (critic)", n.id),
            model,
            sequences: None,
            // The critic scores the policy's episodes: as long as theirs.
            length: wrl_plan::episode_tokens(plan, n),
            frozen_embeddings: false,
            frozen_head: false,
            reference: false,
            lora: None,
            rollout: None,
        });
    }
    out
}

fn policy_trains(plan: &Plan, n: &wrl_plan::Node, p: &Params) -> Option<Trains> {
    let (from, sequences, length, frozen, reference, lora, rollout) = match p {
        Params::Sft(s) => {
            let micro = u64::from(s.micro_batch.max(1)).min(u64::from(s.batch.max(1)));
            (&s.model.0, Some(micro), Some(s.max_length.0), &s.frozen, false, &s.lora, None)
        }
        // An episode's sequence is as long as the one rule says (task text + observations +
        // the replies `trajectory_tokens` bounds), not the model's whole context (#47).
        Params::RlPhase(r) => {
            let length = wrl_plan::episode_tokens(plan, n);
            let at_once = crate::env::settings::concurrency(
                plan.nodes
                    .iter()
                    .filter_map(|n| match wrl_plan::params::decode(n) {
                        Ok(Params::Env(e)) if n.kind == NodeKind::Env => Some(e),
                        _ => None,
                    })
                    .collect::<Vec<_>>()
                    .iter(),
            ) as u64;
            let rollout = Some((at_once.max(1), length.unwrap_or(u64::MAX)));
            let u = &r.update;
            let seqs = mini_batch_samples(plan, r);
            (&r.run.init.0, seqs, length, &u.frozen, u.kl > 0.0, &u.lora, rollout)
        }
        _ => return None,
    };
    let lora = lora.value().map(|l| {
        let l = l.get();
        (u64::from(l.rank), l.targets.iter().map(|t| t.word().to_string()).collect())
    });
    use wrl_plan::params::FrozenPart;
    Some(Trains {
        stage: n.id.clone(),
        model: base_model(plan, from)?,
        sequences,
        length,
        frozen_embeddings: frozen.contains(&FrozenPart::Embeddings),
        frozen_head: frozen.contains(&FrozenPart::LmHead),
        reference,
        lora,
        rollout,
    })
}

/// At most how many sequences an RL update's mini-batch holds: its `mini_batch` in samples or
/// turns, or its trajectories (or prompt groups) times the agent's `max_turns`. The trainer's
/// forward batches hold as many of them as its token budget allows (`stage`), never more.
fn mini_batch_samples(plan: &Plan, r: &wrl_plan::params::RlPhase) -> Option<u64> {
    use wrl_plan::params::{Agent, BatchSize};
    let turns = match plan.node(r.run.agent.id()).map(wrl_plan::params::decode) {
        Some(Ok(Params::Agent(Agent::React(a)))) => u64::from(a.max_turns.0).max(1),
        _ => return None,
    };
    let group = u64::from(r.rollout.group.max(1));
    Some(match r.update.mini_batch {
        BatchSize::Samples(n) | BatchSize::Turns(n) => u64::from(n),
        BatchSize::Trajectories(n) => u64::from(n) * turns,
        BatchSize::Prompts(n) => u64::from(n) * group * turns,
    })
}

/// The model node whose weights `start` (a model, a checkpoint or a stage) descends from.
fn base_model(plan: &Plan, start: &str) -> Option<String> {
    let mut id = start.to_string();
    for _ in 0..256 {
        let n = plan.node(&id)?;
        let port = match n.kind {
            NodeKind::LoadModel => return Some(n.id.clone()),
            NodeKind::Checkpoint | NodeKind::Sft => "model",
            NodeKind::RlPhase => "init",
            NodeKind::LoadDataset
            | NodeKind::Env
            | NodeKind::Agent
            | NodeKind::Reward
            | NodeKind::Eval => return None,
        };
        let from = plan.inputs(&id).find(|e| e.port == port)?.from.clone();
        id = from;
    }
    None
}

/// Bytes in binary units with three significant figures: `1.50 GiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut x = n as f64;
    let mut u = 0;
    while x >= 1024.0 && u + 1 < UNITS.len() {
        x /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else if x >= 100.0 {
        format!("{x:.0} {}", UNITS[u])
    } else if x >= 10.0 {
        format!("{x:.1} {}", UNITS[u])
    } else {
        format!("{x:.2} {}", UNITS[u])
    }
}

/// The trainer's configuration of a `tiny_transformer` node (what the run builds, what the
/// preflight validates and what `wrlc estimate` counts).
pub fn tiny_config(t: &wrl_plan::params::TinyTransformer) -> wrl_trainer::TinyConfig {
    // The seed and the device are the trainer's (`load_model`), not the network's shape.
    let wrl_plan::params::TinyTransformer {
        layers,
        d_model,
        heads,
        context,
        positions,
        copy,
        seed: _,
        device: _,
    } = t;
    wrl_trainer::TinyConfig {
        layers: *layers as usize,
        d_model: *d_model as usize,
        heads: *heads as usize,
        context: context.0 as usize,
        positions: match positions {
            wrl_plan::params::Positions::Learned => wrl_trainer::Positions::Learned,
            wrl_plan::params::Positions::Alibi => wrl_trainer::Positions::Alibi,
        },
        copy: *copy,
        ..wrl_trainer::TinyConfig::default()
    }
}

#[cfg(test)]
mod tests {
    use super::bytes;

    #[test]
    fn bytes_read_in_binary_units() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.50 KiB");
        assert_eq!(bytes(15 * 1024 * 1024), "15.0 MiB");
        assert_eq!(bytes(300 << 30), "300 GiB");
    }
}
