// Training the head gates by self-distillation from the dense model.
#pragma once

#include <cstdint>
#include <filesystem>

#include <torch/types.h>

#include "models/checkpoint.h"
#include "pruner/distributed/process_group.h"
#include "pruner/training/corpus.h"
#include "pruner/training/gate_state.h"
#include "pruner/training/training_options.h"

namespace headprune::pruner {

/// Trains gates on `checkpoint.model` (weights frozen unless train_weights) against the dense
/// model as teacher, writes progress to stderr, `train_log.jsonl` and periodic snapshots to
/// out_dir, and returns the final state (keep-mask included; also saved as out_dir/gates.json).
/// Objective: pruner/training/distillation.h plus the Lagrangian (target) or the fixed L0 penalty.
/// In a data-parallel `group` each rank trains on its share of every batch (same global batch,
/// same result as one process up to float32 summation order); rank 0 alone writes and measures
/// held-out fidelity (the other ranks return the same state without it).
/// @throws headprune::Error for an unreachable target (before training), a corpus without
///         training sequences, NaN/inf in the loss (with the step), a snapshot that does not
///         belong to this model/settings when resuming, or a lost peer (distributed);
///         pruner::Interrupted after a snapshot on SIGINT/SIGTERM (of any rank).
GateState train_gates(models::Checkpoint& checkpoint, const Corpus& corpus,
                      const GateTrainingOptions& options, const ProcessGroup& group = ProcessGroup());

}  // namespace headprune::pruner
