#include "gates/sparsity.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"

namespace headprune::gates {

SparsityUnit parse_unit(const std::string& name) {
  if (name == "heads") return SparsityUnit::kHeads;
  if (name == "attention-params") return SparsityUnit::kAttentionParams;
  if (name == "flops") return SparsityUnit::kFlops;
  if (name == "kv-cache") return SparsityUnit::kKvCache;
  if (name == "latency")
    throw UsageError("sparsity unit 'latency' is set by a latency budget: use --target-latency MS");
  throw UsageError(fmt::format("sparsity unit '{}' is not one of heads, attention-params, flops, kv-cache", name));
}

std::string to_string(SparsityUnit unit) {
  switch (unit) {
    case SparsityUnit::kHeads: return "heads";
    case SparsityUnit::kAttentionParams: return "attention-params";
    case SparsityUnit::kFlops: return "flops";
    case SparsityUnit::kLatency: return "latency";
    case SparsityUnit::kKvCache: return "kv-cache";
  }
  return "?";
}

namespace {

/// A layer's table at a (differentiable, 0-dim) expected head count, linear between entries.
torch::Tensor interpolated(const std::vector<double>& table, const torch::Tensor& count) {
  const auto top = static_cast<int64_t>(table.size()) - 1;
  if (top == 0) return torch::full({}, table[0], count.options());
  const auto below = std::clamp<int64_t>(static_cast<int64_t>(std::floor(count.item<double>())), 0, top - 1);
  const auto lo = table[static_cast<size_t>(below)], hi = table[static_cast<size_t>(below + 1)];
  return lo + (count - static_cast<double>(below)) * (hi - lo);
}

}  // namespace

torch::Tensor SparsityMeasure::alive(const HardConcreteGates& gates) const {
  const auto p = gates.prob_nonzero();
  return parent.empty() ? p : through_parents(p, parent);
}

torch::Tensor SparsityMeasure::expected(const HardConcreteGates& gates) const {
  if (!layer_cost.empty()) {
    const auto alive = this->alive(gates);
    auto removed = torch::zeros({}, alive.options());
    int64_t start = 0;
    for (const auto& table : layer_cost) {
      const auto n = static_cast<int64_t>(table.size()) - 1;
      removed = removed + (table.back() - interpolated(table, alive.slice(0, start, start + n).sum()));
      start += n;
    }
    return removed / total_cost;
  }
  auto cost = torch::tensor(head_cost, gates.log_alpha.options().dtype(torch::kDouble))
                  .to(gates.log_alpha.dtype());
  return ((1 - alive(gates)) * cost).sum() / total_cost;
}

double SparsityMeasure::removed_cost(const std::vector<int64_t>& kept_per_layer) const {
  if (kept_per_layer.size() != layer_cost.size())
    throw Error(fmt::format("a cost table for {} layers cannot price a mask of {}", layer_cost.size(),
                            kept_per_layer.size()));
  double removed = 0;
  for (std::size_t l = 0; l < kept_per_layer.size(); ++l)
    removed += layer_cost[l].back() - layer_cost[l].at(static_cast<std::size_t>(kept_per_layer[l]));
  return removed;
}

double SparsityMeasure::of_mask(const std::vector<bool>& keep) const {
  if (!layer_cost.empty()) {
    std::vector<int64_t> kept;
    std::size_t i = 0;
    for (const auto& table : layer_cost) {
      kept.push_back(0);
      for (std::size_t h = 0; h + 1 < table.size(); ++h) kept.back() += keep.at(i++) ? 1 : 0;
    }
    return removed_cost(kept) / total_cost;
  }
  double removed = 0;
  for (size_t i = 0; i < keep.size(); ++i)
    if (!keep[i]) removed += head_cost[i];
  return removed / total_cost;
}

double SparsityMeasure::max_reachable() const {
  if (!layer_cost.empty()) {
    double removed = 0;
    for (const auto& table : layer_cost) removed += table.back() - table.front();
    return removed / total_cost;
  }
  return std::accumulate(head_cost.begin(), head_cost.end(), 0.0) / total_cost;
}

Lagrangian::Lagrangian(double damping) : damping(damping) {
  if (!(damping >= 0) || !std::isfinite(damping))
    throw Error(fmt::format("Lagrangian damping must be finite and >= 0, not {}", damping));
  lambda_1 = register_parameter("lambda_1", torch::zeros({}));
  lambda_2 = register_parameter("lambda_2", torch::zeros({}));
}

torch::Tensor Lagrangian::penalty(const torch::Tensor& s, double target) const {
  auto gap = s - target;
  const auto quadratic = lambda_2 + damping * lambda_1.detach().abs();
  return lambda_1 * gap + quadratic * gap * gap;
}

void Lagrangian::flip_gradients() {
  for (auto& p : parameters())
    if (p.grad().defined()) p.mutable_grad().neg_();
}

double ramped_target(double target, int64_t step, int64_t warmup_steps) {
  if (warmup_steps <= 0) return target;
  return target * std::min(1.0, static_cast<double>(step) / static_cast<double>(warmup_steps));
}

torch::Tensor fixed_l0_penalty(const HardConcreteGates& gates, double lambda) {
  return lambda * gates.expected_l0();
}

}  // namespace headprune::gates
