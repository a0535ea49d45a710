#include "models/norm.h"

#include <torch/torch.h>

#include "models/formats/onnx_graph.h"

namespace headprune::models {

NormImpl::NormImpl(int64_t hidden_size, double eps, double offset) : eps_(eps), offset_(offset) {
  weight = register_parameter("weight", offset == 0.0 ? torch::ones({hidden_size}) : torch::zeros({hidden_size}));
}

NormImpl::NormImpl(LayerNormTag, int64_t hidden_size, double eps, bool with_bias)
    : eps_(eps), offset_(0.0), layer_norm_(true) {
  weight = register_parameter("weight", torch::ones({hidden_size}));
  if (with_bias) bias = register_parameter("bias", torch::zeros({hidden_size}));
}

torch::Tensor NormImpl::forward(const torch::Tensor& x) {
  if (layer_norm_) return torch::layer_norm(x, {x.size(-1)}, weight, bias, eps_);
  auto h = x.to(torch::kFloat);
  h = h * torch::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + eps_);
  if (offset_ != 0.0) return (h * (weight.to(torch::kFloat) + offset_)).to(x.scalar_type());  // Gemma
  return weight * h.to(x.scalar_type());
}

std::string NormImpl::add_to_onnx(OnnxGraph& g, const std::string& x, const std::string& name) const {
  if (layer_norm_) return g.layer_norm(x, name, weight, bias.defined() ? bias : torch::zeros_like(weight), eps_);
  return g.rms_norm(x, name, weight + offset_, eps_);
}

}  // namespace headprune::models
