// Activation checkpointing of one layer (Chen et al. 2016, "Training Deep Nets with Sublinear
// Memory Cost"; torch.utils.checkpoint's non-reentrant idea): forward keeps only the layer's
// input, backward runs the layer again with gradients on and backpropagates through that graph.
#pragma once

#include <functional>

#include <torch/types.h>

namespace headprune::models {

/// A layer as a function of its input x [B, T, H] and its head multipliers m [heads]; everything
/// else it reads (masks, rotary tables, weights) is fixed and needs no gradient.
using LayerFunction = std::function<torch::Tensor(const torch::Tensor& x, const torch::Tensor& m)>;

/// layer(x, m), keeping for backward only x and m instead of every intermediate activation;
/// backward recomputes the layer once (a second forward pass's time) and returns the gradients
/// of x and m. The layer must compute the same values when run again (no dropout, no sampling
/// inside it) and hold no parameter that requires grad (those gradients would be lost).
/// x: [B, T, H] -> [B, T, H]; m defined ([heads]).
torch::Tensor checkpointed_layer(const LayerFunction& layer, const torch::Tensor& x, const torch::Tensor& m);

}  // namespace headprune::models
