// The per-token normalisations of the LLaMA-style stack and of classifier heads: RMSNorm (LLaMA,
// Gemma's 1 + w) and LayerNorm with or without a bias (ModernBERT), under HF's parameter names.
#pragma once

#include <cstdint>
#include <string>

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

namespace headprune::models {

class OnnxGraph;

/// Selects NormImpl's LayerNorm constructor: `Norm(LayerNormTag{}, hidden_size, eps, bias)`.
struct LayerNormTag {};

/// The per-token norm of the stack, one of:
///  * HF `LlamaRMSNorm`: weight * x / sqrt(mean(x²) + eps), computed in float32;
///  * with `offset` 1, HF `Gemma3RMSNorm`: (x / sqrt(mean(x²) + eps) * (1 + weight)) in float32, then cast;
///  * with `layer_norm`, torch's nn.LayerNorm (ModernBERT): (x − mean) / sqrt(var + eps) * weight
///    (+ bias when `bias`), the biased variance over the last axis.
/// Parameters "weight" [H] (ones, zeros for Gemma, when fresh) and, for a LayerNorm with a bias, "bias" [H].
class NormImpl : public torch::nn::Module {
 public:
  NormImpl(int64_t hidden_size, double eps, double offset = 0.0);
  /// A LayerNorm, with a bias when `bias`.
  NormImpl(LayerNormTag, int64_t hidden_size, double eps, bool bias);
  /// x: [..., H] -> [..., H].
  torch::Tensor forward(const torch::Tensor& x);
  /// The same as an ONNX node on `x` (models/formats/onnx_graph.h): RMSNorm whose weight is the
  /// whole scale (offset + weight), or LayerNormalization (a zero bias where the norm has none);
  /// `name` prefixes its weights. @returns the output's value name.
  std::string add_to_onnx(OnnxGraph& graph, const std::string& x, const std::string& name) const;
  /// The scale applied is offset() + weight.
  double offset() const { return offset_; }
  /// Whether this is a LayerNorm (mean-centred) rather than an RMSNorm.
  bool layer_norm() const { return layer_norm_; }
  double eps() const { return eps_; }
  torch::Tensor weight;
  torch::Tensor bias;  ///< [H], or undefined

 private:
  double eps_, offset_;
  bool layer_norm_ = false;
};
TORCH_MODULE(Norm);

}  // namespace headprune::models
