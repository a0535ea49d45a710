#include "gates/keep_mask.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"

namespace headprune::gates {
namespace {

/// Layer index of every head (layer-major order).
std::vector<int64_t> layer_of_heads(const std::vector<int64_t>& heads_per_layer) {
  std::vector<int64_t> layer;
  for (size_t l = 0; l < heads_per_layer.size(); ++l)
    layer.insert(layer.end(), heads_per_layer[l], static_cast<int64_t>(l));
  return layer;
}

/// Head indices sorted by ascending score (ties: lower index first, for determinism).
std::vector<int64_t> ascending(const torch::Tensor& score) {
  auto s = score.detach().to(torch::kCPU, torch::kDouble).contiguous();
  std::vector<double> v(s.data_ptr<double>(), s.data_ptr<double>() + s.numel());
  std::vector<int64_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return v[a] < v[b]; });
  return order;
}

int64_t layer_minimum(int64_t heads, const MaskConstraints& c) {
  return std::min(heads, std::max<int64_t>(0, c.min_heads_per_layer));
}

}  // namespace

std::vector<bool> keep_mask_from_gates(const torch::Tensor& gate, const torch::Tensor& score,
                                       const std::vector<int64_t>& heads_per_layer,
                                       const MaskConstraints& constraints) {
  auto g = gate.detach().to(torch::kCPU, torch::kDouble).contiguous();
  const auto n = g.numel();
  std::vector<bool> keep(n);
  for (int64_t i = 0; i < n; ++i) keep[i] = g.data_ptr<double>()[i] > 0;
  const auto layer = layer_of_heads(heads_per_layer);
  std::vector<int64_t> kept(heads_per_layer.size(), 0);
  for (int64_t i = 0; i < n; ++i) kept[layer[i]] += keep[i];
  auto order = ascending(score);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {  // best heads first
    const auto l = layer[*it];
    if (!keep[*it] && kept[l] < layer_minimum(heads_per_layer[l], constraints)) {
      keep[*it] = true;
      ++kept[l];
    }
  }
  return keep;
}

double max_sparsity(const std::vector<int64_t>& heads_per_layer, const SparsityMeasure& measure,
                    const MaskConstraints& constraints) {
  // Per layer, the removable heads are all but the minimum; all heads of a layer cost the same
  // in every unit headprune has, so which ones does not matter.
  std::vector<bool> keep;
  for (auto h : heads_per_layer)
    for (int64_t i = 0; i < h; ++i) keep.push_back(i < layer_minimum(h, constraints));
  return measure.of_mask(keep);
}

void validate_target(double target, const std::vector<int64_t>& heads_per_layer,
                     const SparsityMeasure& measure, const MaskConstraints& constraints) {
  if (!(target >= 0 && target < 1))
    throw Error(fmt::format("target sparsity {} is outside [0, 1)", target));
  const double reachable = max_sparsity(heads_per_layer, measure, constraints);
  if (target > reachable + 1e-9)
    throw Error(fmt::format(
        "target sparsity {:.3f} ({}) cannot be reached: with --min-heads-per-layer {} at most "
        "{:.3f} can be removed{}",
        target, to_string(measure.unit), constraints.min_heads_per_layer, reachable,
        constraints.min_heads_per_layer > 0 ? " (use --allow-empty-layers or lower the minimum)"
                                            : ""));
}

std::vector<bool> keep_mask_for_target(const torch::Tensor& score,
                                       const std::vector<int64_t>& heads_per_layer,
                                       const SparsityMeasure& measure, double target,
                                       const MaskConstraints& constraints) {
  validate_target(target, heads_per_layer, measure, constraints);
  const auto layer = layer_of_heads(heads_per_layer);
  std::vector<bool> keep(layer.size(), true);
  std::vector<int64_t> kept(heads_per_layer);
  double removed = 0;
  const double goal = target * measure.total_cost;
  for (auto i : ascending(score)) {
    const auto l = layer[i];
    if (kept[l] <= layer_minimum(heads_per_layer[l], constraints)) continue;
    const double after = removed + measure.head_cost[i];
    // Remove while it brings us closer; ties (exactly halfway) round towards removing.
    if (std::abs(after - goal) > std::abs(removed - goal) + 1e-9 * measure.total_cost) break;
    keep[i] = false;
    --kept[l];
    removed = after;
  }
  return keep;
}

}  // namespace headprune::gates
