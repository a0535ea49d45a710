#include "pruner/training/sparsity_measure.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "models/flops.h"
#include "models/errors.h"
#include "models/head_costs.h"
#include "models/kv_cache.h"
#include "models/model_family.h"
#include "pruner/measure/latency_table.h"

namespace headprune::pruner {

namespace {

/// kv-cache unit: each present query head's share of its KV group's 2·head_dim numbers.
gates::SparsityMeasure kv_cache_measure(const models::ModelConfig& c) {
  if (!c.family().has_lm_head())
    throw Error(fmt::format("sparsity unit kv-cache: a '{}' model is an encoder and keeps no KV cache; it "
                            "applies to decoders",
                            c.model_type));
  gates::SparsityMeasure m;
  m.unit = gates::SparsityUnit::kKvCache;
  const auto group_size = c.kv_group_size();
  for (const auto& layer : c.kept_heads) {
    std::map<int64_t, int64_t> present_in_group;
    for (auto h : layer) ++present_in_group[h / group_size];
    for (auto h : layer)
      m.head_cost.push_back(2.0 * static_cast<double>(c.head_dim) / static_cast<double>(present_in_group[h / group_size]));
  }
  m.total_cost = std::max<double>(1, static_cast<double>(models::kv_values_per_token(c)));
  return m;
}

}  // namespace

gates::SparsityMeasure sparsity_measure(const models::ModelConfig& c, gates::SparsityUnit unit,
                                        int64_t seq_len) {
  gates::SparsityMeasure m;
  if (unit == gates::SparsityUnit::kKvCache) return kv_cache_measure(c);
  m.unit = unit;
  const auto costs = models::head_costs(c, seq_len);
  double per_head = 1;
  switch (unit) {
    case gates::SparsityUnit::kHeads:
      per_head = 1;
      m.total_cost = static_cast<double>(c.total_heads());
      break;
    case gates::SparsityUnit::kAttentionParams:
      per_head = static_cast<double>(costs.params_per_head(c));
      m.total_cost = static_cast<double>(models::attention_parameters(c));
      break;
    case gates::SparsityUnit::kFlops:
      per_head = costs.flops_per_head(c);
      m.total_cost = models::forward_flops_per_token(c, seq_len);
      break;
    case gates::SparsityUnit::kLatency:
      throw Error("a latency measure needs its latency table (--target-latency)");
    case gates::SparsityUnit::kKvCache:
      break;  // kv_cache_measure above
  }
  m.head_cost.assign(static_cast<size_t>(c.total_heads()), per_head);
  if (m.total_cost <= 0) m.total_cost = 1;
  return m;
}

gates::SparsityMeasure sparsity_measure(const models::ModelConfig& config, const GateTrainingOptions& o) {
  if (o.unit != gates::SparsityUnit::kLatency) return sparsity_measure(config, o.unit, o.flops_seq_len);
  if (!o.latency_table) throw Error("a latency measure needs its latency table (--target-latency)");
  return o.latency_table->measure(config);
}

gates::MaskConstraints constraints_for(const models::ModelConfig& config,
                                       gates::MaskConstraints constraints) {
  constraints.head_group.clear();
  if (config.kv_group_size() <= 1) {
    constraints.group_rule = gates::GroupRule::kNone;
    return constraints;
  }
  if (constraints.group_rule == gates::GroupRule::kNone) return constraints;
  for (const auto& layer : config.kept_heads)
    for (auto h : layer) constraints.head_group.push_back(h / config.kv_group_size());
  return constraints;
}

}  // namespace headprune::pruner
