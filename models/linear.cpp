#include "models/linear.h"

#include <torch/autograd.h>
#include <torch/nn/init.h>
#include <torch/nn/modules/embedding.h>

namespace headprune::models {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// x Wᵀ (+ b), with W and b already in x's dtype.
torch::Tensor plain_linear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
  return b.defined() ? torch::linear(x, w, b) : torch::linear(x, w);
}

/// A frozen bias, passed to the autograd function as a constant (it may be undefined, which a
/// tensor argument of a custom function may not be).
struct FrozenBias {
  torch::Tensor tensor;
};

/// The frozen-weight product behind widened_linear: keeps the narrow weight for backward and
/// widens it there again (the gradient reaches x only; weight and bias are frozen).
struct WidenedLinearFunction : public torch::autograd::Function<WidenedLinearFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                               const FrozenBias& bias) {
    ctx->save_for_backward({weight});
    const auto& b = bias.tensor;
    return plain_linear(x, weight.to(x.scalar_type()), b.defined() ? b.to(x.scalar_type()) : b);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_output) {
    const auto weight = ctx->get_saved_variables()[0];
    const auto& g = grad_output[0];
    return {torch::matmul(g, weight.to(g.scalar_type())), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor widened_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  if (weight.scalar_type() == x.scalar_type()) return plain_linear(x, weight, bias);
  if (weight.requires_grad() || (bias.defined() && bias.requires_grad()))
    return plain_linear(x, weight.to(x.scalar_type()), bias.defined() ? bias.to(x.scalar_type()) : bias);
  return WidenedLinearFunction::apply(x, weight, FrozenBias{bias});
}

std::set<std::string> matrix_weight_names(const torch::nn::Module& module) {
  std::set<std::string> names;
  for (const auto& m : module.named_modules()) {
    const auto* linear = dynamic_cast<const LinearImpl*>(m.value().get());
    const auto* embedding = dynamic_cast<const torch::nn::EmbeddingImpl*>(m.value().get());
    if (linear || embedding) names.insert(m.key().empty() ? "weight" : m.key() + ".weight");
  }
  return names;
}

namespace {
thread_local bool weights_unfilled = false;
}  // namespace

ScopedUnfilledWeights::ScopedUnfilledWeights() : previous_(weights_unfilled) { weights_unfilled = true; }

ScopedUnfilledWeights::~ScopedUnfilledWeights() { weights_unfilled = previous_; }

bool ScopedUnfilledWeights::active() { return weights_unfilled; }

LinearImpl::LinearImpl(int64_t in_features, int64_t out_features, bool with_bias)
    : in_features_(in_features), out_features_(out_features), with_bias_(with_bias) {
  reset();
}

void LinearImpl::reset() {
  weight = register_parameter("weight", torch::empty({out_features_, in_features_}));
  if (weight.numel() > 0 && !ScopedUnfilledWeights::active()) {
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
  return widened_linear(x, weight, bias);
}

}  // namespace headprune::models
