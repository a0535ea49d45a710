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
  for (size_t l = 0; l < gates.ffn.size(); ++l)
    if (gates.ffn[l].width != model.config().ffn_width(static_cast<int64_t>(l)))
      throw Error(fmt::format("these gates cover {} FFN neurons in layer {}, the model has {}", gates.ffn[l].width, l,
                              model.config().ffn_width(static_cast<int64_t>(l))));
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
  for (size_t l = 0; l < gates.ffn.size() && l < plan.size(); ++l) {
    plan[l].ffn_remove = gates.ffn[l].removed_neurons();
    if (fold_gates) {
      const auto g = gates.ffn[l].neuron_gates();
      plan[l].ffn_scale = torch::tensor(std::vector<float>(g.begin(), g.end()));
    }
  }
  return plan;
}

PrunePlan plan_from_remove_heads(const nlohmann::json& spec, const models::ModelConfig& config) {
  PrunePlan plan(static_cast<size_t>(config.num_hidden_layers));
  const auto removed = parse_remove_heads(spec, config);
  for (size_t l = 0; l < plan.size(); ++l) plan[l].remove_local = removed[l];
  return plan;
}

PrunePlan with_removed_ffn(PrunePlan plan, const nlohmann::json& spec, const models::ModelConfig& config) {
  const auto removed = parse_remove_ffn(spec, config);
  for (size_t l = 0; l < plan.size() && l < removed.size(); ++l) plan[l].ffn_remove = removed[l];
  return plan;
}

void apply_plan(models::AttentionModel& model, const PrunePlan& plan) {
  if (static_cast<int64_t>(plan.size()) != model.config().num_hidden_layers)
    throw Error(fmt::format("the pruning plan has {} layers, the model {}", plan.size(),
                            model.config().num_hidden_layers));
  for (size_t l = 0; l < plan.size(); ++l) {
    if (!plan[l].remove_local.empty() || plan[l].scale.defined())
      model.prune_heads(static_cast<int64_t>(l), plan[l].remove_local, plan[l].scale);
    if (!plan[l].ffn_remove.empty() || plan[l].ffn_scale.defined())
      model.prune_ffn(static_cast<int64_t>(l), plan[l].ffn_remove, plan[l].ffn_scale);
  }
}

bool plan_prunes_ffn(const PrunePlan& plan) {
  return std::any_of(plan.begin(), plan.end(),
                     [](const LayerPlan& p) { return !p.ffn_remove.empty() || p.ffn_scale.defined(); });
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

models::FfnMultipliers plan_ffn_multipliers(const PrunePlan& plan, const models::ModelConfig& config,
                                            const torch::Device& device) {
  models::FfnMultipliers m;
  if (!plan_prunes_ffn(plan)) return m;
  for (size_t l = 0; l < plan.size(); ++l) {
    const auto width = config.ffn_width(static_cast<int64_t>(l));
    auto v = plan[l].ffn_scale.defined() ? plan[l].ffn_scale.clone().to(torch::kFloat) : torch::ones({width});
    for (auto i : plan[l].ffn_remove) v[i] = 0.f;
    m.push_back(v.to(device));
  }
  return m;
}

}  // namespace headprune::pruner
