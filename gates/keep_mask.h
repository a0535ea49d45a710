// From trained gates to the final per-head keep decision.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "gates/sparsity.h"

namespace headprune::gates {

/// Structural rules every keep-mask obeys.
struct MaskConstraints {
  /// Every layer keeps at least this many heads (capped at the layer's heads).
  int64_t min_heads_per_layer = 1;
};

/// Keep-mask from deterministic gate values: head i is kept iff gate[i] > 0; then layers below
/// the minimum get back their highest-scoring heads (by `score`, usually log α).
/// gate, score: [total heads]. @returns one bool per head, layer-major.
std::vector<bool> keep_mask_from_gates(const torch::Tensor& gate, const torch::Tensor& score,
                                       const std::vector<int64_t>& heads_per_layer,
                                       const MaskConstraints& constraints);

/// Keep-mask that hits a sparsity target exactly (to the nearest reachable value): heads are
/// removed in ascending order of `score` (log α), skipping any whose removal would break the
/// constraints, while removing the next one brings the sparsity closer to `target`. With the
/// heads unit this removes exactly round(target · N) heads.
/// @throws headprune::Error if the target cannot be reached under the constraints (the
///         message gives the reachable maximum).
std::vector<bool> keep_mask_for_target(const torch::Tensor& score,
                                       const std::vector<int64_t>& heads_per_layer,
                                       const SparsityMeasure& measure, double target,
                                       const MaskConstraints& constraints);

/// The highest sparsity the constraints allow (removing the cheapest-to-keep heads first is not
/// needed: constraints are per layer, so this removes all heads above each layer's minimum).
double max_sparsity(const std::vector<int64_t>& heads_per_layer, const SparsityMeasure& measure,
                    const MaskConstraints& constraints);

/// Checks a requested target before any training: 0 <= target < 1 and reachable.
/// @throws headprune::Error saying what is reachable and which option to change.
void validate_target(double target, const std::vector<int64_t>& heads_per_layer,
                     const SparsityMeasure& measure, const MaskConstraints& constraints);

}  // namespace headprune::gates
