//! Shared helpers: small trainer configs and parameter snapshots.

use std::collections::BTreeMap;

use wrl_trainer::{
    DeviceChoice, OpsMode, OptimConfig, PolicyConfig, Positions, TinyConfig, Trainer, TrainerConfig,
};

/// A tiny model config small enough for debug-build tests.
pub fn tiny(layers: usize, d: usize, ops: OpsMode) -> PolicyConfig {
    PolicyConfig::Tiny(TinyConfig {
        layers,
        d_model: d,
        heads: 2,
        context: 64,
        mlp_ratio: 4,
        positions: Positions::Learned,
        copy: false,
        ops,
    })
}

/// The same tiny model with ALiBi instead of learned positions.
pub fn tiny_alibi(layers: usize, d: usize, ops: OpsMode) -> PolicyConfig {
    match tiny(layers, d, ops) {
        PolicyConfig::Tiny(c) => {
            PolicyConfig::Tiny(TinyConfig { positions: Positions::Alibi, ..c })
        }
        other => other,
    }
}

/// The ALiBi tiny model with the copy head (`std::models::tiny`'s shape, smaller).
pub fn tiny_copy(layers: usize, d: usize, ops: OpsMode) -> PolicyConfig {
    match tiny_alibi(layers, d, ops) {
        PolicyConfig::Tiny(c) => PolicyConfig::Tiny(TinyConfig { copy: true, ..c }),
        other => other,
    }
}

/// A CPU trainer.
pub fn trainer(policy: PolicyConfig, lr: f64, wd: f64, seed: u64) -> Trainer {
    Trainer::new(TrainerConfig {
        policy,
        optim: OptimConfig { lr, weight_decay: wd, ..OptimConfig::default() },
        seed,
        device: DeviceChoice::Cpu,
    })
    .unwrap()
}

/// All parameter values by name.
pub fn snapshot(t: &Trainer) -> BTreeMap<String, Vec<f32>> {
    t.model()
        .params()
        .iter()
        .map(|(n, v)| (n.clone(), v.as_tensor().flatten_all().unwrap().to_vec1::<f32>().unwrap()))
        .collect()
}

/// Names of parameters whose values did not change at all between two snapshots.
pub fn unchanged(a: &BTreeMap<String, Vec<f32>>, b: &BTreeMap<String, Vec<f32>>) -> Vec<String> {
    a.iter().filter(|(n, v)| b[*n] == **v).map(|(n, _)| n.clone()).collect()
}

