//! Qwen-VL's patch mergers: `merge × merge` neighbouring patches (consecutive rows, since the
//! processor writes them in merge-window order) joined into one image token of the text model's
//! width. Qwen3-VL's final merger normalises each patch before joining them (LayerNorm); its
//! DeepStack mergers (`use_postshuffle_norm`) normalise the joined row; Qwen2.5-VL's merger
//! normalises each patch with an RMSNorm (`ln_q`). All: the norm (ε 1e-6), a linear layer, the
//! exact (erf) GELU, a linear layer to `out_hidden_size`.

use candle_core::Tensor;

use crate::error::Result;
use crate::ops::reference;

use super::weights::Weights;

/// A norm of the tower: Qwen3-VL's LayerNorm (weight and bias) or Qwen2.5-VL's RMSNorm (weight),
/// both with ε 1e-6.
#[derive(Debug, Clone)]
pub(crate) enum Norm {
    Layer(Tensor, Tensor),
    Rms(Tensor),
}

impl Norm {
    /// `x` normalised over its last dimension.
    pub(crate) fn forward(&self, x: &Tensor) -> Result<Tensor> {
        match self {
            Norm::Layer(w, b) => reference::layer_norm(x, w, b, 1e-6),
            Norm::Rms(w) => reference::rms_norm(x, w, 1e-6),
        }
    }
}

/// One merger's weights under `prefix` (`model.visual.merger.`, `…deepstack_merger_list.0.`).
#[derive(Debug, Clone)]
pub struct Merger {
    norm: Norm,
    fc1: (Tensor, Tensor),
    fc2: (Tensor, Tensor),
    /// The joined width: hidden × merge².
    joined: usize,
    postshuffle: bool,
}

impl Merger {
    /// Takes a Qwen3-VL merger's tensors from `w`, checking their shapes.
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
        let (nw, nb) = w.pair(&format!("{prefix}norm"), &[norm_width])?;
        Ok(Merger {
            norm: Norm::Layer(nw, nb),
            fc1: w.linear(&format!("{prefix}linear_fc1"), joined, joined)?,
            fc2: w.linear(&format!("{prefix}linear_fc2"), joined, out)?,
            joined,
            postshuffle,
        })
    }

    /// Takes Qwen2.5-VL's merger (`merger.ln_q`, `merger.mlp.0`, `merger.mlp.2`) from `w`.
    pub(crate) fn take_qwen25(
        w: &mut Weights,
        hidden: usize,
        merge: usize,
        out: usize,
    ) -> Result<Merger> {
        let joined = hidden * merge * merge;
        Ok(Merger {
            norm: Norm::Rms(w.take("merger.ln_q.weight", &[hidden])?),
            fc1: w.linear("merger.mlp.0", joined, joined)?,
            fc2: w.linear("merger.mlp.2", joined, out)?,
            joined,
            postshuffle: false,
        })
    }

    /// Patches (n, hidden), n a multiple of merge² → tokens (n / merge², out).
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.forward_on(x, &super::fast::Linears::default())
    }

    /// [`Merger::forward`] with the tower's packed linear layers.
    pub(crate) fn forward_on(&self, x: &Tensor, lin: &super::fast::Linears) -> Result<Tensor> {
        let rows = x.elem_count() / self.joined;
        let x = if self.postshuffle {
            self.norm.forward(&x.reshape((rows, self.joined))?)?
        } else {
            self.norm.forward(x)?.reshape((rows, self.joined))?
        };
        let h = lin.apply(&x, &self.fc1.0, Some(&self.fc1.1))?.gelu_erf()?;
        lin.apply(&h, &self.fc2.0, Some(&self.fc2.1))
    }
}
