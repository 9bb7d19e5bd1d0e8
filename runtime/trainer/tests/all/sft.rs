//! SFT: rendering and masks, per-turn expansion, mixtures, schedules, memorisation.

use wrl_trainer::data::effective_number;
use wrl_trainer::{
    Dataset, Example, Mixture, MixtureWeights, ObservationHistory, OpsMode, Role, Schedule,
    ScheduleKind, Segment, SftConfig, Tokenizer, Trajectory, per_turn, render,
};

use crate::common::{tiny, trainer};

fn traj() -> Trajectory {
    Trajectory {
        segments: vec![
            Segment::new(Role::User, "find x"),
            Segment::new(Role::Observation, "page1"),
            Segment::new(Role::Assistant, "click"),
            Segment::new(Role::Tool, "ok"),
            Segment::new(Role::Observation, "page2"),
            Segment::new(Role::Assistant, "done"),
        ],
        tools: Vec::new(),
    }
}

#[test]
fn render_masks_only_assistant_content_and_eos() {
    let ex = render(&Tokenizer::Bytes, &traj(), 1000).unwrap();
    let trained: Vec<u32> =
        ex.tokens.iter().zip(&ex.weights).filter(|(_, w)| **w != 0.0).map(|(t, _)| *t).collect();
    let mut want: Vec<u32> = b"click".iter().map(|&b| b as u32).collect();
    want.push(257);
    want.extend(b"done".iter().map(|&b| b as u32));
    want.push(257);
    assert_eq!(trained, want);
    assert_eq!(ex.trained_tokens(), 11);
}

#[test]
fn per_turn_keeps_only_current_observation() {
    let turns = per_turn(&traj(), &ObservationHistory::CurrentOnly);
    assert_eq!(turns.len(), 2);
    let second = &turns[1];
    let obs: Vec<&str> = second
        .segments
        .iter()
        .filter(|s| s.role == Role::Observation)
        .map(|s| s.text.as_str())
        .collect();
    assert_eq!(obs, vec!["page2"]);
    let trained: Vec<&str> =
        second.segments.iter().filter(|s| s.trained()).map(|s| s.text.as_str()).collect();
    assert_eq!(trained, vec!["done"]);
    let ph = per_turn(&traj(), &ObservationHistory::Placeholder("[obs]".into()));
    let obs: Vec<&str> = ph[1]
        .segments
        .iter()
        .filter(|s| s.role == Role::Observation)
        .map(|s| s.text.as_str())
        .collect();
    assert_eq!(obs, vec!["[obs]", "page2"]);
}

#[test]
fn jsonl_messages_parse() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("d.jsonl");
    std::fs::write(
        &p,
        "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"},{\"role\":\"assistant\",\"content\":\"yo\"}]}\n\n",
    )
    .unwrap();
    let t = wrl_trainer::data::load_jsonl(&p).unwrap();
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].segments[1].role, Role::Assistant);
    std::fs::write(&p, "{\"messages\":[{\"role\":\"robot\",\"content\":\"hi\"}]}\n").unwrap();
    assert!(wrl_trainer::data::load_jsonl(&p).is_err());
}

fn dummy(n: usize) -> Dataset {
    let ex = Example::new(vec![1, 2], vec![0.0, 1.0]);
    Dataset { name: format!("d{n}"), examples: vec![ex; n] }
}

#[test]
fn effective_number_weights() {
    assert!((effective_number(10, 0.9) - (1.0 - 0.9f64.powi(10)) / 0.1).abs() < 1e-12);
    let m = Mixture {
        datasets: vec![dummy(2), dummy(8)],
        weights: MixtureWeights::EffectiveNumber { beta: 0.9 },
    };
    let w = m.loss_weights().unwrap();
    let (e2, e8) = (effective_number(2, 0.9), effective_number(8, 0.9));
    // Ratio follows 1/E_n, and the mean weight over all examples is 1.
    assert!((w[0] / w[1] - e8 / e2).abs() < 1e-9);
    assert!(((2.0 * w[0] + 8.0 * w[1]) / 10.0 - 1.0).abs() < 1e-9);
    let plan = m.epoch_plan(3, 0).unwrap();
    assert_eq!(plan.len(), 10);
}

