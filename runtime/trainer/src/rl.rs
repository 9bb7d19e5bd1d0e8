//! RL objectives: samples, GRPO advantages, DAPO's equal-reward groups and overlong shaping, the
//! clipped PPO surrogate with decoupled/dual clipping, the KL-Cov policy loss, KL (k1/k2/k3)
//! and aggregation weights.
//! The per-token maths is plain Rust so it can be checked by hand (see the tests).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::error::{Result, config_err};

/// One scored completion (or one turn of a trajectory) for an RL update.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// The context the completion was sampled from.
    pub prompt_tokens: Vec<u32>,
    /// The sampled tokens.
    pub completion_tokens: Vec<u32>,
    /// Rollout log-prob of each completion token (same length as `completion_tokens`).
    pub old_logprobs: Vec<f32>,
    /// Which completion tokens carry loss (e.g. false on tool output inside a multi-turn
    /// completion); `None` = all.
    #[serde(default)]
    pub completion_mask: Option<Vec<bool>>,
    /// Scalar reward of the trajectory this sample belongs to.
    pub reward: f32,
    /// A precomputed advantage; `None` = compute it from the group (GRPO).
    #[serde(default)]
    pub advantage: Option<f32>,
    /// Samples of the same prompt share a group id.
    pub group_id: u64,
    /// Turns of one trajectory share a trajectory id (per-turn training); group statistics
    /// count each trajectory once, and every turn gets its trajectory's advantage.
    pub trajectory_id: u64,
    /// Excluded from the loss and from group statistics (e.g. judge timeout, infra failure).
    #[serde(default)]
    pub excluded: bool,
    /// The completion hit the length limit (for overlong filtering).
    #[serde(default)]
    pub truncated: bool,
    /// The turn's state and step reward, for step-level advantages (GiGPO); `None` elsewhere.
    #[serde(default)]
    pub step: Option<crate::gigpo::Step>,
    /// The images of a vision-language policy's prompt, in the order their `<|image_pad|>` runs
    /// stand: the update's forward reads them as the rollout did (`batch::TokenBatch`).
    #[serde(skip)]
    pub images: Vec<std::sync::Arc<crate::vision::Pixels>>,
}

/// How per-token losses are averaged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossAggregation {
    /// Σ ℓ / (number of tokens in the mini-batch): every token counts equally (DAPO).
    #[default]
    TokenMean,
    /// mean over samples of (mean over the sample's tokens) (original GRPO).
    SeqMeanTokenMean,
    /// mean over samples of (sum over the sample's tokens).
    SeqMeanTokenSum,
}

/// KL estimator against the reference policy (δ = log π_ref − log π).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KlEstimator {
    /// k1 = −δ = log π − log π_ref.
    K1,
    /// k2 = δ²/2 ("mse").
    K2,
    /// k3 = e^δ − δ − 1 (unbiased, non-negative; "low_var_kl").
    #[default]
    K3,
}

/// What one sample of the loss is: a turn, or a whole trajectory (all its turns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SampleLevel {
    /// Every turn is a sample: mini-batches count turns, sequence means are per turn.
    #[default]
    Turn,
    /// A trajectory's turns stay together: mini-batches count trajectories, and the sequence
    /// means of `seq_mean_*` aggregation are over a trajectory's tokens.
    Trajectory,
}

/// The policy-gradient loss.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PolicyLoss {
    /// The clipped surrogate (PPO/GRPO/DAPO).
    #[default]
    Clip,
    /// KL-Cov (verl's `kl_cov`): no clipping; the `ratio` fraction of tokens (at least one)
    /// with the largest covariance between log-prob and advantage in a forward batch get
    /// `coef · |log π − log π_old|` added to −A·r.
    KlCov {
        /// Fraction of tokens penalised.
        ratio: f64,
        /// Coefficient of the penalty (verl's `ppo_kl_coef`, default 1).
        #[serde(default = "one")]
        coef: f64,
    },
}

/// KL penalty in the loss.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct KlConfig {
    /// Coefficient β. With 0 no reference model is held.
    pub coef: f64,
    /// Estimator.
    #[serde(default)]
    pub estimator: KlEstimator,
}

/// DAPO soft overlong punishment added to the reward: 0 up to `max_len − cache_len` tokens,
/// then linear down to −`penalty` at `max_len`, and −`penalty` beyond.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OverlongShaping {
    /// Maximum completion length L_max.
    pub max_len: usize,
    /// Length of the soft-punishment interval L_cache.
    pub cache_len: usize,
    /// Punishment at and beyond L_max (DAPO: 1).
    #[serde(default = "one")]
    pub penalty: f64,
}

