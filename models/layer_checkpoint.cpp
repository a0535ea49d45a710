#include "models/layer_checkpoint.h"

#include <ATen/core/ivalue.h>
#include <torch/autograd.h>
#include <torch/custom_class.h>

namespace headprune::models {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// The layer, carried from forward to backward in the autograd context.
struct LayerHolder : torch::CustomClassHolder {
  explicit LayerHolder(LayerFunction f) : run(std::move(f)) {}
  LayerFunction run;
};

struct CheckpointedLayer : public torch::autograd::Function<CheckpointedLayer> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& m,
                               const LayerFunction& layer) {
    ctx->save_for_backward({x, m});
    ctx->saved_data["layer"] = c10::IValue::make_capsule(c10::make_intrusive<LayerHolder>(layer));
    return layer(x, m);  // grad mode is off here: no graph, no activations kept
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_output) {
    const auto saved = ctx->get_saved_variables();
    const auto holder = c10::static_intrusive_pointer_cast<LayerHolder>(ctx->saved_data["layer"].toCapsule());
    const auto x = saved[0].detach().requires_grad_(true), m = saved[1].detach().requires_grad_(true);
    torch::AutoGradMode grad_on(true);
    const auto y = holder->run(x, m);
    const auto grads = torch::autograd::grad({y}, {x, m}, {grad_output[0]}, /*retain_graph=*/false,
                                             /*create_graph=*/false, /*allow_unused=*/true);
    return {grads[0], grads[1], torch::Tensor()};
  }
};

}  // namespace

torch::Tensor checkpointed_layer(const LayerFunction& layer, const torch::Tensor& x, const torch::Tensor& m) {
  return CheckpointedLayer::apply(x, m, layer);
}

}  // namespace headprune::models
