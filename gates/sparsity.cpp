#include "gates/sparsity.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"

namespace headprune::gates {

SparsityUnit parse_unit(const std::string& name) {
  if (name == "heads") return SparsityUnit::kHeads;
  if (name == "attention-params") return SparsityUnit::kAttentionParams;
  if (name == "flops") return SparsityUnit::kFlops;
  throw UsageError(fmt::format("sparsity unit '{}' is not one of heads, attention-params, flops", name));
}

std::string to_string(SparsityUnit unit) {
  switch (unit) {
    case SparsityUnit::kHeads: return "heads";
    case SparsityUnit::kAttentionParams: return "attention-params";
    case SparsityUnit::kFlops: return "flops";
  }
  return "?";
}

torch::Tensor SparsityMeasure::expected(const HardConcreteGates& gates) const {
  auto cost = torch::tensor(head_cost, gates.log_alpha.options().dtype(torch::kDouble))
                  .to(gates.log_alpha.dtype());
  return ((1 - gates.prob_nonzero()) * cost).sum() / total_cost;
}

double SparsityMeasure::of_mask(const std::vector<bool>& keep) const {
  double removed = 0;
  for (size_t i = 0; i < keep.size(); ++i)
    if (!keep[i]) removed += head_cost[i];
  return removed / total_cost;
}

double SparsityMeasure::max_reachable() const {
  return std::accumulate(head_cost.begin(), head_cost.end(), 0.0) / total_cost;
}

Lagrangian::Lagrangian() {
  lambda_1 = register_parameter("lambda_1", torch::zeros({}));
  lambda_2 = register_parameter("lambda_2", torch::zeros({}));
}

torch::Tensor Lagrangian::penalty(const torch::Tensor& s, double target) const {
  auto gap = s - target;
  return lambda_1 * gap + lambda_2 * gap * gap;
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
