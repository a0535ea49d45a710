// Activations by their Hugging Face names (transformers' ACT2FN), for every place a config or
// a classifier layout names one: BERT's intermediate layer, the gated MLPs, classifier heads.
#pragma once

#include <string>

#include <torch/types.h>

namespace headprune::models {

/// ACT2FN[name](x), elementwise: "gelu" (erf), "gelu_new" / "gelu_pytorch_tanh" (tanh
/// approximation), "relu", "silu", "tanh". @throws headprune::Error for another name.
torch::Tensor hf_activation(const torch::Tensor& x, const std::string& name);

}  // namespace headprune::models
