//! One decoding step of every group in the batch, in a single forward over any model's
//! row-stable decoder: new groups' prompts (after the longest prefix the cache holds) and
//! every other group's new tokens; then each group's draws from its own RNG.

use rand_chacha::ChaCha8Rng;

use super::{Decoder, PrefixCache, Sequence};
use crate::draw::{Completion, Group, SampleParams, TokenEvent};
use crate::error::Result;
use crate::tokenizer::Tokenizer;

/// One prompt's group being decoded: its rows' sequences (one, the prompt's, until the prefill
/// has run), the tokens to feed next, and its RNG.
#[derive(Debug)]
pub(crate) struct Job<D: Decoder> {
    group: Group,
    params: SampleParams,
    rng: ChaCha8Rng,
    seqs: Vec<D::Seq>,
    next: Vec<Option<u32>>,
    prefilled: bool,
}

impl<D: Decoder> Job<D> {
    /// Prompt `pi`'s group, checked against the context.
    pub(crate) fn new(
        weights: &D,
        pi: usize,
        prompt: &[u32],
        params: &SampleParams,
        rng: ChaCha8Rng,
    ) -> Result<Job<D>> {
        let group = Group::new(pi, prompt, params, weights.context())?;
        let capacity = prompt.len().saturating_add(params.max_tokens).min(weights.context());
        Ok(Job {
            group,
            params: params.clone(),
            rng,
            seqs: vec![weights.new_seq(capacity)],
            next: Vec::new(),
            prefilled: false,
        })
    }

    /// The prompt's sequence, before the prefill (a VL prompt's plan is set on it).
    pub(crate) fn first(&mut self) -> Option<&mut D::Seq> {
        self.seqs.first_mut().filter(|_| !self.prefilled)
    }

    /// Whether the group is complete.
    pub(crate) fn finished(&self) -> bool {
        self.group.finished()
    }

    /// The completions and the RNG, advanced past every draw.
    pub(crate) fn complete(self, tokenizer: &Tokenizer) -> Result<(Vec<Completion>, ChaCha8Rng)> {
        Ok((self.group.complete(tokenizer)?, self.rng))
    }
}

/// The token row `r` of a prefilled group feeds next: its last draw, unless that ended it.
fn feed<'a>(group: &Group, next: &'a [Option<u32>], r: usize) -> Option<&'a u32> {
    next.get(r).and_then(Option::as_ref).filter(|_| !group.is_done(r))
}

