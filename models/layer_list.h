// A family's layer list: removing whole layers (AttentionModel::drop_layers), a layer's parameters.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>

#include "models/errors.h"

namespace headprune::models {

/// Keeps the entries of `layers` whose index is not in `drop` (in order) and registers them
/// as `parent`'s ModuleList `name` in place of the old one, so that parameter names
/// ("encoder.layer.N", "model.layers.N") are renumbered 0..n-1 as in the shallower HF model.
/// `drop` must already be validated (ModelConfig::remove_layers does).
template <typename Layer>
void remove_from_layer_list(std::vector<Layer>& layers, const std::vector<int64_t>& drop, torch::nn::Module& parent,
                            const std::string& name) {
  std::vector<Layer> kept;
  torch::nn::ModuleList list;
  for (std::size_t l = 0; l < layers.size(); ++l)
    if (std::find(drop.begin(), drop.end(), static_cast<int64_t>(l)) == drop.end()) {
      kept.push_back(layers[l]);
      list->push_back(layers[l]);
    }
  parent.replace_module(name, list.ptr());
  layers = std::move(kept);
}

/// Every parameter of `layers[layer]` (AttentionModel::layer_parameters).
/// @throws headprune::Error for a layer out of range.
template <typename Layer>
std::vector<torch::Tensor> parameters_of_layer(const std::vector<Layer>& layers, int64_t layer) {
  if (layer < 0 || layer >= static_cast<int64_t>(layers.size()))
    throw Error(fmt::format("layer {} is out of range (the model has {} layers)", layer, layers.size()));
  return layers[static_cast<std::size_t>(layer)]->parameters();
}

}  // namespace headprune::models