/// An SFT stage's own `seed` orders its data: the first step trains other examples than under
/// the trainer's seed, and `None` is the trainer's seed exactly.
#[test]
fn a_stage_seed_orders_the_data() {
    let examples: Vec<Example> =
        (0..16u32).map(|i| Example::new(vec![1, 2 + i, 3 + i], vec![0.0, 1.0, 1.0])).collect();
    let data = Mixture {
        datasets: vec![Dataset { name: "d".into(), examples }],
        weights: MixtureWeights::default(),
    };
    let first_loss = |seed: Option<u64>| {
        let mut t = trainer(tiny(1, 16, OpsMode::Auto), 1e-3, 0.0, 1);
        let cfg = SftConfig { micro_batch: 2, grad_accum: 1, epochs: 1, seed };
        t.sft_step(&data, &cfg).unwrap().loss
    };
    let own = first_loss(None);
    assert_eq!(own, first_loss(Some(1)), "the trainer's seed is 1");
    assert_ne!(own, first_loss(Some(7)), "another seed, another order");
}

#[test]
fn fixed_mixture_follows_probabilities() {
    let m = Mixture {
        datasets: vec![dummy(50), dummy(50)],
        weights: MixtureWeights::Fixed(vec![0.8, 0.2]),
    };
    let mut first = 0;
    for epoch in 0..20 {
        first += m.epoch_plan(1, epoch).unwrap().iter().filter(|e| e.dataset == 0).count();
    }
    let frac = first as f64 / 2000.0;
    assert!((frac - 0.8).abs() < 0.03, "fraction from dataset 0 was {frac}");
    assert_eq!(m.epoch_plan(1, 4).unwrap(), m.epoch_plan(1, 4).unwrap());
    assert_ne!(m.epoch_plan(1, 4).unwrap(), m.epoch_plan(1, 5).unwrap());
}

#[test]
fn schedules() {
    let s = Schedule {
        kind: ScheduleKind::Cosine,
        warmup_steps: None,
        warmup_ratio: Some(0.1),
        total_steps: Some(100),
        min_lr_ratio: 0.0,
    };
    assert!((s.factor(0).unwrap() - 0.1).abs() < 1e-12);
    assert!((s.factor(9).unwrap() - 1.0).abs() < 1e-12);
    assert!((s.factor(55).unwrap() - 0.5).abs() < 1e-12);
    assert!(s.factor(100).unwrap().abs() < 1e-12);
    let c = Schedule { warmup_steps: Some(4), ..Schedule::default() };
    assert_eq!(c.factor(1).unwrap(), 0.5);
    assert_eq!(c.factor(50).unwrap(), 1.0);
}

#[test]
fn mask_excludes_observation_tokens_from_logit_gradients() {
    let t = trainer(tiny(1, 32, OpsMode::Auto), 1e-3, 0.0, 5);
    let ex = render(t.tokenizer(), &traj(), 64).unwrap();
    // Make the logits a leaf so the gradient store keeps their gradient.
    let logits = candle_core::Var::from_tensor(&t.sft_logits(&[&ex]).unwrap().detach()).unwrap();
    let loss = t.sft_loss_on_logits(&[&ex], logits.as_tensor()).unwrap();
    let grads = loss.backward().unwrap();
    let g = grads.get(logits.as_tensor()).expect("logits get a gradient").squeeze(0).unwrap();
    let g: Vec<Vec<f32>> = g.to_vec2().unwrap();
    // Row j-1 of the logits predicts token j.
    for j in 1..ex.tokens.len() {
        let norm: f32 = g[j - 1].iter().map(|x| x.abs()).sum();
        if ex.weights[j] == 0.0 {
            assert_eq!(norm, 0.0, "masked token {j} received gradient");
        } else {
            assert!(norm > 0.0, "trained token {j} received no gradient");
        }
    }
}

#[test]
fn grad_accumulation_matches_one_big_batch() {
    let trajs: Vec<Trajectory> = ["ab", "cde", "f"]
        .iter()
        .map(|s| Trajectory {
            segments: vec![Segment::new(Role::User, "q"), Segment::new(Role::Assistant, *s)],
            tools: Vec::new(),
        })
        .collect();
    let exs: Vec<Example> =
        trajs.iter().map(|t| render(&Tokenizer::Bytes, t, 64).unwrap()).collect();
    let pairs: Vec<(&Example, f32)> = exs.iter().map(|e| (e, 1.0)).collect();
    let mut a = trainer(tiny(1, 32, OpsMode::Auto), 1e-2, 0.0, 9);
    let mut b = trainer(tiny(1, 32, OpsMode::Auto), 1e-2, 0.0, 9);
    let ma = a.sft_step_on(&pairs, 3).unwrap();
    let mb = b.sft_step_on(&pairs, 1).unwrap();
    assert!((ma.loss - mb.loss).abs() < 1e-5);
    assert!((ma.grad_norm - mb.grad_norm).abs() < 1e-4 * ma.grad_norm.max(1.0));
}

