// Physical head removal: turning a keep-mask into smaller weights.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "models/attention_model.h"
#include "pruner/records/gate_state.h"

namespace headprune::pruner {

/// What to remove from each layer, in terms of the layer's *current* heads.
struct LayerPlan {
  std::vector<int64_t> remove_local;  ///< positions among the layer's current heads
  torch::Tensor scale;                ///< undefined, or [current heads]: folded into O columns
  std::vector<int64_t> ffn_remove;    ///< positions among the layer's current FFN neurons
  torch::Tensor ffn_scale;            ///< undefined, or [current FFN width]: folded into the FFN output columns
};
using PrunePlan = std::vector<LayerPlan>;  ///< one entry per layer

/// Plan from trained gates (heads, and FFN neurons when the gates cover them). Kept heads' (and
/// neurons') deterministic gate values are folded into the output projection when `fold_gates` (so the pruned model computes what the gated model did);
/// otherwise kept heads stay at 1.
/// @throws headprune::Error if the gates were trained on a different model (says how), or their
///         FFN gates cover widths other than the model's (named).
PrunePlan plan_from_gates(const GateState& gates, const models::AttentionModel& model,
                          bool fold_gates);

/// plan_from_gates without the check that the gates belong to the model (a checksum over every
/// weight), for a caller that made it once and plans many masks of the same gates
/// (pruner/surgery/mask_rearrangement.cpp).
PrunePlan plan_from_checked_gates(const GateState& gates, bool fold_gates);

/// Plan from HF's `{layer: [original head indices]}` (as `model.prune_heads` and
/// `config.pruned_heads` take it); heads already absent are an error, as are out-of-range
/// layers/heads and duplicates. Unlisted layers are untouched.
/// @throws headprune::Error naming the layer and head.
PrunePlan plan_from_remove_heads(const nlohmann::json& spec, const models::ModelConfig& config);
/// `plan` with the FFN neurons of `--remove-ffn`'s JSON (parse_remove_ffn) removed too.
PrunePlan with_removed_ffn(PrunePlan plan, const nlohmann::json& spec, const models::ModelConfig& config);

/// Applies a plan (Q/K/V rows, O columns, config fields; zero-head layers keep the O bias; FFN
/// neurons by AttentionModel::prune_ffn).
void apply_plan(models::AttentionModel& model, const PrunePlan& plan);

/// Whether `plan` touches FFN neurons.
bool plan_prunes_ffn(const PrunePlan& plan);

/// Per-head multipliers equivalent to a plan before surgery (1 or the scale for kept heads,
/// 0 for removed): the gated model these give equals the pruned model.
models::HeadMultipliers plan_multipliers(const PrunePlan& plan, const models::ModelConfig& config,
                                         const torch::Device& device);

/// Per-FFN-neuron multipliers equivalent to a plan before surgery, [ffn_width(l)] per layer (1
/// or the scale for kept neurons, 0 for removed); empty when the plan touches no FFN neuron.
models::FfnMultipliers plan_ffn_multipliers(const PrunePlan& plan, const models::ModelConfig& config,
                                            const torch::Device& device);

}  // namespace headprune::pruner
