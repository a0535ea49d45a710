#include "models/attention_model.h"

#include <fmt/format.h>

#include "models/errors.h"

namespace headprune::models {

torch::Tensor AttentionModel::forward_cached(const torch::Tensor&, KvCache&) {
  throw Error(fmt::format("a '{}' model has no cached decoder (generation needs a LLaMA-family model)",
                          config().model_type));
}

TensorMap AttentionModel::weights_from_file(TensorMap weights, const std::string&) const { return weights; }
TensorMap AttentionModel::weights_to_file(TensorMap weights) const { return weights; }

}  // namespace headprune::models
