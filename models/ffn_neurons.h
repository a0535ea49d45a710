// Removing FFN neurons from the weights: the index checks and slicing every family's
// AttentionModel::prune_ffn shares (and prune_heads' index checks).
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "models/linear.h"

namespace headprune::models {

/// The positions 0..count-1 not in `remove_local`, ascending.
/// @throws headprune::Error naming `layer` and `unit` ("head", "query head", "FFN neuron") for an index out of
///         range or listed twice.
std::vector<int64_t> kept_positions(int64_t layer, int64_t count, const std::vector<int64_t>& remove_local,
                                    const char* unit);

/// Keeps the FFN neurons `kept` (ascending positions among the current ones) of one feed-forward
/// block: the rows of each input projection's weight [width, H] and bias, and the columns of
/// `output`'s weight [H, width] (its bias stays). With `scale` defined ([width]), the output
/// columns are first multiplied by it in `compute` dtype and rounded once to the weight's dtype.
/// @throws headprune::Error if `scale` is not [width].
void keep_ffn_neurons(const std::vector<Linear>& inputs, const Linear& output, const std::vector<int64_t>& kept,
                      const torch::Tensor& scale, torch::ScalarType compute);

}  // namespace headprune::models
