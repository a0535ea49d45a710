// The `--remove-heads` JSON ({"layer": [original head, ...]}), parsed and checked against a
// model's config with no tensor library involved, so that it can be fuzzed on its own.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/config.h"

namespace headprune::pruner {

/// Per layer (size num_hidden_layers), the heads to remove as positions among the layer's
/// present heads (config.kept_heads), ascending in the order given.
/// @throws headprune::Error naming the layer or head: not an object, a layer key that is not
///         a decimal integer in range, a value that is not a list of integers, a head out of
///         range, listed twice, or already removed.
std::vector<std::vector<int64_t>> parse_remove_heads(const nlohmann::json& spec,
                                                     const models::ModelConfig& config);

/// The `--remove-ffn` JSON ({"layer": [FFN neuron, ...]}): per layer (size num_hidden_layers),
/// the neurons to remove as positions among the layer's present ones (0..ffn_width(l)-1).
/// @throws headprune::Error naming the layer or neuron: not an object, a layer key that is not a
///         decimal integer in range, a value that is not a list of integers, a neuron out of
///         range or listed twice.
std::vector<std::vector<int64_t>> parse_remove_ffn(const nlohmann::json& spec, const models::ModelConfig& config);

}  // namespace headprune::pruner
