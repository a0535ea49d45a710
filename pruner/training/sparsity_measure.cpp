#include "pruner/training/sparsity_measure.h"

#include "models/flops.h"
#include "models/errors.h"
#include "models/head_costs.h"
#include "pruner/measure/latency_table.h"

namespace headprune::pruner {

gates::SparsityMeasure sparsity_measure(const models::ModelConfig& c, gates::SparsityUnit unit,
                                        int64_t seq_len) {
  gates::SparsityMeasure m;
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
