//! The plan JSON the executor passes deserialises into the public config types.

use wrl_trainer::{
    DeviceChoice, OpsMode, PolicyConfig, Positions, RlConfig, ScheduleKind, TinyConfig,
    TrainerConfig,
};

#[test]
fn plan_json_deserialises() {
    let p: PolicyConfig =
        serde_json::from_str(r#"{ "family": "tiny", "layers": 3, "d_model": 96 }"#).unwrap();
    assert_eq!(
        p,
        PolicyConfig::Tiny(TinyConfig {
            layers: 3,
            d_model: 96,
            heads: 4,
            context: 256,
            mlp_ratio: 4,
            positions: Positions::Learned,
            copy: false,
            ops: OpsMode::Auto
        })
    );
    let q: PolicyConfig = serde_json::from_str(r#"{ "family": "qwen3", "path": "/m/q" }"#).unwrap();
    assert!(matches!(q, PolicyConfig::Qwen3(ref s) if s.path.to_str() == Some("/m/q")));
    let t: TrainerConfig = serde_json::from_str(
        r#"{ "policy": { "family": "tiny" }, "seed": 3, "device": { "cuda": 1 },
             "optim": { "lr": 5e-7, "betas": [0.9, 0.98], "weight_decay": 0.1, "grad_clip": 1.0,
                        "schedule": { "kind": "cosine", "warmup_ratio": 0.1, "total_steps": 90 } } }"#,
    )
    .unwrap();
    assert_eq!(t.device, DeviceChoice::Cuda(1));
    assert_eq!(t.optim.betas, (0.9, 0.98));
    assert_eq!(t.optim.schedule.kind, ScheduleKind::Cosine);
    let back: TrainerConfig = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
    assert_eq!(back, t);
    let rl: RlConfig = serde_json::from_str(
        r#"{ "clip_high": 0.28, "aggregation": "seq_mean_token_mean", "kl": { "coef": 0.01, "estimator": "k1" },
             "overlong": { "max_len": 512, "cache_len": 128 }, "dynamic_sampling": true, "ppo_epochs": 2 }"#,
    )
    .unwrap();
    assert_eq!(rl.clip_low, 0.2);
    assert_eq!(rl.overlong.unwrap().penalty, 1.0);
    assert!(serde_json::from_str::<PolicyConfig>(r#"{ "family": "llama" }"#).is_err());
}
