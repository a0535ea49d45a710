#include "models/attention_kernel.h"

#include <cmath>
#include <limits>

#include <torch/torch.h>
#include <torch/version.h>

namespace headprune::models {

torch::Tensor attention_context_explicit(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                         const torch::Tensor& mask_bias, torch::Tensor* probs) {
  auto scores = torch::matmul(q, k.transpose(-1, -2)) / std::sqrt(static_cast<double>(q.size(-1)));
  if (mask_bias.defined()) scores = scores + mask_bias;
  auto p = torch::softmax(scores.to(torch::kFloat), -1).to(q.scalar_type());
  if (probs) *probs = p.detach();
  return torch::matmul(p, v);
}

double mask_min(torch::ScalarType dtype) {
  switch (dtype) {
    case torch::kBFloat16: return static_cast<double>(std::numeric_limits<c10::BFloat16>::lowest());
    case torch::kHalf: return static_cast<double>(std::numeric_limits<c10::Half>::lowest());
    case torch::kDouble: return std::numeric_limits<double>::lowest();
    default: return std::numeric_limits<float>::lowest();
  }
}

bool fused_attention_available() { return TORCH_VERSION_MAJOR >= 2; }

torch::Tensor attention_context(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                const torch::Tensor& mask_bias, torch::Tensor* probs) {
#if TORCH_VERSION_MAJOR >= 2
  if (!probs)
    return mask_bias.defined() ? at::scaled_dot_product_attention(q, k, v, mask_bias.to(q.scalar_type()))
                               : at::scaled_dot_product_attention(q, k, v);
#endif
  return attention_context_explicit(q, k, v, mask_bias, probs);
}

}  // namespace headprune::models