/// One decoding step of every unfinished job in `jobs`, in a single forward: new jobs' prompts
/// (after the longest prefix `cache` holds, if any) and every other job's new tokens; then each
/// job's draws. Returns the jobs that failed, with the error (those are left unfinished), and
/// the sequence rows the forward advanced.
pub(crate) fn step<D: Decoder>(
    weights: &D,
    tokenizer: &Tokenizer,
    jobs: &mut [Job<D>],
    mut cache: Option<&mut PrefixCache<D::Seq>>,
    on_token: &mut dyn FnMut(TokenEvent<'_>),
) -> (Vec<(usize, crate::error::TrainerError)>, usize) {
    let mut failed = Vec::new();
    // Per job, its rows' scores this step (empty for rows not drawn).
    let mut scores: Vec<Vec<Vec<f32>>> =
        jobs.iter().map(|j| vec![Vec::new(); j.params.n]).collect();
    // The forward's sequences and what each is fed, and which (job, row) each is (`None`: a
    // new job's prompt).
    let mut seqs: Vec<&mut D::Seq> = Vec::new();
    let mut feeds: Vec<&[u32]> = Vec::new();
    let mut slots: Vec<(usize, Option<usize>)> = Vec::new();
    // New jobs waiting a step for an earlier new job's prompt to be cached: they share more
    // of it than the cache holds (the episodes of one group start together).
    let mut waiting: Vec<usize> = Vec::new();
    let mut starting: Vec<&[u32]> = Vec::new();
    for (ji, job) in jobs.iter_mut().enumerate().filter(|(_, j)| !j.finished()) {
        let Job { group, seqs: rows, prefilled, next, .. } = job;
        if !*prefilled {
            let prompt = group.prompt();
            if let (Some(c), true) = (cache.as_deref_mut(), rows[0].is_empty()) {
                let shared = starting.iter().map(|p| super::prefix::common_prefix(p, prompt)).max();
                if shared.unwrap_or(0) >= c.longest(prompt, &rows[0]) + super::prefix::MIN_REUSE {
                    waiting.push(ji);
                    continue;
                }
                if let Some(seq) = c.start(prompt, &rows[0]) {
                    let fresh = std::mem::replace(&mut rows[0], seq);
                    rows[0].adopt(fresh);
                }
            }
            starting.push(prompt);
            feeds.push(&prompt[rows[0].len()..]);
            seqs.push(&mut rows[0]);
            slots.push((ji, None));
            continue;
        }
        for (r, seq) in rows.iter_mut().enumerate() {
            if let Some(tok) = feed(group, next, r) {
                feeds.push(std::slice::from_ref(tok));
                seqs.push(seq);
                slots.push((ji, Some(r)));
            }
        }
    }
    let advanced = feeds.iter().map(|f| f.len()).sum();
    let out = if seqs.is_empty() { Ok(Vec::new()) } else { weights.forward(&mut seqs, &feeds) };
    drop((seqs, feeds, starting));
    match out {
        Ok(out) => {
            for (&(ji, r), row) in slots.iter().zip(out) {
                let job = &mut jobs[ji];
                match r {
                    Some(r) => scores[ji][r] = row,
                    None => {
                        if let Some(c) = cache.as_deref_mut() {
                            c.keep(&job.seqs[0]);
                        }
                        // The prompt's sequence itself goes to the last row (no copy for one).
                        let first = std::mem::take(&mut job.seqs[0]);
                        job.seqs = vec![first; job.params.n];
                        scores[ji] = vec![row; job.params.n];
                        job.prefilled = true;
                    }
                }
            }
        }
        Err(e) => {
            let mut hit: Vec<usize> = slots.iter().map(|&(ji, _)| ji).collect();
            hit.dedup();
            let msg = e.to_string();
            failed.extend(hit.into_iter().map(|ji| (ji, crate::error::config_err(msg.clone()))));
        }
    }
    for (ji, job) in jobs.iter_mut().enumerate().filter(|(_, j)| !j.finished()) {
        if failed.iter().any(|(f, _)| *f == ji) || waiting.contains(&ji) {
            continue;
        }
        let rows = &mut scores[ji];
        match job.group.draw(rows, &job.params, tokenizer, &mut job.rng, on_token) {
            Ok(next) => job.next = next,
            Err(e) => failed.push((ji, e)),
        }
    }
    (failed, advanced)
}

/// Each prompt's group in turn from `rng` (advanced past every draw), decoded by `decode`.
pub(crate) fn per_prompt<D: Decoder>(
    weights: &D,
    prompts: &[Vec<u32>],
    params: &SampleParams,
    rng: &mut ChaCha8Rng,
    mut decode: impl FnMut(Job<D>) -> Result<(Vec<Completion>, ChaCha8Rng)>,
) -> Result<Vec<Completion>> {
    let mut out = Vec::new();
    for (pi, prompt) in prompts.iter().enumerate() {
        let (completions, advanced) = decode(Job::new(weights, pi, prompt, params, rng.clone())?)?;
        *rng = advanced;
        out.extend(completions);
    }
    Ok(out)
}

/// Decodes `prompts` one after another with `rng` (as `sample::sample_observed`), alone.
pub(crate) fn sample_alone<D: Decoder>(
    weights: &D,
    tokenizer: &Tokenizer,
    prompts: &[Vec<u32>],
    params: &SampleParams,
    rng: &mut ChaCha8Rng,
    on_token: &mut dyn FnMut(TokenEvent<'_>),
) -> Result<Vec<Completion>> {
    per_prompt(weights, prompts, params, rng, |job| alone(weights, tokenizer, job, on_token))
}

/// Decodes `job` alone, step after step, without the prefix cache.
pub(crate) fn alone<D: Decoder>(
    weights: &D,
    tokenizer: &Tokenizer,
    job: Job<D>,
    on_token: &mut dyn FnMut(TokenEvent<'_>),
) -> Result<(Vec<Completion>, ChaCha8Rng)> {
    let mut jobs = [job];
    while !jobs[0].finished() {
        if let Some((_, e)) = step(weights, tokenizer, &mut jobs, None, on_token).0.pop() {
            return Err(e);
        }
    }
    let [job] = jobs;
    job.complete(tokenizer)
}
