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
