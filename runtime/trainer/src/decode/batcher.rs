//! One decoding batch shared by concurrent callers: each caller's group joins the batch when it
//! arrives and leaves it when it ends, and one forward per step serves them all. No thread of
//! its own: the first waiting caller leads, stepping everyone's sequences until its own group is
//! done, then hands the batch to the next waiter.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use rand_chacha::ChaCha8Rng;

use super::step::{Job, per_prompt, sample_alone, step};
use super::{Decoder, PrefixCache, SeqVision, Weights};
use crate::draw::{Completion, SampleParams, TokenEvent};
use crate::error::{Result, config_err};
use crate::tokenizer::Tokenizer;

type Outcome = Result<(Vec<Completion>, ChaCha8Rng)>;

/// Groups waiting to join, groups in the batch, and finished groups' results.
struct State<D: Decoder> {
    joining: Vec<(u64, Job<D>)>,
    running: Vec<(u64, Job<D>)>,
    results: HashMap<u64, Outcome>,
    leading: bool,
    next_id: u64,
    /// Forwards run, and rows they advanced (for tests and benchmarks).
    steps: u64,
    rows: u64,
}

impl<D: Decoder> Default for State<D> {
    fn default() -> Self {
        State {
            joining: Vec::new(),
            running: Vec::new(),
            results: HashMap::new(),
            leading: false,
            next_id: 0,
            steps: 0,
            rows: 0,
        }
    }
}

/// A batch decoder over one snapshot of a model's weights (see the module doc): the tiny
/// model's or a Qwen model's.
pub struct Batcher(Kind);

enum Kind {
    Tiny(Box<Batch<super::TinyWeights>>),
    Qwen(Box<Batch<super::QwenWeights>>),
}

impl std::fmt::Debug for Batcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (steps, rows, reused) = self.counts();
        f.debug_struct("Batcher")
            .field("steps", &steps)
            .field("rows", &rows)
            .field("reused", &reused)
            .finish()
    }
}

impl Batcher {
    /// A batcher decoding with `weights`, stop strings read by `tokenizer`.
    pub fn new(weights: impl Into<Weights>, tokenizer: Tokenizer) -> Batcher {
        Batcher(match weights.into() {
            Weights::Tiny(w) => Kind::Tiny(Box::new(Batch::new(*w, tokenizer))),
            Weights::Qwen(w) => Kind::Qwen(Box::new(Batch::new(*w, tokenizer))),
        })
    }

    /// How many steps have run, how many sequence rows their forwards advanced in all (prompt
    /// tokens served from the prefix cache not counted), and how many prompt tokens the cache
    /// served.
    pub fn counts(&self) -> (u64, u64, u64) {
        match &self.0 {
            Kind::Tiny(b) => b.counts(),
            Kind::Qwen(b) => b.counts(),
        }
    }

    /// `params.n` completions of each prompt, prompts one after another with `rng` (which
    /// advances past every draw), decoded in the shared batch. The same tokens as decoding
    /// alone (`sample::sample`), whatever else is in the batch.
    pub fn sample(
        &self,
        prompts: &[Vec<u32>],
        params: &SampleParams,
        rng: &mut ChaCha8Rng,
    ) -> Result<Vec<Completion>> {
        match &self.0 {
            Kind::Tiny(b) => b.sample(prompts, params, rng),
            Kind::Qwen(b) => b.sample(prompts, params, rng),
        }
    }

