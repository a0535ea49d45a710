#include "models/activation.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"

namespace headprune::models {

torch::Tensor hf_activation(const torch::Tensor& x, const std::string& name) {
  if (name == "gelu") return torch::gelu(x);
  if (name == "gelu_new" || name == "gelu_pytorch_tanh") return torch::gelu(x, "tanh");
  if (name == "relu") return torch::relu(x);
  if (name == "silu") return torch::silu(x);
  if (name == "tanh") return torch::tanh(x);
  throw Error(fmt::format("activation '{}' is not supported (gelu, gelu_new, gelu_pytorch_tanh, relu, silu, tanh)",
                          name));
}

}  // namespace headprune::models