/// Each of `groups` prompts (`job(i)`: the prompt and its sampling) decoded alone by the
/// sampler of stream 100 + i of `t` (whose seed is `seed`), then all at once, one thread each,
/// through `batcher` from the same streams: (alone, together).
pub fn alone_and_together(
    t: &Trainer,
    batcher: &wrl_trainer::decode::Batcher,
    (groups, seed): (usize, u64),
    job: impl Fn(usize) -> (Vec<u32>, wrl_trainer::SampleParams) + Sync,
) -> (Vec<Vec<wrl_trainer::Completion>>, Vec<Vec<wrl_trainer::Completion>>) {
    let alone: Vec<_> = (0..groups)
        .map(|i| {
            let (prompt, params) = job(i);
            t.sampler_for(100 + i as u64).sample(&[prompt], &params).unwrap()
        })
        .collect();
    let barrier = std::sync::Barrier::new(groups);
    let together = std::thread::scope(|s| {
        let hs: Vec<_> = (0..groups)
            .map(|i| {
                let (barrier, job) = (&barrier, &job);
                let stream = wrl_trainer::rng::mix(seed, 100 + i as u64);
                let mut rng = wrl_trainer::rng::rng_from_seed(stream);
                s.spawn(move || {
                    let (prompt, params) = job(i);
                    barrier.wait();
                    batcher.sample(&[prompt], &params, &mut rng)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap().unwrap()).collect()
    });
    (alone, together)
}

/// The largest difference between `ours` and candle's next-token scores after feeding `feed`
/// to `model` over `cache` (which advances).
pub fn candle_difference(
    model: &wrl_trainer::models::Model,
    cache: &mut wrl_trainer::models::KvCache,
    feed: &[u32],
    ours: &[f32],
) -> f32 {
    let device = candle_core::Device::Cpu;
    let ids = candle_core::Tensor::from_vec(feed.to_vec(), (1, feed.len()), &device).unwrap();
    let theirs: Vec<f32> =
        model.forward_cached_last(&ids, cache).unwrap().squeeze(0).unwrap().to_vec1().unwrap();
    assert_eq!(ours.len(), theirs.len(), "score widths");
    ours.iter().zip(&theirs).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max)
}

/// Completion `c` of `prompt` as an RL sample of group `group` (its own id `trajectory`),
/// rewarded `reward`: no mask, advantage or images (set them with struct update).
pub fn sample(
    prompt: &[u32],
    c: wrl_trainer::Completion,
    reward: f32,
    (group, trajectory): (u64, u64),
) -> wrl_trainer::Sample {
    wrl_trainer::Sample {
        prompt_tokens: prompt.to_vec(),
        reward,
        completion_tokens: c.tokens,
        old_logprobs: c.logprobs,
        completion_mask: None,
        advantage: None,
        group_id: group,
        trajectory_id: trajectory,
        excluded: false,
        truncated: false,
        step: None,
        images: Vec::new(),
    }
}

/// The tiny random Qwen3-VL (`hf::tiny_vl`) in a temporary directory, its tokenizer learned from
/// one short sentence.
pub fn tiny_vl() -> tempfile::TempDir {
    use wrl_trainer::hf::tiny::{TinySpec, TokenizerSource};
    let dir = tempfile::tempdir().expect("a temporary directory");
    let corpus = vec!["click the blue button then type the answer".to_string()];
    let tok = TokenizerSource::Generated { corpus, merges: 20 };
    let vision = wrl_trainer::hf::tiny_vl::TinyVision::default();
    wrl_trainer::hf::tiny_vl::write_vl(dir.path(), &TinySpec::narrow(), &vision, &tok)
        .expect("the tiny Qwen3-VL");
    dir
}

/// A trainer (lr 3e-3, on the CPU, seeded `seed`) of the Qwen3-VL model in `dir`.
pub fn vl_trainer(dir: &std::path::Path, seed: u64) -> Trainer {
    let policy = PolicyConfig::Qwen3Vl(wrl_trainer::models::PretrainedSource::new(dir));
    let optim = OptimConfig { lr: 3e-3, ..OptimConfig::default() };
    Trainer::new(TrainerConfig { policy, optim, seed, device: DeviceChoice::Cpu })
        .expect("the VL trainer")
}

/// A `w` × `h` patterned screenshot (`seed` shifts the pattern) as the processor in `dir` reads it.
pub fn screen(
    dir: &std::path::Path,
    seed: usize,
    (w, h): (usize, usize),
) -> wrl_trainer::vision::Pixels {
    let raw: Vec<u8> = (0..w * h * 3).map(|i| ((i * 31 + seed * 97) % 251) as u8).collect();
    let processor = wrl_trainer::vision::ImageProcessor::from_dir(dir).expect("its processor");
    processor.process(&raw, w, h, 3).expect("the screenshot")
}

/// A `w` × `h` patterned RGB screenshot's raw bytes (`seed` shifts the pattern).
pub fn screenshot(w: usize, h: usize, seed: usize) -> Vec<u8> {
    (0..w * h * 3).map(|i| ((i * 37 + seed * 101) % 253) as u8).collect()
}

/// `pre` text ids, then each image's `<|vision_start|><|image_pad|>…<|vision_end|>` (a pad per
/// merged token: the tiny models merge 2 × 2 patches), then `post`.
pub fn with_images(
    m: &wrl_trainer::vision::QwenVlModel,
    pre: &[u32],
    images: &[wrl_trainer::vision::Pixels],
    post: &[u32],
) -> Vec<u32> {
    let c = &m.config;
    let mut ids = pre.to_vec();
    for px in images {
        ids.push(c.vision_start_token_id);
        ids.extend(std::iter::repeat_n(c.mrope.image_token_id, px.grid.patches() / 4));
        ids.push(c.vision_end_token_id);
    }
    ids.extend_from_slice(post);
    ids
}

/// The largest absolute difference between two tensors of one shape.
pub fn max_diff(a: &candle_core::Tensor, b: &candle_core::Tensor) -> f32 {
    (a - b).unwrap().abs().unwrap().max_all().unwrap().to_scalar::<f32>().unwrap()
}
