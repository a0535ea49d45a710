// How much the model's output depends on each head (`headprune heads`, importance column).
#pragma once

#include <cstddef>
#include <vector>

#include <torch/types.h>

#include "models/checkpoint.h"

namespace headprune::pruner {

/// Per layer and present head: the self-distillation loss (pruner/objectives/distillation.h,
/// embedding weight 1) of the model with that one head removed against the dense model,
/// averaged over `sequences` (token ids, special tokens included) in batches of `batch_size`.
///
/// Michel et al. (2019, eq. 2) score a head by I_h = E|∂L/∂ξ_h|, the first-order Taylor term of
/// the loss change when its multiplier ξ_h goes from 1 to 0. For the self-distillation loss that
/// term is zero at ξ = 1 (the student is the teacher: the loss is at its minimum), so this
/// measures the change it approximates directly: L(ξ_h = 0) − L(ξ = 1), where L(ξ = 1) = 0.
/// One forward pass per head and batch. Units: those of the loss (encoders: relative squared
/// error of the hidden states + (1 − cosine) of the embeddings; LMs: nats per token).
/// @throws headprune::Error when `sequences` is empty.
std::vector<std::vector<double>> ablation_importance(const models::Checkpoint& checkpoint,
                                                     const std::vector<std::vector<int64_t>>& sequences,
                                                     std::size_t batch_size, const torch::Device& device);

}  // namespace headprune::pruner
