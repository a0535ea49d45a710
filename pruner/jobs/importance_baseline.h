// The retraining-free baseline `sweep --baselines importance` sets beside the L0 gates
// (issue 17, item 5b): heads ranked by how much the dense model's output changes when each
// alone is removed, the least important removed first, with no training at all.
#pragma once

#include <cstddef>
#include <vector>

#include "models/checkpoint.h"
#include "pruner/records/gate_record.h"
#include "pruner/training/training_options.h"

namespace headprune::pruner {

/// Training sequences the importance is measured on (the first of the shuffled training share).
inline constexpr std::size_t kImportanceSequences = 128;

/// A one-shot mask at `target` from per-head importance (ablation_importance,
/// pruner/analysis/head_importance.h: the distillation loss of the dense model with that head
/// alone removed). Michel et al. 2019 rank heads by a gradient proxy of that loss and remove the
/// lowest; the self-distillation loss and its gradient are both zero at the dense model, so the
/// ablated loss itself is the score. Heads are removed in ascending importance under the run's
/// constraints (gates::keep_mask_for_target, as the L0 gates' own final mask), so the target is
/// met exactly. Kept heads stay at gate 1; `log_alpha` holds the importance (the ranking score).
/// The summary records {"baseline": "importance"}.
/// importance: [layers][heads present] for `checkpoint.model`; o: unit and constraints.
/// @throws headprune::Error if the target is unreachable under the constraints.
GateState importance_gates(const models::Checkpoint& checkpoint, const std::vector<std::vector<double>>& importance,
                           double target, const GateTrainingOptions& o);

}  // namespace headprune::pruner
