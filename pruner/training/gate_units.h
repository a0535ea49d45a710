// The units one gate-training run gates, in one vector (issue 52): every present head,
// layer-major, then, with FFN gating (--prune heads,ffn), every block of `ffn_block` FFN neurons,
// layer-major. The hard-concrete gates, the sparsity measure and the keep-mask rules see them as
// 2·L groups (0..L-1 the layers' heads, L..2L-1 their FFN blocks), so that one Lagrangian and one
// budget cover both kinds (CoFi, Xia et al. 2022, eq. 6 with its expected-size cost). With
// sublayer gating (--prune heads,ffn,layers) the gates also hold, after those units, one gate per
// layer over its attention and then one per layer over its FFN (CoFi's z_MHA, z_FFN; two more
// groups of L): a head's or block's effective gate is its own times its sublayer's
// (gates::through_parents), and masks, costs and gates.json see only the effective units.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "gates/keep_mask.h"
#include "gates/sparsity.h"
#include "models/attention_model.h"
#include "models/config.h"

namespace headprune::pruner {

struct GateTrainingOptions;

/// Head and FFN multipliers that own their tensors; view() is what AttentionModel::forward takes.
struct UnitMultipliers {
  models::HeadMultipliers heads;
  models::FfnMultipliers ffn;  ///< empty without FFN gating
  models::Multipliers view() const { return {&heads, ffn.empty() ? nullptr : &ffn}; }
  bool empty() const { return heads.empty(); }
};

/// The unit layout of one run.
struct GateUnits {
  std::vector<int64_t> heads_per_layer;   ///< [L]
  std::vector<int64_t> blocks_per_layer;  ///< [L] with FFN gating, else empty
  int64_t ffn_block = 0;                  ///< neurons per FFN gate; 0 without FFN gating
  bool sublayers = false;                 ///< one more gate per layer's attention and per layer's FFN

  /// Gates per group (HardConcreteGates' "layers"): base_groups(), then with sublayers {L, L}.
  std::vector<int64_t> per_group() const;
  /// Units per group of the masks: heads_per_layer, then blocks_per_layer.
  std::vector<int64_t> base_groups() const;
  /// With sublayers: each unit's parent gate ([total heads + blocks]; a head of layer l → the
  /// units' count + l, a block of layer l → that + L + l); else empty. SparsityMeasure::parent.
  std::vector<int64_t> parents() const;
  /// With sublayers: the index among all gates of layer l's attention gate (after every head's
  /// and block's); L more is its FFN gate. Indexes only: no check that sublayers is set.
  int64_t attention_sublayer_gate(int64_t layer) const;
  int64_t ffn_sublayer_gate(int64_t layer) const;
  int64_t total_heads() const;
  int64_t total_blocks() const;
  /// Splits values over the gates ([all gates]) into model multipliers: per layer its heads'
  /// values, and its FFN neurons' (each block's value repeated ffn_block times), each times its
  /// sublayer's value with sublayers. Differentiable.
  UnitMultipliers multipliers(const torch::Tensor& values) const;
  /// values over all gates → over the units (each times its sublayer's with sublayers).
  torch::Tensor effective(const torch::Tensor& values) const;
  /// The heads' part of a mask over the units, and the FFN blocks' part.
  std::vector<bool> head_part(const std::vector<bool>& keep) const;
  std::vector<bool> block_part(const std::vector<bool>& keep) const;
};

/// The units `o` gates on a model of `config`.
/// @throws headprune::Error if --ffn-block does not divide a layer's FFN width (named).
GateUnits gate_units(const models::ModelConfig& config, const GateTrainingOptions& o);

/// `measure` (over the heads) extended to the FFN blocks, in the heads' unit: each block costs
/// the FLOPs per token of its neurons, 2 · ffn_matrices · H · ffn_block (models/flops.h; the
/// total, the whole forward pass, is unchanged), or their parameters, params_per_ffn_neuron ·
/// ffn_block (models/head_costs.h; the total gains the FFNs' parameters). Without FFN gating, `measure`.
/// @throws headprune::Error for FFN gating in a unit other than flops or attention-params.
gates::SparsityMeasure with_ffn_costs(gates::SparsityMeasure measure, const models::ModelConfig& config,
                                      const GateUnits& units);

/// `constraints` (constraints_for the heads) extended to the FFN blocks: each layer keeps at
/// least min_heads_per_layer blocks as it keeps heads; under a group rule every block of a layer
/// is one group (kUniform: removed one at a time) or its own (kWholeGroups).
gates::MaskConstraints with_ffn_groups(gates::MaskConstraints constraints, const GateUnits& units);

/// The run's sparsity measure over its units: sparsity_measure(config, o) with_ffn_costs, or for
/// a latency budget with its table's FFN costs (LatencyTable::with_ffn_costs).
gates::SparsityMeasure unit_measure(const models::ModelConfig& config, const GateTrainingOptions& o,
                                    const GateUnits& units);
/// The run's mask constraints over its units: constraints_for(config, o.constraints) with_ffn_groups.
gates::MaskConstraints unit_constraints(const models::ModelConfig& config, const GateTrainingOptions& o,
                                        const GateUnits& units);

/// `config` after removing the units `keep` (over the units) drops: heads and FFN widths.
models::ModelConfig config_after(const models::ModelConfig& config, const GateUnits& units,
                                 const std::vector<bool>& keep);

}  // namespace headprune::pruner
