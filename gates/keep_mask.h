// From trained gates to the final per-head keep decision.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "gates/sparsity.h"

namespace headprune::gates {

/// How query heads that share a key/value head (grouped-query attention) may be removed.
enum class GroupRule {
  kNone,         ///< any head on its own (multi-head attention, or groups ignored)
  kWholeGroups,  ///< a KV group goes as a whole: all its query heads, and its K/V projections
  kUniform,      ///< query heads go one per group at a time, so every KV group of a layer keeps
                 ///< the same number of query heads (what HF's LLaMA attention can hold)
};
/// "none", "groups", "uniform"; parse_group_rule throws headprune::Error for anything else.
const char* to_string(GroupRule rule);
GroupRule parse_group_rule(const std::string& name);

/// Structural rules every keep-mask obeys.
struct MaskConstraints {
  /// Every layer keeps at least this many heads (capped at the layer's heads).
  int64_t min_heads_per_layer = 1;
  GroupRule group_rule = GroupRule::kNone;
  /// With a group rule: the KV group (any id, unique within its layer) of every head,
  /// layer-major, [total heads]. Empty = every head its own group.
  std::vector<int64_t> head_group;
  /// Every layer keeps the same number of heads (and, with a group rule, the same heads per
  /// KV group): removal units are levels, the k-th lowest-scoring unit of every layer at once,
  /// so the export is a plain config (one num_attention_heads / num_key_value_heads) that
  /// every reader accepts. Needs every layer to hold the same heads.
  bool uniform_layers = false;
  /// Every layer keeps a multiple of this many heads, or all of its heads (so that, e.g., kept
  /// heads × head_dim stays a multiple of the 64 or 128 that quantised and tensor-core kernels
  /// want; TensorRT-LLM issue 988, llm-awq issue 29). A layer's removal units are taken in
  /// ascending score and joined until the count left is such a multiple. 1 = no constraint.
  int64_t head_multiple = 1;
};

/// Keep-mask from deterministic gate values: head i is kept iff gate[i] > 0; then layers below
/// the minimum get back their highest-scoring heads (by `score`, usually log α). With a group
/// rule, the number of closed gates is turned into the nearest count the rule can remove and
/// the heads chosen as keep_mask_for_target does.
/// gate, score: [total heads]. @returns one bool per head, layer-major.
std::vector<bool> keep_mask_from_gates(const torch::Tensor& gate, const torch::Tensor& score,
                                       const std::vector<int64_t>& heads_per_layer,
                                       const MaskConstraints& constraints);

/// Keep-mask that hits a sparsity target exactly (to the nearest reachable value): removal
/// units are taken in ascending order of score (log α; a unit's score is the mean of its
/// heads'), skipping any whose removal would break the constraints, while removing the next
/// one brings the sparsity closer to `target`. Units: single heads (kNone); whole KV groups
/// (kWholeGroups); per layer, the lowest-scoring remaining query head of every group at once
/// (kUniform). With the heads unit this removes exactly round(target · N) heads.
/// With `at_least` (a budget) units are removed until the removed cost reaches target · total
/// (never less; at most one unit more), instead of the count nearest to it.
/// @throws headprune::Error if the target cannot be reached under the constraints (the
///         message gives the reachable maximum), or, for the heads unit, if round(target · N)
///         heads cannot be removed in the rule's units (the message gives the nearest counts).
std::vector<bool> keep_mask_for_target(const torch::Tensor& score,
                                       const std::vector<int64_t>& heads_per_layer,
                                       const SparsityMeasure& measure, double target,
                                       const MaskConstraints& constraints, bool at_least = false);

/// The highest sparsity the constraints allow (removing the cheapest-to-keep heads first is not
/// needed: constraints are per layer, so this removes all heads above each layer's minimum).
double max_sparsity(const std::vector<int64_t>& heads_per_layer, const SparsityMeasure& measure,
                    const MaskConstraints& constraints);

/// Checks a requested target before any training: 0 <= target < 1 and reachable.
/// @throws headprune::Error saying what is reachable and which option to change.
void validate_target(double target, const std::vector<int64_t>& heads_per_layer,
                     const SparsityMeasure& measure, const MaskConstraints& constraints);

}  // namespace headprune::gates
