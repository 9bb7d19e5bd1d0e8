//! The unit of training every loss reads: token ids and a loss weight for each, and the images
//! a vision-language policy's prompt holds.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::vision::Pixels;

/// A tokenised training example: `weights[j]` is the loss weight for predicting `tokens[j]`
/// from `tokens[..j]` (0 = masked). `weights[0]` is always 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Example {
    /// Token ids.
    pub tokens: Vec<u32>,
    /// Per-token loss weights, same length as `tokens`.
    pub weights: Vec<f32>,
    /// The images of a vision-language policy's example, in the order their `<|image_pad|>`
    /// runs stand in `tokens` (each run already expanded to the image's tokens); empty for text.
    /// Not saved: an example with images is rebuilt from its screenshots.
    #[serde(skip)]
    pub images: Vec<Arc<Pixels>>,
}

impl Example {
    /// A text example.
    pub fn new(tokens: Vec<u32>, weights: Vec<f32>) -> Example {
        Example { tokens, weights, images: Vec::new() }
    }

    /// Number of tokens with non-zero weight.
    pub fn trained_tokens(&self) -> usize {
        self.weights.iter().skip(1).filter(|&&w| w != 0.0).count()
    }
}
