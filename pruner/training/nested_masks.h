// Several sizes from one gate training (issue 17, item 3): the trained gates' ranking read at
// other targets.
#pragma once

#include "models/config.h"
#include "pruner/records/gate_record.h"
#include "pruner/training/training_options.h"

namespace headprune::pruner {

/// The gates of one run (`trained`, its keep-mask for the target it trained at) with the mask
/// for another sparsity `target`: the heads are removed in ascending order of their trained
/// log α under the run's constraints (gates::keep_mask_for_target), so the masks of increasing
/// targets are nested — every head removed at a target is removed at every higher one. A kept
/// head whose trained gate is closed (0) is kept at gate 1, as at the end of training. The
/// summary records {"one_run": {"trained_at", "target"}}; settings stay those of the run.
/// `config`: the model the gates were trained on; `o`: the run's settings (unit, constraints).
/// @throws headprune::Error if the target cannot be reached under the constraints.
GateState gates_at_target(const GateState& trained, double target, const models::ModelConfig& config,
                          const GateTrainingOptions& o);

}  // namespace headprune::pruner
