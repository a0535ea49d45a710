// Self-distillation objectives: the gated student should compute what the dense teacher does.
#pragma once

#include <torch/types.h>

#include "models/sentence_pooling.h"

namespace headprune::pruner {

/// Loss parts of one batch (0-dim tensors; `total` is differentiable).
struct DistillationLoss {
  torch::Tensor total;
  torch::Tensor hidden;     ///< relative squared error of the final hidden states
  torch::Tensor embedding;  ///< mean (1 − cosine) of the pooled sentence embeddings
};

/// Encoder objective (no labels):
///   hidden    = Σ_real ||h_s − h_t||² / Σ_real ||h_t||²   over real (unpadded) tokens; scale-free
///   embedding = mean_b (1 − cos(pool(h_s)_b, pool(h_t)_b))   with the model's own pooling
///   total     = hidden + embedding_weight · embedding
/// student, teacher: [B, T, H]; attention_mask: [B, T]. The teacher carries no gradient.
DistillationLoss encoder_distillation(const torch::Tensor& student, const torch::Tensor& teacher,
                                      const torch::Tensor& attention_mask,
                                      const models::SentencePooling& pooling,
                                      double embedding_weight);

}  // namespace headprune::pruner
