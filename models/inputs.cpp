#include "models/inputs.h"

#include <torch/torch.h>

namespace headprune::models {

ModelInputs to_model_inputs(const EncodedBatch& b, const torch::Device& device) {
  const auto shape = std::vector<int64_t>{static_cast<int64_t>(b.batch), static_cast<int64_t>(b.seq)};
  auto make = [&](const std::vector<int64_t>& v) {
    return torch::tensor(v, torch::kLong).view(shape).to(device);
  };
  return {make(b.input_ids), make(b.attention_mask), make(b.token_type_ids)};
}

}  // namespace headprune::models
