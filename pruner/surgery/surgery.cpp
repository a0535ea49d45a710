#include "pruner/surgery/surgery.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "pruner/surgery/remove_heads_spec.h"

namespace headprune::pruner {

PrunePlan plan_from_gates(const GateState& gates, const models::AttentionModel& model,
                          bool fold_gates) {
  if (auto diff = gates.applies_to().difference(fingerprint_of(model)); !diff.empty())
    throw Error(fmt::format("these gates were trained on another model: {}. Train gates for this "
                            "model or give the model they were trained on ({})",
                            diff, gates.model_path));
  return plan_from_checked_gates(gates, fold_gates);
}

PrunePlan plan_from_checked_gates(const GateState& gates, bool fold_gates) {
  PrunePlan plan;
  for (const auto& layer : gates.layers) {
    LayerPlan p;
    p.remove_local = layer.removed_local();
    if (fold_gates) {
      std::vector<float> s(layer.gate.begin(), layer.gate.end());
      p.scale = torch::tensor(s);
    }
    plan.push_back(std::move(p));
  }
  return plan;
}

PrunePlan plan_from_remove_heads(const nlohmann::json& spec, const models::ModelConfig& config) {
  PrunePlan plan(static_cast<size_t>(config.num_hidden_layers));
  const auto removed = parse_remove_heads(spec, config);
  for (size_t l = 0; l < plan.size(); ++l) plan[l].remove_local = removed[l];
  return plan;
}

void apply_plan(models::AttentionModel& model, const PrunePlan& plan) {
  if (static_cast<int64_t>(plan.size()) != model.config().num_hidden_layers)
    throw Error(fmt::format("the pruning plan has {} layers, the model {}", plan.size(),
                            model.config().num_hidden_layers));
  for (size_t l = 0; l < plan.size(); ++l)
    if (!plan[l].remove_local.empty() || plan[l].scale.defined())
      model.prune_heads(static_cast<int64_t>(l), plan[l].remove_local, plan[l].scale);
}

models::HeadMultipliers plan_multipliers(const PrunePlan& plan, const models::ModelConfig& config,
                                         const torch::Device& device) {
  models::HeadMultipliers m;
  for (size_t l = 0; l < plan.size(); ++l) {
    const auto n = static_cast<int64_t>(config.kept_heads[l].size());
    auto v = plan[l].scale.defined() ? plan[l].scale.clone().to(torch::kFloat) : torch::ones({n});
    for (auto i : plan[l].remove_local) v[i] = 0.f;
    m.push_back(v.to(device));
  }
  return m;
}

}  // namespace headprune::pruner
