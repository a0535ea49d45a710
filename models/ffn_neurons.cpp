#include "models/ffn_neurons.h"

#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/torch.h>

#include "models/errors.h"

namespace headprune::models {

std::vector<int64_t> kept_positions(int64_t layer, int64_t count, const std::vector<int64_t>& remove_local,
                                    const char* unit) {
  std::set<int64_t> removed;
  for (auto i : remove_local) {
    if (i < 0 || i >= count)
      throw Error(fmt::format("layer {}: {} {} is out of range (the layer has {} {}s)", layer, unit, i, count, unit));
    if (!removed.insert(i).second) throw Error(fmt::format("layer {}: {} {} is listed twice", layer, unit, i));
  }
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < count; ++i)
    if (!removed.count(i)) kept.push_back(i);
  return kept;
}

void keep_ffn_neurons(const std::vector<Linear>& inputs, const Linear& output, const std::vector<int64_t>& kept,
                      const torch::Tensor& scale, torch::ScalarType compute) {
  const int64_t width = output->weight.size(1);
  if (scale.defined() && (scale.dim() != 1 || scale.size(0) != width))
    throw Error(fmt::format("FFN gate scale has shape [{}], expected [{}]", fmt::join(scale.sizes(), ","), width));
  torch::NoGradGuard no_grad;
  const auto device = output->weight.device();
  const auto index = torch::tensor(kept, torch::kLong).to(device);
  for (const auto& lin : inputs) {
    lin->weight.set_data(lin->weight.index_select(0, index).contiguous());
    if (lin->bias.defined()) lin->bias.set_data(lin->bias.index_select(0, index).contiguous());
  }
  auto w = output->weight;  // [H, width]
  if (scale.defined()) w = (w.to(compute) * scale.to(device, compute).view({1, width})).to(w.scalar_type());
  output->weight.set_data(w.index_select(1, index).contiguous());
}

}  // namespace headprune::models
