#include "pruner/surgery.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "models/integer_key.h"

namespace headprune::pruner {

PrunePlan plan_from_gates(const GateState& gates, const models::AttentionModel& model,
                          bool fold_gates) {
  if (auto diff = gates.applies_to().difference(ModelFingerprint::of(model)); !diff.empty())
    throw Error(fmt::format("these gates were trained on another model: {}. Train gates for this "
                            "model or give the model they were trained on ({})",
                            diff, gates.model_path));
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
  if (!spec.is_object())
    throw Error("--remove-heads must be a JSON object {\"layer\": [head, ...]}, e.g. "
                "'{\"0\": [1, 5], \"3\": [0]}'");
  PrunePlan plan(static_cast<size_t>(config.num_hidden_layers));
  for (const auto& [key, heads] : spec.items()) {
    const int64_t layer = models::parse_integer_key(key).value_or(-1);
    if (layer < 0 || layer >= config.num_hidden_layers)
      throw Error(fmt::format("--remove-heads: layer '{}' does not exist (layers 0..{})", key,
                              config.num_hidden_layers - 1));
    if (!heads.is_array())
      throw Error(fmt::format("--remove-heads: layer {} must map to a list of head indices", layer));
    const auto& present = config.kept_heads[static_cast<size_t>(layer)];
    std::set<int64_t> seen;
    for (const auto& h : heads) {
      if (!h.is_number_integer())
        throw Error(fmt::format("--remove-heads: layer {} lists a non-integer head", layer));
      const auto head = h.get<int64_t>();
      if (head < 0 || head >= config.num_attention_heads)
        throw Error(fmt::format("--remove-heads: layer {} head {} is out of range (0..{})", layer,
                                head, config.num_attention_heads - 1));
      if (!seen.insert(head).second)
        throw Error(fmt::format("--remove-heads: layer {} lists head {} twice", layer, head));
      auto it = std::find(present.begin(), present.end(), head);
      if (it == present.end())
        throw Error(fmt::format("--remove-heads: layer {} head {} was already removed", layer, head));
      plan[static_cast<size_t>(layer)].remove_local.push_back(it - present.begin());
    }
  }
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
