#include "pruner/training/gate_units.h"

#include <algorithm>

#include <fmt/format.h>
#include <torch/torch.h>

#include "models/errors.h"
#include "models/head_costs.h"
#include "models/model_family.h"
#include "pruner/format.h"
#include "pruner/measure/latency_table.h"
#include "pruner/training/sparsity_measure.h"
#include "pruner/training/training_options.h"

namespace headprune::pruner {
std::vector<int64_t> GateUnits::base_groups() const {
  auto groups = heads_per_layer;
  groups.insert(groups.end(), blocks_per_layer.begin(), blocks_per_layer.end());
  return groups;
}

std::vector<int64_t> GateUnits::per_group() const {
  auto groups = base_groups();
  const auto layers = static_cast<int64_t>(heads_per_layer.size());
  if (sublayers) groups.insert(groups.end(), {layers, layers});
  return groups;
}

std::vector<int64_t> GateUnits::parents() const {
  if (!sublayers) return {};
  std::vector<int64_t> parent;
  for (int64_t l = 0; l < static_cast<int64_t>(heads_per_layer.size()); ++l)
    parent.insert(parent.end(), static_cast<std::size_t>(heads_per_layer[static_cast<std::size_t>(l)]),
                  attention_sublayer_gate(l));
  for (int64_t l = 0; l < static_cast<int64_t>(blocks_per_layer.size()); ++l)
    parent.insert(parent.end(), static_cast<std::size_t>(blocks_per_layer[static_cast<std::size_t>(l)]),
                  ffn_sublayer_gate(l));
  return parent;
}

int64_t GateUnits::attention_sublayer_gate(int64_t layer) const { return total_heads() + total_blocks() + layer; }

int64_t GateUnits::ffn_sublayer_gate(int64_t layer) const {
  return attention_sublayer_gate(layer) + static_cast<int64_t>(heads_per_layer.size());
}

torch::Tensor GateUnits::effective(const torch::Tensor& values) const {
  return sublayers ? gates::through_parents(values, parents()) : values;
}

int64_t GateUnits::total_heads() const { return sum(heads_per_layer); }
int64_t GateUnits::total_blocks() const { return sum(blocks_per_layer); }

UnitMultipliers GateUnits::multipliers(const torch::Tensor& all) const {
  const auto values = effective(all);
  UnitMultipliers m;
  int64_t at = 0;
  for (auto n : heads_per_layer) {
    m.heads.push_back(values.narrow(0, at, n));
    at += n;
  }
  for (auto n : blocks_per_layer) {
    m.ffn.push_back(values.narrow(0, at, n).repeat_interleave(ffn_block));
    at += n;
  }
  return m;
}

std::vector<bool> GateUnits::head_part(const std::vector<bool>& keep) const {
  return {keep.begin(), keep.begin() + total_heads()};
}

std::vector<bool> GateUnits::block_part(const std::vector<bool>& keep) const {
  return {keep.begin() + total_heads(), keep.end()};
}

GateUnits gate_units(const models::ModelConfig& config, const GateTrainingOptions& o) {
  GateUnits units;
  units.heads_per_layer = config.heads_per_layer();
  if (!o.gates_ffn()) return units;
  units.ffn_block = o.ffn_block;
  units.sublayers = o.gates_sublayers();
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
    const auto width = config.ffn_width(l);
    if (width % o.ffn_block != 0)
      throw Error(fmt::format("--ffn-block {} does not divide layer {}'s FFN width {}; give a divisor of it "
                              "(widths: intermediate_size {})",
                              o.ffn_block, l, width, config.intermediate_size));
    units.blocks_per_layer.push_back(width / o.ffn_block);
  }
  return units;
}

gates::SparsityMeasure with_ffn_costs(gates::SparsityMeasure measure, const models::ModelConfig& config,
                                      const GateUnits& units) {
  if (units.blocks_per_layer.empty()) return measure;
  const bool flops = measure.unit == gates::SparsityUnit::kFlops;
  if ((!flops && measure.unit != gates::SparsityUnit::kAttentionParams) || !measure.layer_cost.empty())
    throw Error(fmt::format("FFN gates are priced in FLOPs or parameters only, not in unit {}",
                            gates::to_string(measure.unit)));
  const auto block = static_cast<double>(units.ffn_block);
  // One FFN neuron is a row of each input projection and a column of the output one: a
  // multiply-add each per token, and those weights (with the input rows' biases) as parameters.
  const double per_block =
      flops ? 2.0 * static_cast<double>(config.family().ffn_matrices()) * static_cast<double>(config.hidden_size) * block
            : static_cast<double>(models::params_per_ffn_neuron(config)) * block;
  measure.head_cost.insert(measure.head_cost.end(), static_cast<size_t>(units.total_blocks()), per_block);
  // FLOPs: the total is already the whole forward pass. Parameters: attention's, plus the FFNs'.
  if (!flops) measure.total_cost += static_cast<double>(models::ffn_parameters(config));
  return measure;
}

gates::MaskConstraints with_ffn_groups(gates::MaskConstraints constraints, const GateUnits& units) {
  if (units.blocks_per_layer.empty() || constraints.head_group.empty()) return constraints;
  int64_t next = 1 + *std::max_element(constraints.head_group.begin(), constraints.head_group.end());
  for (auto n : units.blocks_per_layer) {
    for (int64_t b = 0; b < n; ++b)
      constraints.head_group.push_back(constraints.group_rule == gates::GroupRule::kUniform ? next : next + b);
    next += n + 1;
  }
  return constraints;
}

gates::SparsityMeasure unit_measure(const models::ModelConfig& config, const GateTrainingOptions& o,
                                    const GateUnits& units) {
  auto measure = o.unit == gates::SparsityUnit::kLatency && !units.blocks_per_layer.empty()
                     ? o.latency_table->with_ffn_costs(sparsity_measure(config, o), units.blocks_per_layer, units.ffn_block)
                     : with_ffn_costs(sparsity_measure(config, o), config, units);
  measure.parent = units.parents();
  return measure;
}

gates::MaskConstraints unit_constraints(const models::ModelConfig& config, const GateTrainingOptions& o,
                                        const GateUnits& units) {
  return with_ffn_groups(constraints_for(config, o.constraints), units);
}

models::ModelConfig config_after(const models::ModelConfig& config, const GateUnits& units,
                                 const std::vector<bool>& keep) {
  auto after = config;
  size_t i = 0;
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
    std::vector<int64_t> removed;
    for (auto h : config.kept_heads[static_cast<size_t>(l)])
      if (!keep[i++]) removed.push_back(h);
    after.remove_heads(l, removed);
  }
  for (size_t l = 0; l < units.blocks_per_layer.size(); ++l) {
    int64_t kept = 0;
    for (int64_t b = 0; b < units.blocks_per_layer[l]; ++b) kept += keep[i++] ? 1 : 0;
    after.set_ffn_width(static_cast<int64_t>(l), kept * units.ffn_block);
  }
  return after;
}

}  // namespace headprune::pruner