fn one() -> f64 {
    1.0
}
fn d_clip() -> f64 {
    0.2
}
fn d_epochs() -> usize {
    1
}
fn d_true() -> bool {
    true
}
fn d_temp() -> f32 {
    1.0
}

/// Settings of one RL update. Defaults are GRPO with symmetric clip 0.2, one epoch, one
/// mini-batch, token-mean aggregation, no KL, no entropy bonus.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RlConfig {
    /// Divide group-centred rewards by the group's standard deviation (GRPO); false = Dr.GRPO.
    #[serde(default = "d_true")]
    pub normalize_std: bool,
    /// ε_low: ratios below 1 − ε_low stop pushing down negative-advantage tokens.
    #[serde(default = "d_clip")]
    pub clip_low: f64,
    /// ε_high: ratios above 1 + ε_high stop pushing up positive-advantage tokens (DAPO: 0.28).
    #[serde(default = "d_clip")]
    pub clip_high: f64,
    /// Dual clip c (> 1): for negative advantages the loss is capped at −A·c.
    #[serde(default)]
    pub dual_clip: Option<f64>,
    /// Loss aggregation.
    #[serde(default)]
    pub aggregation: LossAggregation,
    /// Passes over the batch (PPO epochs).
    #[serde(default = "d_epochs")]
    pub ppo_epochs: usize,
    /// Mini-batches per epoch; each is one optimiser step. Ignored when `mini_batch` is set.
    #[serde(default = "d_epochs")]
    pub minibatches: usize,
    /// Mini-batch size in `mini_batch_unit`s (samples: turns, or trajectories at `level =
    /// trajectory`); the last one may be short. 0 = split the batch into `minibatches` instead.
    #[serde(default)]
    pub mini_batch: usize,
    /// What `mini_batch` counts: samples, or whole trajectories or prompt groups.
    #[serde(default)]
    pub mini_batch_unit: crate::minibatch::MiniBatchUnit,
    /// Leave out a last mini-batch short of `mini_batch` (slime's trimming) instead of training
    /// it as a shorter one (verl's split); its samples count in `Metrics::trimmed`.
    #[serde(default)]
    pub drop_rest: bool,
    /// What a sample is.
    #[serde(default)]
    pub level: SampleLevel,
    /// The policy-gradient loss.
    #[serde(default)]
    pub policy_loss: PolicyLoss,
    /// Samples per forward pass inside a mini-batch (gradient accumulation); 0 = whole mini-batch.
    #[serde(default)]
    pub micro_batch: usize,
    /// KL penalty to the reference policy.
    #[serde(default)]
    pub kl: Option<KlConfig>,
    /// The KL acts as a per-token penalty β·KL(old, ref) subtracted from the reward (PPO's
    /// `use_kl_in_reward`) instead of as a term of the loss.
    #[serde(default)]
    pub kl_in_reward: bool,
    /// How advantages are estimated (group-relative, or GAE from the trainer's critic).
    #[serde(default)]
    pub advantage: crate::gae::Advantage,
    /// Entropy bonus coefficient (loss −= coef · entropy).
    #[serde(default)]
    pub entropy_coef: f64,
    /// Sampling temperature: training log-probs use logits / T, like the rollout's.
    #[serde(default = "d_temp")]
    pub temperature: f32,
    /// true: the ratio's denominator is the rollout log-prob; false: recompute it with the
    /// current weights before the first update (verl's `old_log_prob`).
    #[serde(default = "d_true")]
    pub use_rollout_logprobs: bool,
    /// DAPO dynamic sampling: drop groups whose rewards are all equal.
    #[serde(default)]
    pub dynamic_sampling: bool,
    /// DAPO soft overlong punishment.
    #[serde(default)]
    pub overlong: Option<OverlongShaping>,
    /// DAPO overlong filtering: exclude truncated samples from the loss.
    #[serde(default)]
    pub overlong_filter: bool,
}

