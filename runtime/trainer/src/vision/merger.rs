//! Qwen3-VL's patch mergers: `merge × merge` neighbouring patches (consecutive rows, since the
//! processor writes them in merge-window order) joined into one image token of the text model's
//! width. The final merger normalises each patch before joining them; the DeepStack mergers
//! (`use_postshuffle_norm`) normalise the joined row. Both: LayerNorm (ε 1e-6), a linear layer,
//! the exact (erf) GELU, a linear layer to `out_hidden_size`.

use candle_core::Tensor;

use crate::error::Result;
use crate::ops::reference;

use super::weights::Weights;

/// One merger's weights under `prefix` (`model.visual.merger.`, `…deepstack_merger_list.0.`).
#[derive(Debug, Clone)]
pub struct Merger {
    norm: (Tensor, Tensor),
    fc1: (Tensor, Tensor),
    fc2: (Tensor, Tensor),
    /// The joined width: hidden × merge².
    joined: usize,
    postshuffle: bool,
}

impl Merger {
    /// Takes the merger's tensors from `w`, checking their shapes.
    pub(crate) fn take(
        w: &mut Weights,
        prefix: &str,
        hidden: usize,
        merge: usize,
        out: usize,
        postshuffle: bool,
    ) -> Result<Merger> {
        let joined = hidden * merge * merge;
        let norm_width = if postshuffle { joined } else { hidden };
        Ok(Merger {
            norm: w.pair(&format!("{prefix}norm"), &[norm_width])?,
            fc1: w.linear(&format!("{prefix}linear_fc1"), joined, joined)?,
            fc2: w.linear(&format!("{prefix}linear_fc2"), joined, out)?,
            joined,
            postshuffle,
        })
    }

    /// Patches (n, hidden), n a multiple of merge² → tokens (n / merge², out).
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let rows = x.elem_count() / self.joined;
        let x = if self.postshuffle {
            reference::layer_norm(
                &x.reshape((rows, self.joined))?,
                &self.norm.0,
                &self.norm.1,
                1e-6,
            )?
        } else {
            reference::layer_norm(x, &self.norm.0, &self.norm.1, 1e-6)?
                .reshape((rows, self.joined))?
        };
        let h = reference::linear(&x, &self.fc1.0, Some(&self.fc1.1))?.gelu_erf()?;
        reference::linear(&h, &self.fc2.0, Some(&self.fc2.1))
    }
}
