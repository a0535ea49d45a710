// A linear layer that may have zero inputs or outputs (a layer left with no heads).
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include <torch/nn/cloneable.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

namespace headprune::models {

/// y = x Wᵀ (+ b) computed in x's dtype, for a weight W [out, in] that may be stored narrower
/// (bfloat16 / float16 frozen weights, models/checkpoint.h WeightStorage::source). Widening is
/// exact, so the result equals torch::linear on the widened weight; the widened copy lives only
/// during the product, and backward widens W again instead of keeping that copy for every layer
/// of the graph (which would cost the float32 model's memory back). A weight or bias that
/// requires grad is used widened as autograd's own linear would (weights trained are float32:
/// WeightStorage). With W in x's dtype this is torch::linear.
/// x: [..., in] -> [..., out]. @throws c10::Error from torch::linear for mismatched shapes.
torch::Tensor widened_linear(const torch::Tensor& x, const torch::Tensor& weight,
                             const torch::Tensor& bias = {});

/// The weights of every Linear and torch::nn::Embedding in `module`, by parameter name (as
/// named_parameters() names them): the matrices a model may keep in the file's dtype because
/// its forward widens them per use (Linear through widened_linear; embedding rows after lookup).
std::set<std::string> matrix_weight_names(const torch::nn::Module& module);

/// While an instance lives (on this thread), Linear and the LLaMA-style stack's token embedding
/// allocate their weights without filling them (torch::empty): for a model whose every parameter
/// load_weights is about to set (load_checkpoint), so that a float32 weight the file's narrower
/// tensor replaces (WeightStorage::source) never has its pages touched and so never becomes
/// resident (a 1B model's 4.9 GB of float32 weights were, while it loaded).
class ScopedUnfilledWeights {
 public:
  ScopedUnfilledWeights();
  ~ScopedUnfilledWeights();
  ScopedUnfilledWeights(const ScopedUnfilledWeights&) = delete;
  ScopedUnfilledWeights& operator=(const ScopedUnfilledWeights&) = delete;
  /// Whether one is alive on this thread.
  static bool active();

 private:
  bool previous_;
};

/// y = x W^T + b with W: [out_features, in_features], b: [out_features] (parameter names
/// "weight" and "bias", as in torch.nn.Linear and HF checkpoints). Unlike torch::nn::Linear,
/// either dimension may be 0: with in_features == 0 the output is the bias alone. W may be
/// stored narrower than x (widened_linear).
/// Weights start N(0, 0.02²) (BERT's initializer_range; unfilled under ScopedUnfilledWeights),
/// biases 0; checkpoints overwrite them.
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