impl Default for RlConfig {
    fn default() -> Self {
        RlConfig {
            normalize_std: true,
            clip_low: 0.2,
            clip_high: 0.2,
            dual_clip: None,
            aggregation: LossAggregation::TokenMean,
            ppo_epochs: 1,
            minibatches: 1,
            mini_batch: 0,
            mini_batch_unit: crate::minibatch::MiniBatchUnit::Samples,
            drop_rest: false,
            level: SampleLevel::Turn,
            policy_loss: PolicyLoss::Clip,
            micro_batch: 0,
            kl: None,
            kl_in_reward: false,
            advantage: crate::gae::Advantage::Group,
            entropy_coef: 0.0,
            temperature: 1.0,
            use_rollout_logprobs: true,
            dynamic_sampling: false,
            overlong: None,
            overlong_filter: false,
        }
    }
}

impl RlConfig {
    /// DAPO defaults (assumptions from the DAPO paper): clip 0.2 / 0.28, token-mean, dynamic
    /// sampling, no KL.
    pub fn dapo() -> Self {
        RlConfig { clip_high: 0.28, dynamic_sampling: true, ..RlConfig::default() }
    }

    /// The KL coefficient when a KL term is active.
    pub fn kl_coef(&self) -> Option<(f64, KlEstimator)> {
        self.kl.filter(|k| k.coef != 0.0).map(|k| (k.coef, k.estimator))
    }

    /// Check value ranges.
    pub fn validate(&self) -> Result<()> {
        if self.clip_low < 0.0 || self.clip_low >= 1.0 || self.clip_high < 0.0 {
            return Err(config_err("clip_low must be in [0, 1) and clip_high ≥ 0"));
        }
        if self.dual_clip.is_some_and(|c| c <= 1.0) {
            return Err(config_err("dual_clip must be > 1"));
        }
        if self.ppo_epochs == 0 || self.minibatches == 0 {
            return Err(config_err("ppo_epochs and minibatches must be ≥ 1"));
        }
        if let PolicyLoss::KlCov { ratio, coef } = self.policy_loss
            && !((0.0..=1.0).contains(&ratio) && coef >= 0.0)
        {
            return Err(config_err("kl_cov ratio must be in [0, 1] and its coefficient ≥ 0"));
        }
        if let crate::gae::Advantage::Gae { gamma, lambda, value_clip, .. } = self.advantage
            && !((0.0..=1.0).contains(&gamma)
                && (0.0..=1.0).contains(&lambda)
                && value_clip.is_none_or(|c| c >= 0.0))
        {
            return Err(config_err("GAE needs γ and λ in [0, 1] and a value clip ≥ 0"));
        }
        if let crate::gae::Advantage::Gigpo(g) = self.advantage
            && !((0.0..=1.0).contains(&g.gamma) && g.step_weight >= 0.0)
        {
            return Err(config_err("GiGPO needs γ in [0, 1] and a step weight ≥ 0"));
        }
        Ok(())
    }
}

/// The soft overlong punishment for a completion of `len` tokens.
pub fn overlong_penalty(len: usize, o: &OverlongShaping) -> f64 {
    let free = o.max_len.saturating_sub(o.cache_len);
    if len <= free {
        0.0
    } else if len <= o.max_len {
        -o.penalty * (len - free) as f64 / o.cache_len.max(1) as f64
    } else {
        -o.penalty
    }
}

/// The reward each sample trains with (overlong shaping applied).
pub fn shaped_rewards(samples: &[Sample], cfg: &RlConfig) -> Vec<f64> {
    samples
        .iter()
        .map(|s| {
            let pen = cfg
                .overlong
                .as_ref()
                .map_or(0.0, |o| overlong_penalty(s.completion_tokens.len(), o));
            s.reward as f64 + pen
        })
        .collect()
}

/// Whether a sample takes part in the loss and the group statistics.
pub fn is_active(s: &Sample, cfg: &RlConfig) -> bool {
    let filtered = cfg.overlong_filter && s.truncated;
    !(s.excluded || filtered || s.completion_tokens.is_empty())
}

/// Group ids whose active trajectories all have the same reward (dynamic sampling drops them).
pub fn constant_groups(samples: &[Sample], rewards: &[f64], cfg: &RlConfig) -> BTreeSet<u64> {
    let mut by_group: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for (s, &r) in samples.iter().zip(rewards) {
        if is_active(s, cfg) {
            by_group.entry(s.group_id).or_default().push(r);
        }
    }
    by_group
        .into_iter()
        .filter(|(_, rs)| rs.iter().all(|&r| (r - rs[0]).abs() < 1e-12))
        .map(|(g, _)| g)
        .collect()
}