#[test]
fn sft_memorises_a_small_set() {
    let texts = ["click #buy", "type hello", "scroll down", "done: 42"];
    let trajs: Vec<Trajectory> = texts
        .iter()
        .enumerate()
        .map(|(i, s)| Trajectory {
            segments: vec![
                Segment::new(Role::User, format!("task {i}")),
                Segment::new(Role::Observation, "<page>"),
                Segment::new(Role::Assistant, *s),
            ],
            tools: Vec::new(),
        })
        .collect();
    let mut t = trainer(tiny(2, 64, OpsMode::Auto), 3e-3, 0.0, 11);
    let examples: Vec<Example> =
        trajs.iter().map(|tr| render(t.tokenizer(), tr, 64).unwrap()).collect();
    let data = Mixture {
        datasets: vec![Dataset { name: "m".into(), examples: examples.clone() }],
        weights: MixtureWeights::Uniform,
    };
    let cfg = SftConfig { micro_batch: 4, grad_accum: 1, epochs: 150, seed: None };
    let before = t.sft_eval(&examples).unwrap();
    let metrics = t.sft_epochs(&data, &cfg).unwrap();
    let after = t.sft_eval(&examples).unwrap();
    assert_eq!(metrics.len(), 150);
    // Each step reports the epoch it belongs to (0-based), the last one included.
    let epochs: Vec<u64> = metrics.iter().map(|m| m.epoch.unwrap()).collect();
    assert_eq!(epochs, (0..150).collect::<Vec<u64>>(), "one step per epoch of 4 examples");
    assert!(before > 4.0, "initial loss {before}");
    assert!(after < 0.05, "loss after training {after}");
    // Greedy decoding reproduces the answer.
    let prompt = wrl_trainer::render_prompt(t.tokenizer(), &trajs[2].segments[..2]).unwrap();
    let out = t
        .sample(
            &[prompt],
            &wrl_trainer::SampleParams { temperature: 0.0, max_tokens: 20, ..Default::default() },
        )
        .unwrap();
    assert_eq!(out[0].text, "scroll down");
    assert_eq!(out[0].finish, wrl_trainer::FinishReason::Eos);
}

/// The copy head's reason to exist: after a few hundred SFT steps on "type the word from the
/// task", the policy types words it has never seen, byte for byte (18 of 20 when written; the
/// same model without the head types none).
#[test]
fn the_copy_head_learns_to_type_unseen_words() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let mut drill = || {
        let n = rng.random_range(3..7);
        let w: String = (0..n).map(|_| char::from(b'a' + rng.random_range(0..26u8))).collect();
        (format!("task: open {w} now"), format!("type {w}"))
    };
    let train: Vec<_> = (0..4000).map(|_| drill()).collect();
    let unseen: Vec<_> = (0..20).map(|_| drill()).collect();
    let mut t = trainer(crate::common::tiny_copy(2, 64, OpsMode::Auto), 3e-3, 0.0, 5);
    let examples: Vec<Example> = train
        .iter()
        .map(|(u, a)| {
            let tr = Trajectory {
                segments: vec![
                    Segment::new(Role::User, u.clone()),
                    Segment::new(Role::Assistant, a.clone()),
                ],
                tools: Vec::new(),
            };
            render(t.tokenizer(), &tr, 64).unwrap()
        })
        .collect();
    let data = Mixture {
        datasets: vec![Dataset { name: "c".into(), examples }],
        weights: MixtureWeights::default(),
    };
    t.sft_epochs(&data, &SftConfig { micro_batch: 4, grad_accum: 1, epochs: 1, seed: None })
        .unwrap();
    let greedy =
        wrl_trainer::SampleParams { temperature: 0.0, max_tokens: 12, ..Default::default() };
    let typed = unseen
        .iter()
        .filter(|(u, a)| {
            let prompt =
                wrl_trainer::render_prompt(t.tokenizer(), &[Segment::new(Role::User, u.clone())])
                    .unwrap();
            t.sample(&[prompt], &greedy).unwrap()[0].text == *a
        })
        .count();
    assert!(typed >= 10, "typed {typed}/20 unseen words");
}