    /// As [`Batcher::sample`] with `on_token` called for every draw, decoded alone on these
    /// weights (the callback cannot run on another caller's thread): `Trainer::sample`'s path.
    pub fn sample_observed(
        &self,
        prompts: &[Vec<u32>],
        params: &SampleParams,
        rng: &mut ChaCha8Rng,
        on_token: &mut dyn FnMut(TokenEvent<'_>),
    ) -> Result<Vec<Completion>> {
        match &self.0 {
            Kind::Tiny(b) => sample_alone(&b.weights, &b.tokenizer, prompts, params, rng, on_token),
            Kind::Qwen(b) => sample_alone(&b.weights, &b.tokenizer, prompts, params, rng, on_token),
        }
    }
}

impl Batcher {
    /// `params.n` completions of one vision-language `prompt` (its image pads expanded) whose
    /// images `plan` places, with `rng` (advanced past every draw): decoded in the shared batch,
    /// or alone with `on_token` called for every draw. The same tokens either way, and whatever
    /// else is in the batch or in the prefix cache. `Err` for weights of no VL model.
    pub fn sample_vl(
        &self,
        prompt: &[u32],
        plan: SeqVision,
        params: &SampleParams,
        rng: &mut ChaCha8Rng,
        on_token: Option<&mut dyn FnMut(TokenEvent<'_>)>,
    ) -> Result<Vec<Completion>> {
        let Kind::Qwen(b) = &self.0 else {
            return Err(config_err("images are decoded by a vision-language model only"));
        };
        if !b.weights.is_vl() {
            return Err(config_err("images are decoded by a vision-language model only"));
        }
        if let Some(f) = on_token {
            return super::sample_vl_alone(
                &b.weights,
                &b.tokenizer,
                (prompt, plan),
                params,
                rng,
                f,
            );
        }
        let mut job = Job::new(&b.weights, 0, prompt, params, rng.clone())?;
        if let Some(seq) = job.first() {
            seq.set_vision(plan);
        }
        let (out, advanced) = b.run(job)?;
        *rng = advanced;
        Ok(out)
    }
}

/// The batch of one decoder's weights.
struct Batch<D: Decoder> {
    weights: D,
    tokenizer: Tokenizer,
    state: Mutex<State<D>>,
    wake: Condvar,
    /// Prompts prefilled on these weights (only the leader touches it).
    cache: Mutex<PrefixCache<D::Seq>>,
}

/// Fails the groups a panicking leader held, so their callers get an error instead of waiting
/// for ever, and frees the lead.
struct LeadGuard<'a, D: Decoder> {
    batcher: &'a Batch<D>,
    held: Vec<u64>,
}

impl<D: Decoder> Drop for LeadGuard<'_, D> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut st = self.batcher.lock();
            for id in self.held.drain(..) {
                st.results.insert(id, Err(config_err("the decoding batch failed (a panic)")));
            }
            st.leading = false;
            self.batcher.wake.notify_all();
        }
    }
}

impl<D: Decoder> Batch<D> {
    fn new(weights: D, tokenizer: Tokenizer) -> Batch<D> {
        Batch {
            weights,
            tokenizer,
            state: Mutex::default(),
            wake: Condvar::new(),
            cache: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<D>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn counts(&self) -> (u64, u64, u64) {
        let reused = self.cache.lock().unwrap_or_else(PoisonError::into_inner).reused();
        let st = self.lock();
        (st.steps, st.rows, reused)
    }

    fn sample(
        &self,
        prompts: &[Vec<u32>],
        params: &SampleParams,
        rng: &mut ChaCha8Rng,
    ) -> Result<Vec<Completion>> {
        per_prompt(&self.weights, prompts, params, rng, |job| self.run(job))
    }

    /// Puts `job` in the batch and returns its outcome, leading the batch while needed.
    fn run(&self, job: Job<D>) -> Outcome {
        let mut st = self.lock();
        let id = st.next_id;
        st.next_id += 1;
        st.joining.push((id, job));
        loop {
            if let Some(outcome) = st.results.remove(&id) {
                return outcome;
            }
            if !st.leading {
                return self.lead(id, st);
            }
            st = self.wake.wait(st).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Steps the batch until group `mine` is done; then leaves the rest to the next caller.
    fn lead(&self, mine: u64, mut st: MutexGuard<'_, State<D>>) -> Outcome {
        st.leading = true;
        let mut batch = std::mem::take(&mut st.running);
        batch.append(&mut st.joining);
        drop(st);
        let mut guard = LeadGuard { batcher: self, held: batch.iter().map(|(i, _)| *i).collect() };
        loop {
            let (ids, mut jobs): (Vec<u64>, Vec<Job<D>>) = batch.into_iter().unzip();
            let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            let held: &mut PrefixCache<D::Seq> = &mut cache;
            // The whole step on one of rayon's threads: its parallel parts then hand work to
            // the other threads from inside the pool, rather than each part waking the pool
            // from this caller's thread and sleeping until it is done.
            let (failed, advanced) = rayon::scope(|_| {
                step(&self.weights, &self.tokenizer, &mut jobs, Some(held), &mut |_| {})
            });
            drop(cache);
            let mut failed: HashMap<usize, _> = failed.into_iter().collect();
            let mut ended = Vec::new();
            batch = Vec::new();
            for (i, (id, job)) in ids.into_iter().zip(jobs).enumerate() {
                if let Some(e) = failed.remove(&i) {
                    ended.push((id, Err(e)));
                } else if job.finished() {
                    ended.push((id, job.complete(&self.tokenizer)));
                } else {
                    batch.push((id, job));
                }
            }
            let mut st = self.lock();
            st.steps += 1;
            st.rows += advanced as u64;
            // Waiters wake for a result or for the lead, which is only ever handed on in a
            // step where this leader's own group ended: a step that ended nothing wakes no one.
            if !ended.is_empty() {
                self.wake.notify_all();
            }
            st.results.extend(ended);
            batch.append(&mut st.joining);
            guard.held = batch.iter().map(|(i, _)| *i).collect();
            if let Some(outcome) = st.results.remove(&mine) {
                st.running = batch;
                st.leading = false;
                guard.held.clear();
                return outcome;
            }
        }
    }
}