/// GRPO advantages, one per sample (0 for inactive samples). Within a group, each trajectory
/// counts once: A = (R − mean) / (std + 1e-6) with the unbiased std (or R − mean without std
/// normalisation; std = 1 for one-trajectory groups). Turns inherit their trajectory's value.
/// A sample's own `advantage`, when set, is used as is.
pub fn grpo_advantages(samples: &[Sample], rewards: &[f64], cfg: &RlConfig) -> Vec<f64> {
    let mut traj_reward: BTreeMap<(u64, u64), f64> = BTreeMap::new();
    for (s, &r) in samples.iter().zip(rewards) {
        if is_active(s, cfg) {
            traj_reward.entry((s.group_id, s.trajectory_id)).or_insert(r);
        }
    }
    let mut group_rewards: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for (&(g, _), &r) in &traj_reward {
        group_rewards.entry(g).or_default().push(r);
    }
    let stats: BTreeMap<u64, (f64, f64)> = group_rewards
        .iter()
        .map(|(&g, rs)| {
            let n = rs.len() as f64;
            let mean = rs.iter().sum::<f64>() / n;
            let std = if rs.len() > 1 {
                (rs.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
            } else {
                1.0
            };
            (g, (mean, std))
        })
        .collect();
    samples
        .iter()
        .map(|s| {
            if !is_active(s, cfg) {
                return 0.0;
            }
            if let Some(a) = s.advantage {
                return a as f64;
            }
            let r = traj_reward.get(&(s.group_id, s.trajectory_id)).copied().unwrap_or(0.0);
            let (mean, std) = stats.get(&s.group_id).copied().unwrap_or((r, 1.0));
            if cfg.normalize_std { (r - mean) / (std + 1e-6) } else { r - mean }
        })
        .collect()
}

/// The loss of one token and its derivative with respect to the current log-prob.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenLoss {
    /// Policy-gradient loss.
    pub pg: f64,
    /// KL estimate (0 without a reference).
    pub kl: f64,
    /// Total ℓ = pg + β·kl.
    pub value: f64,
    /// dℓ / d log π.
    pub dlogp: f64,
    /// The clip at 1 − ε_low removed this token's gradient.
    pub clipped_low: bool,
    /// The clip at 1 + ε_high removed this token's gradient.
    pub clipped_high: bool,
}

/// Clipped surrogate for one token: r = exp(lp − old),
/// pg = max(−A·r, −A·clip(r, 1−ε_low, 1+ε_high)), capped at −A·c for A < 0 with dual clip c;
/// plus β·KL(lp, ref). With the KL-Cov policy loss see [`kl_cov_token_loss`].
pub fn token_loss(
    lp: f64,
    old: f64,
    adv: f64,
    reference: Option<(f64, f64, KlEstimator)>,
    cfg: &RlConfig,
) -> TokenLoss {
    match cfg.policy_loss {
        PolicyLoss::Clip => clip_token_loss(lp, old, adv, reference, cfg),
        PolicyLoss::KlCov { .. } => kl_cov_token_loss(lp, old, adv, reference, None),
    }
}

/// KL-Cov loss of one token: −A·r, plus `coef · |lp − old|` when the token is among the
/// selected high-covariance ones (`selected = Some(coef)`); plus β·KL(lp, ref).
pub fn kl_cov_token_loss(
    lp: f64,
    old: f64,
    adv: f64,
    reference: Option<(f64, f64, KlEstimator)>,
    selected: Option<f64>,
) -> TokenLoss {
    let r = (lp - old).exp();
    let (mut pg, mut dpg) = (-adv * r, -adv * r);
    if let Some(coef) = selected {
        let d = lp - old;
        pg += coef * d.abs();
        dpg += coef
            * if d > 0.0 {
                1.0
            } else if d < 0.0 {
                -1.0
            } else {
                0.0
            };
    }
    with_kl(pg, dpg, false, false, lp, reference)
}

/// The tokens KL-Cov penalises: the `ratio` fraction (at least one when `ratio` > 0) with the
/// largest (A − mean A)·(lp − mean lp), ties broken by position.
pub fn kl_cov_selection(lps: &[f64], advs: &[f64], ratio: f64) -> Vec<bool> {
    let n = lps.len().min(advs.len());
    let mut out = vec![false; lps.len()];
    if n == 0 || ratio <= 0.0 {
        return out;
    }
    let mean = |v: &[f64]| v[..n].iter().sum::<f64>() / n as f64;
    let (ml, ma) = (mean(lps), mean(advs));
    let mut cov: Vec<(f64, usize)> = (0..n).map(|i| ((advs[i] - ma) * (lps[i] - ml), i)).collect();
    cov.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let k = ((n as f64 * ratio) as usize).clamp(1, n);
    for &(_, i) in &cov[..k] {
        out[i] = true;
    }
    out
}

