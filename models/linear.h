// A linear layer that may have zero inputs or outputs (a layer left with no heads).
#pragma once

#include <cstdint>

#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

namespace headprune::models {

/// y = x W^T + b with W: [out_features, in_features], b: [out_features] (parameter names
/// "weight" and "bias", as in torch.nn.Linear and HF checkpoints). Unlike torch::nn::Linear,
/// either dimension may be 0: with in_features == 0 the output is the bias alone.
/// Weights start N(0, 0.02²) (BERT's initializer_range), biases 0; checkpoints overwrite them.
class LinearImpl : public torch::nn::Cloneable<LinearImpl> {
 public:
  LinearImpl(int64_t in_features, int64_t out_features, bool with_bias = true);
  void reset() override;
  /// x: [..., in_features] -> [..., out_features].
  torch::Tensor forward(const torch::Tensor& x);

  torch::Tensor weight;
  torch::Tensor bias;  ///< undefined when with_bias is false

 private:
  int64_t in_features_, out_features_;
  bool with_bias_;
};
TORCH_MODULE(Linear);

}  // namespace headprune::models
