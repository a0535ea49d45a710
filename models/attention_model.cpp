#include "models/attention_model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/errors.h"

namespace headprune::models {

torch::Tensor AttentionModel::forward_cached(const torch::Tensor&, KvCache&) {
  throw Error(fmt::format("a '{}' model has no cached decoder (generation needs a LLaMA-family model)",
                          config().model_type));
}

torch::Tensor layer_multiplier(const std::vector<torch::Tensor>* list, int64_t layer, int64_t layers, int64_t size,
                               const char* what) {
  if (!list) return {};
  if (static_cast<int64_t>(list->size()) != layers)
    throw Error(fmt::format("{} multipliers for {} layers given, the model has {}", what, list->size(), layers));
  const auto& m = (*list)[static_cast<size_t>(layer)];
  if (m.defined() && (m.dim() != 1 || m.size(0) != size))
    throw Error(fmt::format("layer {}: {} multiplier has shape [{}], expected [{}]", layer, what,
                            fmt::join(m.sizes(), ","), size));
  return m;
}

TensorMap AttentionModel::weights_from_file(TensorMap weights, const std::string&) const { return weights; }
TensorMap AttentionModel::weights_to_file(TensorMap weights) const { return weights; }

}  // namespace headprune::models