fn clip_token_loss(
    lp: f64,
    old: f64,
    adv: f64,
    reference: Option<(f64, f64, KlEstimator)>,
    cfg: &RlConfig,
) -> TokenLoss {
    let r = (lp - old).exp();
    let unclipped = -adv * r;
    let rc = r.clamp(1.0 - cfg.clip_low, 1.0 + cfg.clip_high);
    let clipped = -adv * rc;
    let (mut pg, mut dpg, mut low, mut high) = (unclipped, -adv * r, false, false);
    if clipped > unclipped {
        pg = clipped;
        dpg = 0.0;
        low = r < 1.0 - cfg.clip_low;
        high = r > 1.0 + cfg.clip_high;
    }
    if let Some(c) = cfg.dual_clip
        && adv < 0.0
        && -adv * c < pg
    {
        pg = -adv * c;
        dpg = 0.0;
    }
    with_kl(pg, dpg, low, high, lp, reference)
}

/// The KL estimate of one token between log-probs `lp` (the policy's) and `ref_lp`, and its
/// derivative with respect to `lp` (δ = ref_lp − lp).
pub fn kl_estimate(lp: f64, ref_lp: f64, est: KlEstimator) -> (f64, f64) {
    let delta = ref_lp - lp;
    match est {
        KlEstimator::K1 => (-delta, 1.0),
        KlEstimator::K2 => (0.5 * delta * delta, -delta),
        KlEstimator::K3 => (delta.exp() - delta - 1.0, 1.0 - delta.exp()),
    }
}

/// Adds β·KL(lp, ref) to a policy-gradient loss.
fn with_kl(
    pg: f64,
    dpg: f64,
    low: bool,
    high: bool,
    lp: f64,
    reference: Option<(f64, f64, KlEstimator)>,
) -> TokenLoss {
    let (kl, dkl, beta) = match reference {
        None => (0.0, 0.0, 0.0),
        Some((ref_lp, beta, est)) => {
            let (kl, dkl) = kl_estimate(lp, ref_lp, est);
            (kl, dkl, beta)
        }
    };
    TokenLoss {
        pg,
        kl,
        value: pg + beta * kl,
        dlogp: dpg + beta * dkl,
        clipped_low: low,
        clipped_high: high,
    }
}

/// Aggregation coefficients: the loss of a mini-batch is Σ c_i·ℓ_i over its tokens.
/// `token_counts[s]` = number of loss tokens of sample s in the mini-batch.
pub fn aggregation_coefficients(token_counts: &[usize], agg: LossAggregation) -> Vec<Vec<f64>> {
    let units: Vec<usize> = (0..token_counts.len()).collect();
    grouped_aggregation_coefficients(token_counts, &units, agg)
}

/// [`aggregation_coefficients`] where the "sequence" of the `seq_mean_*` aggregations is a
/// unit of several samples (`units[s]`: sample s's unit, e.g. its trajectory): a unit's
/// tokens are averaged (or summed) together, then units are averaged.
pub fn grouped_aggregation_coefficients(
    token_counts: &[usize],
    units: &[usize],
    agg: LossAggregation,
) -> Vec<Vec<f64>> {
    let total: usize = token_counts.iter().sum();
    let mut per_unit: BTreeMap<usize, usize> = BTreeMap::new();
    for (&n, &u) in token_counts.iter().zip(units) {
        *per_unit.entry(u).or_default() += n;
    }
    let nseq = per_unit.values().filter(|&&n| n > 0).count().max(1) as f64;
    token_counts
        .iter()
        .zip(units)
        .map(|(&n, u)| {
            let unit_tokens = per_unit.get(u).copied().unwrap_or(n).max(1) as f64;
            let c = match agg {
                LossAggregation::TokenMean => 1.0 / total.max(1) as f64,
                LossAggregation::SeqMeanTokenMean => 1.0 / (nseq * unit_tokens),
                LossAggregation::SeqMeanTokenSum => 1.0 / nseq,
            };
            vec![c; n]
        })
        .collect()
}
