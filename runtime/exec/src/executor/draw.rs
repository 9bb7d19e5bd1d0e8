//! Which task an RL iteration's prompts are: the task set's order, cycling, or (`shuffle = true`,
//! verl's `data.shuffle`) a fresh seeded permutation of the task set on each pass through it, so
//! every task is drawn once per pass. The permutation is this runtime's own (ChaCha8 from the
//! stage's seed and the pass), not torch's `randperm`: the order differs from verl's, the
//! property (each pass a new order, every task once) does not.

use rand::SeedableRng;
use rand::seq::SliceRandom;

/// Tag mixed into the stage's seed for task order, apart from its rollout streams.
const SHUFFLE: u64 = 0x5348_5546_464c_4500;

/// How an RL phase draws its tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Draw {
    /// Tasks in the set.
    pub(crate) tasks: usize,
    /// Prompts per iteration.
    pub(crate) prompts: usize,
    /// The last partial batch of a pass is dropped (`last_batch = drop`).
    pub(crate) drop: bool,
    /// `Some(stage seed)`: shuffled on each pass.
    pub(crate) shuffle: Option<u64>,
}

impl Draw {
    /// The task-set indices of iteration `iter`'s prompts (`iter` from 0).
    pub(crate) fn indices(&self, iter: u64) -> Vec<usize> {
        let n = self.tasks.max(1) as u64;
        let prompts = self.prompts as u64;
        let start = wrl_plan::batch_start(iter, n, prompts, self.drop);
        // Under `drop` a pass is `per_pass` whole batches; otherwise positions run on and their
        // pass is where they fall in the endless stream.
        let per_pass = n.checked_div(prompts).unwrap_or(0);
        let first_pass = if self.drop && per_pass > 0 { iter / per_pass } else { 0 };
        self.at(first_pass, start)
    }

    /// The `prompts` tasks at positions `start..` of the endless stream of passes (a dynamic
    /// sampling refill's, drawn past the phase's own batches).
    pub(crate) fn stream(&self, start: u64) -> Vec<usize> {
        self.at(0, start)
    }

    /// Positions `start..start + prompts`, the first pass numbered `first_pass`.
    fn at(&self, first_pass: u64, start: u64) -> Vec<usize> {
        let n = self.tasks.max(1) as u64;
        let mut perm: Option<(u64, Vec<usize>)> = None;
        (0..self.prompts as u64)
            .map(|i| {
                let q = start + i;
                let (pass, within) = (first_pass + q / n, (q % n) as usize);
                match self.shuffle {
                    None => within,
                    Some(seed) => {
                        if perm.as_ref().is_none_or(|(p, _)| *p != pass) {
                            perm = Some((pass, permutation(seed, pass, self.tasks)));
                        }
                        perm.as_ref().map_or(within, |(_, v)| v[within])
                    }
                }
            })
            .collect()
    }
}

/// Pass `pass`'s order of `n` tasks.
fn permutation(seed: u64, pass: u64, n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut rng =
        rand_chacha::ChaCha8Rng::seed_from_u64(wrl_trainer::rng::mix(seed ^ SHUFFLE, pass));
    order.shuffle(&mut rng);
    order
}

#[cfg(test)]
mod tests {
    use super::Draw;

    fn draw(tasks: usize, prompts: usize, drop: bool, shuffle: Option<u64>) -> Draw {
        Draw { tasks, prompts, drop, shuffle }
    }

    #[test]
    fn in_order_it_cycles_through_the_task_set() {
        let d = draw(5, 2, false, None);
        let got: Vec<Vec<usize>> = (0..3).map(|i| d.indices(i)).collect();
        assert_eq!(got, [vec![0, 1], vec![2, 3], vec![4, 0]]);
        // verl drops a pass's last partial batch: task 4 is never drawn.
        let d = draw(5, 2, true, None);
        let got: Vec<Vec<usize>> = (0..3).map(|i| d.indices(i)).collect();
        assert_eq!(got, [vec![0, 1], vec![2, 3], vec![0, 1]]);
    }

    #[test]
    fn shuffled_every_pass_draws_every_task_once_in_a_new_order() {
        let d = draw(12, 4, true, Some(7));
        let pass =
            |p: u64| -> Vec<usize> { (3 * p..3 * p + 3).flat_map(|i| d.indices(i)).collect() };
        let (a, b) = (pass(0), pass(1));
        for order in [&a, &b] {
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..12).collect::<Vec<_>>(), "{order:?}");
        }
        assert_ne!(a, b, "a new order each pass");
        assert_ne!(a, (0..12).collect::<Vec<_>>(), "shuffled");
        // Seeded: the same seed draws the same; another seed another order.
        assert_eq!(draw(12, 4, true, Some(7)).indices(4), d.indices(4));
        assert_ne!(
            (0..3).flat_map(|i| draw(12, 4, true, Some(8)).indices(i)).collect::<Vec<_>>(),
            a
        );
        // Without dropping, a batch that straddles two passes takes the end of one permutation
        // and the start of the next; over two passes every task is drawn twice.
        let d = draw(5, 2, false, Some(3));
        let all: Vec<usize> = (0..5).flat_map(|i| d.indices(i)).collect();
        let mut sorted = all.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]);
    }
}
