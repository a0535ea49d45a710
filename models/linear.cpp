#include "models/linear.h"

#include <torch/nn/init.h>

namespace headprune::models {

LinearImpl::LinearImpl(int64_t in_features, int64_t out_features, bool with_bias)
    : in_features_(in_features), out_features_(out_features), with_bias_(with_bias) {
  reset();
}

void LinearImpl::reset() {
  weight = register_parameter("weight", torch::empty({out_features_, in_features_}));
  if (weight.numel() > 0) {
    torch::NoGradGuard no_grad;
    weight.normal_(0.0, 0.02);
  }
  if (with_bias_) bias = register_parameter("bias", torch::zeros({out_features_}));
}

torch::Tensor LinearImpl::forward(const torch::Tensor& x) {
  if (weight.size(1) == 0) {
    // No inputs (e.g. all heads removed): the result is the bias, broadcast over x's leading dims.
    auto sizes = x.sizes().vec();
    sizes.back() = weight.size(0);
    auto out = torch::zeros(sizes, x.options());
    return bias.defined() ? out + bias : out;
  }
  return bias.defined() ? torch::linear(x, weight, bias) : torch::linear(x, weight);
}

}  // namespace headprune::models
